//! A forget command given as an argument is parsed into a `ForgetCommand`, or refused by name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use mnemo_contract::ForgetCommand;

#[test]
fn claim_text_and_refusals() {
    assert_eq!(
        ForgetCommand::parse_arg("  Ben |  phone ").unwrap(),
        ForgetCommand::Claim { entity: "Ben".into(), attribute: "phone".into() }
    );
    assert_eq!(
        ForgetCommand::parse_arg("[FORGET] the Friday   standup").unwrap(),
        ForgetCommand::Text("the Friday standup".into())
    );
    assert_eq!(ForgetCommand::parse_arg("a | b | c").unwrap(), ForgetCommand::Text("a | b | c".into()));
    for bad in ["", "[FORGET]", "[FORGETTABLE] x", "[SEM] Ben | phone | 3", "one\ntwo"] {
        let e = ForgetCommand::parse_arg(bad).unwrap_err();
        assert!(e.contains("not a forget command"), "{bad:?}: {e}");
    }
}

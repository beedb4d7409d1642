//! Malformed scenario files: every error names the file, the line and the field; nothing
//! panics and nothing is skipped silently.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The built-in kinds the scenarios assemble, linked so their registrations are kept.
use mnemo_llm as _;
use mnemo_store as _;

use std::path::{Path, PathBuf};

use mnemo_eval::loader::{load_dirs, parse_scenario};
use mnemo_eval::scenario::Action;
use mnemo_eval::EvalError;

const HEAD: &str = "name = \"t\"\nstart = 2026-07-01T09:00:00Z\n";

/// Parse `text` as file `f.toml`; expect an error at `line` on `field`.
fn expect_err(text: &str, line: usize, field: &str) -> String {
    let err = parse_scenario(text, Path::new("dir/f.toml")).expect_err("must be an error");
    let shown = err.to_string();
    match err {
        EvalError::Scenario { file, line: l, field: f, .. } => {
            assert_eq!(file, "dir/f.toml", "{shown}");
            assert_eq!((l, f.as_str()), (line, field), "{shown}");
        }
        other => panic!("not a scenario error: {other}"),
    }
    assert!(shown.starts_with(&format!("dir/f.toml:{line}: field `{field}`")), "{shown}");
    shown
}

#[test]
fn a_valid_file_loads_with_defaults() {
    let text = format!(
        "{HEAD}[[events]]\nat = \"0d\"\nsay = \"[SEM] A | b | c\"\n[[events]]\nat = \"90s\"\nworld = {{ source = \"erp\", entity = \"A\", attribute = \"b\", value = \"d\" }}\n\
         [[probes]]\nat = \"1.5d\"\nentity = \"A\"\nattribute = \"b\"\nexpect = \"d\"\n"
    );
    let s = parse_scenario(&text, Path::new("f.toml")).unwrap();
    assert_eq!(s.namespace.as_str(), "default");
    assert_eq!(s.events.len(), 2);
    assert!(matches!(&s.events[0].action, Action::Say { source, .. } if source == "user"));
    assert_eq!(s.events[1].at.millis() - s.start.millis(), 90_000);
    assert_eq!(s.probes[0].query, "What is the b of A?");
    assert_eq!(s.probes[0].line, 10);
    assert_eq!(s.world_sources(), vec!["erp".to_string()]);
}

#[test]
fn bad_toml_syntax() {
    expect_err(&format!("{HEAD}[[events]\nat = \"1d\"\n"), 3, "events");
    expect_err(&format!("{HEAD}[[events]]\nat = \"1d\nsay = \"x\"\n"), 4, "at");
}

#[test]
fn unknown_keys_anywhere() {
    let s = expect_err(&format!("{HEAD}bogus = 1\n"), 3, "bogus");
    assert!(s.contains("unknown field"), "{s}");
    expect_err(&format!("{HEAD}[[probes]]\nat = \"1d\"\nin_pack = [\"x\"]\nexpct = \"y\"\n"), 6, "probes[0].expct");
    expect_err(
        &format!("{HEAD}[[events]]\nat = \"1d\"\nworld = {{ source = \"erp\", entity = \"A\", attribute = \"b\", valu = \"c\" }}\n"),
        5,
        "events[0].world.valu",
    );
    expect_err(
        &format!("{HEAD}[[events]]\nat = \"1d\"\nsay = \"x\"\n[expect]\nkept = [\n  {{ contnt = \"x\" }},\n]\n"),
        8,
        "expect.kept[0].contnt",
    );
}

#[test]
fn wrong_types_and_missing_fields() {
    expect_err(&format!("{HEAD}[[events]]\nat = 3\nsay = \"x\"\n"), 4, "events[0].at");
    expect_err("start = 2026-07-01T09:00:00Z\n[[events]]\nat = \"1d\"\nsay = \"x\"\n", 1, "name");
    expect_err(&format!("{HEAD}[[events]]\nat = \"1d\"\nsay = \"x\"\n[[events]]\nsay = \"y\"\n"), 6, "events[1].at");
    expect_err("name = \"t\"\nstart = 2026-07-01\n[[events]]\nat = \"1d\"\nsay = \"x\"\n", 2, "start");
}

#[test]
fn bad_offsets() {
    let s = expect_err(
        &format!("{HEAD}[[events]]\nat = \"0d\"\nsay = \"x\"\n[[probes]]\nat = \"3y\"\nin_pack = [\"x\"]\n"),
        7,
        "probes[0].at",
    );
    assert!(s.contains("3y"), "{s}");
    expect_err(&format!("{HEAD}[[events]]\nat = \"-2d\"\nsay = \"x\"\n"), 4, "events[0].at");
    expect_err(&format!("{HEAD}[[events]]\nat = \"d\"\nsay = \"x\"\n"), 4, "events[0].at");
}

#[test]
fn probes_need_something_to_check() {
    let s = expect_err(
        &format!("{HEAD}[[events]]\nat = \"0d\"\nsay = \"x\"\n\n[[probes]]\nat = \"1d\"\nquery = \"q\"\n"),
        7,
        "probes[0]",
    );
    assert!(s.contains("entity") && s.contains("in_pack"), "{s}");
    expect_err(&format!("{HEAD}[[probes]]\nat = \"1d\"\nquery = \"q\"\nentity = \"A\"\n"), 6, "probes[0].attribute");
    expect_err(&format!("{HEAD}[[probes]]\nat = \"1d\"\nin_pack = [\"x\"]\nexpect = \"v\"\n"), 6, "probes[0].expect");
    expect_err(&format!("{HEAD}[[probes]]\nat = \"1d\"\nin_pack = [\"\"]\n"), 5, "probes[0].in_pack[0]");
    expect_err(
        &format!("{HEAD}[[probes]]\nat = \"1d\"\nentity = \"A\"\nattribute = \"b\"\nnamespace = \"a b\"\n"),
        7,
        "probes[0].namespace",
    );
}

#[test]
fn events_need_say_or_world() {
    expect_err(&format!("{HEAD}\n[[events]]\nat = \"1d\"\n"), 4, "events[0]");
    expect_err(
        &format!("{HEAD}[[events]]\nat = \"1d\"\nsay = \"x\"\nworld = {{ source = \"erp\", entity = \"A\", attribute = \"b\", value = \"c\" }}\n"),
        6,
        "events[0].world",
    );
    expect_err(&format!("{HEAD}[[events]]\nat = \"1d\"\nsay = \"   \"\n"), 5, "events[0].say");
}

#[test]
fn matchers_are_checked() {
    let ev = "[[events]]\nat = \"0d\"\nsay = \"x\"\n";
    expect_err(&format!("{HEAD}{ev}[expect]\nforgotten = [ {{ entity = \"A\" }} ]\n"), 7, "expect.forgotten[0]");
    expect_err(
        &format!("{HEAD}{ev}[expect]\nkept = [ {{ content = \"x\", reason = \"decayed\" }} ]\n"),
        7,
        "expect.kept[0].reason",
    );
    expect_err(
        &format!("{HEAD}{ev}[expect]\nkept = [ {{ value = \"x\", content = \"y\" }} ]\n"),
        7,
        "expect.kept[0].value",
    );
    expect_err(
        &format!("{HEAD}{ev}[expect]\nkept = [ {{ content = \"y\", count = 0 }} ]\n"),
        7,
        "expect.kept[0].count",
    );
}

#[test]
fn directories_load_sorted_and_never_skip_a_broken_file() {
    let dir = tempfile::tempdir().unwrap();
    let good =
        |name: &str| format!("name = \"{name}\"\nstart = 2026-07-01T09:00:00Z\n[[events]]\nat = \"0d\"\nsay = \"x\"\n");
    std::fs::write(dir.path().join("b.toml"), good("bee")).unwrap();
    std::fs::write(dir.path().join("a.toml"), good("ay")).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a scenario").unwrap();
    let all = load_dirs(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(all.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["ay", "bee"]);

    std::fs::write(dir.path().join("c.toml"), good("bee")).unwrap();
    let err = load_dirs(&[dir.path().to_path_buf()]).unwrap_err().to_string();
    assert!(err.contains("c.toml:1: field `name`") && err.contains("already used"), "{err}");

    std::fs::write(
        dir.path().join("c.toml"),
        "name = \"c\"\nstart = 2026-07-01T09:00:00Z\n[[events]]\nat = \"soon\"\nsay = \"x\"\n",
    )
    .unwrap();
    let err = load_dirs(&[dir.path().to_path_buf()]).unwrap_err().to_string();
    assert!(err.contains("c.toml:4: field `events[0].at`"), "{err}");

    let empty = tempfile::tempdir().unwrap();
    let err = load_dirs(&[empty.path().to_path_buf()]).unwrap_err().to_string();
    assert!(err.contains("no *.toml"), "{err}");
    assert!(load_dirs(&[PathBuf::from("/nonexistent/scenarios")]).is_err());
}

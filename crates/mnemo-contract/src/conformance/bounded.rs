//! The Store's bounded turn look-ups (`turns_by_ids`, `turn_by_external_id`): the same
//! answers as filtering `turns`, within the namespace.
use crate::model::*;
use crate::time::Timestamp;
use crate::Store;

fn ns(s: &str) -> Namespace {
    Namespace::new(s).unwrap()
}

async fn turn(s: &dyn Store, ns: &Namespace, text: &str, key: Option<&str>) -> Turn {
    s.record_turn(NewTurn {
        namespace: ns.clone(),
        source: "user".into(),
        at: Timestamp(1_780_000_000_000),
        text: text.into(),
        external_id: key.map(str::to_string),
    })
    .await
    .unwrap()
}

/// Turns by id and by external id, partitioned by namespace, oldest first.
pub async fn bounded_turn_lookups(s: &dyn Store) {
    let a = ns("turns-a");
    let b = ns("turns-b");
    let a1 = turn(s, &a, "one", Some("k1")).await;
    let b1 = turn(s, &b, "other", Some("k2")).await;
    let a2 = turn(s, &a, "two", None).await;
    let a3 = turn(s, &a, "three", Some("k1")).await;
    let missing = TurnId(a3.id.0 + 1_000_000);

    let got = s.turns_by_ids(&a, &[a3.id, b1.id, a1.id, missing]).await.unwrap();
    assert_eq!(got, vec![a1.clone(), a3.clone()], "a's turns among the ids, oldest first; b's and missing left out");
    assert_eq!(s.turns_by_ids(&a, &[]).await.unwrap(), Vec::<Turn>::new());
    assert_eq!(s.turns_by_ids(&a, &[a2.id, a2.id]).await.unwrap(), vec![a2.clone()], "each once");

    assert_eq!(s.turn_by_external_id(&a, "k1").await.unwrap(), Some(a1), "the oldest turn with the key");
    assert_eq!(s.turn_by_external_id(&a, "k2").await.unwrap(), None, "another namespace's key is not seen");
    assert_eq!(s.turn_by_external_id(&b, "k2").await.unwrap(), Some(b1));
    assert_eq!(s.turn_by_external_id(&a, "nope").await.unwrap(), None);
}

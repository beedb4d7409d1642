//! The Store conformance suite: the contract of [`Store`], checked against any backend.
//!
//! Every function takes a fresh, EMPTY store and panics (like a test) on a violation;
//! [`run_all`] runs them all, each on a new store from the factory. Orders are asserted only
//! where the contract states one (`all_memories` by id, `turns` and `history` oldest first,
//! `changed_since` by rev); other lists are compared as sets.
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

use crate::error::CoreError;
use crate::ids::TurnId;
use crate::model::*;
use crate::time::Timestamp;
use crate::world_time::Validity;
use crate::Store;

/// One `#[tokio::test]` per suite function, each on a store of its own: `$bind = $make` is
/// evaluated per test (bind a guard there, such as a temp dir, to keep it alive) and `$store`
/// is what the function is given. The list is the suite's, kept here once for every backend:
///
/// ```ignore
/// mnemo_contract::store_conformance_tests!(store = MemoryStore::new() => &store);
/// mnemo_contract::store_conformance_tests!((_dir, store) = on_disk() => &store);
/// ```
#[macro_export]
macro_rules! store_conformance_tests {
    ($bind:pat = $make:expr => $store:expr) => {
        $crate::store_conformance_tests!(@list [@each $bind, $make, $store]);
    };
    // The suite's functions, listed once: each arm below is given them after its own arguments.
    (@list [$($arm:tt)*]) => {
        $crate::store_conformance_tests!($($arm)*;
            empty_store,
            record_turn_assigns_increasing_ids,
            insert_round_trips_every_field,
            get_many_leaves_out_missing_ids,
            namespace_partition,
            apply_is_atomic,
            reinforce_and_confirm,
            tombstone_keeps_the_row,
            claim_memories_hold_every_value_of_a_claim,
            validity_round_trips_and_stays_on_a_tombstone,
            tombstone_new_within_a_batch,
            tombstone_is_final,
            rev_increases_on_every_change,
            changed_since_pages_by_rev,
            changes_since_is_the_four_lookups,
            history_in_order,
            touch_does_not_bump_rev,
            active_by_entities_matches_any,
            ids_reveal_nothing_of_other_namespaces,
            list_memories_pages_by_id,
            short_ids_find_their_own_namespace,
            history_chain_covers_every_write,
            erase_empties_content_and_keeps_a_record
        );
    };
    (@each $bind:pat, $make:expr, $store:expr; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                let $bind = $make;
                $crate::conformance::store::$name($store).await;
            }
        )*
    };
    // [`run_all`]'s body: every function, each on a fresh store from `$make`.
    (@run $make:ident; $($name:ident),* $(,)?) => {
        $( $name(&*$make().await).await; )*
    };
}

/// Run every test of the suite, each on a fresh store from `make`.
pub async fn run_all<F, Fut>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Store>>,
{
    crate::store_conformance_tests!(@list [@run make]);
    crate::conformance::decay::due_for_decay_matches_the_scan(&*make().await).await;
    crate::conformance::bounded::bounded_turn_lookups(&*make().await).await;
}

// ---------------------------------------------------------------- fixtures

fn ns(s: &str) -> Namespace {
    Namespace::new(s).unwrap()
}

/// A fixed epoch plus `ms`: the suite never reads the clock.
fn at(ms: i64) -> Timestamp {
    Timestamp(1_780_000_000_000 + ms)
}

fn mem(ns: &Namespace, content: &str, entities: &[&str]) -> NewMemory {
    NewMemory {
        validity: Default::default(),
        namespace: ns.clone(),
        kind: MemoryKind::Semantic,
        content: content.to_string(),
        claim: None,
        entities: entities.iter().map(|e| e.to_string()).collect(),
        importance: 0.5,
        sources: vec!["user".to_string()],
        provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "fake-model".to_string() },
        created_at: at(0),
        pinned: false,
        embedding: None,
    }
}

fn ins(memory: NewMemory) -> WriteOp {
    WriteOp::Insert { memory, turn: None }
}

async fn insert(s: &dyn Store, m: NewMemory) -> MemoryId {
    let ns = m.namespace.clone();
    let when = m.created_at;
    let ids = s.apply(&ns, when, vec![ins(m)]).await.unwrap();
    assert_eq!(ids.len(), 1, "one Insert must return one id, got {ids:?}");
    ids[0]
}

async fn get(s: &dyn Store, ns: &Namespace, id: MemoryId) -> Memory {
    let mut v = s.get_many(ns, &[id]).await.unwrap();
    assert_eq!(v.len(), 1, "memory {id} should be readable in namespace {ns}, got {v:?}");
    v.remove(0)
}

async fn turn(s: &dyn Store, ns: &Namespace, text: &str, when: Timestamp) -> Turn {
    let t = NewTurn {
        namespace: ns.clone(),
        source: "user".to_string(),
        at: when,
        text: text.to_string(),
        external_id: None,
    };
    s.record_turn(t).await.unwrap()
}

fn ids(v: &[Memory]) -> Vec<MemoryId> {
    v.iter().map(|m| m.id).collect()
}

fn id_set(v: &[Memory]) -> BTreeSet<MemoryId> {
    v.iter().map(|m| m.id).collect()
}

fn set(v: &[MemoryId]) -> BTreeSet<MemoryId> {
    v.iter().copied().collect()
}

/// Everything a failed batch must leave untouched.
#[derive(Debug, PartialEq)]
struct Snapshot {
    max_rev: u64,
    memories: Vec<Memory>,
    histories: Vec<Vec<MemoryEvent>>,
}

async fn snapshot(s: &dyn Store, namespaces: &[&Namespace]) -> Snapshot {
    let mut memories = Vec::new();
    let mut histories = Vec::new();
    for ns in namespaces {
        for m in s.all_memories(ns).await.unwrap() {
            histories.push(s.history(ns, m.id).await.unwrap());
            memories.push(m);
        }
    }
    Snapshot { max_rev: s.max_rev().await.unwrap(), memories, histories }
}

/// `apply` must fail and change nothing.
async fn assert_rejected(s: &dyn Store, ns: &Namespace, ops: Vec<WriteOp>, all: &[&Namespace], why: &str) {
    let before = snapshot(s, all).await;
    let r = s.apply(ns, at(1_000), ops).await;
    assert!(r.is_err(), "{why}: apply should fail, got {r:?}");
    let after = snapshot(s, all).await;
    assert_eq!(before, after, "{why}: a failed batch must change nothing");
}

// ---------------------------------------------------------------- tests

/// A fresh store is empty everywhere, and an empty batch is a no-op.
pub async fn empty_store(s: &dyn Store) {
    let a = ns("alpha");
    assert_eq!(s.max_rev().await.unwrap(), 0, "max_rev of an empty store");
    assert!(s.namespaces().await.unwrap().is_empty());
    assert!(s.active(&a).await.unwrap().is_empty());
    assert!(s.all_memories(&a).await.unwrap().is_empty());
    assert!(s.pinned(&a).await.unwrap().is_empty());
    assert!(s.turns(&a).await.unwrap().is_empty());
    assert!(s.changed_since(0, 100).await.unwrap().is_empty());
    assert!(s.get_many(&a, &[MemoryId(1)]).await.unwrap().is_empty());
    assert!(s.history(&a, MemoryId(1)).await.unwrap().is_empty());
    assert!(s.active_by_entities(&a, &["acme".to_string()]).await.unwrap().is_empty());
    assert!(s.apply(&a, at(0), vec![]).await.unwrap().is_empty(), "an empty batch inserts nothing");
    assert_eq!(s.max_rev().await.unwrap(), 0, "an empty batch changes nothing");
}

/// Turn ids increase across namespaces; a turn reads back exactly; `turns` is partitioned
/// and oldest first; `namespaces` lists namespaces holding only turns too.
pub async fn record_turn_assigns_increasing_ids(s: &dyn Store) {
    let (a, b) = (ns("alpha"), ns("beta"));
    let input = |n: &Namespace, text: &str, ext: Option<&str>, ms| NewTurn {
        namespace: n.clone(),
        source: "Caroline".to_string(),
        at: at(ms),
        text: text.to_string(),
        external_id: ext.map(str::to_string),
    };
    let inputs = [
        input(&a, "Grüße — 你好 🚀\n\"quoted\" \\ 'single'", Some("D1:3"), 10),
        input(&b, "in beta", None, 20),
        input(&a, "", None, 30),
    ];
    let mut got = Vec::new();
    for i in &inputs {
        let t = s.record_turn(i.clone()).await.unwrap();
        assert_eq!(
            (&t.namespace, &t.source, t.at, &t.text, &t.external_id),
            (&i.namespace, &i.source, i.at, &i.text, &i.external_id),
            "record_turn must return the turn as given"
        );
        got.push(t);
    }
    assert!(got[0].id < got[2].id, "turn ids must increase within a namespace: {got:?}");
    assert_eq!(s.turns(&a).await.unwrap(), vec![got[0].clone(), got[2].clone()], "turns of alpha, oldest first");
    assert_eq!(s.turns(&b).await.unwrap(), vec![got[1].clone()], "turns of beta");
    assert!(s.turns(&ns("gamma")).await.unwrap().is_empty());
    assert_eq!(s.latest_turn_at(&a).await.unwrap(), Some(at(30)), "latest turn of alpha");
    assert_eq!(s.latest_turn_at(&b).await.unwrap(), Some(at(20)), "latest turn of beta");
    assert_eq!(s.latest_turn_at(&ns("gamma")).await.unwrap(), None);
    assert_eq!(s.namespaces().await.unwrap(), vec![a, b], "namespaces holding turns");
}

/// Every field of a memory survives the round trip; the embedding's model id exactly, its
/// vector within [`EMBEDDING_STORE_TOLERANCE`] (a store may keep it as int8 codes and a scale).
pub async fn insert_round_trips_every_field(s: &dyn Store) {
    let a = ns("alpha");
    let t = turn(s, &a, "Northwind's lead time is 21 days", at(1)).await;
    // Signs, a zero, tiny and large components, values between two int8 steps.
    let vector = vec![0.0f32, -0.0, 1.0 / 3.0, f32::MIN_POSITIVE, -1.0e-4, 0.7, -0.6, 0.125, 0.0019];
    let full = NewMemory {
        validity: Default::default(),
        namespace: a.clone(),
        kind: MemoryKind::Procedural,
        content: "Order from Northwind Labs — lead time 21 days 🚚".to_string(),
        claim: Some(Claim {
            entity: "Northwind Labs".to_string(),
            attribute: "Lead Time".to_string(),
            value: "21 Days".to_string(),
        }),
        entities: vec!["northwind labs".to_string(), "acme".to_string()],
        importance: 0.8125,
        sources: vec!["user".to_string(), "erp".to_string()],
        provenance: Provenance {
            turns: vec![t.id],
            client: ClientKind::Live,
            model: "qwen-plus-2025-07-14".to_string(),
        },
        created_at: at(5),
        pinned: true,
        embedding: Some(Embedding { model: "fake-embed-64".to_string(), vector: vector.clone() }),
    };
    let bare = NewMemory {
        validity: Default::default(),
        namespace: a.clone(),
        kind: MemoryKind::Episodic,
        content: String::new(),
        claim: None,
        entities: vec![],
        importance: 0.0,
        sources: vec![],
        provenance: Provenance { turns: vec![], client: ClientKind::Rules, model: String::new() },
        created_at: at(6),
        pinned: false,
        embedding: None,
    };
    let new_ids = s
        .apply(&a, at(7), vec![WriteOp::Insert { memory: full.clone(), turn: Some(t.id) }, ins(bare.clone())])
        .await
        .unwrap();
    assert_eq!(new_ids.len(), 2, "two inserts, two ids");
    assert!(new_ids[0] < new_ids[1], "ids increase in insert order: {new_ids:?}");
    let got = s.get_many(&a, &new_ids).await.unwrap();
    assert_eq!(set(&ids(&got)), set(&new_ids));
    for (input, id) in [(&full, new_ids[0]), (&bare, new_ids[1])] {
        let m = got.iter().find(|m| m.id == id).unwrap().clone();
        assert!(m.rev > 0, "an inserted memory has a rev > 0");
        let expected = Memory {
            validity: Default::default(),
            id,
            namespace: input.namespace.clone(),
            kind: input.kind,
            content: input.content.clone(),
            claim: input.claim.clone(),
            entities: input.entities.clone(),
            importance: input.importance,
            reinforcements: 0,
            sources: input.sources.clone(),
            provenance: input.provenance.clone(),
            created_at: input.created_at,
            last_confirmed_at: input.created_at,
            last_accessed_at: None,
            pinned: input.pinned,
            embedding: None,
            status: Status::Active,
            rev: m.rev,
        };
        assert_eq!(Memory { embedding: None, ..m.clone() }, expected, "memory {id} must round-trip");
        match (&input.embedding, &m.embedding) {
            (None, None) => {}
            (Some(e), Some(g)) => {
                assert_eq!(e.model, g.model, "embedding model id");
                assert_eq!(e.vector.len(), g.vector.len(), "embedding length");
                assert!(
                    e.within_store_tolerance(g),
                    "embedding must come back within {EMBEDDING_STORE_TOLERANCE} of its largest component: \
                     {:?} became {:?}",
                    e.vector,
                    g.vector
                );
            }
            other => panic!("embedding presence changed: {other:?}"),
        }
    }
    let revs: BTreeSet<u64> = got.iter().map(|m| m.rev).collect();
    assert_eq!(revs.len(), 2, "each change has its own rev");
    assert_eq!(s.max_rev().await.unwrap(), *revs.iter().max().unwrap());
}

/// `get_many` leaves out missing ids and returns each memory once.
pub async fn get_many_leaves_out_missing_ids(s: &dyn Store) {
    let a = ns("alpha");
    let one = insert(s, mem(&a, "one", &[])).await;
    let two = insert(s, mem(&a, "two", &[])).await;
    let got = s.get_many(&a, &[two, MemoryId(987_654_321), one, two]).await.unwrap();
    assert_eq!(got.len(), 2, "missing ids left out, duplicates returned once: {:?}", ids(&got));
    assert_eq!(id_set(&got), set(&[one, two]));
    assert!(s.get_many(&a, &[]).await.unwrap().is_empty());
}

/// Namespaces are a hard partition in every query, and no op crosses them.
pub async fn namespace_partition(s: &dyn Store) {
    let (a, b) = (ns("alpha"), ns("beta"));
    let ta = turn(s, &a, "alpha turn", at(1)).await;
    let tb = turn(s, &b, "beta turn", at(2)).await;
    let ma = insert(s, NewMemory { pinned: true, ..mem(&a, "alpha acme", &["acme"]) }).await;
    let mb = insert(s, NewMemory { pinned: true, ..mem(&b, "beta acme", &["acme"]) }).await;
    let acme = vec!["acme".to_string()];

    for (n, mine, theirs) in [(&a, ma, mb), (&b, mb, ma)] {
        assert_eq!(ids(&s.get_many(n, &[ma, mb]).await.unwrap()), vec![mine], "get_many in {n}");
        assert!(s.get_many(n, &[theirs]).await.unwrap().is_empty(), "get_many of a foreign id in {n}");
        assert_eq!(ids(&s.active(n).await.unwrap()), vec![mine], "active in {n}");
        assert_eq!(ids(&s.active_by_entities(n, &acme).await.unwrap()), vec![mine], "active_by_entities in {n}");
        assert_eq!(ids(&s.pinned(n).await.unwrap()), vec![mine], "pinned in {n}");
        assert_eq!(ids(&s.all_memories(n).await.unwrap()), vec![mine], "all_memories in {n}");
        assert!(s.history(n, theirs).await.unwrap().is_empty(), "history of a foreign id in {n}");
        assert_eq!(s.history(n, mine).await.unwrap().len(), 1, "history of own id in {n}");
    }
    assert_eq!(s.turns(&a).await.unwrap(), vec![ta.clone()]);
    assert_eq!(s.turns(&b).await.unwrap(), vec![tb.clone()]);
    assert_eq!(s.namespaces().await.unwrap(), vec![a.clone(), b.clone()]);

    let all = [&a, &b];
    let reason = "cross-namespace".to_string();
    let foreign_ops: Vec<(&str, WriteOp)> = vec![
        ("reinforce a foreign id", WriteOp::Reinforce { id: mb, source: "x".into(), turn: None }),
        ("confirm a foreign id", WriteOp::Confirm { id: mb, source: "erp".into() }),
        (
            "tombstone a foreign id",
            WriteOp::Tombstone { id: mb, reason: reason.clone(), superseded_by: None, turn: None },
        ),
        (
            "superseded_by a foreign id",
            WriteOp::Tombstone {
                id: ma,
                reason: reason.clone(),
                superseded_by: Some(MemoryRef::Existing(mb)),
                turn: None,
            },
        ),
        ("insert a memory of another namespace", ins(mem(&b, "smuggled", &["acme"]))),
        ("insert linked to a foreign turn", WriteOp::Insert { memory: mem(&a, "x", &[]), turn: Some(tb.id) }),
        ("reinforce with a foreign turn", WriteOp::Reinforce { id: ma, source: "x".into(), turn: Some(tb.id) }),
    ];
    for (why, op) in foreign_ops {
        assert_rejected(s, &a, vec![op], &all, why).await;
    }

    s.touch(&a, &[mb], at(500)).await.unwrap();
    assert_eq!(get(s, &b, mb).await.last_accessed_at, None, "touch through another namespace must not reach");
    let everything = s.changed_since(0, 100).await.unwrap();
    assert_eq!(id_set(&everything), set(&[ma, mb]), "changed_since spans every namespace");
}

/// A batch with an invalid op changes nothing, whatever its position.
pub async fn apply_is_atomic(s: &dyn Store) {
    let a = ns("alpha");
    let all = [&a];
    let m = insert(s, mem(&a, "existing", &["acme"])).await;
    let missing = MemoryId(987_654_321);
    let tomb = |id, by| WriteOp::Tombstone { id, reason: "test".into(), superseded_by: by, turn: None };
    assert_rejected(
        s,
        &a,
        vec![
            ins(mem(&a, "new", &["acme"])),
            WriteOp::Reinforce { id: m, source: "bob".into(), turn: None },
            WriteOp::Reinforce { id: missing, source: "bob".into(), turn: None },
        ],
        &all,
        "reinforce of a missing id after valid ops",
    )
    .await;
    assert_rejected(s, &a, vec![tomb(m, None), tomb(m, None)], &all, "the same memory tombstoned twice in one batch")
        .await;
    assert_rejected(
        s,
        &a,
        vec![ins(mem(&a, "new", &[])), tomb(m, Some(MemoryRef::New(1)))],
        &all,
        "superseded_by New(1) with a single insert",
    )
    .await;
    assert_rejected(
        s,
        &a,
        vec![WriteOp::Confirm { id: missing, source: "erp".into() }, ins(mem(&a, "new", &[]))],
        &all,
        "confirm of a missing id",
    )
    .await;
    assert!(s.get_many(&a, &[m]).await.unwrap()[0].status.is_active());
    // And a valid batch still goes through afterwards.
    let new_ids = s
        .apply(
            &a,
            at(10),
            vec![ins(mem(&a, "new", &[])), WriteOp::Reinforce { id: m, source: "bob".into(), turn: None }],
        )
        .await
        .unwrap();
    assert_eq!(new_ids.len(), 1);
    assert_eq!(get(s, &a, m).await.reinforcements, 1);
}

/// Reinforce counts, adds a new source once, appends the turn and moves the confirmation
/// time; Confirm adds the source and moves the confirmation time only.
pub async fn reinforce_and_confirm(s: &dyn Store) {
    let a = ns("alpha");
    let t1 = turn(s, &a, "first", at(0)).await;
    let t2 = turn(s, &a, "second", at(9)).await;
    let mut new = mem(&a, "Acme ships on Fridays", &["acme"]);
    new.provenance.turns = vec![t1.id];
    new.claim = Some(Claim::new("Acme", "ship day", "Friday"));
    new.embedding = Some(Embedding { model: "m".into(), vector: vec![0.6, 0.8] });
    let id = s.apply(&a, at(0), vec![WriteOp::Insert { memory: new, turn: Some(t1.id) }]).await.unwrap()[0];
    let original = get(s, &a, id).await;

    s.apply(&a, at(10), vec![WriteOp::Reinforce { id, source: "alice".into(), turn: Some(t2.id) }]).await.unwrap();
    let m = get(s, &a, id).await;
    assert_eq!(m.reinforcements, 1);
    assert_eq!(m.sources, vec!["user".to_string(), "alice".to_string()], "a new source is added");
    assert_eq!(m.provenance.turns, vec![t1.id, t2.id], "the reinforcing turn is appended");
    assert_eq!(m.last_confirmed_at, at(10));
    assert_eq!(m.created_at, original.created_at);

    s.apply(&a, at(20), vec![WriteOp::Reinforce { id, source: "user".into(), turn: None }]).await.unwrap();
    let m = get(s, &a, id).await;
    assert_eq!(m.reinforcements, 2);
    assert_eq!(m.sources, vec!["user".to_string(), "alice".to_string()], "a known source is not added twice");
    assert_eq!(m.provenance.turns, vec![t1.id, t2.id]);
    assert_eq!(m.last_confirmed_at, at(20));

    s.apply(&a, at(30), vec![WriteOp::Confirm { id, source: "erp".into() }]).await.unwrap();
    let m = get(s, &a, id).await;
    assert_eq!(m.reinforcements, 2, "confirm does not count as a reinforcement");
    assert_eq!(m.sources, vec!["user".to_string(), "alice".to_string(), "erp".to_string()]);
    assert_eq!(m.last_confirmed_at, at(30));

    s.apply(&a, at(40), vec![WriteOp::Confirm { id, source: "erp".into() }]).await.unwrap();
    let m = get(s, &a, id).await;
    assert_eq!(m.sources.len(), 3, "a known source is not added twice");
    assert_eq!(m.last_confirmed_at, at(40));
    assert!(m.status.is_active());
    let unchanged =
        |x: &Memory| (x.content.clone(), x.claim.clone(), x.embedding.clone(), x.importance, x.pinned, x.kind);
    assert_eq!(unchanged(&m), unchanged(&original), "reinforce/confirm touch nothing else");
}

/// `TombstoneNew` tombstones an insert of the same batch (stated, then contradicted in one
/// turn), with `superseded_by` resolved; an out-of-range index fails the whole batch.
pub async fn tombstone_new_within_a_batch(s: &dyn Store) {
    let a = ns("alpha");
    let new = s
        .apply(
            &a,
            at(10),
            vec![
                ins(mem(&a, "lead time 21 days", &["acme"])),
                ins(mem(&a, "lead time 28 days", &["acme"])),
                WriteOp::TombstoneNew {
                    index: 0,
                    reason: "contradicted in the same turn".into(),
                    superseded_by: Some(MemoryRef::New(1)),
                    turn: None,
                },
            ],
        )
        .await
        .unwrap();
    assert_eq!(new.len(), 2);
    let first = get(s, &a, new[0]).await;
    assert_eq!(
        first.status,
        Status::Tombstoned { reason: "contradicted in the same turn".into(), at: at(10), superseded_by: Some(new[1]) }
    );
    assert_eq!(ids(&s.active(&a).await.unwrap()), vec![new[1]]);
    let before = s.max_rev().await.unwrap();
    let bad = s
        .apply(
            &a,
            at(20),
            vec![
                ins(mem(&a, "x", &[])),
                WriteOp::TombstoneNew { index: 1, reason: "r".into(), superseded_by: None, turn: None },
            ],
        )
        .await;
    assert!(bad.is_err(), "a TombstoneNew past the batch's inserts must fail");
    assert_eq!(s.max_rev().await.unwrap(), before, "and change nothing");
}

/// A tombstone keeps the row with reason, time and successor (`MemoryRef::New` resolved,
/// before or after the insert in the batch); it leaves active, by-entity and pinned queries but
/// stays in `all_memories` and `get_many`.
pub async fn tombstone_keeps_the_row(s: &dyn Store) {
    let a = ns("alpha");
    let t = turn(s, &a, "actually it's 28 days now", at(40)).await;
    let mut old = mem(&a, "lead time 21 days", &["acme"]);
    old.pinned = true;
    old.claim = Some(Claim::new("Acme", "lead time", "21 days"));
    let old_id = insert(s, old).await;
    let other = insert(s, mem(&a, "acme is in Ohio", &["acme"])).await;
    let before = get(s, &a, old_id).await;

    let reason = "contradicted: lead time is now 28 days".to_string();
    let new_ids = s
        .apply(
            &a,
            at(50),
            vec![
                ins(mem(&a, "lead time 28 days", &["acme"])),
                WriteOp::Tombstone {
                    id: old_id,
                    reason: reason.clone(),
                    superseded_by: Some(MemoryRef::New(0)),
                    turn: Some(t.id),
                },
            ],
        )
        .await
        .unwrap();
    assert_eq!(new_ids.len(), 1, "a batch returns only the inserted ids");
    let fresh = new_ids[0];
    let m = get(s, &a, old_id).await;
    assert_eq!(m.status, Status::Tombstoned { reason: reason.clone(), at: at(50), superseded_by: Some(fresh) });
    assert_eq!(
        Memory { status: Status::Active, rev: before.rev, ..m.clone() },
        before,
        "a tombstone keeps the row as it was"
    );
    assert!(m.rev > before.rev, "tombstoning bumps rev");

    let acme = vec!["acme".to_string()];
    assert_eq!(id_set(&s.active(&a).await.unwrap()), set(&[other, fresh]), "active leaves tombstones out");
    assert_eq!(id_set(&s.active_by_entities(&a, &acme).await.unwrap()), set(&[other, fresh]));
    assert!(s.pinned(&a).await.unwrap().is_empty(), "a tombstoned pinned memory is not pinned-active");
    assert_eq!(
        ids(&s.all_memories(&a).await.unwrap()),
        vec![old_id, other, fresh],
        "all_memories keeps tombstones, by id"
    );

    // An existing successor.
    s.apply(
        &a,
        at(60),
        vec![WriteOp::Tombstone {
            id: other,
            reason: "forget".into(),
            superseded_by: Some(MemoryRef::Existing(fresh)),
            turn: None,
        }],
    )
    .await
    .unwrap();
    assert_eq!(
        get(s, &a, other).await.status,
        Status::Tombstoned { reason: "forget".into(), at: at(60), superseded_by: Some(fresh) }
    );
    // A successor inserted after the tombstone in the batch.
    let later = s
        .apply(
            &a,
            at(70),
            vec![
                WriteOp::Tombstone {
                    id: fresh,
                    reason: "newer".into(),
                    superseded_by: Some(MemoryRef::New(0)),
                    turn: None,
                },
                ins(mem(&a, "lead time 35 days", &["acme"])),
            ],
        )
        .await
        .unwrap();
    assert_eq!(later.len(), 1);
    assert_eq!(
        get(s, &a, fresh).await.status,
        Status::Tombstoned { reason: "newer".into(), at: at(70), superseded_by: Some(later[0]) }
    );
    assert_eq!(ids(&s.active(&a).await.unwrap()), later);
}

/// World time: a memory's validity interval (either end open) is stored exactly, read back by
/// every read (`get_many`, `claim_memories`, `all_memories`) and kept when the memory is
/// tombstoned; an unstated one reads back unstated.
pub async fn validity_round_trips_and_stays_on_a_tombstone(s: &dyn Store) {
    let a = ns("alpha");
    let claim = |v: &str| Some(Claim::new("Ben", "city", v));
    let lisbon = Validity { from: Some(at(1_000)), to: Some(at(2_000)) };
    let porto = Validity { from: Some(at(2_000)), to: None };
    let l =
        insert(s, NewMemory { claim: claim("Lisbon"), validity: lisbon, ..mem(&a, "Ben lived in Lisbon", &["Ben"]) })
            .await;
    let p = insert(s, NewMemory { claim: claim("Porto"), validity: porto, ..mem(&a, "Ben lives in Porto", &["Ben"]) })
        .await;
    let plain = insert(s, mem(&a, "Ann likes tea", &["Ann"])).await;
    assert_eq!(get(s, &a, l).await.validity, lisbon);
    assert_eq!(get(s, &a, p).await.validity, porto, "an open end stays open");
    assert!(get(s, &a, plain).await.validity.is_unstated());
    s.apply(
        &a,
        at(3_000),
        vec![WriteOp::Tombstone {
            id: l,
            reason: "superseded".into(),
            superseded_by: Some(MemoryRef::Existing(p)),
            turn: None,
        }],
    )
    .await
    .unwrap();
    let on_claim = s.claim_memories(&a, "Ben", "city").await.unwrap();
    let by_id: std::collections::HashMap<MemoryId, Validity> = on_claim.iter().map(|m| (m.id, m.validity)).collect();
    assert_eq!(by_id.get(&l), Some(&lisbon), "a tombstone keeps its validity: {on_claim:?}");
    assert_eq!(by_id.get(&p), Some(&porto));
    let all = s.all_memories(&a).await.unwrap();
    assert_eq!(all.iter().find(|m| m.id == l).map(|m| m.validity), Some(lisbon));
}

/// `claim_memories`: every memory on the claim, superseded ones included, by id, matched by
/// normalised names; nothing of another claim or namespace.
pub async fn claim_memories_hold_every_value_of_a_claim(s: &dyn Store) {
    let (a, b) = (ns("alpha"), ns("beta"));
    let claim = |ns: &Namespace, e: &str, attr: &str, v: &str| {
        let mut m = mem(ns, &format!("{e} | {attr} | {v}"), &[]);
        m.claim = Some(Claim::new(e, attr, v));
        m
    };
    let old = insert(s, claim(&a, "Acme Corp", "lead time", "21 days")).await;
    let other = insert(s, claim(&a, "Acme Corp", "owner", "Ben")).await;
    insert(s, claim(&b, "Acme Corp", "lead time", "9 days")).await;
    insert(s, mem(&a, "Acme Corp lead time is long", &["acme corp"])).await;
    let new_ids = s
        .apply(
            &a,
            at(50),
            vec![
                ins(claim(&a, "Acme Corp", "lead time", "35 days")),
                WriteOp::Tombstone {
                    id: old,
                    reason: "superseded".into(),
                    superseded_by: Some(MemoryRef::New(0)),
                    turn: None,
                },
            ],
        )
        .await
        .unwrap();
    let got = s.claim_memories(&a, "acme  corp", "Lead Time").await.unwrap();
    assert_eq!(ids(&got), vec![old, new_ids[0]], "both values, the superseded one first (by id)");
    assert!(!got[0].status.is_active() && got[1].status.is_active());
    assert_eq!(ids(&s.claim_memories(&a, "Acme Corp", "owner").await.unwrap()), vec![other]);
    assert!(s.claim_memories(&a, "Acme Corp", "city").await.unwrap().is_empty());
    assert!(s.claim_memories(&ns("gamma"), "Acme Corp", "lead time").await.unwrap().is_empty());
}

/// A tombstone is never reactivated, re-tombstoned, reinforced or confirmed.
pub async fn tombstone_is_final(s: &dyn Store) {
    let a = ns("alpha");
    let id = insert(s, mem(&a, "gone soon", &["acme"])).await;
    s.apply(&a, at(10), vec![WriteOp::Tombstone { id, reason: "decayed".into(), superseded_by: None, turn: None }])
        .await
        .unwrap();
    let all = [&a];
    let ops: Vec<(&str, WriteOp)> = vec![
        ("tombstone a tombstone", WriteOp::Tombstone { id, reason: "again".into(), superseded_by: None, turn: None }),
        ("reinforce a tombstone", WriteOp::Reinforce { id, source: "bob".into(), turn: None }),
        ("confirm a tombstone", WriteOp::Confirm { id, source: "erp".into() }),
    ];
    for (why, op) in ops {
        assert_rejected(s, &a, vec![op], &all, why).await;
    }
    assert!(!get(s, &a, id).await.status.is_active());
    assert!(s.active(&a).await.unwrap().is_empty());
    assert_eq!(s.history(&a, id).await.unwrap().len(), 2, "created + tombstoned");
}

/// Every change takes a new store-wide maximum rev; `changed_since` and `max_rev` agree.
pub async fn rev_increases_on_every_change(s: &dyn Store) {
    let (a, b) = (ns("alpha"), ns("beta"));
    let mut last = s.max_rev().await.unwrap();
    assert_eq!(last, 0);

    // After each change: the changed memories are exactly those above the old maximum, with
    // distinct revs above it, the highest of which is the new max_rev.
    async fn step(s: &dyn Store, last: &mut u64, expect: &[MemoryId], what: &str) {
        let changed = s.changed_since(*last, 100).await.unwrap();
        assert_eq!(id_set(&changed), set(expect), "{what}: changed_since({last})");
        let revs: Vec<u64> = changed.iter().map(|m| m.rev).collect();
        assert!(revs.windows(2).all(|w| w[0] < w[1]), "{what}: revs ordered and distinct: {revs:?}");
        assert!(revs.iter().all(|r| r > last), "{what}: revs above the old max");
        let max = s.max_rev().await.unwrap();
        assert_eq!(Some(&max), revs.last(), "{what}: max_rev agrees with changed_since");
        *last = max;
    }

    let m1 = insert(s, mem(&a, "one", &[])).await;
    step(s, &mut last, &[m1], "insert").await;
    let m2 = insert(s, mem(&b, "two", &[])).await;
    step(s, &mut last, &[m2], "insert in another namespace").await;
    s.apply(&a, at(1), vec![WriteOp::Reinforce { id: m1, source: "x".into(), turn: None }]).await.unwrap();
    step(s, &mut last, &[m1], "reinforce").await;
    s.apply(&b, at(2), vec![WriteOp::Confirm { id: m2, source: "erp".into() }]).await.unwrap();
    step(s, &mut last, &[m2], "confirm").await;
    let batch =
        s.apply(&a, at(3), vec![ins(mem(&a, "3", &[])), ins(mem(&a, "4", &[])), ins(mem(&a, "5", &[]))]).await.unwrap();
    step(s, &mut last, &batch, "a batch of inserts").await;
    s.apply(&a, at(4), vec![WriteOp::Tombstone { id: m1, reason: "r".into(), superseded_by: None, turn: None }])
        .await
        .unwrap();
    step(s, &mut last, &[m1], "tombstone").await;
    s.record_turn(NewTurn { namespace: a.clone(), source: "u".into(), at: at(5), text: "t".into(), external_id: None })
        .await
        .unwrap();
    assert!(s.max_rev().await.unwrap() >= last, "rev never goes back");

    let all = s.changed_since(0, 1000).await.unwrap();
    assert_eq!(all.len(), 5, "each memory once in changed_since(0)");
    assert!(all.windows(2).all(|w| w[0].rev < w[1].rev), "revs are distinct store-wide");
}

/// `changed_since` is ordered by rev, respects `limit`, and pages without gaps or repeats.
pub async fn changed_since_pages_by_rev(s: &dyn Store) {
    let (a, b) = (ns("alpha"), ns("beta"));
    let mut made = Vec::new();
    for i in 0..5 {
        let n = if i % 2 == 0 { &a } else { &b };
        made.push(insert(s, mem(n, &format!("m{i}"), &[])).await);
    }
    // Changing the first moves it to the end.
    s.apply(&a, at(9), vec![WriteOp::Reinforce { id: made[0], source: "x".into(), turn: None }]).await.unwrap();
    let expected = vec![made[1], made[2], made[3], made[4], made[0]];
    let full = s.changed_since(0, 1000).await.unwrap();
    assert_eq!(ids(&full), expected, "changed_since(0) by rev");

    let mut paged = Vec::new();
    let mut cursor = 0;
    loop {
        let page = s.changed_since(cursor, 2).await.unwrap();
        assert!(page.len() <= 2, "limit respected");
        let Some(last) = page.last() else { break };
        cursor = last.rev;
        paged.extend(page);
    }
    assert_eq!(ids(&paged), expected, "paging by rev loses and repeats nothing");
    assert!(s.changed_since(0, 0).await.unwrap().is_empty(), "limit 0");
    assert!(s.changed_since(s.max_rev().await.unwrap(), 10).await.unwrap().is_empty());
    assert!(s.changed_since(u64::MAX, 10).await.unwrap().is_empty());
}

/// `changes_since` answers what `max_rev`, `changed_since`, `identity` and `rev_fingerprint`
/// answer one by one (the index sync relies on either giving the same stamp).
pub async fn changes_since_is_the_four_lookups(s: &dyn Store) {
    let a = ns("alpha");
    let empty = s.changes_since(0, 10).await.unwrap();
    assert_eq!(empty.newest, 0, "an empty store's newest rev");
    assert!(empty.memories.is_empty());
    assert_eq!(empty.fingerprint, None, "no change at rev 0");
    assert_eq!(empty.identity, s.identity().await.unwrap());

    let first = insert(s, mem(&a, "one", &[])).await;
    let second = insert(s, mem(&a, "two", &[])).await;
    s.apply(&a, at(9), vec![WriteOp::Reinforce { id: first, source: "x".into(), turn: None }]).await.unwrap();
    let newest = s.max_rev().await.unwrap();
    let page = s.changes_since(0, 1).await.unwrap();
    assert_eq!(page.newest, newest, "newest is the store's, not the page's");
    assert_eq!(ids(&page.memories), vec![second], "limit 1: the lowest rev first");
    assert_eq!(page.memories, s.changed_since(0, 1).await.unwrap());
    let last = page.memories[0].rev;
    assert_eq!(page.fingerprint, s.rev_fingerprint(last).await.unwrap(), "fingerprint of the page's last rev");
    assert_eq!(page.identity, s.identity().await.unwrap());

    let rest = s.changes_since(last, 10).await.unwrap();
    assert_eq!(ids(&rest.memories), vec![first], "the reinforced memory at its new rev");
    assert_eq!(rest.fingerprint, s.rev_fingerprint(newest).await.unwrap());
    let none = s.changes_since(newest, 10).await.unwrap();
    assert!(none.memories.is_empty(), "nothing above the newest rev");
    assert_eq!(none.fingerprint, s.rev_fingerprint(newest).await.unwrap(), "nothing changed: the asked rev's");
    assert_eq!(none.newest, newest);
    for beyond in [newest + 5, u64::MAX] {
        let ahead = s.changes_since(beyond, 10).await.unwrap();
        assert!(ahead.memories.is_empty(), "nothing above {beyond}");
        assert_eq!(ahead.newest, newest, "an index ahead of its store ({beyond}) is told the store's newest rev");
    }
}

/// History lists created / reinforced / confirmed / tombstoned, oldest first, with the turns,
/// times and details (source, reason, successor).
pub async fn history_in_order(s: &dyn Store) {
    let a = ns("alpha");
    let t1 = turn(s, &a, "one", at(0)).await;
    let t2 = turn(s, &a, "two", at(10)).await;
    let t3 = turn(s, &a, "three", at(20)).await;
    let id = s
        .apply(&a, at(0), vec![WriteOp::Insert { memory: mem(&a, "fact", &["acme"]), turn: Some(t1.id) }])
        .await
        .unwrap()[0];
    let succ = insert(s, mem(&a, "newer fact", &["acme"])).await;
    s.apply(&a, at(10), vec![WriteOp::Reinforce { id, source: "bob".into(), turn: Some(t2.id) }]).await.unwrap();
    s.apply(&a, at(15), vec![WriteOp::Confirm { id, source: "erp".into() }]).await.unwrap();
    let reason = "contradicted by turn three";
    s.apply(
        &a,
        at(20),
        vec![WriteOp::Tombstone {
            id,
            reason: reason.into(),
            superseded_by: Some(MemoryRef::Existing(succ)),
            turn: Some(t3.id),
        }],
    )
    .await
    .unwrap();

    let h = s.history(&a, id).await.unwrap();
    let kinds: Vec<&str> = h.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(kinds, vec!["created", "reinforced", "confirmed", "tombstoned"]);
    assert_eq!(h.iter().map(|e| e.turn).collect::<Vec<_>>(), vec![Some(t1.id), Some(t2.id), None, Some(t3.id)]);
    assert_eq!(h.iter().map(|e| e.at).collect::<Vec<_>>(), vec![at(0), at(10), at(15), at(20)]);
    assert!(h.iter().all(|e| e.memory == id), "events of this memory only");
    assert!(h.windows(2).all(|w| w[0].seq < w[1].seq), "seq increases");
    assert!(h[1].detail.contains("bob"), "reinforced detail names the source: {}", h[1].detail);
    assert!(h[2].detail.contains("erp"), "confirmed detail names the source: {}", h[2].detail);
    assert!(h[3].detail.contains(reason), "tombstoned detail has the reason: {}", h[3].detail);
    assert!(h[3].detail.contains(&succ.0.to_string()), "tombstoned detail names the successor: {}", h[3].detail);
    assert_eq!(s.history(&a, succ).await.unwrap().len(), 1, "the successor has only its creation");
}

/// `touch` records the access time without bumping rev; an access time only moves forward.
pub async fn touch_does_not_bump_rev(s: &dyn Store) {
    let a = ns("alpha");
    let m = insert(s, mem(&a, "recalled", &[])).await;
    let other = insert(s, mem(&a, "not recalled", &[])).await;
    let before = get(s, &a, m).await;
    let max = s.max_rev().await.unwrap();
    s.touch(&a, &[m, MemoryId(987_654_321)], at(99)).await.unwrap();
    let after = get(s, &a, m).await;
    assert_eq!(after.last_accessed_at, Some(at(99)));
    assert_eq!(after.rev, before.rev, "touch must not change rev");
    assert_eq!(Memory { last_accessed_at: None, ..after }, before, "touch changes only last_accessed_at");
    assert_eq!(s.max_rev().await.unwrap(), max, "touch must not change max_rev");
    assert!(s.changed_since(max, 10).await.unwrap().is_empty(), "a touch is not a change for the index");
    assert_eq!(get(s, &a, other).await.last_accessed_at, None, "only the touched memory");
    s.touch(&a, &[m], at(120)).await.unwrap();
    assert_eq!(get(s, &a, m).await.last_accessed_at, Some(at(120)));
    s.touch(&a, &[m], at(-1_780_000_000_000)).await.unwrap();
    assert_eq!(
        get(s, &a, m).await.last_accessed_at,
        Some(at(120)),
        "a recall at an earlier time (1970) moves nothing back"
    );
    assert_eq!(s.history(&a, m).await.unwrap().len(), 1, "a touch is not a history event");
    // Several recalls' accesses at once, each at its own time; other namespaces untouched.
    let elsewhere = insert(s, mem(&ns("beta"), "elsewhere", &[])).await;
    let max = s.max_rev().await.unwrap();
    s.touch_each(&a, &[(m, at(130)), (other, at(140)), (elsewhere, at(150))]).await.unwrap();
    assert_eq!(get(s, &a, m).await.last_accessed_at, Some(at(130)));
    assert_eq!(get(s, &a, other).await.last_accessed_at, Some(at(140)));
    assert_eq!(get(s, &ns("beta"), elsewhere).await.last_accessed_at, None, "touch_each stays in its namespace");
    s.touch_each(&a, &[(m, at(125)), (other, at(160))]).await.unwrap();
    assert_eq!(get(s, &a, m).await.last_accessed_at, Some(at(130)), "touch_each never moves an access back");
    assert_eq!(get(s, &a, other).await.last_accessed_at, Some(at(160)));
    assert_eq!(s.max_rev().await.unwrap(), max, "touch_each must not change max_rev");
}

/// `active_by_entities` finds active memories mentioning any of the names, each once.
pub async fn active_by_entities_matches_any(s: &dyn Store) {
    let a = ns("alpha");
    let both = insert(s, mem(&a, "acme buys from northwind", &["acme", "northwind"])).await;
    let north = insert(s, mem(&a, "northwind is in Leeds", &["northwind"])).await;
    let _globex = insert(s, mem(&a, "globex", &["globex"])).await;
    let dead = insert(s, mem(&a, "old acme fact", &["acme"])).await;
    s.apply(&a, at(5), vec![WriteOp::Tombstone { id: dead, reason: "old".into(), superseded_by: None, turn: None }])
        .await
        .unwrap();
    let q = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let found = s.active_by_entities(&a, &q(&["acme"])).await.unwrap();
    assert_eq!(ids(&found), vec![both], "tombstones excluded");
    let found = s.active_by_entities(&a, &q(&["northwind", "acme"])).await.unwrap();
    assert_eq!(found.len(), 2, "a memory matching two names comes once: {:?}", ids(&found));
    assert_eq!(id_set(&found), set(&[both, north]));
    assert!(s.active_by_entities(&a, &q(&["nobody"])).await.unwrap().is_empty());
    assert!(s.active_by_entities(&a, &[]).await.unwrap().is_empty());
}

/// A namespace's ids (memories and turns) do not move with another namespace's writes: B's
/// next id after A wrote is the one it would have had anyway (here: one more than its last).
pub async fn ids_reveal_nothing_of_other_namespaces(s: &dyn Store) {
    let (a, b) = (ns("tenant-a"), ns("tenant-b"));
    let turn = |n: &Namespace| NewTurn {
        namespace: n.clone(),
        source: "user".to_string(),
        at: at(1),
        text: "t".to_string(),
        external_id: None,
    };
    let t1 = s.record_turn(turn(&b)).await.unwrap().id;
    let m1 = s.apply(&b, at(1), vec![ins(mem(&b, "b one", &["x"])), ins(mem(&b, "b two", &["x"]))]).await.unwrap();
    for i in 0..3 {
        s.record_turn(turn(&a)).await.unwrap();
        s.apply(&a, at(2), (0..5).map(|j| ins(mem(&a, &format!("a {i} {j}"), &["x"]))).collect()).await.unwrap();
    }
    let t2 = s.record_turn(turn(&b)).await.unwrap().id;
    let m2 = s.apply(&b, at(3), vec![ins(mem(&b, "b three", &["x"]))]).await.unwrap();
    assert_eq!(t2.0, t1.0 + 1, "B's turn ids must not skip the turns A recorded in between");
    assert_eq!(m1[1].0, m1[0].0 + 1, "ids within a batch are consecutive");
    assert_eq!(m2[0].0, m1[1].0 + 1, "B's memory ids must not skip the memories A wrote in between");
}

/// `list_memories`: by id, after the cursor, at most `limit`, active only unless asked, and
/// never another namespace's memories.
pub async fn list_memories_pages_by_id(s: &dyn Store) {
    use crate::ListPage;
    let a = ns("list-a");
    let b = ns("list-b");
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(insert(s, mem(&a, &format!("fact {i}"), &["x"])).await);
        insert(s, mem(&b, &format!("other {i}"), &["x"])).await;
    }
    s.apply(
        &a,
        at(10),
        vec![WriteOp::Tombstone { id: ids[1], reason: "test".into(), superseded_by: None, turn: None }],
    )
    .await
    .unwrap();
    let page = |after, limit, include_tombstoned| ListPage { after, limit, include_tombstoned };
    let a = &a;
    let list =
        |p: ListPage| async move { s.list_memories(a, &p).await.unwrap().iter().map(|m| m.id).collect::<Vec<_>>() };
    assert_eq!(list(page(None, 10, false)).await, vec![ids[0], ids[2], ids[3], ids[4]], "active ones, by id");
    assert_eq!(list(page(None, 10, true)).await, ids, "tombstoned ones too when asked");
    assert_eq!(list(page(None, 2, true)).await, vec![ids[0], ids[1]], "at most limit");
    assert_eq!(list(page(Some(ids[1]), 2, true)).await, vec![ids[2], ids[3]], "after the cursor");
    assert_eq!(list(page(Some(ids[4]), 2, true)).await, Vec::<MemoryId>::new(), "past the end");
}

/// Local numbers (the short ids `m1`, `t1` a tenant reads) count 1, 2, 3 … in each namespace,
/// distinct within it, and `id_of_local` finds them in their own namespace only.
pub async fn short_ids_find_their_own_namespace(s: &dyn Store) {
    use crate::ids::IdKind;
    let (a, b) = (ns("short-a"), ns("short-b"));
    let ta = turn(s, &a, "a says", at(1)).await;
    let tb = turn(s, &b, "b says", at(1)).await;
    let ma = s.apply(&a, at(1), vec![ins(mem(&a, "a one", &["x"])), ins(mem(&a, "a two", &["x"]))]).await.unwrap();
    let mb = insert(s, mem(&b, "b one", &["x"])).await;
    assert_eq!((ta.id.local(), tb.id.local()), (1, 1), "each namespace's first turn is t1");
    assert_eq!((ma[0].local(), ma[1].local(), mb.local()), (1, 2, 1), "each namespace counts its memories from m1");
    assert_ne!(ma[0], mb, "m1 of two namespaces are different memories");
    assert_eq!(s.id_of_local(&a, IdKind::Memory, 2).await.unwrap(), Some(ma[1].0));
    assert_eq!(s.id_of_local(&b, IdKind::Memory, 1).await.unwrap(), Some(mb.0));
    assert_eq!(s.id_of_local(&a, IdKind::Turn, 1).await.unwrap(), Some(ta.id.0));
    assert_eq!(s.id_of_local(&b, IdKind::Memory, 2).await.unwrap(), None, "b has no m2: a's is not found from b");
    assert_eq!(s.id_of_local(&ns("short-none"), IdKind::Memory, 1).await.unwrap(), None);
}

/// A store that keeps a history chain (`verify_history` is Some) chains every turn and event
/// of every write, per namespace, in write order; a rejected batch leaves no entry; the dump,
/// the verification and the recorded heads agree. A store without a chain passes as it is.
pub async fn history_chain_covers_every_write(s: &dyn Store) {
    let Some(empty) = s.verify_history().await.unwrap() else { return };
    assert!(empty.iter().all(|r| r.ok() && r.entries == 0), "an empty store's history: {empty:?}");
    let (a, b) = (ns("alpha"), ns("beta"));
    let turn = |n: &Namespace, text: &str, ms: i64| NewTurn {
        namespace: n.clone(),
        source: "user".into(),
        at: at(ms),
        text: text.into(),
        external_id: None,
    };
    let t1 = s.record_turn(turn(&a, "one", 1)).await.unwrap();
    let ts = s.record_turns(vec![turn(&a, "two", 2), turn(&b, "beta one", 3)]).await.unwrap();
    let ids = s
        .apply(
            &a,
            at(4),
            vec![
                WriteOp::Insert { memory: mem(&a, "first", &["acme"]), turn: Some(t1.id) },
                ins(mem(&a, "second", &[])),
            ],
        )
        .await
        .unwrap();
    s.apply(
        &a,
        at(5),
        vec![
            WriteOp::Reinforce { id: ids[0], source: "erp".into(), turn: Some(ts[0].id) },
            WriteOp::Confirm { id: ids[0], source: "crm".into() },
            WriteOp::Tombstone { id: ids[1], reason: "test".into(), superseded_by: None, turn: None },
        ],
    )
    .await
    .unwrap();
    insert(s, mem(&b, "beta first", &[])).await;
    // Rejected (a missing id after valid ops): nothing of it is chained.
    let rejected = s
        .apply(
            &a,
            at(6),
            vec![
                ins(mem(&a, "never", &[])),
                WriteOp::Reinforce { id: MemoryId(987_654_321), source: "x".into(), turn: None },
            ],
        )
        .await;
    assert!(rejected.is_err(), "a batch with a missing id is rejected");
    let reports = s.verify_history().await.unwrap().unwrap();
    let of =
        |n: &str| reports.iter().find(|r| r.namespace == n).unwrap_or_else(|| panic!("no report of {n}: {reports:?}"));
    assert!(reports.iter().all(|r| r.ok()), "an untouched store verifies: {reports:?}");
    // alpha: 2 turns + 2 created + reinforced + confirmed + tombstoned; beta: 1 turn + 1 created.
    assert_eq!((of("alpha").entries, of("beta").entries), (7, 2), "{reports:?}");
    let heads = s.chain_heads().await.unwrap();
    for r in &reports {
        assert!(heads.contains(r.head.as_ref().unwrap()), "the recorded head is the verified one: {heads:?} {r:?}");
    }
    let records = s.history_chain(&a, 0, 100).await.unwrap().unwrap();
    use crate::chain::EntryKind::{Event as E, Turn as T};
    assert_eq!(records.iter().map(|r| r.entry).collect::<Vec<_>>(), [T, T, E, E, E, E, E], "write order");
    assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), (1..=7).collect::<Vec<i64>>());
    assert_eq!(records[0].id, t1.id.0);
    assert!(records.iter().all(|r| r.content.is_some()), "every entry's row is there");
    let page = s.history_chain(&a, 2, 3).await.unwrap().unwrap();
    assert_eq!(page.iter().map(|r| r.seq).collect::<Vec<_>>(), [3, 4, 5], "a page: after 2, at most 3");
    assert_eq!(page, records[2..5].to_vec());
    let recomputed = crate::chain::verify("alpha", records, heads.iter().find(|h| h.namespace == "alpha"), &[]);
    assert!(recomputed.ok(), "the entries as read verify on their own (an export): {recomputed:?}");
}

/// Erasure (see `crate::erase`): every content column of an erased memory is emptied, a
/// turn's text is replaced, the memory becomes a tombstone with a new rev (an index drops it),
/// a content-free record stays, the history still verifies, and nothing else changes. An id
/// of another namespace is NotFound and changes nothing; so does a store that cannot erase
/// (it refuses with InvalidInput, changing nothing, and the rest is not asked of it).
pub async fn erase_empties_content_and_keeps_a_record(s: &dyn Store) {
    use crate::erase::{ErasePlan, EraseTarget};
    let (a, b) = (ns("alpha"), ns("beta"));
    let t = turn(s, &a, "Ben's phone is 555-0100", at(1)).await;
    let phone = NewMemory {
        claim: Some(Claim { entity: "Ben".into(), attribute: "phone".into(), value: "555-0100".into() }),
        embedding: Some(Embedding { model: "m".into(), vector: vec![0.5, -0.25] }),
        ..mem(&a, "Ben | phone | 555-0100", &["ben"])
    };
    let phone = s.apply(&a, at(2), vec![WriteOp::Insert { memory: phone, turn: Some(t.id) }]).await.unwrap()[0];
    let kept = insert(s, mem(&a, "Ann likes tea", &["ann"])).await;
    let other = insert(s, mem(&b, "beta's own", &[])).await;
    let plan = |memories: Vec<MemoryId>, redact: Vec<(TurnId, String)>| ErasePlan {
        target: EraseTarget::Memory { id: phone }.kind().to_string(),
        reason: "asked".into(),
        by: Some("dpo".into()),
        memories,
        turns: vec![],
        redact,
    };
    let before = snapshot(s, &[&a, &b]).await;
    let wrong = s.erase(&a, at(9), plan(vec![other], vec![])).await;
    match wrong {
        Err(CoreError::InvalidInput(m)) if m.contains("cannot erase") => {
            assert_eq!(before, snapshot(s, &[&a, &b]).await, "a refused erasure changes nothing");
            return;
        }
        Err(CoreError::NotFound(_)) => {}
        other => panic!("an id of another namespace is NotFound, got {other:?}"),
    }
    assert_eq!(before, snapshot(s, &[&a, &b]).await, "a rejected erasure changes nothing");
    let rev = s.max_rev().await.unwrap();
    let r = s.erase(&a, at(10), plan(vec![phone], vec![(t.id, "Ben's phone is [erased]".into())])).await.unwrap();
    assert_eq!((r.memories.clone(), r.redacted.clone(), r.turns.clone()), (vec![phone], vec![t.id], vec![]));
    assert_eq!(
        (r.at, r.reason.as_str(), r.by.as_deref(), r.namespace.as_str()),
        (at(10), "asked", Some("dpo"), "alpha")
    );
    assert!(r.rows.iter().all(|row| row.before != row.after), "every row listed changed: {r:?}");
    let m = get(s, &a, phone).await;
    assert_eq!((m.content.as_str(), &m.claim, &m.entities, &m.embedding), ("", &None, &vec![], &None), "{m:?}");
    match &m.status {
        Status::Tombstoned { reason, at: when, .. } => assert_eq!((reason.as_str(), *when), ("erased: asked", at(10))),
        other => panic!("an erased memory is a tombstone: {other:?}"),
    }
    assert!(m.rev > rev, "a new rev, so an index drops it");
    let h = s.history(&a, phone).await.unwrap();
    assert_eq!(h.last().map(|e| e.event.as_str()), Some("erased"), "{h:?}");
    assert!(h.iter().all(|e| !e.detail.contains("555")), "{h:?}");
    assert_eq!(s.turns(&a).await.unwrap()[0].text, "Ben's phone is [erased]");
    assert!(s.active_by_entities(&a, &["ben".to_string()]).await.unwrap().is_empty());
    assert_eq!(get(s, &a, kept).await.content, "Ann likes tea", "what was not named stays");
    assert_eq!(get(s, &b, other).await.content, "beta's own");
    assert_eq!(s.erasures(&a).await.unwrap(), vec![r], "the record, as kept");
    assert!(s.erasures(&b).await.unwrap().is_empty(), "records are per namespace");
    if let Some(reports) = s.verify_history().await.unwrap() {
        assert!(reports.iter().all(|r| r.ok()), "the history still verifies after an erasure: {reports:?}");
    }
    let again = s.erase(&a, at(11), plan(vec![phone], vec![])).await;
    assert!(matches!(again, Err(CoreError::InvalidInput(_))), "nothing left to erase: {again:?}");
}

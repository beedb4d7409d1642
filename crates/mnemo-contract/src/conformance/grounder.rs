//! Grounder conformance: what every system-of-record lookup must do. The backend under test is
//! handed a seeding function that puts `(entity, attribute, value)` rows in its source (the
//! grounder itself is read-only).
use std::sync::Arc;

use crate::Grounder;

/// Rows every backend is seeded with before `run_all`.
pub const ROWS: &[(&str, &str, &str)] = &[
    ("IC-MC-44 from S-208", "lead time", "35 days"),
    ("IC-MC-44 from S-208", "stock", "120 units"),
    ("Northwind Labs", "owner", "Ben"),
];

/// Run every check on a grounder seeded with [`ROWS`].
pub async fn run_all(g: Arc<dyn Grounder>) {
    finds_seeded_rows(g.as_ref()).await;
    names_are_normalised(g.as_ref()).await;
    unknown_claims_are_not_verifiable(g.as_ref()).await;
    lookups_do_not_change_the_source(g.as_ref()).await;
}

/// Every seeded row is found with its value and the grounder's source name.
pub async fn finds_seeded_rows(g: &dyn Grounder) {
    assert!(!g.source().trim().is_empty(), "a grounder names its source");
    for (e, a, v) in ROWS {
        let got = g.lookup(e, a).await.unwrap().unwrap_or_else(|| panic!("{e} | {a} not found"));
        assert_eq!(got.value, *v);
        assert_eq!(got.source, g.source());
    }
}

/// Entity and attribute compare case-insensitively with white space folded.
pub async fn names_are_normalised(g: &dyn Grounder) {
    let got = g.lookup("  ic-mc-44   FROM s-208 ", "Lead   Time").await.unwrap();
    assert_eq!(got.map(|v| v.value).as_deref(), Some("35 days"));
}

/// A claim the source does not hold is `None` (not verifiable here), not an error.
pub async fn unknown_claims_are_not_verifiable(g: &dyn Grounder) {
    assert!(g.lookup("IC-MC-44 from S-208", "colour").await.unwrap().is_none());
    assert!(g.lookup("Nobody", "lead time").await.unwrap().is_none());
    assert!(g.lookup("", "").await.unwrap().is_none());
}

/// Looking up is read-only: repeated lookups give the same answers.
pub async fn lookups_do_not_change_the_source(g: &dyn Grounder) {
    for _ in 0..3 {
        let _ = g.lookup("Northwind Labs", "owner").await.unwrap();
    }
    assert_eq!(g.lookup("Northwind Labs", "owner").await.unwrap().map(|v| v.value).as_deref(), Some("Ben"));
}

//! A binary that links this crate alone (as the CLI and the Python module do) has every kind of
//! the list registered: the built-in ones through this crate's own links, and each optional one
//! either built or as its NOT BUILT placeholder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use mnemo_contract::registry::{kinds, Role};
use mnemo_kinds as _;

#[test]
fn linking_this_crate_registers_every_kind_of_the_list() {
    let expect: &[(Role, &[&str])] = &[
        (Role::Store, &["sqlite", "postgres"]),
        (Role::Index, &["brute", "tantivy", "postgres"]),
        (Role::Embedder, &["fake", "local", "static"]),
        (Role::Reasoner, &["llm"]),
        (Role::Grounder, &["table", "csv", "sqlite", "http", "mcp"]),
    ];
    for (role, want) in expect {
        let have = kinds(*role);
        for k in *want {
            assert!(have.contains(k), "{role}: {k} missing from {have:?}");
        }
    }
}

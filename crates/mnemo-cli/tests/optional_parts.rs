//! The optional parts of the binary (cargo features `server`, `mcp`, `postgres`): `--help` says
//! which are built, and a command or component kind whose part is not built fails with an error
//! naming the feature and the rebuild command, having written nothing. Run both ways:
//! `cargo test -p mnemo-cli --test optional_parts` (default build: the not-built errors) and
//! with `--features full` (what CI builds: the parts are there).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_run;
use cli_run::mnemo;

#[cfg(any(not(feature = "server"), not(feature = "mcp"), not(feature = "postgres")))]
const REBUILD: &str = "cargo install --path crates/mnemo-cli --features full";

fn help_line(feature: &str) -> String {
    let d = tempfile::tempdir().unwrap();
    let o = mnemo(d.path(), &["--help"]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    let (_, parts) = out.split_once("Optional parts").unwrap_or_else(|| panic!("no list of parts in --help: {out}"));
    parts
        .lines()
        .find(|l| l.trim_start().starts_with(feature))
        .unwrap_or_else(|| panic!("no line for {feature} in --help: {out}"))
        .to_string()
}

/// `mnemo args…` fails, saying the feature and the rebuild command, with stdout clean; a
/// command refused before it opens anything leaves no data directory behind (a config kind is
/// refused while the runtime opens the directory; the cases below write no memory either way:
/// the store cannot be built, or the command only reads).
#[cfg(any(not(feature = "server"), not(feature = "mcp"), not(feature = "postgres")))]
fn refused(args: &[&str], feature: &str, opens_the_directory: bool) {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let o = mnemo(&data, args);
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(!o.status.success(), "{args:?} succeeded: {err}");
    assert!(err.contains(&format!("`{feature}`")) && err.contains(REBUILD), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "stdout stays clean");
    if !opens_the_directory {
        assert!(!data.exists(), "{args:?} wrote a data directory");
    }
}

#[test]
fn help_says_which_parts_are_built() {
    for (feature, built) in [
        ("server", cfg!(feature = "server")),
        ("mcp", cfg!(feature = "mcp")),
        ("postgres", cfg!(feature = "postgres")),
        ("otlp", cfg!(feature = "otlp")),
    ] {
        let line = help_line(feature);
        assert_eq!(line.contains("NOT BUILT"), !built, "{line}");
    }
}

#[cfg(not(feature = "server"))]
#[test]
fn serve_without_the_server_feature_names_it() {
    refused(&["serve", "--addr", "127.0.0.1:0"], "server", false);
    refused(&["bench", "serve"], "server", false);
}

#[cfg(not(feature = "mcp"))]
#[test]
fn mcp_without_the_mcp_feature_names_it() {
    refused(&["-n", "me", "mcp"], "mcp", false);
}

#[cfg(not(feature = "postgres"))]
#[test]
fn postgres_kinds_and_migrate_without_the_feature_name_it() {
    refused(&["migrate", "--from", "nowhere", "--to", "postgres://u@127.0.0.1:1/db"], "postgres", false);
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join("pg.toml");
    std::fs::write(&config, "[store]\nkind = \"postgres\"\nurl = \"postgres://u@127.0.0.1:1/db\"\n").unwrap();
    refused(&["--config", config.to_str().unwrap(), "remember", "[SEM] A | b | c"], "postgres", true);
}

#[cfg(not(feature = "mcp"))]
#[test]
fn the_mcp_grounder_kind_without_the_feature_names_it() {
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join("mcp.toml");
    std::fs::write(&config, "[[grounders]]\nkind = \"mcp\"\ncommand = \"true\"\n").unwrap();
    refused(&["--config", config.to_str().unwrap(), "recall", "anything"], "mcp", true);
}

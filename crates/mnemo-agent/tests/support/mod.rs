//! Builds plugin crates of this workspace (cdylibs) for the tests that load them, with the
//! same cargo, profile and target directory as the test itself, so `cargo test` from a clean
//! clone works without a separate build step.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

static BUILD: Mutex<()> = Mutex::new(());

/// `target/<profile>`: the test executable lives in `target/<profile>/deps`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf()
}

/// Build `crates` (package names) and return the directory holding their libraries.
pub fn build(crates: &[&str]) -> PathBuf {
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let dir = profile_dir();
    let target = dir.parent().unwrap();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.arg("build").arg("--quiet").arg("--target-dir").arg(target);
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    for c in crates {
        cmd.arg("-p").arg(c);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let status = cmd.arg("--manifest-path").arg(manifest).status().expect("run cargo");
    assert!(status.success(), "cargo build {crates:?} failed");
    dir
}

/// The platform file name of a library crate's cdylib.
pub fn library(dir: &std::path::Path, crate_name: &str) -> PathBuf {
    dir.join(format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        crate_name.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    ))
}

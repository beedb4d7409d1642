//! Records the commit this binary is built from (`MNEMO_BUILD_COMMIT`), so that every report
//! names the code that ran — not the checkout the binary happens to be run from (an older
//! binary run in a newer checkout used to report the newer commit).
use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok().filter(|o| o.status.success())?;
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let workspace = Path::new(&manifest).join("../..");
    // Built again when the checkout moves (HEAD, its branch, the index) or a source or the lock
    // file changes: the "-dirty" mark must follow edits of any crate the binary links.
    println!("cargo:rerun-if-changed={}", workspace.join("crates").display());
    println!("cargo:rerun-if-changed={}", workspace.join("Cargo.lock").display());
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
    }
    if let (Some(common), Some(head)) =
        (git(&["rev-parse", "--git-common-dir"]), git(&["rev-parse", "--symbolic-full-name", "HEAD"]))
    {
        let common = Path::new(&manifest).join(common);
        println!("cargo:rerun-if-changed={}", common.join(&head).display());
        println!("cargo:rerun-if-changed={}", common.join("packed-refs").display());
    }
    let commit = match git(&["rev-parse", "HEAD"]) {
        Some(h) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(_) => format!("{h}-dirty"),
            None => h,
        },
        // Built outside a git checkout (a source archive): said so, never guessed.
        None => "unknown".to_string(),
    };
    println!("cargo:rustc-env=MNEMO_BUILD_COMMIT={commit}");
}

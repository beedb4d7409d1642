#![allow(clippy::unwrap_used, clippy::panic)]
//! The README's first CLI lines, run as written: `why m1` explains the first memory, superseded
//! by `m2`.

mod cli_run;
use cli_run::{command, repo_root};

/// The README's CLI lines up to and including `why m1`, as argument lists (after `mnemo`).
fn readme_lines() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let mut lines = vec![];
    for line in readme.lines().filter(|l| l.starts_with("mnemo --data-dir D ")) {
        let command = line.split(" # ").next().unwrap().trim();
        lines.push(words(command.strip_prefix("mnemo --data-dir D ").unwrap()));
        if command.ends_with("why m1") {
            return lines;
        }
    }
    panic!("the README has no `mnemo --data-dir D why m1` line");
}

/// Shell words: split on spaces, double quotes group.
fn words(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (vec![], String::new(), false);
    for c in s.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[test]
fn the_readmes_why_m1_works_as_written() {
    let d = tempfile::tempdir().unwrap();
    let lines = readme_lines();
    assert!(lines.len() >= 5, "{lines:?}");
    let mut last = String::new();
    for args in &lines {
        let o = command(d.path()).args(args).output().unwrap();
        assert!(o.status.success(), "mnemo {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        last = String::from_utf8(o.stdout).unwrap();
    }
    assert!(last.contains("memory m1 ") && last.contains("Ben"), "{last}");
    assert!(last.contains("superseded by memory m2"), "why m1 names its successor m2: {last}");
}

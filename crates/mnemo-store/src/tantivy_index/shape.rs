//! The index path's shape is not trusted. Whatever sits at the index directory (`<data
//! dir>/index`) that is not an index of ours — a regular file, a dangling symbolic link, a link
//! to a file, a directory holding other things, `index/tantivy` as a file — is moved aside
//! (renamed `index.broken-<n>`, the first n free, kept for inspection) before the index is opened or
//! rebuilt, and the index is rebuilt from the store, the move said as the rebuild's reason. The
//! index is derived data: nothing in it is lost that the store does not hold.
//!
//! What is ours: `tantivy/` (a directory, or a link to one), a rebuild's `tantivy.rebuild/` and
//! `tantivy.old/` (`rebuild_aside`), and the vector logs `vectors-*` (regular files). A directory with anything else in it is not our index: a path typed wrong
//! in `[index] path`, or something put there by hand.
use std::path::{Path, PathBuf};

use mnemo_contract::{CoreError, IndexErrorKind, Result};

/// Why `dir` is not an index directory of ours, or None when it is one (or is missing).
pub(crate) fn misshapen(dir: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(dir).ok()?;
    if meta.file_type().is_symlink() {
        match std::fs::metadata(dir) {
            Err(_) => return Some("a symbolic link to nothing".into()),
            Ok(m) if !m.is_dir() => return Some("a symbolic link to something that is not a directory".into()),
            Ok(_) => {}
        }
    } else if meta.is_file() {
        return Some("a regular file, not a directory".into());
    } else if !meta.is_dir() {
        return Some("neither a file nor a directory".into());
    }
    let entries: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
    // An index path configured as the data directory itself (or as anything holding a store)
    // is never moved: only what is clearly not a store's data is.
    if entries.iter().any(|e| e.file_name().to_string_lossy().starts_with("mnemo.")) {
        return None;
    }
    let mut foreign = 0usize;
    for e in entries {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let kind = std::fs::symlink_metadata(e.path()).ok();
        if name == "tantivy" || name == "tantivy.rebuild" || name == "tantivy.old" {
            if !std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir()) {
                return Some(format!("a directory whose {name} is not a directory"));
            }
        } else if name.starts_with("vectors-") {
            if !kind.is_some_and(|k| k.is_file()) {
                return Some(format!("a directory whose vector log {name} is not a regular file"));
            }
        } else {
            foreign += 1;
        }
    }
    (foreign > 0).then(|| format!("a directory holding {foreign} entries that are not Mnemo's index"))
}

/// Move `dir` aside when it is [`misshapen`]; the note that says so (None: nothing to move).
/// Moving fails only where the data directory cannot be written: the error is of kind
/// `ReadOnly`, so reads go on with an index in memory (as on a full disk).
pub(crate) fn set_aside(dir: &Path) -> Result<Option<String>> {
    let Some(why) = misshapen(dir) else { return Ok(None) };
    let aside = free_name(dir);
    match std::fs::rename(dir, &aside) {
        Ok(()) => Ok(Some(format!(
            "{} was {why}: moved aside to {} (remove it when done) and the index rebuilt from the store",
            dir.display(),
            aside.display()
        ))),
        Err(e) => Err(CoreError::index_message(
            IndexErrorKind::ReadOnly,
            format!(
                "{} is {why} and cannot be moved aside to {} ({e}); move it away by hand, then run `mnemo reindex` \
                 (until then the index is built in memory for each command)",
                dir.display(),
                aside.display()
            ),
        )),
    }
}

/// `<dir>.broken-<n>`, the first n from 1 not taken. Numbered, not dated: only the one real
/// `Clock` reads the wall clock, and the log line that moves it says when.
fn free_name(dir: &Path) -> PathBuf {
    (1u64..)
        .map(|n| PathBuf::from(format!("{}.broken-{n}", dir.display())))
        .find(|candidate| std::fs::symlink_metadata(candidate).is_err())
        .unwrap_or_else(|| PathBuf::from(format!("{}.broken", dir.display())))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_index_of_ours_or_none_is_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let idx = d.path().join("index");
        assert_eq!(misshapen(&idx), None, "missing");
        std::fs::create_dir_all(idx.join("tantivy")).unwrap();
        std::fs::write(idx.join("vectors-3.log"), b"x").unwrap();
        assert_eq!(misshapen(&idx), None);
        assert_eq!(set_aside(&idx).unwrap(), None);
        assert!(idx.join("tantivy").is_dir());
    }

    #[cfg(unix)]
    #[test]
    fn every_other_shape_is_moved_aside() {
        type Make = fn(&Path);
        let shapes: [(&str, Make); 6] = [
            ("a regular file", |p| std::fs::write(p, b"x\n").unwrap()),
            ("a symbolic link to nothing", |p| std::os::unix::fs::symlink(p.with_extension("gone"), p).unwrap()),
            ("not a directory", |p| {
                std::fs::write(p.with_extension("f"), b"x").unwrap();
                std::os::unix::fs::symlink(p.with_extension("f"), p).unwrap()
            }),
            ("not Mnemo's index", |p| {
                std::fs::create_dir_all(p.join("junk")).unwrap();
                std::fs::write(p.join("notes.txt"), b"x").unwrap()
            }),
            ("tantivy is not a directory", |p| {
                std::fs::create_dir_all(p).unwrap();
                std::fs::write(p.join("tantivy"), b"x").unwrap()
            }),
            ("vectors-1.log is not a regular file", |p| std::fs::create_dir_all(p.join("vectors-1.log")).unwrap()),
        ];
        for (said, make) in shapes {
            let d = tempfile::tempdir().unwrap();
            let idx = d.path().join("index");
            make(&idx);
            let note = set_aside(&idx).unwrap().unwrap();
            assert!(note.contains(said) && note.contains("index.broken-"), "{note}");
            assert!(std::fs::symlink_metadata(&idx).is_err(), "{said}: moved");
            let moved: Vec<_> = std::fs::read_dir(d.path())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("index.broken-"))
                .collect();
            assert_eq!(moved.len(), 1, "{said}");
            // a second one the same second gets its own name
            make(&idx);
            set_aside(&idx).unwrap().unwrap();
        }
    }
}

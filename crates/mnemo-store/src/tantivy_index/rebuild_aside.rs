//! A rebuild (`clear()` then the engine's replay of the store) is written beside the index it
//! replaces, in `<path>/tantivy.rebuild/` with a vector log of a newer generation, and put in
//! place at the next `flush()` (the engine flushes when a rebuild ends) or when the index is
//! closed (consistent up to its watermark, from which the next open replays the store). Readers
//! that open the index meanwhile (a `recall` beside a running `reindex`) search the previous
//! index, complete up to its own watermark, instead of finding a half-built one and building
//! their own in memory.
//!
//! Putting in place is two renames (`tantivy` → `tantivy.old`, `tantivy.rebuild` → `tantivy`)
//! and a sync of the directory; a process killed between them leaves `tantivy.old` and the
//! complete `tantivy.rebuild`, which the next writer's open puts in place. A process killed
//! before them leaves the previous index as it was (its vector log is kept until the swap) and
//! an unfinished `tantivy.rebuild`, which that open removes.
use std::path::Path;

/// Where a rebuild is written until it is put in place.
pub(crate) const REBUILD_DIR: &str = "tantivy.rebuild";
/// Where the replaced index waits for its removal during the swap.
pub(crate) const OLD_DIR: &str = "tantivy.old";
/// The index in place.
pub(crate) const CURRENT_DIR: &str = "tantivy";

/// Put the rebuild in place (see the module docs). The writer of the rebuild must be closed.
pub(crate) fn swap_in(dir: &Path) -> std::io::Result<()> {
    let current = dir.join(CURRENT_DIR);
    let old = dir.join(OLD_DIR);
    if std::fs::symlink_metadata(&old).is_ok() {
        std::fs::remove_dir_all(&old)?;
    }
    if std::fs::symlink_metadata(&current).is_ok() {
        std::fs::rename(&current, &old)?;
    }
    std::fs::rename(dir.join(REBUILD_DIR), &current)?;
    sync_dir(dir)?;
    // Readers that opened the old index keep its files open; nothing else needs them.
    if let Err(e) = std::fs::remove_dir_all(&old) {
        tracing::warn!(path = %old.display(), error = %e, "the replaced index could not be removed (it is removed at the next open)");
    }
    Ok(())
}

/// At a writer's open: finish a swap a killed process began, or remove the rebuild it did not
/// finish. Returns what was done, to be logged (None: nothing was left over).
pub(crate) fn recover(dir: &Path) -> std::io::Result<Option<String>> {
    let current = dir.join(CURRENT_DIR);
    let rebuild = dir.join(REBUILD_DIR);
    let old = dir.join(OLD_DIR);
    let has = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    let mut note = None;
    if has(&rebuild) {
        if !has(&current) && has(&old) && rebuild.join("meta.json").exists() {
            // Killed between the two renames: the rebuild was complete.
            std::fs::rename(&rebuild, &current)?;
            sync_dir(dir)?;
            note = Some(format!("a rebuilt index left at {} was put in place", rebuild.display()));
        } else {
            std::fs::remove_dir_all(&rebuild)?;
            note = Some(format!(
                "an unfinished rebuild at {} was removed (the index before it is kept)",
                rebuild.display()
            ));
        }
    }
    if has(&old) {
        std::fs::remove_dir_all(&old)?;
    }
    Ok(note)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn index_at(p: &Path, marker: &str) {
        std::fs::create_dir_all(p).unwrap();
        std::fs::write(p.join("meta.json"), marker).unwrap();
    }

    #[test]
    fn a_swap_puts_the_rebuild_in_place_and_removes_the_old_index() {
        let d = tempfile::tempdir().unwrap();
        index_at(&d.path().join(CURRENT_DIR), "old");
        index_at(&d.path().join(REBUILD_DIR), "new");
        swap_in(d.path()).unwrap();
        assert_eq!(std::fs::read_to_string(d.path().join("tantivy/meta.json")).unwrap(), "new");
        assert!(!d.path().join(REBUILD_DIR).exists() && !d.path().join(OLD_DIR).exists());
    }

    #[test]
    fn a_swap_killed_between_its_renames_is_finished_at_the_next_open() {
        let d = tempfile::tempdir().unwrap();
        index_at(&d.path().join(OLD_DIR), "old");
        index_at(&d.path().join(REBUILD_DIR), "new");
        let note = recover(d.path()).unwrap().unwrap();
        assert!(note.contains("put in place"), "{note}");
        assert_eq!(std::fs::read_to_string(d.path().join("tantivy/meta.json")).unwrap(), "new");
        assert!(!d.path().join(OLD_DIR).exists());
    }

    #[test]
    fn an_unfinished_rebuild_is_removed_and_the_index_before_it_kept() {
        let d = tempfile::tempdir().unwrap();
        index_at(&d.path().join(CURRENT_DIR), "old");
        index_at(&d.path().join(REBUILD_DIR), "half");
        let note = recover(d.path()).unwrap().unwrap();
        assert!(note.contains("unfinished"), "{note}");
        assert_eq!(std::fs::read_to_string(d.path().join("tantivy/meta.json")).unwrap(), "old");
        assert!(!d.path().join(REBUILD_DIR).exists());
        assert_eq!(recover(d.path()).unwrap(), None, "nothing left over");
    }
}

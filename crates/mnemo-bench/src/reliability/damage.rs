//! Damage trials: break one file of a data directory, then use it.
use std::path::Path;

use super::world::{copy_dir, files_under, missing, seed_turn, World, T0, T1};
use super::{Rng, Row};
use crate::error::{BenchError, Result};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Damage {
    RemoveIndexFile,
    GarbleIndexFile,
    CutIndexFile,
    GarbleIndexMeta,
    EmptyStore,
    CutStore,
    RestoreOlderBackup,
    RemoveStore,
    /// A byte of a SQLite index's b-tree page flipped (the id an entry of `memories_rev`
    /// points to): `quick_check` passes, `integrity_check` does not (issue 42).
    FlipStoreIndex,
    /// Three bytes of the index's vector log flipped (XOR 0x40), as the issue found them: the
    /// log's block checksums catch it, and the index is rebuilt from the store, said on stderr.
    FlipVectorLog,
    /// The index directory replaced by a regular file (`rm -rf index; echo x > index`): moved
    /// aside, said on stderr, and the index rebuilt from the store (issue 42).
    IndexPathIsFile,
}

const KINDS: [Damage; 11] = [
    Damage::RemoveIndexFile,
    Damage::GarbleIndexFile,
    Damage::CutIndexFile,
    Damage::GarbleIndexMeta,
    Damage::EmptyStore,
    Damage::CutStore,
    Damage::RestoreOlderBackup,
    Damage::RemoveStore,
    Damage::FlipStoreIndex,
    Damage::FlipVectorLog,
    Damage::IndexPathIsFile,
];

impl Damage {
    fn name(self) -> &'static str {
        match self {
            Damage::RemoveIndexFile => "index-file-removed",
            Damage::GarbleIndexFile => "index-file-garbled",
            Damage::CutIndexFile => "index-file-cut",
            Damage::GarbleIndexMeta => "index-meta-garbled",
            Damage::EmptyStore => "store-emptied",
            Damage::CutStore => "store-cut",
            Damage::RestoreOlderBackup => "store-older-backup",
            Damage::RemoveStore => "store-removed",
            Damage::FlipStoreIndex => "store-index-btree-flip",
            Damage::FlipVectorLog => "index-vector-log-flip",
            Damage::IndexPathIsFile => "index-path-is-a-file",
        }
    }

    /// Damage after which every memory must still be there and found: the index's, and a
    /// SQLite index's (rebuilt from its table).
    fn keeps_content(self) -> bool {
        self.is_index() || self == Damage::FlipStoreIndex
    }

    fn is_index(self) -> bool {
        matches!(
            self,
            Damage::RemoveIndexFile
                | Damage::GarbleIndexFile
                | Damage::CutIndexFile
                | Damage::GarbleIndexMeta
                | Damage::FlipVectorLog
                | Damage::IndexPathIsFile
        )
    }
}

#[derive(Default)]
struct Tally {
    runs: u64,
    passed: u64,
    unusable: u64,
    old_index_served: u64,
    refused: u64,
    unclear_refusals: u64,
    repaired_with_note: u64,
    failures: Vec<String>,
}

/// `n` trials, cycling through the kinds of damage; every command is given the arguments `cfg`.
pub async fn run(exe: &Path, work: &Path, n: usize, rng: &mut Rng, cfg: &[String]) -> Result<Vec<Row>> {
    // Template: seeds, a backup of the store, then a later memory the backup lacks.
    let template = World { exe: exe.to_path_buf(), dir: work.join("damage-template"), config: cfg.to_vec() };
    let (seed, seed_tokens) = seed_turn(10);
    template.run(T0, &["remember", &seed])?.expect_ok("seeding the damage template")?;
    let db = template.dir.join("mnemo.db");
    std::fs::copy(&db, work.join("damage-backup.db")).map_err(BenchError::io_at("backing up", &db))?;
    template
        .run(T0, &["remember", "[SEM] Latertok | colour | late"])?
        .expect_ok("writing the damage template's memory its backup lacks")?;
    let mut tallies: Vec<Tally> = KINDS.iter().map(|_| Tally::default()).collect();
    for trial in 0..n {
        let k = trial % KINDS.len();
        let kind = KINDS[k];
        let w = World { exe: exe.to_path_buf(), dir: work.join(format!("damage-{trial}")), config: cfg.to_vec() };
        copy_dir(&template.dir, &w.dir)?;
        let what = apply(&w, kind, rng, &work.join("damage-backup.db"))?;
        let t = &mut tallies[k];
        t.runs += 1;
        let problems = check(&w, kind, &seed_tokens, trial, t).await?;
        if problems.is_empty() {
            t.passed += 1;
            let _ = std::fs::remove_dir_all(&w.dir);
        } else if t.failures.len() < 5 {
            t.failures.push(format!("trial {trial} ({what}): {}", problems.join("; ")));
        }
    }
    Ok(KINDS
        .iter()
        .zip(tallies)
        .map(|(kind, t)| {
            let counts = super::counts([
                ("directories_unusable", t.unusable),
                ("old_index_served", t.old_index_served),
                ("refused_clearly", t.refused),
                ("unclear_refusals", t.unclear_refusals),
                ("repaired_with_note", t.repaired_with_note),
            ]);
            Row {
                suite: "damage",
                case: kind.name().to_string(),
                runs: t.runs,
                passed: t.passed,
                counts,
                failures: t.failures,
            }
        })
        .collect())
}

/// Break the directory; returns what was done.
fn apply(w: &World, kind: Damage, rng: &mut Rng, backup: &Path) -> Result<String> {
    let db = w.dir.join("mnemo.db");
    let index_files: Vec<_> = files_under(&w.dir.join("index"))
        .into_iter()
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            !name.starts_with('.') && name != "meta.json"
        })
        .collect();
    let pick = |rng: &mut Rng| index_files.get(rng.below_by_remainder(index_files.len())).cloned();
    Ok(match kind {
        Damage::RemoveIndexFile => {
            let Some(f) = pick(rng) else { return Ok("no index file".into()) };
            std::fs::remove_file(&f).map_err(BenchError::io_at("removing", &f))?;
            format!("removed {}", f.display())
        }
        Damage::GarbleIndexFile => {
            let Some(f) = pick(rng) else { return Ok("no index file".into()) };
            let mut bytes = read(&f)?;
            let at = rng.below_by_remainder(bytes.len().max(1));
            let n = 1 + rng.below_by_remainder(16);
            for b in bytes.iter_mut().skip(at).take(n) {
                *b ^= (rng.next_u64() as u8) | 1;
            }
            write(&f, &bytes)?;
            format!("garbled {n} bytes at {at} of {}", f.display())
        }
        Damage::CutIndexFile => {
            let Some(f) = pick(rng) else { return Ok("no index file".into()) };
            let len = std::fs::metadata(&f).map_err(BenchError::io_at("reading the size of", &f))?.len();
            let to = rng.below_by_remainder(len as usize) as u64;
            cut(&f, to)?;
            format!("cut {} from {len} to {to} bytes", f.display())
        }
        Damage::GarbleIndexMeta => {
            let f = w.dir.join("index").join("tantivy").join("meta.json");
            let mut bytes = read(&f)?;
            let at = rng.below_by_remainder(bytes.len().max(1));
            if let Some(b) = bytes.get_mut(at) {
                *b = b'#';
            }
            write(&f, &bytes)?;
            format!("garbled meta.json at {at}")
        }
        Damage::EmptyStore => {
            write(&db, b"")?;
            "emptied mnemo.db".into()
        }
        Damage::CutStore => {
            let len = std::fs::metadata(&db).map_err(BenchError::io_at("reading the size of", &db))?.len();
            let to = 1 + rng.below_by_remainder(len as usize - 1) as u64;
            cut(&db, to)?;
            format!("cut mnemo.db from {len} to {to} bytes")
        }
        Damage::RestoreOlderBackup => {
            for s in ["-wal", "-shm"] {
                let _ = std::fs::remove_file(w.dir.join(format!("mnemo.db{s}")));
            }
            std::fs::copy(backup, &db).map_err(BenchError::io_at("restoring", backup))?;
            "restored an older backup of mnemo.db".into()
        }
        Damage::RemoveStore => {
            for s in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(w.dir.join(format!("mnemo.db{s}")));
            }
            "removed mnemo.db".into()
        }
        Damage::FlipStoreIndex => {
            let (page, at) = index_leaf(&db, "memories_rev")?;
            // One of the last cell's 8 id bytes (the page's last bytes), one bit of it.
            let from_end = 1 + rng.below_by_remainder(8);
            let bit = 1u8 << rng.below_by_remainder(8);
            let mut bytes = read(&db)?;
            bytes[at - from_end] ^= bit;
            write(&db, &bytes)?;
            format!("flipped bit {bit:#04x} of byte {} (page {page} of memories_rev) of mnemo.db", at - from_end)
        }
        Damage::FlipVectorLog => {
            let logs: Vec<_> = files_under(&w.dir.join("index"))
                .into_iter()
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("vectors-")))
                .collect();
            let Some(f) = logs.into_iter().max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)) else {
                return Ok("no vector log".into());
            };
            let mut bytes = read(&f)?;
            let len = bytes.len();
            if len == 0 {
                return Ok(format!("{} is empty", f.display()));
            }
            let at = [(len / 2 + 100) % len, (len / 3 + 57) % len, (len / 4 + 11) % len];
            for i in at {
                bytes[i] ^= 0x40;
            }
            write(&f, &bytes)?;
            format!("flipped bytes {at:?} (XOR 0x40) of {}", f.display())
        }
        Damage::IndexPathIsFile => {
            let index = w.dir.join("index");
            std::fs::remove_dir_all(&index).map_err(BenchError::io_at("removing", &index))?;
            write(&index, b"x\n")?;
            "replaced the index directory by a regular file".into()
        }
    })
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(BenchError::io_at("reading", path))
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(BenchError::io_at("writing", path))
}

/// Truncate `path` to `to` bytes.
fn cut(path: &Path, to: u64) -> Result<()> {
    let file = std::fs::OpenOptions::new().write(true).open(path).map_err(BenchError::io_at("opening", path))?;
    file.set_len(to).map_err(BenchError::io_at("cutting", path))
}

/// The first leaf page of the b-tree `name` in the (cleanly closed) store at `db`: its number
/// and the file offset just past its end.
fn index_leaf(db: &Path, name: &str) -> Result<(usize, usize)> {
    let sqlite = |source| BenchError::Sqlite { action: "reading the schema of", path: db.to_path_buf(), source };
    let raw = rusqlite::Connection::open(db).map_err(sqlite)?;
    let root: i64 =
        raw.query_row("SELECT rootpage FROM sqlite_schema WHERE name = ?1", [name], |r| r.get(0)).map_err(sqlite)?;
    let page_size: i64 = raw.query_row("PRAGMA page_size", [], |r| r.get(0)).map_err(sqlite)?;
    drop(raw);
    let (page_size, bytes) = (page_size as usize, read(db)?);
    let mut page = root as usize;
    loop {
        let at = (page - 1) * page_size;
        if page < 1 || at + page_size > bytes.len() {
            return Err(BenchError::Check(format!("page {page} of {name} is outside the file")));
        }
        match bytes[at] {
            0x0a => return Ok((page, at + page_size)),
            // Interior index page: its right-most child.
            0x02 => page = u32::from_be_bytes([bytes[at + 8], bytes[at + 9], bytes[at + 10], bytes[at + 11]]) as usize,
            other => {
                return Err(BenchError::Check(format!(
                    "page {page} of {name} is of type {other:#x}, not an index page"
                )))
            }
        }
    }
}

/// SQLite's `integrity_check` of the store, from a plain connection ("ok" when sound).
fn integrity(db: &Path) -> Result<String> {
    let sqlite = |source| BenchError::Sqlite { action: "checking the integrity of", path: db.to_path_buf(), source };
    let raw = rusqlite::Connection::open(db).map_err(sqlite)?;
    let mut stmt = raw.prepare("PRAGMA integrity_check").map_err(sqlite)?;
    let lines: Vec<String> =
        stmt.query_map([], |r| r.get::<_, String>(0)).map_err(sqlite)?.collect::<Result<_, _>>().map_err(sqlite)?;
    Ok(lines.join("; "))
}

async fn check(w: &World, kind: Damage, seeds: &[String], trial: usize, t: &mut Tally) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let first = w.run(T1, &["recall", "Seedtok0 Latertok", "--mode", "lexical", "--raw", "--json", "--full"])?;
    if first.stderr.contains("panicked") {
        problems.push(format!("panic: {}", first.stderr.lines().next().unwrap_or("")));
    }
    if kind == Damage::FlipStoreIndex && first.ok {
        // The first command repaired the store (REINDEX) before anything was written, and said so.
        if first.stderr.contains("REINDEX") && first.stderr.contains("memories_rev") {
            t.repaired_with_note += 1;
        } else {
            problems.push(format!("no repair note on stderr: {}", first.stderr.trim()));
        }
        let check = integrity(&w.dir.join("mnemo.db"))?;
        if check != "ok" {
            t.unusable += 1;
            problems.push(format!("still damaged after the first command: {check}"));
            return Ok(problems);
        }
    }
    if kind == Damage::FlipVectorLog && first.ok {
        // The log's checksums caught it: the index was rebuilt from the store, and it was said.
        if first.stderr.contains("rebuilt from the store") {
            t.repaired_with_note += 1;
        } else {
            problems.push(format!("no rebuild note on stderr: {}", first.stderr.trim()));
        }
    }
    if kind == Damage::IndexPathIsFile && first.ok {
        // Moved aside and rebuilt, and said.
        if first.stderr.contains("moved aside") && w.dir.join("index").is_dir() {
            t.repaired_with_note += 1;
        } else {
            problems.push(format!("the index path was not moved aside with a note: {}", first.stderr.trim()));
        }
    }
    if !first.ok {
        if kind.keeps_content() {
            t.unusable += 1;
            problems.push(format!("unusable after index damage: {}", first.stderr.trim()));
        } else {
            // The store is the record: damage to it may be refused, but clearly.
            let e = first.stderr.to_lowercase();
            if ["truncated", "not a sqlite", "malformed", "not a mnemo"].iter().any(|w| e.contains(w))
                && e.contains("mnemo.db")
            {
                t.refused += 1;
            } else {
                t.unclear_refusals += 1;
                problems.push(format!("unclear refusal: {}", first.stderr.trim()));
            }
        }
        return Ok(problems);
    }
    // It opened: every memory the store holds is found, and nothing the store lacks.
    let after = format!("Damagetok{trial}");
    let r = w.run(T1, &["remember", &format!("[SEM] {after} | colour | new")])?;
    if !r.ok {
        t.unusable += 1;
        problems.push(format!("remember failed: {}", r.stderr.trim()));
        return Ok(problems);
    }
    let active = match w.store_state().await {
        Ok((_, active)) => active,
        Err(e) => {
            t.unusable += 1;
            problems.push(format!("store does not open: {e}"));
            return Ok(problems);
        }
    };
    let mut expected: Vec<String> =
        seeds.iter().filter(|s| active.iter().any(|c| c.starts_with(&format!("{s} ")))).cloned().collect();
    expected.push(after.clone());
    if kind.keeps_content() {
        expected.push("Latertok".into());
        if expected.len() != seeds.len() + 2 {
            problems.push("index damage lost store content".into());
        }
    }
    let mut query = expected.join(" ");
    query.push_str(" Latertok");
    match w.recall(T1, &query)? {
        None => {
            t.unusable += 1;
            problems.push("recall failed".into());
        }
        Some(found) => {
            let miss = missing(&expected, &found);
            if !miss.is_empty() {
                t.old_index_served += 1;
                problems.push(format!("{} memories of the store not found (e.g. {})", miss.len(), miss[0]));
            }
            // A lexical hit holds a query word, else the index mapped an old document onto a
            // new memory of the same id.
            let words: Vec<String> = query.split(' ').map(str::to_lowercase).collect();
            if let Some(c) = found.iter().find(|c| !words.iter().any(|w| c.to_lowercase().contains(w.as_str()))) {
                t.old_index_served += 1;
                problems.push(format!("served {c:?}, which holds no query word"));
            }
            if !kind.is_index()
                && found.iter().any(|c| c.starts_with("Latertok "))
                && !active.iter().any(|c| c.starts_with("Latertok "))
            {
                t.old_index_served += 1;
                problems.push("served a memory the store no longer holds".into());
            }
        }
    }
    Ok(problems)
}

//! Damage trials: break one file of a data directory, then use it.
use anyhow::Result;
use std::path::Path;

use super::world::{copy_dir, files_under, missing, seed_turn, World, T0, T1};
use super::{config_args, Rng, Row};

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
}

const KINDS: [Damage; 8] = [
    Damage::RemoveIndexFile,
    Damage::GarbleIndexFile,
    Damage::CutIndexFile,
    Damage::GarbleIndexMeta,
    Damage::EmptyStore,
    Damage::CutStore,
    Damage::RestoreOlderBackup,
    Damage::RemoveStore,
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
        }
    }

    fn is_index(self) -> bool {
        matches!(
            self,
            Damage::RemoveIndexFile | Damage::GarbleIndexFile | Damage::CutIndexFile | Damage::GarbleIndexMeta
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
    failures: Vec<String>,
}

/// `n` trials, cycling through the kinds of damage.
pub async fn run(exe: &Path, work: &Path, n: usize, rng: &mut Rng, config: &[std::path::PathBuf]) -> Result<Vec<Row>> {
    let cfg = config_args(config);
    // Template: seeds, a backup of the store, then a later memory the backup lacks.
    let template = World { exe: exe.to_path_buf(), dir: work.join("damage-template"), config: cfg.clone() };
    let (seed, seed_tokens) = seed_turn(10);
    anyhow::ensure!(template.run(T0, &["remember", &seed])?.ok, "seeding the damage template failed");
    std::fs::copy(template.dir.join("mnemo.db"), work.join("damage-backup.db"))?;
    anyhow::ensure!(template.run(T0, &["remember", "[SEM] Latertok | colour | late"])?.ok, "seeding failed");
    let mut tallies: Vec<Tally> = KINDS.iter().map(|_| Tally::default()).collect();
    for trial in 0..n {
        let k = trial % KINDS.len();
        let kind = KINDS[k];
        let w = World { exe: exe.to_path_buf(), dir: work.join(format!("damage-{trial}")), config: cfg.clone() };
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
            let mut counts = serde_json::Map::new();
            for (k, v) in [
                ("directories_unusable", t.unusable),
                ("old_index_served", t.old_index_served),
                ("refused_clearly", t.refused),
                ("unclear_refusals", t.unclear_refusals),
            ] {
                counts.insert(k.to_string(), v.into());
            }
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
    let pick = |rng: &mut Rng| index_files.get(rng.below(index_files.len())).cloned();
    Ok(match kind {
        Damage::RemoveIndexFile => {
            let Some(f) = pick(rng) else { return Ok("no index file".into()) };
            std::fs::remove_file(&f)?;
            format!("removed {}", f.display())
        }
        Damage::GarbleIndexFile => {
            let Some(f) = pick(rng) else { return Ok("no index file".into()) };
            let mut bytes = std::fs::read(&f)?;
            let at = rng.below(bytes.len().max(1));
            let n = 1 + rng.below(16);
            for b in bytes.iter_mut().skip(at).take(n) {
                *b ^= (rng.next_u64() as u8) | 1;
            }
            std::fs::write(&f, &bytes)?;
            format!("garbled {n} bytes at {at} of {}", f.display())
        }
        Damage::CutIndexFile => {
            let Some(f) = pick(rng) else { return Ok("no index file".into()) };
            let len = std::fs::metadata(&f)?.len();
            let to = rng.below(len as usize) as u64;
            std::fs::OpenOptions::new().write(true).open(&f)?.set_len(to)?;
            format!("cut {} from {len} to {to} bytes", f.display())
        }
        Damage::GarbleIndexMeta => {
            let f = w.dir.join("index").join("tantivy").join("meta.json");
            let mut bytes = std::fs::read(&f)?;
            let at = rng.below(bytes.len().max(1));
            if let Some(b) = bytes.get_mut(at) {
                *b = b'#';
            }
            std::fs::write(&f, &bytes)?;
            format!("garbled meta.json at {at}")
        }
        Damage::EmptyStore => {
            std::fs::write(&db, b"")?;
            "emptied mnemo.db".into()
        }
        Damage::CutStore => {
            let len = std::fs::metadata(&db)?.len();
            let to = 1 + rng.below(len as usize - 1) as u64;
            std::fs::OpenOptions::new().write(true).open(&db)?.set_len(to)?;
            format!("cut mnemo.db from {len} to {to} bytes")
        }
        Damage::RestoreOlderBackup => {
            for s in ["-wal", "-shm"] {
                let _ = std::fs::remove_file(w.dir.join(format!("mnemo.db{s}")));
            }
            std::fs::copy(backup, &db)?;
            "restored an older backup of mnemo.db".into()
        }
        Damage::RemoveStore => {
            for s in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(w.dir.join(format!("mnemo.db{s}")));
            }
            "removed mnemo.db".into()
        }
    })
}

async fn check(w: &World, kind: Damage, seeds: &[String], trial: usize, t: &mut Tally) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let first = w.run(T1, &["recall", "Seedtok0 Latertok", "--mode", "lexical", "--raw", "--json", "--full"])?;
    if first.stderr.contains("panicked") {
        problems.push(format!("panic: {}", first.stderr.lines().next().unwrap_or("")));
    }
    if !first.ok {
        if kind.is_index() {
            t.unusable += 1;
            problems.push(format!("unusable after index damage: {}", first.stderr.trim()));
        } else {
            // The store is the record: damage to it may be refused, but clearly.
            let e = first.stderr.to_lowercase();
            if ["truncated", "not a sqlite", "malformed", "not a mnemo"].iter().any(|w| e.contains(w)) {
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
    if kind.is_index() {
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

//! The fuzz driver (stable Rust, in process): seeds mutated by byte flips, insertions,
//! deletions, splices and dictionary tokens, fed to each parser of untrusted text; a panic is
//! caught and counted (with the first input that caused it), never fatal.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use mnemo_agent::config::{Config, DEFAULT_TOML};

use super::{Rng, Row};

/// Tokens that matter to the grammars (tags, separators, numbers at the edges).
const DICTIONARY: &[&str] = &[
    "[SEM]",
    "[PROC]",
    "[EPI]",
    "[FORGET]",
    "[PIN]",
    "|",
    " | ",
    "\n",
    "\r\n",
    "imp=",
    "importance=",
    "inf",
    "-inf",
    "NaN",
    "1e309",
    "-1",
    "0",
    "1",
    "99999999999999999999",
    "pinned",
    "\"",
    "'",
    "=",
    "[",
    "]",
    "{",
    "}",
    "#",
    "\\",
    "\u{0}",
    "é",
    "𝔘",
    "\u{202e}",
    "true",
    "false",
    "[[",
    "]]",
    "kind",
    "at",
    "text",
    "2026-07-01T09:00:00Z",
    "9999-12-31T23:59:59Z",
    "budget",
    "threshold",
    "weight",
    "[store]",
    "[index]",
    "[recall]",
];

type Target = (&'static str, Vec<Vec<u8>>, Box<dyn Fn(&str)>);

fn grammar_seeds() -> Vec<Vec<u8>> {
    [
        "[SEM] Northwind Labs | owner | Ben",
        "[SEM] Widget-9 | lead time | 12 days imp=0.9\n[EPI] Lunch at the harbour.\n[FORGET] Widget-9 | lead time",
        "[PROC] To reorder: open the ERP, check stock, raise a PO. imp=inf",
        "[FORGET] the lunch\n[PIN] [SEM] Ana | role | buyer",
        "no tags at all, just text",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

fn scenario_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    if let Ok(rd) = std::fs::read_dir("eval/scenarios") {
        let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths.into_iter().filter(|p| p.extension().is_some_and(|e| e == "toml")).take(8) {
            if let Ok(b) = std::fs::read(&p) {
                seeds.push(b);
            }
        }
    }
    if seeds.is_empty() {
        seeds
            .push(b"name = \"x\"\n[[steps]]\nat = \"2026-07-01T09:00:00Z\"\nremember = \"[SEM] A | b | c\"\n".to_vec());
    }
    seeds
}

fn targets() -> Vec<Target> {
    let base = Config::embedded_default().ok();
    vec![
        (
            "tagged-line-grammar",
            grammar_seeds(),
            Box::new(|s: &str| {
                let _ = mnemo_llm::fake::grammar::parse(s);
            }),
        ),
        (
            "config",
            vec![DEFAULT_TOML.as_bytes().to_vec(), b"[recall]\nbudget_tokens = 5\n".to_vec()],
            Box::new(move |s: &str| {
                if let (Some(base), Ok(table)) = (&base, s.parse::<toml::Table>()) {
                    let _ = base.with_overrides(&table, "fuzz");
                }
            }),
        ),
        (
            "scenario",
            scenario_seeds(),
            Box::new(|s: &str| {
                let _ = mnemo_eval::loader::parse_scenario(s, Path::new("fuzz.toml"));
            }),
        ),
    ]
}

fn mutate(rng: &mut Rng, seed: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + rng.below_by_remainder(6) {
        let at = rng.below_by_remainder(b.len() + 1);
        match rng.below_by_remainder(6) {
            0 if !b.is_empty() => {
                let i = rng.below_by_remainder(b.len());
                b[i] ^= 1 << rng.below_by_remainder(8);
            }
            1 => b.insert(at, rng.next_u64() as u8),
            2 if !b.is_empty() => {
                let n = rng.below_by_remainder(8).min(b.len() - at.min(b.len()));
                b.drain(at.min(b.len())..at.min(b.len()) + n);
            }
            3 => {
                let t = DICTIONARY[rng.below_by_remainder(DICTIONARY.len())].as_bytes();
                b.splice(at..at, t.iter().copied());
            }
            4 => {
                // Splice a slice of another seed.
                let other = &seeds[rng.below_by_remainder(seeds.len())];
                let from = rng.below_by_remainder(other.len() + 1);
                let n = rng.below_by_remainder(64).min(other.len() - from);
                b.splice(at..at, other[from..from + n].iter().copied());
            }
            _ => {
                // Repeat a chunk (long lines, many lines).
                let from = rng.below_by_remainder(b.len() + 1);
                let n = rng.below_by_remainder(32).min(b.len() - from);
                let chunk: Vec<u8> = b[from..from + n].to_vec();
                for _ in 0..rng.below_by_remainder(8) {
                    b.splice(at..at, chunk.iter().copied());
                }
            }
        }
    }
    b.truncate(64 * 1024);
    b
}

/// `n` executions in all, shared by the targets (grammar 80%, config 10%, scenario 10%).
pub fn run(n: usize, rng: &mut Rng) -> Vec<Row> {
    let targets = targets();
    let mut execs = vec![0u64; targets.len()];
    let mut panics = vec![0u64; targets.len()];
    let mut first: Vec<Vec<String>> = vec![Vec::new(); targets.len()];
    // Panics are counted here, not printed: the default hook would flood stderr.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for i in 0..n {
        // The grammar reads every turn: it gets 8 of every 10 executions; config and scenario
        // files (slower to parse) one each.
        let k = match i % 10 {
            0 => 1,
            1 => 2,
            _ => 0,
        };
        let (_, seeds, f) = &targets[k];
        let pick = rng.below_by_remainder(seeds.len());
        let input = mutate(rng, &seeds[pick], seeds);
        let text = String::from_utf8_lossy(&input);
        execs[k] += 1;
        if catch_unwind(AssertUnwindSafe(|| f(&text))).is_err() {
            panics[k] += 1;
            if first[k].len() < 3 {
                first[k].push(format!("panic on input {:?}", text.chars().take(200).collect::<String>()));
            }
        }
    }
    std::panic::set_hook(hook);
    targets
        .iter()
        .enumerate()
        .map(|(k, (name, _, _))| {
            let counts = super::counts([("executions", execs[k]), ("panics", panics[k])]);
            Row {
                suite: "fuzz",
                case: name.to_string(),
                runs: execs[k],
                passed: execs[k] - panics[k],
                counts,
                failures: first[k].clone(),
            }
        })
        .collect()
}

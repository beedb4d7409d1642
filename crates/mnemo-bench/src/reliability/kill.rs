//! Kill trials: SIGKILL a command at a random moment, then check the directory.
use std::path::Path;
use std::time::{Duration, Instant};

use super::world::{copy_dir, missing, seed_turn, Ran, World, T0, T1};
use super::{Rng, Row};
use crate::error::{BenchError, Result};

#[derive(Clone, Copy, Debug)]
enum Op {
    Remember,
    Turn,
    Decay,
    Reindex,
}

const OPS: [Op; 4] = [Op::Remember, Op::Turn, Op::Decay, Op::Reindex];
const TURN_LINES: usize = 200;

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Remember => "remember",
            Op::Turn => "turn-200-lines",
            Op::Decay => "decay",
            Op::Reindex => "reindex",
        }
    }

    /// The command, and the tokens of the memories it writes.
    fn command(self, trial: usize) -> (String, Vec<String>, Vec<String>) {
        match self {
            Op::Remember => {
                let t = format!("Killtok{trial}");
                (format!("[SEM] {t} | value | v{trial}"), vec![t], vec!["remember".into()])
            }
            Op::Turn => {
                let tokens: Vec<String> = (0..TURN_LINES).map(|l| format!("Turntok{trial}x{l}")).collect();
                let text = tokens.iter().map(|t| format!("[SEM] {t} | line | l")).collect::<Vec<_>>().join("\n");
                (text, tokens, vec!["remember".into()])
            }
            Op::Decay => (String::new(), vec![], vec!["decay".into()]),
            Op::Reindex => (String::new(), vec![], vec!["reindex".into()]),
        }
    }
}

#[derive(Default)]
struct Tally {
    runs: u64,
    passed: u64,
    killed: u64,
    acknowledged: u64,
    lost: u64,
    torn_turns: u64,
    unopenable: u64,
    integrity_failures: u64,
    index_misses: u64,
    failing_after: u64,
    failures: Vec<String>,
}

/// `n` trials, cycling through the operations; every command is given the arguments `cfg`.
pub async fn run(exe: &Path, work: &Path, n: usize, rng: &mut Rng, cfg: &[String]) -> Result<Vec<Row>> {
    // The template every trial starts from: 10 semantic + 10 episodic memories.
    let template = World { exe: exe.to_path_buf(), dir: work.join("kill-template"), config: cfg.to_vec() };
    let (seed, seed_tokens) = seed_turn(10);
    template.run(T0, &["remember", &seed])?.expect_ok("seeding the kill template")?;
    // How long each operation takes when not killed: kills land within that window.
    let mut window = Vec::new();
    for op in OPS {
        let w = World {
            exe: exe.to_path_buf(),
            dir: work.join(format!("kill-calibrate-{}", op.name())),
            config: cfg.to_vec(),
        };
        copy_dir(&template.dir, &w.dir)?;
        let (text, _, args) = op.command(usize::MAX);
        let started = Instant::now();
        run_op(&w, op, &text, &args)?.expect_ok(&format!("calibration run of {}", op.name()))?;
        window.push(started.elapsed());
    }
    let mut tallies: Vec<Tally> = OPS.iter().map(|_| Tally::default()).collect();
    for trial in 0..n {
        let k = trial % OPS.len();
        let op = OPS[k];
        let w = World { exe: exe.to_path_buf(), dir: work.join(format!("kill-{trial}")), config: cfg.to_vec() };
        copy_dir(&template.dir, &w.dir)?;
        let (text, tokens, args) = op.command(trial);
        let at = if matches!(op, Op::Decay) { T1 } else { T0 };
        let mut argv: Vec<&str> = args.iter().map(String::as_str).collect();
        if !text.is_empty() {
            argv.push(&text);
        }
        let mut child = w.spawn(at, &argv)?;
        let limit = window[k].as_millis().max(1) as usize * 12 / 10;
        std::thread::sleep(Duration::from_millis(rng.below_by_remainder(limit) as u64));
        let acknowledged = match child.try_wait().map_err(BenchError::io_at("waiting for", exe))? {
            Some(status) => status.success(),
            None => {
                child.kill().map_err(BenchError::io_at("killing", exe))?;
                child.wait().map_err(BenchError::io_at("waiting for", exe))?;
                false
            }
        };
        let t = &mut tallies[k];
        t.runs += 1;
        t.killed += u64::from(!acknowledged);
        let problems = check(&w, op, trial, &seed_tokens, &tokens, acknowledged, t).await?;
        if problems.is_empty() {
            t.passed += 1;
        } else if t.failures.len() < 5 {
            t.failures.push(format!("trial {trial} ({}): {}", op.name(), problems.join("; ")));
        }
        // Keep the disk small: a passed trial's directory is not needed.
        if problems.is_empty() {
            let _ = std::fs::remove_dir_all(&w.dir);
        }
    }
    Ok(OPS
        .iter()
        .zip(tallies)
        .map(|(op, t)| {
            let counts = super::counts([
                ("killed_mid_command", t.killed),
                ("acknowledged_writes", t.acknowledged),
                ("acknowledged_writes_lost", t.lost),
                ("torn_turns", t.torn_turns),
                ("stores_unopenable", t.unopenable),
                ("integrity_check_failures", t.integrity_failures),
                ("acknowledged_missing_from_index", t.index_misses),
                ("commands_failing_after", t.failing_after),
            ]);
            Row {
                suite: "kill",
                case: op.name().to_string(),
                runs: t.runs,
                passed: t.passed,
                counts,
                failures: t.failures,
            }
        })
        .collect())
}

fn run_op(w: &World, op: Op, text: &str, args: &[String]) -> Result<Ran> {
    let at = if matches!(op, Op::Decay) { T1 } else { T0 };
    let mut argv: Vec<&str> = args.iter().map(String::as_str).collect();
    if !text.is_empty() {
        argv.push(text);
    }
    w.run(at, &argv)
}

/// The checks after a kill; returns what failed.
async fn check(
    w: &World,
    op: Op,
    trial: usize,
    seed_tokens: &[String],
    tokens: &[String],
    acknowledged: bool,
    t: &mut Tally,
) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    // 1. The store opens, is sound, and holds every acknowledged write; a turn is all or nothing.
    let mut expected: Vec<String> = seed_tokens.to_vec();
    if acknowledged {
        expected.extend(tokens.iter().cloned());
    }
    t.acknowledged += expected.len() as u64;
    match w.store_state().await {
        Err(e) => {
            t.unopenable += 1;
            problems.push(format!("store does not open: {e}"));
        }
        Ok((integrity, active)) => {
            if !integrity.is_empty() {
                t.integrity_failures += 1;
                problems.push(format!("integrity_check: {}", integrity.join(", ")));
            }
            let lost = missing(&expected, &active);
            if !lost.is_empty() {
                t.lost += lost.len() as u64;
                problems.push(format!("{} acknowledged writes lost, e.g. {}", lost.len(), lost[0]));
            }
            let present = tokens.len() - missing(tokens, &active).len();
            if matches!(op, Op::Turn) && present != 0 && present != tokens.len() {
                t.torn_turns += 1;
                problems.push(format!("torn turn: {present} of {} lines present", tokens.len()));
            }
        }
    }
    // 2. The next commands succeed, and the index finds every acknowledged write.
    let mut sample: Vec<String> = seed_tokens.to_vec();
    if acknowledged {
        sample.extend(tokens.iter().take(5).cloned());
    }
    match w.recall(T1, &sample.join(" "))? {
        None => {
            t.failing_after += 1;
            problems.push("recall after the kill failed".into());
        }
        Some(found) => {
            let miss = missing(&sample, &found);
            if !miss.is_empty() {
                t.index_misses += miss.len() as u64;
                problems.push(format!("{} acknowledged writes not found by the index, e.g. {}", miss.len(), miss[0]));
            }
        }
    }
    let after = format!("Aftertok{trial}");
    for args in [
        vec!["remember".to_string(), format!("[SEM] {after} | value | x")],
        vec!["decay".to_string()],
        vec!["reindex".to_string()],
    ] {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = w.run(T1, &argv)?;
        if !r.ok {
            t.failing_after += 1;
            problems.push(format!("`{}` after the kill failed: {}", args[0], r.stderr.trim()));
        }
    }
    match w.recall(T1, &after)? {
        Some(found) if missing(std::slice::from_ref(&after), &found).is_empty() => {}
        Some(_) => problems.push("a write after the kill is not found".into()),
        None => {
            t.failing_after += 1;
            problems.push("recall after the kill failed".into());
        }
    }
    Ok(problems)
}

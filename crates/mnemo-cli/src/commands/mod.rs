//! Command dispatch.
use anyhow::{Context as _, Result};
use std::process::ExitCode;

use mnemo_agent::ReasonerBuild;
use mnemo_contract::registry;
use mnemo_contract::tenant_spelling;

use crate::cli::{BackupCommand, Cli, Command, ReextractArgs};
use crate::error_text::invalid;
use crate::{context, print};

mod backup;
mod bench;
mod demo;
mod escalations;
mod eval;
mod eval_assessor;
#[cfg(feature = "mcp")]
mod mcp;
mod memories;
#[cfg(feature = "postgres")]
mod migrate;
mod reliability;
mod remember;
#[cfg(feature = "server")]
mod serve;
#[cfg(feature = "server")]
mod serve_bench;
mod stats;
mod tenant_view;
mod verify;

/// The exit status of `recall --exit-code` on ESCALATE.
pub const ESCALATE_EXIT: u8 = 3;
pub mod models;

/// Run one command.
pub async fn run(cli: Cli) -> Result<ExitCode> {
    match &cli.command {
        Command::Demo(args) => demo::run(&cli, args).await,
        Command::Plugins(j) => plugins(&cli, j.json),
        Command::Eval(args) => eval::run(&cli, args).await,
        Command::EvalAssessor(args) => eval_assessor::run(&cli, args).await,
        #[cfg(feature = "server")]
        Command::Bench(crate::cli::BenchCommand::Serve(a)) => serve_bench::run(&cli, a).await,
        #[cfg(not(feature = "server"))]
        Command::Bench(crate::cli::BenchCommand::Serve(_)) => Err(crate::features::missing("bench serve", "server")),
        Command::Bench(b) => bench::run(&cli, b).await,
        Command::Reliability(args) => reliability::run(&cli, args).await,
        #[cfg(feature = "postgres")]
        Command::Migrate(args) => migrate::run(&cli, args).await,
        #[cfg(not(feature = "postgres"))]
        Command::Migrate(_) => Err(crate::features::missing("migrate", "postgres")),
        Command::Models(m) => models::run(m),
        Command::Verify(a) => verify::run(&cli, a).await,
        #[cfg(feature = "server")]
        Command::Serve(a) => serve::run(&cli, a).await,
        #[cfg(not(feature = "server"))]
        Command::Serve(_) => Err(crate::features::missing("serve", "server")),
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => mcp::run(&cli, args).await,
        #[cfg(not(feature = "mcp"))]
        Command::Mcp(_) => Err(crate::features::missing("mcp", "mcp")),
        Command::Completions(a) => {
            clap_complete::generate(a.shell, &mut crate::help::command(), "mnemo", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        _ => engine_command(&cli).await,
    }
}

/// Print `v` as pretty JSON, ids spelt as a tenant reads them (`m42`, `t17`). A `json!` value
/// is serialised where it is built: build it inside [`mnemo_contract::tenant_spelling`].
fn emit_json<T: serde::Serialize>(v: &T) -> Result<()> {
    out!("{}", mnemo_contract::tenant_spelling(|| serde_json::to_string_pretty(v))?);
    Ok(())
}

/// JSON holding memories: embedding vectors left out unless `with_vectors`.
fn emit_memory_json<T: serde::Serialize>(v: &T, with_vectors: bool) -> Result<()> {
    emit_json(&mnemo_agent::json_view::tenant_json(v, with_vectors)?)
}

/// Every kind this binary can build: those linked in, then those of the `[[plugins]]`
/// libraries named in config, each with its origin.
fn plugins(cli: &Cli, json: bool) -> Result<ExitCode> {
    let config = context::config_for(cli, reasoner_build(&cli.command))?;
    let loaded = mnemo_agent::plugins::load(&config)?;
    let mut rows = Vec::new();
    for r in registry::all() {
        rows.push((r.role.as_str().to_string(), r.kind.to_string(), "built-in".to_string(), r.about.to_string()));
    }
    for lib in loaded.libraries() {
        for k in &lib.manifest().kinds {
            rows.push((k.role.as_str().to_string(), k.kind.clone(), lib.label(), k.about.clone()));
        }
    }
    if json {
        let v: Vec<_> = rows
            .iter()
            .map(|(role, kind, origin, about)| serde_json::json!({"role": role, "kind": kind, "origin": origin, "about": about}))
            .collect();
        emit_json(&v)?;
    } else {
        for (role, kind, origin, about) in &rows {
            out!("{role:<9} {kind:<12} {about}  [{origin}]");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// When a command builds the reasoner. Those that call the model build it with the runtime, so
/// a model client that cannot be built (live without its key) fails them before anything is
/// written; those that never call it build it only if called, so they work without the key.
/// Every command is listed: a new one must say which it is.
pub fn reasoner_build(command: &Command) -> ReasonerBuild {
    use ReasonerBuild::{AtBuild, OnFirstCall};
    match command {
        // Listing or discarding unextracted turns only edits the ledger.
        Command::Reextract(a) if a.list || a.discard.is_some() => OnFirstCall,
        // Extraction, then reconcile of what was extracted (an answer is a turn too).
        Command::Remember(_) | Command::Reextract(_) | Command::Answer(_) => AtBuild,
        // The agent turn remembers its text and plans with the model.
        Command::Turn(_) => AtBuild,
        // Free text asks the model which memories it designates; `entity | attribute` does not.
        // A command that does not parse fails on its own words, as before.
        Command::Forget(a) => match mnemo_contract::ForgetCommand::parse_arg(&a.command) {
            Ok(mnemo_contract::ForgetCommand::Claim { .. }) => OnFirstCall,
            _ => AtBuild,
        },
        // Recall grounds and grades by rules and grounders, never by the chat model; the
        // embedder (built at once either way) is what recall needs.
        Command::Recall(_)
        | Command::Why(_)
        | Command::History(_)
        | Command::Erase(_)
        | Command::Escalations(_)
        | Command::Dismiss(_)
        | Command::Decay(_)
        | Command::Reindex(_)
        | Command::List(_)
        | Command::Export(_)
        | Command::Restore(_)
        | Command::Backup(_)
        | Command::Plugins(_)
        | Command::Migrate(_)
        | Command::Models(_)
        | Command::Verify(_)
        | Command::Stats(_)
        | Command::Completions(_) => OnFirstCall,
        // They remember turns (demo, serve, mcp, the benchmarks), or run the configured model
        // on purpose (eval): the model is part of what they do.
        Command::Demo(_)
        | Command::Serve(_)
        | Command::Mcp(_)
        | Command::Eval(_)
        | Command::EvalAssessor(_)
        | Command::Bench(_)
        | Command::Reliability(_) => AtBuild,
    }
}

/// Whether a command only reads the data directory: it then reads beside a running writer
/// (`mnemo serve`) instead of waiting for its lock.
pub fn access(command: &Command) -> mnemo_agent::Access {
    use mnemo_agent::Access::{Read, Write};
    match command {
        Command::Recall(_)
        | Command::Why(_)
        | Command::History(_)
        | Command::List(_)
        | Command::Export(_)
        | Command::Escalations(_)
        | Command::Stats(_) => Read,
        // A dry run writes nothing: it reads beside a writer.
        Command::Forget(a) if a.dry_run => Read,
        Command::Erase(a) if a.dry_run => Read,
        Command::Backup(BackupCommand::Create { .. }) => Read,
        _ => Write,
    }
}

async fn engine_command(cli: &Cli) -> Result<ExitCode> {
    let reasoner = reasoner_build(&cli.command);
    let mut config = context::config_for(cli, reasoner)?;
    if matches!(cli.command, Command::Backup(BackupCommand::Restore { .. })) {
        // A restore replaces every page of the store: a store its open check refuses (a
        // damaged table) is restored like any other (the backup itself is checked).
        if config.plugin("store")?.0 == "sqlite" {
            let o: toml::Table = toml::from_str("[store]\nquick_check = false")?;
            config = config.with_overrides(&o, "backup restore")?;
        }
    }
    let ns = context::namespace(cli)?;
    let clock = context::clock(cli, &config)?;
    let rt = context::runtime(&config, &cli.data_dir, clock, reasoner, access(&cli.command)).await?;
    let engine = rt.engine();
    match &cli.command {
        Command::Remember(a) => {
            let bytes = if a.text == "-" {
                let mut buf = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).context("reading the turn from stdin")?;
                buf
            } else {
                os_bytes(&a.text)
            };
            let r = remember::run(&rt, &ns, a, &bytes).await?;
            if a.out.json {
                tenant_view::emit(&r)?
            } else {
                print::remember(&r)
            }
        }
        Command::Recall(a) => {
            use mnemo_agent::{door::RecallInput, Detail, RecallAnswer};
            if cli.at.is_some() {
                // A stated time is exact: a recall before the namespace's last turn would see
                // memories before they existed (the doors allow the clock's skew instead).
                rt.check_recall_time(&ns, std::time::Duration::ZERO).await?;
            }
            let full = a.full || a.detail == Some(Detail::Full);
            let input = RecallInput {
                query: a.query.clone(),
                budget: a.budget.as_deref().map(parse_budget).transpose()?,
                mode: a.mode.as_deref().map(str::parse).transpose()?,
                about: a.about.as_deref().map(str::parse).transpose()?,
                raw: a.raw,
                // The table printed for a person is drawn from the full answer.
                detail: if full || !a.out.json { Detail::Full } else { Detail::Compact },
                as_of: a.as_of.as_deref().map(|t| crate::context::parse_time_arg("--as-of", t)).transpose()?,
                since: a.since.as_deref().map(|t| crate::context::parse_time_arg("--since", t)).transpose()?,
                until: a.until.as_deref().map(|t| crate::context::parse_time_arg("--until", t)).transpose()?,
                valid_at: a.valid_at.as_deref().map(|t| crate::context::parse_time_arg("--valid-at", t)).transpose()?,
            };
            let escalated = match rt.recall_input(&ns, &input).await? {
                RecallAnswer::Compact(v) => {
                    emit_json(&v)?;
                    v.decision.as_ref().is_some_and(|d| d.decision == "escalate")
                }
                RecallAnswer::Full(t) => {
                    if a.out.json {
                        emit_memory_json(&t, a.out.with_vectors)?
                    } else {
                        print::agent_turn(&t);
                        escalations::print_turn(&ns, t.escalation.as_ref());
                    }
                    t.verdict.decision == "escalate"
                }
                RecallAnswer::FullRaw(p) => {
                    if a.out.json {
                        emit_memory_json(&p, a.out.with_vectors)?
                    } else {
                        print::pack(&p)
                    }
                    false
                }
            };
            if a.exit_code && escalated {
                engine.flush_index().await?;
                return Ok(ExitCode::from(ESCALATE_EXIT));
            }
        }
        Command::Turn(a) => {
            use mnemo_agent::door::{operator_source, TurnInput};
            let (source, note) = operator_source(Some(&a.source), &rt.config().declared_sources());
            let input = TurnInput {
                source,
                text: a.text.clone(),
                about: a.about.as_deref().map(str::parse).transpose()?,
                budget: a.budget.as_deref().map(parse_budget).transpose()?,
            };
            let mut t = rt.turn_input(&ns, &input).await?;
            if let Some(r) = t.remembered.as_mut() {
                r.notes.extend(note);
            }
            if a.out.json && a.detail == Some(mnemo_agent::Detail::Full) {
                emit_memory_json(&t, a.out.with_vectors)?
            } else if a.out.json {
                emit_json(&rt.turn_view(&t))?
            } else {
                out!("{}", rt.render_turn(&rt.turn_view(&t)).trim_end());
            }
            if a.exit_code && t.verdict.decision == "escalate" {
                engine.flush_index().await?;
                return Ok(ExitCode::from(ESCALATE_EXIT));
            }
        }
        Command::Forget(a) => {
            use mnemo_agent::door::{ForgetAnswer, ForgetInput, OPERATOR};
            let input = ForgetInput {
                source: OPERATOR.to_string(),
                command: mnemo_contract::ForgetCommand::parse_arg(&a.command).map_err(invalid)?,
                dry_run: a.dry_run,
                include_pinned: a.include_pinned,
            };
            match rt.forget_input(&ns, &input).await? {
                ForgetAnswer::Preview(p) if a.out.json => tenant_view::emit(&p)?,
                ForgetAnswer::Preview(p) => out!("{}", p.render().trim_end()),
                ForgetAnswer::Forgotten(r) if a.out.json => tenant_view::emit(&r)?,
                ForgetAnswer::Forgotten(r) => print::remember(&r),
            }
        }
        Command::History(a) => {
            let key: mnemo_contract::ClaimKey = a.claim.parse()?;
            let h = rt.history_input(&ns, &key).await?;
            if a.out.json {
                tenant_view::emit(&h)?
            } else {
                out!("{}", h.text().trim_end());
            }
        }
        Command::Erase(a) => {
            use mnemo_agent::door::{EraseInput, EraseWhat, OPERATOR};
            let input = EraseInput {
                what: EraseWhat::parse_arg(&a.what, a.subject).map_err(invalid)?,
                reason: a.reason.clone(),
                dry_run: a.dry_run,
                by: OPERATOR.to_string(),
            };
            let r = rt.erase_input(&ns, &input).await?;
            if a.out.json {
                tenant_view::emit(&r)?
            } else {
                out!("{}", r.render().trim_end())
            }
        }
        Command::Why(a) => {
            let w = rt.why(&ns, a.id).await?;
            if a.out.json {
                emit_memory_json(&w, a.out.with_vectors)?
            } else {
                print::why(&w)
            }
        }
        Command::Decay(j) => {
            let r = engine.decay_sweep(&ns).await?;
            if j.json {
                tenant_view::emit(&r)?
            } else {
                out!("examined {} due memories; {} decayed", r.examined, r.decayed.len());
                for (id, s) in &r.decayed {
                    out!("  memory {id}: salience {s:.4} → tombstoned (decayed)");
                }
            }
        }
        Command::Reindex(j) => {
            let bar = indicatif::ProgressBar::new(0);
            let b = bar.clone();
            let r = engine
                .rebuild_index(&move |done, total| {
                    b.set_length(total);
                    b.set_position(done);
                })
                .await?;
            bar.finish_and_clear();
            if j.json {
                emit_json(&r)?
            } else {
                out!("index rebuilt from the store: {} memories indexed, at store revision {}", r.upserted, r.rev);
            }
        }
        Command::Reextract(a) if a.list => {
            let pending = rt.unextracted(&ns)?;
            if a.json {
                tenant_view::emit(&tenant_spelling(|| serde_json::json!({"unextracted": pending})))?
            } else {
                if pending.is_empty() {
                    out!("no unextracted turns in namespace {ns}");
                }
                for e in &pending {
                    out!("turn {} is unextracted: {}", e.turn, e.error);
                }
            }
        }
        Command::Reextract(ReextractArgs { discard: Some(id), json, .. }) => {
            let gone = rt.discard_unextracted(&ns, *id).await?;
            if *json {
                tenant_view::emit(&tenant_spelling(|| serde_json::json!({"discarded": gone})))?
            } else {
                out!(
                    "discarded turn {} of namespace {ns} from the unextracted turns: it stays recorded and is no \
                     longer retried (its last extraction failed: {})",
                    gone.turn,
                    gone.error
                );
            }
        }
        Command::Reextract(a) => {
            let (done, failed) = rt.reextract(&ns).await?;
            if a.json {
                tenant_view::emit(&tenant_spelling(|| serde_json::json!({"extracted": done, "failed": failed})))?
            } else {
                if done.is_empty() && failed.is_empty() {
                    out!("no unextracted turns in namespace {ns}");
                }
                for r in &done {
                    print::remember(r)
                }
                for f in &failed {
                    out!(
                        "turn {} is still unextracted: {} (`mnemo reextract --discard {}` stops retrying it)",
                        f.turn,
                        f.error,
                        f.turn
                    );
                }
            }
            if !failed.is_empty() {
                engine.flush_index().await?;
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::List(a) => memories::list(&rt, &ns, a).await?,
        Command::Escalations(a) => escalations::list(&rt, &ns, a).await?,
        Command::Answer(a) => escalations::answer(&rt, &ns, a).await?,
        Command::Dismiss(a) => escalations::dismiss(&rt, &ns, a).await?,
        Command::Export(a) => memories::export(&rt, &ns, a).await?,
        Command::Restore(a) => memories::restore(&rt, &ns, a).await?,
        Command::Backup(b) => backup::run(&rt, b).await?,
        Command::Stats(j) => stats::run(&rt, j.json).await?,
        Command::Demo(_)
        | Command::Serve(_)
        | Command::Plugins(_)
        | Command::Eval(_)
        | Command::EvalAssessor(_)
        | Command::Bench(_)
        | Command::Reliability(_)
        | Command::Migrate(_)
        | Command::Models(_)
        | Command::Verify(_)
        | Command::Mcp(_)
        | Command::Completions(_) => {}
    }
    // What the command did is in the store already; an index that cannot be saved (a full
    // disk) is rebuilt from the store by the next command, so this is a note, not a failure.
    if let Err(e) = engine.flush_index().await {
        eprintln!("mnemo: note: the index could not be saved ({e}); the next command rebuilds it from the store");
    }
    Ok(ExitCode::SUCCESS)
}

/// A budget: a whole number of tokens ≥ 0; numbers too large for the machine are clamped by
/// the engine like any budget above its maximum.
fn parse_budget(s: &str) -> Result<usize> {
    let t = s.trim();
    if t.starts_with('-') && t.len() > 1 && t[1..].chars().all(|c| c.is_ascii_digit()) {
        return Err(invalid(format!("--budget must be 0 or more tokens, got {t}")));
    }
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit()) {
        return Err(invalid(format!("--budget must be a whole number of tokens, got {t:?}")));
    }
    Ok(t.parse::<usize>().unwrap_or(usize::MAX))
}

#[cfg(unix)]
fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes().to_vec()
}

#[cfg(not(unix))]
fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    s.to_string_lossy().into_owned().into_bytes()
}

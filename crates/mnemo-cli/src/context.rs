//! Shared set-up for commands: config, clock, namespace, runtime.
use anyhow::{Context as _, Result};
use std::path::Path;
use std::sync::Arc;

use mnemo_agent::{Config, ReasonerBuild, Runtime};
use mnemo_contract::{Clock, Namespace, SimClock, SystemClock, Timestamp};

use crate::cli::Cli;
use crate::error_text::invalid;

/// The clock: simulated with `--at`, else the real one. `--at` further ahead of the real clock
/// than the configured skew (`[time] max_future_skew_secs`, default five minutes: the door's
/// rule for a stated time) needs `--allow-future`.
pub fn clock(cli: &Cli, config: &Config) -> Result<Arc<dyn Clock>> {
    Ok(match &cli.at {
        Some(t) => {
            let at = parse_at(t)?;
            let skew = mnemo_agent::door::future_skew(config);
            let ahead = mnemo_agent::door::too_far_ahead(
                "--at",
                at,
                SystemClock.now(),
                skew,
                "pass --allow-future if you mean it, or ",
            );
            if let (Some(m), false) = (ahead, cli.allow_future) {
                return Err(invalid(m));
            }
            Arc::new(SimClock::new(at))
        }
        None => Arc::new(SystemClock),
    })
}

/// `--at`: RFC 3339, or a date alone (`2026-05-01` is that day's midnight UTC).
pub fn parse_at(t: &str) -> Result<Timestamp> {
    parse_time_arg("--at", t)
}

/// A time given to option `flag`: RFC 3339, or a date alone (that day's midnight UTC).
pub fn parse_time_arg(flag: &str, t: &str) -> Result<Timestamp> {
    mnemo_agent::door::parse_time(t).map_err(|e| invalid(format!("{flag} {e}")))
}

/// The namespace.
pub fn namespace(cli: &Cli) -> Result<Namespace> {
    Namespace::new(&cli.namespace).context("--namespace")
}

/// Load the config (`--live` sets `[llm] client = "live"`), resolve the model seam and say on
/// stderr which client answers. A seam that cannot be honoured (live without its key, live
/// with MNEMO_OFFLINE=1) is an error here, before anything is written.
pub fn config(cli: &Cli) -> Result<Config> {
    config_for(cli, ReasonerBuild::AtBuild)
}

/// [`config`] for a command that calls the model when `reasoner` is `AtBuild`; with
/// `OnFirstCall` (a command that never calls it) a seam that cannot be honoured is said on
/// stderr and the command goes on: reading memories needs no model, nor its key.
pub fn config_for(cli: &Cli, reasoner: ReasonerBuild) -> Result<Config> {
    let mut config = Config::load(&cli.config)?;
    if cli.live {
        let o: toml::Table = toml::from_str("[llm]\nclient = \"live\"")?;
        config = config.with_overrides(&o, "--live")?;
    }
    match seam(&config) {
        Ok(seam) if !cli.quiet => eprintln!("mnemo: {}", seam.describe()),
        Ok(_) => {}
        Err(e) if reasoner == ReasonerBuild::OnFirstCall => {
            if !cli.quiet {
                eprintln!(
                    "mnemo: model client unavailable ({}); this command does not call the model",
                    crate::error_text::one_line(&e)
                );
            }
        }
        Err(e) => return Err(e),
    }
    Ok(config)
}

/// The model seam the config and the environment ask for.
pub fn seam(config: &Config) -> Result<mnemo_llm::seam::Seam> {
    let settings = mnemo_llm::seam::LlmSettings::from_table(&config.llm())?;
    Ok(mnemo_llm::seam::resolve_from_process(settings)?)
}

/// Build the configured embedder alone (for reports and benchmarks that need no store), as the
/// runtime builds it: from a `[[plugins]]` library when one provides the kind, else from the
/// kinds linked in.
pub async fn embedder(config: &Config) -> Result<Arc<dyn mnemo_contract::Embedder>> {
    use mnemo_contract::registry::{EmbedderContext, EmbedderFactory, Section};
    let (kind, settings, origin) = config.plugin("embedder")?;
    let data_dir = tempfile::tempdir()?;
    let kinds = mnemo_agent::plugins::load(config)?;
    let config_dir = config.section_dir("embedder");
    let llm = config.llm();
    let section = Section { settings: &settings, origin: &origin, data_dir: data_dir.path(), config_dir: &config_dir };
    Ok(kinds.build::<EmbedderFactory>(&kind, &EmbedderContext { section, llm: Some(&llm) }).await?)
}

/// Build the runtime over `data_dir`, with a progress bar if the index must catch up; its
/// reasoner is built when `reasoner` says (`OnFirstCall` for commands that never call the model).
pub async fn runtime(
    config: &Config,
    data_dir: &Path,
    clock: Arc<dyn Clock>,
    reasoner: ReasonerBuild,
    access: mnemo_agent::Access,
) -> Result<Runtime> {
    let bar = indicatif::ProgressBar::hidden();
    let bar2 = bar.clone();
    let progress = move |done: u64, total: u64| {
        if total > 1000 && bar2.is_hidden() {
            bar2.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            bar2.set_message("indexing memories");
        }
        bar2.set_length(total);
        bar2.set_position(done);
    };
    let rt = Runtime::build_for(config, data_dir, clock, Vec::new(), &progress, reasoner, access)
        .await
        .with_context(|| format!("opening Mnemo in {}", data_dir.display()))?;
    bar.finish_and_clear();
    let sync = rt.startup_sync();
    // A brand-new data directory has no index yet: nothing worth saying.
    let first_use = sync.upserted == 0
        && sync.removed == 0
        && sync.rebuilt_because.as_deref().is_some_and(|w| w.starts_with("no index"));
    if let Some(why) = sync.rebuilt_because.as_ref().filter(|_| !first_use) {
        // On stderr, so `--json` output stays one document; said every time it happens.
        eprintln!("mnemo: the index was rebuilt from the store ({} memories): {why}", rt.startup_sync().upserted);
    }
    Ok(rt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_takes_a_date_alone_as_midnight_utc() {
        let d = parse_at("2026-05-01").unwrap();
        assert_eq!(d, Timestamp::parse_rfc3339("2026-05-01T00:00:00Z").unwrap());
        assert_eq!(parse_at("2026-05-01T09:30:00Z").unwrap().millis() - d.millis(), 9 * 3_600_000 + 30 * 60_000);
    }

    #[test]
    fn bad_dates_say_what_is_expected() {
        for bad in ["2026-02-30", "2026-13-01", "01-05-2026", "yesterday", "2026-5-1", ""] {
            let e = parse_at(bad).unwrap_err().to_string();
            assert!(e.contains("YYYY-MM-DD") && e.contains(bad), "{bad}: {e}");
        }
        assert!(parse_at("2026-02-30").unwrap_err().to_string().contains("not a calendar date"));
    }
}

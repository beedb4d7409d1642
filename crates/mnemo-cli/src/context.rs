//! Shared set-up for commands: config, clock, namespace, runtime.
use anyhow::{Context as _, Result};
use std::path::Path;
use std::sync::Arc;

use mnemo_agent::{Config, Runtime};
use mnemo_core::{Clock, Namespace, SimClock, SystemClock, Timestamp};

use crate::cli::Cli;

/// The clock: simulated with `--at`, else the real one.
pub fn clock(cli: &Cli) -> Result<Arc<dyn Clock>> {
    Ok(match &cli.at {
        Some(t) => Arc::new(SimClock::new(Timestamp::parse_rfc3339(t).context("--at")?)),
        None => Arc::new(SystemClock),
    })
}

/// The namespace.
pub fn namespace(cli: &Cli) -> Result<Namespace> {
    Namespace::new(&cli.namespace).context("--namespace")
}

/// Load the config.
pub fn config(cli: &Cli) -> Result<Config> {
    Ok(Config::load(&cli.config)?)
}

/// Build the configured embedder alone (for reports and benchmarks that need no store).
pub fn embedder(config: &Config) -> Result<Arc<dyn mnemo_core::Embedder>> {
    use mnemo_core::registry::{self, BuildContext, Component, Role};
    let (kind, settings, origin) = config.plugin("embedder")?;
    let data_dir = tempfile::tempdir()?;
    let ctx = BuildContext {
        settings: &settings,
        origin: &origin,
        data_dir: data_dir.path(),
        config_dir: data_dir.path(),
        clock: Arc::new(SystemClock),
        store: None,
        embedder: None,
        grounders: vec![],
    };
    match registry::build(Role::Embedder, &kind, &ctx)? {
        Component::Embedder(e) => Ok(e),
        _ => anyhow::bail!("{origin}: the {kind} factory did not build an embedder"),
    }
}

/// Build the runtime over `data_dir`, with a progress bar if the index must catch up.
pub async fn runtime(config: &Config, data_dir: &Path, clock: Arc<dyn Clock>) -> Result<Runtime> {
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
    let rt = Runtime::build_with_progress(config, data_dir, clock, Vec::new(), &progress)
        .await
        .with_context(|| format!("opening Mnemo in {}", data_dir.display()))?;
    bar.finish_and_clear();
    Ok(rt)
}

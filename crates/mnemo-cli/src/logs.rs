//! Logs: `tracing` to stderr only (stdout stays clean for `--json` and for `mnemo mcp`'s
//! protocol). `RUST_LOG` wins; else the level follows -v / -q (default: warnings).
//! `--log-format json` writes one JSON object per line. With the `otlp` feature and an OTLP
//! endpoint set, the spans also go out over OTLP ([`crate::otlp`]), at `info` whatever stderr
//! shows (`MNEMO_OTLP_FILTER`, an `EnvFilter` directive, changes that).
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// What lives as long as the process logs: the OTLP export, flushed when this drops.
pub struct Logs {
    #[cfg(feature = "otlp")]
    _otlp: Option<crate::otlp::Exporter>,
}

/// The spans exported over OTLP: Mnemo's own at `info`, never the HTTP client's that carries
/// them (whose spans would export themselves).
#[cfg(feature = "otlp")]
const OTLP_FILTER: &str = "info,reqwest=off,hyper=off,hyper_util=off,h2=off,tower=off,opentelemetry=off";

/// Install the subscriber. Fails only when OTLP export is asked for and cannot be set up.
pub fn init(verbose: u8, quiet: bool, format: &str) -> anyhow::Result<Logs> {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let stderr = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let stderr = if format == "json" {
        stderr.json().with_current_span(true).with_span_list(true).with_filter(filter).boxed()
    } else {
        stderr.with_ansi(false).with_filter(filter).boxed()
    };
    let registry = tracing_subscriber::registry().with(stderr);
    #[cfg(feature = "otlp")]
    {
        let (exporter, layer) = match crate::otlp::start()? {
            Some((exporter, layer)) => {
                let directive = std::env::var("MNEMO_OTLP_FILTER").unwrap_or_else(|_| OTLP_FILTER.to_string());
                let filter = EnvFilter::try_new(&directive).map_err(|e| {
                    anyhow::anyhow!("MNEMO_OTLP_FILTER={directive:?} is not a tracing filter directive: {e}")
                })?;
                (Some(exporter), Some(layer.with_filter(filter)))
            }
            None => (None, None),
        };
        // A second install (never in this binary) would fail; logging is then left as is.
        let _ = registry.with(layer).try_init();
        Ok(Logs { _otlp: exporter })
    }
    #[cfg(not(feature = "otlp"))]
    {
        if crate::otlp_absent::asked() {
            eprintln!(
                "mnemo: OTEL_EXPORTER_OTLP_ENDPOINT is set but this build has no OTLP export (cargo feature `otlp`): traces are not exported"
            );
        }
        let _ = registry.try_init();
        Ok(Logs {})
    }
}

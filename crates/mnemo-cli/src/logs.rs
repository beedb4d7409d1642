//! Logs: `tracing` to stderr only (stdout stays clean for `--json`). `RUST_LOG` wins; else
//! the level follows -v / -q (default: warnings). `--log-format json` writes one JSON object
//! per line.
use tracing_subscriber::EnvFilter;

/// Install the subscriber.
pub fn init(verbose: u8, quiet: bool, format: &str) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // A second install (never in this binary) would fail; logging is then simply left as is.
    let _ = if format == "json" {
        builder.json().with_current_span(true).with_span_list(true).try_init()
    } else {
        builder.with_ansi(false).try_init()
    };
}

//! `mnemo`: the command line of the Mnemo memory engine.

/// `println!` that ends quietly when stdout is closed (`mnemo recall … | head -1`).
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

mod allocator;
mod cli;
mod commands;
mod context;
mod error_text;
mod features;
mod help;
mod logs;
#[cfg(feature = "otlp")]
mod otlp;
#[cfg(not(feature = "otlp"))]
mod otlp_absent;
mod print;
mod provenance;

// The component kinds this binary offers (store, index, models, grounders; the optional ones
// with their features, or as NOT BUILT placeholders): `mnemo plugins` lists them.
use mnemo_kinds as _;

fn main() -> std::process::ExitCode {
    allocator::return_large_frees();
    let cli = help::parse();
    let json = cli.json_output();
    // Held to the end of main: the OTLP export's last batch is flushed when it drops.
    let _logs = match logs::init(cli.verbose, cli.quiet, &cli.log_format) {
        Ok(logs) => logs,
        Err(e) => {
            let message = error_text::one_line(&e);
            eprintln!("error: {message}");
            if json {
                out!("{}", error_text::json("config", &message));
            }
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt.block_on(commands::run(cli)),
        Err(e) => Err(anyhow::Error::new(e).context("cannot start the async runtime")),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            let message = error_text::one_line(&e);
            eprintln!("error: {message}");
            // A script reading `--json` gets the failure in the format it reads; the exit
            // status is the same either way.
            if json {
                out!("{}", error_text::json(error_text::kind(&e), &message));
            }
            std::process::ExitCode::FAILURE
        }
    }
}

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
mod local_embedder;
mod logs;
#[cfg(feature = "otlp")]
mod otlp;
#[cfg(not(feature = "otlp"))]
mod otlp_absent;
mod print;
mod provenance;

// Linked for its `postgres` Store and Index registrations (feature `postgres`).
#[cfg(feature = "postgres")]
use mnemo_store_postgres as _;

// The built-in kinds this binary offers: the linker keeps a crate's registrations only when
// the binary refers to it (`mnemo plugins` lists them; tests/cli.rs checks them).
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;
// Linked for its `mcp` grounder registration (and `mnemo mcp`; feature `mcp`).
#[cfg(feature = "mcp")]
use mnemo_mcp as _;

fn main() -> std::process::ExitCode {
    allocator::return_large_frees();
    local_embedder::link();
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

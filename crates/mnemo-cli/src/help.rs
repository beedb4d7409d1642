//! Per-command help: the global options (`--data-dir`, `--namespace`, `--at`, …) are accepted
//! anywhere on the line, as always, but each subcommand's `--help` lists only the ones it
//! reads; the rest are hidden there (still accepted, still in `mnemo --help`).
use clap::{Arg, ArgMatches, CommandFactory as _, FromArgMatches as _};

use crate::cli::Cli;

/// Logging options every command honours.
const LOGS: &[&str] = &["verbose", "quiet", "log_format"];

/// The global options a subcommand reads, beyond [`LOGS`]; a subcommand not listed reads all.
const READS: &[(&str, &[&str])] = &[
    ("demo", &["config", "live"]),
    ("plugins", &["config"]),
    ("migrate", &["config"]),
    ("eval", &["config"]),
    ("eval-assessor", &["config"]),
    ("bench", &["config", "live"]),
    ("reliability", &["config"]),
    ("models", &[]),
    ("backup", &["config", "data_dir"]),
    ("serve", &["config", "data_dir", "at", "allow_future", "live"]),
];

/// Commands that read no global option at all (not even the logging ones).
const READS_NOTHING: &[&str] = &["completions"];

/// The command line, with per-subcommand help trimmed.
pub fn command() -> clap::Command {
    let mut cmd = Cli::command().after_help(crate::features::help_text());
    let globals: Vec<Arg> = cmd.get_arguments().filter(|a| a.is_global_set()).cloned().collect();
    let names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).collect();
    for name in names {
        let reads: Option<Vec<&str>> = if READS_NOTHING.contains(&name.as_str()) {
            Some(Vec::new())
        } else {
            READS.iter().find(|(n, _)| *n == name).map(|(_, r)| r.iter().chain(LOGS).copied().collect())
        };
        let Some(reads) = reads else { continue };
        cmd = cmd.mut_subcommand(&name, |mut sc| {
            // A hidden copy in the subcommand stops clap from propagating the visible one;
            // it is still global, so it parses (and reaches `Cli`) exactly as before.
            for g in globals.iter().filter(|g| !reads.contains(&g.get_id().as_str())) {
                sc = sc.arg(g.clone().hide(true));
            }
            sc
        });
    }
    cmd
}

/// Parse the process's arguments (exits with clap's message on an error, like `Cli::parse`).
pub fn parse() -> Cli {
    let matches: ArgMatches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn help_of(sub: &str) -> String {
        let mut cmd = command();
        cmd.build();
        let sc = cmd.find_subcommand_mut(sub).unwrap();
        sc.render_long_help().to_string()
    }

    #[test]
    fn each_command_lists_only_the_global_options_it_reads() {
        let models = help_of("models");
        assert!(!models.contains("--data-dir") && !models.contains("--namespace") && !models.contains("--at "));
        assert!(models.contains("--verbose"));
        let eval = help_of("eval");
        assert!(eval.contains("--config") && !eval.contains("--data-dir") && !eval.contains("--allow-future"));
        let recall = help_of("recall");
        for o in ["--data-dir", "--namespace", "--config", "--at", "--live", "--verbose"] {
            assert!(recall.contains(o), "recall --help lists {o}");
        }
        assert!(!help_of("completions").contains("--verbose"));
    }

    #[test]
    fn hidden_global_options_are_still_accepted_anywhere() {
        let m = command()
            .try_get_matches_from(["mnemo", "--data-dir", "d1", "models", "list", "--namespace", "x", "--json"])
            .unwrap();
        let cli = Cli::from_arg_matches(&m).unwrap();
        assert_eq!(cli.data_dir, std::path::PathBuf::from("d1"));
        assert_eq!(cli.namespace, "x");
        let m = command().try_get_matches_from(["mnemo", "recall", "q", "--at", "2026-05-01", "-n", "y"]).unwrap();
        let cli = Cli::from_arg_matches(&m).unwrap();
        assert_eq!((cli.at.as_deref(), cli.namespace.as_str()), (Some("2026-05-01"), "y"));
    }
}

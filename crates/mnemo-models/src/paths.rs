//! Where model files live and whether a model is complete.
use std::path::{Path, PathBuf};

use crate::catalogue::{DistilledSpec, ModelSpec};
use crate::error::{ModelsError, Result};

/// The environment variable naming the models directory.
pub const MODELS_ENV: &str = "MNEMO_MODELS";

/// The models directory: `$MNEMO_MODELS` if set and non-empty, else `<platform cache
/// dir>/mnemo/models` (e.g. `~/.cache/mnemo/models` on Linux).
pub fn models_root() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(MODELS_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    dirs::cache_dir().map(|d| d.join("mnemo").join("models")).ok_or(ModelsError::NoModelsDir)
}

/// The directory of one model under `root`.
pub fn model_dir(spec: &ModelSpec, root: &Path) -> PathBuf {
    root.join(spec.name)
}

/// The directory of one distilled model under `root`.
pub fn distilled_dir(spec: &DistilledSpec, root: &Path) -> PathBuf {
    root.join(spec.name)
}

/// Whether a distilled model's files are all present (non-empty) in `dir`.
pub fn distilled_installed(dir: &Path) -> bool {
    all_present(dir, DistilledSpec::FILES)
}

/// Whether every file the model needs is present (non-empty) in `dir`.
pub fn installed(spec: &ModelSpec, dir: &Path) -> bool {
    all_present(dir, spec.files.iter().map(|f| f.local))
}

/// Whether each of `names` is a non-empty file in `dir`.
fn all_present<'a>(dir: &Path, names: impl IntoIterator<Item = &'a str>) -> bool {
    names.into_iter().all(|f| std::fs::metadata(dir.join(f)).is_ok_and(|m| m.is_file() && m.len() > 0))
}

/// Bytes of those of `names` that are files in `dir`.
fn bytes_present<'a>(dir: &Path, names: impl IntoIterator<Item = &'a str>) -> u64 {
    names.into_iter().filter_map(|f| std::fs::metadata(dir.join(f)).ok()).map(|m| m.len()).sum()
}

/// One model's state on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelStatus {
    /// The catalogue entry.
    pub spec: &'static ModelSpec,
    /// Its directory.
    pub dir: PathBuf,
    /// Complete.
    pub installed: bool,
    /// Bytes of its files present.
    pub bytes: u64,
}

pub(crate) fn status(spec: &'static ModelSpec, root: &Path) -> ModelStatus {
    let dir = model_dir(spec, root);
    let bytes = bytes_present(&dir, spec.files.iter().map(|f| f.local));
    ModelStatus { spec, installed: installed(spec, &dir), dir, bytes }
}

/// One distilled model's state on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistilledStatus {
    /// The catalogue entry.
    pub spec: &'static DistilledSpec,
    /// Its directory.
    pub dir: PathBuf,
    /// Complete.
    pub installed: bool,
    /// Bytes of its files present.
    pub bytes: u64,
}

pub(crate) fn distilled_status(spec: &'static DistilledSpec, root: &Path) -> DistilledStatus {
    let dir = distilled_dir(spec, root);
    DistilledStatus {
        spec,
        installed: distilled_installed(&dir),
        bytes: bytes_present(&dir, DistilledSpec::FILES),
        dir,
    }
}

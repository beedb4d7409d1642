//! The fusion the configuration asks for, as the bench's defaults: `mnemo --config
//! config/experiments/local-embedder.toml bench locomo` measures the index that config would
//! build (its `[index]` fusion keys), and a command-line flag still overrides each key.
use mnemo_contract::fusion::FusionSettings;

use super::LocomoArgs;
use crate::error::{BenchError, Result};

/// The `[index]` keys that set the fusion (the others — kind, paths, ANN — do not concern it).
const FUSION_KEYS: [&str; 4] = ["fusion", "lexical_weight", "dense_weight", "rrf_k"];

impl LocomoArgs {
    /// Fill every fusion setting not given on the command line from the `[index]` settings
    /// (`origin` names where they came from, for the error of a bad value).
    pub fn with_index_config(mut self, index: &toml::Table, origin: &str) -> Result<Self> {
        let fusion_keys: toml::Table = index
            .iter()
            .filter(|(k, _)| FUSION_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let f: FusionSettings =
            fusion_keys.try_into().map_err(|e| BenchError::Arg(format!("{origin}: [index]: {e}")))?;
        f.validate().map_err(|e| BenchError::Arg(format!("{origin}: {e}")))?;
        self.retrieval.fusion = self.retrieval.fusion.or(Some(f.fusion));
        self.retrieval.lexical_weight = self.retrieval.lexical_weight.or(Some(f.lexical_weight));
        self.retrieval.dense_weight = self.retrieval.dense_weight.or(Some(f.dense_weight));
        self.retrieval.rrf_k = self.retrieval.rrf_k.or(Some(f.rrf_k));
        if self.entity_boost.is_none() {
            if let Some(v) = index.get("entity_boost") {
                let b = v
                    .as_float()
                    .or_else(|| v.as_integer().map(|i| i as f64))
                    .ok_or_else(|| BenchError::Arg(format!("{origin}: [index] entity_boost must be a number")))?;
                mnemo_store::entity_match::validate_boost(b as f32)
                    .map_err(|e| BenchError::Arg(format!("{origin}: {e}")))?;
                self.entity_boost = Some(b as f32);
            }
        }
        if self.retrieval.stemming.is_none() {
            if let Some(s) = index.get("stemming").and_then(toml::Value::as_bool) {
                self.retrieval.stemming = Some(s);
            }
        }
        if self.query_stop_words.is_none() {
            if let Some(v) = index.get("query_stop_words") {
                let on = v.as_bool().ok_or_else(|| {
                    BenchError::Arg(format!("{origin}: [index] query_stop_words must be true or false"))
                })?;
                self.query_stop_words = Some(on);
            }
        }
        Ok(self)
    }
}

impl LocomoArgs {
    /// Take the configured `[recall] neighbour_share` / `neighbour_turns` unless the command
    /// line set them (the bench's engine otherwise runs the default recall policy).
    /// `[recall] candidates` too, when the config sets it apart from the engine's default (the
    /// bench's own default, 200, stays for a config that does not).
    pub fn with_recall_policy(mut self, recall: &mnemo_contract::policy::RecallPolicy) -> Self {
        if self.candidates.is_none() && recall.candidates != mnemo_contract::policy::RecallPolicy::default().candidates
        {
            self.candidates = Some(recall.candidates);
        }
        if self.recall_neighbour_share.is_none() && recall.neighbour_share > 0.0 {
            self.recall_neighbour_share = Some(recall.neighbour_share);
            self.recall_neighbour_turns = Some(u32::try_from(recall.neighbour_turns).unwrap_or(u32::MAX));
        }
        self
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mnemo_contract::fusion::FusionMethod;

    fn table(s: &str) -> toml::Table {
        toml::from_str(s).unwrap()
    }

    #[test]
    fn config_fills_what_the_command_line_left_open() {
        let mut args = LocomoArgs::new("x.json".into());
        args.retrieval.dense_weight = Some(0.3);
        let cfg = table(
            "kind = \"tantivy\"\nfusion = \"convex\"\nlexical_weight = 0.6\ndense_weight = 0.4\nstemming = false",
        );
        let a = args.with_index_config(&cfg, "cfg.toml").unwrap();
        assert_eq!(a.retrieval.fusion, Some(FusionMethod::Convex));
        assert_eq!(a.retrieval.lexical_weight, Some(0.6));
        assert_eq!(a.retrieval.dense_weight, Some(0.3), "the flag wins");
        assert_eq!(a.retrieval.stemming, Some(false));
        assert_eq!(a.entity_boost, None);
        let a = LocomoArgs::new("x.json".into()).with_index_config(&table("entity_boost = 0.5"), "c").unwrap();
        assert_eq!(a.entity_boost, Some(0.5));
        let mut flag = LocomoArgs::new("x.json".into());
        flag.entity_boost = Some(0.0);
        assert_eq!(flag.with_index_config(&table("entity_boost = 1"), "c").unwrap().entity_boost, Some(0.0));
        // Keys the config leaves out take the index's defaults.
        let d = FusionSettings::default();
        let a = LocomoArgs::new("x.json".into()).with_index_config(&table("kind = \"tantivy\""), "c").unwrap();
        assert_eq!((a.retrieval.fusion, a.retrieval.rrf_k), (Some(d.fusion), Some(d.rrf_k)));
    }

    #[test]
    fn configured_neighbour_sharing_is_taken_unless_a_flag_set_it() {
        let mut recall = mnemo_contract::policy::RecallPolicy::default();
        let a = LocomoArgs::new("x.json".into()).with_recall_policy(&recall);
        assert_eq!((a.recall_neighbour_share, a.recall_neighbour_turns), (None, None), "off by default");
        recall.neighbour_share = 0.5;
        recall.neighbour_turns = 3;
        let a = LocomoArgs::new("x.json".into()).with_recall_policy(&recall);
        assert_eq!((a.recall_neighbour_share, a.recall_neighbour_turns), (Some(0.5), Some(3)));
        assert_eq!(a.neighbours, None, "the bench's own neighbour rows stay off");
        let mut flag = LocomoArgs::new("x.json".into());
        flag.recall_neighbour_share = Some(0.0);
        assert_eq!(flag.with_recall_policy(&recall).recall_neighbour_share, Some(0.0));
    }

    #[test]
    fn configured_candidates_and_stop_words_are_taken_unless_a_flag_set_them() {
        let mut recall = mnemo_contract::policy::RecallPolicy::default();
        let a = LocomoArgs::new("x.json".into()).with_recall_policy(&recall);
        assert_eq!(a.candidates(), 200, "the engine's default candidates leave the bench's");
        recall.candidates = 400;
        assert_eq!(LocomoArgs::new("x.json".into()).with_recall_policy(&recall).candidates(), 400);
        let mut flag = LocomoArgs::new("x.json".into());
        flag.candidates = Some(50);
        assert_eq!(flag.with_recall_policy(&recall).candidates(), 50, "the flag wins");

        let a = LocomoArgs::new("x.json".into()).with_index_config(&table("query_stop_words = true"), "c").unwrap();
        assert_eq!(a.query_stop_words, Some(true));
        let mut flag = LocomoArgs::new("x.json".into());
        flag.query_stop_words = Some(false);
        assert_eq!(
            flag.with_index_config(&table("query_stop_words = true"), "c").unwrap().query_stop_words,
            Some(false)
        );
        let e =
            LocomoArgs::new("x.json".into()).with_index_config(&table("query_stop_words = 1"), "cfg.toml").unwrap_err();
        assert!(e.to_string().contains("cfg.toml") && e.to_string().contains("query_stop_words"), "{e}");
    }

    #[test]
    fn a_bad_fusion_value_names_the_file() {
        let e =
            LocomoArgs::new("x.json".into()).with_index_config(&table("fusion = \"mean\""), "cfg.toml").unwrap_err();
        assert!(e.to_string().contains("cfg.toml"), "{e}");
        let e =
            LocomoArgs::new("x.json".into()).with_index_config(&table("dense_weight = -1.0"), "cfg.toml").unwrap_err();
        assert!(e.to_string().contains("dense_weight"), "{e}");
        let e =
            LocomoArgs::new("x.json".into()).with_index_config(&table("entity_boost = -1.0"), "cfg.toml").unwrap_err();
        assert!(e.to_string().contains("cfg.toml") && e.to_string().contains("entity_boost"), "{e}");
    }
}

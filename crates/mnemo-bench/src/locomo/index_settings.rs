//! The index the configuration asks for, as the bench's starting point: `mnemo --config
//! config/experiments/local-embedder.toml bench locomo` measures the index that config would
//! build — its `[index]` section whole, kept in RAM ([`BenchIndex`]) — and only the bench's
//! command-line flags are laid over it as keys. No key is copied one by one, so a key the bench
//! does not know is measured all the same, and the factory checks every one.
use super::LocomoArgs;
use crate::bench_index::{BenchIndex, ConfiguredIndex};
use crate::error::{BenchError, Result};
use mnemo_contract::fusion::FusionMethod;

impl LocomoArgs {
    /// Start from the configured `[index]` section (`Config::plugin("index")`: its kind, its
    /// settings, where they came from) instead of the factory's defaults.
    pub fn with_index_config(mut self, kind: &str, settings: toml::Table, origin: &str) -> Self {
        self.index_config = Some(ConfiguredIndex { kind: kind.into(), settings, origin: origin.into() });
        self
    }

    /// The index section the bench builds: the configured one when `--index` names its kind (or
    /// is not given), else an empty one of that kind (the configured kind's keys would be
    /// refused by another kind's factory), with the command-line flags laid over it.
    pub(crate) fn bench_index(&self) -> Result<BenchIndex> {
        let configured = self.index_config.clone().unwrap_or_default();
        let kind = self.retrieval.index.clone().unwrap_or_else(|| configured.kind.clone());
        let (mut t, origin) = if kind == configured.kind {
            (configured.settings, format!("{} (bench, in RAM)", configured.origin))
        } else {
            (toml::Table::new(), format!("bench --index {kind}"))
        };
        let f = &self.retrieval;
        if let Some(m) = f.fusion {
            let name = match m {
                FusionMethod::Rrf => "rrf",
                FusionMethod::Convex => "convex",
            };
            t.insert("fusion".into(), name.into());
        }
        for (key, flag) in [("lexical_weight", f.lexical_weight), ("dense_weight", f.dense_weight), ("rrf_k", f.rrf_k)]
        {
            if let Some(v) = flag {
                t.insert(key.into(), f64::from(v).into());
            }
        }
        // The tantivy-only flags: on another kind, one that asks for something is an error
        // (naming the flag, not the key the factory would refuse); one that asks for nothing
        // (`--entity-boost 0`, `--query-stop-words false`) is left out.
        let tantivy = kind == "tantivy";
        let not_tantivy = |flag: &str| BenchError::Arg(format!("{flag} needs --index tantivy (not {kind:?})"));
        if let Some(b) = self.entity_boost {
            if tantivy {
                t.insert("entity_boost".into(), f64::from(b).into());
            } else if b > 0.0 {
                return Err(not_tantivy("--entity-boost"));
            }
        }
        if let Some(on) = self.query_stop_words {
            if tantivy {
                t.insert("query_stop_words".into(), on.into());
            } else if on {
                return Err(not_tantivy("--query-stop-words"));
            }
        }
        if let Some(on) = f.stemming {
            if !tantivy {
                return Err(not_tantivy("--stemming"));
            }
            t.insert("stemming".into(), on.into());
        }
        BenchIndex::in_ram(&kind, t, &origin)
    }
}

impl LocomoArgs {
    /// Take the configured `[recall] neighbour_share` / `neighbour_turns` and
    /// `dense_max_tokens` unless the command line set them (the bench's engine otherwise runs the default recall policy).
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
        if self.recall_dense_max_tokens.is_none() {
            self.recall_dense_max_tokens = recall.dense_max_tokens;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;

    fn table(s: &str) -> toml::Table {
        toml::from_str(s).unwrap()
    }

    fn args(config: &str) -> LocomoArgs {
        LocomoArgs::new("x.json".into()).with_index_config("tantivy", table(config), "cfg.toml")
    }

    /// Build it through the factory, as the bench does.
    fn build(b: &BenchIndex) -> Result<()> {
        let clock = Arc::new(mnemo_contract::SimClock::new(mnemo_contract::Timestamp::from_millis(0)));
        let embedder = Arc::new(mnemo_llm::FakeQwen::new(16).unwrap());
        b.build(clock, embedder).map(|_| ())
    }

    #[test]
    fn flags_win_and_the_configured_keys_are_kept() {
        let mut a = args(
            "path = \"index\"\nfusion = \"convex\"\nlexical_weight = 0.6\ndense_weight = 0.4\nstemming = false\n\
             entity_boost = 1\nann = \"exact\"\nquery_stop_words = true",
        );
        a.retrieval.dense_weight = Some(0.3);
        a.entity_boost = Some(0.0);
        let b = a.bench_index().unwrap();
        assert_eq!(b.kind(), "tantivy");
        let s = b.settings();
        assert_eq!(s["dense_weight"].as_float().map(|v| v as f32), Some(0.3), "the flag wins");
        assert_eq!(s["entity_boost"].as_float(), Some(0.0), "the flag wins");
        assert_eq!(s["lexical_weight"].as_float(), Some(0.6));
        assert_eq!(s["fusion"].as_str(), Some("convex"));
        assert_eq!(s["stemming"].as_bool(), Some(false));
        assert_eq!(s["query_stop_words"].as_bool(), Some(true));
        assert_eq!(s["ann"].as_str(), Some("exact"), "a key the bench has no flag for is kept");
        assert_eq!((s.get("path"), s["in_memory"].as_bool()), (None, Some(true)), "kept in RAM");
        assert_eq!(b.entity_boost().unwrap(), 0.0);
        build(&b).unwrap();
        assert!(b.describe().unwrap().contains("Convex fusion, lexical 0.6 dense 0.3"), "{}", b.describe().unwrap());
    }

    #[test]
    fn no_config_is_the_factory_defaults() {
        let b = LocomoArgs::new("x.json".into()).bench_index().unwrap();
        assert_eq!(b.kind(), "tantivy");
        assert_eq!(
            b.describe().unwrap(),
            "tantivy in RAM (Rrf fusion, lexical 1 dense 0.1 k 30 stemming true entity boost 0 query stop words false)"
        );
    }

    #[test]
    fn another_kind_starts_from_its_defaults_and_refuses_tantivy_flags() {
        let mut a = args("entity_boost = 0.5\nstemming = false\nlexical_weight = 0.7");
        a.retrieval.index = Some("brute".into());
        a.retrieval.rrf_k = Some(10.0);
        let b = a.bench_index().unwrap();
        assert_eq!(b.kind(), "brute");
        assert_eq!(
            b.describe().unwrap(),
            "brute (lexical 1 dense 0.1 k 10)",
            "the tantivy section is not carried over"
        );
        build(&b).unwrap();
        a.entity_boost = Some(0.5);
        let e = a.bench_index().unwrap_err();
        assert!(e.to_string().contains("--entity-boost needs --index tantivy"), "{e}");
        a.entity_boost = Some(0.0);
        a.query_stop_words = Some(true);
        assert!(a.bench_index().unwrap_err().to_string().contains("--query-stop-words needs --index tantivy"));
        a.query_stop_words = Some(false);
        assert!(a.bench_index().is_ok(), "flags asking for nothing are left out");
        // A configured brute section is taken whole too.
        let b = LocomoArgs::new("x.json".into())
            .with_index_config("brute", table("rrf_k = 12.0"), "cfg.toml")
            .bench_index()
            .unwrap();
        assert_eq!(b.describe().unwrap(), "brute (lexical 1 dense 0.1 k 12)");
    }

    #[test]
    fn an_unknown_or_bad_configured_key_reaches_the_factory_error() {
        let b = args("no_such_key = 1").bench_index().unwrap();
        let e = build(&b).unwrap_err();
        assert!(e.to_string().contains("cfg.toml") && e.to_string().contains("no_such_key"), "{e}");
        // Each error is the factory's, naming the file and what is wrong.
        for (bad, says) in [
            ("fusion = \"mean\"", "mean"),
            ("dense_weight = -1.0", "dense_weight"),
            ("entity_boost = -1.0", "entity_boost"),
            ("query_stop_words = 1", "bool"),
        ] {
            let e = build(&args(bad).bench_index().unwrap()).unwrap_err();
            assert!(e.to_string().contains("cfg.toml") && e.to_string().contains(says), "{bad}: {e}");
        }
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
    fn configured_candidates_are_taken_unless_a_flag_set_them() {
        let mut recall = mnemo_contract::policy::RecallPolicy::default();
        let a = LocomoArgs::new("x.json".into()).with_recall_policy(&recall);
        assert_eq!(a.candidates(), 200, "the engine's default candidates leave the bench's");
        recall.candidates = 400;
        assert_eq!(LocomoArgs::new("x.json".into()).with_recall_policy(&recall).candidates(), 400);
        let mut flag = LocomoArgs::new("x.json".into());
        flag.candidates = Some(50);
        assert_eq!(flag.with_recall_policy(&recall).candidates(), 50, "the flag wins");
    }
}

//! A reasoner built on its first call: for a runtime whose caller does not call the model
//! (reading, listing, exporting, backing up, recall), so that a model client which cannot be
//! built here — a live one without its API key — does not stop what needs no model.
//!
//! It is built by the same registry factory, from the same section, as an eager one: a caller
//! that does call it gets exactly the reasoner (or the error) the eager build would have given.
use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use mnemo_contract::registry::{self, ReasonerContext, Section};
use mnemo_contract::{Candidate, ClientKind, Memory, MemoryId, ModelInfo, Result, Turn};
use mnemo_contract::{Extraction, Reasoner, Reconciled, Verdict};

/// The `[reasoner]` section (and the shared `[llm]` one), kept to build the reasoner when it
/// is first called.
pub(crate) struct LazyReasoner {
    kind: String,
    settings: toml::Table,
    llm: toml::Table,
    origin: String,
    data_dir: PathBuf,
    config_dir: PathBuf,
    built: OnceLock<Arc<dyn Reasoner>>,
}

impl LazyReasoner {
    pub(crate) fn new(
        kind: String,
        settings: toml::Table,
        llm: toml::Table,
        origin: String,
        data_dir: PathBuf,
        config_dir: PathBuf,
    ) -> LazyReasoner {
        LazyReasoner { kind, settings, llm, origin, data_dir, config_dir, built: OnceLock::new() }
    }

    /// The reasoner, built now if this is the first call. A failed build is not kept: the next
    /// call tries again (the environment may have been fixed meanwhile, in a long-lived process).
    fn get(&self) -> Result<&Arc<dyn Reasoner>> {
        if let Some(r) = self.built.get() {
            return Ok(r);
        }
        let section = Section {
            settings: &self.settings,
            origin: &self.origin,
            data_dir: &self.data_dir,
            config_dir: &self.config_dir,
        };
        let built = registry::build_reasoner(&self.kind, &ReasonerContext { section, llm: Some(&self.llm) })?;
        // Two first calls at once may both build; the first one stored is the one kept.
        Ok(self.built.get_or_init(|| built))
    }
}

#[async_trait]
impl Reasoner for LazyReasoner {
    async fn extract(&self, turn: &Turn) -> Result<Extraction> {
        self.get()?.extract(turn).await
    }
    async fn reconcile(&self, candidate: &Candidate, neighbours: &[Memory]) -> Result<Verdict> {
        self.get()?.reconcile(candidate, neighbours).await
    }
    // Forwarded, not left to the trait's default: a model-backed reasoner says why and who.
    async fn reconcile_explained(&self, candidate: &Candidate, neighbours: &[Memory]) -> Result<Reconciled> {
        self.get()?.reconcile_explained(candidate, neighbours).await
    }
    async fn resolve_forget(&self, command: &str, candidates: &[Memory]) -> Result<Vec<MemoryId>> {
        self.get()?.resolve_forget(command, candidates).await
    }
    async fn plan(
        &self,
        task: &mnemo_contract::Task,
        lines: &[mnemo_contract::plan::PlanLine],
    ) -> Result<mnemo_contract::plan::Plan> {
        self.get()?.plan(task, lines).await
    }
    /// The built reasoner's; when it cannot be built, "rules" (no model answers this runtime)
    /// with the reason in the model string, since this call cannot fail.
    fn model_info(&self) -> ModelInfo {
        match self.get() {
            Ok(r) => r.model_info(),
            Err(e) => ModelInfo { client: ClientKind::Rules, model: format!("no model client ({e})") },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn an_unknown_kind_fails_on_the_first_call_not_before() {
        let r = LazyReasoner::new(
            "no-such-kind".into(),
            toml::Table::new(),
            toml::Table::new(),
            "test [reasoner]".into(),
            ".".into(),
            ".".into(),
        );
        let e = r.resolve_forget("anything", &[]).await.unwrap_err().to_string();
        assert!(e.contains("no-such-kind"), "{e}");
        assert_eq!(r.model_info().client, ClientKind::Rules);
        assert!(r.model_info().model.contains("no-such-kind"));
    }

    fn llm(client: &str) -> LazyReasoner {
        // Linked for its `llm` reasoner registration.
        use mnemo_llm as _;
        let llm: toml::Table = toml::from_str(&format!(
            "client = \"{client}\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"MNEMO_TEST_KEY_NEVER_SET\""
        ))
        .unwrap();
        LazyReasoner::new("llm".into(), toml::Table::new(), llm, "test [reasoner]".into(), ".".into(), ".".into())
    }

    #[tokio::test]
    async fn a_live_client_without_its_key_fails_when_called_naming_the_variable() {
        let e = llm("live").resolve_forget("Ben's phone", &[]).await.unwrap_err().to_string();
        assert!(e.contains("MNEMO_TEST_KEY_NEVER_SET"), "{e}");
        assert_eq!(llm("fake").model_info().client, ClientKind::Fake);
    }
}

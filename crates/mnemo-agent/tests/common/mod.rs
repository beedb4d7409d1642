//! What several test files of this crate share.
use async_trait::async_trait;
use mnemo_contract::*;
use mnemo_llm::LlmReasoner;

/// The fake reasoner, except that it fails to reconcile a candidate mentioning BOOM.
pub struct FailsOnBoom(pub LlmReasoner);

#[async_trait]
impl Reasoner for FailsOnBoom {
    async fn extract(&self, turn: &Turn) -> Result<Extraction> {
        self.0.extract(turn).await
    }
    async fn reconcile(&self, candidate: &Candidate, neighbours: &[Memory]) -> Result<Verdict> {
        if candidate.content.contains("BOOM") {
            return Err(CoreError::model_message(ModelRole::Reasoner, ModelErrorKind::Other, "scripted failure"));
        }
        self.0.reconcile(candidate, neighbours).await
    }
    async fn resolve_forget(&self, command: &str, candidates: &[Memory]) -> Result<Vec<MemoryId>> {
        self.0.resolve_forget(command, candidates).await
    }
    fn model_info(&self) -> ModelInfo {
        self.0.model_info()
    }
}

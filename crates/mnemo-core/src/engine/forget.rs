//! Explicit forgetting: resolve exactly the designated memories and tombstone them with the
//! command as the reason. No collateral: a claim command touches only that claim; a free-text
//! command only what the reasoner designates among the candidates it was shown.
use super::plan::TurnPlan;
use super::write::{Outcome, OutcomeKind};
use super::Engine;
use crate::error::{CoreError, Result};
use crate::model::*;
use crate::text::guess_entities;
use crate::text::norm_name;
use crate::traits::{ExtractedItem, Extraction, ForgetCommand, ModelInfo, SearchMode, SearchQuery};

/// Candidates shown to the reasoner for a free-text forget.
const FORGET_CANDIDATES: usize = 64;

impl Engine {
    /// Forget what `command` designates. The command is recorded as a turn from `source`
    /// (durable first, like any turn) and planned directly: no text goes through the model to
    /// find out what to forget.
    pub async fn forget(&self, ns: &Namespace, source: &str, command: &ForgetCommand) -> Result<super::RememberReport> {
        let said = command.describe();
        if said.trim().is_empty()
            || (matches!(command, ForgetCommand::Claim { entity, attribute } if entity.trim().is_empty() || attribute.trim().is_empty()))
        {
            return Err(CoreError::InvalidInput("forget command is empty".into()));
        }
        let source = if source.trim().is_empty() { "user" } else { source.trim() };
        let _write = self.write_guard(ns).await?;
        let turn = self.record(ns, source, &format!("forget: {said}"), None).await?;
        let model = ModelInfo { client: ClientKind::Rules, model: "forget-command".into() };
        let extraction = Extraction { items: vec![ExtractedItem::Forget(command.clone())], model, notes: vec![] };
        self.apply_extraction(ns, turn, extraction).await
    }

    /// Plan a forget command: exactly the designated memories, stored or pending in this turn.
    pub(crate) async fn plan_forget(
        &self,
        ns: &Namespace,
        turn: &Turn,
        cmd: &ForgetCommand,
        plan: &mut TurnPlan,
    ) -> Result<Outcome> {
        let (targets, said) = match cmd {
            ForgetCommand::Claim { entity, attribute } => {
                let on_it = |m: &Memory| m.claim.as_ref().is_some_and(|c| c.is_on(entity, attribute));
                let mut ids: Vec<MemoryId> = plan
                    .live(self.store.active_by_entities(ns, &[norm_name(entity)]).await?)
                    .iter()
                    .filter(|m| on_it(m))
                    .map(|m| m.id)
                    .collect();
                ids.extend(plan.pending().filter(|m| on_it(m)).map(|m| m.id));
                (ids, format!("{entity} | {attribute}"))
            }
            ForgetCommand::Text(text) => (self.resolve_text_forget(ns, text, plan).await?, text.clone()),
        };
        if targets.is_empty() {
            return Ok(Outcome {
                kind: OutcomeKind::NothingToForget,
                memory: None,
                tombstoned: vec![],
                detail: format!("[FORGET] {said}: no active memory matched"),
            });
        }
        for id in &targets {
            plan.tombstone(
                *id,
                format!("forgotten on command: [FORGET] {said} (turn {})", turn.id),
                None,
                Some(turn.id),
            );
        }
        Ok(Outcome {
            kind: OutcomeKind::Forgotten,
            memory: targets.first().copied(),
            tombstoned: targets,
            detail: format!("[FORGET] {said}: tombstoned {{tombstoned}}"),
        })
    }

    async fn resolve_text_forget(&self, ns: &Namespace, text: &str, plan: &TurnPlan) -> Result<Vec<MemoryId>> {
        let embedding = self.embedder.embed(&[text.to_string()]).await?.into_iter().next();
        let hits = self
            .index
            .search(&SearchQuery {
                namespace: ns.clone(),
                text: text.to_string(),
                embedding,
                limit: FORGET_CANDIDATES,
                mode: SearchMode::Hybrid,
            })
            .await?;
        let ids: Vec<MemoryId> = hits.iter().map(|h| h.id).collect();
        let mut candidates: Vec<Memory> = plan.live(self.store.get_many(ns, &ids).await?);
        let entities: Vec<String> = guess_entities(text).iter().map(|e| norm_name(e)).collect();
        if !entities.is_empty() {
            for m in plan.live(self.store.active_by_entities(ns, &entities).await?) {
                if !candidates.iter().any(|c| c.id == m.id) {
                    candidates.push(m);
                }
            }
        }
        candidates.extend(plan.pending().cloned());
        if candidates.is_empty() {
            return Ok(vec![]);
        }
        let chosen = self.reasoner.resolve_forget(text, &candidates).await?;
        if let Some(bad) = chosen.iter().find(|id| !candidates.iter().any(|m| m.id == **id)) {
            return Err(CoreError::Reasoner(format!(
                "forget resolution named memory {bad}, which was not among the candidates"
            )));
        }
        let mut chosen = chosen;
        chosen.sort();
        chosen.dedup();
        Ok(chosen)
    }
}

//! Ids as callers write them (`m42`, `t17`, or a stored number) found in a namespace.
use mnemo_contract::{IdKind, IdRef};

use super::Engine;
use mnemo_contract::error::{CoreError, Result};
use mnemo_contract::model::*;

impl Engine {
    /// The stored id `r` names among `ns`'s ids of `kind` (NotFound when it names none there;
    /// InvalidInput when it names the other kind).
    async fn find_id(&self, ns: &Namespace, r: IdRef, kind: IdKind) -> Result<i64> {
        match r.of_kind(kind).map_err(CoreError::InvalidInput)? {
            IdRef::Stored(n) => Ok(n),
            IdRef::Short { local, .. } => self.store.id_of_local(ns, kind, local).await?.ok_or_else(|| {
                CoreError::NotFound(format!(
                    "{}{local} in namespace {ns}: no {} has that id",
                    kind.letter(),
                    kind.noun()
                ))
            }),
        }
    }

    /// The memory `r` names in `ns`.
    pub async fn memory_id(&self, ns: &Namespace, r: IdRef) -> Result<MemoryId> {
        self.find_id(ns, r, IdKind::Memory).await.map(MemoryId)
    }

    /// The turn `r` names in `ns`.
    pub async fn turn_id(&self, ns: &Namespace, r: IdRef) -> Result<TurnId> {
        self.find_id(ns, r, IdKind::Turn).await.map(TurnId)
    }
}

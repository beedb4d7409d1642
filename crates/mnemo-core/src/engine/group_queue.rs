//! The group commit's queue: callers hand their turn to one writer task and wait for its
//! answer; the writer takes every turn waiting (up to [`MAX_BATCH_TURNS`]) and writes them as
//! one batch ([`Engine::remember_batch`]), so that while one batch is written the next
//! gathers, and N concurrent callers cost one store transaction and one index sync instead of
//! N of each.
//!
//! A caller that stops waiting (a client that went away) does not stop its turn: it is in the
//! writer's hands, written and answered to no one. The writer stops when the last
//! [`GroupCommit`] handle is dropped, after the batch under way. Between batches it holds the
//! engine only weakly: whoever owns the engine drops it (its index, with the index's own
//! directory lock) when they are done, without waiting for the writer to notice.
use std::sync::{Arc, Weak};

use tokio::sync::{mpsc, oneshot};

use super::group_commit::TurnRequest;
use super::{Engine, RememberReport};
use mnemo_contract::error::{CoreError, Result, StoreErrorKind};

/// Most turns written as one batch. Enough for any number of clients a 2-core server answers
/// at once; a bound so that one batch's latency stays bounded behind a flood.
pub const MAX_BATCH_TURNS: usize = 256;

/// A turn waiting for the writer, and where its answer goes.
struct Waiting {
    request: TurnRequest,
    answer: oneshot::Sender<Result<RememberReport>>,
}

/// A handle on the writer task of an engine's group commit.
pub struct GroupCommit {
    queue: mpsc::UnboundedSender<Waiting>,
}

impl GroupCommit {
    /// Start the writer task for `engine` on the current tokio runtime; an error outside one.
    pub fn start(engine: &Arc<Engine>) -> Result<GroupCommit> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| {
            CoreError::Config(format!("the group commit's writer needs a tokio runtime to run on: {e}"))
        })?;
        let (queue, waiting) = mpsc::unbounded_channel();
        runtime.spawn(write_batches(Arc::downgrade(engine), waiting));
        Ok(GroupCommit { queue })
    }

    /// Remember one turn with the next batch; answered once the batch has committed it and
    /// the index holds it (or with this turn's own error).
    pub async fn remember(&self, request: TurnRequest) -> Result<RememberReport> {
        let (answer, answered) = oneshot::channel();
        self.queue.send(Waiting { request, answer }).map_err(|_| writer_gone("before taking the turn"))?;
        answered.await.map_err(|_| writer_gone("before answering; the turn may be recorded"))?
    }
}

/// The writer: one batch at a time, every waiting turn in it.
async fn write_batches(engine: Weak<Engine>, mut waiting: mpsc::UnboundedReceiver<Waiting>) {
    while let Some(first) = waiting.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH_TURNS {
            match waiting.try_recv() {
                Ok(w) => batch.push(w),
                Err(_) => break,
            }
        }
        let (requests, answers): (Vec<TurnRequest>, Vec<_>) = batch.into_iter().map(|w| (w.request, w.answer)).unzip();
        let n = requests.len();
        // On a task of its own: a panic in one batch answers its callers with an error and
        // leaves the writer serving the next.
        let Some(engine) = engine.upgrade() else {
            for answer in answers {
                let _ = answer.send(Err(writer_gone("because its engine was dropped")));
            }
            break;
        };
        let written = tokio::spawn(async move { engine.remember_batch(requests).await }).await;
        let results: Vec<Result<RememberReport>> = match written {
            Ok(results) => results,
            Err(e) => (0..n).map(|_| Err(writer_gone(&format!("while writing its batch ({e})")))).collect(),
        };
        for (answer, result) in answers.into_iter().zip(results) {
            // A caller that stopped waiting is not told; its turn is written all the same.
            let _ = answer.send(result);
        }
    }
}

/// The writer task ended (the engine is shutting down, or a batch panicked).
fn writer_gone(when: &str) -> CoreError {
    CoreError::StoreFailure {
        kind: StoreErrorKind::Other,
        source: Box::new(std::io::Error::other(format!("the group commit's writer stopped {when}"))),
    }
}

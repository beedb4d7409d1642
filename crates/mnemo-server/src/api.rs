//! Request and response bodies (the OpenAPI document is generated from these types). Engine
//! reports (pack, assessment, history) are carried as the JSON the engine writes (the tenant
//! view, as the CLI's `--json` shows it), typed in the document by [`crate::schema`].
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// `POST /v1/namespaces/{ns}/remember`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberRequest {
    /// The turn: tagged lines (`[SEM] entity | attribute | value`, `[PROC] …`, `[EPI] …`,
    /// `[FORGET] …`) for the offline model, or prose for a live one.
    pub text: String,
    /// A free label for who said it. The turn is recorded under the token's principal whatever
    /// the label: corroboration counts distinct authenticated principals.
    #[serde(default)]
    pub source: Option<String>,
    /// Makes the write idempotent: a retry with the same key in the same namespace writes
    /// nothing again and answers the turn first recorded.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// When it was said (default: now): RFC 3339, or a date alone (`2026-05-01`, midnight
    /// UTC). What the turn writes takes this time. At most `[time] max_future_skew_secs` (default
    /// five minutes) after the server's clock, and
    /// never before the namespace's last turn (time only moves forward): importing a
    /// conversation means sending its turns oldest first.
    #[serde(default)]
    #[schema(example = "2026-05-01T09:00:00Z")]
    pub at: Option<String>,
}

/// What a remember (or forget) wrote.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct RememberResponse {
    /// The authenticated principal the turn is recorded under.
    pub principal: String,
    /// The engine's report: `status`, `turn`, `outcomes` (inserted / reinforced / superseded /
    /// forgotten, with memory ids), `notes`, `model`.
    #[schema(value_type = crate::schema::RememberReport)]
    pub report: serde_json::Value,
}

/// The claim a task is about, as an object (`about` also takes the text `"entity | attribute"`,
/// as every door does).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct About {
    /// Entity.
    pub entity: String,
    /// Attribute.
    pub attribute: String,
}

/// `about`: `"entity | attribute"`, or `{"entity": …, "attribute": …}`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum AboutArg {
    /// `"entity | attribute"`.
    #[schema(example = "Northwind Labs | owner")]
    Text(String),
    /// The two parts.
    Parts(About),
}

/// `POST /v1/namespaces/{ns}/recall`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallRequest {
    /// The query.
    pub query: String,
    /// Token budget (default from config).
    #[serde(default)]
    pub budget: Option<usize>,
    /// lexical (or bm25), dense (or vector) or hybrid (default from config).
    #[serde(default)]
    #[schema(example = "hybrid")]
    pub mode: Option<String>,
    /// The claim the task is about: load-bearing, and the agent escalates when nothing
    /// recalled asserts it.
    #[serde(default)]
    #[schema(value_type = Option<AboutArg>)]
    pub about: Option<mnemo_contract::ClaimKey>,
    /// Plain retrieval: no grounding, no grade, no decision.
    #[serde(default)]
    pub raw: bool,
    /// `compact` (default): the agent view, the packed memories as prompt-ready lines within
    /// the budget and the decision. `full`: the pack with its whole trace and provenance, the
    /// assessment, the verdict and the action (`RecallResponse`).
    #[serde(default)]
    #[schema(example = "compact")]
    pub detail: Option<String>,
    /// What memory held at this past time instead of now (RFC 3339 or a date): memories
    /// recorded later are absent, those superseded or forgotten later are present; graded as of
    /// then, without asking the systems of record, and no escalation is raised.
    #[serde(default)]
    #[schema(example = "2026-05-01")]
    pub as_of: Option<String>,
    /// Only episodes recorded at or after this time (RFC 3339 or a date); facts and rules are
    /// not windowed.
    #[serde(default)]
    pub since: Option<String>,
    /// Only episodes recorded before this time (RFC 3339 or a date).
    #[serde(default)]
    pub until: Option<String>,
    /// What was true in the world at this time (RFC 3339 or a date), by the validity intervals
    /// the turns stated ("from 2019 to 2021"); replaced values included where they held.
    /// Graded without asking the systems of record; no escalation is raised.
    #[serde(default)]
    #[schema(example = "2020-06-01")]
    pub valid_at: Option<String>,
}

/// A recall as answered: the agent view by default, the full result with `detail = "full"`.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum RecallResult {
    /// `detail = "compact"` (default): what an agent reads.
    Compact(Box<mnemo_agent::AgentRecall>),
    /// `detail = "full"`.
    Full(RecallResponse),
}

/// A full recall (`detail = "full"`): the pack with its trace; unless raw, the assessment,
/// verdict and action.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct RecallResponse {
    /// The pack as recalled (items, trace, tokens used, notes).
    #[schema(value_type = crate::schema::Pack)]
    pub pack: serde_json::Value,
    /// The assessment (grades, lookups, substitutions, trust, decision); null when raw.
    #[schema(value_type = Option<crate::schema::Assessment>)]
    pub assessment: Option<serde_json::Value>,
    /// The decision and the value(s) to act on or the weak memories; null when raw.
    #[schema(value_type = Option<crate::schema::Verdict>)]
    pub verdict: Option<serde_json::Value>,
    /// What the agent does; null when raw.
    pub action: Option<String>,
}

/// `POST /v1/namespaces/{ns}/turn`: remember a message, then recall → assess → decide.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnRequest {
    /// The message (remembered under the token's principal, then used as the query). Named
    /// `text` as in remember, at every door (`message` is accepted too).
    #[serde(alias = "message")]
    pub text: String,
    /// The claim the task is about.
    #[serde(default)]
    #[schema(value_type = Option<AboutArg>)]
    pub about: Option<mnemo_contract::ClaimKey>,
    /// Token budget (default from config).
    #[serde(default)]
    pub budget: Option<usize>,
    /// `compact` (default): what the message wrote, then the recall as an agent reads it (the
    /// packed memories as prompt-ready lines within the budget, the decision, the checked plan
    /// on ACT or the escalation on ESCALATE: `TurnView`). `full`: the whole agent turn (the
    /// pack with its trace, the assessment, the verdict, the plan, the escalation:
    /// `TurnResponse`).
    #[serde(default)]
    #[schema(example = "compact")]
    pub detail: Option<String>,
}

/// An agent turn as answered: what an agent reads by default, the whole turn with
/// `detail = "full"`.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum TurnResult {
    /// `detail = "compact"` (default).
    Compact(Box<TurnView>),
    /// `detail = "full"`.
    Full(TurnResponse),
}

/// An agent turn as an agent reads it (`detail = "compact"`, the default): what the message
/// wrote, and the recall's compact view — with the checked plan on ACT, or on ESCALATE the
/// escalation recorded (its id is what `POST …/escalations/{id}/answer` takes).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TurnView {
    /// The authenticated principal the message is recorded under.
    pub principal: String,
    /// What remembering the message did: `status`, `turn`, `outcomes`, `notes`, `model`.
    #[schema(value_type = crate::schema::RememberReport)]
    pub remembered: serde_json::Value,
    /// The recall, as `recall`'s compact result, with `plan` (ACT) or `escalation` (ESCALATE).
    pub recall: mnemo_agent::AgentRecall,
    /// The prompt-ready text of the turn: one line of what the message wrote, then the
    /// recall's text (as MCP's `turn` shows it).
    pub text: String,
}

/// A full agent turn (`detail = "full"`).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TurnResponse {
    /// The authenticated principal the message is recorded under.
    pub principal: String,
    /// `remembered`, `pack`, `assessment`, `action`, `verdict`, and `plan` (ACT) or
    /// `escalation` (ESCALATE).
    #[schema(value_type = crate::schema::AgentTurn)]
    pub turn: serde_json::Value,
}

/// Query of `GET /v1/namespaces/{ns}/escalations`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EscalationsQuery {
    /// Only the escalations waiting for a human (default false: every escalation, answered and
    /// dismissed ones too).
    #[serde(default)]
    #[param(required = false)]
    pub open: bool,
}

/// The escalations of a namespace, oldest first.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct EscalationList {
    /// The escalations (`e1`, `e2`, …).
    #[schema(value_type = Vec<crate::schema::Escalation>)]
    pub escalations: Vec<serde_json::Value>,
}

/// `POST /v1/namespaces/{ns}/escalations/{id}/answer`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The human's answer. To an escalation about a claim, the value alone ("Carla") or a
    /// short sentence stating it ("the approver is Carla") is recorded as the claim
    /// (`[SEM] entity | attribute | value`); tagged lines are recorded as written; anything
    /// else as prose.
    pub text: String,
    /// Who answers: over HTTP always the token's principal, recorded as `human:PRINCIPAL` (a
    /// human's answer is memory with the highest standing); `by` may be left out or name that
    /// principal, any other name is 403.
    #[serde(default)]
    pub by: Option<String>,
}

/// `POST /v1/namespaces/{ns}/escalations/{id}/dismiss` (the body may be left out).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DismissRequest {
    /// Who dismisses it: the token's principal (`by` may be left out or name it; any other
    /// name is 403).
    #[serde(default)]
    pub by: Option<String>,
}

/// `POST /v1/namespaces/{ns}/forget`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetRequest {
    /// `entity | attribute`, or free text designating the memories.
    pub command: String,
    /// Write nothing (no turn, no tombstone): answer `preview`, what the command would
    /// tombstone and keep, and why each matched.
    #[serde(default)]
    pub dry_run: bool,
    /// Let a free-text command take pinned memories too (an exact `entity | attribute` takes a
    /// pinned claim without it).
    #[serde(default)]
    pub include_pinned: bool,
}

/// What a forget did (`report`), or on a dry run would do (`preview`, `text`).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ForgetResponse {
    /// The authenticated principal the command is recorded under.
    pub principal: String,
    /// The report of the turn that recorded the command (`outcomes`: forgotten, with memory ids
    /// and why each matched; `notes`: what was kept and why). Absent on a dry run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schema::RememberReport>)]
    pub report: Option<serde_json::Value>,
    /// A dry run: what the command would tombstone and what it keeps, with why. Absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schema::ForgetPreview>)]
    pub preview: Option<serde_json::Value>,
    /// A dry run: the preview as people read it (as `mnemo forget --dry-run` prints it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// `POST /v1/namespaces/{ns}/erase`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EraseRequest {
    /// A memory id (`m42`), a turn id (`t17`), `entity | attribute` (every version of the
    /// claim), or with `subject` an entity name.
    pub what: String,
    /// `what` is a subject entity: every memory about it or naming it, and its name and values
    /// out of the raw turns.
    #[serde(default)]
    pub subject: bool,
    /// Why (required; kept in the content-free erasure record).
    pub reason: String,
    /// Write nothing: answer what would be erased.
    #[serde(default)]
    pub dry_run: bool,
}

/// What an erasure did (or with `dry_run`, would do).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct EraseResponse {
    /// The authenticated principal the erasure is recorded under.
    pub principal: String,
    /// The memories and turns erased, and the record kept (absent on a dry run).
    #[schema(value_type = crate::schema::EraseReport)]
    pub report: serde_json::Value,
    /// The report as people read it (as `mnemo erase` prints it).
    pub text: String,
}

/// A memory's history.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct WhyResponse {
    /// `memory`, `events`, `turns`, `superseded_by`.
    #[schema(value_type = crate::schema::WhyReport)]
    pub why: serde_json::Value,
    /// The history as people read it (as `mnemo why` prints it).
    pub text: String,
}

/// Query of `GET /v1/namespaces/{ns}/history`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct HistoryQuery {
    /// The claim, `entity | attribute` (URL-encoded: `Northwind%20Labs%20%7C%20lead%20time`).
    pub claim: String,
}

/// A claim's history.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryResponse {
    /// `claim`, `values` (oldest first), `notes`.
    pub history: mnemo_agent::claim_history::ClaimHistory,
    /// The history as people read it (as `mnemo history` prints it).
    pub text: String,
}

/// Query of `GET /v1/namespaces/{ns}/memories`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only memories after this one (`next_after` of the previous page, e.g. `m100`).
    pub after: Option<String>,
    /// Page size (1 to the server's max_page, default 100).
    #[param(minimum = 1)]
    pub limit: Option<usize>,
    /// Tombstoned memories too (default false).
    #[serde(default)]
    #[param(required = false)]
    pub include_tombstoned: bool,
}

/// Query of `GET /v1/namespaces/{ns}/export`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    /// Tombstoned memories too (default false).
    #[serde(default)]
    #[param(required = false)]
    pub include_tombstoned: bool,
}

/// One page of memories (no embedding vectors; `embedding_model` names the model).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ListResponse {
    /// The memories, by id.
    #[schema(value_type = Vec<crate::schema::MemoryRecord>)]
    pub memories: Vec<serde_json::Value>,
    /// Pass as `after` for the next page (`m100`); null on the last page.
    #[schema(example = "m100")]
    pub next_after: Option<String>,
}

/// A restore.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct RestoreResponse {
    /// The tombstoned memory restored (it stays tombstoned), e.g. `m3`.
    pub from: String,
    /// The new active memory (provenance model "restored from memory N").
    #[schema(value_type = crate::schema::MemoryRecord)]
    pub restored: serde_json::Value,
    /// Active memories of the same one-valued claim that the restore superseded.
    pub superseded: Vec<String>,
}

/// `/health` and `/ready`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// ok | ready | shutting_down.
    pub status: String,
    /// The store's highest revision (readiness only).
    pub store_rev: Option<u64>,
}

/// The body of `POST /v1/backup`: the store's backup file (for the SQLite store, a SQLite
/// database holding every namespace), as `mnemo backup create` writes it.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct BackupFile(pub Vec<u8>);

/// The headers of `POST /v1/backup` that describe the backup (`mnemo backup create`'s report).
pub mod backup_header {
    /// Memories in the backup (every namespace, tombstoned ones included).
    pub const MEMORIES: &str = "x-mnemo-backup-memories";
    /// Turns in the backup.
    pub const TURNS: &str = "x-mnemo-backup-turns";
    /// The backup's size in bytes (also `Content-Length`).
    pub const BYTES: &str = "x-mnemo-backup-bytes";
    /// The store's generation in the backup, when the store has an identity.
    pub const GENERATION: &str = "x-mnemo-backup-generation";
}

//! The typed shapes of the engine's reports as the HTTP API answers them: the tenant view of
//! each (no store-wide counters, embeddings as `{model, dims}`), for the OpenAPI document.
//!
//! The handlers serialise the engine's own types; these mirror what comes out, so that the
//! document types every response body. Tagged enums of the engine (a memory's status, a
//! decision, a lookup's outcome, a correction) are described as one object with a
//! discriminating field and the fields the variants carry, nullable (absent or null in the
//! variants that do not carry them). The server's tests read every route's real answer into
//! these types and back and compare ([`conforms`]), so a field the engine adds or drops fails
//! a test rather than the document going stale. Ids are the short ids a tenant reads: `m42` for
//! a memory, `t17` for a turn.
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// A structured claim `(entity, attribute, value)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Claim {
    /// The thing the claim is about.
    pub entity: String,
    /// Which property of it.
    pub attribute: String,
    /// The value, as written.
    pub value: String,
}

/// Which client produced something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClientKind {
    /// The deterministic offline fake.
    Fake,
    /// A live model endpoint.
    Live,
    /// Replayed from a cassette.
    Replay,
    /// No model: deterministic rules in code.
    Rules,
}

/// Which model answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ModelInfo {
    /// fake | live | replay | rules.
    pub client: ClientKind,
    /// The model string as echoed by the API.
    pub model: String,
}

/// Who produced a memory: from which turns, by which model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Provenance {
    /// The turns it came from (creation first, then reinforcements).
    pub turns: Vec<String>,
    /// Which client answered the extraction.
    pub client: ClientKind,
    /// The model string as echoed by the API.
    pub model: String,
}

/// A memory's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemoryKind {
    /// A fact (`entity | attribute | value`).
    Semantic,
    /// How to do something.
    Procedural,
    /// Something that happened.
    Episodic,
}

/// Active or tombstoned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemoryState {
    /// Recallable.
    Active,
    /// Forgotten (never hard-deleted).
    Tombstoned,
}

/// Whether a memory is active or tombstoned; a tombstone says why, when and by what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MemoryStatus {
    /// active | tombstoned.
    pub status: MemoryState,
    /// Tombstoned: why it was forgotten. Absent when active.
    #[serde(default)]
    pub reason: Option<String>,
    /// Tombstoned: when (milliseconds since the Unix epoch). Absent when active.
    #[serde(default)]
    pub at: Option<i64>,
    /// Tombstoned: the memory that superseded it, if any. Absent when active.
    #[serde(default)]
    pub superseded_by: Option<String>,
}

/// Which model embedded a memory, and how wide its vector is (the vector itself is not shown).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmbeddingInfo {
    /// The embedder's model id.
    pub model: String,
    /// The vector's width.
    pub dims: u64,
}

/// A memory as stored (the tenant view: no store-wide revision, no vector).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Memory {
    /// Id.
    pub id: String,
    /// Its namespace.
    pub namespace: String,
    /// Its kind.
    pub kind: MemoryKind,
    /// The text recalled into a pack.
    pub content: String,
    /// The structured claim, if it has one.
    pub claim: Option<Claim>,
    /// Normalised entity names it mentions.
    pub entities: Vec<String>,
    /// Importance in 0..=1.
    pub importance: f64,
    /// How often it was restated.
    pub reinforcements: u64,
    /// Distinct sources that corroborate it.
    pub sources: Vec<String>,
    /// Where it came from.
    pub provenance: Provenance,
    /// When inserted (milliseconds since the Unix epoch).
    pub created_at: i64,
    /// Last creation, reinforcement or confirmation (milliseconds since the Unix epoch).
    pub last_confirmed_at: i64,
    /// Last recalled into a pack (milliseconds since the Unix epoch), if ever.
    pub last_accessed_at: Option<i64>,
    /// Pinned memories are packed first.
    pub pinned: bool,
    /// Which model embedded it, if any.
    pub embedding: Option<EmbeddingInfo>,
    /// Active or tombstoned.
    pub status: MemoryStatus,
}

/// A memory as listed or exported: every field but the vector, the status fields inline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MemoryRecord {
    /// Id.
    pub id: String,
    /// Namespace.
    pub namespace: String,
    /// Kind.
    pub kind: MemoryKind,
    /// Content text.
    pub content: String,
    /// The structured claim, if any.
    pub claim: Option<Claim>,
    /// Normalised entities.
    pub entities: Vec<String>,
    /// Importance in 0..=1.
    pub importance: f64,
    /// Restatements.
    pub reinforcements: u64,
    /// Distinct corroborating sources.
    pub sources: Vec<String>,
    /// Where it came from.
    pub provenance: Provenance,
    /// When inserted (milliseconds since the Unix epoch).
    pub created_at: i64,
    /// Last creation, reinforcement or confirmation (milliseconds since the Unix epoch).
    pub last_confirmed_at: i64,
    /// Last recalled (milliseconds since the Unix epoch), if ever.
    pub last_accessed_at: Option<i64>,
    /// Pinned.
    pub pinned: bool,
    /// The model that embedded it, if any.
    pub embedding_model: Option<String>,
    /// active | tombstoned.
    pub status: MemoryState,
    /// Tombstoned: why it was forgotten. Absent when active.
    #[serde(default)]
    pub reason: Option<String>,
    /// Tombstoned: when (milliseconds since the Unix epoch). Absent when active.
    #[serde(default)]
    pub at: Option<i64>,
    /// Tombstoned: the memory that superseded it, if any. Absent when active.
    #[serde(default)]
    pub superseded_by: Option<String>,
}

/// A recorded turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Turn {
    /// Id.
    pub id: String,
    /// Its namespace.
    pub namespace: String,
    /// Who said it (over HTTP: the token's principal).
    pub source: String,
    /// When (milliseconds since the Unix epoch).
    pub at: i64,
    /// The raw text.
    pub text: String,
    /// The external id (an idempotency key is kept as `idempotency:KEY`), if any.
    pub external_id: Option<String>,
}

/// What happened to one extracted memory or command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// A new memory.
    Inserted,
    /// A duplicate: the existing memory was reinforced.
    Reinforced,
    /// A contradiction: the old memory was tombstoned and the new one inserted.
    Superseded,
    /// Tombstoned by a forget command.
    Forgotten,
    /// A forget command that designated nothing.
    NothingToForget,
    /// Not written: the turn's words do not support what the model extracted.
    Unsupported,
}

/// One outcome of a write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Outcome {
    /// What happened.
    pub kind: OutcomeKind,
    /// The memory written, reinforced or forgotten (null when nothing matched).
    pub memory: Option<String>,
    /// Memories tombstoned by this outcome.
    pub tombstoned: Vec<String>,
    /// Human-readable detail.
    pub detail: String,
}

/// One memory a forget command matched, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ForgetMatch {
    /// The memory (`m42`).
    pub id: Option<String>,
    /// Its content.
    pub content: String,
    /// Whether it is pinned.
    pub pinned: bool,
    /// Why it matched (`claim entity matches`, `claim entity and attribute match`, `its own
    /// words match: …`), or for a kept one why it is kept (`pinned …`, `only mentioned inside a
    /// web address: …`).
    pub why: String,
}

/// What a forget command would tombstone and what it keeps, each with why (a dry run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ForgetPreview {
    /// The command as read (`entity | attribute`, or the text).
    pub command: String,
    /// `claim` (an exact `entity | attribute`) or `text` (free text).
    pub by: String,
    /// Whether pinned memories may be taken by a free-text command.
    pub include_pinned: bool,
    /// What the command would tombstone.
    pub forget: Vec<ForgetMatch>,
    /// What it matched and leaves active, with why (pinned, only mentioned).
    pub kept: Vec<ForgetMatch>,
}

/// What became of a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The model extracted memories or commands from it (`outcomes` says what each did).
    Extracted,
    /// Recorded, and the model extracted nothing from it: no memory was written.
    NothingExtracted,
    /// An idempotency key already used: the turn first recorded, nothing written again.
    AlreadyRecorded,
}

/// What a remember (or a forget) wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RememberReport {
    /// What became of the turn (servers before it was reported may leave it out).
    #[serde(default)]
    pub status: Option<TurnStatus>,
    /// The recorded turn.
    pub turn: Turn,
    /// One outcome per extracted memory or command, in order.
    pub outcomes: Vec<Outcome>,
    /// Notes: clamps, ignored lines, a reused idempotency key, nothing extracted.
    pub notes: Vec<String>,
    /// Which model extracted.
    pub model: ModelInfo,
}

/// Why a candidate was or was not packed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceReason {
    /// Pinned, packed first.
    Pinned,
    /// Packed within its kind's quota.
    WithinQuota,
    /// Packed from quota other kinds left unused.
    QuotaFlow,
    /// Excluded: it did not fit the global budget.
    Budget,
    /// Excluded: its kind's quota was used.
    Quota,
    /// Excluded: tombstoned.
    Tombstoned,
    /// Excluded: salience below the decay threshold.
    BelowThreshold,
}

/// Absolute relevance evidence of a candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RelevanceEvidence {
    /// idf-weighted share of the query's content terms the memory holds, 0..=1.
    pub lexical: f64,
    /// The query–memory cosine as a z-score (null: no vector on one side, or no calibration).
    pub dense_z: Option<f64>,
    /// `dense_z` mapped to 0..=1 (null with it).
    pub dense: Option<f64>,
    /// The query names the memory's claim entity or one of its entities.
    pub entity: bool,
    /// What the assessor reads, 0..=1.
    pub absolute: f64,
}

/// One candidate of the trace, included or excluded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TraceEntry {
    /// The memory.
    pub id: String,
    /// Its kind.
    pub kind: MemoryKind,
    /// Pinned.
    pub pinned: bool,
    /// The fused rank score, 0..=1 (relative to the other candidates).
    pub relevance: f64,
    /// Absolute relevance evidence; null where recall did not hold the memory's row.
    #[serde(default)]
    pub evidence: Option<RelevanceEvidence>,
    /// Salience.
    pub salience: f64,
    /// relevance × salience.
    pub score: f64,
    /// Token cost.
    pub tokens: u64,
    /// Included?
    pub included: bool,
    /// Why.
    pub reason: TraceReason,
    /// Human-readable detail.
    pub detail: String,
}

/// One packed memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PackItem {
    /// The memory.
    pub memory: Memory,
    /// Its score.
    pub score: f64,
    /// Its token cost.
    pub tokens: u64,
}

/// What recall packed under the budget, with the trace of every candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Pack {
    /// Packed memories in final rank order (pinned first).
    pub items: Vec<PackItem>,
    /// Every candidate, included or excluded, in rank order.
    pub trace: Vec<TraceEntry>,
    /// The budget used for packing (after any clamp).
    pub budget: u64,
    /// Tokens used.
    pub used: u64,
    /// Notes (e.g. a clamped budget).
    pub notes: Vec<String>,
}

/// act | escalate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DecisionKind {
    /// Trust is at or above the threshold.
    Act,
    /// Below the threshold: hand to a human, with reasons.
    Escalate,
}

/// The assessor's decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Decision {
    /// act | escalate.
    pub decision: DecisionKind,
    /// Escalate: why. Absent on act.
    #[serde(default)]
    pub reasons: Option<Vec<String>>,
}

/// The grade of one memory in a pack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MemoryGrade {
    /// The memory.
    pub id: String,
    /// Trust in 0..=1.
    pub trust: f64,
    /// Whether it bears on the decision.
    pub load_bearing: bool,
    /// How the trust was reached.
    pub basis: String,
}

/// A stale value caught by a system of record and replaced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Substitution {
    /// The stale memory (now tombstoned).
    pub stale: String,
    /// The corrected memory.
    pub fresh: String,
    /// The source that corrected it.
    pub source: String,
    /// Old value.
    pub old_value: String,
    /// New value.
    pub new_value: String,
}

/// How a system-of-record lookup ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LookupOutcome {
    /// The source holds a value (`value`).
    Held,
    /// The source does not hold the claim.
    NotHeld,
    /// No answer within the timeout.
    Timeout,
    /// The source failed (`message`).
    Error,
    /// The source answered something that cannot be a value (`message`).
    Garbage,
}

/// One lookup the assessor made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GroundingLookup {
    /// The memory whose claim was looked up.
    pub memory: String,
    /// The claim's entity.
    pub entity: String,
    /// The claim's attribute.
    pub attribute: String,
    /// The grounder's source name.
    pub source: String,
    /// How long it took, in milliseconds.
    pub took_ms: f64,
    /// How it ended.
    pub outcome: LookupOutcome,
    /// Held: the value the source holds. Absent otherwise.
    #[serde(default)]
    pub value: Option<String>,
    /// Error or garbage: what was wrong. Absent otherwise.
    #[serde(default)]
    pub message: Option<String>,
}

/// supersede | confirm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CorrectionOp {
    /// Supersede the memory's value with the source's.
    Supersede,
    /// Confirm the memory.
    Confirm,
}

/// A write-back the assessor asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Correction {
    /// supersede | confirm.
    pub op: CorrectionOp,
    /// The memory.
    pub memory: String,
    /// Supersede: the fresh value. Absent on confirm.
    #[serde(default)]
    pub value: Option<String>,
    /// The system of record.
    pub source: String,
}

/// The assessment of a pack: grades, lookups, substitutions, trust, decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Assessment {
    /// The final pack (corrected memories in place).
    pub pack: Pack,
    /// Pack trust = min over load-bearing memories.
    pub trust: f64,
    /// The threshold used.
    pub threshold: f64,
    /// Act or escalate.
    pub decision: Decision,
    /// Per-memory grades.
    pub grades: Vec<MemoryGrade>,
    /// Grounding substitutions made.
    pub substitutions: Vec<Substitution>,
    /// Every system-of-record lookup made.
    pub lookups: Vec<GroundingLookup>,
    /// The write-backs asked for.
    pub corrections: Vec<Correction>,
    /// `[entity, attribute]` the assessor took the task to be about when the task named none;
    /// null when the task named its claim or the query names none.
    #[schema(min_items = 2, max_items = 2)]
    pub inferred_about: Option<Vec<String>>,
}

/// A value to act on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ActOn {
    /// The memory holding it.
    pub memory: String,
    /// Entity.
    pub entity: String,
    /// Attribute.
    pub attribute: String,
    /// The value.
    pub value: String,
    /// How its trust was reached.
    pub basis: String,
}

/// A load-bearing memory below the threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WeakMemory {
    /// The memory.
    pub memory: String,
    /// Its content.
    pub content: String,
    /// Its trust.
    pub trust: f64,
    /// Why its trust is what it is.
    pub why: String,
}

/// The decision and what it rests on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Verdict {
    /// act | escalate.
    pub decision: DecisionKind,
    /// Pack trust.
    pub trust: f64,
    /// The threshold.
    pub threshold: f64,
    /// ACT: the value(s) to act on. Empty on ESCALATE.
    pub act_on: Vec<ActOn>,
    /// ESCALATE: load-bearing memories below the threshold, and why.
    pub weak: Vec<WeakMemory>,
    /// ESCALATE: every reason.
    pub reasons: Vec<String>,
}

/// One agent turn: what the message wrote, what was recalled, how it was assessed, what the
/// agent does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AgentTurn {
    /// What the message wrote to memory, if it was remembered.
    pub remembered: Option<RememberReport>,
    /// The pack as recalled (before grounding).
    pub pack: Pack,
    /// The assessment; `assessment.pack` is the final pack.
    pub assessment: Assessment,
    /// What the agent does: the plan it acts on, or the escalation.
    pub action: String,
    /// The decision, the value(s) to act on, the weak memories.
    pub verdict: Verdict,
    /// ESCALATE: the escalation recorded (or the open one on the same task, reused) and where
    /// it was sent. Absent on ACT, and when recording is off.
    #[serde(default)]
    pub escalation: Option<TurnEscalation>,
    /// ACT (or a plan refused, which escalates): the model's plan from the assessed pack and
    /// the faithfulness check it passed or failed. Absent on ESCALATE before planning.
    #[serde(default)]
    pub plan: Option<CheckedPlan>,
}

/// A memory a plan uses, and the value it takes from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PlanUse {
    /// The memory (`m42`).
    pub memory: String,
    /// The value the plan states for the memory's claim (absent: it uses the content).
    #[serde(default)]
    pub value: Option<String>,
}

/// A plan, and the model that made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Plan {
    /// The answer to the task.
    pub answer: String,
    /// The steps to take, in order.
    pub steps: Vec<String>,
    /// The memories it uses, with their values.
    pub uses: Vec<PlanUse>,
    /// Who planned.
    pub model: ModelInfo,
}

/// A plan and what the faithfulness check found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CheckedPlan {
    /// The plan as the model answered it.
    pub plan: Plan,
    /// It uses only what the pack holds, with the pack's values.
    pub faithful: bool,
    /// Why it was refused (empty when faithful).
    pub refused: Vec<String>,
}

/// The last delivery of an escalation to one sink.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Delivery {
    /// The sink (`webhook https://host/path`, `jsonl /path/file.jsonl`, or its `name`).
    pub sink: String,
    /// Whether the sink has it.
    pub delivered: bool,
    /// Attempts made in all.
    pub attempts: u64,
    /// When the last round ended (milliseconds since the Unix epoch).
    pub at: i64,
    /// The last HTTP status a webhook answered. Absent otherwise.
    #[serde(default)]
    pub status: Option<u16>,
    /// Why it was not delivered. Absent when delivered.
    #[serde(default)]
    pub error: Option<String>,
}

/// What an escalating turn did about its escalation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TurnEscalation {
    /// The escalation (`e3`); absent when it could not be recorded (`note` says why).
    #[serde(default)]
    pub id: Option<String>,
    /// An open escalation on the same task was reused instead of opening another.
    pub reused: bool,
    /// The deliveries this turn made.
    pub deliveries: Vec<Delivery>,
    /// What happened, in words.
    pub note: String,
}

/// The task an escalation was raised for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Task {
    /// The query (the agent turn's message).
    pub query: String,
    /// `[entity, attribute]` the task named; null when it named none.
    #[schema(min_items = 2, max_items = 2)]
    pub about: Option<Vec<String>>,
}

/// The claim an escalation is about.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EscalationClaim {
    /// Entity.
    pub entity: String,
    /// Attribute.
    pub attribute: String,
}

/// open | answered | dismissed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EscalationStatus {
    /// Waiting for a human.
    Open,
    /// A human answered; the answer was recorded as a turn.
    Answered,
    /// A human dismissed it; nothing was recorded.
    Dismissed,
}

/// How a human's answer was turned into the turn recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerForm {
    /// The value of the escalation's claim, alone or in a sentence stating it: recorded as
    /// `[SEM] entity | attribute | value`.
    Value,
    /// Tagged lines: recorded as written.
    Tagged,
    /// Prose: recorded as written, after a line naming what it answers.
    Prose,
}

/// A human's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EscalationAnswer {
    /// The answer as the human wrote it.
    pub text: String,
    /// Who answered: the principal the turn was recorded from (`human:NAME`).
    pub by: String,
    /// When (milliseconds since the Unix epoch).
    pub at: i64,
    /// The turn it was recorded as (`t17`).
    pub turn: String,
    /// How it was read.
    pub form: AnswerForm,
    /// The value recorded for the claim (form `value`). Absent otherwise.
    #[serde(default)]
    pub value: Option<String>,
    /// The text of the turn recorded.
    pub recorded: String,
}

/// A dismissal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EscalationDismissal {
    /// Who dismissed it (`human:NAME`).
    pub by: String,
    /// When (milliseconds since the Unix epoch).
    pub at: i64,
}

/// An escalation: what the agent asked a human, why, of which memories, and what became of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Escalation {
    /// Its id in its namespace (`e3`).
    #[schema(example = "e3")]
    pub id: String,
    /// Its namespace.
    pub namespace: String,
    /// The task that escalated.
    pub task: Task,
    /// The claim it is about, when known. Absent otherwise.
    #[serde(default)]
    pub claim: Option<EscalationClaim>,
    /// Why the agent escalated.
    pub reasons: Vec<String>,
    /// Pack trust.
    pub trust: f64,
    /// The threshold it missed.
    pub threshold: f64,
    /// The memories of the assessed pack (`m42`).
    pub pack: Vec<String>,
    /// The load-bearing memories below the threshold, and why.
    pub weak: Vec<WeakMemory>,
    /// When it was opened (milliseconds since the Unix epoch).
    pub created_at: i64,
    /// How many agent turns raised it.
    pub raised: u64,
    /// When a turn last raised it (milliseconds since the Unix epoch).
    pub last_raised_at: i64,
    /// open | answered | dismissed.
    pub status: EscalationStatus,
    /// The answer, once answered. Absent otherwise.
    #[serde(default)]
    pub answer: Option<EscalationAnswer>,
    /// The dismissal, once dismissed. Absent otherwise.
    #[serde(default)]
    pub dismissal: Option<EscalationDismissal>,
    /// The last delivery to each configured sink.
    pub deliveries: Vec<Delivery>,
}

/// An answered escalation: the record, and the turn its answer was recorded as.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AnsweredEscalation {
    /// The escalation, now answered.
    pub escalation: Escalation,
    /// What recording the answer did; null when it was recorded but not extracted (`notes`
    /// says so).
    pub remembered: Option<RememberReport>,
    /// What to know: an answer kept as prose, a turn not extracted, an answer found recorded.
    pub notes: Vec<String>,
}

/// One event of a memory's history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MemoryEvent {
    /// The memory.
    pub memory: String,
    /// When (milliseconds since the Unix epoch).
    pub at: i64,
    /// created | reinforced | confirmed | tombstoned.
    pub event: String,
    /// The turn involved, if any.
    pub turn: Option<String>,
    /// Details: source, reason, superseded_by, score.
    pub detail: String,
}

/// A memory and everything that happened to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WhyReport {
    /// The memory as it is now.
    pub memory: Memory,
    /// Its history, oldest first.
    pub events: Vec<MemoryEvent>,
    /// The turns it came from.
    pub turns: Vec<Turn>,
    /// The memory that superseded it, if any.
    pub superseded_by: Option<Memory>,
    /// The erasure that emptied it, if it was erased.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased: Option<ErasureRecord>,
}

/// One row an erasure changed, with its content hash before and after (hex).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErasedRow {
    /// `event` or `turn`.
    pub entry: String,
    /// The event's seq or the turn's id.
    pub id: i64,
    /// Its content hash before the erasure.
    pub before: String,
    /// Its content hash after.
    pub after: String,
}

/// The content-free record an erasure keeps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErasureRecord {
    /// The namespace.
    pub namespace: String,
    /// The erasure's id.
    pub id: i64,
    /// When (milliseconds since the Unix epoch).
    pub at: i64,
    /// Why.
    pub reason: String,
    /// Who asked.
    pub by: Option<String>,
    /// `memory`, `turn`, `claim` or `subject`.
    pub target: String,
    /// The memories erased (ids as shown, e.g. `m42`).
    pub memories: Vec<String>,
    /// The turns erased whole (ids as shown, e.g. `t17`).
    pub turns: Vec<String>,
    /// The turns the erased values were cut out of.
    pub redacted: Vec<String>,
    /// Every row changed.
    pub rows: Vec<ErasedRow>,
}

/// A memory an erasure takes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErasedMemory {
    /// The memory (its id as remember and list show it, e.g. `m42`).
    pub id: String,
    /// Its content before: on a dry run only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Whether it was active (else: a tombstoned version).
    pub active: bool,
    /// Why it is taken: `named`, `a version of the claim`, `about the subject`, `names the
    /// subject`, or `holds an erased value`.
    pub why: String,
}

/// What an erasure did, or would do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EraseReport {
    /// The target in words.
    pub target: String,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// The memories erased.
    pub memories: Vec<ErasedMemory>,
    /// The turns erased whole (ids as shown, e.g. `t17`).
    pub turns: Vec<String>,
    /// The turns the erased values are cut out of.
    pub redacted: Vec<String>,
    /// Memories derived from an erased turn that are not erased.
    pub derived: Vec<String>,
    /// The record kept (absent on a dry run).
    pub erasure: Option<ErasureRecord>,
}

/// Whether `value` is exactly what type `T` describes: it reads into `T`, and `T` written back
/// is `value` again, but for fields absent on one side and null on the other (the document
/// declares such fields not required and nullable). An error names the first difference.
pub fn conforms<T: DeserializeOwned + Serialize>(value: &Value) -> Result<(), String> {
    let typed: T = serde_json::from_value(value.clone())
        .map_err(|e| format!("does not read as {}: {e}", std::any::type_name::<T>()))?;
    let back = serde_json::to_value(&typed).map_err(|e| format!("cannot be written back: {e}"))?;
    first_difference(&without_nulls(value), &without_nulls(&back), "$")
        .map_or(Ok(()), |d| Err(format!("{} does not describe it: {d}", std::any::type_name::<T>())))
}

fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().filter(|(_, x)| !x.is_null()).map(|(k, x)| (k.clone(), without_nulls(x))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

fn first_difference(served: &Value, typed: &Value, at: &str) -> Option<String> {
    match (served, typed) {
        (Value::Object(a), Value::Object(b)) => {
            if let Some(k) = a.keys().find(|k| !b.contains_key(*k)) {
                return Some(format!("{at}.{k} is served but not in the type"));
            }
            if let Some(k) = b.keys().find(|k| !a.contains_key(*k)) {
                return Some(format!("{at}.{k} is in the type but not served"));
            }
            a.iter().find_map(|(k, x)| first_difference(x, &b[k], &format!("{at}.{k}")))
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().find_map(|(i, (x, y))| first_difference(x, y, &format!("{at}[{i}]")))
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => None,
        (a, b) if a == b => None,
        (a, b) => Some(format!("{at} is {a} served, {b} typed")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_served_field_the_type_lacks_is_named() {
        let served = json!({"id": "t1", "namespace": "a", "source": "ops", "at": 5, "text": "x", "extra": true});
        let e = conforms::<Turn>(&served).unwrap_err();
        assert!(e.contains("$.extra is served but not in the type"), "{e}");
    }

    #[test]
    fn absent_and_null_are_the_same_and_a_wrong_type_is_refused() {
        let active = json!({"status": "active"});
        assert_eq!(conforms::<MemoryStatus>(&active), Ok(()));
        let tomb = json!({"status": "tombstoned", "reason": "forgotten", "at": 7, "superseded_by": null});
        assert_eq!(conforms::<MemoryStatus>(&tomb), Ok(()));
        let wrong = json!({"status": "deleted"});
        assert!(conforms::<MemoryStatus>(&wrong).unwrap_err().contains("does not read as"));
    }
}

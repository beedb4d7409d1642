//! The door rules, once: what `remember`, `recall` and the agent `turn` take, checked here. The
//! CLI, HTTP and MCP translate their transport into these inputs (field names are the same at
//! every door: `text`, `source`, `idempotency_key`, `at`; `query`, `budget`, `mode`, `about`,
//! `raw`, `detail`) and the answers back; none of them holds a rule of its own. A stated time
//! is parsed by [`parse_time`] at every door; a conversation is remembered message by message
//! by [`Runtime::remember_messages`].
use serde::{Deserialize, Serialize};

use mnemo_contract::erase::EraseTarget;
use mnemo_contract::{ClaimKey, CoreError, ForgetCommand, Namespace, Pack, SearchMode, Task, Timestamp};
use mnemo_core::engine::{ForgetOptions, ForgetPreview, RecallFilter, RecallOptions, RememberReport};

use crate::agent_view::{AgentRecall, Detail};
use crate::error::AgentError;
use crate::runtime::{AgentTurn, Runtime};

/// Remember a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RememberInput {
    /// Who said it, as the door established it (the operator, a declared source, a token's
    /// principal).
    pub source: String,
    /// The turn's text: tagged lines for the offline model, or prose.
    pub text: String,
    /// Makes the write idempotent in its namespace (see [`Runtime::remember_idempotent`]).
    pub idempotency_key: Option<String>,
    /// When it was said (None: now, by the runtime's clock). At most the configured skew
    /// (`[time] max_future_skew_secs`, default five minutes; see [`future_skew`]) after the clock, and never before the namespace's last turn (time only moves forward).
    pub at: Option<Timestamp>,
}

/// One message of a conversation, as chat APIs give them: remembered as its own turn
/// ([`Runtime::remember_messages`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who said it: `user` (the door's own source), or another role (`assistant`, `system`,
    /// `tool`), which counts as a source by the local door rule ([`operator_source`]).
    pub role: String,
    /// What was said.
    pub content: String,
    /// When it was said (None: the call's `at`, else now).
    #[serde(default)]
    pub timestamp: Option<Timestamp>,
}

/// How far a stated time may run ahead of the clock: `[time] max_future_skew_secs` (default
/// five minutes). Time only moves forward in a namespace, so a turn far in the future would
/// refuse every later one. One rule for every door (HTTP, MCP, Python) and the CLI's `--at`.
pub fn future_skew(config: &crate::Config) -> std::time::Duration {
    config.max_future_skew()
}

/// Whether `at` runs further ahead of `now` than `skew`; if so, the refusal (naming the time,
/// the clock and the fixes) with `what` (`at`, `--at`) in front and `fix` (the caller's own
/// way round, e.g. `--allow-future`) said first.
pub fn too_far_ahead(
    what: &str,
    at: Timestamp,
    now: Timestamp,
    skew: std::time::Duration,
    fix: &str,
) -> Option<String> {
    let skew_ms = i64::try_from(skew.as_millis()).unwrap_or(i64::MAX);
    (at.millis() > now.millis().saturating_add(skew_ms)).then(|| {
        format!(
            "{what} {at} is more than {}s ahead of the clock ({now}); time only moves forward in a namespace, so a \
             turn that far ahead would refuse every later one until the clock catches up — {fix}raise [time] \
             max_future_skew_secs if the clock is behind",
            skew.as_secs()
        )
    })
}

/// A time a caller wrote that is neither a date nor an RFC 3339 time; the message says what
/// is expected (a door puts the field's name before it: `--at`, `at`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{given:?} {what}; expected YYYY-MM-DD (midnight UTC, e.g. 2026-05-01) or RFC 3339 (e.g. 2026-05-01T09:00:00Z)"
)]
pub struct BadTime {
    /// The text as given.
    pub given: String,
    /// What is wrong with it.
    pub what: &'static str,
}

/// A time as every door takes it: RFC 3339, or a date alone (`2026-05-01` is that day's
/// midnight UTC).
pub fn parse_time(t: &str) -> Result<Timestamp, BadTime> {
    let s = t.trim();
    let is_date = s.len() == 10
        && s.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() });
    let full = if is_date { format!("{s}T00:00:00Z") } else { s.to_string() };
    Timestamp::parse_rfc3339(&full).map_err(|_| BadTime {
        given: t.to_string(),
        what: if is_date { "is not a calendar date" } else { "is neither a date nor an RFC 3339 time" },
    })
}

/// Recall (and, unless `raw`, ground, grade and decide).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecallInput {
    /// What to recall.
    pub query: String,
    /// Token budget of the pack (None: the config's; above the engine's maximum: clamped, with
    /// a note).
    pub budget: Option<usize>,
    /// Retrieval signal(s) (None: the config's).
    pub mode: Option<SearchMode>,
    /// The claim the task is about.
    pub about: Option<ClaimKey>,
    /// Plain retrieval: no grounding, no grade, no decision.
    pub raw: bool,
    /// What the answer holds.
    pub detail: Detail,
    /// Recall what memory held at this past system time instead of now: memories recorded
    /// later are absent, those forgotten later are present (docs/time.md).
    pub as_of: Option<Timestamp>,
    /// Only episodes recorded at or after this time (facts and rules are not windowed).
    pub since: Option<Timestamp>,
    /// Only episodes recorded before this time.
    pub until: Option<Timestamp>,
    /// Recall what was true in the world at this time, by the validity intervals the turns
    /// stated (docs/time.md); with `as_of`, by what memory knew then.
    pub valid_at: Option<Timestamp>,
}

/// The agent turn: remember a message, then recall, assess and decide with it as the query.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnInput {
    /// Who said it.
    pub source: String,
    /// The message.
    pub text: String,
    /// The claim the task is about.
    pub about: Option<ClaimKey>,
    /// Token budget of the pack.
    pub budget: Option<usize>,
}

/// A recall as answered.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RecallAnswer {
    /// `detail = compact` (the default): what an agent reads.
    Compact(Box<AgentRecall>),
    /// `detail = full`, assessed: the agent turn (pack with its trace, assessment, verdict).
    Full(Box<AgentTurn>),
    /// `detail = full` with `raw`: the pack with its trace.
    FullRaw(Box<Pack>),
}

/// Forget what a command designates, or (`dry_run`) say what it would forget.
#[derive(Clone, Debug, PartialEq)]
pub struct ForgetInput {
    /// Who asks, as the door established it.
    pub source: String,
    /// The command, parsed by the door ([`ForgetCommand::parse_arg`]) so that a door says a
    /// bad one in its own way.
    pub command: ForgetCommand,
    /// Write nothing (no turn, no tombstone): answer what the command would tombstone and
    /// keep, and why each matched.
    pub dry_run: bool,
    /// Let a free-text command take pinned memories too (an exact `entity | attribute` takes a
    /// pinned claim without it).
    pub include_pinned: bool,
}

/// What `erase` names, as a door reads it (ids not yet found in the namespace).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EraseWhat {
    /// A memory (`m42`, bare digits, or a stored id).
    Memory(mnemo_contract::IdRef),
    /// A raw turn (`t17`).
    Turn(mnemo_contract::IdRef),
    /// Every version of a claim (`entity | attribute`).
    Claim(ClaimKey),
    /// Every memory and turn of a subject entity.
    Subject(String),
}

impl EraseWhat {
    /// Read a door's argument: with `subject`, an entity name; else `entity | attribute`, a
    /// turn id (`t17`) or a memory id (`m42` or bare digits).
    pub fn parse_arg(arg: &str, subject: bool) -> Result<EraseWhat, String> {
        let a = arg.trim();
        if a.is_empty() {
            return Err("erase needs what to erase: a memory id (m42), a turn id (t17), `entity | attribute`, or --subject ENTITY".into());
        }
        if subject {
            return Ok(EraseWhat::Subject(a.to_string()));
        }
        if a.contains('|') {
            return a.parse::<ClaimKey>().map(EraseWhat::Claim).map_err(|e| e.to_string());
        }
        match a.parse::<mnemo_contract::IdRef>() {
            Ok(r @ mnemo_contract::IdRef::Short { kind: Some(mnemo_contract::IdKind::Turn), .. }) => {
                Ok(EraseWhat::Turn(r))
            }
            Ok(r) => Ok(EraseWhat::Memory(r)),
            Err(_) => Err(format!(
                "{a:?} is not a memory id (m42), a turn id (t17) or `entity | attribute`; to erase a subject entity, \
                 name it with --subject (subject: true)"
            )),
        }
    }
}

/// Erase for good (see docs/erasure.md): irreversible, unlike forget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EraseInput {
    /// What.
    pub what: EraseWhat,
    /// Why (required; kept in the erasure record).
    pub reason: String,
    /// Only say what would be erased.
    pub dry_run: bool,
    /// Who asks, as the door established it (kept in the record).
    pub by: String,
}

/// A forget as answered.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ForgetAnswer {
    /// What the command did: the report of the turn that recorded it.
    Forgotten(Box<RememberReport>),
    /// A dry run: what it would tombstone and keep, and why.
    Preview(ForgetPreview),
}

/// The principal a local door (the CLI, an MCP server on stdio) speaks for: the operator who
/// started it.
pub const OPERATOR: &str = "user";

/// The source a label given at a local door counts as: itself when declared in config
/// (`[sources] declared`) or the operator's own name, else the operator — with a note saying so
/// (one person's word is one source, however many labels it comes under). HTTP needs no such
/// rule: a token's principal is the source.
pub fn operator_source(label: Option<&str>, declared: &[String]) -> (String, Option<String>) {
    let label = label.map(str::trim).unwrap_or("");
    if label.is_empty() || label == OPERATOR || declared.iter().any(|d| d == label) {
        let s = if label.is_empty() { OPERATOR } else { label };
        return (s.to_string(), None);
    }
    (
        OPERATOR.to_string(),
        Some(format!(
            "source \"{label}\" is not declared in config ([sources] declared); it is the operator's word and \
             counts as \"{OPERATOR}\" (one source, however many labels)"
        )),
    )
}

/// Who answers or dismisses an escalation at a door: the door's own principal (a token's over
/// HTTP, the operator over MCP and the CLI's `--by` aside), never a name a caller picks — a
/// human's answer is memory with the highest standing. `by` may be left out or name that
/// principal (with or without `human:`); any other name is refused with what to send instead.
pub fn answerer(by: Option<&str>, principal: &str) -> Result<String, String> {
    match by.map(str::trim) {
        None | Some("") => Ok(principal.to_string()),
        Some(b) if b == principal || b.strip_prefix("human:") == Some(principal) => Ok(principal.to_string()),
        Some(b) => Err(format!(
            "an answer here is the word of \"{principal}\"; `by` = {b:?} names someone else (leave it out, or name \"{principal}\")"
        )),
    }
}

fn invalid(message: impl Into<String>) -> AgentError {
    AgentError::Core(CoreError::InvalidInput(message.into()))
}

/// A chat role: one word (letters, digits, `_`, `-`, `.`, `:`), at most 64 bytes.
fn is_role(role: &str) -> bool {
    role.len() <= 64
        && role.starts_with(|c: char| c.is_ascii_alphabetic())
        && role.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

fn non_empty(field: &str, text: &str) -> Result<(), AgentError> {
    if text.trim().is_empty() {
        return Err(invalid(format!("{field} must not be empty")));
    }
    Ok(())
}

impl Runtime {
    /// Remember `input` in `ns`: the text must not be empty; an idempotency key is applied
    /// under one lock per runtime (a look-up and its write are never split by another door's
    /// write of the same key).
    pub async fn remember_input(&self, ns: &Namespace, input: &RememberInput) -> Result<RememberReport, AgentError> {
        non_empty("text", &input.text)?;
        if let Some(at) = input.at {
            self.not_too_far_ahead("at", at)?;
        }
        match input.idempotency_key.as_deref() {
            None => self.remember_turn_at(ns, &input.source, &input.text, None, input.at).await,
            Some(key) => {
                let _once = self.idempotency_lock().lock().await;
                self.remember_idempotent_at(ns, &input.source, &input.text, Some(key), input.at).await
            }
        }
    }

    /// Remember a conversation in `ns`: each message its own turn, in order. A message's time is
    /// its `timestamp`, else `at`, else now (the clock's time when the call began, the same for
    /// every such message: the order checked is the order written); role `user` is said by `source_of_user` (the
    /// door's own source), any other role counts as [`operator_source`] says (a declared label
    /// as itself, else the operator, with a note on that message's report). Everything is
    /// checked before the first turn is written: an empty list, an empty content, a role that
    /// is not one word, a stated time further ahead of the clock than the configured skew ([`future_skew`]), or times that go
    /// backwards are refused naming the message. With an idempotency key, message `i` is
    /// written under `"{key}#{i}"`: a retry of a call that failed half-way writes only what is
    /// missing. A failure while writing (a model error) returns it; the messages before it
    /// stay written.
    pub async fn remember_messages(
        &self,
        ns: &Namespace,
        source_of_user: &str,
        messages: &[ChatMessage],
        idempotency_key: Option<&str>,
        at: Option<Timestamp>,
    ) -> Result<Vec<RememberReport>, AgentError> {
        if messages.is_empty() {
            return Err(invalid("messages must not be empty: send at least one {role, content}"));
        }
        let key = match idempotency_key.map(str::trim) {
            Some("") => return Err(invalid("the idempotency key must not be empty")),
            k => k,
        };
        if let Some(at) = at {
            self.not_too_far_ahead("at", at)?;
        }
        let declared = self.config().declared_sources();
        let now = self.engine().now();
        let mut planned = Vec::with_capacity(messages.len());
        let mut last: Option<(usize, Timestamp)> = None;
        for (i, m) in messages.iter().enumerate() {
            let role = m.role.trim();
            if !is_role(role) {
                return Err(invalid(format!(
                    "message {i}: role {:?} is not a role: one word such as user, assistant, system or tool",
                    m.role
                )));
            }
            if m.content.trim().is_empty() {
                return Err(invalid(format!("message {i}: content must not be empty")));
            }
            if let Some(t) = m.timestamp {
                self.not_too_far_ahead(&format!("message {i}: timestamp"), t)?;
            }
            // A message without a stated time is written at this one `now`, not at the clock's
            // time when its turn comes: what is checked here is what is written.
            let when = m.timestamp.or(at).unwrap_or(now);
            if let Some((j, before)) = last.filter(|(_, before)| when < *before) {
                return Err(invalid(format!(
                    "message {i} is at {when}, before message {j} at {before}: messages are remembered in order, \
                     and time only moves forward in a namespace"
                )));
            }
            last = Some((i, when));
            let (source, note) = if role.eq_ignore_ascii_case(OPERATOR) {
                (source_of_user.to_string(), None)
            } else {
                operator_source(Some(role), &declared)
            };
            planned.push((source, note, when));
        }
        let _once = match key {
            Some(_) => Some(self.idempotency_lock().lock().await),
            None => None,
        };
        let mut reports = Vec::with_capacity(messages.len());
        for (i, (m, (source, note, when))) in messages.iter().zip(planned).enumerate() {
            let mut r = match key {
                Some(k) => {
                    let k = format!("{k}#{i}");
                    self.remember_idempotent_at(ns, &source, &m.content, Some(&k), Some(when)).await?
                }
                None => self.remember_turn_at(ns, &source, &m.content, None, Some(when)).await?,
            };
            r.notes.extend(note);
            reports.push(r);
        }
        Ok(reports)
    }

    /// A stated time at most the configured skew ([`future_skew`]) after the runtime's clock.
    fn not_too_far_ahead(&self, what: &str, at: Timestamp) -> Result<(), AgentError> {
        let now = self.engine().now();
        match too_far_ahead(what, at, now, future_skew(self.config()), "state the time it was said, or ") {
            Some(m) => Err(invalid(m)),
            None => Ok(()),
        }
    }

    /// A recall at a time (the runtime's clock) more than `tolerance` before the namespace's
    /// last turn is refused, naming both times: it would see memories before they existed (what
    /// was known at a past time is an as-of recall, `RecallInput::as_of`). The doors allow the
    /// configured skew ([`future_skew`]: a turn may be stated that far ahead of the clock, and
    /// a recall right after it must still answer); a stated `--at` allows none. Recall never
    /// moves an access time back either way (the store keeps the later one).
    pub async fn check_recall_time(&self, ns: &Namespace, tolerance: std::time::Duration) -> Result<(), AgentError> {
        let now = self.engine().now();
        let tolerance_ms = i64::try_from(tolerance.as_millis()).unwrap_or(i64::MAX);
        match self.engine().latest_turn_at(ns).await? {
            Some(last) if now.millis().saturating_add(tolerance_ms) < last.millis() => Err(invalid(format!(
                "a recall at {now} is before the last turn of namespace {ns} at {last}: it would see memories \
                 before they existed — recall without --at, or at {last} or later; what memory held at an \
                 earlier time is an as-of recall (`--as-of`, `as_of`)"
            ))),
            _ => Ok(()),
        }
    }

    /// Recall `input` in `ns`.
    pub async fn recall_input(&self, ns: &Namespace, input: &RecallInput) -> Result<RecallAnswer, AgentError> {
        self.check_recall_time(ns, future_skew(self.config())).await?;
        if input.raw && input.about.is_some() {
            return Err(invalid("`about` needs an assessed recall: drop `raw`, or drop `about` for plain retrieval"));
        }
        let opts = RecallOptions { budget: input.budget, mode: input.mode, ..RecallOptions::default() };
        let filter =
            RecallFilter { as_of: input.as_of, since: input.since, until: input.until, valid_at: input.valid_at };
        if filter.is_set() {
            return self.recall_filtered_input(ns, input, &opts, filter).await;
        }
        if input.raw {
            let pack = self.engine().recall(ns, &input.query, &opts).await?;
            self.counters.recalled_raw();
            return Ok(match input.detail {
                Detail::Compact => RecallAnswer::Compact(Box::new(self.raw_recall_view(&pack))),
                Detail::Full => RecallAnswer::FullRaw(Box::new(pack)),
            });
        }
        let task = Task { query: input.query.clone(), about: input.about.clone().map(ClaimKey::into_pair) };
        let turn = self.turn(ns, &task, &opts).await?;
        Ok(match input.detail {
            Detail::Compact => RecallAnswer::Compact(Box::new(self.recall_view(&turn))),
            Detail::Full => RecallAnswer::Full(Box::new(turn)),
        })
    }

    /// [`Runtime::recall_input`] of what `filter` keeps (no access is recorded; as of a past
    /// time, no escalation is raised and nothing corrected either).
    async fn recall_filtered_input(
        &self,
        ns: &Namespace,
        input: &RecallInput,
        opts: &RecallOptions,
        filter: RecallFilter,
    ) -> Result<RecallAnswer, AgentError> {
        let opts = RecallOptions { no_touch: true, ..opts.clone() };
        if input.raw {
            let pack = self.recall_pack_filtered(ns, &input.query, &opts, filter).await?;
            self.counters.recalled_raw();
            return Ok(match input.detail {
                Detail::Compact => RecallAnswer::Compact(Box::new(self.raw_recall_view(&pack))),
                Detail::Full => RecallAnswer::FullRaw(Box::new(pack)),
            });
        }
        let task = Task { query: input.query.clone(), about: input.about.clone().map(ClaimKey::into_pair) };
        let turn = self.turn_filtered(ns, &task, &opts, filter).await?;
        Ok(match input.detail {
            Detail::Compact => RecallAnswer::Compact(Box::new(self.recall_view(&turn))),
            Detail::Full => RecallAnswer::Full(Box::new(turn)),
        })
    }

    /// Every value `ns` has held for the claim `key`, oldest first, each with its system time
    /// and how it ended ([`crate::claim_history::ClaimHistory`]).
    pub async fn history_input(
        &self,
        ns: &Namespace,
        key: &ClaimKey,
    ) -> Result<crate::claim_history::ClaimHistory, AgentError> {
        let (entity, attribute) = key.clone().into_pair();
        let values = self.engine().claim_history(ns, &entity, &attribute).await?;
        Ok(crate::claim_history::ClaimHistory::of(key, &values))
    }

    /// Forget `input` in `ns` (the engine's rule: [`mnemo_core::engine::ForgetPreview`]); a
    /// dry run writes nothing.
    pub async fn forget_input(&self, ns: &Namespace, input: &ForgetInput) -> Result<ForgetAnswer, AgentError> {
        let opts = ForgetOptions { include_pinned: input.include_pinned };
        if input.dry_run {
            return Ok(ForgetAnswer::Preview(self.engine().forget_preview(ns, &input.command, opts).await?));
        }
        let r = self.engine().forget_with(ns, &input.source, &input.command, opts).await?;
        self.counters.forgotten();
        Ok(ForgetAnswer::Forgotten(Box::new(r)))
    }

    /// Erase (or with `dry_run`, preview) what `input` names in `ns`.
    pub async fn erase_input(
        &self,
        ns: &Namespace,
        input: &EraseInput,
    ) -> Result<mnemo_core::engine::EraseReport, AgentError> {
        non_empty("reason", &input.reason)?;
        let target = match &input.what {
            EraseWhat::Memory(r) => EraseTarget::Memory { id: self.engine().memory_id(ns, *r).await? },
            EraseWhat::Turn(r) => EraseTarget::Turn { id: self.engine().turn_id(ns, *r).await? },
            EraseWhat::Claim(k) => EraseTarget::Claim { entity: k.entity.clone(), attribute: k.attribute.clone() },
            EraseWhat::Subject(e) => EraseTarget::Subject { entity: e.clone() },
        };
        let opts = mnemo_core::engine::EraseOptions { dry_run: input.dry_run, by: Some(input.by.clone()) };
        let report = self.engine().erase(ns, &target, &input.reason, &opts).await?;
        if !report.dry_run {
            // The ledger keeps the tasks and packs of escalations: the values go from it too.
            self.redact_escalations(ns, &report.values).await?;
        }
        Ok(report)
    }

    /// The agent turn for `input` in `ns`.
    pub async fn turn_input(&self, ns: &Namespace, input: &TurnInput) -> Result<AgentTurn, AgentError> {
        non_empty("text", &input.text)?;
        let opts = RecallOptions { budget: input.budget, ..RecallOptions::default() };
        self.handle(ns, &input.source, &input.text, input.about.clone().map(ClaimKey::into_pair), &opts).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclared_labels_count_as_the_operator() {
        let declared = vec!["erp".to_string()];
        assert_eq!(operator_source(Some("erp"), &declared).0, "erp");
        assert_eq!(operator_source(Some("user"), &declared), ("user".to_string(), None));
        assert_eq!(operator_source(None, &declared), ("user".to_string(), None));
        let (s, note) = operator_source(Some("s2"), &declared);
        assert_eq!(s, "user");
        assert!(note.is_some_and(|n| n.contains("not declared")));
    }

    #[test]
    fn a_time_is_a_date_alone_or_rfc_3339() {
        let d = parse_time("2026-05-01").unwrap();
        assert_eq!(d, Timestamp::parse_rfc3339("2026-05-01T00:00:00Z").unwrap());
        assert_eq!(
            parse_time(" 2026-05-01T09:30:00+02:00 ").unwrap().millis() - d.millis(),
            7 * 3_600_000 + 30 * 60_000
        );
        for bad in ["2026-02-30", "2026-13-01", "01-05-2026", "yesterday", "2026-5-1", ""] {
            let e = parse_time(bad).unwrap_err().to_string();
            assert!(e.contains("YYYY-MM-DD") && e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
        assert_eq!(parse_time("2026-02-30").unwrap_err().what, "is not a calendar date");
    }

    #[test]
    fn a_role_is_one_word() {
        for ok in ["user", "assistant", "tool", "function_call", "gpt-4o", "ns:agent"] {
            assert!(is_role(ok), "{ok}");
        }
        for bad in ["", "two words", "a|b", "line\nbreak", "1st", &"x".repeat(65)] {
            assert!(!is_role(bad), "{bad:?}");
        }
    }

    #[test]
    fn an_empty_text_is_refused_naming_the_field() {
        let e = non_empty("text", " \n").unwrap_err().to_string();
        assert!(e.contains("text must not be empty"), "{e}");
        assert!(non_empty("text", "hi").is_ok());
    }

    mod with_a_runtime {
        // The built-in kinds the embedded default names (the library links none).
        use mnemo_grounders as _;
        use mnemo_llm as _;
        use mnemo_store as _;

        use super::super::*;
        use crate::{Config, Runtime};
        use mnemo_contract::time::DAY_MS;
        use mnemo_contract::{ListPage, SimClock};
        use std::sync::Arc;

        const NOW: &str = "2026-07-01T09:00:00Z";

        async fn runtime(dir: &std::path::Path) -> Runtime {
            let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339(NOW).unwrap()));
            Runtime::build(&Config::embedded_default().unwrap(), dir, clock, vec![]).await.unwrap()
        }

        fn ns() -> Namespace {
            Namespace::new("t").unwrap()
        }

        fn input(text: &str, key: Option<&str>, at: Option<&str>) -> RememberInput {
            RememberInput {
                source: "user".into(),
                text: text.into(),
                idempotency_key: key.map(String::from),
                at: at.map(|t| parse_time(t).unwrap()),
            }
        }

        async fn memories(rt: &Runtime) -> usize {
            let page = ListPage { after: None, limit: 100, include_tombstoned: true };
            rt.engine().list_memories(&ns(), &page).await.unwrap().len()
        }

        #[tokio::test]
        async fn a_turn_is_recorded_at_its_stated_time_and_not_far_ahead() {
            let d = tempfile::tempdir().unwrap();
            let rt = runtime(d.path()).await;
            let r = rt.remember_input(&ns(), &input("[SEM] Ben | phone | 1", None, Some("2026-05-01"))).await.unwrap();
            assert_eq!(r.turn.at, parse_time("2026-05-01").unwrap());
            let m = r.outcomes[0].memory.unwrap();
            let w = rt.engine().why(&ns(), m).await.unwrap();
            assert_eq!(w.memory.created_at, r.turn.at, "what a turn derives takes its time");
            // Before the last turn: time only moves forward.
            let e = rt.remember_input(&ns(), &input("[SEM] Ben | phone | 2", None, Some("2026-04-01"))).await;
            assert!(e.unwrap_err().to_string().contains("time only moves forward"));
            // More than the configured skew (default 5 min) after the clock: refused, naming the
            // time, the clock and the fix; 23 hours ahead (once allowed) included.
            for ms in [23 * 3600 * 1000, DAY_MS + 1000] {
                let mut far = input("[SEM] Ben | phone | 3", None, None);
                far.at = Some(Timestamp::parse_rfc3339(NOW).unwrap().plus_millis(ms));
                assert!(rt.remember_input(&ns(), &far).await.is_err(), "{ms} ms ahead");
            }
            let ahead = Timestamp::parse_rfc3339(NOW).unwrap().plus_millis(5 * 60 * 1000 + 1000);
            let mut far = input("[SEM] Ben | phone | 3", None, None);
            far.at = Some(ahead);
            let e = rt.remember_input(&ns(), &far).await.unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::InvalidInput);
            let msg = e.to_string();
            assert!(
                msg.contains(&ahead.to_string()) && msg.contains(NOW) && msg.contains("more than 300s ahead"),
                "{msg}"
            );
            assert!(msg.contains("max_future_skew_secs"), "{msg}");
            // Within the skew: fine; with a key, a retry answers the first turn.
            let soon = input("[SEM] Ben | phone | 4", Some("k1"), Some("2026-07-01T09:04:00Z"));
            let first = rt.remember_input(&ns(), &soon).await.unwrap();
            assert_eq!(first.turn.at, parse_time("2026-07-01T09:04:00Z").unwrap());
            let again = rt.remember_input(&ns(), &soon).await.unwrap();
            assert_eq!(again.status, mnemo_core::engine::TurnStatus::AlreadyRecorded);
            assert_eq!(again.turn.id, first.turn.id);
        }

        /// `recall --at 1970-01-01` over memories of 2026: refused naming both times, and no
        /// access time moves back; a recall at or after the last turn works.
        #[tokio::test]
        async fn a_recall_before_the_last_turn_is_refused() {
            let d = tempfile::tempdir().unwrap();
            let rt = runtime(d.path()).await;
            let r = rt.remember_input(&ns(), &input("[SEM] Ben | phone | 555", None, None)).await.unwrap();
            let m = r.outcomes[0].memory.unwrap();
            // A turn stated within the skew ahead of the clock: a recall right after it answers
            // at a door; at a stated time (`--at`, no tolerance) it is refused.
            rt.remember_input(&ns(), &input("[SEM] Ann | phone | 777", None, Some("2026-07-01T09:04:00Z")))
                .await
                .unwrap();
            let q = RecallInput { query: "Ben phone".into(), raw: true, ..RecallInput::default() };
            rt.recall_input(&ns(), &q).await.unwrap();
            assert!(rt.check_recall_time(&ns(), std::time::Duration::ZERO).await.is_err());
            rt.engine().flush_index().await.unwrap();
            let accessed = rt.engine().why(&ns(), m).await.unwrap().memory.last_accessed_at;
            drop(rt);
            let past = Arc::new(SimClock::new(parse_time("1970-01-01").unwrap()));
            let rt = Runtime::build(&Config::embedded_default().unwrap(), d.path(), past, vec![]).await.unwrap();
            for raw in [true, false] {
                let e = rt.recall_input(&ns(), &RecallInput { raw, ..q.clone() }).await.unwrap_err();
                assert_eq!(e.kind(), crate::error::ErrorKind::InvalidInput);
                let e = e.to_string();
                assert!(e.contains("1970-01-01T00:00:00Z") && e.contains("2026-07-01T09:04:00Z"), "{e}");
                assert!(e.contains("as-of recall"), "{e}");
            }
            rt.engine().flush_index().await.unwrap();
            assert_eq!(rt.engine().why(&ns(), m).await.unwrap().memory.last_accessed_at, accessed);
        }

        #[tokio::test]
        async fn messages_are_turns_in_order_each_at_its_time_and_by_its_role() {
            let d = tempfile::tempdir().unwrap();
            let rt = runtime(d.path()).await;
            let msg = |role: &str, content: &str, t: Option<&str>| ChatMessage {
                role: role.into(),
                content: content.into(),
                timestamp: t.map(|t| parse_time(t).unwrap()),
            };
            let at = parse_time("2026-06-30").ok();
            let messages = vec![
                msg("user", "[SEM] Northwind Labs | owner | Ben", Some("2026-06-01T10:00:00Z")),
                msg("assistant", "[EPI] Told the user Ben owns Northwind Labs", None),
            ];
            let r = rt.remember_messages(&ns(), "erp", &messages, Some("conv-1"), at).await.unwrap();
            assert_eq!(r.len(), 2);
            assert_eq!(r[0].turn.at, parse_time("2026-06-01T10:00:00Z").unwrap());
            assert_eq!(r[0].turn.source, "erp");
            assert_eq!(r[1].turn.at, at.unwrap(), "no timestamp: the call's at");
            assert_eq!(r[1].turn.source, "user", "an undeclared role is the operator's word");
            assert!(r[1].notes.iter().any(|n| n.contains("\"assistant\" is not declared")), "{:?}", r[1].notes);
            assert_eq!(r[1].turn.external_id.as_deref(), Some("idempotency:conv-1#1"));
            // A retry writes nothing again.
            let again = rt.remember_messages(&ns(), "erp", &messages, Some("conv-1"), at).await.unwrap();
            assert!(again.iter().all(|r| r.status == mnemo_core::engine::TurnStatus::AlreadyRecorded));
            assert_eq!(again[1].turn.id, r[1].turn.id);
        }

        /// A message without a stated time is written at the time the order was checked with,
        /// however far the clock moves before its turn is written: a later message stated just
        /// after that time is not refused half-way through the conversation.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_message_without_a_time_is_written_at_the_time_it_was_checked_at() {
            let d = tempfile::tempdir().unwrap();
            let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339(NOW).unwrap()));
            let rt =
                Runtime::build(&Config::embedded_default().unwrap(), d.path(), clock.clone(), vec![]).await.unwrap();
            let checked = Timestamp::parse_rfc3339(NOW).unwrap();
            let stated = checked.plus_millis(1000);
            let messages = vec![
                ChatMessage { role: "user".into(), content: "[SEM] Ana | phone | 1".into(), timestamp: None },
                ChatMessage { role: "user".into(), content: "[SEM] Ana | phone | 2".into(), timestamp: Some(stated) },
            ];
            // The call checks its messages, then waits for the idempotency lock (held here);
            // meanwhile the clock moves past message 1's stated time.
            let held = rt.idempotency_lock().lock().await;
            let ns = ns();
            let mut call = std::pin::pin!(rt.remember_messages(&ns, "user", &messages, Some("conv"), None));
            tokio::select! {
                biased;
                r = &mut call => panic!("the call did not wait for the idempotency lock: {r:?}"),
                () = std::future::ready(()) => {}
            }
            clock.advance(60_000);
            drop(held);
            let r = call.await.unwrap();
            assert_eq!(r.iter().map(|r| r.turn.at).collect::<Vec<_>>(), vec![checked, stated]);
            assert_eq!(memories(&rt).await, 2, "both messages were written");
        }

        #[tokio::test]
        async fn a_bad_message_is_refused_before_anything_is_written() {
            let d = tempfile::tempdir().unwrap();
            let rt = runtime(d.path()).await;
            let ok = ChatMessage { role: "user".into(), content: "[SEM] Ana | phone | 1".into(), timestamp: None };
            let with = |f: &dyn Fn(&mut ChatMessage)| {
                let mut m = ok.clone();
                f(&mut m);
                vec![ok.clone(), m]
            };
            let err = |messages: Vec<ChatMessage>| {
                let rt = &rt;
                async move { rt.remember_messages(&ns(), "user", &messages, None, None).await.unwrap_err().to_string() }
            };
            assert!(err(vec![]).await.contains("messages must not be empty"));
            let e = err(with(&|m| m.content = "  ".into())).await;
            assert!(e.contains("message 1: content must not be empty"), "{e}");
            let e = err(with(&|m| m.role = "the boss".into())).await;
            assert!(e.contains("message 1: role \"the boss\""), "{e}");
            let e = err(with(&|m| m.timestamp = parse_time("2026-01-01").ok())).await;
            assert!(e.contains("message 1 is at 2026-01-01T00:00:00Z, before message 0"), "{e}");
            let e = err(with(&|m| m.timestamp = parse_time("2026-07-03").ok())).await;
            assert!(
                e.contains("message 1: timestamp 2026-07-03T00:00:00Z is more than 300s ahead of the clock"),
                "{e}"
            );
            let e = rt.remember_messages(&ns(), "user", std::slice::from_ref(&ok), Some(" "), None).await.unwrap_err();
            assert!(e.to_string().contains("idempotency key must not be empty"), "{e}");
            assert_eq!(memories(&rt).await, 0, "nothing was written");
        }
    }
}

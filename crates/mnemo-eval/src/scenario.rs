//! A validated scenario (docs/scenarios.md): a timeline of events and probes with expectations.
//! The loader (`loader.rs`) builds these from TOML; nothing here reads files.
use std::path::PathBuf;

use mnemo_contract::{Claim, Memory, Namespace, Status, Timestamp};

/// One scenario file, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Unique name (rows of the report are keyed by it).
    pub name: String,
    /// What it tests.
    pub about: String,
    /// The file it came from.
    pub file: PathBuf,
    /// Simulated time of offset 0.
    pub start: Timestamp,
    /// The file's namespace (events and probes may override it).
    pub namespace: Namespace,
    /// `[settings]`: config overrides, same keys as the config file (checked by the agent).
    pub settings: toml::Table,
    /// Line of `[settings]` (0 when absent), for error messages.
    pub settings_line: usize,
    /// Events, in file order.
    pub events: Vec<Event>,
    /// Probes, in file order.
    pub probes: Vec<Probe>,
    /// `[expect]`.
    pub expect: Expectations,
}

impl Scenario {
    /// Every namespace the scenario uses (file, events, probes, matchers), sorted, unique.
    pub fn namespaces(&self) -> Vec<Namespace> {
        let mut out = vec![self.namespace.clone()];
        out.extend(self.events.iter().map(|e| e.namespace.clone()));
        out.extend(self.probes.iter().map(|p| p.namespace.clone()));
        let matchers = self.expect.forgotten.iter().chain(&self.expect.kept);
        out.extend(matchers.filter_map(|m| m.namespace.clone()));
        out.sort();
        out.dedup();
        out
    }

    /// The grounder sources named by `world` events, sorted, unique.
    pub fn world_sources(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .events
            .iter()
            .filter_map(|e| match &e.action {
                Action::World { source, .. } => Some(source.clone()),
                Action::Say { .. } | Action::Answer { .. } => None,
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// Something that happens at a time.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Position among the file's events (0-based).
    pub index: usize,
    /// Line of its `at` key.
    pub line: usize,
    /// The offset as written.
    pub offset: String,
    /// Absolute simulated time.
    pub at: Timestamp,
    /// Its namespace.
    pub namespace: Namespace,
    /// What happens.
    pub action: Action,
}

/// What an event does.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// A chat turn.
    Say {
        /// Who says it (default "user").
        source: String,
        /// The text (may hold several tagged lines).
        text: String,
    },
    /// A human answers an escalation (the one named, or the namespace's latest open one).
    Answer {
        /// The answer as the human writes it (a bare value, a sentence, or tagged lines).
        text: String,
        /// Who answers (recorded as `human:NAME`).
        by: String,
        /// The escalation (`e1`); None: the namespace's latest open one.
        escalation: Option<String>,
    },
    /// The system of record changes.
    World {
        /// The grounder's source name (one table per source).
        source: String,
        /// Entity.
        entity: String,
        /// Attribute.
        attribute: String,
        /// New value.
        value: String,
    },
}

/// A question asked at a time, with the expected truth.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// Position among the file's probes (0-based).
    pub index: usize,
    /// Line of its `at` key.
    pub line: usize,
    /// The offset as written.
    pub offset: String,
    /// Absolute simulated time.
    pub at: Timestamp,
    /// Its namespace.
    pub namespace: Namespace,
    /// The query.
    pub query: String,
    /// The `(entity, attribute)` probed, if any.
    pub about: Option<(String, String)>,
    /// The current truth; None: nothing may be asserted on `about`.
    pub expect: Option<String>,
    /// Known wrong values (for the failure report; scoring does not use them).
    pub stale: Vec<String>,
    /// Substrings that must each be in some memory of the final pack.
    pub in_pack: Vec<String>,
    /// Extension: substrings that must be in no memory of the final pack.
    pub absent: Vec<String>,
    /// The agent's decision must be this: true = act, false = escalate (None: not checked).
    pub decision: Option<bool>,
    /// The agent must act with a plan (checked against the pack) that uses this value.
    pub plan_uses: Option<String>,
}

impl Probe {
    /// A short label: `probes[i] @3d "query"`.
    pub fn label(&self) -> String {
        format!("probes[{}] @{} {:?}", self.index, self.offset, self.query)
    }
}

/// `[expect]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expectations {
    /// Matchers that must each match a memory tombstoned at the end.
    pub forgotten: Vec<Matcher>,
    /// Matchers that must each match a memory active at the end.
    pub kept: Vec<Matcher>,
}

/// Selects memories by claim, by content substring, or both (all given conditions must hold).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matcher {
    /// Line where it is written.
    pub line: usize,
    /// Restricts to one namespace (default: any the scenario uses).
    pub namespace: Option<Namespace>,
    /// Claim entity (compared normalised).
    pub entity: Option<String>,
    /// Claim attribute (compared normalised).
    pub attribute: Option<String>,
    /// Claim value (white space folded, case-sensitive); None: any value.
    pub value: Option<String>,
    /// Substring of the memory's content.
    pub content: Option<String>,
    /// Substring of the tombstone reason (`forgotten` only): e.g. "decayed".
    pub reason: Option<String>,
    /// Extension: the matcher is met only if exactly this many memories match it (whatever
    /// their status), e.g. 1 to check that restatements were merged into one memory.
    pub count: Option<usize>,
}

impl Matcher {
    /// Whether this matcher selects `m` (its status aside, except for `reason`, which only a
    /// tombstoned memory can satisfy).
    pub fn matches(&self, m: &Memory) -> bool {
        let reason = match &m.status {
            Status::Tombstoned { reason, .. } => Some(reason.as_str()),
            Status::Active => None,
        };
        self.matches_parts(&m.namespace, m.claim.as_ref(), &m.content, reason)
    }

    /// The same test on the parts of a memory (baselines match the tagged lines of raw turns);
    /// `tombstone_reason` is None for something active.
    pub fn matches_parts(
        &self,
        ns: &Namespace,
        claim: Option<&Claim>,
        content: &str,
        tombstone_reason: Option<&str>,
    ) -> bool {
        if self.namespace.as_ref().is_some_and(|n| n != ns) {
            return false;
        }
        if let (Some(e), Some(a)) = (&self.entity, &self.attribute) {
            let Some(claim) = claim else { return false };
            if !claim.is_on(e, a) || self.value.as_ref().is_some_and(|v| !claim.same_value(v)) {
                return false;
            }
        }
        if self.content.as_ref().is_some_and(|c| !content.contains(c.as_str())) {
            return false;
        }
        match (&self.reason, tombstone_reason) {
            (None, _) => true,
            (Some(r), Some(why)) => why.contains(r.as_str()),
            (Some(_), None) => false,
        }
    }

    /// A readable description for reports.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let (Some(e), Some(a)) = (&self.entity, &self.attribute) {
            match &self.value {
                Some(v) => parts.push(format!("claim {e} | {a} | {v}")),
                None => parts.push(format!("claim {e} | {a} | *")),
            }
        }
        if let Some(c) = &self.content {
            parts.push(format!("content {c:?}"));
        }
        if let Some(r) = &self.reason {
            parts.push(format!("reason {r:?}"));
        }
        if let Some(ns) = &self.namespace {
            parts.push(format!("namespace {ns}"));
        }
        if let Some(n) = self.count {
            parts.push(format!("exactly {n} memor{}", if n == 1 { "y" } else { "ies" }));
        }
        format!("{} (line {})", parts.join(", "), self.line)
    }
}

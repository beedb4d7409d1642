//! What a model may decide on the write path, and what it may not.
//!
//! A claimless candidate is reconciled by the model; a model's verdict names memories to
//! tombstone (contradicts) or to reinforce in the candidate's place (duplicate). Tried against
//! a small real model (Qwen2.5 1.5B), "contradicts" came back for 8 of 8 calls, naming memories
//! about other things ("also allergic to latex" against a penicillin allergy), and the engine
//! applied it blindly. So the engine keeps three rules of its own, whatever the model says:
//!
//! 1. **Neighbours are relevant in the absolute sense**: a claimless candidate is compared only
//!    with memories that share one of its entities, or whose relevance to its content (term
//!    coverage, calibrated dense similarity: `mnemo_contract::relevance`) reaches
//!    [`NEIGHBOUR_FLOOR`] — never the best of nothing.
//!    An entity in common is not enough on its own: the two must also share a word besides
//!    the names of their subjects ([`topic_overlap`] above 0), or every memory about a patient
//!    would be a neighbour of every other.
//! 2. **A contradiction needs a shared subject and topic** ([`contradiction_refused`]): the same
//!    kind (a fact does not supersede an instruction), a kind that can be superseded (an
//!    episode happened; a later one does not undo it), a normalised entity in common, more
//!    than half the words of the shorter one in common besides the subjects' names (a new
//!    value of the same statement says most of what the old one said: "takes metformin 500 mg
//!    twice a day" / "metformin dose raised to 1000 mg twice a day"; an appointment and a dose
//!    share only the patient), a stored memory (items of one turn never supersede each other
//!    unless they share a claim, which the claim rule decides), and not a claim whose attribute
//!    the config says holds many values. Recorded against Qwen2.5-Coder 1.5B, the shared
//!    subject alone let an appointment tombstone a dose, a phone number and a name.
//! 3. **A duplicate adds nothing** ([`duplicate_refused`]): the same kind, and the candidate's
//!    content terms held by the memory it would be merged into, no new number among them.
//!
//! A refused verdict is said in the turn's notes (with the model's reason) and the candidate is
//! inserted as novel: keeping both is recoverable, destroying one is not.
use mnemo_contract::model::{Memory, MemoryKind, NewMemory};
use mnemo_contract::policy::EnginePolicy;
use mnemo_contract::relevance::{content_terms, names};
use mnemo_contract::Candidate;

/// Absolute relevance (0..=1) a claimless candidate's content must reach to make a memory its
/// neighbour when they share no entity: the assessor's default relevance floor.
pub(crate) const NEIGHBOUR_FLOOR: f64 = 0.5;

/// Share of the words two memories have in common besides the names of their subjects, over
/// the shorter one's words: `|A ∩ B| / min(|A|, |B|)`, 0 when either says nothing else.
pub(crate) fn topic_overlap(content: &str, entities: &[String], old: &Memory) -> f64 {
    let mut names: Vec<String> = Vec::new();
    for e in entities.iter().chain(&old.entities) {
        names.extend(content_terms(e));
    }
    if let Some(c) = &old.claim {
        names.extend(content_terms(&c.entity));
    }
    let topic =
        |text: &str| -> Vec<String> { content_terms(text).into_iter().filter(|t| !names.contains(t)).collect() };
    let (a, b) = (topic(content), topic(&old.content));
    let shorter = a.len().min(b.len());
    if shorter == 0 {
        return 0.0;
    }
    a.iter().filter(|t| b.contains(t)).count() as f64 / shorter as f64
}

/// Whether two entity lists name a subject in common: the same normalised name, or one name
/// inside the other as whole words ("ic-mc-44" in "part ic-mc-44": a small model writes the
/// same thing two ways).
pub(crate) fn shares_subject(a: &[String], b: &[String]) -> bool {
    a.iter().any(|x| b.iter().any(|y| x == y || names(x, y) || names(y, x)))
}

/// A model's "contradicts" needs more than this [`topic_overlap`].
pub(crate) const CONTRADICTION_OVERLAP: f64 = 0.5;

/// Why a model's "contradicts" naming `old` is refused for `cand`, or None when it may apply.
pub(crate) fn contradiction_refused(
    cand: &Candidate,
    new: &NewMemory,
    old: &Memory,
    policy: &EnginePolicy,
) -> Option<String> {
    if old.id.0 < 0 {
        return Some(
            "it was said in the same turn, and only a shared claim lets one item of a turn replace another".into(),
        );
    }
    if old.kind != cand.kind {
        return Some(format!("a {} memory does not supersede a {} one", cand.kind, old.kind));
    }
    if cand.kind == MemoryKind::Episodic {
        return Some("an episode is not superseded by another: both happened".into());
    }
    if !shares_subject(&new.entities, &old.entities) {
        return Some(if new.entities.is_empty() {
            "the candidate names no entity, so no shared subject can be checked".into()
        } else {
            format!("they share no subject (the candidate is about {})", new.entities.join(", "))
        });
    }
    let overlap = topic_overlap(&cand.content, &new.entities, old);
    if overlap <= CONTRADICTION_OVERLAP {
        return Some(format!(
            "they say different things about their subject ({:.0}% of the words besides its name in common; more than {:.0}% is needed)",
            overlap * 100.0,
            CONTRADICTION_OVERLAP * 100.0
        ));
    }
    if let Some(c) = &old.claim {
        if policy.claims.fixed(&c.attribute) == Some(mnemo_contract::model::Cardinality::Many) {
            return Some(format!("{:?} holds many values ([claims] many)", c.attribute));
        }
    }
    None
}

/// Why a model's "duplicate" naming `old` is refused for `cand`, or None when it may apply.
pub(crate) fn duplicate_refused(cand: &Candidate, old: &Memory) -> Option<String> {
    if old.kind != cand.kind {
        return Some(format!("a {} memory is not a restatement of a {} one", cand.kind, old.kind));
    }
    let mut held = content_terms(&old.content);
    for e in &old.entities {
        held.extend(content_terms(e));
    }
    if let Some(c) = &old.claim {
        held.extend(content_terms(&format!("{} {} {}", c.entity, c.attribute, c.value)));
    }
    let terms = content_terms(&cand.content);
    let new_terms: Vec<&String> = terms.iter().filter(|t| !held.contains(t)).collect();
    if let Some(n) = new_terms.iter().find(|t| t.chars().any(|c| c.is_ascii_digit())) {
        return Some(format!("the candidate states {n:?}, which the memory does not"));
    }
    // Half or more of what the candidate says is not in the memory: it says something else.
    if !terms.is_empty() && new_terms.len() * 2 >= terms.len() {
        let shown: Vec<&str> = new_terms.iter().map(|t| t.as_str()).collect();
        return Some(format!("the candidate says what the memory does not ({})", shown.join(", ")));
    }
    None
}

/// How much of an extracted memory the turn's words support: the share of its content terms
/// (and of its claim value's terms) that the turn holds, where a name memory already knows
/// counts as held (a turn says "she", the model writes the name). Numbers compare by their
/// digits ("1,000 mg" holds "1000").
pub(crate) struct Support {
    /// Content terms the turn (or known names) hold.
    pub held: usize,
    /// Content terms of the memory.
    pub of: usize,
    /// The claim's value is held (true without a claim).
    pub value_held: bool,
}

impl Support {
    /// At least half the content terms held, and the claim's value.
    pub fn enough(&self) -> bool {
        self.value_held && (self.of == 0 || self.held * 2 >= self.of)
    }
}

/// A turn's words as the support check reads them: read once per turn, for every item
/// extracted from it (a turn may be a megabyte and hold hundreds of items).
pub(crate) struct TurnWords {
    terms: Vec<String>,
    digits: String,
}

impl TurnWords {
    /// The content terms and the digits of `text`.
    pub fn of(text: &str) -> Self {
        TurnWords { terms: content_terms(text), digits: text.chars().filter(char::is_ascii_digit).collect() }
    }
}

/// The support the turn's words give `cand`; `known` are content terms of entities memory
/// already holds.
pub(crate) fn support(turn: &TurnWords, cand: &Candidate, known: &[String]) -> Support {
    let in_turn = |t: &String| {
        turn.terms.contains(t)
            || known.contains(t)
            || (t.chars().all(|c| c.is_ascii_digit()) && !turn.digits.is_empty() && turn.digits.contains(t.as_str()))
    };
    let terms = content_terms(&cand.content);
    let held = terms.iter().filter(|t| in_turn(t)).count();
    // A value with numbers is held when each of its numbers is; another, when any term is.
    let value_held = cand.claim.as_ref().is_none_or(|c| {
        let v = content_terms(&c.value);
        let numbers: Vec<&String> = v.iter().filter(|t| t.chars().all(|ch| ch.is_ascii_digit())).collect();
        if numbers.is_empty() {
            v.is_empty() || v.iter().any(in_turn)
        } else {
            numbers.iter().all(|n| in_turn(n))
        }
    });
    Support { held, of: terms.len(), value_held }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mnemo_contract::model::{Cardinality, Claim, ClientKind, MemoryId, Namespace, Provenance, Status};
    use mnemo_contract::Timestamp;

    fn cand(kind: MemoryKind, content: &str, claim: Option<Claim>) -> Candidate {
        Candidate {
            validity: Default::default(),
            kind,
            content: content.into(),
            claim,
            entities: vec![],
            importance: None,
            pinned: false,
            cardinality: Cardinality::One,
        }
    }

    fn mem(id: i64, kind: MemoryKind, content: &str, entities: &[&str], claim: Option<Claim>) -> Memory {
        let at = Timestamp::from_millis(0);
        Memory {
            validity: Default::default(),
            id: MemoryId(id),
            namespace: Namespace::default(),
            kind,
            content: content.into(),
            claim,
            entities: entities.iter().map(|e| e.to_string()).collect(),
            importance: 0.5,
            reinforcements: 0,
            sources: vec![],
            provenance: Provenance { turns: vec![], client: ClientKind::Live, model: "m".into() },
            created_at: at,
            last_confirmed_at: at,
            last_accessed_at: None,
            pinned: false,
            embedding: None,
            status: Status::Active,
            rev: 1,
        }
    }

    fn new_of(m: &Memory) -> NewMemory {
        NewMemory {
            validity: Default::default(),
            namespace: m.namespace.clone(),
            kind: m.kind,
            content: m.content.clone(),
            claim: m.claim.clone(),
            entities: m.entities.clone(),
            importance: 0.5,
            sources: vec![],
            provenance: m.provenance.clone(),
            created_at: m.created_at,
            pinned: false,
            embedding: None,
        }
    }

    #[test]
    fn a_contradiction_needs_the_same_kind_a_shared_subject_and_a_stored_memory() {
        let policy = EnginePolicy::default();
        let latex = mem(0, MemoryKind::Semantic, "Also allergic to latex.", &["maria lopez"], None);
        let c = cand(MemoryKind::Semantic, &latex.content, None);
        let n = new_of(&latex);
        let dose =
            mem(7, MemoryKind::Semantic, "Maria Lopez takes metformin 500 mg twice a day.", &["maria lopez"], None);
        let raised = mem(
            0,
            MemoryKind::Semantic,
            "Dr. Chen raised Maria Lopez's metformin dose to 1000 mg twice a day.",
            &["maria lopez", "dr. chen"],
            None,
        );
        let c_raised = cand(MemoryKind::Semantic, &raised.content, None);
        assert_eq!(
            contradiction_refused(&c_raised, &new_of(&raised), &dose, &policy),
            None,
            "the same statement with a new value: the model may decide"
        );
        let appt = mem(
            0,
            MemoryKind::Semantic,
            "Maria Lopez's next appointment is on 12 December at 10:30 with Dr. Chen.",
            &["maria lopez"],
            None,
        );
        let c_appt = cand(MemoryKind::Semantic, &appt.content, None);
        assert!(
            contradiction_refused(&c_appt, &new_of(&appt), &raised, &policy).unwrap().contains("different things"),
            "an appointment does not supersede a dose: they share only the patient"
        );
        assert!(contradiction_refused(&c, &n, &dose, &policy).unwrap().contains("different things"));
        assert!(shares_subject(&["ic-mc-44".into()], &["part ic-mc-44".into()]));
        assert!(!shares_subject(&["ben".into()], &["bent".into()]));
        let other = mem(8, MemoryKind::Semantic, "Ben's phone is 555.", &["ben"], None);
        assert!(contradiction_refused(&c, &n, &other, &policy).unwrap().contains("no subject"));
        let rule = mem(9, MemoryKind::Procedural, "Always ask Maria Lopez first.", &["maria lopez"], None);
        assert!(contradiction_refused(&c, &n, &rule, &policy).unwrap().contains("does not supersede"));
        let pending = mem(-1, MemoryKind::Semantic, "Maria Lopez is allergic.", &["maria lopez"], None);
        assert!(contradiction_refused(&c, &n, &pending, &policy).unwrap().contains("same turn"));
        let ep = mem(3, MemoryKind::Episodic, "Maria Lopez called.", &["maria lopez"], None);
        let c_ep = cand(MemoryKind::Episodic, "Maria Lopez called again.", None);
        assert!(contradiction_refused(&c_ep, &new_of(&ep), &ep, &policy).unwrap().contains("both happened"));
        let nameless = new_of(&mem(0, MemoryKind::Semantic, "x", &[], None));
        assert!(contradiction_refused(&c, &nameless, &dose, &policy).unwrap().contains("names no entity"));
        let mut many = EnginePolicy::default();
        many.claims.many = vec!["allergy".into()];
        let pen = mem(
            4,
            MemoryKind::Semantic,
            "Maria Lopez is also allergic to latex, she said.",
            &["maria lopez"],
            Some(Claim::new("Maria Lopez", "allergy", "penicillin")),
        );
        let why = contradiction_refused(&c, &n, &pen, &many);
        assert!(why.as_deref().is_some_and(|w| w.contains("many values")), "{why:?}");
    }

    #[test]
    fn a_duplicate_must_add_nothing() {
        let old = mem(1, MemoryKind::Semantic, "Maria Lopez is allergic to penicillin.", &["maria lopez"], None);
        assert_eq!(
            duplicate_refused(&cand(MemoryKind::Semantic, "Maria Lopez: allergic to penicillin", None), &old),
            None
        );
        assert!(duplicate_refused(&cand(MemoryKind::Semantic, "Also allergic to latex.", None), &old).is_some());
        let dose = mem(2, MemoryKind::Semantic, "Metformin 500 mg daily for Maria Lopez.", &[], None);
        let more = cand(MemoryKind::Semantic, "Maria Lopez metformin 1000 mg daily.", None);
        let why = duplicate_refused(&more, &dose);
        assert!(why.as_deref().is_some_and(|w| w.contains("1000")), "{why:?} {:?}", content_terms(&more.content));
        assert!(duplicate_refused(&cand(MemoryKind::Procedural, &old.content, None), &old).is_some());
    }

    #[test]
    fn support_counts_the_turns_words_known_names_and_digits() {
        let c = cand(MemoryKind::Semantic, "Maria Lopez is allergic to latex.", None);
        let s = support(&TurnWords::of("Also allergic to latex."), &c, &[]);
        assert_eq!((s.held, s.of), (2, 4));
        assert!(s.enough());
        let known = content_terms("maria lopez");
        assert_eq!(support(&TurnWords::of("Also allergic to latex."), &c, &known).held, 4);
        let copied = cand(MemoryKind::Semantic, "Tom Becker is allergic to nuts.", None);
        assert!(!support(&TurnWords::of("The lead time from S-208 is 35 days."), &copied, &[]).enough());
        let dose = cand(
            MemoryKind::Semantic,
            "Maria takes 1000 mg metformin.",
            Some(Claim::new("Maria", "metformin dose", "1000 mg")),
        );
        assert!(support(&TurnWords::of("Her metformin goes up to 1,000 mg daily, Maria said."), &dose, &[]).enough());
        let invented =
            cand(MemoryKind::Semantic, "Maria takes metformin.", Some(Claim::new("Maria", "dose", "750 mg")));
        assert!(!support(&TurnWords::of("Maria takes metformin, 1000 mg."), &invented, &[]).enough());
    }
}

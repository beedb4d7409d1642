//! Absolute relevance: how well one memory matches a query, measured without ranking it
//! against the other candidates.
//!
//! Recall's fused score is relative (weighted RRF over the best attainable value, or min-max
//! over the candidates), so the best hit scores ≈ 1 even when nothing matches: "the best of
//! nothing". The assessor must not read it as relevance. Each candidate instead carries
//! [`RelevanceEvidence`], built from three signals that do not depend on how the other
//! candidates scored:
//!
//! - **lexical**: the idf-weighted share of the query's content terms (at most
//!   [`MAX_QUERY_TERMS`]) that the memory holds (its text, entities and claim), terms compared
//!   after a light English stemming. A term's
//!   weight is `ln(1 + (C − df + 0.5) / (df + 0.5))`, with df its document frequency among the
//!   C candidates whose rows recall holds: a term no candidate holds (a name the namespace never
//!   mentions) weighs most, a term every candidate holds least. 1.0: the memory holds every
//!   content term of the query; 0: none.
//! - **dense**: the query–memory cosine as a z-score against the embedder's own similarity
//!   between unrelated texts ([`DenseCalibration`], measured once per embedder on
//!   [`CALIBRATION_TEXTS`]), mapped to 0..=1 linearly between [`DENSE_Z_NONE`] and
//!   [`DENSE_Z_FULL`]. Absent when either side has no vector.
//! - **entity**: the query names the memory's claim entity or one of its entities (whole words,
//!   case-insensitive).
//!
//! `absolute = max(lexical, dense)`, and a named entity adds [`ENTITY_BONUS`] of what is left
//! to 1: naming whom a memory is about makes it more relevant, but never alone relevant enough
//! (a question about Ben's phone is not answered by Ben's role).
use serde::{Deserialize, Serialize};

use crate::text::{is_stopword, words};

/// z at and below which the dense signal counts for nothing.
pub const DENSE_Z_NONE: f64 = 2.0;
/// z at and above which the dense signal counts fully.
pub const DENSE_Z_FULL: f64 = 7.0;
/// Share of the remaining relevance a named entity adds.
pub const ENTITY_BONUS: f64 = 0.25;
/// The smallest spread a calibration may report (an embedder whose unrelated texts all score
/// the same cosine would otherwise make any difference a huge z).
pub const MIN_SPREAD: f64 = 0.05;

/// The evidence that a memory is relevant to a query, in absolute terms (see the module).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RelevanceEvidence {
    /// idf-weighted share of the query's content terms the memory holds, 0..=1.
    pub lexical: f64,
    /// The query–memory cosine as a z-score against unrelated texts (None: no vector on one
    /// side, or the embedder could not be calibrated).
    pub dense_z: Option<f64>,
    /// `dense_z` mapped to 0..=1 (None with it).
    pub dense: Option<f64>,
    /// The query names the memory's claim entity or one of its entities.
    pub entity: bool,
    /// What the assessor reads: `max(lexical, dense)` plus the entity bonus, 0..=1.
    pub absolute: f64,
}

impl RelevanceEvidence {
    /// Combine the three signals.
    pub fn new(lexical: f64, dense_z: Option<f64>, entity: bool) -> Self {
        let dense = dense_z.map(|z| ((z - DENSE_Z_NONE) / (DENSE_Z_FULL - DENSE_Z_NONE)).clamp(0.0, 1.0));
        let best = lexical.max(dense.unwrap_or(0.0)).clamp(0.0, 1.0);
        let absolute = if entity { best + ENTITY_BONUS * (1.0 - best) } else { best };
        // No negative zero in what is shown.
        let absolute = if absolute > 0.0 { absolute } else { 0.0 };
        RelevanceEvidence { lexical, dense_z, dense, entity, absolute }
    }
}

/// Words that carry no content in a question, on top of [`crate::text::STOPWORDS`].
const QUESTION_WORDS: &[&str] = &[
    "am",
    "been",
    "being",
    "were",
    "had",
    "could",
    "might",
    "may",
    "must",
    "shall",
    "many",
    "much",
    "some",
    "more",
    "most",
    "other",
    "into",
    "over",
    "out",
    "up",
    "ever",
    "tell",
    "know",
    "let",
    "us",
    "one",
    "get",
    "got",
    "make",
    "made",
    "say",
    "said",
    "these",
    "those",
    "him",
    "mine",
    "yours",
    "ours",
    "theirs",
    "very",
    "really",
    "like",
    "whose",
    "each",
    "every",
    "after",
    "before",
    "during",
    "while",
    "since",
    "until",
    "s",
    "t",
    "re",
    "ve",
    "ll",
    "d",
    "m",
    "now",
    "currently",
    "current",
    "again",
    "ago",
    "last",
    "still",
    // How people ask a memory, not what they ask about.
    "wondering",
    "wonder",
    "remind",
    "remember",
    "recall",
    "previous",
    "previously",
    "conversation",
    "chat",
    "mentioned",
    "mention",
    "talked",
    "discussed",
    "told",
    "earlier",
    "back",
    "think",
    "thinking",
    "want",
    "wanted",
    "need",
    "help",
    "looking",
    "actually",
    "exactly",
    "specific",
    "lately",
    "recently",
    "any",
    "anything",
    "something",
    "advice",
    "suggestions",
    "suggest",
    "ideas",
    "tips",
    "recommend",
    "recommendations",
    "name",
    "called",
    "kind",
    "type",
    "sort",
    "going",
    "planning",
    "total",
    "happened",
    "passed",
    "between",
    "days",
    "weeks",
    "months",
    "years",
    "time",
    "times",
    "first",
    "there",
    "here",
    "well",
    "way",
];

/// A light English stemmer: enough to meet "owns" / "owner", "allergies" / "allergy",
/// "researching" / "research" at one form (both sides are stemmed alike; it need not produce
/// words).
pub fn stem(w: &str) -> String {
    stem_str(w).into_owned()
}

/// [`stem`] without a copy where the stem is a prefix of the word (all but "-ies").
fn stem_str(w: &str) -> std::borrow::Cow<'_, str> {
    // Numbers and codes are not words: "1000" is not "100", "S-208s" no plural.
    if w.bytes().any(|b| b.is_ascii_digit()) {
        return std::borrow::Cow::Borrowed(w);
    }
    let n = w.chars().count();
    let strip = |suffix: &str, min: usize| n >= min && w.ends_with(suffix);
    let base: &str = if strip("ies", 5) {
        return std::borrow::Cow::Owned(format!("{}y", &w[..w.len() - 3]));
    } else if strip("ing", 6) {
        &w[..w.len() - 3]
    } else if strip("ed", 5) || strip("er", 5) {
        &w[..w.len() - 2]
    } else if strip("s", 4) && !w.ends_with("ss") {
        &w[..w.len() - 1]
    } else {
        w
    };
    // "running" → "runn" → "run"; "planned" → "plann" → "plan". Compared as characters, not
    // bytes: the last two bytes of one non-ASCII character may be equal ('त' is E0 A4 A4).
    let mut tail = base.chars().rev();
    match (tail.next(), tail.next()) {
        (Some(last), Some(before))
            if base.len() >= 4 && last == before && last.is_ascii_alphabetic() && !"aeiouls".contains(last) =>
        {
            std::borrow::Cow::Borrowed(&base[..base.len() - 1])
        }
        _ => std::borrow::Cow::Borrowed(base),
    }
}

/// Whether `w` (lower-case) carries no content in a query.
fn is_filler(w: &str) -> bool {
    is_stopword(w) || QUESTION_WORDS.contains(&w) || (w.chars().count() == 1 && !w.chars().all(|c| c.is_numeric()))
}

/// The stemmed content terms of a text, each once, in order of first use.
pub fn content_terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words(text) {
        let s = stem(&w);
        if is_filler(&w) || is_filler(&s) {
            continue;
        }
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Whether `text` names `name` as whole words, case-insensitively ("Who owns Northwind Labs?"
/// names "Northwind Labs"; "Bent" does not name "Ben"). An empty name is never named.
pub fn names(text: &str, name: &str) -> bool {
    holds_words(&words(text).collect::<Vec<_>>(), name)
}

/// Whether the word sequence `have` holds `name`'s words in a row (never an empty name).
fn holds_words(have: &[String], name: &str) -> bool {
    let want: Vec<String> = words(name).collect();
    !want.is_empty() && have.windows(want.len()).any(|w| w == want.as_slice())
}

/// The names a query uses: capitalised words (or codes with a digit) that do not start it and
/// are not function words, months or days, possessive "'s" dropped, lower-cased. "When did
/// Caroline go to the LGBTQ support group?" uses "caroline" and "lgbtq".
pub fn query_names(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, raw) in query.split_whitespace().enumerate() {
        let w = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let w = w.strip_suffix("'s").or_else(|| w.strip_suffix("’s")).unwrap_or(w);
        let lower = w.to_lowercase();
        let capital = w.chars().next().is_some_and(char::is_uppercase);
        let code = w.chars().any(|c| c.is_ascii_digit()) && w.chars().any(char::is_alphabetic);
        if i == 0
            || w.chars().count() < 2
            || !(capital || code)
            || is_filler(&lower)
            // "I", months and days: capitalised words that name no one.
            || lower == "i"
            || crate::world_time::MONTH_NAMES.contains(&lower.as_str())
            || crate::world_time::WEEKDAY_NAMES.contains(&lower.as_str())
        {
            continue;
        }
        if !out.contains(&lower) {
            out.push(lower);
        }
    }
    out
}

/// Whether `text` mentions `name` (lower-case, from [`query_names`]): a word of the text equal
/// to it, or starting with it when it has at least 3 characters ("Mel" for "Melanie").
/// A name of several words (a code, "ic-mc-44") is matched as whole words.
pub fn mentions(text: &str, name: &str) -> bool {
    let parts: Vec<String> = words(name).collect();
    match parts.as_slice() {
        [] => false,
        [one] => words(text).any(|w| w == *one || (one.chars().count() >= 3 && w.starts_with(one.as_str()))),
        _ => names(text, name),
    }
}

/// The most query terms weighed (a bit each in [`QueryTerms::held_in`]'s set).
pub const MAX_QUERY_TERMS: usize = 64;

/// A query, analysed once for scoring many memories.
#[derive(Clone, Debug)]
pub struct QueryTerms {
    lower: String,
    words: Vec<String>,
    terms: Vec<String>,
    /// What a word must start with to stem to each term (the term, less a final "y" that an
    /// "-ies" word stems to): a word starting with none of them is no term's.
    probes: Vec<String>,
}

impl QueryTerms {
    /// Analyse `query`.
    pub fn of(query: &str) -> Self {
        let mut terms = content_terms(query);
        terms.truncate(MAX_QUERY_TERMS);
        let mut probes: Vec<String> = terms.iter().map(|t| t.strip_suffix('y').unwrap_or(t).to_string()).collect();
        probes.sort_unstable();
        probes.dedup();
        QueryTerms { lower: query.to_lowercase(), words: words(query).collect(), terms, probes }
    }

    /// Its content terms (stemmed).
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Whether the query names `name` (see [`names`]).
    pub fn names(&self, name: &str) -> bool {
        // Most names are not in the query at all: a substring test rejects them cheaply.
        let first = name.split(|c: char| !c.is_alphanumeric()).find(|w| !w.is_empty()).unwrap_or("");
        if first.is_empty() || !self.lower.contains(&first.to_lowercase()) {
            return false;
        }
        holds_words(&self.words, name)
    }

    /// Which of the query's terms `text` holds: bit i for term i. Allocation-free for words
    /// that can be no term (recall weighs every candidate this way).
    pub fn held_in(&self, text: &str) -> u64 {
        let mut held = 0u64;
        let mut lower = String::new();
        for raw in text.split(|c: char| !c.is_alphanumeric()) {
            if raw.is_empty() {
                continue;
            }
            // A stem is a prefix of its word (but for "-ies"): an ASCII word that starts with
            // no probe cannot stem to a term, and costs no copy.
            let b = raw.as_bytes();
            if raw.is_ascii()
                && !self.probes.iter().any(|p| b.len() >= p.len() && b[..p.len()].eq_ignore_ascii_case(p.as_bytes()))
            {
                continue;
            }
            lower.clear();
            lower.extend(raw.chars().flat_map(char::to_lowercase));
            let s = stem_str(&lower);
            for (i, t) in self.terms.iter().enumerate() {
                if t.as_str() == s.as_ref() {
                    held |= 1 << i;
                }
            }
        }
        held
    }

    /// Term weights from the documents' held sets ([`QueryTerms::held_in`]):
    /// `ln(1 + (C − df + 0.5) / (df + 0.5))`.
    pub fn weights(&self, docs: &[u64]) -> Vec<f64> {
        let c = docs.len() as f64;
        (0..self.terms.len())
            .map(|i| {
                let df = docs.iter().filter(|d| *d & (1 << i) != 0).count() as f64;
                (1.0 + (c - df + 0.5) / (df + 0.5)).ln()
            })
            .collect()
    }

    /// The weighted share of the query's terms in `held`; 0 when the query has none.
    pub fn coverage(&self, weights: &[f64], held: u64) -> f64 {
        let total: f64 = weights.iter().sum();
        if self.terms.is_empty() || total <= 0.0 {
            return 0.0;
        }
        let have: f64 = weights.iter().enumerate().filter(|(i, _)| held & (1 << i) != 0).map(|(_, w)| *w).sum();
        (have / total).clamp(0.0, 1.0)
    }
}

/// Texts about unrelated things, embedded once per embedder to learn the cosine it gives two
/// texts that have nothing to do with each other.
pub const CALIBRATION_TEXTS: &[&str] = &[
    "The invoice for the March shipment is still unpaid.",
    "My grandmother grows tomatoes on her balcony every summer.",
    "The train to Lyon leaves from platform nine at seven.",
    "Preheat the oven to 200 degrees before adding the bread.",
    "The quarterly board meeting moved to Thursday afternoon.",
    "Our cat refuses to eat anything but salmon.",
    "The firmware update fixed the bluetooth pairing bug.",
    "She ran her first marathon in under four hours.",
    "The museum's new wing shows Dutch landscape paintings.",
    "Replace the air filter every three months.",
    "He is allergic to peanuts and carries an epinephrine pen.",
    "The contract renews automatically unless cancelled in writing.",
    "Snow closed the mountain pass for two days.",
    "The violin lessons are on Saturday mornings.",
    "Interest rates rose by a quarter point last week.",
    "The hiking boots were a size too small.",
    "Warehouse B stores the spare conveyor belts.",
    "I watched a documentary about deep sea octopuses.",
    "The password must contain at least twelve characters.",
    "Their wedding will be in a vineyard near Porto.",
    "The printer on the third floor jams with thick paper.",
    "We adopted a rescue dog named Pepper.",
    "The soup needs more salt and a little lemon.",
    "The satellite launch was delayed by high winds.",
];

/// An embedder's cosine between unrelated texts: mean and spread.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DenseCalibration {
    /// Mean cosine between two unrelated texts.
    pub mean: f64,
    /// Its standard deviation (at least [`MIN_SPREAD`]).
    pub spread: f64,
}

impl DenseCalibration {
    /// From the vectors of [`CALIBRATION_TEXTS`] (any set of unrelated texts): every pair's
    /// cosine. None with fewer than two vectors.
    pub fn from_vectors(vectors: &[Vec<f32>]) -> Option<Self> {
        let mut sims = Vec::new();
        for (i, a) in vectors.iter().enumerate() {
            for b in &vectors[i + 1..] {
                sims.push(cosine(a, b)?);
            }
        }
        if sims.is_empty() {
            return None;
        }
        let n = sims.len() as f64;
        let mean = sims.iter().sum::<f64>() / n;
        let var = sims.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n;
        Some(DenseCalibration { mean, spread: var.sqrt().max(MIN_SPREAD) })
    }

    /// `cos` as a z-score.
    pub fn z(&self, cos: f64) -> f64 {
        (cos - self.mean) / self.spread
    }
}

/// The cosine of two vectors (None: different lengths, or a zero vector).
pub fn cosine(a: &[f32], b: &[f32]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na <= 0.0 || nb <= 0.0 {
        return None;
    }
    Some(dot / (na.sqrt() * nb.sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stemming_meets_the_forms_of_a_word() {
        assert_eq!(stem("owns"), stem("owner"));
        assert_eq!(stem("allergies"), stem("allergy"));
        assert_eq!(stem("researching"), stem("research"));
        assert_eq!(stem("planned"), stem("plan"));
        assert_ne!(stem("weather"), stem("owner"));
        assert_eq!(stem("glass"), "glass");
        assert_ne!(stem("1000"), stem("100"), "numbers are not stemmed");
        assert_eq!(stem("s-208s"), "s-208s");
    }

    #[test]
    fn stemming_never_cuts_a_character_in_two() {
        // 'त' is E0 A4 A4: its last two bytes are equal, which once passed for a doubled
        // consonant and panicked on a haystack turn in Hindi (LongMemEval S).
        assert_eq!(stem("वागत"), "वागत");
        assert_eq!(stem("स्वागत"), "स्वागत");
        assert_eq!(stem("ññññ"), "ññññ");
        assert_eq!(stem("running"), "run");
    }

    #[test]
    fn content_terms_drop_question_words() {
        assert_eq!(content_terms("What is the weather on Mars?"), vec!["weath", "mar"]);
        assert_eq!(content_terms("How many days did it take me to paint it?"), vec!["take", "paint"]);
    }

    #[test]
    fn names_are_whole_words() {
        assert!(names("Who owns Northwind Labs?", "northwind labs"));
        assert!(!names("Who owns Northwind?", "Northwind Labs"));
        assert!(!names("Bent nails", "Ben"));
        assert!(names("What is Ben's phone?", "Ben"));
        assert!(!names("anything", ""));
    }

    #[test]
    fn query_names_are_capitalised_words_past_the_first() {
        assert_eq!(query_names("When did Caroline go to the LGBTQ support group?"), vec!["caroline", "lgbtq"]);
        assert_eq!(query_names("What is the weather on Mars?"), vec!["mars"]);
        assert_eq!(query_names("What is Ben's phone in July?"), vec!["ben"]);
        assert_eq!(query_names("what did I say about IC-MC-44"), vec!["ic-mc-44"]);
        assert!(query_names("Caroline").is_empty());
        assert!(mentions("Melanie: hi", "mel"));
        assert!(!mentions("Melanie: hi", "me"));
        assert!(mentions("Order IC-MC-44 late", "ic-mc-44"));
        assert!(!mentions("Order IC-MC-45 late", "ic-mc-44"));
    }

    #[test]
    fn coverage_weighs_the_rare_terms() {
        let q = QueryTerms::of("What did Caroline research?");
        let docs: Vec<u64> =
            ["Jon: I did some research on dance studios", "Gina: the store opens", "Jon: Research is fun"]
                .iter()
                .map(|d| q.held_in(d))
                .collect();
        assert_eq!(docs, vec![0b10, 0, 0b10]);
        let w = q.weights(&docs);
        let c = q.coverage(&w, docs[0]);
        assert!(c > 0.0 && c < 0.5, "the missing name weighs more than the held word: {c}");
        let own = q.held_in("CAROLINE: I have been researching adoption agencies");
        assert_eq!(q.coverage(&w, own), 1.0);
        assert_eq!(q.coverage(&w, docs[1]), 0.0);
        assert_eq!(QueryTerms::of("what is it?").coverage(&[], own), 0.0);
        assert!(q.names("caroline") && !q.names("carol"));
    }

    #[test]
    fn evidence_combines_and_entity_never_suffices_alone() {
        let e = RelevanceEvidence::new(0.0, Some(1.0), true);
        assert_eq!(e.dense, Some(0.0));
        assert!((e.absolute - ENTITY_BONUS).abs() < 1e-9);
        let e = RelevanceEvidence::new(0.4, Some(DENSE_Z_FULL + 1.0), false);
        assert_eq!(e.absolute, 1.0);
        let e = RelevanceEvidence::new(0.6, None, false);
        assert_eq!(e.absolute, 0.6);
    }

    #[test]
    fn calibration_is_a_z_score_with_a_floor_on_the_spread() {
        let v = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![1.0, 1.0]];
        let c = DenseCalibration::from_vectors(&v).unwrap();
        assert!(c.mean > 0.0 && c.spread >= MIN_SPREAD);
        assert!(c.z(1.0) > 0.0 && c.z(0.0) < 0.0);
        assert!(DenseCalibration::from_vectors(&v[..1]).is_none());
        assert!(cosine(&[1.0], &[1.0, 2.0]).is_none());
        assert!(cosine(&[0.0, 0.0], &[1.0, 2.0]).is_none());
    }
}

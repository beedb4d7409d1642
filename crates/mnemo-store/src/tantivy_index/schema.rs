//! The tantivy schema, the text analyzer and the commit payload (the on-disk format).
use serde::{Deserialize, Serialize};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STRING};
use tantivy::tokenizer::{Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer};

/// Bumped whenever the schema, the analyzer or the payload changes meaning: an index written
/// with another version is stale and rebuilt from the Store.
pub const SCHEMA_VERSION: u32 = 3;

/// The name the analyzer is registered under.
pub const TOKENIZER: &str = "mnemo";

/// The schema's fields.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    /// The memory id (indexed for deletes, fast for hit → id).
    pub id: Field,
    /// The namespace, as one raw term (the filter).
    pub ns: Field,
    /// Content and entities, analysed (BM25).
    pub text: Field,
    /// Each entity as one raw term in key form (`entity_match::entity_key`), for
    /// `entity_boost` (since schema version 3).
    pub entity: Field,
}

/// Build the schema.
pub fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let id = b.add_i64_field("id", INDEXED | FAST);
    let ns = b.add_text_field("ns", STRING);
    let text_opts = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(TOKENIZER).set_index_option(IndexRecordOption::WithFreqs),
    );
    let text = b.add_text_field("text", text_opts);
    let entity = b.add_text_field("entity", STRING);
    (b.build(), Fields { id, ns, text, entity })
}

/// The fields of an opened index's schema, or why it is not ours.
pub fn fields_of(s: &Schema) -> Result<Fields, String> {
    let get = |n: &str| s.get_field(n).map_err(|_| format!("schema has no field {n:?}"));
    Ok(Fields { id: get("id")?, ns: get("ns")?, text: get("text")?, entity: get("entity")? })
}

/// Words: maximal runs of alphanumeric characters (as `mnemo_contract::text::words`), lower-cased,
/// very long tokens dropped, optionally stemmed (English).
pub fn analyzer(stemming: bool) -> TextAnalyzer {
    let b = TextAnalyzer::builder(SimpleTokenizer::default()).filter(RemoveLongFilter::limit(40)).filter(LowerCaser);
    if stemming {
        b.filter(Stemmer::new(Language::English)).build()
    } else {
        b.build()
    }
}

/// English function words a query may leave out of its BM25 terms (`query_stop_words`):
/// question words, auxiliaries, pronouns, articles, prepositions and conjunctions (the NLTK
/// English list, less its contractions' fragments).
#[rustfmt::skip]
pub const STOP_WORDS: &[&str] = &[
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours", "yourself",
    "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself",
    "they", "them", "their", "theirs", "themselves", "what", "which", "who", "whom", "this", "that",
    "these", "those", "am", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had",
    "having", "do", "does", "did", "doing", "a", "an", "the", "and", "but", "if", "or", "because", "as",
    "until", "while", "of", "at", "by", "for", "with", "about", "against", "between", "into", "through",
    "during", "before", "after", "above", "below", "to", "from", "up", "down", "in", "out", "on", "off",
    "over", "under", "again", "further", "then", "once", "here", "there", "when", "where", "why", "how",
    "all", "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not",
    "only", "own", "same", "so", "than", "too", "very", "can", "will", "just", "should", "now", "would",
    "could",
];

/// The terms the stop words become under `a` (stemmed alike, so "does" is left out as the
/// term it indexes to).
pub fn stop_terms(a: &mut TextAnalyzer) -> std::collections::HashSet<String> {
    STOP_WORDS.iter().flat_map(|w| tokens(a, w)).collect()
}

/// The tokens of `text` under `a`.
pub fn tokens(a: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut ts = a.token_stream(text);
    while ts.advance() {
        out.push(ts.token().text.clone());
    }
    out
}

/// What each commit records beside the documents it makes durable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Payload {
    /// `SCHEMA_VERSION` of the writer.
    pub schema: u32,
    /// Whether words were stemmed.
    pub stemming: bool,
    /// Every Store change up to this rev is in this commit.
    pub watermark: u64,
    /// The vector log generation of this commit.
    pub vectors_generation: u64,
    /// Its valid length in bytes.
    pub vectors_len: u64,
    /// The store the watermark refers to (identity, generation, history at the watermark).
    #[serde(default)]
    pub stamp: Option<mnemo_contract::IndexStamp>,
}

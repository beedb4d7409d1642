//! Normalisation of names and values, and simple word tokenisation shared by the fake model,
//! the lexical scorers and the baselines.

/// Entity and attribute names: trimmed, white space folded, lower-cased.
pub fn norm_name(s: &str) -> String {
    fold_ws(s).to_lowercase()
}

/// Values: trimmed and white space folded, case kept (values compare case-sensitively).
pub fn norm_value(s: &str) -> String {
    fold_ws(s)
}

/// Trim and fold runs of white space into one space.
pub fn fold_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Lower-cased alphanumeric words (a word is a maximal run of alphanumeric characters).
pub fn words(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| w.to_lowercase())
}

/// Common English function words, ignored when matching free text.
pub const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "has", "have", "how", "i",
    "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "that", "the", "their", "this", "to", "was", "we",
    "what", "when", "where", "which", "who", "whom", "why", "will", "with", "you", "your", "about", "all", "any",
    "can", "should", "would", "there", "them", "they", "he", "she", "his", "her", "so", "if", "then", "than", "but",
    "not", "no", "yes", "also", "just", "please", "note", "memory", "memories", "forget",
];

/// Whether `w` (lower-case) is a stop word.
pub fn is_stopword(w: &str) -> bool {
    STOPWORDS.contains(&w)
}

/// Content words: lower-cased words that are not stop words.
pub fn content_words(s: &str) -> Vec<String> {
    words(s).filter(|w| !is_stopword(w)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn normalises() {
        assert_eq!(norm_name("  Northwind   LABS "), "northwind labs");
        assert_eq!(norm_value(" 21   Days "), "21 Days");
        assert_eq!(content_words("What is the lead time?"), vec!["lead", "time"]);
    }
}

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

/// Entity-like tokens of free text: codes holding a digit or a '-' (`S-208`, `IC-MC-44`) and
/// capitalised words that do not start a sentence, with runs of capitalised words joined
/// (`Northwind Labs`). Returned as written; the engine normalises.
pub fn guess_entities(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let mut sentence_start = true;
    for tok in text.split_whitespace() {
        let word = tok.trim_matches(|c: char| !c.is_alphanumeric() && c != '-');
        let ends_sentence = tok.ends_with('.') || tok.ends_with('!') || tok.ends_with('?') || tok.ends_with(':');
        let has_digit = word.chars().any(|c| c.is_ascii_digit());
        let has_alpha = word.chars().any(|c| c.is_alphabetic());
        let is_code = has_digit && has_alpha && word.len() >= 2;
        let capital = word.chars().next().is_some_and(|c| c.is_uppercase()) && word.len() >= 2;
        if is_code || (capital && !sentence_start) {
            run.push(word);
        } else {
            if !run.is_empty() {
                out.push(run.join(" "));
                run.clear();
            }
        }
        if ends_sentence && !run.is_empty() {
            out.push(run.join(" "));
            run.clear();
        }
        sentence_start = ends_sentence;
    }
    if !run.is_empty() {
        out.push(run.join(" "));
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn entities_guess() {
        assert_eq!(guess_entities("We met Northwind Labs in Berlin."), vec!["Northwind Labs", "Berlin"]);
    }

    #[test]
    fn normalises() {
        assert_eq!(norm_name("  Northwind   LABS "), "northwind labs");
        assert_eq!(norm_value(" 21   Days "), "21 Days");
        assert_eq!(content_words("What is the lead time?"), vec!["lead", "time"]);
    }
}

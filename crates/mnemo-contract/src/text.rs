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

/// A TOML error as where and what, never the text it read: `line L, column C: message` when
/// `text` (the parsed input) is given and the error has a place, else the message alone. The
/// toml crate's own rendering quotes the offending line, and serde's messages quote a wrong
/// string value (`invalid type: string "…"`); a configuration path can point at any file
/// (`/etc/shadow`), and the error is printed, logged and sent to clients.
pub fn toml_error(e: &toml::de::Error, text: Option<&str>) -> String {
    let message = redact_quoted_strings(e.message().trim_end());
    match (e.span(), text) {
        (Some(span), Some(text)) => {
            let (line, column) = line_column(text, span.start);
            format!("line {line}, column {column}: {message}")
        }
        _ => message,
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut at = offset.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, column)
}

/// serde's `string "…"` (and `char '…'`) in a message, with the quoted text left out.
fn redact_quoted_strings(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find("string \"") {
        out.push_str(&rest[..i]);
        out.push_str("a string");
        let after = &rest[i + "string \"".len()..];
        // the quoted text is Debug-escaped: it ends at the first quote not after a backslash
        let mut end = after.len();
        let mut escaped = false;
        for (j, c) in after.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    end = j + 1;
                    break;
                }
                _ => escaped = false,
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn toml_errors_name_the_place_never_the_text() {
        let text = "# shadow\nroot:*:20228:0:99999:7:::\n";
        let e = text.parse::<toml::Table>().unwrap_err();
        let m = super::toml_error(&e, Some(text));
        assert!(m.starts_with("line 2, column "), "{m}");
        assert!(!m.contains("20228") && !m.contains("root"), "{m}");
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct N {
            n: u64,
        }
        let t: toml::Table = "n = \"secret \\\" text\"".parse().unwrap();
        let e = t.try_into::<N>().unwrap_err();
        let m = super::toml_error(&e, None);
        assert!(!m.contains("secret") && !m.contains("text\""), "{m}");
        assert!(m.contains("a string"), "{m}");
    }

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

//! Token counting is a trait: a cheap documented default, a real tokenizer where a model needs it.

/// Counts tokens of a text, as the budget sees them.
pub trait TokenCounter: Send + Sync {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> usize;
    /// A short name for reports ("chars/4").
    fn name(&self) -> &str;
}

/// The default counter: one token per 4 Unicode scalar values, rounded up (an empty text is 0).
/// English BPE tokenizers average close to 4 characters per token, so budgets stated in tokens
/// land near what a model would count.
#[derive(Debug, Default, Clone, Copy)]
pub struct CharTokenCounter;

impl TokenCounter for CharTokenCounter {
    fn count(&self, text: &str) -> usize {
        text.chars().count().div_ceil(4)
    }
    fn name(&self) -> &str {
        "chars/4"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn counts_round_up() {
        let c = CharTokenCounter;
        assert_eq!(c.count(""), 0);
        assert_eq!(c.count("a"), 1);
        assert_eq!(c.count("abcd"), 1);
        assert_eq!(c.count("abcde"), 2);
        assert_eq!(c.count("ééééé"), 2);
    }
}

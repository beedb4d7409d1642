//! The `IN (...)` lists of the reads by id or name, in chunks of bound parameters.
//!
//! Why padded: a statement text per list length missed the statement cache on most calls (a
//! recall's misses, a page of turns, the entities of a turn vary in number), so each was parsed
//! and planned again. Padded with its last value to a power of two, a list takes one of a
//! handful of texts, each prepared once; a repeated value changes no `IN` result.

/// Bound values per `IN (...)` query, well under SQLite's limit.
pub(crate) const CHUNK: usize = 500;

/// The marks `?2, ?3, ...` of `chunk` (after one leading parameter, `?1`) and its values,
/// padded to the next power of two (at most [`CHUNK`]; `chunk` is a non-empty slice of at most
/// that many, as `chunks(CHUNK)` yields).
pub(crate) fn padded<T: Clone>(chunk: &[T]) -> (String, impl Iterator<Item = T> + '_) {
    let width = chunk.len().next_power_of_two().min(CHUNK).max(chunk.len());
    let marks = (0..width).map(|i| format!("?{}", i + 2)).collect::<Vec<_>>().join(", ");
    let pad = chunk.last().cloned().into_iter().cycle();
    (marks, chunk.iter().cloned().chain(pad).take(width))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_padded_with_their_last_value_to_a_power_of_two() {
        let (marks, values) = padded(&[7, 8, 9]);
        assert_eq!(marks, "?2, ?3, ?4, ?5");
        assert_eq!(values.collect::<Vec<_>>(), vec![7, 8, 9, 9]);
        let (marks, values) = padded(&[1u8; 300]);
        assert_eq!(marks.split(", ").count(), CHUNK);
        assert_eq!(values.count(), CHUNK);
    }
}

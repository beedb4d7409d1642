//! `entity_boost` in the tantivy index: which live documents of a namespace have an entity the
//! query names (committed ones through the raw `entity` field, uncommitted ones through the
//! overlay), then the shared boost of [`crate::entity_match`].
use std::collections::{HashMap, HashSet};

use mnemo_contract::{Hit, MemoryId, Namespace, Result};
use tantivy::collector::DocSetCollector;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Searcher, Term};

use super::overlay::Overlay;
use super::schema::Fields;
use super::terr;
use crate::entity_match::{boost, query_phrases};

/// The live documents of `ns` with an entity named by `query`.
fn matched(
    searcher: &Searcher,
    fields: Fields,
    overlay: &Overlay,
    ns: &Namespace,
    query: &str,
) -> Result<HashSet<MemoryId>> {
    let keys: HashSet<String> = query_phrases(query).into_iter().collect();
    if keys.is_empty() {
        return Ok(HashSet::new());
    }
    let any_entity: Vec<(Occur, Box<dyn Query>)> = keys
        .iter()
        .map(|k| {
            let q: Box<dyn Query> =
                Box::new(TermQuery::new(Term::from_field_text(fields.entity, k), IndexRecordOption::Basic));
            (Occur::Should, q)
        })
        .collect();
    let query = BooleanQuery::new(vec![
        (
            Occur::Must,
            Box::new(TermQuery::new(Term::from_field_text(fields.ns, ns.as_str()), IndexRecordOption::Basic)),
        ),
        (Occur::Must, Box::new(BooleanQuery::new(any_entity))),
    ]);
    let docs = searcher.search(&query, &DocSetCollector).map_err(|e| terr("entity search failed", e))?;
    let mut out = HashSet::new();
    let mut columns = HashMap::new();
    for addr in docs {
        let col = match columns.entry(addr.segment_ord) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(
                searcher.segment_reader(addr.segment_ord).fast_fields().i64("id").map_err(|e| terr("id column", e))?,
            ),
        };
        let Some(id) = col.first(addr.doc_id) else { continue };
        let id = MemoryId(id);
        if !overlay.hides(ns, id) {
            out.insert(id);
        }
    }
    out.extend(overlay.entity_matches(ns, &keys));
    Ok(out)
}

/// `hits` with those whose entities `query` names boosted by `w` (a no-op at `w` = 0).
pub fn boost_matches(
    hits: Vec<Hit>,
    w: f32,
    searcher: &Searcher,
    fields: Fields,
    overlay: &Overlay,
    ns: &Namespace,
    query: &str,
) -> Result<Vec<Hit>> {
    if w <= 0.0 || hits.is_empty() {
        return Ok(hits);
    }
    let limit = hits.len();
    let m = matched(searcher, fields, overlay, ns, query)?;
    Ok(boost(hits, &m, w, limit))
}

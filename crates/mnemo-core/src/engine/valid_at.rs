//! World time at recall: when each memory's fact held in the world, as far as memory knows
//! (`recall --valid-at T`, and the world clock `history` prints).
//!
//! A memory's interval is the one its turn stated ([`Validity`]). A supersession closes it: a
//! value that was replaced ends where its successor begins — the successor's stated start,
//! else the time the successor was recorded — unless it stated its own end; and a successor
//! that states no start began, at the latest known, when it was recorded. A memory that states
//! nothing and is in no supersession is taken as true throughout (memory does not know when it
//! started). A memory forgotten (tombstoned without a successor) was not a changed fact but a
//! withdrawn one: it holds at no world time.
use std::collections::{HashMap, HashSet};

use mnemo_contract::model::*;
use mnemo_contract::time::Timestamp;
use mnemo_contract::Validity;

/// What memory knew at system time `known_at` of when each memory of `all` held in the world,
/// by id: the memories recorded by then that were active then, or superseded by then by a
/// successor recorded by then (forgotten ones, erased ones and later ones are absent).
pub fn world_validity(all: &[Memory], known_at: Timestamp) -> HashMap<MemoryId, Validity> {
    let recorded: HashMap<MemoryId, &Memory> =
        all.iter().filter(|m| m.created_at <= known_at && !m.content.is_empty()).map(|m| (m.id, m)).collect();
    let successor_of = |m: &Memory| -> Option<&Memory> {
        match &m.status {
            Status::Tombstoned { superseded_by: Some(by), at, .. } if *at <= known_at => recorded.get(by).copied(),
            _ => None,
        }
    };
    let successors: HashSet<MemoryId> = recorded.values().filter_map(|m| successor_of(m)).map(|s| s.id).collect();
    let start = |m: &Memory| -> Option<Timestamp> {
        m.validity.from.or_else(|| successors.contains(&m.id).then_some(m.created_at))
    };
    recorded
        .values()
        .filter_map(|m| {
            let own = Validity { from: start(m), ..m.validity };
            match (&m.status, successor_of(m)) {
                (Status::Tombstoned { at, .. }, None) if *at <= known_at => None,
                (_, Some(next)) => Some((m.id, own.closed_by(Some(start(next).unwrap_or(next.created_at))))),
                _ => Some((m.id, own)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn memory(id: i64, created: i64, validity: Validity, status: Status) -> Memory {
        Memory { id: MemoryId(id), validity, ..crate::engine::as_of::tests::memory(created, status) }
    }

    fn superseded(by: i64, at: i64) -> Status {
        Status::Tombstoned { reason: "superseded".into(), at: t(at), superseded_by: Some(MemoryId(by)) }
    }

    #[test]
    fn a_supersession_closes_the_old_interval_where_the_new_one_starts() {
        let stated = |from, to| Validity { from, to };
        let all = vec![
            // Lisbon, stated open-ended from 10, replaced by Porto stated from 50 (recorded at 900).
            memory(1, 100, stated(Some(t(10)), None), superseded(2, 900)),
            memory(2, 900, stated(Some(t(50)), None), Status::Active),
            // A lead time of 21 days, replaced by 35 days recorded at 2000; neither states a time.
            memory(3, 1000, Validity::default(), superseded(4, 2000)),
            memory(4, 2000, Validity::default(), Status::Active),
            // Forgotten: held at no world time.
            memory(
                5,
                100,
                Validity::default(),
                Status::Tombstoned { reason: "forget".into(), at: t(300), superseded_by: None },
            ),
            // Says nothing, in no supersession: true throughout.
            memory(6, 100, Validity::default(), Status::Active),
        ];
        let w = world_validity(&all, t(5000));
        assert_eq!(w[&MemoryId(1)], stated(Some(t(10)), Some(t(50))));
        assert_eq!(w[&MemoryId(2)], stated(Some(t(50)), None));
        assert_eq!(w[&MemoryId(3)], stated(None, Some(t(2000))));
        assert_eq!(w[&MemoryId(4)], stated(Some(t(2000)), None), "a successor began, at the latest, when recorded");
        assert!(!w.contains_key(&MemoryId(5)));
        assert!(w[&MemoryId(6)].is_unstated());
        // Known at 1500: the lead time was not yet replaced.
        let w = world_validity(&all, t(1500));
        assert!(w[&MemoryId(3)].is_unstated());
        assert!(!w.contains_key(&MemoryId(4)), "not yet recorded");
        assert!(!w.contains_key(&MemoryId(5)));
        // Known at 200: the forgotten memory was still held, with nothing stated.
        assert!(world_validity(&all, t(200))[&MemoryId(5)].is_unstated());
    }
}

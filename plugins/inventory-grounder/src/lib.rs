//! A grounder whose lookup needs code, not config: the stock on hand of a SKU is the sum of its
//! movements in an inventory ledger, and its next delivery is the earliest open purchase
//! order. The SQLite database is opened read-only; the grounder never writes.
//!
//! ```toml
//! [[plugins]]
//! path = "../../target/debug/inventory_grounder"
//!
//! [[grounders]]
//! kind = "inventory_ledger"
//! source = "inventory"
//! path = "inventory.db"     # relative to the data directory
//! ```
//!
//! Schema (see examples/supply-chain/inventory.sql):
//! `movements(sku TEXT, qty INTEGER, kind TEXT, posted_at TEXT)` — receipts positive, issues
//! negative; `deliveries(sku TEXT, qty INTEGER, due TEXT, status TEXT)` — status `open`,
//! `received` or `cancelled`. SKUs match case-insensitively.
//!
//! Attributes answered: `stock on hand` ("120 units") and `next delivery` ("2026-08-04, 200
//! units"); anything else is not held here.
#![deny(missing_docs)]

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde::Deserialize;
use std::sync::Mutex;

use mnemo_plugin_sdk::{export_plugin, Grounded, GrounderPlugin, PluginError, Settings};

const STOCK: &str = "SELECT COUNT(*), COALESCE(SUM(qty), 0) FROM movements WHERE lower(sku) = lower(?1)";
const NEXT: &str = "SELECT due, qty FROM deliveries WHERE lower(sku) = lower(?1) AND status = 'open' \
                    ORDER BY due, rowid LIMIT 1";

/// Stock and deliveries from the ledger.
pub struct InventoryLedger {
    source: String,
    /// rusqlite connections are `Send`, not `Sync`: one call at a time.
    db: Mutex<Connection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LedgerSettings {
    source: String,
    path: String,
}

fn folded(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

impl InventoryLedger {
    fn err(&self, e: impl std::fmt::Display) -> PluginError {
        PluginError(format!("{}: {e}", self.source))
    }

    fn stock(&self, db: &Connection, sku: &str) -> Result<Option<String>, PluginError> {
        let (n, sum): (i64, i64) =
            db.query_row(STOCK, [sku], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| self.err(e))?;
        // a SKU the ledger has never seen is not held here (unverifiable), not "0 units"
        Ok((n > 0).then(|| format!("{sum} units")))
    }

    fn next_delivery(&self, db: &Connection, sku: &str) -> Result<Option<String>, PluginError> {
        let row: Option<(String, i64)> =
            db.query_row(NEXT, [sku], |r| Ok((r.get(0)?, r.get(1)?))).optional().map_err(|e| self.err(e))?;
        Ok(row.map(|(due, qty)| format!("{due}, {qty} units")))
    }
}

impl GrounderPlugin for InventoryLedger {
    const KIND: &'static str = "inventory_ledger";
    const ABOUT: &'static str = "stock on hand and next delivery of a SKU, summed from a SQLite movements ledger";

    fn new(settings: &Settings) -> Result<Self, PluginError> {
        let s: LedgerSettings = settings.parse()?;
        let path = settings.data_path(&s.path)?;
        let origin = settings.origin();
        let db = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(|e| PluginError(format!("{origin}: cannot open {} read-only: {e}", path.display())))?;
        // fail at start-up when the schema is not the ledger's
        for q in [STOCK, NEXT] {
            db.prepare(q)
                .map_err(|e| PluginError(format!("{origin}: {} is not an inventory ledger: {e}", path.display())))?;
        }
        Ok(InventoryLedger { source: s.source, db: Mutex::new(db) })
    }

    fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<Grounded>, PluginError> {
        let db = self.db.lock().map_err(|_| self.err("connection poisoned"))?;
        let sku = entity.trim();
        let value = match folded(attribute).as_str() {
            "stock on hand" | "stock" => self.stock(&db, sku)?,
            "next delivery" => self.next_delivery(&db, sku)?,
            _ => None,
        };
        Ok(value.map(|value| Grounded { value, source: self.source.clone(), as_of: None }))
    }
}

export_plugin!(grounders: [InventoryLedger]);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ledger(dir: &std::path::Path) -> InventoryLedger {
        let db = Connection::open(dir.join("inv.db")).unwrap();
        db.execute_batch(include_str!("../../../examples/supply-chain/inventory.sql")).unwrap();
        drop(db);
        let s = Settings::new(serde_json::from_str(r#"{"source":"inventory","path":"inv.db"}"#).unwrap(), "t", dir);
        InventoryLedger::new(&s).unwrap()
    }

    #[test]
    fn sums_the_ledger_and_finds_the_next_open_delivery() {
        let d = tempfile::tempdir().unwrap();
        let g = ledger(d.path());
        assert_eq!(g.lookup("ic-mc-44", "Stock on hand").unwrap().unwrap().value, "120 units");
        assert_eq!(g.lookup("IC-MC-44", "next delivery").unwrap().unwrap().value, "2026-08-04, 200 units");
        assert!(g.lookup("NOPE-1", "stock on hand").unwrap().is_none());
        assert!(g.lookup("IC-MC-44", "colour").unwrap().is_none());
    }

    #[test]
    fn opens_read_only_and_refuses_other_files() {
        let d = tempfile::tempdir().unwrap();
        let g = ledger(d.path());
        let e = g.db.lock().unwrap().execute("DELETE FROM movements", []).unwrap_err();
        assert!(e.to_string().contains("readonly"), "{e}");
        std::fs::write(d.path().join("x.db"), b"").unwrap();
        let s = Settings::new(serde_json::from_str(r#"{"source":"i","path":"x.db"}"#).unwrap(), "cfg", d.path());
        assert!(InventoryLedger::new(&s).err().unwrap().0.contains("not an inventory ledger"));
    }
}

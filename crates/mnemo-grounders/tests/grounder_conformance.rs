//! The Grounder conformance suite against every grounder in this crate, and the read-only
//! promise: looking up never changes the system of record.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use mnemo_contract::conformance::grounder;
use mnemo_contract::Grounder;
use mnemo_grounders::{CsvGrounder, SqliteGrounder, SqliteMapping, TableGrounder};

#[tokio::test]
async fn table_grounder_conforms() {
    let g = TableGrounder::new("erp");
    for (e, a, v) in grounder::ROWS {
        g.set(e, a, v);
    }
    grounder::run_all(Arc::new(g)).await;
}

fn csv_text() -> String {
    let mut text = String::from("entity,attribute,value,as_of\n");
    for (e, a, v) in grounder::ROWS {
        text.push_str(&format!("\"{e}\",\"{a}\",\"{v}\",2026-07-01\n"));
    }
    text
}

#[tokio::test]
async fn csv_grounder_conforms_and_rereads_on_change() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("erp.csv");
    std::fs::write(&p, csv_text()).unwrap();
    let g = Arc::new(CsvGrounder::new("erp", p.clone()));
    grounder::run_all(g.clone()).await;
    std::fs::write(&p, csv_text().replace("35 days", "42 days (revised)")).unwrap();
    let v = g.lookup("IC-MC-44 from S-208", "lead time").await.unwrap().unwrap();
    assert_eq!(v.value, "42 days (revised)");
}

/// The reproduction: a quoted row with a fourth column must ground to the value alone.
#[tokio::test]
async fn quoted_csv_with_extra_columns_grounds_to_the_value() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("clinic.csv");
    std::fs::write(
        &p,
        "entity,attribute,value,as_of,clerk\n\"Maria Lopez\",\"metformin dose\",\"500 mg twice daily\",2026-03-08,\"Dr. Kim, MD\"\n",
    )
    .unwrap();
    let g = CsvGrounder::new("clinic", p);
    let v = g.lookup("Maria Lopez", "metformin dose").await.unwrap().unwrap();
    assert_eq!(v.value, "500 mg twice daily");
    assert_eq!(v.as_of, Some(mnemo_contract::Timestamp::parse_rfc3339("2026-03-08T00:00:00Z").unwrap()));
}

#[tokio::test]
async fn many_valued_rows_never_pick_one() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("a.csv");
    std::fs::write(&p, "entity,attribute,value\nMaria Lopez,allergy,penicillin\nMaria Lopez,allergy,latex\n").unwrap();
    let g = CsvGrounder::new("clinic", p);
    let e = g.lookup("Maria Lopez", "allergy").await.expect_err("two values are no answer");
    assert_eq!(e.grounder_kind(), Some(mnemo_contract::GrounderErrorKind::BadAnswer), "{e}");
}

#[tokio::test]
async fn csv_grounder_never_writes_its_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("erp.csv");
    std::fs::write(&p, csv_text()).unwrap();
    let before = (std::fs::read(&p).unwrap(), std::fs::metadata(&p).unwrap().modified().unwrap());
    let g = CsvGrounder::new("erp", p.clone());
    for _ in 0..3 {
        let _ = g.lookup("IC-MC-44 from S-208", "lead time").await.unwrap();
        let _ = g.lookup("nobody", "nothing").await.unwrap();
    }
    let after = (std::fs::read(&p).unwrap(), std::fs::metadata(&p).unwrap().modified().unwrap());
    assert_eq!(before, after);
}

fn seeded_db(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("records.db");
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch("CREATE TABLE items(sku TEXT, field TEXT, current TEXT, updated TEXT, note TEXT);").unwrap();
    for (e, a, v) in grounder::ROWS {
        c.execute("INSERT INTO items VALUES (?1, ?2, ?3, '2026-07-01', 'x')", [e, a, v]).unwrap();
    }
    p
}

fn mapping() -> SqliteMapping {
    SqliteMapping {
        table: "items".into(),
        entity: "sku".into(),
        attribute: "field".into(),
        value: "current".into(),
        as_of: Some("updated".into()),
    }
}

#[tokio::test]
async fn sqlite_grounder_conforms_and_never_writes() {
    let d = tempfile::tempdir().unwrap();
    let p = seeded_db(d.path());
    let before = std::fs::read(&p).unwrap();
    let g = Arc::new(SqliteGrounder::open("erp", &p, &mapping()).unwrap());
    grounder::run_all(g.clone()).await;
    // an entity crafted as SQL stays a parameter
    assert!(g.lookup("x'); DROP TABLE items; --", "lead time").await.unwrap().is_none());
    assert_eq!(std::fs::read(&p).unwrap(), before, "the database file is unchanged");
    let c = rusqlite::Connection::open(&p).unwrap();
    let n: i64 = c.query_row("SELECT count(*) FROM items", [], |r| r.get(0)).unwrap();
    assert_eq!(n, grounder::ROWS.len() as i64);
}

#[tokio::test]
async fn sqlite_mapping_errors_name_the_column() {
    let d = tempfile::tempdir().unwrap();
    let p = seeded_db(d.path());
    let bad = SqliteMapping { value: "no_such_column".into(), ..mapping() };
    let e = SqliteGrounder::open("erp", &p, &bad).err().unwrap().to_string();
    assert!(e.contains("no_such_column"), "{e}");
}

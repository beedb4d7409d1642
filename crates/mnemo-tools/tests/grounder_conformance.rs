//! The Grounder conformance suite against every grounder in this crate.
use std::sync::Arc;

use mnemo_core::conformance::grounder;
use mnemo_tools::TableGrounder;

#[tokio::test]
async fn table_grounder_conforms() {
    let g = TableGrounder::new("erp");
    for (e, a, v) in grounder::ROWS {
        g.set(e, a, v);
    }
    grounder::run_all(Arc::new(g)).await;
}

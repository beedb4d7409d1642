//! README's LoCoMo table is the rendering of the result file it names, so a figure in the
//! README cannot drift from what a run in the tree measured (regenerate it with
//! `mnemo bench locomo --json bench/results/locomo-dev.json --readme README.md`).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::path::Path;

use mnemo_bench::locomo::readme;

#[test]
fn readme_locomo_table_is_its_result_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("README.md")).expect("README.md at the repository root");
    let block = readme::block(&text).expect("README.md holds the generated LoCoMo block");
    let file = readme::named_file(block).expect("the block names its result file");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(file)).expect("the named result file")).unwrap();
    let want = readme::render(&report, file).unwrap();
    assert_eq!(
        block,
        want.trim(),
        "README.md's LoCoMo table differs from {file}: rerun `mnemo bench locomo --data <locomo-dev.json> --json {file} --readme README.md`"
    );
}

//! The core's table of today's expectations (`core/src/expectations.jsonl`, read on every replay) must be
//! the experiment catalogue's: the experiments own what each case expects, the core only reads it.
//!
//! Outside CI a stale table is rewritten and the test fails once, saying so (commit the new table); in CI
//! (`CI` set) it only fails.

use async_lab::experiments::catalogue;

use async_lab_core::catalogue::presets::Preset;
use async_lab_core::expectations::{table_text, Known, TABLE};
use clap::ValueEnum;

#[test]
fn the_core_knows_todays_expectations() {
    let cases: Vec<_> = Preset::value_variants().iter().flat_map(|&p| catalogue(p, None)).collect();
    // An id names one experiment: where presets share one, they must define it alike.
    let mut seen = std::collections::BTreeMap::new();
    for c in &cases {
        let known = Known::of(&c.setup);
        if let Some(other) = seen.insert(known.id.clone(), known.clone()) {
            assert_eq!(other, known, "two presets define {} differently", known.id);
        }
    }
    let want = table_text(cases.iter().map(|c| &c.setup));
    if want == TABLE {
        return;
    }
    let path = async_lab_tests::project_root().join("core/src/expectations.jsonl");
    if std::env::var_os("CI").is_none() {
        std::fs::write(&path, &want).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        panic!("{} was out of date with the experiment catalogue: rewritten, commit it", path.display());
    }
    panic!("{} is out of date with the experiment catalogue: run `cargo test -p async-lab-tests --test expectations` and commit it", path.display());
}

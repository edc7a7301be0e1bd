//! The lab's numbers behind the trace's remedies (`trace-analysis/src/remedies.json`) are derived from the
//! committed recordings through today's rules: derived again here, they must be the committed table byte for
//! byte. A rule or a recording that changes without it fails this test; `ASYNC_LAB_UPDATE_REMEDIES=1` writes
//! it anew.

use async_lab_core::record::Recording;
use async_lab_core::trace::from_recordings;
use async_lab_core::trace::remedies;

fn derived() -> remedies::Remedies {
    let root = async_lab_tests::project_root();
    let recs: Vec<(&str, Recording)> = from_recordings::remedies::RECORDINGS
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(root.join("recordings").join(name)).unwrap();
            (*name, Recording::parse(&text).unwrap())
        })
        .collect();
    from_recordings::remedies::derive(&recs.iter().map(|(n, r)| (*n, r)).collect::<Vec<_>>())
}

#[test]
fn the_remedy_table_is_derived_from_the_recordings() {
    let root = async_lab_tests::project_root();
    let table = derived();
    let json = serde_json::to_string_pretty(&table).unwrap() + "\n";
    let path = root.join("trace-analysis/src/remedies.json");
    if std::env::var_os("ASYNC_LAB_UPDATE_REMEDIES").is_some() {
        std::fs::write(&path, &json).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        json,
        "remedies.json is stale: rerun with ASYNC_LAB_UPDATE_REMEDIES=1"
    );
    assert!(&table == remedies::lab(), "the table compiled into the core is not the committed one: rebuild");
}

#[test]
fn the_lab_measured_the_remedies_the_findings_propose() {
    let t = derived();
    assert!(t.gpu.contains("H200"), "{}", t.gpu);
    // Pinned copies both ways through both APIs, from a few KiB to the seed's 2 GiB, all returning at once.
    for api in ["driver", "runtime"] {
        for dir in ["htod", "dtoh"] {
            let sizes: Vec<u64> =
                t.pinned_copies.iter().filter(|c| c.api == api && c.direction == dir).map(|c| c.bytes).collect();
            assert!(sizes.len() >= 8, "{api} {dir}: {sizes:?}");
        }
    }
    assert!(t.pinned_copies.iter().all(|c| c.class.returns_at_once() && c.returned_ns < 100_000));
    let big = t.pinned_copy("runtime", "htod", 2 << 30).unwrap();
    assert_eq!(big.bytes, 2 << 30, "the seed's 2 GiB copy");
    // A first launch: waited under lazy loading, returned at once under eager loading.
    let lazy = t.load("runtime", "first-launch", "lazy", "other").unwrap();
    let eager = t.load("runtime", "first-launch", "eager", "other").unwrap();
    assert!(lazy.waited_ns > 10_000_000 && eager.returned_ns < 50_000, "{lazy:?} {eager:?}");
}

//! The capability table the tracer checks its wait claims against (`trace-analysis/src/capabilities.json`) is
//! derived from the committed recordings through today's rules: derived again here, it must be the committed
//! table byte for byte, and `docs/capabilities.md` must hold its Markdown. A rule or a recording that changes
//! without them fails this test; `ASYNC_LAB_UPDATE_CAPABILITIES=1` writes both anew.

use async_lab_core::record::Recording;
use async_lab_core::trace::capability::{self, Way};
use async_lab_core::trace::from_recordings::capabilities;

fn derived() -> capability::Table {
    let root = async_lab_tests::project_root();
    let recs: Vec<(&str, Recording)> = capabilities::RECORDINGS
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(root.join("recordings").join(name)).unwrap();
            (*name, Recording::parse(&text).unwrap())
        })
        .collect();
    capabilities::derive(&recs.iter().map(|(n, r)| (*n, r)).collect::<Vec<_>>())
}

const DOC_START: &str = "<!-- capability table: derived, do not edit -->\n";
const DOC_END: &str = "<!-- end of the capability table -->\n";

#[test]
fn the_capability_table_is_derived_from_the_recordings() {
    let root = async_lab_tests::project_root();
    let table = derived();
    let json = serde_json::to_string_pretty(&table).unwrap() + "\n";
    let json_path = root.join("trace-analysis/src/capabilities.json");
    let doc_path = root.join("docs/capabilities.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap_or_default();
    let (head, tail) = match (doc.find(DOC_START), doc.find(DOC_END)) {
        (Some(a), Some(b)) => (doc[..a].to_owned(), doc[b + DOC_END.len()..].to_owned()),
        _ => (doc.clone(), String::new()),
    };
    let new_doc = format!("{head}{DOC_START}{}{DOC_END}{tail}", table.markdown());
    if std::env::var_os("ASYNC_LAB_UPDATE_CAPABILITIES").is_some() {
        std::fs::write(&json_path, &json).unwrap();
        std::fs::write(&doc_path, &new_doc).unwrap();
    }
    let doc = std::fs::read_to_string(&doc_path).unwrap_or_default();
    assert_eq!(
        std::fs::read_to_string(&json_path).unwrap(),
        json,
        "capabilities.json is stale: rerun with ASYNC_LAB_UPDATE_CAPABILITIES=1"
    );
    assert_eq!(doc, new_doc, "docs/capabilities.md is stale: rerun with ASYNC_LAB_UPDATE_CAPABILITIES=1");
    assert!(&table == capability::lab(), "the table compiled into the core is not the committed one: rebuild");
}

#[test]
fn the_lab_has_seen_the_waits_the_rules_document() {
    let t = derived();
    let has = |f: &str, way: Way| t.entries.iter().any(|e| e.function == f && e.way == way);
    // Rules the whole project rests on, seen on the H200.
    assert!(has("cuStreamSynchronize", Way::Stream));
    assert!(has("cudaStreamSynchronize", Way::Stream));
    assert!(has("cuMemFree", Way::Device));
    assert!(has("cuMemcpyHtoDAsync", Way::OwnWork) || has("cuMemcpyHtoDAsync", Way::Stream));
    // And calls that never wait are not said to.
    assert!(!has("cuMemAllocHost", Way::Device));
    assert!(!has("cuMemAllocHost", Way::Stream));
}

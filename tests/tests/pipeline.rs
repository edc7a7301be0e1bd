//! The whole path from raw signals to a report, on synthetic recordings: what a replay does with a real one.
//! These signals are made up on purpose (they test the classifier); real measurements live in recordings/.

use async_lab::experiments::catalogue;

use async_lab_core::catalogue::presets::Preset;
use async_lab_core::classify::Class;
use async_lab_core::output::{render, Format};
use async_lab_core::record::{CaseRecord, Recording, Rep, RECORDING_KIND, SCHEMA_VERSION};
use async_lab_core::report::build;
use async_lab_core::rules::Verdict;

fn machine() -> async_lab_core::machine::MachineInfo {
    serde_json::from_value(serde_json::json!({
        "gpu_name": "Synthetic GPU", "gpu_ordinal": 0, "compute_capability": "9.0", "sm_count": 132,
        "memory_total_bytes": 1u64 << 37, "memory_free_bytes": 1u64 << 37, "cuda_driver_api": "13.0",
        "driver_release": null, "pci_bus_id": "0000:00:00.0", "pcie_link": null, "pcie_max_link": null,
        "sm_clock_max_mhz": 1980, "memory_clock_max_mhz": 3201, "async_engine_count": 3,
        "concurrent_managed_access": true, "pageable_memory_access": false, "host_cpu": "synthetic",
        "host_cpus": 16, "os": "synthetic", "tool_version": "0", "git_commit": "synthetic"
    }))
    .unwrap()
}

fn rep(call_us: u64, blocker: Option<bool>, op: Option<bool>, captured: Option<bool>) -> Rep {
    Rep {
        host_call_ns: call_us * 1000,
        host_cpu_ns: call_us * 900,
        blocker_done_at_return: blocker,
        op_done_at_return: op,
        data_captured_at_return: captured,
        blocker_device_ns: Some(20_000_000),
        op_device_ns: Some(50_000),
        ..Rep::default()
    }
}

fn record(id: &str, reps: Vec<Rep>) -> CaseRecord {
    let setup = catalogue(Preset::Default, None)
        .into_iter()
        .find(|c| c.setup.id == id)
        .unwrap_or_else(|| panic!("no case {id}"))
        .setup;
    CaseRecord { setup, blocker_ns: Some(20_000_000), warmup: None, reps, series: None, error: None, skipped: None }
}

fn recording(cases: Vec<CaseRecord>) -> Recording {
    Recording {
        kind: RECORDING_KIND.into(),
        schema_version: SCHEMA_VERSION,
        created: "2026-12-02T00:00:00Z".into(),
        preset: "default".into(),
        args: vec![],
        reps_per_case: 5,
        partial: false,
        machine: machine(),
        clock: None,
        clock_later: vec![],
        cases,
    }
}

#[test]
fn signals_become_classes_and_verdicts() {
    let staged = |_| rep(800, Some(false), Some(false), Some(true));
    let rec = recording(vec![
        // Pinned async copy that returned at once: A1 predicts async.
        record(
            "copy/async/htod/pinned/nonblocking/same/1MiB",
            (0..5).map(|_| rep(5, Some(false), Some(false), Some(false))).collect(),
        ),
        // Pageable device → host that waited and completed: A2 predicts blocking.
        record(
            "copy/async/dtoh/pageable/nonblocking/same/1MiB",
            (0..5).map(|_| rep(21_000, Some(true), Some(true), None)).collect(),
        ),
        // Pageable host → device, staged in four repetitions of five, one noisy repetition waited.
        record("copy/async/htod/pageable/nonblocking/same/1MiB", {
            let mut v: Vec<Rep> = (0..4).map(staged).collect();
            v.insert(2, rep(20_500, Some(true), Some(false), None));
            v
        }),
        // A free that waited for a blocker on another stream: device-sync, as AL1 predicts.
        record("alloc/mem-free/nonblocking", (0..5).map(|_| rep(20_000, Some(true), None, None)).collect()),
        // A non-async device memset that waited for completion: M1 predicts async, so it deviates.
        record(
            "memset/sync/device/legacy/same/1MiB",
            (0..5).map(|_| rep(20_100, Some(true), Some(true), None)).collect(),
        ),
        // cuMemAlloc: no rule about the host.
        record("alloc/mem-alloc/legacy", (0..5).map(|_| rep(90, Some(false), None, None)).collect()),
    ]);
    let report = build(&rec);
    let got: Vec<(&str, Option<Class>, Option<Verdict>)> =
        report.results.iter().map(|r| (r.id.as_str(), r.class, r.verdict)).collect();
    assert_eq!(
        got,
        vec![
            ("copy/async/htod/pinned/nonblocking/same/1MiB", Some(Class::Async), Some(Verdict::Matches)),
            ("copy/async/dtoh/pageable/nonblocking/same/1MiB", Some(Class::Blocking), Some(Verdict::Matches)),
            ("copy/async/htod/pageable/nonblocking/same/1MiB", Some(Class::Staged), Some(Verdict::Matches)),
            ("alloc/mem-free/nonblocking", Some(Class::DeviceSync), Some(Verdict::Matches)),
            ("memset/sync/device/legacy/same/1MiB", Some(Class::Blocking), Some(Verdict::Deviates)),
            ("alloc/mem-alloc/legacy", Some(Class::Async), Some(Verdict::Undocumented)),
        ]
    );
    let noisy = &report.results[2];
    assert_eq!(noisy.agreement, 0.8);
    assert!(noisy.explanation.contains("4 of 5 repetitions agree"), "{}", noisy.explanation);
    assert!(noisy.explanation.contains("staging buffer"), "{}", noisy.explanation);
    assert_eq!((report.summary.matches, report.summary.deviates, report.summary.undocumented), (4, 1, 1));
    let spread = report.results[1].host_call_us.unwrap();
    assert_eq!((spread.median, spread.n), (21_000.0, 5));
}

#[test]
fn every_format_renders_and_json_carries_the_schema() {
    let rec = recording(vec![record(
        "copy/async/htod/pinned/nonblocking/same/1MiB",
        (0..5).map(|_| rep(5, Some(false), Some(false), Some(false))).collect(),
    )]);
    let report = build(&rec);
    let json: serde_json::Value = serde_json::from_str(&render(&report, Format::Json).unwrap()).unwrap();
    assert_eq!(json["schema_version"], SCHEMA_VERSION);
    let r = &json["results"][0];
    for key in [
        "id",
        "rule",
        "class",
        "expected",
        "verdict",
        "host_call_us",
        "host_cpu_us",
        "waited_for_prior_work",
        "complete_at_return",
        "device_us",
        "bytes",
    ] {
        assert!(r.get(key).is_some(), "result lacks {key}: {r}");
    }
    for key in ["median", "min", "max", "n"] {
        assert!(r["host_call_us"].get(key).is_some());
    }
    for key in [
        "gpu_name",
        "compute_capability",
        "cuda_driver_api",
        "pcie_link",
        "host_cpu",
        "os",
        "tool_version",
        "git_commit",
    ] {
        assert!(json["machine"].get(key).is_some(), "machine lacks {key}");
    }
    let table = render(&report, Format::Table).unwrap();
    assert!(table.contains("Copies") && table.contains("async") && table.contains("A1"), "{table}");
    let md = render(&report, Format::Md).unwrap();
    assert!(md.contains("| `copy/async/htod/pinned/nonblocking/same/1MiB` | A1 | async |"), "{md}");
    let csv = render(&report, Format::Csv).unwrap();
    assert_eq!(csv.lines().count(), 2);
    assert!(csv
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("copy/async/htod/pinned/nonblocking/same/1MiB,copy,cuMemcpyHtoDAsync,A1,async,"));
}

#[test]
fn a_case_that_failed_is_reported_as_an_error_not_a_class() {
    let mut failed = record("copy/async/htod/wc/nonblocking/same/4KiB", vec![]);
    failed.error = Some("cuMemHostAlloc failed: CUDA_ERROR_OUT_OF_MEMORY".into());
    let report = build(&recording(vec![failed]));
    let r = &report.results[0];
    assert_eq!((r.class, r.verdict), (None, None));
    assert_eq!(report.summary.errors, 1);
    assert!(r.explanation.starts_with("Not measured: cuMemHostAlloc failed"));
}

/// A peer template's record for one ordered pair, as `experiments::peer::run` makes it.
fn peer_record(template: &str, src: i32, dst: i32, reps: Vec<Rep>) -> CaseRecord {
    let mut r = record(template, reps);
    r.setup.id = async_lab_core::setup::pair_id(template, src, dst);
    let access = r.setup.layout.peer.unwrap().access;
    r.setup.layout.peer = Some(async_lab_core::setup::PeerSetup { src_gpu: Some(src), dst_gpu: Some(dst), access });
    r
}

#[test]
fn peer_pairs_get_rules_bandwidth_and_findings() {
    let early = || (0..5).map(|_| rep(8, Some(false), Some(false), None)).collect::<Vec<_>>();
    let waited = || (0..5).map(|_| rep(20_400, Some(true), Some(true), None)).collect::<Vec<_>>();
    let rec = recording(vec![
        peer_record("peer/peer-async/p2p-on/same/256MiB", 0, 1, early()),
        peer_record("peer/peer-async/p2p-on/same/256MiB", 1, 0, early()),
        // Staged through the host and the host waited: P4 promises no wait, so this deviates.
        peer_record("peer/peer-async/p2p-off/same/256MiB", 0, 1, waited()),
        peer_record("peer/peer-async/p2p-off/same/256MiB", 1, 0, early()),
        // Waiting for a blocker on the destination GPU is waiting for work the copy does not depend on.
        peer_record("peer/peer/p2p-on/dst-gpu/256MiB", 0, 1, waited()),
        peer_record("peer/peer-async/p2p-on/dst-gpu/256MiB", 0, 1, early()),
    ]);
    let report = build(&rec);
    let got: Vec<(&str, &str, Option<Class>, Option<Verdict>)> =
        report.results.iter().map(|r| (r.id.as_str(), r.rule.as_str(), r.class, r.verdict)).collect();
    use Class::*;
    use Verdict::*;
    assert_eq!(
        got,
        vec![
            ("peer/peer-async/p2p-on/same/256MiB/gpu0-to-gpu1", "P2", Some(Async), Some(Matches)),
            ("peer/peer-async/p2p-on/same/256MiB/gpu1-to-gpu0", "P2", Some(Async), Some(Matches)),
            ("peer/peer-async/p2p-off/same/256MiB/gpu0-to-gpu1", "P4", Some(Blocking), Some(Deviates)),
            ("peer/peer-async/p2p-off/same/256MiB/gpu1-to-gpu0", "P4", Some(Async), Some(Matches)),
            ("peer/peer/p2p-on/dst-gpu/256MiB/gpu0-to-gpu1", "P1", Some(DeviceSync), Some(Deviates)),
            ("peer/peer-async/p2p-on/dst-gpu/256MiB/gpu0-to-gpu1", "P2", Some(Async), Some(Matches)),
        ]
    );
    // 256 MiB in 50 µs of device time: bytes per nanosecond are GB/s.
    let bw = report.results[0].bandwidth_gb_s.unwrap();
    assert!((bw - 268_435_456.0 / 50_000.0).abs() < 1e-6, "{bw}");
    // Device time behind a blocker on the other GPU is not the copy alone: no bandwidth there.
    assert_eq!(report.results[4].bandwidth_gb_s, None);
    let why = |i: usize| report.results[i].explanation.clone();
    assert!(why(2).contains("goes through host memory"), "{}", why(2));
    assert!(why(4).contains("on another GPU that it does not depend on"), "{}", why(4));
    // 50 µs of GPU time next to a 20 ms blocker: the device did not hold the copy back.
    assert!(why(5).contains("did not wait for the destination GPU's blocker"), "{}", why(5));
    let findings = report.summary.findings.join("\n");
    let want = "cuMemcpyPeerAsync with peer access off: async in 1, blocking in 1 of 2 experiments (pairs × sizes)";
    assert!(findings.contains(want), "{findings}");
    assert!(findings.contains("GPU 1 → 0 5368.7 GB/s"), "{findings}");
    let want = "the host waited for it in 1 of 1 experiments, and the GPU ran the copy after it in 0 of 1";
    assert!(findings.contains(want), "{findings}");
}

#[test]
fn experiments_a_machine_cannot_run_are_not_run_not_errors() {
    let mut skipped = record("peer/peer-async/p2p-on/same/4KiB", vec![]);
    skipped.skipped = Some("needs 2 GPUs: this machine has 1".into());
    let mut also = record("peer/dtod-async/p2p-off/same/4KiB", vec![]);
    also.skipped = skipped.skipped.clone();
    let rec = recording(vec![
        record(
            "copy/async/htod/pinned/nonblocking/same/1MiB",
            (0..5).map(|_| rep(5, Some(false), Some(false), Some(false))).collect(),
        ),
        skipped,
        also,
    ]);
    // It survives a round trip through the recording format (a record without reps needs a reason).
    let rec = Recording::parse(&serde_json::to_string(&rec).unwrap()).unwrap();
    let report = build(&rec);
    let s = &report.summary;
    assert_eq!((s.matches, s.errors, s.not_run), (1, 0, 2));
    assert_eq!(s.not_run_reasons, vec!["needs 2 GPUs: this machine has 1".to_owned()]);
    assert_eq!(report.results[1].class, None);
    assert_eq!(report.results[1].explanation, "Not run: needs 2 GPUs: this machine has 1.");
    let table = render(&report, Format::Table).unwrap();
    assert!(
        table.contains("Peer copies (GPU to GPU): 2 experiments not run: needs 2 GPUs: this machine has 1"),
        "{table}"
    );
    assert!(table.contains("0 errors, 2 not run (needs 2 GPUs: this machine has 1)"), "{table}");
    let csv = render(&report, Format::Csv).unwrap();
    assert!(csv.lines().nth(2).unwrap().ends_with(",needs 2 GPUs: this machine has 1"), "{csv}");
    // A record with neither repetitions, nor an error, nor a reason is refused.
    let mut bad: serde_json::Value = serde_json::to_value(&rec).unwrap();
    bad["cases"][1]["skipped"] = serde_json::Value::Null;
    let err = Recording::parse(&bad.to_string()).unwrap_err().to_string();
    assert!(err.contains("neither repetitions nor an error"), "{err}");
}

#[test]
fn the_same_case_through_both_apis_side_by_side() {
    let id = "memset/sync/device/legacy/other/1MiB";
    let rt_id = format!("runtime/{id}");
    let rec = recording(vec![
        // The driver's memset returned while the blocker on another stream ran: async (made-up signals).
        record(id, (0..5).map(|_| rep(4, Some(false), Some(false), None)).collect()),
        // The runtime's waited for it: device-sync.
        record(&rt_id, (0..5).map(|_| rep(20_100, Some(true), Some(false), None)).collect()),
        // A case measured through both APIs with the same class.
        record(
            "copy/async/htod/pinned/nonblocking/same/1MiB",
            (0..5).map(|_| rep(5, Some(false), Some(false), Some(false))).collect(),
        ),
        record(
            "runtime/copy/async/htod/pinned/nonblocking/same/1MiB",
            (0..5).map(|_| rep(6, Some(false), Some(false), Some(false))).collect(),
        ),
    ]);
    let rows = async_lab_core::compare::between_apis(&rec);
    assert_eq!(rows.len(), 2);
    let first = rows.iter().find(|r| r.id == id).unwrap();
    assert_eq!((first.driver.as_str(), first.runtime.as_str()), ("async", "device-sync"));
    assert_eq!((first.driver_call.as_str(), first.runtime_call.as_str()), ("cuMemsetD8", "cudaMemset"));
    assert!(!first.same_class());
    let md = async_lab_core::compare::api_markdown(&rows);
    assert!(
        md.contains("**differs**") && md.contains("2 cases measured through both APIs: 1 in the same class, 1 differ"),
        "{md}"
    );
    let report = build(&rec);
    assert_eq!(report.results.iter().filter(|r| r.api == async_lab_core::api::Api::Runtime).count(), 2);
    assert!(
        report
            .summary
            .findings
            .iter()
            .any(|f| f.contains("1 case(s) fall in a different class through the runtime") && f.contains(id)),
        "{:?}",
        report.summary.findings
    );
}

#[test]
fn without_a_runtime_library_its_cases_are_not_run_not_errors() {
    let why = "no CUDA runtime library (libcudart.so) found; looked in /usr/local/cuda/lib64";
    let mut skipped = record("runtime/memset/async/device/nonblocking/same/1MiB", vec![]);
    skipped.skipped = Some(why.into());
    let rec = recording(vec![
        record(
            "memset/async/device/nonblocking/same/1MiB",
            (0..5).map(|_| rep(5, Some(false), Some(false), None)).collect(),
        ),
        skipped,
    ]);
    let text = serde_json::to_string(&rec).unwrap();
    let back = Recording::parse(&text).expect("a recording with a not-run runtime case is valid");
    let report = build(&back);
    assert_eq!(report.summary.errors, 0);
    let r = &report.results[1];
    assert_eq!((r.api, r.not_run.as_deref()), (async_lab_core::api::Api::Runtime, Some(why)));
    let table = render(&report, Format::Table).unwrap();
    assert!(table.contains("not run") && table.contains("libcudart"), "{table}");
    // Compare says the runtime was not run rather than claiming a different class.
    let rows = async_lab_core::compare::between_apis(&back);
    assert!(!rows[0].both_classified && rows[0].runtime.starts_with("not run"));
    assert!(!report.summary.findings.iter().any(|f| f.contains("different class")), "{:?}", report.summary.findings);
}

#[test]
fn the_reference_is_compared_with_the_runtime_case_that_names_its_copies_the_same_way() {
    let id = "copy/async/htod/managed/nonblocking/same/1MiB";
    let rec = recording(vec![
        record(id, (0..5).map(|_| rep(5, Some(false), Some(false), None)).collect()),
        // Through the runtime with cudaMemcpyDefault: async.
        record(&format!("runtime/{id}"), (0..5).map(|_| rep(5, Some(false), Some(false), None)).collect()),
        // Through the runtime with cudaMemcpyHostToDevice: waited for the blocker.
        record(&format!("runtime/{id}/typed"), (0..5).map(|_| rep(20_100, Some(true), Some(false), None)).collect()),
    ]);
    let dir = std::env::temp_dir().join(format!("async-lab-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rec_path = dir.join("rec.json");
    rec.save(&rec_path).unwrap();
    for (kind, expected_class) in [("explicit", "waited-then-staged"), ("default", "async")] {
        let reference = serde_json::json!({
            "tool": "async_ref", "memcpy_kind": kind,
            "cases": [{"id": id, "class": expected_class, "host_call_us": {"median": 1.0}, "error": null}]
        });
        let ref_path = dir.join(format!("ref-{kind}.json"));
        std::fs::write(&ref_path, reference.to_string()).unwrap();
        let rows = async_lab_core::compare::compare(&rec_path, &ref_path).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].api, async_lab_core::api::Api::Runtime);
        assert!(rows[0].agrees(), "{kind}: ours {} vs reference {}", rows[0].ours, rows[0].theirs);
    }
}

/// A rule that predicts `blocking` is held against a call only where the readings resolve its hold of its own
/// work: a 1 MiB pinned `cuMemcpyHtoD` with nothing ahead, done at the return with no GPU times to date its
/// work, reads `async` and the verdict is `inconclusive`; the same call still running well after the return
/// (its work placed by the GPU's clock) deviates.
#[test]
fn a_blocking_rule_against_a_hold_too_short_to_measure_is_inconclusive() {
    let id = "copy/sync/htod/pinned/legacy/other/1MiB";
    let done = record(id, (0..5).map(|_| rep(30, Some(false), Some(true), None)).collect());
    let r = async_lab_core::report::build(&recording(vec![done]));
    assert_eq!(r.results[0].class, Some(Class::Async));
    assert_eq!(r.results[0].verdict, Some(async_lab_core::rules::Verdict::Inconclusive));
    assert!(r.results[0].explanation.contains("below the resolution"), "{}", r.results[0].explanation);
}

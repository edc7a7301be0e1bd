//! The newer families (CUDA graphs, unified-memory hints, attributes and limits, stream memory operations,
//! virtual memory management, batched copies, threads) without a GPU: where they are
//! listed, how their signals become classes and verdicts, how a case the driver cannot run reads, and how
//! `explain` and the HTML page show them. The signals are made up on purpose (they test the path, not the GPU).

use async_lab::experiments::catalogue;

use async_lab_core::catalogue::presets::Preset;
use async_lab_core::classify::Class;
use async_lab_core::metrics::Metrics;
use async_lab_core::record::{CaseRecord, Recording, Rep, RECORDING_KIND, SCHEMA_VERSION};
use async_lab_core::report::result;
use async_lab_core::rules::Verdict;
use async_lab_core::setup::Family;
use async_lab_tests::bin_path;
use std::process::{Command, Output};

const NEW: [Family; 7] =
    [Family::Graph, Family::Unified, Family::Limits, Family::StreamMem, Family::Vmm, Family::Batch, Family::Threads];

fn run_with_stub(args: &[&str]) -> Output {
    Command::new(bin_path())
        .args(args)
        .env("LD_LIBRARY_PATH", async_lab_driver::STUB_DIR)
        .output()
        .expect("start async-lab")
}

fn rep(call_us: u64, blocker_done: bool, op_done: Option<bool>) -> Rep {
    Rep {
        host_call_ns: call_us * 1000,
        host_cpu_ns: call_us * 900,
        blocker_done_at_return: Some(blocker_done),
        op_done_at_return: op_done,
        blocker_device_ns: Some(20_000_000),
        op_device_ns: op_done.map(|_| 10_000),
        ..Rep::default()
    }
}

fn record(id: &str, reps: Vec<Rep>) -> CaseRecord {
    let setup = catalogue(Preset::Next, None)
        .into_iter()
        .find(|c| c.setup.id == id)
        .unwrap_or_else(|| panic!("no case {id} in the next preset"))
        .setup;
    CaseRecord { setup, blocker_ns: Some(20_000_000), warmup: None, reps, series: None, error: None, skipped: None }
}

#[test]
fn the_next_preset_holds_the_new_families_full_too_default_none() {
    let next = catalogue(Preset::Next, None);
    for family in NEW {
        assert!(next.iter().filter(|c| c.setup.family == family).count() >= 8, "{family:?}");
    }
    assert!(next.iter().all(|c| NEW.contains(&c.setup.family)));
    // Runtime twins only where the probe has a runtime path (graphs, hints, limits, batched copies, and the
    // threads family's quick calls): the stream memory and VMM probes call the driver only (cuMemFree and friends
    // are in the runtime table, but a twin there would run the driver's call under the runtime's name). Every
    // twin has its driver case.
    use async_lab_core::api::Api;
    const WITH_TWINS: [Family; 5] = [Family::Graph, Family::Unified, Family::Limits, Family::Batch, Family::Threads];
    for c in next.iter().filter(|c| c.setup.api == Api::Runtime) {
        assert!(WITH_TWINS.contains(&c.setup.family), "a runtime twin crept into {:?}: {}", c.setup.family, c.setup.id);
        let driver_id = c.setup.id.strip_prefix("runtime/").expect("a twin's id starts with runtime/");
        assert!(next.iter().any(|d| d.setup.id == driver_id && d.setup.api == Api::Driver), "{}", c.setup.id);
        assert!(c.setup.call.starts_with("cuda"), "{}: {}", c.setup.id, c.setup.call);
    }
    for family in WITH_TWINS {
        assert!(next.iter().any(|c| c.setup.family == family && c.setup.api == Api::Runtime), "{family:?}");
    }
    let threads: Vec<&str> =
        next.iter().filter(|c| c.setup.family == Family::Threads).map(|c| c.setup.call.as_str()).collect();
    assert_eq!(threads.len(), 30, "{threads:?}");
    for call in ["cudaLaunchKernel", "cudaMemcpyAsync(HostToDevice)", "cudaEventRecord"] {
        assert_eq!(threads.iter().filter(|&&c| c == call).count(), 5, "{call}");
    }
    let full: Vec<String> = catalogue(Preset::Full, None).into_iter().map(|c| c.setup.id).collect();
    assert!(next.iter().all(|c| full.contains(&c.setup.id)));
    assert!(catalogue(Preset::Default, None).iter().all(|c| !NEW.contains(&c.setup.family)));
    // Each rule id the new cases name is known, with a source-backed text.
    for c in &next {
        let rule = async_lab_core::rules::rule(&c.setup.rule).expect("known rule");
        assert!(!rule.documented.is_empty());
    }
}

#[test]
fn list_shows_the_new_families_with_their_rules() {
    let o = run_with_stub(&["list", "--preset", "next"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for (id, rule) in [
        ("graph/launch-first/nonblocking/same", "GR3"),
        ("graph/instantiate-upload/nonblocking/other", "GR2"),
        ("unified/prefetch/to-host/nonblocking/same/64MiB", "UM1"),
        ("unified/advise/read-mostly/legacy/64MiB", "UM2"),
        ("unified/prefetch/pageable-to-device/nonblocking/other/64MiB", "UM1"),
        ("limits/set-limit/stack-size/nonblocking", "LM1"),
        ("limits/func-set-attribute/running-kernel/legacy", "LM4"),
        ("streammem/held/copy-dtoh-legacy/blocking", "SM2"),
        ("streammem/write-value/nonblocking/same", "SM1"),
        ("vmm/unmap-in-use/nonblocking", "VM2"),
        ("vmm/create/legacy", "VM1"),
        ("batch/htod/pageable/during-call/nonblocking/same/4MiB", "BC2"),
        ("batch/dtoh/pinned/any/nonblocking/same/4MiB", "BC1"),
        ("threads/in-module-load/launch/nonblocking/same", "TH1"),
        ("threads/in-host-func/event-record/nonblocking/same", "TH1"),
        ("runtime/threads/in-host-func/launch/nonblocking/same", "TH1"),
        ("runtime/threads/in-alloc-host/pinned-copy-async/nonblocking/same", "TH1"),
        ("graph/launch-full-queue/nonblocking/same", "GR3"),
        ("runtime/graph/launch-full-queue/nonblocking/same", "GR3"),
        ("runtime/graph/instantiate-upload/nonblocking/same", "GR2"),
        ("runtime/unified/advise/read-mostly/legacy/64MiB", "UM2"),
        ("runtime/limits/mem-get-info/legacy", "LM3"),
        ("runtime/limits/func-set-attribute/idle-kernel/nonblocking", "LM4"),
        ("runtime/batch/htod/pinned/during-call/nonblocking/same/4MiB", "BC2"),
    ] {
        assert!(out.lines().any(|l| l.split_whitespace().take(2).eq([id, rule])), "no {id} {rule} in:\n{out}");
    }
    // The runtime cannot name the running blocker's kernel: that case has no twin.
    assert!(!out.contains("runtime/limits/func-set-attribute/running-kernel"), "{out}");
    // The default preset's listing says where the newer families went.
    let o = run_with_stub(&["list"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--preset next"), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn signals_become_classes_and_verdicts() {
    // A warm graph launch that returned while the blocker ahead ran: async, and no rule to match.
    let r = result(
        &record("graph/launch-steady/nonblocking/same", (0..5).map(|_| rep(3, false, Some(false))).collect()),
        None,
    );
    assert_eq!((r.class, r.verdict), (Some(Class::Async), Some(Verdict::Undocumented)));
    assert!(r.explanation.contains("GR3"), "{}", r.explanation);
    // A stack-size change that waited for a blocker on another stream: the device drained, which LM1 allows.
    let r = result(
        &record("limits/set-limit/stack-size/nonblocking", (0..5).map(|_| rep(20_000, true, None)).collect()),
        None,
    );
    assert_eq!((r.class, r.verdict), (Some(Class::DeviceSync), Some(Verdict::Matches)));
    // A prefetch that returned at once matches UM1; one that waited for the blocker ahead deviates.
    let id = "unified/prefetch/to-device/nonblocking/same/64MiB";
    let r = result(&record(id, (0..5).map(|_| rep(40, false, Some(false))).collect()), None);
    assert_eq!((r.class, r.verdict), (Some(Class::Async), Some(Verdict::Matches)));
    let r = result(&record(id, (0..5).map(|_| rep(21_000, true, Some(true))).collect()), None);
    assert_eq!((r.class, r.verdict), (Some(Class::Blocking), Some(Verdict::Deviates)));
}

fn recording(cases: Vec<CaseRecord>) -> Recording {
    let machine = serde_json::from_value(serde_json::json!({
        "gpu_name": "Synthetic GPU", "gpu_ordinal": 0, "compute_capability": "9.0", "sm_count": 132,
        "memory_total_bytes": 1u64 << 37, "memory_free_bytes": 1u64 << 37, "cuda_driver_api": "11.8",
        "driver_release": null, "pci_bus_id": "0000:00:00.0", "pcie_link": null, "pcie_max_link": null,
        "sm_clock_max_mhz": 1980, "memory_clock_max_mhz": 3201, "async_engine_count": 3,
        "concurrent_managed_access": true, "pageable_memory_access": false, "host_cpu": "synthetic",
        "host_cpus": 16, "os": "synthetic", "tool_version": "0", "git_commit": "synthetic"
    }))
    .unwrap();
    Recording {
        kind: RECORDING_KIND.into(),
        schema_version: SCHEMA_VERSION,
        created: "2026-12-03T00:00:00Z".into(),
        preset: "next".into(),
        args: vec![],
        reps_per_case: 5,
        partial: false,
        machine,
        clock: None,
        clock_later: vec![],
        cases,
    }
}

#[test]
fn a_call_the_driver_lacks_is_not_run_with_its_name_and_explain_and_the_page_show_it() {
    let mut missing = record("graph/instantiate-upload/nonblocking/same", vec![]);
    missing.skipped = Some("the driver has no cuGraphInstantiateWithParams".into());
    let launch = record("graph/launch-first/nonblocking/other", (0..5).map(|_| rep(30, false, Some(true))).collect());
    let rec = recording(vec![missing.clone(), launch]);
    let r = result(&missing, None);
    assert_eq!(r.class, None);
    assert!(r.explanation.starts_with("Not run: the driver has no cuGraphInstantiateWithParams"), "{}", r.explanation);

    let dir = std::env::temp_dir().join(format!("async-lab-families-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("next.json");
    rec.save(&file).unwrap();
    let path = file.to_str().unwrap();

    let o = run_with_stub(&["explain", "graph/instantiate-upload/nonblocking/same", "--replay", path]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("Rule GR2") && out.contains("Not run on this machine: the driver has no"), "{out}");
    assert!(out.contains("host/src/experiments/graphs.rs"), "{out}");

    let o = run_with_stub(&["explain", "graph/launch-first/nonblocking/other", "--replay", path]);
    let out = String::from_utf8_lossy(&o.stdout);
    // Done at the return, but 30 µs of own work with no GPU times is too short to say it held the thread.
    assert!(out.contains("Class: async") && out.contains("Rule GR3"), "{out}");

    let page = dir.join("report.html");
    let o = run_with_stub(&["report", "--replay", path, "--out", page.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("CUDA graphs") && html.contains("graph/launch-first/nonblocking/other"));
    assert!(html.contains("cuGraphInstantiateWithParams"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_flags_of_the_held_and_in_use_cases_reach_explain_and_the_findings() {
    let flagged = |id: &str, metrics: Metrics, reps: Vec<Rep>| {
        let mut rec = record(id, reps);
        for r in &mut rec.reps {
            r.metrics = metrics.clone();
        }
        rec
    };
    // cuMemUnmap returned while the writer was still queued (blocker ahead unfinished, stream busy).
    let unmap = flagged(
        "vmm/unmap-in-use/nonblocking",
        Metrics { returned_while_in_use: Some(true), ..Metrics::EMPTY },
        (0..5).map(|_| rep(50, false, Some(false))).collect(),
    );
    // A legacy copy that waited for the host-held stream: it returned after the watchdog's write.
    let held = flagged(
        "streammem/held/copy-dtoh-legacy/blocking",
        Metrics { returned_after_host_write: Some(true), ..Metrics::EMPTY },
        (0..5).map(|_| rep(120_000, true, Some(true))).collect(),
    );
    // A launch on a third stream that did not wait.
    let free = flagged(
        "streammem/held/launch-other-stream/nonblocking",
        Metrics { returned_after_host_write: Some(false), ..Metrics::EMPTY },
        (0..5).map(|_| rep(4, false, Some(false))).collect(),
    );
    let report = async_lab_core::report::build(&recording(vec![unmap, held, free]));
    let by_id = |id: &str| report.results.iter().find(|r| r.id == id).unwrap();
    let r = by_id("vmm/unmap-in-use/nonblocking");
    assert_eq!(r.class, Some(Class::Async));
    assert!(r.explanation.contains("still used the memory"), "{}", r.explanation);
    assert!(
        report
            .summary
            .findings
            .iter()
            .any(|f| f.starts_with("vmm/unmap-in-use/nonblocking (cuMemUnmap) returned while")),
        "{:?}",
        report.summary.findings
    );
    let r = by_id("streammem/held/copy-dtoh-legacy/blocking");
    assert_eq!(r.class, Some(Class::Blocking));
    assert!(r.explanation.contains("hangs here"), "{}", r.explanation);
    let r = by_id("streammem/held/launch-other-stream/nonblocking");
    assert!(r.explanation.contains("write the value afterwards"), "{}", r.explanation);
    // Two threads, as on the H200 in the older order (a recording's id of then): the quick call came only after
    // the other thread's call, and the blocker's launch, made while that call ran, had waited for it.
    let threads = {
        let mut rec = record(
            "threads/in-alloc-host/launch/nonblocking/same",
            (0..5).map(|_| rep(4, false, Some(false))).collect(),
        );
        rec.setup.id = "threads/alloc-host/launch/nonblocking/same".into();
        for r in &mut rec.reps {
            r.metrics = Metrics {
                overlapped: Some(false),
                waited_for_other_thread: Some(false),
                launch_waited_for_other_thread: Some(true),
                other_call_us: Some(62_000.0),
                ..Metrics::EMPTY
            };
        }
        rec
    };
    let r = result(&threads, None);
    assert!(
        r.explanation.contains("waited for the other thread") && r.explanation.contains("62.0 ms"),
        "{}",
        r.explanation
    );
    // In today's order: the quick call made 50 µs into the other thread's call, returning 4 µs after it ended.
    let inside = |waited: bool, returned_after_us: f64| {
        let mut rec = record(
            "threads/in-alloc-host/launch/nonblocking/same",
            (0..5).map(|_| rep(4, false, Some(false))).collect(),
        );
        for r in &mut rec.reps {
            r.metrics = Metrics {
                overlapped: Some(true),
                waited_for_other_thread: Some(waited),
                started_into_other_us: Some(50.0),
                returned_after_other_end_us: Some(returned_after_us),
                other_call_us: Some(62_000.0),
                ..Metrics::EMPTY
            };
        }
        result(&rec, None)
    };
    let r = inside(true, 4.0);
    assert!(
        r.explanation.contains("for 50 µs when it started")
            && r.explanation.contains("(4 µs after): it waited for the other thread"),
        "{}",
        r.explanation
    );
    let r = inside(false, -61_900.0);
    assert!(r.explanation.contains("it did not wait for the other thread"), "{}", r.explanation);
    // Without the flag, no finding.
    let quiet = flagged(
        "vmm/unmap-in-use/nonblocking",
        Metrics { returned_while_in_use: Some(false), ..Metrics::EMPTY },
        (0..5).map(|_| rep(30_000, true, Some(true))).collect(),
    );
    let report = async_lab_core::report::build(&recording(vec![quiet]));
    assert!(report.summary.findings.iter().all(|f| !f.contains("vmm/")), "{:?}", report.summary.findings);
}

//! Snapshot tests of the committed recordings (`recordings/*.json`, made on real GPUs): each is replayed
//! through the same classification as a live run, and its classes and verdicts must not change (one snapshot
//! per recording, `snapshots/recordings__replay@<recording>.snap`).

use async_lab_core::output::{render, Format};
use async_lab_core::record::Recording;
use async_lab_core::report::{build, Report, Summary};
use serde::Serialize;
use std::path::PathBuf;

fn recordings() -> Vec<PathBuf> {
    async_lab_tests::recording_files()
}

/// What a replay decides about one experiment: the class and verdict the snapshot pins, with the numbers they
/// were decided from.
#[derive(Serialize)]
struct Decided<'r> {
    id: &'r str,
    rule: &'r str,
    /// The majority class, or why there is none.
    class: String,
    verdict: Option<String>,
    expected: String,
    /// Fraction of repetitions in the majority class.
    agreement: f64,
    /// What held the thread in the median repetition (`attribution`), in words.
    held_for: &'r str,
    /// Median wall time of the call and median device time of its work.
    host_call_us: Option<f64>,
    device_us: Option<f64>,
}

/// A replayed recording as the snapshot holds it: where it was made, each experiment's decision, the summary.
#[derive(Serialize)]
struct Replayed<'r> {
    gpu: &'r str,
    driver: Option<&'r str>,
    cuda_driver_api: &'r str,
    /// The commit of the async-lab that made the recording (redacted: it says nothing about the replay).
    git_commit: &'r str,
    preset: &'r str,
    partial: bool,
    results: Vec<Decided<'r>>,
    summary: &'r Summary,
}

fn replayed(report: &Report) -> Replayed<'_> {
    Replayed {
        gpu: &report.machine.gpu_name,
        driver: report.machine.driver_release.as_deref(),
        cuda_driver_api: &report.machine.cuda_driver_api,
        git_commit: &report.machine.git_commit,
        preset: &report.preset,
        partial: report.partial,
        results: report
            .results
            .iter()
            .map(|r| Decided {
                id: &r.id,
                rule: &r.rule,
                class: match (r.class, &r.not_run) {
                    (Some(c), _) => c.to_string(),
                    (None, Some(_)) => "not run".to_owned(),
                    (None, None) => "error".to_owned(),
                },
                verdict: r.verdict.map(|v| v.to_string()),
                expected: r.expected.to_string(),
                agreement: r.agreement,
                held_for: &r.held_for,
                host_call_us: r.host_call_us.as_ref().map(|s| s.median),
                device_us: r.device_us,
            })
            .collect(),
        summary: &report.summary,
    }
}

/// Every committed recording, replayed: the snapshot (one per recording) pins each experiment's class and
/// verdict and the summary's counts and findings. A replay is deterministic, so the numbers stay in; they are
/// rounded (floating-point sums may differ in the last digits between machines and compilers), and the
/// recording's commit is redacted.
#[test]
fn replayed_recordings_keep_their_classes_and_verdicts() {
    insta::glob!("../../recordings", "async-lab-*.json", |path| {
        let rec = Recording::load(path).unwrap_or_else(|e| panic!("{e:#}"));
        let report = build(&rec);
        insta::assert_yaml_snapshot!("replay", replayed(&report), {
            ".git_commit" => "[commit]",
            ".results[].agreement" => insta::rounded_redaction(4),
            ".results[].host_call_us" => insta::rounded_redaction(2),
            ".results[].device_us" => insta::rounded_redaction(2),
        });
    });
}

#[test]
fn recordings_say_where_they_were_made() {
    for path in recordings() {
        let rec = Recording::load(&path).unwrap();
        let m = &rec.machine;
        assert!(!m.gpu_name.is_empty() && m.compute_capability != "0.0", "{}: no GPU named", path.display());
        assert!(m.driver_release.is_some(), "{}: no driver release", path.display());
        assert!(m.git_commit != "unknown" && !m.git_commit.is_empty(), "{}: no commit", path.display());
        assert!(!rec.cases.is_empty(), "{}: no experiments", path.display());
        // Every experiment was measured, failed with a reason, or was not run for a reason this machine explains.
        for c in &rec.cases {
            match &c.skipped {
                Some(reason) if reason.starts_with("needs 2 GPUs") => assert!(
                    m.gpu_count.is_some_and(|n| n < 2),
                    "{}: {} says {reason:?} but the machine had {:?} GPUs",
                    path.display(),
                    c.setup.id,
                    m.gpu_count
                ),
                // Prefetching pageable memory needs a GPU that can access it: the machine's attribute must say no.
                Some(reason) if reason.contains("cannot access pageable memory") => assert!(
                    !m.pageable_memory_access,
                    "{}: {} says {reason:?} but the machine records pageable access {}",
                    path.display(),
                    c.setup.id,
                    m.pageable_memory_access
                ),
                // A pair whose GPUs cannot reach each other directly: the machine's link table must say so.
                Some(reason) if reason.contains("cannot access") => {
                    let p = c.setup.layout.peer.expect("a peer experiment");
                    let pair = [p.src_gpu.unwrap(), p.dst_gpu.unwrap()];
                    let refused = |l: &async_lab_core::machine::PeerLink| {
                        !l.can_access && ([l.src, l.dst] == pair || [l.dst, l.src] == pair)
                    };
                    assert!(
                        m.peer_links.iter().any(refused),
                        "{}: {} says {reason:?} but the machine's links allow access",
                        path.display(),
                        c.setup.id
                    )
                }
                Some(reason) => {
                    panic!("{}: {} was not run for an unexpected reason: {reason}", path.display(), c.setup.id)
                }
                None => {
                    assert!(c.error.is_some() || !c.reps.is_empty(), "{}: {} has no data", path.display(), c.setup.id)
                }
            }
        }
    }
}

/// A repetition's metrics are typed fields (`metrics::Metrics`), a flag a `bool`; in a recording they stay the
/// object of numbers they always were: every committed recording's metrics read back and write out as the
/// file has them, key for key and number for number.
#[test]
fn every_recordings_metrics_write_back_as_the_file_has_them() {
    let mut compared = 0;
    for path in recordings() {
        let rec = Recording::load(&path).unwrap();
        let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let cases = file["cases"].as_array().unwrap();
        assert_eq!(cases.len(), rec.cases.len(), "{}", path.display());
        for (case, json) in rec.cases.iter().zip(cases) {
            let reps =
                case.warmup.iter().zip([&json["warmup"]]).chain(case.reps.iter().zip(json["reps"].as_array().unwrap()));
            for (rep, json) in reps {
                let written = serde_json::to_value(&rep.metrics).unwrap();
                let empty = serde_json::Value::Object(Default::default());
                let recorded = json.get("metrics").unwrap_or(&empty);
                assert_eq!(&written, recorded, "{}: {}", path.display(), case.setup.id);
                compared += usize::from(!rep.metrics.is_empty());
            }
        }
    }
    assert!(compared > 1000, "only {compared} repetitions with metrics");
}

#[test]
fn every_format_renders_every_recording() {
    for path in recordings() {
        let report = build(&Recording::load(&path).unwrap());
        for f in [Format::Table, Format::Json, Format::Md, Format::Csv] {
            let text = render(&report, f).unwrap();
            // A line per experiment that ran; a family that did not run at all may be said in one line.
            let ran = report.results.iter().filter(|r| r.not_run.is_none()).count();
            assert!(text.lines().count() > ran, "{} in {f:?} is too short", path.display());
            if report.summary.not_run > 0 && matches!(f, Format::Table | Format::Md) {
                assert!(text.contains("not run"), "{} in {f:?} does not say what was not run", path.display());
            }
        }
    }
}

#[test]
fn the_binary_replays_a_recording_without_a_gpu() {
    let path = &recordings()[0];
    let o = std::process::Command::new(async_lab_tests::bin_path())
        .args(["--replay", path.to_str().unwrap(), "--format", "json"])
        .env("LD_LIBRARY_PATH", async_lab_driver::STUB_DIR)
        .output()
        .unwrap();
    assert!(o.status.code() == Some(0) || o.status.code() == Some(4), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["schema_version"], async_lab_core::record::SCHEMA_VERSION);
    assert!(json["results"].as_array().unwrap().len() > 1);
}

#[test]
fn the_one_gpu_peer_recording_says_needs_2_gpus_for_every_experiment() {
    let path = recordings()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("async-lab-peer-one-gpu-"))
        .expect("recordings/ has the peer preset recorded on a one-GPU machine");
    let rec = Recording::load(&path).unwrap();
    assert_eq!(rec.machine.gpu_count, Some(1));
    let report = build(&rec);
    assert_eq!(report.results.len(), 66);
    assert!(report.results.iter().all(|r| r.family == async_lab_core::setup::Family::Peer && r.class.is_none()));
    assert_eq!((report.summary.not_run, report.summary.errors), (66, 0));
    assert_eq!(report.summary.not_run_reasons, vec!["needs 2 GPUs: this machine has 1".to_owned()]);
}

#[test]
fn the_loopback_recordings_copy_within_one_gpu_and_say_so() {
    let loopbacks: Vec<_> =
        recordings().into_iter().filter(|p| p.to_string_lossy().contains("async-lab-peer-loopback-")).collect();
    assert!(!loopbacks.is_empty(), "recordings/ has the peer loopback check");
    for path in loopbacks {
        let report = build(&Recording::load(&path).unwrap());
        for r in &report.results {
            let p = r.peer.unwrap();
            assert!(p.src_gpu.is_some() && p.src_gpu == p.dst_gpu, "{}: {} is not a loopback", path.display(), r.id);
            assert!(r.what.contains("LOOPBACK") && r.explanation.contains("loopback"), "{}: {}", path.display(), r.id);
        }
        // Loopback pairs are not peer measurements: no finding may speak of them as such.
        assert!(report.summary.findings.iter().all(|f| !f.contains("peer access")), "{:?}", report.summary.findings);
    }
}

/// The facts a recording's setups carry (some given when read, to recordings made before the field existed)
/// are the facts today's catalogue gives the same experiment: the direction of a copy and how its call was
/// timed are read from these fields, never from ids, so a migration that got one wrong would change a report
/// without changing a snapshot's class.
#[test]
fn recorded_setups_carry_the_facts_todays_catalogue_gives() {
    use async_lab::experiments::catalogue;
    use async_lab_core::catalogue::presets::Preset;
    use std::collections::BTreeMap;
    let presets = [Preset::Full, Preset::Seed, Preset::Sweep, Preset::Overhead, Preset::Next, Preset::Loading];
    let today: BTreeMap<String, _> = presets
        .into_iter()
        .flat_map(|p| catalogue(p, None))
        .map(|c| (c.setup.id.clone(), (c.setup.layout.direction, c.setup.layout.timing)))
        .collect();
    let mut compared = 0;
    for path in recordings() {
        let rec = Recording::load(&path).unwrap();
        for case in &rec.cases {
            if let Some(&(direction, timing)) = today.get(&case.setup.id) {
                assert_eq!(case.setup.layout.direction, direction, "{}: {}", path.display(), case.setup.id);
                assert_eq!(case.setup.layout.timing, timing, "{}: {}", path.display(), case.setup.id);
                compared += 1;
            }
        }
    }
    let wall_clock_only = today.values().filter(|(_, t)| *t == async_lab_core::setup::CallTiming::WallClockOnly);
    assert!(wall_clock_only.count() > 0, "the overhead preset times some calls with the wall clock alone");
    assert!(compared > 1000, "only {compared} recorded experiments matched today's ids");
}

//! Snapshot tests of the committed recordings (`recordings/*.json`, made on real GPUs): each is replayed
//! through the same classification as a live run, and its table of classes and verdicts must not change.
//! Timings are left out of the snapshots (they vary run to run); classes and verdicts are what they pin.

use async_lab::output::{render, Format};
use async_lab::record::Recording;
use async_lab::report::build;
use std::path::PathBuf;

fn recordings() -> Vec<PathBuf> {
    async_lab_tests::recording_files()
}

/// One line per experiment: what the snapshot pins.
fn classification_table(rec: &Recording) -> String {
    let report = build(rec);
    let mut out = format!(
        "{} · {} · driver {} (CUDA {}) · preset {} · {} experiments{}\n",
        report.machine.gpu_name,
        report.machine.compute_capability,
        report.machine.driver_release.as_deref().unwrap_or("?"),
        report.machine.cuda_driver_api,
        report.preset,
        report.results.len(),
        if report.partial { " · partial" } else { "" }
    );
    for r in &report.results {
        out.push_str(&format!(
            "{:<58} {:<4} {:<19} {:<8} expected {}{}\n",
            r.id,
            r.rule,
            match (r.class, &r.not_run) {
                (Some(c), _) => c.to_string(),
                (None, Some(_)) => "NOT RUN".to_owned(),
                (None, None) => "ERROR".to_owned(),
            },
            r.verdict.map_or("-".to_owned(), |v| v.to_string()),
            r.expected,
            if r.agreement < 1.0 && !r.classes.is_empty() {
                format!(" ({:.0}% of reps)", r.agreement * 100.0)
            } else {
                String::new()
            }
        ));
    }
    let s = &report.summary;
    out.push_str(&format!(
        "{} matches, {} deviates, {} undocumented, {} errors\n",
        s.matches, s.deviates, s.undocumented, s.errors
    ));
    if s.not_run > 0 {
        out.push_str(&format!("{} not run: {}\n", s.not_run, s.not_run_reasons.join("; ")));
    }
    for f in &s.findings {
        out.push_str(&format!("- {}\n", rounded(f)));
    }
    out
}

/// Findings quote times; keep their words and round their numbers away.
fn rounded(text: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() || (in_number && c == '.') {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

#[test]
fn replayed_recordings_keep_their_classes() {
    for path in recordings() {
        let rec = Recording::load(&path).unwrap_or_else(|e| panic!("{e:#}"));
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        insta::assert_snapshot!(name, classification_table(&rec));
    }
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
                // A pair whose GPUs cannot reach each other directly: the machine's link table must say so.
                Some(reason) if reason.contains("cannot access") => {
                    let p = c.setup.peer.expect("a peer experiment");
                    let pair = [p.src_gpu.unwrap(), p.dst_gpu.unwrap()];
                    let refused = |l: &async_lab::driver::PeerLink| {
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
        .env("LD_LIBRARY_PATH", async_lab::STUB_DIR)
        .output()
        .unwrap();
    assert!(o.status.code() == Some(0) || o.status.code() == Some(4), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["schema_version"], async_lab::record::SCHEMA_VERSION);
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
    assert!(report.results.iter().all(|r| r.family == async_lab::record::Family::Peer && r.class.is_none()));
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

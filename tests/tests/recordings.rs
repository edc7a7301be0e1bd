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
            r.class.map_or("ERROR".to_owned(), |c| c.to_string()),
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
        // Every experiment of a complete recording was measured or failed with a reason.
        for c in &rec.cases {
            assert!(c.error.is_some() || !c.reps.is_empty(), "{}: {} has no data", path.display(), c.setup.id);
        }
    }
}

#[test]
fn every_format_renders_every_recording() {
    for path in recordings() {
        let report = build(&Recording::load(&path).unwrap());
        for f in [Format::Table, Format::Json, Format::Md, Format::Csv] {
            let text = render(&report, f).unwrap();
            assert!(text.lines().count() > report.results.len(), "{} in {f:?} is too short", path.display());
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

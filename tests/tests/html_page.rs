//! `async-lab report`: the HTML page as a whole, rendered without a GPU from the synthetic recording
//! (`tests/src/synthetic.rs`) and from the committed recordings (`recordings/async-lab-*.json`, real GPUs):
//! one well-formed, self-contained page (no script, nothing fetched), a card and a timeline for every
//! experiment, escaped text, and the `report` command.
//!
//! The synthetic page is also written to `target/report-check/synthetic.html`, where `cargo xtask test` loads
//! it in headless Chromium when there are no committed recordings.

use async_lab_core::html::{element_id, render, Source};
use async_lab_core::record::Recording;
use async_lab_core::report::build;
use async_lab_tests::bin_path;
use async_lab_tests::page::{assert_every_experiment_has_a_timeline, check_page, report_check_dir};
use async_lab_tests::synthetic::synthetic;
use std::collections::HashSet;
use std::process::Command;

#[test]
fn a_synthetic_report_is_one_self_contained_page() {
    let sources = synthetic();
    let html = render(&sources);
    let ids = check_page(&html);
    assert_every_experiment_has_a_timeline(&ids, &sources[0].recording, "");
    // The older recording repeats two experiments: their ids are made unique.
    assert_every_experiment_has_a_timeline(&ids, &sources[1].recording, "--r2");
    // The clock paragraph with its uncertainty.
    assert!(html.contains("How the clocks were aligned") && html.contains("±1.8 µs"));
    assert!(html.contains("call returned") && html.contains("operation finished"));
    std::fs::write(report_check_dir().join("synthetic.html"), &html).unwrap();
}

#[test]
fn text_from_recordings_is_escaped() {
    let html = render(&synthetic());
    assert!(!html.contains("<script") && !html.contains("alert('x')"), "unescaped text in the page");
    assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot;"));
    assert!(html.contains("&lt;CUDA_ERROR_OUT_OF_MEMORY&gt; &amp; nothing was measured"));
    assert!(html.contains("synthetic &lt;CPU&gt;") && html.contains("(made-up numbers) &lt;1&gt;"));
}

#[test]
fn the_committed_recordings_render() {
    let files = async_lab_tests::recording_files();
    let sources: Vec<Source> = files
        .iter()
        .map(|p| Source { label: p.display().to_string(), recording: Recording::load(p).unwrap() })
        .collect();
    let html = render(&sources);
    let ids = check_page(&html);
    let mut seen = HashSet::new();
    for (i, s) in sources.iter().enumerate() {
        for case in &s.recording.cases {
            // A repeated experiment gets its recording's number appended.
            let first = seen.insert(case.setup.id.clone());
            let suffix = if first { String::new() } else { format!("--r{}", i + 1) };
            if case.skipped.is_some() {
                // Not run here: no timeline, but the overview's link lands on the line that says why.
                let id = element_id("case", &case.setup.id);
                assert!(ids.contains(&(id + &suffix)), "{}: no anchor for {}", s.label, case.setup.id);
                continue;
            }
            let id = element_id("timeline", &case.setup.id);
            assert!(ids.contains(&(id + &suffix)), "{}: no timeline for {}", s.label, case.setup.id);
        }
        if s.recording.cases.iter().any(|c| c.skipped.is_some()) {
            assert!(html.contains("Not run on this machine"), "{}: the page does not say what was not run", s.label);
        }
        let report = build(&s.recording);
        let has = |prefix: &str| report.results.iter().any(|r| r.id.starts_with(prefix) && r.class.is_some());
        if has("sweep/") {
            assert!(ids.iter().any(|id| id.starts_with("plot-sweep")), "{}: no sweep plot", s.label);
        }
        if has("wait/") {
            assert!(ids.iter().any(|id| id.starts_with("plot-wait")), "{}: no wait plot", s.label);
        }
        if has("peer/") {
            assert!(ids.iter().any(|id| id.starts_with("plot-peer")), "{}: no peer plot", s.label);
        }
    }
}

#[test]
fn the_report_command_writes_the_page_and_needs_a_recording() {
    let dir = std::env::temp_dir().join(format!("async-lab-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("synthetic.json");
    synthetic().remove(0).recording.save(&file).unwrap();
    let out = dir.join("page.html");
    let o = Command::new(bin_path())
        .args(["report", "--replay", file.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    check_page(&html);
    assert!(html.contains("id=\"plot-sweep\"") && html.contains("id=\"timeline-seed-pinned-3-dtoh\""));
    // The seed's card names its memory kind from the steps' setups.
    assert!(html.contains("of pinned host memory: where each call returned"));

    let o = Command::new(bin_path()).arg("report").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--replay <FILE>"), "{}", String::from_utf8_lossy(&o.stderr));

    let o = Command::new(bin_path())
        .args(["report", "--replay", dir.join("missing.json").to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read the recording"));
    std::fs::remove_dir_all(&dir).unwrap();
}

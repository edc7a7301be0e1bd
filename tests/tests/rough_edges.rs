//! Each rough edge a user met gets one clear line and the right exit code: output to a full disk (`>
//! /dev/full`), a compressed trace cut short, a JSON report or a recording given as a trace, `async-lab trace`
//! without arguments where the package's environment names the PTX, `trace --help` (its own options only), and
//! a bare `async-lab` on a machine without a GPU (the answer the H200 recorded, exit 0).

use async_lab_tests::run_with_stub as run;
use std::process::{Command, Output, Stdio};

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn seed_trace() -> String {
    let traces = async_lab_tests::trace_files();
    let t = traces.iter().find(|p| p.to_string_lossy().contains("trace-torch_train-h200")).unwrap();
    t.to_str().unwrap().to_owned()
}

/// `async-lab ARGS > /dev/full`.
fn to_a_full_disk(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    Command::new(async_lab_tests::bin_path())
        .args(args)
        .env("LD_LIBRARY_PATH", async_lab_driver::STUB_DIR)
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn output_to_a_full_disk_is_one_line_and_exit_1_not_a_panic() {
    let trace = seed_trace();
    for args in [vec!["trace", "--replay", trace.as_str()], vec!["--version"], vec!["list"]] {
        let o = to_a_full_disk(&args);
        let e = err(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{e}");
        assert_eq!(e.lines().filter(|l| l.contains("cannot write the output")).count(), 1, "{args:?}: {e}");
    }
}

#[test]
fn a_compressed_trace_cut_short_is_said_and_replayed_as_far_as_it_goes() {
    let whole = std::fs::read(seed_trace()).unwrap();
    let path = async_lab_tests::temp_file("rough-edges", "cut.jsonl.gz", "");
    std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    let o = run(&["trace", "--replay", path.to_str().unwrap()]);
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("was cut short") && e.contains("replaying the"), "{e}");
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("(this process's trace was cut short"));
}

#[test]
fn a_report_or_a_recording_given_as_a_trace_is_named_for_what_it_is() {
    let report = run(&["trace", "--replay", &seed_trace(), "--format", "json"]);
    let path = async_lab_tests::temp_file("rough-edges", "report.json", &String::from_utf8_lossy(&report.stdout));
    let o = run(&["trace", "--replay", path.to_str().unwrap()]);
    let e = err(&o);
    assert_eq!((o.status.code(), e.lines().count()), (Some(1), 1), "{e}");
    assert!(e.contains("is the JSON report of `async-lab trace --format json`") && !e.contains("EOF"), "{e}");
    let rec = async_lab_tests::project_root()
        .join("recordings/async-lab-seed-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json");
    let o = run(&["trace", "--replay", rec.to_str().unwrap()]);
    assert!(
        err(&o).contains("is a recording of the lab's experiments; replay it with `async-lab --replay"),
        "{}",
        err(&o)
    );
}

#[test]
fn trace_without_arguments_and_its_help_name_only_its_own_options() {
    let o = Command::new(async_lab_tests::bin_path())
        .arg("trace")
        .env("LD_LIBRARY_PATH", async_lab_driver::STUB_DIR)
        .env("ASYNC_LAB_KERNELS_PTX", "/the/package/kernels.ptx")
        .output()
        .unwrap();
    let e = err(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("Usage: async-lab trace <--replay <FILE>|PROGRAM>") && !e.contains("--ptx"), "{e}");
    let help = String::from_utf8_lossy(&run(&["trace", "--help"]).stdout).into_owned();
    assert!(help.contains("--fail-on-held") && help.contains("--fail-on-warm-up"), "{help}");
    for lab in ["--ptx", "--device", "--cudart"] {
        assert!(!help.contains(lab), "trace --help lists the lab's {lab}:\n{help}");
    }
    // The lab's commands keep them.
    let help = String::from_utf8_lossy(&run(&["info", "--help"]).stdout).into_owned();
    assert!(help.contains("--ptx") && help.contains("--device"), "{help}");
}

#[test]
fn a_bare_run_without_a_gpu_shows_what_the_h200_recorded_and_exits_0() {
    let o = run(&[]);
    let e = err(&o);
    match o.status.code() {
        // No driver here: the seed preset's recording, replayed, said so on one line.
        Some(0) if e.contains("nothing was measured") => {
            assert_eq!(e.lines().count(), 1, "{e}");
            assert!(e.contains("NVIDIA H200") && e.contains("async-lab-seed-both-apis-h200"), "{e}");
            assert!(String::from_utf8_lossy(&o.stdout).contains("The seed program"));
        }
        other => panic!("a bare async-lab on the stub library ended with {other:?}: {e}"),
    }
    // Asked for something, it measures or says why not: exit 3 without a GPU.
    let o = run(&["--preset", "seed"]);
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
}

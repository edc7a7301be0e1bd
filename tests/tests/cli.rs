//! The `async-lab` binary as a process, without a GPU: the stub driver gives one clear line and exit code 3,
//! bad arguments and bad files give clear errors, never a panic.

use async_lab_tests::{bin_path, project_root};
use std::process::{Command, Output};

/// Runs async-lab with the link-time stub as its driver (even on a machine that has a real one).
fn run_with_stub(args: &[&str]) -> Output {
    Command::new(bin_path()).args(args).env("LD_LIBRARY_PATH", async_lab::STUB_DIR).output().expect("start async-lab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn assert_no_panic(o: &Output) {
    let e = stderr(o);
    assert!(!e.contains("panicked") && !e.contains("RUST_BACKTRACE"), "async-lab panicked:\n{e}");
    assert!(!e.contains("UnknownError"), "an unexplained driver error leaked out:\n{e}");
}

#[test]
fn every_gpu_command_names_the_missing_driver() {
    for args in [&["info"][..], &["selftest"], &[], &["--preset", "seed"], &["--only", "memset"]] {
        let o = run_with_stub(args);
        assert_no_panic(&o);
        assert_eq!(o.status.code(), Some(3), "async-lab {args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "one line, got:\n{e}");
        assert!(e.starts_with("async-lab: no NVIDIA driver") && e.contains("stub"), "{e}");
    }
}

#[test]
fn bad_arguments_are_usage_errors() {
    for (args, hint) in [
        (&["--bogus"][..], "unexpected argument"),
        (&["--reps", "0"], "--reps"),
        (&["--sizes", "12XB"], "unknown size unit"),
        (&["--format", "xml"], "invalid value"),
        (&["--preset", "everything"], "invalid value"),
        (&["selftest", "--cycles", "0"], "--cycles"),
        (&["--replay", "x.json", "--record", "y.json"], "cannot be used with"),
    ] {
        let o = run_with_stub(args);
        assert_no_panic(&o);
        assert_eq!(o.status.code(), Some(2), "async-lab {args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(hint), "async-lab {args:?}: expected {hint:?} in:\n{}", stderr(&o));
    }
}

#[test]
fn an_unknown_only_pattern_lists_what_exists_before_touching_the_gpu() {
    let o = run_with_stub(&["--only", "no-such-experiment"]);
    assert_no_panic(&o);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("no experiment matches \"no-such-experiment\""), "{e}");
    for family in
        ["copy/async/...", "memset/sync/...", "launch/queue-depth/...", "alloc/mem-free/...", "wait/stream-sync/..."]
    {
        assert!(e.contains(family), "{family} missing from:\n{e}");
    }
}

#[test]
fn a_missing_or_broken_ptx_file_is_refused_clearly() {
    let o = run_with_stub(&["info", "--ptx", "/nonexistent/kernels.ptx"]);
    assert_no_panic(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot read the PTX file /nonexistent/kernels.ptx"), "{}", stderr(&o));

    let dir = std::env::temp_dir().join(format!("async-lab-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let garbage = dir.join("garbage.ptx");
    std::fs::write(&garbage, "this is not PTX").unwrap();
    let o = run_with_stub(&["info", "--ptx", garbage.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is not PTX"), "{}", stderr(&o));

    let partial = dir.join("partial.ptx");
    std::fs::write(&partial, ".version 7.0\n.target sm_70\n.visible .entry empty()\n{\n}\n").unwrap();
    let o = run_with_stub(&["selftest", "--ptx", partial.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("lacks the kernel(s) spin_sleep, spin_wait_ns, fill, checksum"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_recordings_are_refused_clearly() {
    let dir = std::env::temp_dir().join(format!("async-lab-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let truncated = dir.join("truncated.json");
    std::fs::write(&truncated, "{\"kind\": \"async-lab-recording\", \"schema_version\": 1, \"cases\": [").unwrap();
    let wrong = dir.join("wrong.json");
    std::fs::write(&wrong, "{\"kind\": \"something-else\", \"schema_version\": 1}").unwrap();
    let future = dir.join("future.json");
    std::fs::write(&future, "{\"kind\": \"async-lab-recording\", \"schema_version\": 99}").unwrap();
    for (file, hint) in [
        (dir.join("missing.json"), "cannot read the recording"),
        (truncated, "not complete, valid JSON"),
        (wrong, "not \"async-lab-recording\""),
        (future, "schema_version is 99"),
    ] {
        let o = run_with_stub(&["--replay", file.to_str().unwrap()]);
        assert_no_panic(&o);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(hint), "expected {hint:?} in:\n{}", stderr(&o));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn list_prints_every_experiment_with_its_rule() {
    let o = run_with_stub(&["list"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().count() > 100, "{out}");
    assert!(out.lines().any(|l| l.starts_with("copy/async/htod/pageable/nonblocking/same/256MiB") && l.contains("A2")));
    assert!(out.lines().any(|l| l.starts_with("launch/first-lazy/launch/nonblocking/same") && l.contains("K4")));
    let _ = project_root();
}

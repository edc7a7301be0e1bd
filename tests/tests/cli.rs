//! The `async-lab` binary as a process, without a GPU: the stub driver gives one clear line and exit code 3,
//! bad arguments and bad files give clear errors, never a panic.

use async_lab_tests::run_with_stub;
use async_lab_tests::{bin_path, project_root};
use std::process::{Command, Output};

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
    // (A bare `async-lab` shows what the H200 recorded instead: `rough_edges.rs`.)
    for args in [&["info"][..], &["selftest"], &["--preset", "seed"], &["--only", "memset"]] {
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
    let e = stderr(&o);
    assert!(e.contains("does not have the kernels async-lab launches: spin_sleep is missing"), "{e}");
    assert!(e.contains("checksum is missing") && !e.contains("empty is"), "{e}");

    // Every kernel there, but one takes other parameters than the host passes: refused before any launch.
    let mut text = String::from(".version 7.0\n.target sm_70\n");
    for k in async_lab_ptx::KERNELS {
        let params: Vec<String> = if k.name == "fill" {
            vec![".param .u64 a".into()]
        } else {
            k.params.iter().enumerate().map(|(i, t)| format!(".param {t} p{i}")).collect()
        };
        text.push_str(&format!(".visible .entry {}(\n{}\n)\n{{\n}}\n", k.name, params.join(",\n")));
    }
    let wrong = dir.join("wrong.ptx");
    std::fs::write(&wrong, text).unwrap();
    let o = run_with_stub(&["selftest", "--ptx", wrong.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("fill is fill(.u64), the host passes fill(.u64, .u64, .u32)"), "{}", stderr(&o));
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
    assert!(out.lines().any(|l| l.starts_with("load/first-launch/lazy/same") && l.contains("K4")));
    let _ = project_root();
}

#[test]
fn list_names_the_peer_family_with_its_rules() {
    let o = run_with_stub(&["list", "--preset", "peer"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    // 3 calls × 2 access settings × (10 sweep sizes + 1 with the blocker on the destination GPU).
    assert_eq!(out.lines().count(), 66, "{out}");
    for (id, rule) in [
        ("peer/peer/p2p-on/same/4KiB", "P1"),
        ("peer/peer-async/p2p-on/same/1GiB", "P2"),
        ("peer/dtod-async/p2p-on/dst-gpu/1GiB", "P3"),
        ("peer/peer-async/p2p-off/same/64MiB", "P4"),
    ] {
        assert!(out.lines().any(|l| l.split_whitespace().take(2).eq([id, rule])), "no {id} {rule} in:\n{out}");
    }
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = Command::new(bin_path())
        .args(["list", "--preset", "full"])
        .env("LD_LIBRARY_PATH", async_lab_driver::STUB_DIR)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start async-lab");
    // Read one line, then go away like `head -1` does. The listing (about 74 KB) is larger than a pipe's buffer
    // (64 KiB) plus the little read here, so async-lab is still writing when the reader goes.
    let mut first = String::new();
    BufReader::with_capacity(64, child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("copy/"), "{first}");
    let o = child.wait_with_output().expect("wait for async-lab");
    assert_no_panic(&o);
    use std::os::unix::process::ExitStatusExt;
    const SIGPIPE: i32 = 13;
    assert_eq!(o.status.signal(), Some(SIGPIPE), "ended by SIGPIPE, as `yes | head -1` does: {:?}", o.status);
}

#[test]
fn explain_of_a_pair_a_one_gpu_recording_could_not_run_says_why() {
    let rec = project_root().join("recordings/async-lab-peer-one-gpu-h200-driver580.159.04-2026-12-02.json");
    let rec = rec.to_str().unwrap();
    let o = run_with_stub(&["explain", "peer/peer-async/p2p-off/same/1MiB/gpu0-to-gpu1", "--replay", rec]);
    assert_no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Not run on this machine: needs 2 GPUs: this machine has 1."), "{out}");
    let o = run_with_stub(&["explain", "peer/peer-async/p2p-off/same/1MiB/gpu0-to-gpu1/extra", "--replay", rec]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("has no experiment"), "{}", stderr(&o));
}

#[test]
fn explain_measures_a_seed_step_or_a_peer_pair_through_its_template() {
    // Measured now: the id of a record a template yields (a step of the seed's program, a pair of GPUs) is
    // found, so the only thing missing here is the GPU; an id no template yields is said at once.
    for id in [
        "seed/pageable/1-htod",
        "runtime/seed-answer/pinned/0-cudafree",
        "peer/peer-async/p2p-off/same/1MiB/gpu0-to-gpu1",
    ] {
        let o = run_with_stub(&["explain", id]);
        assert_no_panic(&o);
        assert_eq!(o.status.code(), Some(3), "{id}: {}", stderr(&o));
        assert!(stderr(&o).contains("no NVIDIA driver"), "{id}: {}", stderr(&o));
    }
    let o = run_with_stub(&["explain", "seed/pageable/9-nothing"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("there is no experiment"), "{}", stderr(&o));
}

#[test]
fn replaying_an_interrupted_recording_succeeds_and_says_it_was_cut_short() {
    let rec = project_root().join("recordings/async-lab-default-interrupted-h200-driver580.159.04-2026-12-02.json");
    let o = run_with_stub(&["--replay", rec.to_str().unwrap()]);
    assert_no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("cut short") && stderr(&o).contains("holds 24 experiments"), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("PARTIAL"), "the table says so too");
}

#[test]
fn compare_without_a_reference_needs_both_apis_in_the_recording() {
    // An older recording holds driver cases only: compare says what is missing instead of printing nothing.
    let rec = project_root().join("recordings/async-lab-default-interrupted-h200-driver580.159.04-2026-12-02.json");
    let o = run_with_stub(&["compare", rec.to_str().unwrap()]);
    assert_no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no case through both APIs") && stderr(&o).contains("--api both"), "{}", stderr(&o));
}

#[test]
fn stability_lists_what_changed_class_between_runs_and_needs_two() {
    // The driver-only default run of 2026-12-02, cut short after 24 cases (the earlier method), beside a newer
    // both-APIs run: some experiments moved, so the table has rows.
    let a = project_root().join("recordings/async-lab-default-interrupted-h200-driver580.159.04-2026-12-02.json");
    let b = project_root()
        .join("recordings/async-lab-default-both-apis-h200-driver580.159.04-2026-12-03-cdbfd1a-run3.json");
    let o = run_with_stub(&["stability", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let first = out.lines().next().unwrap_or_default();
    assert!(first.contains("experiments classified in two runs or more kept their class across 2 runs"), "{out}");
    // "N of M kept their class": the table then lists the M - N others, under columns named by what tells the
    // files apart.
    let words: Vec<&str> = first.split_whitespace().collect();
    let (kept, all): (usize, usize) = (words[0].parse().unwrap(), words[2].parse().unwrap());
    let rows = out.lines().filter(|l| l.starts_with("| `")).count();
    assert_eq!(rows, all - kept, "{out}");
    assert!(rows > 0, "{out}");
    assert!(
        out.contains(
            "| experiment | interrupted-h200-driver580.159.04-2026-12-02 | \
             both-apis-h200-driver580.159.04-2026-12-03-cdbfd1a-run3 | undecided repetitions |"
        ),
        "{out}"
    );
    let o = run_with_stub(&["stability", a.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "one run is a usage error: {}", stderr(&o));
}

/// A bundle as `cargo xtask bundle` lays it out (async-lab, its PTX, run.sh, no-driver/libcuda.so.1), made
/// from the debug build.
fn bundle() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("async-lab-bundle-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("no-driver")).unwrap();
    std::fs::copy(bin_path(), dir.join("async-lab")).unwrap();
    std::fs::copy(async_lab_tests::ptx_path(), dir.join("async_lab_kernels.ptx")).unwrap();
    std::fs::copy(
        std::path::Path::new(async_lab_driver::STUB_DIR).join("libcuda.so.1"),
        dir.join("no-driver/libcuda.so.1"),
    )
    .unwrap();
    std::fs::copy(project_root().join("xtask/src/bundle_run.sh"), dir.join("run.sh")).unwrap();
    dir
}

#[test]
fn the_bundle_runs_subcommands_and_replays_without_a_driver() {
    let dir = bundle();
    let run = |args: &[&str]| {
        Command::new("sh").arg(dir.join("run.sh")).args(args).env_remove("LD_LIBRARY_PATH").output().unwrap()
    };
    // Subcommands: once refused ("cannot be used with '--ptx'"), and `help`, which takes no options after it.
    let o = run(&["help", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["list", "--preset", "seed"]);
    assert_no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("runtime/seed/pinned"));
    let rec = project_root().join("recordings/async-lab-seed-both-apis-h200-driver580.159.04-2026-12-02.json");
    let o = run(&["--replay", rec.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["compare", rec.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("measured through both APIs"));
    // A GPU command: on a machine with a driver it runs; without one, one line and exit 3 (not exit 2 from run.sh).
    let o = run(&["info"]);
    assert_no_panic(&o);
    assert!(!stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
    match o.status.code() {
        Some(3) => {
            // run.sh says it starts on the stand-in, then async-lab its one line.
            let e = stderr(&o);
            assert!(e.starts_with("run.sh: no NVIDIA driver library") && e.lines().count() == 2, "{e}");
            assert!(e.lines().nth(1).unwrap().starts_with("async-lab: no NVIDIA driver"), "{e}");
        }
        Some(0) => assert!(String::from_utf8_lossy(&o.stdout).starts_with("GPU "), "a GPU machine describes its GPU"),
        other => panic!("run.sh info ended with {other:?}: {}", stderr(&o)),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

//! The injection library's Python frame reader, in a real interpreter: `tests/python/frames_ctypes.py` loads
//! the library with `ctypes` (which releases the GIL around the call, as PyTorch does around its CUDA calls)
//! and checks the file, function and line of every frame it returns; `frames_threads.py` checks what a
//! location holds: the calling thread's frames to its own frame under 60 library frames, and from a thread
//! that runs no Python every Python thread's (id, GIL, frames) against what Python says of each, also while
//! one thread's stack changes under the reader. Runs on `python3` (CI's is CPython 3.11), and on each
//! interpreter named in `ASYNC_LAB_PYTHONS` (separated by `:`), each of which must exist: nothing here passes
//! by skipping.

use async_lab_tests::inject_path;
use std::path::PathBuf;
use std::process::Command;

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python").join(name)
}

/// Runs `frames_ctypes.py` on `python` with `args`; its JSON line.
fn run(python: &str, args: &[&str]) -> serde_json::Value {
    run_script("frames_ctypes.py", python, args)
}

/// Runs script `name` on `python` with `args`; its JSON line.
fn run_script(name: &str, python: &str, args: &[&str]) -> serde_json::Value {
    let out = Command::new(python)
        .arg(script(name))
        .arg(inject_path())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{python} is needed to test the Python frame reader and could not be run: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the frame reader failed on {python} ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{python} printed no result ({e}): {stdout}"))
}

fn interpreters() -> Vec<String> {
    let mut all = vec!["python3".to_string()];
    if let Ok(more) = std::env::var("ASYNC_LAB_PYTHONS") {
        all.extend(more.split(':').filter(|p| !p.is_empty()).map(String::from));
    }
    all
}

/// The median and largest of one measure, in µs, and its system calls.
fn measure(m: &serde_json::Value) -> String {
    let us = |v: &serde_json::Value| v.as_u64().unwrap_or(0) as f64 / 1000.0;
    format!("{:.1} µs (max {:.0} µs, {} calls)", us(&m["median"]), us(&m["max"]), m["calls"])
}

/// What one run measured, as the docs give it.
fn report(python: &str, result: &serde_json::Value) -> String {
    let mut out = format!("{python} (Python {}):", result["python"].as_str().unwrap_or("?"));
    for (name, c) in [("deep", &result["cost_deep"]), ("shallow", &result["cost_shallow"])] {
        out += &format!(
            "\n  {name}: own {} frames {}; first {}; line {}; others ({} threads, {} frames) {}; first {}",
            c["frames"],
            measure(&c["own_ns"]),
            measure(&c["own_first_ns"]),
            measure(&c["line_ns"]),
            c["threads"],
            c["other_frames"],
            measure(&c["others_ns"]),
            measure(&c["others_first_ns"]),
        );
    }
    out
}

#[test]
fn frames_read_without_the_gil_are_the_frames_python_reports() {
    for python in interpreters() {
        let result = run(&python, &["--cost=200"]);
        assert_eq!(result["checks"], 12, "{python}: {result}");
        let reader = result["reader"].as_str().unwrap_or_default();
        assert!(["layout", "debug-offsets"].contains(&reader), "{python}: {result}");
        // What a location read: 60 library frames and the program's own; four threads but the reader.
        assert_eq!(result["cost_deep"]["frames"], 61, "{python}: {result}");
        assert_eq!(result["cost_deep"]["threads"], 4, "{python}: {result}");
        // Once warm, the calling thread's own frames are read in place (3.11 and later: its data-stack chunks)
        // or in one system call (3.10's frame objects); another thread's in one system call.
        let own_calls = if older_than_3_11(&result) { 1.0 } else { 0.0 };
        assert_eq!(result["cost_deep"]["own_ns"]["calls"], own_calls, "{python}: {result}");
        assert_eq!(result["cost_deep"]["others_ns"]["calls"], 1.0, "{python}: {result}");
        // The median read time in this build (a debug build unless ASYNC_LAB_INJECT names another).
        println!("{}", report(&python, &result));
    }
}

/// Whether the interpreter that printed `result` is 3.10 (frames as objects of their own, not in chunks).
fn older_than_3_11(result: &serde_json::Value) -> bool {
    result["python"].as_str().is_some_and(|v| v.starts_with("3.10."))
}

/// A program held at five places in turn, each under its own chain of library frames (none to 40): every read
/// names each place's frames to the program's line (the script fails on any other), and once each place was
/// read, a read needs no system call (3.11 and later: the thread's own frames in place, the code objects
/// known from the thread's recent frames) or one (3.10: the frame objects, every place's pages planned).
#[test]
fn a_program_held_at_several_places_in_turn_reads_each_without_reading_its_code_again() {
    for python in interpreters() {
        let result = run_script("frames_sites.py", &python, &[]);
        assert_eq!(result["reads"], 250, "{python}: {result}");
        let older = older_than_3_11(&result);
        assert_eq!(result["in_place"], !older, "{python}: {result}");
        let sites = result["sites"].as_array().expect("sites");
        assert_eq!(sites.len(), 5, "{python}: {result}");
        for site in sites {
            let most = if older { 1 } else { 0 };
            assert!(site["calls_max"].as_u64().is_some_and(|c| c <= most), "{python}: {site}");
        }
        println!("{python}: {result}");
    }
}

/// The reader's cost in a Python process (median and max of 2000 rounds), printed for the docs: a location's
/// read under 60 library frames and with the program's frame innermost, first and warm, and every other
/// thread's from a thread without Python. `cargo test -p async-lab-tests --test python_frames -- --ignored
/// --nocapture` with `ASYNC_LAB_INJECT` naming a release build (`cargo build --release -p
/// async-lab-trace-inject`).
#[test]
#[ignore]
fn the_readers_cost() {
    for python in interpreters() {
        let result = run(&python, &["--cost"]);
        println!("{}", report(&python, &result));
        let own = &result["cost_deep"]["own_ns"]["median"];
        assert!(own.as_u64().is_some_and(|ns| ns > 0), "{result}");
    }
}

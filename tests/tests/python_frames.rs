//! The injection library's Python frame reader, in a real interpreter: `tests/python/frames_ctypes.py` loads
//! the library with `ctypes` (which releases the GIL around the call, as PyTorch does around its CUDA calls)
//! and checks the file, function and line of every frame it returns. Runs on `python3` (CI's is CPython
//! 3.11), and on each interpreter named in `ASYNC_LAB_PYTHONS` (separated by `:`), each of which must exist:
//! nothing here passes by skipping.

use async_lab_tests::inject_path;
use std::path::PathBuf;
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/frames_ctypes.py")
}

/// Runs the script on `python` with `args`; its JSON line.
fn run(python: &str, args: &[&str]) -> serde_json::Value {
    let out = Command::new(python)
        .arg(script())
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

#[test]
fn frames_read_without_the_gil_are_the_frames_python_reports() {
    for python in interpreters() {
        let result = run(&python, &[]);
        assert_eq!(result["checks"], 7, "{python}: {result}");
        let reader = result["reader"].as_str().unwrap_or_default();
        assert!(["layout", "debug-offsets"].contains(&reader), "{python}: {result}");
    }
}

/// The reader's cost in a Python process (median and max of 2000 rounds, ns), printed: under the script's
/// own few frames, 40 recursive frames and 40 distinct functions. `cargo test -p async-lab-tests --test
/// python_frames -- --ignored --nocapture` (with `ASYNC_LAB_INJECT` naming a release build to measure it).
#[test]
#[ignore]
fn the_readers_cost() {
    for python in interpreters() {
        let result = run(&python, &["--cost"]);
        println!("{python}: {result:#}");
        let whole = &result["cost_chain_40"]["frames_ns"]["median"];
        assert!(whole.as_u64().is_some_and(|ns| ns > 0), "{result}");
    }
}

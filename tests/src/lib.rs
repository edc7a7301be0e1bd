//! Helpers for the workspace's GPU-free tests: where the inputs they test are (here), the synthetic recording
//! the HTML tests render (`synthetic`), synthetic traces (`trace_synthetic`, and `synthetic_places` for
//! programs placed by their own lines), and the checks of a rendered page they share (`page`).
//!
//! `cargo xtask test` builds the PTX and the `async-lab` binary first and passes their paths in `ASYNC_LAB_PTX`
//! and `ASYNC_LAB_BIN`; run alone, the tests look in the usual places under `target/`. A missing input fails the
//! test with the command that makes it: it is never a reason to skip.

pub mod launch_log;
pub mod page;
pub mod synthetic;
pub mod synthetic_places;
pub mod trace_synthetic;

use std::env;
use std::path::{Path, PathBuf};

/// The repository root.
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Runs the `async-lab` binary with the link-time stub as its driver (even on a machine that has a real one).
pub fn run_with_stub(args: &[&str]) -> std::process::Output {
    std::process::Command::new(bin_path())
        .args(args)
        .env("LD_LIBRARY_PATH", async_lab_driver::STUB_DIR)
        .output()
        .expect("start async-lab")
}

/// Writes `text` to a file `name` in a folder of this test process's own under the temporary folder (`tag`
/// names the test file), and gives its path.
pub fn temp_file(tag: &str, name: &str, text: &str) -> PathBuf {
    let dir = env::temp_dir().join(format!("async-lab-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The kernels' PTX: `$ASYNC_LAB_PTX`, else `target/ptx/async_lab_kernels.ptx`. Panics if it does not exist.
pub fn ptx_path() -> PathBuf {
    existing_input("ASYNC_LAB_PTX", "target/ptx/async_lab_kernels.ptx", "the kernels' PTX", "cargo xtask build-ptx")
}

/// The debug `async-lab` binary: `$ASYNC_LAB_BIN`, else `target/debug/async-lab`. Panics if it does not exist.
pub fn bin_path() -> PathBuf {
    existing_input("ASYNC_LAB_BIN", "target/debug/async-lab", "the async-lab binary", "cargo build -p async-lab")
}

/// The injection library of `async-lab trace`: `$ASYNC_LAB_INJECT`, else `target/debug/libasync_lab_inject.so`.
/// Panics if it does not exist.
pub fn inject_path() -> PathBuf {
    existing_input(
        "ASYNC_LAB_INJECT",
        "target/debug/libasync_lab_inject.so",
        "the injection library",
        "cargo build -p async-lab-trace-inject",
    )
}

/// The kernels' PTX as text (see [`ptx_path`]).
pub fn ptx_text() -> String {
    let path = ptx_path();
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

fn existing_input(var: &str, default: &str, what: &str, make_it: &str) -> PathBuf {
    let path = match env::var_os(var) {
        Some(path) => project_root().join(path),
        None => project_root().join(default),
    };
    assert!(
        path.exists(),
        "{what} is missing at {} (from {}); make it with `{make_it}`, or run everything with `cargo xtask test`",
        path.display(),
        if env::var_os(var).is_some() { format!("${var}") } else { format!("the default; ${var} is not set") },
    );
    path
}

/// The committed recordings (`recordings/async-lab-*.json`), sorted. Panics if there are none: tests that replay
/// them would otherwise pass by testing nothing.
pub fn recording_files() -> Vec<PathBuf> {
    let dir = project_root().join("recordings");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name().unwrap().to_string_lossy().starts_with("async-lab-")
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no recordings in {}: the replay tests would test nothing", dir.display());
    files
}

/// Where the committed traces are, relative to the project's root: one place for every trace made with
/// `async-lab trace` on real GPUs, each stored gzip-compressed (`trace-*.jsonl.gz`, read as it is by `--replay`).
pub const TRACES: &str = "recordings/traces";

/// The committed traces (`recordings/traces/trace-*.jsonl.gz`), sorted.
pub fn trace_files() -> Vec<PathBuf> {
    let dir = project_root().join(TRACES);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("trace-") && name.ends_with(".jsonl.gz")
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no traces in {}: the replay tests would test nothing", dir.display());
    files
}

/// A committed trace's name as it was written (`trace-x.jsonl`, without the `.gz` it is stored with).
pub fn trace_name(path: &Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    name.strip_suffix(".gz").unwrap_or(&name).to_owned()
}

/// The text of a trace file, decompressed where it is stored compressed.
pub fn trace_text(path: &Path) -> String {
    use std::io::Read as _;
    let mut text = String::new();
    async_lab_core::trace::format::stored::open(path)
        .and_then(|mut file| file.read_to_string(&mut text))
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    text
}

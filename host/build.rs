//! Build script: embeds the kernels' PTX and puts the driver crate's link-time `libcuda.so` stub on the run path.
//!
//! The PTX has one owner, `cargo xtask build-ptx`; this script only copies it into `OUT_DIR` (or fails
//! with the command to run). The stub is made by `driver/build.rs` (see `driver/cuda-stub/README.md`).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    embed_ptx(&manifest_dir, &out_dir);
    stub_run_path();
    record_git_commit(&manifest_dir);
}

/// Exposes the commit being built as `ASYNC_LAB_GIT_COMMIT` ("<hash>" or "<hash>-dirty"; "unknown" outside git).
fn record_git_commit(manifest_dir: &Path) {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(manifest_dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(hash) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(status) if !status.is_empty() => format!("{hash}-dirty"),
            _ => hash,
        },
        None => "unknown".to_owned(),
    };
    println!("cargo:rustc-env=ASYNC_LAB_GIT_COMMIT={commit}");
    let git_dir = manifest_dir.join("../.git");
    println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
    println!("cargo:rerun-if-changed={}", git_dir.join("index").display());
}

/// Copies `target/ptx/async_lab_kernels.ptx` to `OUT_DIR/kernels.ptx` for `include_str!`.
fn embed_ptx(manifest_dir: &Path, out_dir: &Path) {
    let ptx = manifest_dir.join("../target/ptx/async_lab_kernels.ptx");
    println!("cargo:rerun-if-changed={}", ptx.display());
    match fs::read_to_string(&ptx) {
        Ok(text) => fs::write(out_dir.join("kernels.ptx"), text).expect("write OUT_DIR/kernels.ptx"),
        Err(err) => {
            println!(
                "cargo::error=the kernels' PTX is missing ({}: {err}). Build it first with `cargo xtask build-ptx` \
                 (or run everything with `cargo xtask run` / `cargo xtask test`).",
                ptx.display()
            );
            // Keep compiling errors out of the way: an empty PTX string, the build fails on the line above.
            fs::write(out_dir.join("kernels.ptx"), "").expect("write OUT_DIR/kernels.ptx");
        }
    }
}

/// Puts the driver crate's `libcuda.so` stub on the binary's run path where this machine has no driver (the
/// driver crate's build script decides, and says so through `links` metadata), and names its folder for the
/// no-driver tests.
fn stub_run_path() {
    let dir = env::var("DEP_ASYNC_LAB_CUDA_STUB_STUB_DIR").expect("the driver crate's build script names the stub");
    println!("cargo:rustc-env=ASYNC_LAB_STUB_DIR={dir}");
    if env::var_os("DEP_ASYNC_LAB_CUDA_STUB_NEEDS_RPATH").is_some() {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}

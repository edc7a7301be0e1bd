//! `cargo xtask test`: every check that CI runs, in order, stopping at the first that fails.
//!
//! Formatting (both workspaces), the PTX build and a check of the module, the CUDA stub's symbol list against
//! cust_raw's bindings, clippy, and the workspace's tests (which get the paths of the PTX and of the debug
//! `async-lab` binary through `ASYNC_LAB_PTX` and `ASYNC_LAB_BIN`). Nothing here needs a GPU.

use std::collections::BTreeSet;
use std::env;
use std::fs;
use std::path::PathBuf;

use anyhow::{bail, Context};
use xshell::{cmd, Shell};

use crate::build_ptx::{check_ptx, ensure_toolchain, pinned_channel, without_inherited_toolchain};
use crate::{flags, host_target_dir, project_root, ptx_path};

impl flags::Test {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let channel = pinned_channel()?;
        let steps: [(&str, &dyn Fn() -> anyhow::Result<()>); 8] = [
            ("rustfmt: host workspace", &|| fmt_host(sh)),
            ("rustfmt: gpu-kernels", &|| fmt_gpu_kernels(sh, &channel)),
            ("build-ptx", &|| flags::BuildPtx.run(sh).map(drop)),
            ("PTX check", &check_ptx_file),
            ("CUDA stub symbols", &|| check_stub_symbols(sh)),
            ("clippy", &|| clippy(sh)),
            ("build async-lab (debug)", &|| build_host(sh)),
            ("cargo test --workspace", &|| run_tests(sh)),
        ];

        let count = steps.len();
        for (i, (name, step)) in steps.iter().enumerate() {
            eprintln!("\n==> [{}/{count}] {name}", i + 1);
            step().with_context(|| format!("step {}/{count} `{name}` failed", i + 1))?;
        }
        eprintln!("\n==> all {count} steps passed");
        Ok(())
    }
}

fn fmt_host(sh: &Shell) -> anyhow::Result<()> {
    cmd!(sh, "cargo fmt --all --check").run().context("unformatted code: run `cargo fmt --all`")?;
    Ok(())
}

fn fmt_gpu_kernels(sh: &Shell, channel: &str) -> anyhow::Result<()> {
    ensure_toolchain(sh, channel, &["rust-src", "rustfmt"])?;
    let _dir = sh.push_dir(project_root().join("gpu-kernels"));
    without_inherited_toolchain(cmd!(sh, "cargo +{channel} fmt --all --check"))
        .run()
        .with_context(|| format!("unformatted code: run `cargo +{channel} fmt --all` in gpu-kernels/"))?;
    Ok(())
}

fn check_ptx_file() -> anyhow::Result<()> {
    let ptx = ptx_path();
    let text = fs::read_to_string(&ptx).with_context(|| format!("reading {}", ptx.display()))?;
    let module = check_ptx(&text).with_context(|| format!("checking {}", ptx.display()))?;
    eprintln!("one module, .target {}, no unresolved functions, kernels:", module.target);
    for entry in &module.entries {
        eprintln!("    {entry}");
    }
    Ok(())
}

fn clippy(sh: &Shell) -> anyhow::Result<()> {
    cmd!(sh, "cargo clippy --workspace --all-targets -- -D warnings").run().context("clippy found problems")?;
    Ok(())
}

/// The process tests run this binary (`ASYNC_LAB_BIN`); `cargo test` alone would not build it.
fn build_host(sh: &Shell) -> anyhow::Result<()> {
    cmd!(sh, "cargo build -p async-lab").run().context("building async-lab (debug)")?;
    Ok(())
}

fn run_tests(sh: &Shell) -> anyhow::Result<()> {
    let bin = host_target_dir().join("debug/async-lab");
    let ptx = ptx_path();
    let mut test = cmd!(sh, "cargo test --workspace").env("ASYNC_LAB_BIN", &bin).env("ASYNC_LAB_PTX", &ptx);
    if env::var_os("CI").is_some() {
        // In CI a snapshot mismatch fails and writes nothing.
        test = test.env("INSTA_UPDATE", "no");
    }
    test.run().context("tests failed")?;
    Ok(())
}

/// The stub symbol list that the host's build script compiles into its link-time `libcuda.so`.
const STUB_SYMBOLS: &str = "host/cuda-stub/symbols.txt";

/// Checks that `host/cuda-stub/symbols.txt` lists exactly the driver functions of cust_raw's bindings.
fn check_stub_symbols(sh: &Shell) -> anyhow::Result<()> {
    let metadata = cmd!(sh, "cargo metadata --format-version 1").quiet().read().context("running cargo metadata")?;
    let bindings = cust_raw_bindings(&metadata)?;
    let source = fs::read_to_string(&bindings).with_context(|| format!("reading {}", bindings.display()))?;
    let expected = binding_names(&source);

    let committed_path = project_root().join(STUB_SYMBOLS);
    let committed = fs::read_to_string(&committed_path).with_context(|| format!("reading {STUB_SYMBOLS}"))?;
    let regenerate = format!(
        "regenerate it with:\n    grep -o 'pub fn cu[A-Za-z0-9_]*' {} | sed 's/^pub fn //' | LC_ALL=C sort -u > {STUB_SYMBOLS}",
        bindings.display()
    );
    compare_symbols(&committed, &expected).with_context(|| format!("{STUB_SYMBOLS} is out of date; {regenerate}"))?;
    eprintln!("{STUB_SYMBOLS}: {} symbols, same as {}", expected.len(), bindings.display());
    Ok(())
}

/// `src/cuda.rs` of the `cust_raw` package in `cargo metadata`'s JSON.
fn cust_raw_bindings(metadata: &str) -> anyhow::Result<PathBuf> {
    let metadata: serde_json::Value = serde_json::from_str(metadata).context("parsing cargo metadata")?;
    let packages = metadata["packages"].as_array().context("cargo metadata has no `packages`")?;
    let cust_raw: Vec<&serde_json::Value> = packages.iter().filter(|p| p["name"] == "cust_raw").collect();
    let [package] = cust_raw.as_slice() else {
        bail!("expected one `cust_raw` package in the dependency graph, found {}", cust_raw.len());
    };
    let manifest = package["manifest_path"].as_str().context("cust_raw has no manifest_path")?;
    let dir = PathBuf::from(manifest).parent().context("cust_raw's manifest_path has no parent")?.to_path_buf();
    Ok(dir.join("src/cuda.rs"))
}

/// The sorted, unique `cu*` function names declared as `pub fn cu...(` in bindgen output.
fn binding_names(source: &str) -> BTreeSet<String> {
    source
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("pub fn cu"))
        .map(|rest| {
            let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            format!("cu{}", &rest[..len])
        })
        .collect()
}

/// Checks that `committed` has one name per line, sorted and unique, and exactly the names of `expected`.
fn compare_symbols(committed: &str, expected: &BTreeSet<String>) -> anyhow::Result<()> {
    let lines: Vec<&str> = committed.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    let committed_set: BTreeSet<String> = lines.iter().map(|line| line.to_string()).collect();
    let missing: Vec<&str> = expected.difference(&committed_set).map(String::as_str).collect();
    let extra: Vec<&str> = committed_set.difference(expected).map(String::as_str).collect();
    let mut problems = Vec::new();
    if !missing.is_empty() {
        problems.push(format!("missing {}: {}", missing.len(), missing.join(", ")));
    }
    if !extra.is_empty() {
        problems.push(format!("not in cust_raw {}: {}", extra.len(), extra.join(", ")));
    }
    if !lines.windows(2).all(|pair| pair[0] < pair[1]) {
        problems.push("not sorted, or has duplicates".to_owned());
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_binding_names() {
        let source = "extern \"C\" {\n    pub fn cuInit(Flags: c_uint) -> CUresult;\n}\n\
                      extern \"C\" {\n    pub fn cuCtxCreate_v2(\n        pctx: *mut CUcontext) -> CUresult;\n}\n\
                      pub fn not_a_driver_fn() {}\n    pub fn cuInit(Flags: c_uint) -> CUresult;\n";
        let names: Vec<String> = binding_names(source).into_iter().collect();
        assert_eq!(names, ["cuCtxCreate_v2", "cuInit"]);
    }

    #[test]
    fn compares_symbol_lists() {
        let expected: BTreeSet<String> = ["cuA", "cuB"].map(String::from).into();
        assert!(compare_symbols("cuA\ncuB\n", &expected).is_ok());
        let err = compare_symbols("cuB\ncuA\ncuC\n", &expected).unwrap_err().to_string();
        assert!(err.contains("not in cust_raw 1: cuC") && err.contains("not sorted"), "{err}");
        let err = compare_symbols("cuA\n", &expected).unwrap_err().to_string();
        assert!(err.contains("missing 1: cuB"), "{err}");
    }
}

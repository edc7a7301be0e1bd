//! `cargo xtask test`: every check that CI runs, in order, stopping at the first that fails.
//!
//! Formatting (both workspaces), the core crate's dependencies (nothing that links CUDA or builds C), the
//! injection library's (nothing of the lab's model or views: no core, plots, tables, CSV or schema), the PTX
//! build and a check of the module, the CUDA stub's symbol list against cust_raw's bindings, clippy, the workspace's tests (which get the paths of the PTX and of the debug
//! `async-lab` binary through `ASYNC_LAB_PTX` and `ASYNC_LAB_BIN`), and the HTML report loaded in a real
//! browser (headless Chromium, which `.ci/run` installs), and the Python wheel built from the debug binaries,
//! installed into a fresh virtual environment (pytest from PyPI) and checked from there. Nothing here needs a
//! GPU.

use std::collections::BTreeSet;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use xshell::{cmd, Shell};

use crate::build_ptx::{check_ptx, ensure_toolchain, pinned_channel, without_inherited_toolchain};
use crate::{flags, host_target_dir, project_root, ptx_path};

impl flags::Test {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let channel = pinned_channel()?;
        let steps: [(&str, &dyn Fn() -> anyhow::Result<()>); 13] = [
            ("rustfmt: host workspace", &|| fmt_host(sh)),
            ("async-lab-core links no CUDA and builds no C", &|| check_core_dependencies(sh)),
            ("async-lab-trace-inject links nothing of the lab's model or views", &|| check_inject_dependencies(sh)),
            ("rustfmt: gpu-kernels", &|| fmt_gpu_kernels(sh, &channel)),
            ("build-ptx", &|| flags::BuildPtx.run(sh).map(drop)),
            ("PTX check", &check_ptx_file),
            ("CUDA stub symbols", &|| check_stub_symbols(sh)),
            ("clippy", &|| clippy(sh)),
            ("build async-lab (debug)", &|| build_host(sh)),
            ("cargo test --workspace", &|| run_tests(sh)),
            ("HTML report in headless Chromium", &|| check_report_in_chromium(sh)),
            ("trace page: by-location table and zoom in headless Chromium", &|| check_trace_page_in_chromium(sh)),
            ("Python wheel: installed into a fresh virtual environment, its command, replay, pytest plugin and tests", &|| {
                check_wheel(sh)
            }),
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

/// Packages that bind or link CUDA, or build C: none may be among the core crate's dependencies.
const NOT_IN_CORE: &[&str] =
    &["cust", "cust_raw", "cust_core", "cust_derive", "cudarc", "find_cuda_helper", "cc", "bindgen", "libloading"];

/// What the injection library, loaded into every traced program, must not link: the lab's model and views (the
/// core, with its catalogue) and what only they need (plots, tables, CSV, the JSON report's schema). Its gate
/// needs the trace's format and analysis alone (`docs/crates.md`).
const NOT_IN_INJECT: &[&str] = &["async-lab-core", "plotters", "comfy-table", "csv", "schemars"];

/// The core crate (`core/`) must replay and report on any machine: checks its dependency tree.
fn check_core_dependencies(sh: &Shell) -> anyhow::Result<()> {
    let tree = dependency_tree(sh, "async-lab-core", "normal,build")?;
    let found = forbidden_packages(&tree, NOT_IN_CORE);
    if !found.is_empty() {
        bail!(
            "async-lab-core depends on {} (see `cargo tree -p async-lab-core -i NAME`): the core must not link \
             CUDA or build C; move what needs it to the async-lab crate (docs/crates.md)",
            found.join(", ")
        );
    }
    eprintln!("async-lab-core: {} packages, none of {}", tree.lines().count(), NOT_IN_CORE.join(", "));
    Ok(())
}

/// The injection library links the trace's format and analysis, nothing of the lab: checks its dependency tree.
fn check_inject_dependencies(sh: &Shell) -> anyhow::Result<()> {
    let tree = dependency_tree(sh, "async-lab-trace-inject", "normal")?;
    let found = forbidden_packages(&tree, NOT_IN_INJECT);
    if !found.is_empty() {
        bail!(
            "async-lab-trace-inject depends on {} (see `cargo tree -p async-lab-trace-inject -e normal -i NAME`): \
             the library loaded into every traced program takes the trace's format and analysis alone; what \
             needs the lab's model or a view belongs in the core (docs/crates.md)",
            found.join(", ")
        );
    }
    eprintln!("async-lab-trace-inject: {} packages, none of {}", tree.lines().count(), NOT_IN_INJECT.join(", "));
    Ok(())
}

/// `package`'s dependency tree over the edges `edges` (`cargo tree -e`), one package a line ("name vX.Y.Z ...").
fn dependency_tree(sh: &Shell, package: &str, edges: &str) -> anyhow::Result<String> {
    let format = "{p}";
    cmd!(sh, "cargo tree -p {package} -e {edges} --prefix none --format {format}")
        .quiet()
        .read()
        .with_context(|| format!("running cargo tree -p {package}"))
}

/// The names among `forbidden` in `cargo tree --prefix none --format {p}` output ("name vX.Y.Z ...").
fn forbidden_packages(tree: &str, forbidden: &[&str]) -> Vec<String> {
    let names: BTreeSet<&str> = tree.lines().filter_map(|line| line.split_whitespace().next()).collect();
    forbidden.iter().filter(|n| names.contains(**n)).map(|n| n.to_string()).collect()
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

/// The process tests run this binary (`ASYNC_LAB_BIN`) and load the injection library (`ASYNC_LAB_INJECT`);
/// `cargo test` alone would build neither.
fn build_host(sh: &Shell) -> anyhow::Result<()> {
    cmd!(sh, "cargo build -p async-lab -p async-lab-trace-inject")
        .run()
        .context("building async-lab and its injection library (debug)")?;
    Ok(())
}

fn run_tests(sh: &Shell) -> anyhow::Result<()> {
    let bin = host_target_dir().join("debug/async-lab");
    let ptx = ptx_path();
    let inject = host_target_dir().join("debug/libasync_lab_inject.so");
    let mut test = cmd!(sh, "cargo test --workspace")
        .env("ASYNC_LAB_BIN", &bin)
        .env("ASYNC_LAB_PTX", &ptx)
        .env("ASYNC_LAB_INJECT", &inject);
    if env::var_os("CI").is_some() {
        // In CI a snapshot mismatch fails and writes nothing.
        test = test.env("INSTA_UPDATE", "no");
    }
    test.run().context("tests failed")?;
    Ok(())
}

/// The stub symbol list that the driver crate's build script compiles into its link-time `libcuda.so`.
const STUB_SYMBOLS: &str = "driver/cuda-stub/symbols.txt";

/// async-lab's own driver declarations (functions newer than cust_raw's CUDA 11.4 headers among them).
const HOST_SYS: &str = "driver/src/sys.rs";

/// Checks that `driver/cuda-stub/symbols.txt` lists exactly the driver functions of cust_raw's bindings plus
/// those that `driver/src/sys.rs` declares itself.
fn check_stub_symbols(sh: &Shell) -> anyhow::Result<()> {
    let metadata = cmd!(sh, "cargo metadata --format-version 1").quiet().read().context("running cargo metadata")?;
    let bindings = cust_raw_bindings(&metadata)?;
    let source = fs::read_to_string(&bindings).with_context(|| format!("reading {}", bindings.display()))?;
    let host_sys = project_root().join(HOST_SYS);
    let host_source = fs::read_to_string(&host_sys).with_context(|| format!("reading {HOST_SYS}"))?;
    let expected = expected_symbols(&source, &host_source);

    let committed_path = project_root().join(STUB_SYMBOLS);
    let committed = fs::read_to_string(&committed_path).with_context(|| format!("reading {STUB_SYMBOLS}"))?;
    let regenerate = format!(
        "regenerate it with:\n    grep -ho 'pub fn cu[A-Za-z0-9_]*' {} {HOST_SYS} | sed 's/^pub fn //' | LC_ALL=C sort -u > {STUB_SYMBOLS}",
        bindings.display()
    );
    compare_symbols(&committed, &expected).with_context(|| format!("{STUB_SYMBOLS} is out of date; {regenerate}"))?;
    eprintln!("{STUB_SYMBOLS}: {} symbols, same as {} and {HOST_SYS}", expected.len(), bindings.display());
    Ok(())
}

/// The stub must define every function of cust_raw's bindings (`cust` links them all) and every function the
/// host declares itself in `sys.rs` (some are newer than cust_raw's headers).
fn expected_symbols(bindings: &str, host_sys: &str) -> BTreeSet<String> {
    let mut names = binding_names(bindings);
    names.extend(binding_names(host_sys));
    names
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
        problems.push(format!("declared by neither cust_raw nor sys.rs {}: {}", extra.len(), extra.join(", ")));
    }
    if !lines.windows(2).all(|pair| pair[0] < pair[1]) {
        problems.push("not sorted, or has duplicates".to_owned());
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    Ok(())
}

/// Debian's Chromium, which `.ci/run` installs.
const CHROMIUM: &str = "/usr/bin/chromium";

/// Where the report check works: the page, Chromium's output, the screenshot. The html test
/// (`tests/tests/html_page.rs`) writes its synthetic page here too.
const REPORT_CHECK: &str = "target/report-check";

/// How long Chromium may take to load the page once.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(120);

/// Installs Debian's/Ubuntu's chromium where it is missing and this runs as root with apt-get (as a fresh
/// machine or CI does), the way the pinned nightly is installed for the kernels; otherwise stops with the one
/// command to run.
fn ensure_chromium(sh: &Shell) -> anyhow::Result<()> {
    if Path::new(CHROMIUM).exists() {
        return Ok(());
    }
    let install = "apt-get update && apt-get install -y --no-install-recommends chromium";
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc_geteuid() } == 0;
    let apt = Path::new("/usr/bin/apt-get").exists();
    if !(root && apt) {
        bail!(
            "{CHROMIUM} is missing: this step loads the HTML report in headless Chromium. Install it with \
             `sudo sh -c '{install}'` (Debian or Ubuntu) and run `cargo xtask test` again"
        );
    }
    eprintln!("{CHROMIUM} is missing: installing Debian's chromium ({install})");
    let _env = sh.push_env("DEBIAN_FRONTEND", "noninteractive");
    cmd!(sh, "apt-get update -q").run().context("apt-get update")?;
    cmd!(sh, "apt-get install -y -q --no-install-recommends chromium").run().context("installing chromium")?;
    anyhow::ensure!(Path::new(CHROMIUM).exists(), "chromium was installed but {CHROMIUM} is still missing");
    Ok(())
}

extern "C" {
    /// The effective user id (libc's `geteuid`; xtask keeps its dependencies few, so it is declared here).
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

/// Renders the report of the committed recordings (`async-lab report`), or takes the synthetic page that the
/// html test wrote when there are none yet, loads it in headless Chromium and checks that it loaded without
/// console messages (the page has no script: any message is an error, such as a blocked fetch) and that
/// every timeline and plot is in the DOM after loading. Saves a screenshot to look at:
/// `target/report-check/report.png`.
fn check_report_in_chromium(sh: &Shell) -> anyhow::Result<()> {
    ensure_chromium(sh)?;
    let dir = project_root().join(REPORT_CHECK);
    fs::create_dir_all(&dir).with_context(|| format!("creating {REPORT_CHECK}"))?;
    let recordings = committed_recordings()?;
    let page = if recordings.is_empty() {
        let page = dir.join("synthetic.html");
        if !page.exists() {
            bail!(
                "no recordings/async-lab-*.json, and {} is missing: the html test (tests/tests/html_page.rs) writes it",
                page.display()
            );
        }
        eprintln!("no recordings/async-lab-*.json yet: checking the synthetic page that the html test wrote");
        page
    } else {
        let page = dir.join("report.html");
        let bin = host_target_dir().join("debug/async-lab");
        let replays: Vec<String> =
            recordings.iter().flat_map(|r| ["--replay".to_owned(), r.display().to_string()]).collect();
        cmd!(sh, "{bin} report {replays...} --out {page}").run().context("async-lab report failed")?;
        page
    };
    let source = fs::read_to_string(&page).with_context(|| format!("reading {}", page.display()))?;
    for banned in ["<script", " src=\"http", " href=\"http", "url(http", "@import"] {
        if source.contains(banned) {
            bail!("{} is not self-contained: it has `{banned}`", page.display());
        }
    }
    let ids = page_ids(&source);
    if !ids.iter().any(|id| id.starts_with("timeline-")) {
        bail!("{} has no timeline", page.display());
    }

    let url = format!("file://{}", page.display());
    let (dom, log) = chromium(&dir, &["--enable-logging=stderr", "--v=0", "--dump-dom", &url])?;
    let console: Vec<&str> =
        log.lines().filter(|line| line.contains(":CONSOLE") || line.contains("Uncaught")).collect();
    if !console.is_empty() {
        bail!(
            "the page logged to the console while loading (it has no script, so this is an error):\n    {}",
            console.join("\n    ")
        );
    }
    let missing: Vec<&String> = ids.iter().filter(|id| !dom.contains(&format!("id=\"{id}\""))).collect();
    if !dom.contains("</html>") || !missing.is_empty() {
        bail!(
            "after loading, the DOM lacks {} of the page's {} timelines and plots: {:?}",
            missing.len(),
            ids.len(),
            missing
        );
    }
    let png = dir.join("report.png");
    let _ = fs::remove_file(&png);
    let screenshot = format!("--screenshot={}", png.display());
    chromium(&dir, &[&screenshot, "--window-size=1400,3000", &url])?;
    let size = fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    if size < 10_000 {
        bail!("Chromium wrote no usable screenshot ({} bytes at {})", size, png.display());
    }
    eprintln!(
        "{}: loaded in Chromium without console messages; {} timelines and plots in the DOM; screenshot {}",
        page.strip_prefix(project_root()).unwrap_or(&page).display(),
        ids.len(),
        png.strip_prefix(project_root()).unwrap_or(&png).display()
    );
    Ok(())
}

/// The committed trace of the seed's program (pinned, lazy loading) that the trace page check renders.
const SEED_TRACE: &str =
    "recordings/traces/trace-seed_program-pinned-lazy-h200-driver580.159.04-2026-12-03-761b4dc.jsonl.gz";

/// Renders the page of a committed trace (`async-lab report --replay TRACE`), loads it in headless Chromium
/// once as it is and once zoomed by its address (`#zoom=p0-all:0.25:0.5`, which runs the same code as the
/// mouse wheel), and checks that the by-location table is in the DOM, nothing was logged to the console, and
/// the whole-program lane's visible range (`data-view`) went from the whole program to its second quarter.
fn check_trace_page_in_chromium(sh: &Shell) -> anyhow::Result<()> {
    ensure_chromium(sh)?;
    let dir = project_root().join(REPORT_CHECK);
    fs::create_dir_all(&dir).with_context(|| format!("creating {REPORT_CHECK}"))?;
    let page = dir.join("trace.html");
    let bin = host_target_dir().join("debug/async-lab");
    let trace = project_root().join(SEED_TRACE);
    cmd!(sh, "{bin} report --replay {trace} --out {page}").run().context("async-lab report --replay TRACE failed")?;
    let url = format!("file://{}", page.display());
    let view = |dom: &str| -> anyhow::Result<(f64, f64)> {
        let svg = dom.find("id=\"p0-all\"").map(|i| &dom[i..]).context("the whole program's lane is missing")?;
        let at = svg[..svg.find('>').unwrap_or(svg.len())].find("data-view=\"").context("the lane has no data-view")?;
        let value = &svg[at + "data-view=\"".len()..];
        let nums: Vec<f64> = value[..value.find('"').unwrap_or(0)].split(' ').filter_map(|n| n.parse().ok()).collect();
        match nums[..] {
            [from, to] => Ok((from, to)),
            _ => bail!("the lane's data-view is not two numbers: {}", &value[..value.len().min(40)]),
        }
    };
    let (dom, log) = chromium(&dir, &["--enable-logging=stderr", "--v=0", "--dump-dom", &url])?;
    let console: Vec<&str> =
        log.lines().filter(|line| line.contains(":CONSOLE") || line.contains("Uncaught")).collect();
    if !console.is_empty() {
        bail!("the trace page logged to the console while loading:\n    {}", console.join("\n    "));
    }
    if !dom.contains("id=\"p0-by-location\"") {
        bail!("the trace page has no by-location table");
    }
    let (from, whole) = view(&dom)?;
    if from != 0.0 || whole <= 0.0 {
        bail!("unzoomed, the lane shows {from}..{whole} ns, not the whole program");
    }
    let zoomed = format!("{url}#zoom=p0-all:0.25:0.5");
    let (dom, log) = chromium(&dir, &["--enable-logging=stderr", "--v=0", "--dump-dom", &zoomed])?;
    if log.contains("Uncaught") {
        bail!("the trace page's script failed when zoomed:\n{log}");
    }
    let (a, b) = view(&dom)?;
    let near = |x: f64, want: f64| (x - want).abs() <= whole * 0.01;
    if !(near(a, whole * 0.25) && near(b, whole * 0.5)) {
        bail!("zoomed to 0.25..0.5 of {whole} ns, the lane shows {a}..{b} ns");
    }
    eprintln!(
        "{SEED_TRACE}'s page: by-location table in the DOM; zoomed, its lane shows {a:.0}..{b:.0} of {whole:.0} ns"
    );
    Ok(())
}

/// Where the wheel check works: the wheel, its virtual environment.
const WHEEL_CHECK: &str = "target/wheel-check";

/// Builds the wheel from the debug binaries (`cargo xtask wheel --debug`), installs it and pytest into a fresh
/// virtual environment, and from the installed copy runs `async-lab --version`, `python -m async_lab trace
/// --replay` of a committed trace, `pytest --help` (which must list the plugin's option) and the package's
/// tests (`python/tests`, which fail rather than skip where the installed package lacks a file).
fn check_wheel(sh: &Shell) -> anyhow::Result<()> {
    let dir = project_root().join(WHEEL_CHECK);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).with_context(|| format!("creating {WHEEL_CHECK}"))?;
    let wheel = crate::wheel::build(sh, true, &dir)?;
    let venv = dir.join("venv");
    cmd!(sh, "python3 -m venv {venv}").run().context("making a virtual environment (python3 -m venv)")?;
    let (python, bin) = (venv.join("bin/python"), venv.join("bin"));
    cmd!(sh, "{python} -m pip install --quiet --disable-pip-version-check {wheel} pytest")
        .run()
        .context("installing the wheel and pytest into the virtual environment")?;
    // Away from the source tree, and without bytecode files in it.
    let _dir = sh.push_dir(&dir);
    let _bytecode = sh.push_env("PYTHONDONTWRITEBYTECODE", "1");
    let command = bin.join("async-lab");
    let version = cmd!(sh, "{command} --version").read().context("the installed `async-lab --version` failed")?;
    let want = format!("async-lab {}", env!("CARGO_PKG_VERSION"));
    if version.trim() != want {
        bail!("the installed `async-lab --version` printed {version:?}, not {want:?}");
    }
    let trace = project_root().join(SEED_TRACE);
    let replay = cmd!(sh, "{python} -m async_lab trace --replay {trace}")
        .read()
        .context("the installed `python -m async_lab trace --replay` failed")?;
    if !replay.contains("cudaLaunchKernel") || !replay.contains("waited-for-stream") {
        bail!("`python -m async_lab trace --replay {SEED_TRACE}` did not print the seed's held launch:\n{replay}");
    }
    let pytest = bin.join("pytest");
    let help = cmd!(sh, "{pytest} --help").read().context("`pytest --help` failed with the plugin installed")?;
    if !help.contains("--async-lab-fail-on-held") {
        bail!(
            "`pytest --help` does not list --async-lab-fail-on-held: the wheel's pytest11 entry point was not loaded"
        );
    }
    check_plugin_without_a_gpu(sh, &python, &dir)?;
    let tests = project_root().join("python/tests");
    cmd!(sh, "{python} -m pytest {tests} -q -p no:cacheprovider")
        .env("ASYNC_LAB_EXPECT_INSTALLED", "1")
        .run()
        .context("the Python package's tests failed on the installed wheel")?;
    eprintln!(
        "{}: installed; async-lab --version, trace --replay, pytest --help, the plugin without a GPU and \
         python/tests pass",
        wheel.display()
    );
    Ok(())
}

/// The installed plugin where the gate cannot start (no GPU here, and no CUPTI, or a CUPTI without a driver):
/// `pytest --async-lab-fail-on-held=1ms` on a file of CPU-only tests passes them, with one warning that says
/// the gate is off and why.
fn check_plugin_without_a_gpu(sh: &Shell, python: &Path, dir: &Path) -> anyhow::Result<()> {
    let file = dir.join("test_cpu_only.py");
    fs::write(
        &file,
        "def test_sums():\n    assert sum(range(4)) == 6\n\n\ndef test_joins():\n    assert ''.join('ab') == 'ab'\n",
    )
    .context("writing a CPU-only test file")?;
    let out = cmd!(sh, "{python} -m pytest {file} -p no:cacheprovider --async-lab-fail-on-held=1ms")
        .ignore_status()
        .output()
        .context("running pytest with the plugin on CPU-only tests")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !text.contains("2 passed") {
        bail!("CPU-only tests did not pass under the plugin without a GPU:\n{text}");
    }
    let warnings = text.matches("GateOffWarning: async-lab: the gate is off").count();
    if warnings != 1 || text.contains("Traceback") {
        bail!("the plugin without a GPU should warn once that the gate is off (found {warnings}):\n{text}");
    }
    Ok(())
}

/// `recordings/async-lab-*.json`, sorted.
fn committed_recordings() -> anyhow::Result<Vec<PathBuf>> {
    let dir = project_root().join("recordings");
    if !dir.exists() {
        return Ok(vec![]);
    }
    let mut files = Vec::new();
    for entry in fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with("async-lab-") && name.ends_with(".json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The `id`s of the page's timelines and plots.
fn page_ids(html: &str) -> Vec<String> {
    html.match_indices(" id=\"")
        .filter_map(|(i, m)| html[i + m.len()..].split('"').next())
        .filter(|id| id.starts_with("timeline-") || id.starts_with("plot-"))
        .map(str::to_owned)
        .collect()
}

/// Runs headless Chromium once with a fresh profile and `args`; returns its stdout and stderr. Fails if it
/// fails or takes longer than `CHROMIUM_TIMEOUT`.
fn chromium(dir: &Path, args: &[&str]) -> anyhow::Result<(String, String)> {
    let profile = dir.join("chromium-profile");
    let _ = fs::remove_dir_all(&profile);
    let (out_path, err_path) = (dir.join("chromium.stdout"), dir.join("chromium.stderr"));
    let mut command = Command::new(CHROMIUM);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path)?)
        .stderr(fs::File::create(&err_path)?);
    eprintln!("$ {CHROMIUM} --headless ... {}", args.join(" "));
    let mut child = command.spawn().with_context(|| format!("starting {CHROMIUM}"))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > CHROMIUM_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "Chromium did not finish within {} s (its output: {})",
                CHROMIUM_TIMEOUT.as_secs(),
                err_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = fs::remove_dir_all(&profile);
    let stdout = fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = fs::read_to_string(&err_path).unwrap_or_default();
    if !status.success() {
        bail!("Chromium failed ({status}); its stderr:\n{stderr}");
    }
    Ok((stdout, stderr))
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
    fn expects_the_host_declarations_too() {
        let bindings = "extern \"C\" {\n    pub fn cuInit(Flags: c_uint) -> CUresult;\n}\n";
        let host_sys = "extern \"C\" {\n    pub fn cuInit(flags: c_uint) -> CuResult;\n    \
                        pub fn cuLibraryLoadData(\n        library: *mut CUlibrary,\n    ) -> CuResult;\n}\n\
                        pub type CUlibrary = *mut c_void;\n";
        let expected = expected_symbols(bindings, host_sys);
        let names: Vec<&str> = expected.iter().map(String::as_str).collect();
        assert_eq!(names, ["cuInit", "cuLibraryLoadData"]);
        // A list with cust_raw's functions only lacks the host's own declaration.
        let err = compare_symbols("cuInit\n", &expected).unwrap_err().to_string();
        assert!(err.contains("missing 1: cuLibraryLoadData"), "{err}");
        assert!(compare_symbols("cuInit\ncuLibraryLoadData\n", &expected).is_ok());
    }

    #[test]
    fn finds_forbidden_packages_by_name_only() {
        let tree = "async-lab-core v0.1.0 (/w/core)\nserde v1.0.0\ncc v1.2.0\nccc v1.0.0\ncudarc v0.19.10 (*)\n";
        assert_eq!(forbidden_packages(tree, NOT_IN_CORE), ["cudarc", "cc"]);
        assert!(forbidden_packages("async-lab-core v0.1.0\nanyhow v1.0.0\n", NOT_IN_CORE).is_empty());
        let inject = "async-lab-trace-inject v0.1.0 (/w/trace-inject)\nasync-lab-trace-analysis v0.1.0\n\
                      comfy-table v7.1.0\nschemars v1.0.0 (*)\nserde v1.0.0\n";
        assert_eq!(forbidden_packages(inject, NOT_IN_INJECT), ["comfy-table", "schemars"]);
    }

    #[test]
    fn finds_the_ids_of_timelines_and_plots() {
        let html = r#"<svg class="tl" id="timeline-a-b"></svg><figure id="plot-sweep"></figure><p id="other">"#;
        assert_eq!(page_ids(html), ["timeline-a-b", "plot-sweep"]);
    }

    #[test]
    fn compares_symbol_lists() {
        let expected: BTreeSet<String> = ["cuA", "cuB"].map(String::from).into();
        assert!(compare_symbols("cuA\ncuB\n", &expected).is_ok());
        let err = compare_symbols("cuB\ncuA\ncuC\n", &expected).unwrap_err().to_string();
        assert!(err.contains("declared by neither cust_raw nor sys.rs 1: cuC") && err.contains("not sorted"), "{err}");
        let err = compare_symbols("cuA\n", &expected).unwrap_err().to_string();
        assert!(err.contains("missing 1: cuB"), "{err}");
    }
}

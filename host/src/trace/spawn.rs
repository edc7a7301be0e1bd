//! Running a program under the injection library: the driver loads `libasync_lab_inject.so`
//! (`CUDA_INJECTION64_PATH`) at the program's `cuInit`, and each process that initializes CUDA writes its
//! section of the trace into a fresh folder; this module gathers them into one trace file.

use anyhow::{bail, Context as _};
use async_lab_driver::runtime::locate;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The injection library's file name, beside the `async-lab` binary (or named by `$ASYNC_LAB_INJECT`).
pub const INJECT_FILE: &str = "libasync_lab_inject.so";
/// Names the injection library, where it is not beside the binary.
pub const INJECT_VAR: &str = "ASYNC_LAB_INJECT";
/// The variables the injection library reads (`trace-inject/src`): the trace folder, the CUPTI file, every
/// call or those that may hold, the threshold past which a call's location is taken, stepping aside for
/// another CUPTI subscriber, every record or the bounded trace and its threshold.
const OUT_DIR_VAR: &str = "ASYNC_LAB_TRACE_DIR";
const CUPTI_VAR: &str = "ASYNC_LAB_CUPTI_LIB";
const ALL_VAR: &str = "ASYNC_LAB_TRACE_ALL";
const LOCATE_VAR: &str = "ASYNC_LAB_LOCATE_OVER_NS";
const ALL_RECORDS_VAR: &str = "ASYNC_LAB_ALL_RECORDS";
const ALL_KERNELS_VAR: &str = "ASYNC_LAB_ALL_KERNELS";
const KEEP_OVER_VAR: &str = "ASYNC_LAB_KEEP_OVER_NS";
const YIELD_VAR: &str = "ASYNC_LAB_YIELD_CUPTI";

/// How the program is traced.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Every API call, not only those that may hold.
    pub all_calls: bool,
    /// Every record, not the bounded trace.
    pub all_records: bool,
    /// Every GPU record kind, every kernel: not the launch log and kernels in windows.
    pub all_kernels: bool,
    /// The bounded trace keeps the calls that held their thread longer than this (`--min-held`).
    pub keep_over_ns: u64,
    /// Calls that held longer than this have their location taken.
    pub locate_over_ns: u64,
    /// Step aside for another CUPTI subscriber.
    pub yield_cupti: bool,
}

/// CUPTI could not be used: missing, or taken by another tool. `async-lab` exits 3 on it.
#[derive(Debug)]
pub struct NoCupti(pub String);

impl std::fmt::Display for NoCupti {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoCupti {}

/// The injection library: `$ASYNC_LAB_INJECT`, or the file beside this binary.
pub fn injection_library() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os(INJECT_VAR).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("{INJECT_VAR}: {} does not exist", p.display());
        }
        return Ok(p);
    }
    let exe = std::env::current_exe().context("finding the async-lab binary")?;
    let beside = exe.parent().map(|d| d.join(INJECT_FILE)).filter(|p| p.is_file());
    beside.with_context(|| {
        format!(
            "no {INJECT_FILE} beside {} (build it with `cargo build -p async-lab-trace-inject`, or name it with \
             {INJECT_VAR})",
            exe.display()
        )
    })
}

/// Where CUPTI was found in the traced Python's own site-packages (`Found::source`).
pub const PROGRAMS_PYTHON: &str = "the program's Python";

/// CUPTI: `--cupti` or `$ASYNC_LAB_CUPTI`; else, where the program is a Python interpreter, the CUPTI wheel
/// in its own site-packages (`nvidia-cuda-cupti`'s `nvidia/cu13/lib`: the CUPTI its profiler loads, and
/// where pip puts a newer one); else found like the runtime (`LD_LIBRARY_PATH`, the toolkit, the wheels of
/// the `python3` on PATH).
pub fn cupti(explicit: Option<&Path>, program: &str) -> Result<locate::Found, NoCupti> {
    let env = locate::Env::current_for(&locate::CUPTI, explicit);
    if env.explicit.is_none() && env.var.is_none() && is_python(program) {
        for site in locate::site_packages_of(program) {
            for sub in locate::CUPTI.wheel_dirs {
                if let Some(path) = locate::best_lib_in(&locate::CUPTI, &site.join(sub)) {
                    return Ok(locate::Found { path, source: PROGRAMS_PYTHON });
                }
            }
        }
    }
    locate::find_lib(&locate::CUPTI, &env).map_err(|e| {
        NoCupti(match e {
            locate::NotFound::Explicit(why) => format!("no usable CUPTI library: {why}"),
            locate::NotFound::Searched(_) => format!(
                "no CUPTI library (libcupti.so*) found: looked in LD_LIBRARY_PATH, CUDA_HOME, /usr/local/cuda*, \
                 the system's libraries and Python's nvidia wheels; name one with --cupti PATH or {}",
                locate::CUPTI.var
            ),
        })
    })
}

/// Whether `program` is a Python interpreter (`python`, `python3`, `python3.12`, a path to one).
pub fn is_python(program: &str) -> bool {
    let file = Path::new(program).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    file.strip_prefix("python").is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Whether CUPTI found from `source` is preloaded into the program: one named by the user or taken from a
/// Python wheel may not be the one the program's libraries would load by name (PyTorch's kineto loads
/// `libcupti.so.13` through its own search path), and two CUPTIs in one process do not share subscribers.
/// The toolkit's, found on the paths the program itself searches, is not.
pub fn preloads_cupti(source: &str) -> bool {
    !matches!(source, "LD_LIBRARY_PATH" | "CUDA toolkit" | "system library")
}

/// Refuses to start when another tool's injection library is already set for this process's children
/// (async-lab trace run under nsys, say): CUPTI takes one subscriber, and replacing the other tool's library
/// would quietly blind it.
pub fn no_other_injection(ours: &Path) -> Result<(), NoCupti> {
    match std::env::var_os("CUDA_INJECTION64_PATH").filter(|v| !v.is_empty()) {
        Some(other) if Path::new(&other) != ours => Err(NoCupti(format!(
            "CUPTI is taken: another tool's injection library is set (CUDA_INJECTION64_PATH={}), and CUPTI \
             allows one subscriber",
            Path::new(&other).display()
        ))),
        _ => Ok(()),
    }
}

/// What running the program left.
pub struct Ran {
    pub status: ExitStatus,
    /// The trace's text: each process's section, the program's own process first.
    pub text: String,
    /// How many processes wrote a section.
    pub processes: usize,
}

/// A folder holding `libcupti.so` (and CUPTI's own file name, where it is another) as links to `cupti`.
fn cupti_names(folder: &Path, cupti: &Path) -> std::io::Result<()> {
    let _ = std::fs::remove_dir_all(folder);
    std::fs::create_dir_all(folder)?;
    let target = std::fs::canonicalize(cupti)?;
    std::os::unix::fs::symlink(&target, folder.join("libcupti.so"))?;
    if let Some(name) = cupti.file_name().filter(|n| *n != "libcupti.so") {
        std::os::unix::fs::symlink(&target, folder.join(name))?;
    }
    Ok(())
}

/// Runs `program` with `args` under the injection library and gathers its trace; `preload_cupti`: CUPTI is
/// preloaded too (`preloads_cupti`).
pub fn run(
    program: &str,
    args: &[String],
    inject: &Path,
    (cupti, preload_cupti): (&Path, bool),
    options: Options,
) -> anyhow::Result<Ran> {
    let dir = std::env::temp_dir().join(format!("async-lab-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // CUPTI's folder first on the program's library path, so that the binding's lookups by name find the
    // same CUPTI the injection library loads by path. The binding asks for `libcupti.so` before
    // `libcupti.so.13`, and a wheel's folder holds only the latter: a folder of our own with that name for
    // the chosen file comes first, else the toolkit's `libcupti.so` further down the path would be bound (a
    // second CUPTI in the process, which the injection library refuses).
    let names = std::env::temp_dir().join(format!("async-lab-cupti-{}", std::process::id()));
    let cupti_dir = match cupti_names(&names, cupti) {
        Ok(()) => names.display().to_string(),
        Err(_) => cupti.parent().map(|d| d.display().to_string()).unwrap_or_default(),
    };
    let ld = match std::env::var("LD_LIBRARY_PATH") {
        Ok(old) if !old.is_empty() => format!("{cupti_dir}:{old}"),
        _ => cupti_dir,
    };
    // Ctrl-C goes to the program too; async-lab stays to write what was traced (marked partial).
    let _ = ctrlc::set_handler(|| {});
    // Preloaded too, so that its `_exit` (which flushes the trace first) and `cuptiSubscribe` (which sees
    // another subscriber) come before libc's and CUPTI's.
    let mut preload = inject.display().to_string();
    if preload_cupti {
        preload = format!("{preload}:{}", cupti.display());
    }
    if let Ok(old) = std::env::var("LD_PRELOAD").map(|o| o.trim().to_owned()) {
        if !old.is_empty() {
            preload = format!("{preload}:{old}");
        }
    }
    let mut command = Command::new(program);
    command
        .args(args)
        .env("CUDA_INJECTION64_PATH", inject)
        .env("LD_PRELOAD", preload)
        .env(OUT_DIR_VAR, &dir)
        .env(CUPTI_VAR, cupti)
        .env("LD_LIBRARY_PATH", ld)
        .env(ALL_VAR, if options.all_calls { "1" } else { "0" })
        .env(LOCATE_VAR, options.locate_over_ns.to_string())
        .env(ALL_RECORDS_VAR, if options.all_records { "1" } else { "0" })
        .env(ALL_KERNELS_VAR, if options.all_kernels { "1" } else { "0" })
        .env(KEEP_OVER_VAR, options.keep_over_ns.to_string())
        .env(YIELD_VAR, if options.yield_cupti { "1" } else { "0" });
    // NVTX hands the program's ranges to CUPTI, which hands them to the tracer; a tool the user set
    // keeps its own.
    if std::env::var_os("NVTX_INJECTION64_PATH").is_none_or(|v| v.is_empty()) {
        command.env("NVTX_INJECTION64_PATH", cupti);
    }
    let mut child = command.spawn().with_context(|| format!("cannot start {program}"))?;
    let pid = child.id();
    let status = child.wait().with_context(|| format!("waiting for {program}"))?;
    let mut files: Vec<(bool, u32, PathBuf)> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let p = e.path();
            let n: u32 = p.file_stem()?.to_str()?.parse().ok()?;
            Some((n != pid, n, p))
        })
        .collect();
    files.sort();
    let mut text = String::new();
    for (_, _, f) in &files {
        let section = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        // A process killed while writing leaves half a line: drop it, keep the rest.
        let whole = section.rfind('\n').map_or("", |end| &section[..=end]);
        text.push_str(whole);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&names);
    Ok(Ran { status, text, processes: files.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_interpreters_are_told_by_their_file_name() {
        for p in ["python", "python3", "python3.12", "/usr/bin/python3", "/opt/venv/bin/python3.11"] {
            assert!(is_python(p), "{p}");
        }
        for p in ["./my_program", "pythonista", "python3-config", "/usr/bin/ipython", "bash"] {
            assert!(!is_python(p), "{p}");
        }
    }

    #[test]
    fn a_cupti_the_program_would_not_find_itself_is_preloaded() {
        assert!(preloads_cupti("--cupti") && preloads_cupti("ASYNC_LAB_CUPTI"));
        assert!(preloads_cupti(PROGRAMS_PYTHON) && preloads_cupti("Python wheel"));
        assert!(!preloads_cupti("CUDA toolkit") && !preloads_cupti("LD_LIBRARY_PATH"));
    }
}

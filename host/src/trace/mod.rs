//! `async-lab trace`: runs a user's CUDA program under CUPTI (the injection library of `trace-inject/`), or
//! replays a trace file, and prints which calls held their thread, for how long and by what, through the
//! same attribution and classes as the lab's experiments (`async_lab_core::trace`).
//!
//! [`run`] reads the files the options name, gets the trace (`obtain`), prints each process (`print`) and
//! ends as the options say (`outcome`).

pub mod conflicts;
mod obtain;
mod outcome;
mod print;
pub mod source;
pub mod spawn;
pub mod symbolize;

use anyhow::{bail, Context as _};
use async_lab_core::async_ref::{self, RefOutput};
use async_lab_core::record::Recording;
use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::format::Trace;
use async_lab_core::trace::{against_reference, gate, json, perfetto, steps, text};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use outcome::Outcome;
pub use spawn::NoCupti;

/// `async-lab trace`'s options.
#[derive(clap::Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["replay", "program"])))]
#[command(
    after_help = "Examples:\n  async-lab trace -- ./my_program arg1\n  async-lab trace --fail-on-held 1ms -- python3 train.py\n  async-lab trace --replay async-lab-trace.jsonl --explain 122"
)]
pub struct TraceArgs {
    /// Where to write the trace (JSON lines; gzip-compressed where the name ends in .gz).
    #[arg(long, value_name = "FILE", default_value = "async-lab-trace.jsonl")]
    pub out: PathBuf,
    /// Show the calls that held their thread longer than this.
    #[arg(long, value_name = "DURATION", default_value = "20us", value_parser = parse_duration)]
    pub min_held: Duration,
    /// Take the code location (Python frames, native frames) of the calls that held their thread longer
    /// than this (never less than --min-held). Python frames cost a few µs a call, so every call held 200 µs
    /// or more gets them; native frames, which cost more in a large process (PyTorch's), are walked only
    /// while a thread spends at most 5% of what its calls held on them. A shorter call is placed where the
    /// same call site was placed (said as such), else by its NVTX range or its API function.
    #[arg(long, value_name = "DURATION", default_value = "200us", value_parser = parse_duration)]
    pub locate_over: Duration,
    /// Exit with 4 when any call of the steady state held its thread longer than this (a CI gate). What the
    /// program pays once (the context, loading code, a library's setup, the allocator's growth, a model's
    /// upload) and the --skip-first steps are warm-up, left out unless --fail-on-warm-up.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub fail_on_held: Option<Duration>,
    /// With --fail-on-held: gate warm-up too (what the program pays once, and the --skip-first steps).
    #[arg(long, requires = "fail_on_held")]
    pub fail_on_warm_up: bool,
    /// The CUPTI library (libcupti.so.*, or a folder holding one). Default: $ASYNC_LAB_CUPTI, then (for a
    /// Python program) the nvidia-cuda-cupti wheel in its Python's site-packages, then LD_LIBRARY_PATH,
    /// CUDA_HOME, /usr/local/cuda* (and extras/CUPTI), Python's nvidia wheels. A CUPTI of 13.2 or later may
    /// take the program's own profiler (torch.profiler) beside the tracer with ASYNC_LAB_SEVERAL_SUBSCRIBERS=1
    /// and a driver that lets several subscribers record (not the H200's 580: docs/trace-internals.md).
    #[arg(long, value_name = "PATH")]
    pub cupti: Option<PathBuf>,
    /// Read a trace file instead of running a program.
    #[arg(long, value_name = "FILE", conflicts_with = "program")]
    pub replay: Option<PathBuf>,
    /// Explain one call, by its correlation id (the table's `corr`).
    #[arg(long, value_name = "CORR")]
    pub explain: Option<u32>,
    /// A recording async-lab made while traced (`--record`), or the JSON output of the C++ reference
    /// (`reference/async_ref.cu`) traced: print each case's class from the tracer beside the recording's or the
    /// reference's, and how many agree.
    #[arg(long, value_name = "FILE")]
    pub against: Option<PathBuf>,
    /// With --against: also write the trace cut down to the calls it matched and what their classes rest on
    /// (their GPU work, the work that overlapped them, other threads' calls in flight): a small trace that
    /// gives the same comparison (gzip-compressed where the name ends in .gz).
    #[arg(long, value_name = "FILE", requires = "against")]
    pub keep_matched: Option<PathBuf>,
    /// The program's own timing of its steps (its output, holding `async-lab-step` lines): print each step's
    /// own time beside the time the calls its thread made inside it held the thread, and the longest of them
    /// with its class and what held it.
    #[arg(long, value_name = "FILE")]
    pub steps: Option<PathBuf>,
    /// Also write the trace cut down to the calls that held their thread longer than --min-held and, with
    /// --steps, every call made inside a step, with what their classes rest on: a small trace that replays
    /// to the same tables, explanations and steps (gzip-compressed where the name ends in .gz).
    #[arg(long, value_name = "FILE")]
    pub keep_held: Option<PathBuf>,
    /// Trace every runtime and driver call, also the getters and queries that never hold a thread
    /// (`cudaGetDevice`, `cudaGetLastError`, ...), which are left out by default to keep the cost down.
    #[arg(long)]
    pub all_calls: bool,
    /// Write every call and GPU record. By default the trace is bounded: the calls that held their thread
    /// longer than --min-held with the GPU work and calls that explain them, start-up, and the counts of the
    /// other calls (per thread and function), decided while the program runs (the H200's ResNet-18 loop:
    /// 328 KB/s, docs/trace-validation.md); its tables, classes and explanations are those of the whole trace for
    /// any --min-held at least the one it was made with. --all-records for the Perfetto timeline and the page
    /// of every call, or --steps.
    #[arg(long)]
    pub all_records: bool,
    /// Record every kernel, synchronization and event on the GPU, as traces were made before the launch log.
    /// By default a held call's work ahead comes from the launches themselves (the last work enqueued in its
    /// stream before it began), its own copies and memsets and the driver's overheads are recorded, and kernels
    /// only during start-up and for a while after a call held its thread (the trace says when): a kernel's record
    /// costs each launch about a microsecond (docs/trace-internals.md).
    #[arg(long)]
    pub all_kernels: bool,
    /// When the program (a profiler: `torch.profiler`) asks CUPTI for a subscriber, unsubscribe and trace
    /// nothing more, so that it may get CUPTI (on the H200's CUPTI 13.0 it was still refused: docs/trace-internals.md).
    /// By default the profiler is refused (CUPTI takes one subscriber) and the tracer says so at the end.
    #[arg(long)]
    pub yield_cupti: bool,
    /// How many held calls each table shows (the calls that enqueued GPU work, then the others).
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// `text`: the tables; `json`: every held call and the summaries as one JSON document (schema:
    /// docs/trace-report.schema.json).
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Leave start-up (context creation, module and library loading before the first enqueue of GPU work)
    /// out of every table, the JSON report and --fail-on-held.
    #[arg(long)]
    pub after_startup: bool,
    /// Count the program's first N steps as warm-up, beside each module's, library's and the context's first
    /// use: a step ends at each synchronization (`.item()`, `.cpu()`, `torch.cuda.synchronize()`) of the
    /// thread that makes the most of them.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip_first: usize,
    /// Print every table and sentence whole, however wide (by default they fit the terminal, or 120 columns
    /// when the output is not one; `COLUMNS` sets another width).
    #[arg(long)]
    pub wide: bool,
    /// Also write the trace as Chrome trace-event JSON, for ui.perfetto.dev and chrome://tracing.
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// The program and its arguments (after `--`).
    #[arg(last = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
}

/// What `trace` prints.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Text,
    Json,
}

/// A duration as the command line takes it (`20us`, `1ms`, `0.5s`): the Python package reads its own options the
/// same way (`python/async_lab/duration.py`, compared with this by `tests/tests/python_package.rs`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration ({e}; examples: 20us, 1ms, 0.5s)"))
}

/// An argument that names nothing the trace holds (`--explain` of an unknown id): exit 2, as a bad argument.
#[derive(Debug)]
pub struct BadArgument(pub String);

impl std::fmt::Display for BadArgument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadArgument {}

/// What `--against` names.
enum Against {
    /// A recording of async-lab.
    Recording(Box<Recording>),
    /// The C++ reference's JSON output.
    Reference(RefOutput),
}

/// Reads `--against`'s file: the reference's output where its `"tool"` says so, else a recording.
fn load_against(path: &Path) -> anyhow::Result<Against> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    if async_ref::written_by_async_ref(&text) {
        let refs = RefOutput::parse(&text)
            .and_then(|refs| against_reference::check(&refs).map(|()| refs))
            .with_context(|| format!("{} (async_ref's output) cannot be compared with a trace", path.display()))?;
        return Ok(Against::Reference(refs));
    }
    Recording::parse(&text)
        .map(|rec| Against::Recording(Box::new(rec)))
        .with_context(|| format!("{} is not a usable async-lab recording, nor async_ref's JSON output", path.display()))
}

/// Runs or replays, and prints.
pub fn run(args: &TraceArgs) -> anyhow::Result<Outcome> {
    // Read before the program runs: a file that cannot be compared is said at once.
    let against = args.against.as_deref().map(load_against).transpose()?;
    let steps = args.steps.as_deref().map(load_steps).transpose()?;
    let (trace, program_ok) = obtain::obtain(args)?;
    obtain::refuse_without_cupti(&trace)?;
    let min_held = args.min_held.as_nanos() as i64;
    // Each process analysed once: every view below is a function of these.
    let analyses = Analysis::all(&trace);
    let kept_over = analyses.iter().filter_map(|a| a.program.rest.as_ref().map(|r| r.keep_over_ns)).max();
    if let Some(kept) = kept_over.filter(|&k| k as i64 > min_held) {
        eprintln!(
            "async-lab: this trace is bounded: it holds the calls that held their thread longer than {}, and only \
             counts the others; calls held less than that are not in the tables (trace with --all-records for them)",
            text::duration(kept as i64)
        );
    }
    if let Some(out) = &args.perfetto {
        let export = perfetto::export(&analyses, min_held);
        std::fs::write(out, perfetto::to_text(&export)).with_context(|| format!("writing {}", out.display()))?;
        eprintln!("async-lab: the trace as Chrome trace events written to {} (ui.perfetto.dev)", out.display());
    }
    let gate = args.fail_on_held.map(|limit| {
        gate::gate(
            &analyses,
            gate::Asked {
                limit_ns: limit.as_nanos() as i64,
                warm_up: args.fail_on_warm_up,
                after_startup: args.after_startup,
                skip_first: args.skip_first,
            },
        )
    });
    if args.format == ReportFormat::Json && args.explain.is_none() {
        let mut report = json::report(&analyses, min_held, args.after_startup, args.skip_first);
        report.gate.clone_from(&gate);
        crate::outln!("{}", serde_json::to_string_pretty(&report).context("writing the JSON report")?)?;
    }
    for (n, a) in analyses.iter().enumerate() {
        print::print_process(args, n, trace.processes.len(), a, steps.as_deref())?;
    }
    if let (Some(against), Some(path)) = (&against, &args.against) {
        print::print_against(args.format, against, path, &analyses)?;
    }
    if let (Some(against), Some(out)) = (&against, &args.keep_matched) {
        outcome::keep_matched(against, &analyses, out)?;
    }
    if let Some(out) = &args.keep_held {
        outcome::keep_held(&analyses, min_held, steps.as_deref().unwrap_or_default(), out)?;
    }
    if let Some(corr) = args.explain {
        let found = analyses.iter().any(|a| a.program.calls.iter().any(|c| c.corr == corr));
        if !found {
            return Err(BadArgument(format!(
                "--explain {corr}: the trace has no call with correlation id {corr} (the tables' --explain column \
                 names the calls it has)"
            ))
            .into());
        }
    }
    Ok(outcome::decide(gate.as_ref(), program_ok))
}

/// Reads `--steps`' file: the program's own `async-lab-step` lines, at least one.
fn load_steps(path: &Path) -> anyhow::Result<Vec<steps::Step>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let steps = steps::parse(&text).with_context(|| format!("{} holds a broken step", path.display()))?;
    if steps.is_empty() {
        bail!("{} holds no `{}` line", path.display(), steps::PREFIX.trim_end());
    }
    Ok(steps)
}

/// `async-lab report --replay TRACE`: the trace's page (one trace; the page of recordings is `html::write`).
pub fn report(paths: &[PathBuf], out: &std::path::Path) -> anyhow::Result<()> {
    let [path] = paths else {
        bail!("a report of a trace takes that one trace (give recordings in a report of their own)");
    };
    let trace = Trace::load(path)?;
    let label = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let page = async_lab_core::trace::page::render(&label, &Analysis::all(&trace), 20_000, 20);
    std::fs::write(out, page).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_lab_core::trace::made;
    use async_lab_core::trace::scene::Program;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        trace: TraceArgs,
    }

    fn project(path: &str) -> String {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path).to_string_lossy().into_owned()
    }

    /// `trace` with `options`, counting the programs and analyses it made.
    fn run_counted(options: &[&str]) -> made::Made {
        let args = Cli::try_parse_from(["trace"].iter().chain(options)).expect("the options parse").trace;
        let before = made::so_far();
        run(&args).expect("the replay runs");
        made::since(before)
    }

    /// One run of `async-lab trace` reads each process once and hands that one analysis to every view its options
    /// ask for (the tables, `--explain`, `--perfetto`, the JSON report, `--fail-on-held`'s gate, `--against` and
    /// its `--keep-matched`, `--keep-held`, `--steps`); the trace's page likewise.
    #[test]
    fn a_run_analyses_each_process_once_for_every_view() {
        let out = std::env::temp_dir().join(format!("async-lab-analysed-once-{}", std::process::id()));
        std::fs::create_dir_all(&out).unwrap();
        let at = |name: &str| out.join(name).to_string_lossy().into_owned();
        // The seed's trace holds two processes (the driver's program and the runtime's).
        let seed = project("recordings/traces/trace-async-lab-seed-h200-driver580.159.04-2026-12-03-761b4dc.jsonl.gz");
        let recording =
            project("recordings/async-lab-seed-both-apis-traced-h200-driver580.159.04-2026-12-03-761b4dc.json");
        let trace = Trace::load(Path::new(&seed)).unwrap();
        let processes = trace.processes.len();
        assert_eq!(processes, 2);
        let corr = Program::of(&trace.processes[1]).calls[0].corr.to_string();
        let once = made::Made { programs: processes, analyses: processes };
        let (perfetto, matched, held) = (at("seed.perfetto.json"), at("matched.jsonl"), at("held.jsonl"));
        let every = [
            "--replay",
            &seed,
            "--against",
            &recording,
            "--keep-matched",
            &matched,
            "--keep-held",
            &held,
            "--perfetto",
            &perfetto,
            "--fail-on-held",
            "1ms",
            "--min-held",
            "10ms",
        ];
        assert_eq!(run_counted(&every), once, "text");
        assert_eq!(run_counted(&[&every[..], &["--format", "json"]].concat()), once, "json");
        assert_eq!(run_counted(&[&every[..], &["--explain", &corr]].concat()), once, "--explain");
        let threads =
            project("recordings/traces/trace-torch_threads-h200-driver580.159.04-2026-12-04-40b2499.jsonl.gz");
        let steps = project("recordings/steps-torch_threads-h200-driver580.159.04-2026-12-04-40b2499.txt");
        let one = made::Made { programs: 1, analyses: 1 };
        assert_eq!(run_counted(&["--replay", &threads, "--steps", &steps, "--keep-held", &held]), one, "--steps");
        let before = made::so_far();
        report(&[PathBuf::from(&seed)], Path::new(&at("seed.html"))).unwrap();
        assert_eq!(made::since(before), once, "the page");
        std::fs::remove_dir_all(&out).unwrap();
    }
}

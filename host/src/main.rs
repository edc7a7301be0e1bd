//! The `async-lab` binary: parses the command line, runs the chosen command, and turns failures into one
//! clear line and an exit code (2: bad arguments, 3: no usable GPU or driver, 4: some experiments failed,
//! 130: interrupted, 1: anything else).

use anyhow::{bail, Context as _};
use async_lab::cli::{Cli, Command, GpuArgs, RunArgs};
use async_lab::experiments::{self, runner};
use async_lab_core::catalogue::presets::{by_id, Preset};
use async_lab_driver::{Gpu, NoGpu};
// Replaying, reporting, comparing and explaining a recording use the core crate alone (no GPU, no driver).
use async_lab_core::machine::MachineInfo;
use async_lab_core::record::{CaseRecord, Recording, RECORDING_KIND, SCHEMA_VERSION};
use async_lab_core::trace::format as trace_format;
use async_lab_core::{compare, explain as explain_text, html, output, report, rules, units};
use clap::Parser;
use std::process::ExitCode;

/// How a command ended, when it did not fail.
enum Done {
    Ok,
    Interrupted,
    WithErrors,
    /// The traced program failed (`trace` reported its status).
    ProgramFailed,
}

fn main() -> ExitCode {
    // Output piped into `head` and the like: end quietly when the reader goes away, as Unix tools do, instead
    // of panicking on the failed write (Rust ignores SIGPIPE by default).
    // SAFETY: called first thing, before any other thread exists; SIG_DFL is a valid disposition for SIGPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version go to stdout, where a failed write is one clear line; errors say theirs (exit 2).
        Err(e) if !e.use_stderr() => {
            return match async_lab::out!("{e}") {
                Ok(()) => ExitCode::SUCCESS,
                Err(w) => {
                    eprintln!("async-lab: {w}");
                    ExitCode::FAILURE
                }
            };
        }
        Err(e) => e.exit(),
    };
    let gpu = match &cli.command {
        Some(
            Command::Info { gpu }
            | Command::Selftest { gpu, .. }
            | Command::Explain { gpu, .. }
            | Command::Child { gpu, .. },
        ) => gpu,
        _ => &cli.gpu,
    };
    async_lab_driver::runtime::configure(gpu.cudart.as_deref());
    match dispatch(cli) {
        Ok(Done::Ok) => ExitCode::SUCCESS,
        Ok(Done::Interrupted) => ExitCode::from(130),
        Ok(Done::WithErrors) => ExitCode::from(4),
        Ok(Done::ProgramFailed) => ExitCode::FAILURE,
        Err(e) => {
            if let Some(no_gpu) = e.downcast_ref::<NoGpu>() {
                eprintln!("async-lab: {}", no_gpu_words(no_gpu));
                return ExitCode::from(3);
            }
            if let Some(no_cupti) = e.downcast_ref::<async_lab::trace::NoCupti>() {
                eprintln!("async-lab: {no_cupti}");
                return ExitCode::from(3);
            }
            if let Some(bad) = e.downcast_ref::<async_lab::trace::BadArgument>() {
                eprintln!("async-lab: {bad}");
                return ExitCode::from(2);
            }
            eprintln!("async-lab: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Why no GPU work can be done, in words: started by the Python package on its stand-in for the driver's library
/// (`ASYNC_LAB_STAND_IN`), the package found none; else the driver's own diagnosis.
fn no_gpu_words(no_gpu: &NoGpu) -> String {
    match no_gpu {
        NoGpu::StubLibrary if std::env::var_os("ASYNC_LAB_STAND_IN").is_some() => {
            "no NVIDIA driver: the package found no libcuda.so.1 on this machine (where there is one, add its folder to \
             LD_LIBRARY_PATH)"
                .into()
        }
        other => other.to_string(),
    }
}

/// The committed recording a bare `async-lab` replays where there is no GPU: the seed preset on the H200.
const SEED_RECORDING: &str = "async-lab-seed-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json";
static SEED: &str =
    include_str!("../../recordings/async-lab-seed-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json");

/// A bare `async-lab` (the README's first command) on a machine without a usable GPU: what the H200 recorded
/// instead, said so on stderr with how to measure, and exit 0.
fn answer_without_a_gpu(no_gpu: &NoGpu) -> anyhow::Result<Done> {
    let here = match no_gpu {
        NoGpu::NoDevice => "the NVIDIA driver here reports no CUDA GPU",
        _ => "no NVIDIA driver here",
    };
    let how = if std::env::var_os("ASYNC_LAB_STAND_IN").is_some() {
        "on a machine with an NVIDIA GPU and its driver"
    } else {
        "on a machine with an NVIDIA GPU and its driver (`cargo xtask bundle` makes a folder to copy there)"
    };
    eprintln!(
        "async-lab: {here}, so nothing was measured. Below is what the lab measured on an NVIDIA H200: the seed \
         preset's recording (recordings/{SEED_RECORDING}), replayed. To measure, run async-lab {how}."
    );
    let recording = Recording::parse(SEED).context("the recording built into async-lab")?;
    async_lab::out!("{}", output::render(&report::build(&recording), async_lab_core::output::Format::Table)?)?;
    Ok(Done::Ok)
}

fn dispatch(cli: Cli) -> anyhow::Result<Done> {
    match cli.command {
        Some(Command::Info { gpu }) => {
            let gpu = open(&gpu)?;
            async_lab::outln!("{}", async_lab::info::read(&gpu, true)?)?;
            Ok(Done::Ok)
        }
        Some(Command::Selftest { cycles, gpu }) => selftest(&gpu, cycles),
        Some(Command::List { preset, api }) => {
            if preset == Preset::Default {
                // On stderr: the listing itself stays one experiment per line.
                eprintln!(
                    "async-lab: the default preset stays fast; the newer families (graphs, unified-memory hints, \
                     attributes and limits, stream memory operations, virtual memory, batched copies, threads; graphs, \
                     hints, limits and batched copies through both APIs) are in `--preset next` and `--preset full`"
                );
            }
            for c in experiments::select_api(experiments::catalogue(preset, None), api) {
                let rule = rules::rule(&c.setup.rule).map_or("", |r| r.case);
                async_lab::outln!("{:<58} {:<4} {}", c.setup.id, c.setup.rule, rule)?;
            }
            Ok(Done::Ok)
        }
        Some(Command::Explain { id, replay, reps, gpu }) => explain(&gpu, &id, replay.as_deref(), reps as usize),
        Some(Command::Compare { recording, reference: Some(reference) }) => {
            let rows = compare::compare(&recording, &reference)?;
            async_lab::out!("{}", compare::markdown(&rows))?;
            Ok(if rows.iter().all(|r| r.agrees()) { Done::Ok } else { Done::WithErrors })
        }
        Some(Command::Compare { recording, reference: None }) => {
            let rows = compare::between_apis(&Recording::load(&recording)?);
            if rows.is_empty() {
                bail!(
                    "{} measured no case through both APIs (record with --api both; or give the reference \
                     program's output as a second argument)",
                    recording.display()
                );
            }
            // Different classes through the two APIs are findings, not failures: exit 0.
            async_lab::out!("{}", compare::api_markdown(&rows))?;
            Ok(Done::Ok)
        }
        Some(Command::Stability { runs }) => {
            let recs = runs.iter().map(|p| Recording::load(p)).collect::<anyhow::Result<Vec<_>>>()?;
            let names: Vec<String> = async_lab_core::stability::short_names(
                &runs
                    .iter()
                    .map(|p| {
                        p.file_stem().map_or_else(|| p.display().to_string(), |s| s.to_string_lossy().into_owned())
                    })
                    .collect::<Vec<_>>(),
            );
            // A class that changed between runs is a finding about the method, not a failure: exit 0.
            async_lab::out!(
                "{}",
                async_lab_core::stability::markdown(&async_lab_core::stability::rows(&recs), &names)
            )?;
            Ok(Done::Ok)
        }
        Some(Command::Report { replay, out }) if replay.iter().any(|p| trace_format::is_trace(p)) => {
            async_lab::trace::report(&replay, &out)?;
            eprintln!("async-lab: report written to {}", out.display());
            Ok(Done::Ok)
        }
        Some(Command::Report { replay, out }) => {
            html::write(&replay, &out)?;
            eprintln!("async-lab: report written to {}", out.display());
            Ok(Done::Ok)
        }
        Some(Command::Trace(args)) => Ok(match async_lab::trace::run(&args)? {
            async_lab::trace::Outcome::Ok => Done::Ok,
            async_lab::trace::Outcome::HeldTooLong => Done::WithErrors,
            async_lab::trace::Outcome::ProgramFailed => Done::ProgramFailed,
        }),
        Some(Command::Child { ids, reps, gpu }) => child(&gpu, &ids, reps as usize),
        // Bare, on a machine without a GPU: the answer the H200 recorded.
        None if std::env::args_os().len() == 1 => match run(&cli.gpu, &cli.run) {
            Err(e) if e.downcast_ref::<NoGpu>().is_some_and(|n| matches!(n, NoGpu::StubLibrary | NoGpu::NoDevice)) => {
                answer_without_a_gpu(e.downcast_ref::<NoGpu>().expect("matched"))
            }
            other => other,
        },
        None => run(&cli.gpu, &cli.run),
    }
}

fn open(g: &GpuArgs) -> anyhow::Result<Gpu> {
    let ptx = async_lab::embedded_ptx::load(g.ptx_path().as_deref())?;
    Gpu::open(g.device, ptx)
}

fn selftest(g: &GpuArgs, cycles: u64) -> anyhow::Result<Done> {
    let gpu = open(g)?;
    let info = async_lab::info::read(&gpu, false)?;
    async_lab::outln!("{info}\n")?;
    let r = async_lab::selftest::run(&gpu, cycles)?;
    async_lab::outln!("kernels loaded from {}", gpu.ptx.origin())?;
    async_lab::outln!(
        "spin_sleep: {} threads asked for {} cycles; each waited {}..{} cycles ({:+.3}% at most); {:.1} µs on the GPU ({:.0} MHz)",
        r.threads,
        r.requested_cycles,
        r.min_cycles,
        r.max_cycles,
        (r.max_cycles as f64 / r.requested_cycles as f64 - 1.0) * 100.0,
        r.spin_us,
        r.max_cycles as f64 / r.spin_us
    )?;
    async_lab::outln!(
        "fill/checksum: {} bytes copied host → device → host, verified on the GPU and the host",
        r.copy_bytes
    )?;
    async_lab::outln!("selftest passed")?;
    Ok(Done::Ok)
}

fn run(g: &GpuArgs, args: &RunArgs) -> anyhow::Result<Done> {
    let recording = match &args.replay {
        Some(path) => Recording::load(path)?,
        None => measure(g, args)?,
    };
    let report = report::build(&recording);
    async_lab::out!("{}", output::render(&report, args.format)?)?;
    let replayed = args.replay.is_some();
    if replayed && recording.partial {
        // The interruption belongs to the run that made the recording; replaying all it holds succeeded.
        eprintln!(
            "async-lab: this recording was cut short when it was made (Ctrl-C): it holds {} experiments; the rest \
             were never measured",
            recording.cases.len()
        );
    }
    Ok(if recording.partial && !replayed {
        Done::Interrupted
    } else if report.summary.errors > 0 {
        Done::WithErrors
    } else {
        Done::Ok
    })
}

fn measure(g: &GpuArgs, args: &RunArgs) -> anyhow::Result<Recording> {
    // Choose the experiments first: a bad --only is reported without touching the GPU.
    let cases = experiments::select(
        experiments::select_api(
            experiments::catalogue_with(args.preset, args.sizes.as_deref(), args.seed_bytes),
            args.api,
        ),
        args.only.as_deref(),
    )?;
    let gpu = open(g)?;
    let machine = async_lab::info::read(&gpu, args.api != async_lab::measured_api::ApiChoice::Driver)?;
    preflight(&cases, &machine)?;
    let clock = async_lab::calibrate::calibrate(&gpu, 50)?;
    experiments::interrupt::install_ctrl_c();
    let opts = runner::RunOptions {
        reps: args.reps as usize,
        quiet: args.quiet,
        ptx: g.ptx_path(),
        device: g.device,
        in_child: false,
        peer_loopback: args.peer_loopback,
        cudart: g.cudart.clone(),
    };
    let outcome = runner::run_cases(&gpu, &cases, &opts);
    let recording = Recording {
        kind: RECORDING_KIND.into(),
        schema_version: SCHEMA_VERSION,
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        preset: args.preset.name().into(),
        args: recorded_args(std::env::args().skip(1)),
        reps_per_case: opts.reps,
        partial: outcome.partial,
        machine,
        clock: Some(clock),
        clock_later: outcome.clock_later,
        cases: outcome.records,
    };
    if let Some(path) = &args.record {
        recording.save(path)?;
        eprintln!("async-lab: recording written to {}", path.display());
    }
    Ok(recording)
}

/// The command line as a recording keeps it: the `--record` path reduced to its file name (where a file
/// was written on the measuring machine says nothing about the measurement).
fn recorded_args(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in args {
        let after_record = out.last().is_some_and(|p| p == "--record");
        if after_record {
            out.push(std::path::Path::new(&a).file_name().map_or(a.clone(), |f| f.to_string_lossy().into_owned()));
        } else if let Some(path) = a.strip_prefix("--record=") {
            let name = std::path::Path::new(path).file_name().map_or(path.into(), |f| f.to_string_lossy().into_owned());
            out.push(format!("--record={name}"));
        } else {
            out.push(a);
        }
    }
    out
}

/// Refuses sizes the GPU or the host cannot hold, before anything is allocated. A copy experiment holds
/// two buffers and a scratch buffer of its size on the GPU, and up to three on the host.
fn preflight(cases: &[experiments::Case], machine: &MachineInfo) -> anyhow::Result<()> {
    let largest = cases.iter().map(|c| c.setup.layout.bytes).max().unwrap_or(0);
    let gpu_need = largest.saturating_mul(3);
    if gpu_need > machine.memory_free_bytes {
        bail!(
            "the largest size, {}, needs {} of GPU memory (source, destination, scratch); {} has only {} free",
            units::format_size(largest),
            gib(gpu_need),
            machine.gpu_name,
            gib(machine.memory_free_bytes)
        );
    }
    if let Some(avail) = host_available_bytes() {
        let host_need = largest.saturating_mul(3);
        if host_need > avail {
            bail!(
                "the largest size, {}, needs {} of host memory; only {} is available",
                units::format_size(largest),
                gib(host_need),
                gib(avail)
            );
        }
    }
    Ok(())
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// MemAvailable from /proc/meminfo.
fn host_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `async-lab explain ID`: from a recording, or measured now.
fn explain(g: &GpuArgs, id: &str, replay: Option<&std::path::Path>, reps: usize) -> anyhow::Result<Done> {
    // The case named, from the catalogue: a peer pair or a seed step is one of the records its template yields.
    let named = by_id(id);
    let template = named.as_ref().map(|c| c.template().id());
    let (record, fit) = match replay {
        Some(path) => {
            let rec = Recording::load(path)?;
            let fit = rec.clock_fit();
            let Some(case) = record_for(rec.cases, id, template.as_deref()) else {
                bail!("{} has no experiment {id:?} (`async-lab list` shows the ids)", path.display());
            };
            (case, fit)
        }
        None => {
            // The runner measures the template, which yields the record named.
            let all: Vec<_> = [Preset::Full, Preset::Seed, Preset::Sweep, Preset::Peer]
                .into_iter()
                .flat_map(|p| experiments::catalogue(p, None))
                .collect();
            let Some(case) = all.into_iter().find(|c| Some(c.setup.id.as_str()) == template.as_deref()) else {
                bail!("there is no experiment {id:?} (`async-lab list --preset full` shows the ids)");
            };
            let gpu = open(g)?;
            // A loopback pair (gpu0-to-gpu0) is only measured when asked for; naming one asks.
            let loopback = named.and_then(|c| c.pair()).is_some_and(|p| p.is_loopback());
            let opts = runner::RunOptions {
                reps,
                quiet: true,
                ptx: g.ptx_path(),
                device: g.device,
                in_child: false,
                peer_loopback: loopback,
                cudart: g.cudart.clone(),
            };
            let outcome = runner::run_cases(&gpu, std::slice::from_ref(&case), &opts);
            let fit = outcome.clock_fit();
            let Some(record) = record_for(outcome.records, id, template.as_deref()) else {
                bail!("measuring {id} produced no record of it (is the pair of GPUs on this machine?)");
            };
            (record, fit)
        }
    };
    let result = report::result(&record, fit.as_ref());
    async_lab::out!("{}", explain_text::long(&record, &result, fit.as_ref()))?;
    Ok(Done::Ok)
}

/// The record of experiment `id` among `records`; for a peer pair or a seed step that this machine could not
/// run, the record of its template (`template`), which says why.
fn record_for(records: Vec<CaseRecord>, id: &str, template: Option<&str>) -> Option<CaseRecord> {
    let (exact, others): (Vec<_>, Vec<_>) = records.into_iter().partition(|r| r.setup.id == id);
    exact
        .into_iter()
        .next()
        .or_else(|| others.into_iter().find(|r| Some(r.setup.id.as_str()) == template && r.skipped.is_some()))
}

fn child(g: &GpuArgs, ids: &[String], reps: usize) -> anyhow::Result<Done> {
    // The parent handles Ctrl-C; the child finishes its short list.
    let _ = ctrlc::set_handler(|| {});
    // The seed preset's child cases (the question's program under CUDA_MODULE_LOADING=EAGER) do not depend
    // on --seed-bytes: the default catalogue has them as the parent ran them.
    let all = [Preset::Full, Preset::Seed].into_iter().flat_map(|p| experiments::catalogue(p, None));
    let cases: Vec<_> = all.filter(|c| ids.contains(&c.setup.id)).collect();
    if cases.len() != ids.len() {
        bail!("__child: unknown experiment ids in {ids:?}");
    }
    let gpu = open(g)?;
    let opts = runner::RunOptions {
        reps,
        quiet: true,
        ptx: g.ptx_path(),
        device: g.device,
        in_child: true,
        peer_loopback: false,
        cudart: g.cudart.clone(),
    };
    let by_case = runner::run_in_child(&gpu, &cases, &opts);
    let text = serde_json::to_string(&by_case).context("serializing the child's records")?;
    async_lab::outln!("{text}")?;
    Ok(Done::Ok)
}

#[cfg(test)]
mod tests {
    use super::recorded_args;

    #[test]
    fn a_recording_keeps_the_record_file_name_not_where_it_was_written() {
        let args = ["--preset", "seed", "--record", "/root/out/seed.json", "--record=/tmp/x/run.json", "-q"];
        let got = recorded_args(args.iter().map(|s| s.to_string()));
        assert_eq!(got, ["--preset", "seed", "--record", "seed.json", "--record=run.json", "-q"]);
    }
}

//! Command-line interface: `async-lab [run options]` runs experiments; subcommands do the rest.

use crate::measured_api::ApiChoice;
use async_lab_core::catalogue::presets::Preset;
use async_lab_core::output::Format;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "async-lab",
    version,
    about = "Measures which CUDA calls make the host thread wait, and compares that with NVIDIA's documented rules",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub gpu: GpuArgs,
}

/// The options of the commands that use the GPU (a run, `info`, `selftest`, `explain`): each of those takes
/// them, and no other command lists them (`trace` has options of its own).
#[derive(Args, Debug, Clone, Default)]
pub struct GpuArgs {
    /// Load the kernels from this PTX file instead of the copy built into the binary (default:
    /// $ASYNC_LAB_KERNELS_PTX where set).
    #[arg(long, value_name = "PATH")]
    pub ptx: Option<PathBuf>,
    /// Which GPU to use.
    #[arg(long, default_value_t = 0)]
    pub device: i32,
    /// The CUDA runtime library (libcudart.so.*, or a folder holding one) for the runtime-API experiments.
    /// Default: $ASYNC_LAB_CUDART, then LD_LIBRARY_PATH, CUDA_HOME, /usr/local/cuda*, the system's
    /// libraries and Python's nvidia wheels. Without one, those experiments are reported as not run.
    #[arg(long, value_name = "PATH")]
    pub cudart: Option<PathBuf>,
}

impl GpuArgs {
    /// The PTX file to load the kernels from: `--ptx`, else `$ASYNC_LAB_KERNELS_PTX` (what the bundle's
    /// `run.sh` and the Python package set), else none (the copy built into the binary). Read here rather than
    /// by clap, whose usage lines would show a variable's option as if the command required it.
    pub fn ptx_path(&self) -> Option<PathBuf> {
        self.ptx
            .clone()
            .or_else(|| std::env::var_os("ASYNC_LAB_KERNELS_PTX").filter(|v| !v.is_empty()).map(PathBuf::from))
    }
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Which experiments to run.
    #[arg(long, value_enum, default_value_t = Preset::Default)]
    pub preset: Preset,
    /// Run only the experiments whose id matches (a glob such as 'copy/async/*', or a substring).
    #[arg(long, value_name = "PATTERN")]
    pub only: Option<String>,
    /// Which API's calls to measure: the driver's (cu*), the runtime's (cuda*), or both side by side.
    #[arg(long, value_enum, default_value_t = ApiChoice::Both)]
    pub api: ApiChoice,
    /// Measured repetitions per experiment (after one warm-up).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub reps: u16,
    /// Copy sizes, comma-separated (e.g. 4KiB,1MiB,256MiB); default: the preset's.
    #[arg(long, value_delimiter = ',', value_parser = parse_size_arg)]
    pub sizes: Option<Vec<u64>>,
    /// The buffer of the accepted answer's variant of the seed program (`runtime/seed-answer/...`, preset
    /// seed); the question's own program keeps its 10 MB.
    #[arg(long, value_name = "SIZE", default_value = "2GiB", value_parser = parse_size_arg)]
    pub seed_bytes: u64,
    /// Output format (on stdout).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Save every raw repetition and the machine description to this JSON file.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Classify and report a recording instead of measuring (no GPU needed).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["record", "only", "sizes", "seed_bytes", "preset", "api"])]
    pub replay: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also run the peer experiments from each GPU to itself: a check of the peer code on a machine with one
    /// GPU (the records say LOOPBACK; they are not peer measurements).
    #[arg(long)]
    pub peer_loopback: bool,
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    async_lab_core::units::parse_size(s).map_err(|e| e.to_string())
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Describe the GPU, driver, PCIe link and host.
    Info {
        #[command(flatten)]
        gpu: GpuArgs,
    },
    /// Check the kernels and copies on the GPU: spin_sleep's timing and a verified round trip.
    Selftest {
        /// Cycles for spin_sleep to wait on every thread.
        #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000_000))]
        cycles: u64,
        #[command(flatten)]
        gpu: GpuArgs,
    },
    /// List the experiments of a preset with their rules.
    List {
        #[arg(long, value_enum, default_value_t = Preset::Default)]
        preset: Preset,
        /// Only the cases of this API (driver, runtime) or both.
        #[arg(long, value_enum, default_value_t = ApiChoice::Both)]
        api: ApiChoice,
    },
    /// Explain one experiment: the rule, what was measured (live, or in a recording) and why that class.
    Explain {
        /// The experiment's id (see `async-lab list`).
        id: String,
        /// Take the measurement from this recording instead of measuring now.
        #[arg(long, value_name = "FILE")]
        replay: Option<PathBuf>,
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=1000))]
        reps: u16,
        #[command(flatten)]
        gpu: GpuArgs,
    },
    /// Put the driver and runtime classes of each case side by side; with REFERENCE, put the classes beside
    /// those of the CUDA C++ reference program (reference/async_ref.cu) instead.
    Compare {
        /// A recording made with --record.
        recording: PathBuf,
        /// The reference program's JSON output.
        reference: Option<PathBuf>,
    },
    /// Replay runs of one preset side by side: which experiments changed class between them; no GPU needed.
    Stability {
        /// Recordings made with --record (two or more), in the order they were made.
        #[arg(required = true, num_args = 2..)]
        runs: Vec<PathBuf>,
    },
    /// Write one self-contained HTML page (timelines and plots) from recordings; no GPU needed.
    #[command(
        after_help = "A live run first: `async-lab --record run.json`, then `async-lab report --replay run.json`."
    )]
    Report {
        /// A recording made with --record; repeat for several (each becomes a section of the page).
        #[arg(long, value_name = "FILE", required = true)]
        replay: Vec<PathBuf>,
        /// Where to write the page.
        #[arg(long, value_name = "PATH", default_value = "async-lab-report.html")]
        out: PathBuf,
    },
    /// Run a CUDA program under CUPTI (or replay its trace) and say which of its calls held their thread, for
    /// how long and by what: the same attribution and classes as the experiments.
    Trace(Box<crate::trace::TraceArgs>),
    /// Internal: run experiments in a child process (an environment variable was set for the driver).
    #[command(name = "__child", hide = true)]
    Child {
        #[arg(long, value_delimiter = ',')]
        ids: Vec<String>,
        #[arg(long, default_value_t = 5)]
        reps: u16,
        #[command(flatten)]
        gpu: GpuArgs,
    },
}

//! The trace recording: JSON lines, one [`Line`] each, written by the injection library (`trace-inject/`)
//! while the traced program runs, one section per process (each begins with its [`Line::Header`]).
//!
//! A section that ends with [`Line::End`] is complete; one without it was cut short (the program crashed or
//! was killed) and reads as *partial*: every line written before that still counts. A last line cut in the
//! middle is dropped: the writer ends every line with a newline, so a last line without one was cut, whatever it
//! reads as (`{"type":"end","t":12` of `"t":123}` would). Times are CUPTI timestamps, in ns; GPU records carry the correlation id of the API call
//! that enqueued them (a runtime call and the driver call it makes share one).

pub use crate::ahead::{EnqueueKind, Enqueued, EventRecorded, KernelRecords, WindowWhy};
use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Read as _};
use std::path::Path;

/// What the header's `format` field says.
pub const TRACE_FORMAT: &str = "async-lab-trace";
/// The format's version; a reader refuses newer ones. Version 2 added the records of events (`Line::Event`)
/// and the event a synchronization waited for (`Line::Sync`'s `event`). Version 3 added what the tracer set
/// up (`Line::Setup`: the clock pair, which calls it traced), where held calls came from
/// (`Line::Location`), NVTX ranges (`Line::Nvtx`), the ids of the default streams (`Line::DefaultStreams`),
/// another CUPTI subscriber (`Line::Conflict`) and how a process that did not exit ended (`Line::Signal`).
/// Version 4 added the Python interpreter the library found and how it reads frames (`Setup::python`),
/// reads Python frames without the GIL (`Location::python` is no longer empty where `gil` is `not-held`),
/// what taking a location cost (`Line::Location`'s `took_ns`), the text of the source lines where held
/// calls were made (`Line::Source`, written by `async-lab trace` after the program ended), the driver's
/// overhead records (`Line::Overhead`: a lazy load, a full launch queue, with the call that caused it) and
/// whether CUPTI took another subscriber beside the tracer (`Line::Conflict`'s `accepted`), and the counts of
/// the calls a bounded trace does not write (`Line::Counts`) and the repeated stacks it writes once
/// (`Line::SameLocation`).
/// Version 5 added what the process's Python threads were doing when a call of a thread that runs no Python
/// returned (`Line::Location`'s `others`: each Python thread's frames at that moment) and the threads' names
/// (`Line::Thread`).
/// Version 5 also added the launch log: the work enqueued ahead of each held call (`Line::Ahead`), the GPU
/// record kinds the trace holds (`Line::RecordKinds`) and the windows in which kernels were recorded where
/// they were recorded only at times (`Line::KernelWindow`), and what the library could not do (`Line::Note`); a trace without a `record-kinds` line holds every
/// kind.
/// Versions 1 to 4 read as before: they hold none of these.
pub const TRACE_VERSION: u32 = 5;

/// The API a call belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Domain {
    Runtime,
    Driver,
}

/// A resource event: what the driver did that a call may have waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resource {
    ContextCreated,
    ModuleLoaded,
}

/// Why the injection library recorded nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Failure {
    /// CUPTI could not be loaded.
    CuptiMissing,
    /// CUPTI already has a subscriber (another tool: nsys, compute-sanitizer).
    CuptiTaken,
    /// Any other CUPTI error while setting up.
    CuptiError,
}

/// What the driver spent an overhead record's time on (CUPTI's `CUpti_ActivityOverheadKind`, named as CUPTI
/// names it without its prefix). CUPTI's own overheads are not written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OverheadKind {
    /// A function's code loaded at its first use (lazy loading, CUPTI 12.3 and later).
    LazyFunctionLoading,
    /// A module the runtime loaded at a first use (CUPTI 12.3 and later).
    RuntimeTriggeredModuleLoading,
    /// The launch queue (the driver's command buffer) was full: the call waited for room (CUPTI 12.4 and later).
    CommandBufferFull,
    /// The driver compiled code (PTX to the GPU's code).
    DriverCompiler,
    /// A kind a newer CUPTI writes that this reader does not know.
    #[serde(other)]
    Other,
}

/// One line of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Line {
    /// The first line of a process's section.
    Header {
        format: String,
        version: u32,
        pid: u32,
        /// The program's command line (the program's file name, then its arguments).
        program: Vec<String>,
        /// CUPTI's API version (`cuptiGetVersion`), where it was loaded.
        #[serde(default)]
        cupti_version: Option<u32>,
    },
    /// A runtime or driver API call, written when it returned.
    Api { domain: Domain, name: String, cbid: u32, tid: u64, corr: u32, start: u64, end: u64 },
    /// A copy on the GPU. Kinds are CUPTI's: `copy_kind` 1 host → device, 2 device → host, 8 device →
    /// device, ...; `src_kind`/`dst_kind` 1 pageable, 2 pinned, 3 device, 4 array, 5 managed, ...
    Memcpy { copy_kind: u8, src_kind: u8, dst_kind: u8, bytes: u64, start: u64, end: u64, stream: u32, corr: u32 },
    /// A memset on the GPU.
    Memset { bytes: u64, start: u64, end: u64, stream: u32, corr: u32 },
    /// A kernel on the GPU.
    Kernel { name: String, start: u64, end: u64, stream: u32, corr: u32 },
    /// A synchronization the host did (a stream, an event, the context): CUPTI's `sync_type` (1 event
    /// synchronize, 2 stream wait event, 3 stream synchronize, 4 context synchronize).
    Sync {
        sync_type: u32,
        start: u64,
        end: u64,
        /// The stream, for a stream synchronization (CUPTI's stream id).
        #[serde(default)]
        stream: Option<u32>,
        corr: u32,
        /// The event, for an event synchronization (CUPTI's event id; see `Line::Event` for its stream).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event: Option<u32>,
    },
    /// An event recorded in a stream (`cuEventRecord`, `cudaEventRecord`): which stream an event
    /// synchronization with that event waits for, since CUPTI's record of the wait names none.
    Event { event: u32, stream: u32, corr: u32 },
    /// A resource event, on the thread that caused it.
    Resource { event: Resource, t: u64, tid: u64 },
    /// CUPTI dropped this many records (its buffers were full).
    Dropped { records: u64 },
    /// Time the driver spent on the host on something other than the call's own work (version 4): CUPTI's
    /// overhead record, with the call that caused it.
    Overhead {
        kind: OverheadKind,
        start: u64,
        end: u64,
        /// The correlation id of the call that caused it (CUPTI 12.3 and later; none where CUPTI gives 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        corr: Option<u32>,
        /// The stream it belongs to, where CUPTI's record names one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stream: Option<u32>,
        /// For `CommandBufferFull`: the command buffer's length (CUPTI 12.4 and later).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        queue_length: Option<u32>,
    },
    /// The injection library could not trace; nothing else follows.
    Error { error: Failure, message: String },
    /// The process ended and every record was flushed.
    End { t: u64 },
    /// What the injection library set up, right after the header (version 3).
    Setup {
        /// CUPTI's clock and the host's `CLOCK_MONOTONIC` read back to back, to put the program's own times
        /// (Python's `time.perf_counter_ns`, C++'s `steady_clock`) on the trace's clock.
        clock: ClockPair,
        /// Which API calls have a line: all of them, or only those that can hold their thread.
        api_calls: ApiCalls,
        /// Calls that held their thread longer than this have a `Line::Location`.
        locate_over_ns: u64,
        /// The Python interpreter in the process and how its frames are read (version 4); absent where the
        /// process runs no Python (or the trace is older).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        python: Option<PythonSetup>,
        /// Whether CUPTI took the tracer as one of several subscribers (version 4; a CUPTI of 13.2 or later
        /// asked with `cuptiSubscribe_v2`), so that a profiler of the program may subscribe beside it; `None`
        /// in older traces and where subscribing failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        several_subscribers: Option<bool>,
    },
    /// Where a call that held its thread longer than `Setup::locate_over_ns` was made: the calling thread's
    /// Python frames (innermost first), read without the GIL since version 4 (before, only where it held the
    /// GIL), and its native frames (innermost first). Written right after the call's own line, with its
    /// thread and correlation id.
    Location {
        tid: u64,
        corr: u32,
        gil: Gil,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        python: Vec<PyFrame>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        native: Vec<NativeFrame>,
        /// What taking it cost the calling thread, in ns (version 4).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        took_ns: Option<u64>,
        /// Where the calling thread runs no Python in a process that does (an autograd thread, an XLA runtime
        /// thread): what each of the process's Python threads was doing when the call returned, its frames
        /// read then, innermost first (version 5). A Python thread inside a call of its own, or waiting
        /// outside any (`float(loss)` while another thread does the copy), is at the line that waited.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        others: Vec<ThreadFrames>,
    },
    /// A thread's name as the system gives it (`/proc/self/task/<tid>/comm`: `python3`, `pt_autograd_0`,
    /// `pool-3-thread-1`), written when the thread makes its first traced call and again, with the name it
    /// then has, where it changed by the end (version 5).
    Thread { tid: u64, name: String },
    /// An NVTX range the program pushed and popped (or started and ended), written when it closed: a call
    /// made on `tid` between `start` and `end` was made inside it.
    Nvtx {
        tid: u64,
        start: u64,
        end: u64,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        domain: Option<String>,
    },
    /// CUPTI's ids of the default streams, seen from thread `tid`: the legacy default stream (the same for
    /// every thread) and that thread's per-thread default stream.
    DefaultStreams {
        tid: u64,
        legacy: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        per_thread: Option<u32>,
    },
    /// Another library of the program asked CUPTI for a subscriber while the tracer held it: `library` is
    /// the file of the caller (a profiler: PyTorch's kineto, ...). `yielded`: the tracer stepped aside
    /// (`--yield-cupti`) and traced nothing after `t`; else the other library was refused and recorded
    /// nothing. `accepted` (version 4): what CUPTI answered the other library, where the tracer saw it: `true`
    /// where CUPTI took it beside the tracer (a CUPTI of 13.2 or later, which takes several subscribers).
    Conflict {
        t: u64,
        tid: u64,
        library: String,
        call: String,
        yielded: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        accepted: Option<bool>,
    },
    /// The process was ended by a signal (SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGINT) or by `_exit`: the
    /// library flushed what it held before the program went on to its own handler; no `end` line follows.
    Signal { t: u64, signal: String },
    /// The text of a source line a held call was made at (a program's own Python or native line), read from
    /// its file by `async-lab trace` after the program ended, so that a replay elsewhere shows it (version
    /// 4). `file` is the path as the location's frame gives it; `text` is the line without its indentation.
    Source { file: String, line: u32, text: String },
    /// The location of a call whose frames are those of an earlier location of its process, call `as_corr`'s
    /// (version 4): the bounded trace writes a stack that repeats (a training loop's `loss.item()`, step after
    /// step) once. `Trace::parse` reads it as that `Location`, its frames filled in.
    SameLocation {
        tid: u64,
        corr: u32,
        gil: Gil,
        as_corr: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        took_ns: Option<u64>,
    },
    /// What a call that held its thread past the bounded trace's threshold had ahead of it, from the launch
    /// log (version 5; `ahead.rs`): the stream it enqueued into or synchronized and the event it waited for, as
    /// its parameters name them, and the work enqueued last before it began, in that stream (for an event, in
    /// the stream of the event's last record, before that record; for a device-wide wait, in every stream),
    /// oldest first. Written right after the call's own line, with its thread and correlation id.
    Ahead {
        tid: u64,
        corr: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stream: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event: Option<EventRecorded>,
        /// It waits for the whole device (`cudaDeviceSynchronize`, `cuCtxSynchronize`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        device: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        work: Vec<Enqueued>,
    },
    /// The GPU record kinds the trace holds (version 5), CUPTI's kinds by the names `ASYNC_LAB_TRACE_KINDS`
    /// uses (`memcpy`, `memset`, `overhead`, `kernel`, `sync`, `event`), and which kernels have a record.
    /// Written once, after the setup line; a trace without one holds every kind.
    RecordKinds { kinds: Vec<String>, kernels: KernelRecords },
    /// Kernels launched between `start` and `end` have activity records (version 5; where `RecordKinds` says
    /// `windows`), and why they were recorded then. A window still open at the end of the trace ends there.
    KernelWindow { start: u64, end: u64, why: WindowWhy },
    /// Something the injection library could not do while the program ran, the trace going on without it
    /// (version 5): a CUPTI call that failed, in words.
    Note { t: u64, message: String },
    /// The trace is bounded (version 4; `async-lab trace` without `--all-records`): it holds the calls that
    /// held their thread longer than `keep_over_ns` with what explains them, the start-up calls, and of every
    /// other call only these counts (see `trace::bounded`). Cumulative: a process's last `counts` line counts.
    Counts { keep_over_ns: u64, calls: Vec<CallCount> },
}

/// The calls of one function on one thread that a bounded trace counts without writing them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCount {
    pub tid: u64,
    pub domain: Domain,
    pub name: String,
    pub calls: u64,
    pub total_ns: u64,
    /// The first one's start and the last one's end.
    #[serde(default)]
    pub first_ns: u64,
    #[serde(default)]
    pub last_ns: u64,
    /// Their durations grouped as `units::duration` prints them: `[one duration of the group, how many]`, in
    /// the order of the durations, so that the tables' median and longest read as from every call.
    pub durations: Vec<[u64; 2]>,
}

/// A `same-location` line read as the `location` it stands for: the frames of the latest earlier location of
/// call `as_corr` in `p` (none where `p` holds none).
fn same_location(p: &ProcessTrace, tid: u64, corr: u32, gil: Gil, as_corr: u32, took_ns: Option<u64>) -> Line {
    let earlier = p.lines.iter().rev().find_map(|l| match l {
        Line::Location { corr: c, python, native, others, .. } if *c == as_corr => {
            Some((python.clone(), native.clone(), others.clone()))
        }
        _ => None,
    });
    let (python, native, others) = earlier.unwrap_or_default();
    Line::Location { tid, corr, gil, python, native, took_ns, others }
}

/// CUPTI's clock and `CLOCK_MONOTONIC`, read back to back (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockPair {
    pub cupti_ns: u64,
    pub monotonic_ns: u64,
}

impl ClockPair {
    /// A `CLOCK_MONOTONIC` time on the trace's clock.
    pub fn to_trace(&self, monotonic_ns: u64) -> i64 {
        monotonic_ns as i64 - self.monotonic_ns as i64 + self.cupti_ns as i64
    }
}

/// Which API calls a trace holds a line for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApiCalls {
    /// Every runtime and driver call.
    All,
    /// Only the calls that can hold their thread (`subscribed::may_hold`): enqueues, synchronization,
    /// allocation, free, loading, graphs, memory operations, context and stream management; not the getters
    /// and queries a framework makes around every operation.
    MayHold,
}

/// Whether the calling thread held Python's GIL when its call returned: what the framework did around the
/// call, for information. Since version 4 the frames are read either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gil {
    /// It held the GIL.
    Held,
    /// The process runs Python but this thread did not hold the GIL: the framework released it around the
    /// call (PyTorch, JAX and CuPy do), or the thread is not a Python thread. Version 4 traces still hold the
    /// frames of a Python thread; version 3 traces hold none here.
    NotHeld,
    /// No Python interpreter in the process.
    NoPython,
}

/// The Python interpreter the injection library found in the process (`Setup::python`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonSetup {
    /// Its version as it says it (`3.12.3`).
    pub version: String,
    /// How the library reads its threads' frames.
    pub reader: PyReader,
    /// Why the frames are not read, where the reader is `unknown`; else why other threads' frames are not
    /// (`Location::others`: the interpreter's thread list did not check out), where they are not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How the injection library reads Python frames (each without the GIL, by reads that cannot fault).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PyReader {
    /// Through the offsets table CPython 3.13 and later keep for debuggers (`_Py_DebugOffsets`).
    DebugOffsets,
    /// Through the layout of the version's structures, known to the library (3.10 to 3.12).
    Layout,
    /// Not read: a version the library does not know, or a layout that failed its check (`note` says
    /// which); the process's `location` lines carry no Python frames.
    Unknown,
}

/// One Python frame.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyFrame {
    pub file: String,
    pub line: u32,
    pub function: String,
}

/// One Python thread's frames at a moment (`Line::Location`'s `others`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadFrames {
    /// The thread's id as the system gives it (its `native_thread_id`), as `tid` elsewhere.
    pub tid: u64,
    /// Whether it held the GIL then (running Python code rather than waiting in a call that released it).
    #[serde(default)]
    pub gil: bool,
    /// Its frames, innermost first (none: it ran no Python then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub python: Vec<PyFrame>,
}

/// One native frame: the file it is in and its offset there, and where symbolized (by `async-lab trace`
/// after the program ended, from the file's symbols and debug info), its function, source file and line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeFrame {
    pub module: String,
    pub offset: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// One process's section of a trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcessTrace {
    pub pid: u32,
    pub program: Vec<String>,
    pub cupti_version: Option<u32>,
    /// The lines after the header, in the order written.
    pub lines: Vec<Line>,
    /// No `end` line: the process was cut short, or its trace was.
    pub partial: bool,
    /// Where the injection library said it could not trace.
    pub failure: Option<(Failure, String)>,
    /// The signal (or `_exit`) that ended the process, where the library saw it (`Line::Signal`).
    pub ended_by: Option<String>,
}

/// A whole trace: one section per process that initialized CUDA.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub processes: Vec<ProcessTrace>,
}

impl Trace {
    /// Reads a trace file, plain or compressed ([`crate::stored`]); a file that is not one gets one clear error
    /// naming it.
    pub fn load(path: &Path) -> anyhow::Result<Trace> {
        Trace::load_noting(path).map(|(trace, _)| trace)
    }

    /// [`Trace::load`], and what a reader should be told of the file: a compressed file whose stream ends
    /// early (the program or the copy was cut short) reads as the whole lines it holds, and says so.
    pub fn load_noting(path: &Path) -> anyhow::Result<(Trace, Option<String>)> {
        let mut bytes = Vec::new();
        let read = crate::stored::open(path).and_then(|mut file| file.read_to_end(&mut bytes));
        let note = match read {
            Ok(_) => None,
            // What was decompressed before the stream ended is whole lines and one cut last line, as a plain
            // trace of a killed program is.
            Err(e) if crate::stored::compressed(path) && !bytes.is_empty() => Some(format!(
                "{} was cut short ({e}): replaying the {} lines it holds",
                path.display(),
                bytes.iter().filter(|&&b| b == b'\n').count()
            )),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let text = String::from_utf8_lossy(&bytes);
        let trace = Trace::parse(&text).with_context(|| format!("{} is not an async-lab trace", path.display()))?;
        Ok((trace, note))
    }

    /// What a file that is not a trace is, where it is another of async-lab's: a JSON report of a trace, or a
    /// recording of the lab's experiments.
    fn what_else(text: &str) -> Option<&'static str> {
        if !text.trim_start().starts_with('{') {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        if v["schema"] == "async-lab-trace-report" {
            Some(
                "it is the JSON report of `async-lab trace --format json`; replay the trace it was made from (the \
                 file `--out` named, async-lab-trace.jsonl by default)",
            )
        } else if v["kind"] == "async-lab-recording" {
            Some("it is a recording of the lab's experiments; replay it with `async-lab --replay FILE`")
        } else {
            None
        }
    }

    /// Parses the text of a trace (see the module's doc for what is tolerated).
    pub fn parse(text: &str) -> anyhow::Result<Trace> {
        let mut processes: Vec<ProcessTrace> = Vec::new();
        let lines: Vec<&str> = text.lines().collect();
        let last_nonempty = lines.iter().rposition(|l| !l.trim().is_empty());
        // The last line was cut where the text does not end it.
        let cut = (!text.ends_with('\n')).then_some(lines.len().saturating_sub(1));
        for (i, raw) in lines.iter().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            if Some(i) == cut && !processes.is_empty() {
                break;
            }
            let line: Line = match serde_json::from_str(raw) {
                Ok(l) => l,
                // A last line cut in the middle: the writer was stopped while writing it.
                Err(_) if Some(i) == last_nonempty && !processes.is_empty() && !raw.trim_end().ends_with('}') => break,
                Err(_) if processes.is_empty() && Trace::what_else(text).is_some() => {
                    bail!("{}", Trace::what_else(text).unwrap_or_default())
                }
                Err(e) => bail!("line {}: {e}", i + 1),
            };
            match line {
                Line::Header { format, version, pid, program, cupti_version } => {
                    if format != TRACE_FORMAT {
                        bail!("line {}: the header's format is {format:?}, not {TRACE_FORMAT:?}", i + 1);
                    }
                    if version > TRACE_VERSION {
                        bail!(
                            "line {}: trace format version {version} is newer than this async-lab reads \
                             ({TRACE_VERSION})",
                            i + 1
                        );
                    }
                    processes.push(ProcessTrace { pid, program, cupti_version, partial: true, ..Default::default() });
                }
                other => {
                    let Some(p) = processes.last_mut() else {
                        bail!("line {}: the first line must be a trace header", i + 1);
                    };
                    match &other {
                        Line::End { .. } => p.partial = false,
                        Line::Signal { signal, .. } => p.ended_by = Some(signal.clone()),
                        Line::Error { error, message } => {
                            p.failure = Some((*error, message.clone()));
                            p.partial = false;
                        }
                        _ => {}
                    }
                    let other = match other {
                        Line::SameLocation { tid, corr, gil, as_corr, took_ns } => {
                            same_location(p, tid, corr, gil, as_corr, took_ns)
                        }
                        other => other,
                    };
                    p.lines.push(other);
                }
            }
        }
        if processes.is_empty() {
            bail!("it holds no trace header");
        }
        Ok(Trace { processes })
    }

    /// Whether any process's section was cut short.
    pub fn partial(&self) -> bool {
        self.processes.iter().any(|p| p.partial)
    }
}

/// Whether the file at `path` begins like a trace (its first line a trace header); `false` for anything else,
/// unreadable files included (the caller's own reading then says what is wrong).
pub fn is_trace(path: &Path) -> bool {
    let Ok(mut file) = crate::stored::open(path) else { return false };
    let mut first = String::new();
    if file.read_line(&mut first).is_err() {
        return false;
    }
    matches!(serde_json::from_str::<Line>(&first), Ok(Line::Header { format, .. }) if format == TRACE_FORMAT)
}

/// The header line of a process's section, as the injection library writes it.
pub fn header(pid: u32, program: Vec<String>, cupti_version: Option<u32>) -> Line {
    Line::Header { format: TRACE_FORMAT.into(), version: TRACE_VERSION, pid, program, cupti_version }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line]) -> String {
        lines.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect()
    }

    #[test]
    fn a_complete_section_reads_back_and_is_not_partial() {
        let api = Line::Api {
            domain: Domain::Runtime,
            name: "cudaMemcpyAsync".into(),
            cbid: 41,
            tid: 7,
            corr: 3,
            start: 10,
            end: 20,
        };
        let t = Trace::parse(&text(&[header(1, vec!["p".into()], Some(130001)), api.clone(), Line::End { t: 30 }]))
            .unwrap();
        assert_eq!(t.processes.len(), 1);
        assert!(!t.partial());
        assert_eq!(t.processes[0].lines[0], api);
    }

    #[test]
    fn without_an_end_line_it_is_partial_and_a_cut_last_line_is_dropped() {
        let mut s = text(&[header(1, vec![], None)]);
        s.push_str("{\"type\":\"api\",\"domain\":\"runt");
        let t = Trace::parse(&s).unwrap();
        assert!(t.partial());
        assert!(t.processes[0].lines.is_empty());
    }

    /// A trace cut at any byte (a program killed while its lines went out) reads as the whole lines before
    /// the cut, partial.
    #[test]
    fn a_trace_cut_at_any_byte_reads_as_its_whole_lines() {
        let lines = [
            header(1, vec!["p".into()], Some(130001)),
            Line::Setup {
                clock: ClockPair { cupti_ns: 5, monotonic_ns: 7 },
                api_calls: ApiCalls::MayHold,
                locate_over_ns: 20_000,
                python: Some(PythonSetup {
                    version: "3.14.0".into(),
                    reader: PyReader::Unknown,
                    note: Some("no layout for 3.14".into()),
                }),
                several_subscribers: None,
            },
            Line::Api {
                domain: Domain::Runtime,
                name: "cudaMemcpy".into(),
                cbid: 31,
                tid: 7,
                corr: 3,
                start: 10,
                end: 123,
            },
            Line::Location {
                tid: 7,
                corr: 3,
                gil: Gil::Held,
                python: vec![PyFrame { file: "t.py".into(), line: 41, function: "main".into() }],
                native: vec![NativeFrame {
                    module: "/x/p".into(),
                    offset: 4660,
                    function: None,
                    file: None,
                    line: None,
                }],
                took_ns: Some(38_000),
                others: vec![ThreadFrames {
                    tid: 8,
                    gil: false,
                    python: vec![PyFrame { file: "t.py".into(), line: 26, function: "main".into() }],
                }],
            },
            Line::Thread { tid: 7, name: "pt_autograd_0".into() },
            Line::Source { file: "t.py".into(), line: 41, text: "v = loss.item()".into() },
            Line::Signal { t: 130, signal: "SIGSEGV".into() },
            Line::End { t: 1234 },
        ];
        let whole = text(&lines);
        let ends: Vec<usize> = whole.match_indices('\n').map(|(i, _)| i + 1).collect();
        let header_end = ends[0];
        for at in header_end..=whole.len() {
            let t = Trace::parse(&whole[..at]).unwrap_or_else(|e| panic!("cut at {at}: {e:#}"));
            let complete = ends.iter().filter(|&&e| e <= at).count();
            assert_eq!(t.processes[0].lines, lines[1..complete], "cut at {at}");
            assert_eq!(t.partial(), complete < lines.len(), "cut at {at}");
        }
    }

    /// An overhead record reads back with its kind named as CUPTI names it; a kind a newer CUPTI writes reads
    /// as `Other`, and a record without a correlation id (before CUPTI 12.3) as none.
    #[test]
    fn overhead_records_read_back_and_unknown_kinds_are_other() {
        let lazy = Line::Overhead {
            kind: OverheadKind::LazyFunctionLoading,
            start: 10,
            end: 20,
            corr: Some(7),
            stream: None,
            queue_length: None,
        };
        let s = serde_json::to_string(&lazy).unwrap();
        assert_eq!(s, r#"{"type":"overhead","kind":"LAZY_FUNCTION_LOADING","start":10,"end":20,"corr":7}"#);
        assert_eq!(serde_json::from_str::<Line>(&s).unwrap(), lazy);
        let newer = r#"{"type":"overhead","kind":"SOMETHING_NEW","start":1,"end":2}"#;
        assert_eq!(
            serde_json::from_str::<Line>(newer).unwrap(),
            Line::Overhead {
                kind: OverheadKind::Other,
                start: 1,
                end: 2,
                corr: None,
                stream: None,
                queue_length: None
            }
        );
    }

    #[test]
    fn bad_files_get_one_clear_error() {
        let err = |s: &str| format!("{:#}", Trace::parse(s).unwrap_err());
        assert!(err("").contains("no trace header"));
        assert!(err("{\"type\":\"end\",\"t\":1}\n").contains("first line must be a trace header"));
        assert!(err("hello\n").contains("line 1"));
        let newer = text(&[Line::Header {
            format: TRACE_FORMAT.into(),
            version: TRACE_VERSION + 1,
            pid: 1,
            program: vec![],
            cupti_version: None,
        }]);
        assert!(err(&newer).contains("newer"));
        let other = "{\"type\":\"header\",\"format\":\"x\",\"version\":1,\"pid\":1,\"program\":[]}\n";
        assert!(err(other).contains("not \"async-lab-trace\""));
    }
}

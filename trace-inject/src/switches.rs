//! What the environment switches on and off, read once at start: the trace's shape (`--all-records`, the
//! threshold of the bounded trace, `--all-kernels`) and, for measuring what each part of the tracer costs
//! (`reference/frameworks/cost.sh`), the callback domains, the GPU record kinds and the writer. A trace made
//! with a part switched off lacks what that part records: these are for measuring, not for tracing.

/// Set to 1 (by `async-lab trace --all-records`): every record written, not the bounded trace.
pub const ALL_RECORDS_VAR: &str = "ASYNC_LAB_ALL_RECORDS";
/// The bounded trace keeps the calls that held their thread longer than this many ns (`--min-held`).
pub const KEEP_OVER_VAR: &str = "ASYNC_LAB_KEEP_OVER_NS";
/// The callback domains subscribed, a comma-separated list of `runtime`, `driver`, `resource`, `nvtx`
/// (default: all four; `none`: none).
pub const DOMAINS_VAR: &str = "ASYNC_LAB_TRACE_DOMAINS";
/// The GPU record kinds enabled, a comma-separated list of `memcpy`, `memset`, `kernel` (every kernel),
/// `windows` (kernels during windows only: `windows`), `sync`, `event`, `overhead` (default: [`KINDS_DEFAULT`],
/// or every kind with [`ALL_KERNELS_VAR`]; `none`: none), and `api`: CUPTI's API records of every runtime and
/// driver call as well (read by nothing: for measuring what they cost beside the callbacks).
/// `ASYNC_LAB_TRACE_EVENTS=0` leaves `event` out too.
pub const KINDS_VAR: &str = "ASYNC_LAB_TRACE_KINDS";
/// The record kinds by default: a held call's own copy or memset and the driver's overheads are one record
/// each, and kernels are recorded in windows (start-up, after a held call); no record per launch or per poll.
pub const KINDS_DEFAULT: &str = "memcpy,memset,overhead,windows";
/// Every kind, every kernel (`--all-kernels`).
pub const KINDS_ALL: &str = "memcpy,memset,kernel,sync,event,overhead";
/// Set to 1 (by `async-lab trace --all-kernels`): every GPU record kind, every kernel and synchronization, as
/// traces were made before the launch log.
pub const ALL_KERNELS_VAR: &str = "ASYNC_LAB_ALL_KERNELS";
/// Set to 1: CUPTI keeps an activity buffer per thread (`CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER`,
/// CUPTI 12.3 and later) rather than one that every thread's records go through: for measuring whether the
/// threads' contention for it is part of what the GPU records cost.
pub const PER_THREAD_BUFFERS_VAR: &str = "ASYNC_LAB_CUPTI_PER_THREAD_BUFFERS";
/// `on` (default); `unwritten`: every line made on the library's thread, none written to the file; `none`:
/// the callbacks take their times and record nothing.
pub const WRITER_VAR: &str = "ASYNC_LAB_TRACE_WRITER";

/// Set to 0: no native frames are walked, a location holds its Python frames alone: for measuring what
/// reading the Python frames costs in a program (`reference/frameworks/frames_check.sh`).
pub const NATIVE_FRAMES_VAR: &str = "ASYNC_LAB_NATIVE_FRAMES";

/// The bounded trace's threshold where [`KEEP_OVER_VAR`] is not set: `async-lab trace`'s default `--min-held`.
pub const KEEP_OVER_DEFAULT_NS: u64 = 20_000;

/// Whether `name` is among the list in variable `var` (every name where it is unset).
pub fn listed(var: &str, name: &str) -> bool {
    match std::env::var(var) {
        Ok(list) => list.split(',').any(|n| n.trim() == name),
        Err(_) => true,
    }
}

/// Whether the GPU record kind `word` is enabled ([`KINDS_VAR`], else the defaults).
pub fn kind(word: &str) -> bool {
    let list = std::env::var(KINDS_VAR).unwrap_or_else(|_| {
        let all = std::env::var_os(ALL_KERNELS_VAR).is_some_and(|v| v == "1");
        (if all { KINDS_ALL } else { KINDS_DEFAULT }).to_owned()
    });
    list.split(',').any(|n| n.trim() == word)
}

/// What the writer does with the lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writer {
    /// The bounded trace (the default), or with `all`, every line.
    On { all: bool, keep_over_ns: u64 },
    /// Lines made, not written.
    Unwritten,
    /// Nothing recorded.
    Off,
}

/// The writer as the environment says.
pub fn writer() -> Writer {
    match std::env::var(WRITER_VAR).as_deref() {
        Ok("unwritten") => Writer::Unwritten,
        Ok("none") => Writer::Off,
        _ => Writer::On {
            all: std::env::var_os(ALL_RECORDS_VAR).is_some_and(|v| v == "1"),
            keep_over_ns: std::env::var(KEEP_OVER_VAR)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(KEEP_OVER_DEFAULT_NS),
        },
    }
}

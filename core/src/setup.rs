//! The typed facts of a case's setup that more than one layer reads: which host memory, which stream, which
//! direction a copy goes, and how a peer experiment's record id names its pair of GPUs. The driver layer
//! allocates and creates what these name; reports and explanations read them instead of parsing ids.

use serde::{Deserialize, Serialize};

/// Which memory a host-side buffer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum HostKind {
    /// Ordinary memory from the Rust allocator: the driver must stage copies through its own pinned buffer.
    Pageable,
    /// Page-locked memory from `cuMemAllocHost`: the GPU's copy engines read and write it directly.
    Pinned,
    /// Pageable memory page-locked afterwards with `cuMemHostRegister` (rule AL4).
    Registered,
    /// Write-combined pinned memory from `cuMemHostAlloc(CU_MEMHOSTALLOC_WRITECOMBINED)` (rule AL5).
    WriteCombined,
    /// Managed (unified) memory from `cuMemAllocManaged`, used from the host side (rule A4).
    Managed,
}

impl HostKind {
    pub const ALL: [HostKind; 5] =
        [HostKind::Pageable, HostKind::Pinned, HostKind::Registered, HostKind::WriteCombined, HostKind::Managed];

    pub fn slug(self) -> &'static str {
        match self {
            HostKind::Pageable => "pageable",
            HostKind::Pinned => "pinned",
            HostKind::Registered => "registered",
            HostKind::WriteCombined => "wc",
            HostKind::Managed => "managed",
        }
    }
}

/// Which stream a call is issued on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum StreamKind {
    /// `cuStreamCreate(CU_STREAM_NON_BLOCKING)`: no implicit ordering with the legacy stream (rule ST3).
    NonBlocking,
    /// `cuStreamCreate(CU_STREAM_DEFAULT)`: a created stream that is ordered with the legacy stream.
    Blocking,
    /// The legacy default stream (`CU_STREAM_LEGACY`, stream 0 in the runtime API, rule ST1).
    Legacy,
    /// The per-thread default stream (`CU_STREAM_PER_THREAD`, rule ST2).
    PerThread,
}

impl StreamKind {
    pub const ALL: [StreamKind; 4] =
        [StreamKind::NonBlocking, StreamKind::Blocking, StreamKind::Legacy, StreamKind::PerThread];

    /// The name used in experiment ids.
    pub fn slug(self) -> &'static str {
        match self {
            StreamKind::NonBlocking => "nonblocking",
            StreamKind::Blocking => "blocking",
            StreamKind::Legacy => "legacy",
            StreamKind::PerThread => "per-thread",
        }
    }
}

/// Which way a copy moves its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    HtoD,
    DtoH,
    DtoD,
    HtoH,
}

impl Direction {
    pub const ALL: [Direction; 4] = [Direction::HtoD, Direction::DtoH, Direction::DtoD, Direction::HtoH];

    /// The name used in experiment ids.
    pub fn slug(self) -> &'static str {
        match self {
            Direction::HtoD => "htod",
            Direction::DtoH => "dtoh",
            Direction::DtoD => "dtod",
            Direction::HtoH => "htoh",
        }
    }
}

/// How the host time of a call was taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CallTiming {
    /// The method's stopwatch, as every experiment times its call: the thread's CPU time (a system call) read
    /// just before the wall clock starts and just after it stops.
    #[default]
    Stopwatch,
    /// The wall clock alone (`Instant`, no system call), as the C++ reference times: the overhead family's
    /// second timing, whose difference from the stopwatch is what the CPU-clock reads cost the call itself.
    WallClockOnly,
}

impl CallTiming {
    /// Serde's `skip_serializing_if`: the stopwatch is what every setup used before the field existed.
    pub fn is_stopwatch(&self) -> bool {
        *self == CallTiming::Stopwatch
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    Copy,
    Memset,
    Launch,
    /// Loading modules and libraries, looking up kernels, first launches (`experiments/loading.rs`).
    Load,
    Alloc,
    Callback,
    Wait,
    Seed,
    Sweep,
    Peer,
    /// async-lab's own cost of enqueueing the cheapest calls (`experiments/overhead.rs`).
    Overhead,
    /// CUDA graphs: instantiation, upload, launches (`experiments/graphs.rs`).
    Graph,
    /// Unified-memory hints: prefetch and advice (`experiments/unified.rs`).
    Unified,
    /// Attributes and limits while work is in flight (`experiments/limits.rs`).
    Limits,
    /// Stream memory operations, and host calls while a stream waits on the host (`experiments/streammem.rs`).
    StreamMem,
    /// Virtual memory management (`experiments/vmm.rs`).
    Vmm,
    /// Batched copies (`experiments/batched.rs`).
    Batch,
    /// One thread's quick call while another is inside a slow one (`experiments/threads.rs`).
    Threads,
}

impl Family {
    pub fn title(self) -> &'static str {
        match self {
            Family::Copy => "Copies",
            Family::Memset => "Memset",
            Family::Launch => "Kernel launches",
            Family::Load => "Loading code while the GPU works",
            Family::Alloc => "Allocation and registration",
            Family::Callback => "Host callbacks and stream teardown",
            Family::Wait => "Waiting (scheduling flags)",
            Family::Seed => "The seed program",
            Family::Sweep => "Size sweep",
            Family::Peer => "Peer copies (GPU to GPU)",
            Family::Overhead => "The tool's own overhead",
            Family::Graph => "CUDA graphs",
            Family::Unified => "Unified-memory hints (prefetch, advice)",
            Family::Limits => "Attributes and limits while work is in flight",
            Family::StreamMem => "Stream memory operations (a stream waits on the host)",
            Family::Vmm => "Virtual memory management",
            Family::Batch => "Batched copies",
            Family::Threads => "Two threads: a quick call beside a slow one",
        }
    }
}

/// Where the blocker kernel ran relative to the call under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockerPlacement {
    /// In the call's own stream, ahead of it.
    Same,
    /// On a separate stream (named in the setup) that the call does not depend on.
    Other,
    /// No blocker.
    None,
}

/// The two GPUs of a peer experiment (absent in the experiment's template, before the pairs are known).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerSetup {
    /// The copy's source GPU; the call's stream belongs to it.
    pub src_gpu: Option<i32>,
    pub dst_gpu: Option<i32>,
    /// Whether direct access between the two was enabled (both directions) during the measurement.
    pub access: bool,
}

impl PeerSetup {
    /// Source and destination on the same GPU (`--peer-loopback`): a check of the code, not a peer measurement.
    pub fn is_loopback(&self) -> bool {
        self.src_gpu.is_some() && self.src_gpu == self.dst_gpu
    }
}

/// A peer experiment's record id: the template's id, and the pair.
pub fn pair_id(template: &str, src: i32, dst: i32) -> String {
    format!("{template}/gpu{src}-to-gpu{dst}")
}

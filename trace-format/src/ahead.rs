//! The launch log (format 5): what a held call waited for, read from the launches themselves rather than from
//! an activity record of every kernel.
//!
//! The injection library sees every call that enqueues work (its function, correlation id, times, and from
//! its parameters the stream it enqueued into, the event it recorded, the kernel's name) and keeps, per
//! stream and per event, the last work enqueued. Where a call holds its thread longer than the bounded trace's
//! threshold, it writes one [`Ahead`](crate::Line::Ahead) line after the call's own: the stream or event the
//! call named, and the work enqueued last before the call began, in that stream (or, for an event, in the
//! stream the event was last recorded in, before that record), or in every stream for a device-wide wait.
//! The trace says which GPU record kinds it holds ([`RecordKinds`](crate::Line::RecordKinds)) and, where
//! kernels are recorded only at times, when ([`KernelWindow`](crate::Line::KernelWindow)): the core names the
//! work ahead by its record where the trace has one, and by this log where it cannot have one.

use serde::{Deserialize, Serialize};

/// What an enqueued piece of work is, as its function says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnqueueKind {
    /// A kernel launch (`cudaLaunchKernel`, `cuLaunchKernel`, `cuLaunchKernelEx`, cooperative launches).
    Kernel,
    /// A copy (`cudaMemcpyAsync`, `cuMemcpyHtoDAsync`, ..., and the synchronous copies).
    Copy,
    /// A memset.
    Memset,
    /// A CUDA graph launched (`cudaGraphLaunch`, `cuGraphLaunch`).
    Graph,
    /// A host function (`cudaLaunchHostFunc`, `cuLaunchHostFunc`).
    HostFunction,
    /// A wait for an event enqueued in the stream (`cudaStreamWaitEvent`): the stream waits there for another
    /// stream's work.
    EventWait,
    /// A kind a newer library writes that this reader does not know.
    #[serde(other)]
    Other,
}

/// One piece of work enqueued: the call that enqueued it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enqueued {
    /// The enqueueing call's correlation id, thread, enter and return (ns, CUPTI's clock).
    pub corr: u32,
    pub tid: u64,
    pub start: u64,
    pub end: u64,
    pub kind: EnqueueKind,
    /// CUPTI's id of the stream it went into, where it could be had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<u32>,
    /// The kernel's name, as CUPTI gave it (mangled), for a kernel launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

/// An event's last record before a call waited for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecorded {
    /// The recording call's correlation id, thread, enter and return.
    pub corr: u32,
    pub tid: u64,
    pub start: u64,
    pub end: u64,
    /// CUPTI's id of the stream it was recorded in, where it could be had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<u32>,
}

/// Which kernels have an activity record (`Line::RecordKinds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KernelRecords {
    /// Every kernel (`--all-kernels`, and every trace before format 5).
    All,
    /// Those launched inside the windows the trace's `kernel-window` lines give.
    Windows,
    /// None.
    None,
}

/// Why kernels were recorded during a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowWhy {
    /// From the start, while the program kept launching kernels it had not launched before (lazy loading
    /// happens then).
    StartUp,
    /// After a call held its thread past the location threshold: the next steps of a loop are like the last.
    Held,
    /// A reason a newer library writes that this reader does not know.
    #[serde(other)]
    Other,
}

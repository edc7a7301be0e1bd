//! NVIDIA's documented host-blocking rules (ids as in `cuda-sync-rules.md`), what each predicts in this
//! project's vocabulary, and the verdict that compares a measured class with that prediction.

use crate::class::Class;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Whether a waiting host thread burns its CPU core or sleeps (the scheduling-flag experiments).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitStyle {
    /// The thread used at least half a core while it waited.
    Busy,
    /// The thread used less than half a core while it waited.
    Sleeps,
}

impl WaitStyle {
    /// From CPU time and wall time of the wait.
    pub fn from_times(cpu_ns: f64, wall_ns: f64) -> WaitStyle {
        if wall_ns > 0.0 && cpu_ns / wall_ns >= 0.5 {
            WaitStyle::Busy
        } else {
            WaitStyle::Sleeps
        }
    }
}

impl fmt::Display for WaitStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WaitStyle::Busy => "busy",
            WaitStyle::Sleeps => "sleeps",
        })
    }
}

/// What the documentation predicts for an experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Expected {
    /// Any of these classes matches the documented rule (the docs often say "may").
    Classes { classes: Vec<Class> },
    /// For waits: how the host thread should spend the wait.
    WaitStyle { styles: Vec<WaitStyle> },
    /// No current rule. `older` is what earlier documentation said, where it said something.
    Undocumented { older: Option<Vec<Class>> },
}

impl Expected {
    pub fn classes(classes: &[Class]) -> Expected {
        Expected::Classes { classes: classes.to_vec() }
    }

    pub fn undocumented() -> Expected {
        Expected::Undocumented { older: None }
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |v: Vec<String>| v.join(" or ");
        match self {
            Expected::Classes { classes } => f.write_str(&join(classes.iter().map(|c| c.to_string()).collect())),
            Expected::WaitStyle { styles } => {
                write!(f, "waits {}", join(styles.iter().map(|s| s.to_string()).collect()))
            }
            Expected::Undocumented { older: None } => f.write_str("(undocumented)"),
            Expected::Undocumented { older: Some(c) } => {
                write!(f, "(undocumented; older docs: {})", join(c.iter().map(|c| c.to_string()).collect()))
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Matches,
    Deviates,
    Undocumented,
    /// The class is `indeterminate`: the measurement decides nothing to compare.
    Inconclusive,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Matches => "matches",
            Verdict::Deviates => "deviates",
            Verdict::Undocumented => "undocumented",
            Verdict::Inconclusive => "inconclusive",
        })
    }
}

/// Compares what was measured with what the rule predicts.
pub fn verdict(expected: &Expected, class: Class, wait_style: Option<WaitStyle>) -> Verdict {
    if class == Class::Indeterminate {
        return Verdict::Inconclusive;
    }
    let ok = match expected {
        Expected::Classes { classes } => classes.contains(&class),
        Expected::WaitStyle { styles } => wait_style.is_some_and(|s| styles.contains(&s)),
        Expected::Undocumented { .. } => return Verdict::Undocumented,
    };
    if ok {
        Verdict::Matches
    } else {
        Verdict::Deviates
    }
}

/// One documented rule: its id, the case it covers and what the documentation says, in short.
pub struct Rule {
    pub id: &'static str,
    pub case: &'static str,
    pub documented: &'static str,
}

/// Every rule the experiments test.
pub const RULES: &[Rule] = &[
    Rule { id: "S1", case: "non-async copy, pageable host → device", documented: "synchronizes the stream first, then returns once the data is in a staging buffer; the DMA may still be running" },
    Rule { id: "S2", case: "non-async copy, pinned host → device", documented: "fully synchronous" },
    Rule { id: "S3", case: "non-async copy, device → host", documented: "returns only when the copy has finished" },
    Rule { id: "S4", case: "non-async copy, device → device", documented: "no host synchronization: may return before the copy is done" },
    Rule { id: "S5", case: "non-async copy, host → host", documented: "fully synchronous" },
    Rule { id: "A1", case: "async copy, pinned ↔ device or device ↔ device", documented: "fully asynchronous" },
    Rule { id: "A2", case: "async copy, pageable ↔ device", documented: "may be synchronous: the driver may wait on the stream and stage through pinned memory (CUDA 9–11 docs: device → pageable waits for completion, host → device staging is asynchronous)" },
    Rule { id: "A3", case: "async copy, host → host", documented: "fully synchronous" },
    Rule { id: "A4", case: "async copy involving managed memory", documented: "CUDA 9.2–11 docs: fully synchronous; no rule since 12.2" },
    Rule { id: "G1", case: "host → device copy of 64 KB or less (Programming Guide)", documented: "asynchronous with the host" },
    Rule { id: "M1", case: "non-async memset of device memory", documented: "asynchronous" },
    Rule { id: "M2", case: "non-async memset of pinned host memory", documented: "fully synchronous" },
    Rule { id: "M3", case: "async memset, any memory", documented: "asynchronous" },
    Rule { id: "K1", case: "kernel launch", documented: "asynchronous" },
    Rule { id: "K2", case: "kernel launch with CUDA_LAUNCH_BLOCKING=1", documented: "synchronous (a debugging aid)" },
    Rule { id: "K4", case: "first launch of a lazily loaded kernel", documented: "loading may need a context synchronization" },
    Rule { id: "K5", case: "launch with many launches already pending", documented: "not documented (forums: about 1000 pending launches, then each launch waits)" },
    Rule { id: "L1", case: "loading a module or a library (cuModuleLoadData, cuLibraryLoadData, cudaLibraryLoadData)", documented: "not documented. The API reference says where the code goes (a module into the current context; a library into every context at once under EAGER, into a context only when first needed there under LAZY) but nothing about waiting for work in flight" },
    Rule { id: "L2", case: "looking up a kernel without loading it (cuLibraryGetKernel; cuModuleGetFunction, cuKernelGetFunction under EAGER)", documented: "not documented. The API reference only says which handle is returned; under LAZY, cuModuleGetFunction and cuKernelGetFunction load the kernel (Programming Guide, Lazy Loading; cuLibraryLoadData's reference) and K4 applies" },
    Rule { id: "ST1", case: "legacy default stream", documented: "ordered with every blocking stream (device-side ordering, not a host wait)" },
    Rule { id: "ST2", case: "per-thread default stream", documented: "an ordinary blocking stream, ordered with the legacy stream" },
    Rule { id: "ST3", case: "stream created non-blocking", documented: "no implicit ordering with the legacy stream" },
    Rule { id: "AL1", case: "cuMemFree", documented: "may synchronize: the GPU synchronizes across all streams" },
    Rule { id: "AL2", case: "cuMemAllocAsync / cuMemFreeAsync", documented: "stream-ordered, no synchronization" },
    Rule { id: "AL3", case: "cuMemAllocHost / cuMemHostAlloc / cuMemFreeHost", documented: "serializes the device (Implicit Synchronization); whether the host waits is not documented" },
    Rule { id: "AL4", case: "cuMemHostRegister / cuMemHostUnregister", documented: "whether registering waits is not documented" },
    Rule { id: "AL5", case: "write-combined pinned memory", documented: "no separate rule: treated as pinned memory" },
    Rule { id: "ST4", case: "device allocation (cuMemAlloc, cuMemAllocManaged)", documented: "serializes the device (Implicit Synchronization); whether the host waits is not documented" },
    Rule { id: "CB1", case: "cuLaunchHostFunc", documented: "enqueue returns at once; the function runs once earlier work is done" },
    Rule { id: "SD1", case: "cuStreamDestroy with work pending", documented: "returns at once; resources are freed later" },
    Rule { id: "P1", case: "cuMemcpyPeer between two GPUs, peer access on", documented: "asynchronous with respect to the host, but ordered after all pending work of the current context and of both GPUs' contexts (API reference); device-to-device copies get no host synchronization (API synchronization behavior)" },
    Rule { id: "P2", case: "cuMemcpyPeerAsync between two GPUs, peer access on", documented: "asynchronous with respect to the host and to all work in other streams and on other GPUs" },
    Rule { id: "P3", case: "cuMemcpyDtoDAsync between two GPUs (unified addressing), peer access on", documented: "no rule of its own: the async copy rule (A1) calls device ↔ device copies fully asynchronous" },
    Rule { id: "P4", case: "a copy between two GPUs with peer access off", documented: "the call's own page still promises no host wait, without conditions; the Programming Guide says such copies go through host memory; whether the host then waits is not said" },
    Rule { id: "W1", case: "context scheduling flags", documented: "SPIN busy-waits; YIELD yields the thread; BLOCKING_SYNC sleeps; AUTO spins with fewer active contexts than CPUs" },
    Rule { id: "W2", case: "cuEventSynchronize", documented: "busy-waits unless the event was created with BLOCKING_SYNC" },
    Rule { id: "O1", case: "the host cost of enqueueing the cheapest calls", documented: "no documented rule" },
    Rule { id: "UM1", case: "cuMemPrefetchAsync / cudaMemPrefetchAsync of managed memory (to the GPU or to the host)", documented: "asynchronous with respect to the host and to all work on other devices (Driver API reference of cuMemPrefetchAsync, Unified Addressing); the prefetch itself is ordered in its stream. The Runtime API reference of cudaMemPrefetchAsync (Memory Management) describes the same stream-ordered prefetch" },
    Rule { id: "UM2", case: "cuMemAdvise / cudaMemAdvise on a managed range", documented: "not documented. The Driver and Runtime API references (cuMemAdvise, cudaMemAdvise) describe what each advice changes (read duplication, preferred location, mappings), nothing about work in flight" },
    Rule { id: "LM1", case: "cuCtxSetLimit(CU_LIMIT_STACK_SIZE) / cudaDeviceSetLimit(cudaLimitStackSize)", documented: "takes effect at once; if necessary the device blocks until all work asked for before it is complete (Driver API reference of cuCtxSetLimit, CUDA 12 on). The Runtime API reference of cudaDeviceSetLimit does not say so; it sets the same limit of the device's primary context" },
    Rule { id: "LM2", case: "cuCtxSetLimit / cudaDeviceSetLimit of the printf FIFO", documented: "must be set before any kernel that uses printf() is launched, else an invalid-value error (Driver and Runtime API references: cuCtxSetLimit, cudaDeviceSetLimit); whether the host waits: not documented" },
    Rule { id: "LM3", case: "queries: cuCtxGetLimit, cuMemGetInfo, cuDeviceGetAttribute (runtime: cudaDeviceGetLimit, cudaMemGetInfo, cudaDeviceGetAttribute)", documented: "not documented" },
    Rule { id: "LM4", case: "cuFuncSetAttribute / cudaFuncSetAttribute (a kernel's maximum dynamic shared memory)", documented: "not documented" },
    Rule { id: "SM1", case: "cuStreamWaitValue32 / cuStreamWriteValue32 (enqueueing them)", documented: "not documented for the host. The API reference: work after the wait in its stream waits until the condition holds; the write happens in stream order" },
    Rule { id: "SM2", case: "host calls while a stream waits on a value only the host will write", documented: "the API reference warns that improper use of the wait can deadlock the application and that the ordering it makes is invisible to CUDA (express it with events too); which host calls then wait is not documented. cuCtxSynchronize blocks until all preceding work is done" },
    Rule { id: "VM1", case: "virtual memory management: cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease", documented: "not documented. The API reference says what each step leaves (a handle, a mapping, access rights, an address reservation, memory freed once no mapping or handle is left), nothing about work in flight" },
    Rule { id: "VM2", case: "cuMemUnmap of memory that work already queued on the GPU still uses", documented: "not documented. The API reference: when cuMemUnmap returns, the range is an address reservation again; it says nothing about queued work that still uses the memory" },
    Rule { id: "BC1", case: "cuMemcpyBatchAsync / cudaMemcpyBatchAsync (CUDA 12.8), source read in stream order or at any time", documented: "not documented for the host. The Driver and Runtime API references: with the stream order the source is read in stream order; with ANY it may be read out of stream order, also after the call returns" },
    Rule { id: "BC2", case: "cuMemcpyBatchAsync / cudaMemcpyBatchAsync with the source read only during the call (host source)", documented: "every access to the source is complete when the call returns (Driver and Runtime API references: CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL, cudaMemcpySrcAccessOrderDuringApiCall): the caller may reuse the source at once" },
    Rule { id: "TH1", case: "one thread's async call while another thread is inside a slow driver call, or while the driver runs a slow host function (same context)", documented: "not documented. The driver API may be called from several threads; whether one thread's call waits for another's is not said" },
    Rule { id: "GR1", case: "cuGraphInstantiateWithFlags / cudaGraphInstantiateWithFlags (building an executable graph)", documented: "not documented. The Driver and Runtime API references (Graph Management) say what the executable graph holds, nothing about work in flight" },
    Rule { id: "GR2", case: "cuGraphUpload / cudaGraphUpload, and cuGraphInstantiateWithParams / cudaGraphInstantiateWithParams with the upload flag", documented: "not documented for the host. The Driver and Runtime API references: the upload goes into the stream without running the graph, ordered behind earlier work in that stream and earlier launches of the graph (device-side ordering)" },
    Rule { id: "GR3", case: "cuGraphLaunch / cudaGraphLaunch (first launch, warm launch, a graph with a host node, a launch into a full queue)", documented: "not documented for the host. The Driver and Runtime API references: the launch is ordered behind earlier work in the stream and earlier launches of the same graph; a graph not uploaded before is uploaded by its first launch. \"API synchronization behavior\" does not list graph launches, and no page says what a launch does when the launch queue is full" },
];

/// The rule with this id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        let e = Expected::classes(&[Class::Async]);
        assert_eq!(verdict(&e, Class::Async, None), Verdict::Matches);
        assert_eq!(verdict(&e, Class::Blocking, None), Verdict::Deviates);
        assert_eq!(verdict(&Expected::undocumented(), Class::Blocking, None), Verdict::Undocumented);
        let w = Expected::WaitStyle { styles: vec![WaitStyle::Sleeps] };
        assert_eq!(verdict(&w, Class::Blocking, Some(WaitStyle::Busy)), Verdict::Deviates);
        assert_eq!(verdict(&w, Class::Blocking, None), Verdict::Deviates);
    }

    #[test]
    fn wait_style_threshold() {
        assert_eq!(WaitStyle::from_times(99.0, 100.0), WaitStyle::Busy);
        assert_eq!(WaitStyle::from_times(50.0, 100.0), WaitStyle::Busy);
        assert_eq!(WaitStyle::from_times(49.0, 100.0), WaitStyle::Sleeps);
        assert_eq!(WaitStyle::from_times(0.0, 0.0), WaitStyle::Sleeps);
    }

    #[test]
    fn rule_ids_are_unique() {
        for (i, r) in RULES.iter().enumerate() {
            assert!(RULES[i + 1..].iter().all(|o| o.id != r.id), "duplicate rule {}", r.id);
        }
    }
}

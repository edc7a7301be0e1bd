//! The one table of CUDA functions and what each does ([`Does`]): whether it enqueues work and whether the GPU
//! writes a record of that work, whether it waits for the GPU, asks, loads code, creates a context, allocates,
//! frees, pins memory, and so on. Every part of the project that decides anything by a function's name (the
//! trace's classes and findings, warm-up, start-up, the bounded trace, the in-process gate's wait for records)
//! asks [`does`] or one of the questions below it; a test in `xtask` fails on a test of a CUDA function's
//! name outside this file.
//!
//! A function is known by its name without CUPTI's version suffix, the per-thread stream's suffix or a lab
//! case's argument (`cudaMemcpyAsync_ptsz_v7000`, `cudaMemcpy(HostToDevice)`), and by the longest entry of
//! [`TABLE`] that its name begins with: `cudaMemcpy` covers `cudaMemcpy2DAsync` and `cudaMemcpyPeer`,
//! `cuCtxCreate` covers `cuCtxCreate_v4`. The getters the tracer leaves out (`subscribed`) answer from the
//! driver's state: [`Does::Answers`].

use crate::subscribed::{base_name, may_hold};

/// What a CUDA function does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Does {
    /// Enqueues a kernel; the GPU writes a record of it (`cudaLaunchKernel`, `cuLaunchKernelEx`).
    LaunchesKernel,
    /// Enqueues a copy, or makes one at once; the GPU writes a record of it (`cudaMemcpyAsync`, `cuMemcpyHtoD`).
    Copies,
    /// Enqueues a memset; the GPU writes a record of it (`cudaMemsetAsync`, `cuMemsetD32`).
    Sets,
    /// Launches a graph: its nodes' records, where there are any, come from its nodes (`cudaGraphLaunch`).
    LaunchesGraph,
    /// Enqueues a host function: no GPU record (`cudaLaunchHostFunc`, `cudaStreamAddCallback`).
    LaunchesHostFunction,
    /// Enqueues an event's record or a stream's wait, with no work of its own (`cudaEventRecord`,
    /// `cudaStreamWaitEvent`, `cuStreamWriteValue32`).
    EnqueuesMarker,
    /// Waits for the GPU: a stream's work, an event, the whole device (`cudaStreamSynchronize`).
    Synchronizes,
    /// Asks whether work has ended, without waiting (`cudaStreamQuery`, `cudaEventQuery`).
    Queries,
    /// Loads a module or a library: its own call, a load at run time (`cuModuleLoadData`, `cuLibraryLoadData`,
    /// `cuLinkComplete`).
    LoadsModule,
    /// Looks up a function, a kernel, a symbol or their attributes, or sets one: under lazy loading it may load
    /// the module first (`cuModuleGetFunction`, `cudaFuncGetAttributes`, `cudaFuncSetAttribute`).
    LooksUp,
    /// Unloads a module or a library (`cuModuleUnload`, `cuLibraryUnload`).
    Unloads,
    /// Initializes the driver or creates a context (`cuInit`, `cuCtxCreate`, `cuDevicePrimaryCtxRetain`).
    CreatesContext,
    /// Allocates device, pinned host or managed memory, or reserves or maps an address range (`cudaMalloc`,
    /// `cudaHostAlloc`, `cuMemCreate`, `cuMemMap`).
    Allocates,
    /// Frees memory, or unmaps or releases it (`cudaFree`, `cudaFreeHost`, `cuMemRelease`, `cuMemUnmap`).
    Frees,
    /// Pins host memory the program allocated (`cudaHostRegister`).
    Registers,
    /// Unpins it (`cudaHostUnregister`).
    Unregisters,
    /// Captures, builds or instantiates a graph (`cudaStreamBeginCapture`, `cudaGraphInstantiate`).
    BuildsGraph,
    /// Creates or destroys a stream, an event or a pool, or sets the context's or device's state
    /// (`cudaStreamCreate`, `cudaEventDestroy`, `cuCtxSetCurrent`, `cudaSetDevice`).
    Manages,
    /// Reads a state the tracer still subscribes to (`cudaMemGetInfo`, `cudaGetDeviceProperties`,
    /// `cuModuleGetLoadingMode`).
    Reads,
    /// Answers from the driver's state and never waits: the getters the tracer leaves out (`subscribed`).
    Answers,
    /// Not in the table.
    Other,
}

/// What the functions whose names begin with each entry do (the longest entry a name begins with decides).
pub const TABLE: &[(&str, Does)] = &[
    // Kernels.
    ("cudaLaunchKernel", Does::LaunchesKernel),
    ("cudaLaunchCooperativeKernel", Does::LaunchesKernel),
    ("cudaLaunch", Does::LaunchesKernel),
    ("cuLaunchKernel", Does::LaunchesKernel),
    ("cuLaunchCooperativeKernel", Does::LaunchesKernel),
    ("cuLaunchGrid", Does::LaunchesKernel),
    ("cuLaunch", Does::LaunchesKernel),
    // Graphs and host functions: work without a record of its own.
    ("cudaGraphLaunch", Does::LaunchesGraph),
    ("cuGraphLaunch", Does::LaunchesGraph),
    ("cudaLaunchHostFunc", Does::LaunchesHostFunction),
    ("cuLaunchHostFunc", Does::LaunchesHostFunction),
    ("cudaStreamAddCallback", Does::LaunchesHostFunction),
    ("cuStreamAddCallback", Does::LaunchesHostFunction),
    ("cudaEventRecord", Does::EnqueuesMarker),
    ("cuEventRecord", Does::EnqueuesMarker),
    ("cudaStreamWaitEvent", Does::EnqueuesMarker),
    ("cuStreamWaitEvent", Does::EnqueuesMarker),
    ("cuStreamWaitValue", Does::EnqueuesMarker),
    ("cuStreamWriteValue", Does::EnqueuesMarker),
    ("cuStreamBatchMemOp", Does::EnqueuesMarker),
    // Copies and memsets.
    ("cudaMemcpy", Does::Copies),
    ("cuMemcpy", Does::Copies),
    ("cudaMemset", Does::Sets),
    ("cuMemsetD", Does::Sets),
    ("cudaMemPrefetchAsync", Does::Copies),
    ("cuMemPrefetchAsync", Does::Copies),
    // Waits and queries.
    ("cudaStreamSynchronize", Does::Synchronizes),
    ("cudaEventSynchronize", Does::Synchronizes),
    ("cudaDeviceSynchronize", Does::Synchronizes),
    ("cudaThreadSynchronize", Does::Synchronizes),
    ("cuStreamSynchronize", Does::Synchronizes),
    ("cuEventSynchronize", Does::Synchronizes),
    ("cuCtxSynchronize", Does::Synchronizes),
    ("cudaStreamQuery", Does::Queries),
    ("cudaEventQuery", Does::Queries),
    ("cuStreamQuery", Does::Queries),
    ("cuEventQuery", Does::Queries),
    ("cudaEventElapsedTime", Does::Queries),
    ("cuEventElapsedTime", Does::Queries),
    // Code.
    ("cuModuleLoad", Does::LoadsModule),
    ("cuLibraryLoad", Does::LoadsModule),
    ("cudaLibraryLoad", Does::LoadsModule),
    ("cuLinkComplete", Does::LoadsModule),
    ("cuModuleUnload", Does::Unloads),
    ("cuLibraryUnload", Does::Unloads),
    ("cudaLibraryUnload", Does::Unloads),
    ("cuModuleGet", Does::LooksUp),
    ("cuModuleGetLoadingMode", Does::Reads),
    ("cuLibraryGet", Does::LooksUp),
    ("cudaLibraryGet", Does::LooksUp),
    ("cuKernelGet", Does::LooksUp),
    ("cuKernelSet", Does::LooksUp),
    ("cuFuncGet", Does::LooksUp),
    ("cuFuncSet", Does::LooksUp),
    ("cudaFuncGet", Does::LooksUp),
    ("cudaFuncSet", Does::LooksUp),
    ("cudaGetFuncBySymbol", Does::LooksUp),
    ("cudaGetKernel", Does::LooksUp),
    ("cudaGetSymbol", Does::LooksUp),
    ("cudaOccupancy", Does::LooksUp),
    ("cuOccupancy", Does::LooksUp),
    // Contexts.
    ("cuInit", Does::CreatesContext),
    ("cuCtxCreate", Does::CreatesContext),
    ("cuDevicePrimaryCtxRetain", Does::CreatesContext),
    ("cudaInitDevice", Does::CreatesContext),
    ("cuCtx", Does::Manages),
    ("cuDevicePrimaryCtx", Does::Manages),
    ("cudaSetDevice", Does::Manages),
    ("cudaDeviceReset", Does::Manages),
    ("cudaDeviceSet", Does::Manages),
    // Memory.
    ("cudaMalloc", Does::Allocates),
    ("cudaHostAlloc", Does::Allocates),
    ("cuMemAlloc", Does::Allocates),
    ("cuMemHostAlloc", Does::Allocates),
    ("cuMemCreate", Does::Allocates),
    ("cuMemMap", Does::Allocates),
    ("cuMemAddressReserve", Does::Allocates),
    ("cuArrayCreate", Does::Allocates),
    ("cuArray3DCreate", Does::Allocates),
    ("cuMipmappedArrayCreate", Does::Allocates),
    ("cudaFree", Does::Frees),
    ("cuMemFree", Does::Frees),
    ("cuMemRelease", Does::Frees),
    ("cuMemUnmap", Does::Frees),
    ("cuMemAddressFree", Does::Frees),
    ("cuArrayDestroy", Does::Frees),
    ("cuMipmappedArrayDestroy", Does::Frees),
    ("cudaMemPoolTrimTo", Does::Frees),
    ("cuMemPoolTrimTo", Does::Frees),
    ("cudaHostRegister", Does::Registers),
    ("cuMemHostRegister", Does::Registers),
    ("cudaHostUnregister", Does::Unregisters),
    ("cuMemHostUnregister", Does::Unregisters),
    ("cudaHostGetDevicePointer", Does::Reads),
    ("cuMemHostGetDevicePointer", Does::Reads),
    ("cudaMemGetInfo", Does::Reads),
    ("cuMemGetInfo", Does::Reads),
    ("cuMemGetAllocationGranularity", Does::Reads),
    ("cuMemSetAccess", Does::Manages),
    ("cudaMemPool", Does::Manages),
    ("cuMemPool", Does::Manages),
    // Graphs built.
    ("cudaGraph", Does::BuildsGraph),
    ("cuGraph", Does::BuildsGraph),
    ("cudaStreamBeginCapture", Does::BuildsGraph),
    ("cudaStreamEndCapture", Does::BuildsGraph),
    ("cuStreamBeginCapture", Does::BuildsGraph),
    ("cuStreamEndCapture", Does::BuildsGraph),
    // Streams and events.
    ("cudaStream", Does::Manages),
    ("cuStream", Does::Manages),
    ("cudaEvent", Does::Manages),
    ("cuEvent", Does::Manages),
    ("cuTensorMapEncode", Does::Manages),
    ("cudaGetDeviceProperties", Does::Reads),
    ("cuDeviceGetPCIBusId", Does::Reads),
    ("cudaDeviceGet", Does::Reads),
];

/// The function's name as the table knows it: without its suffixes (`subscribed::base_name`) and without the
/// argument a lab case's call names (`cudaMemcpy(HostToDevice)`).
pub fn function_of(name: &str) -> &str {
    base_name(name.split('(').next().unwrap_or(name))
}

/// What the function of this name does.
pub fn does(name: &str) -> Does {
    let f = function_of(name);
    if !may_hold(f) {
        return Does::Answers;
    }
    let entry = TABLE.iter().filter(|(prefix, _)| f.starts_with(prefix)).max_by_key(|(prefix, _)| prefix.len());
    entry.map_or(Does::Other, |(_, d)| *d)
}

/// Whether it enqueues work the GPU writes a record of (a kernel, a copy, a memset): a graph's launch and a
/// host function's are not, whose records depend on their nodes or do not exist.
pub fn enqueues_with_record(name: &str) -> bool {
    matches!(does(name), Does::LaunchesKernel | Does::Copies | Does::Sets)
}

/// Whether it launches something into a stream: a kernel, a graph or a host function.
pub fn launches(name: &str) -> bool {
    matches!(does(name), Does::LaunchesKernel | Does::LaunchesGraph | Does::LaunchesHostFunction)
}

/// Whether it may load a module lazily, at a first use: a kernel's or a graph's launch, a lookup.
pub fn may_load_lazily(name: &str) -> bool {
    matches!(does(name), Does::LaunchesKernel | Does::LaunchesGraph | Does::LooksUp)
}

/// Whether it waits for the GPU by design (ends a step of the program).
pub fn synchronizes(name: &str) -> bool {
    does(name) == Does::Synchronizes
}

/// Whether it loads a module or a library (its own call: a lazy load at a first use is another matter).
pub fn loads_module(name: &str) -> bool {
    does(name) == Does::LoadsModule
}

/// Whether it loads or creates: a module or library loaded, the driver initialized, a context created.
pub fn loads_or_creates(name: &str) -> bool {
    matches!(does(name), Does::LoadsModule | Does::CreatesContext)
}

/// Whether it frees, unmaps or releases memory.
pub fn frees(name: &str) -> bool {
    does(name) == Does::Frees
}

/// Whether it allocates memory (device, pinned host, managed) or reserves or maps an address range.
pub fn allocates(name: &str) -> bool {
    does(name) == Does::Allocates
}

/// The functions that allocate pinned host memory (the others of [`Does::Allocates`] allocate device, managed
/// or virtual memory).
const ALLOCATING_HOST: [&str; 4] = ["cudaHostAlloc", "cudaMallocHost", "cuMemHostAlloc", "cuMemAllocHost"];

/// Whether it allocates pinned host memory (`cudaHostAlloc`, `cudaMallocHost`, `cuMemHostAlloc`, `cuMemAllocHost`).
pub fn allocates_host(name: &str) -> bool {
    ALLOCATING_HOST.contains(&function_of(name))
}

/// Whether it copies from the device to the host by its name (the driver API's `cuMemcpyDtoH`,
/// `cuMemcpyDtoHAsync`; the runtime's copies name their direction in an argument the trace does not hold).
pub fn reads_device(name: &str) -> bool {
    function_of(name).starts_with("cuMemcpyDtoH")
}

/// Whether it allocates, frees, pins or unpins memory.
pub fn manages_memory(name: &str) -> bool {
    matches!(does(name), Does::Allocates | Does::Frees | Does::Registers | Does::Unregisters)
}

impl Does {
    /// In a few words, for a table of functions.
    pub fn words(self) -> &'static str {
        match self {
            Does::LaunchesKernel => "launches a kernel (a GPU record)",
            Does::Copies => "copies (a GPU record)",
            Does::Sets => "sets memory (a GPU record)",
            Does::LaunchesGraph => "launches a graph (its nodes' records)",
            Does::LaunchesHostFunction => "enqueues a host function (no GPU record)",
            Does::EnqueuesMarker => "enqueues an event record or a wait (no work)",
            Does::Synchronizes => "waits for the GPU",
            Does::Queries => "asks whether work ended",
            Does::LoadsModule => "loads a module or library",
            Does::LooksUp => "looks up a function or symbol (may load lazily)",
            Does::Unloads => "unloads a module or library",
            Does::CreatesContext => "initializes the driver or creates a context",
            Does::Allocates => "allocates memory",
            Does::Frees => "frees memory",
            Does::Registers => "pins host memory",
            Does::Unregisters => "unpins host memory",
            Does::BuildsGraph => "builds a graph",
            Does::Manages => "manages streams, events or the context",
            Does::Reads => "reads a state",
            Does::Answers => "answers from the driver's state (not subscribed)",
            Does::Other => "not in the table",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_variants_and_arguments_share_their_entry() {
        assert_eq!(does("cuModuleLoadData"), Does::LoadsModule);
        assert_eq!(does("cuLibraryLoadFromFile"), Does::LoadsModule);
        assert_eq!(does("cudaLibraryLoadData"), Does::LoadsModule);
        assert_eq!(does("cuModuleGetFunction"), Does::LooksUp);
        assert_eq!(does("cuModuleGetLoadingMode"), Does::Reads);
        assert_eq!(does("cuCtxCreate_v4"), Does::CreatesContext);
        assert_eq!(does("cuCtxSetCurrent"), Does::Manages);
        assert_eq!(does("cuCtxSynchronize"), Does::Synchronizes);
        assert_eq!(does("cudaMemcpyAsync_ptsz_v7000"), Does::Copies);
        assert_eq!(does("cudaMemcpy(HostToDevice)"), Does::Copies);
        assert_eq!(does("cuMemsetD32Async"), Does::Sets);
        assert_eq!(does("cudaLaunchKernelExC_v11060"), Does::LaunchesKernel);
        assert_eq!(does("cudaMallocAsync"), Does::Allocates);
        assert_eq!(does("cudaFreeHost"), Does::Frees);
        assert_eq!(does("cudaGetDevice_v3020"), Does::Answers);
        assert_eq!(does("cuSomethingNew"), Does::Other);
    }

    #[test]
    fn graphs_and_host_functions_enqueue_without_a_record_of_their_own() {
        for name in
            ["cudaGraphLaunch", "cuGraphLaunch_ptsz", "cudaLaunchHostFunc", "cuLaunchHostFunc", "cuStreamAddCallback"]
        {
            assert!(launches(name) && !enqueues_with_record(name), "{name}");
        }
        for name in ["cudaLaunchKernel", "cuLaunchKernel", "cudaMemcpyAsync", "cuMemsetD8Async", "cudaMemcpy2DAsync"] {
            assert!(enqueues_with_record(name), "{name}");
        }
        for name in ["cudaEventRecord", "cudaStreamWaitEvent", "cudaStreamSynchronize", "cudaMalloc"] {
            assert!(!enqueues_with_record(name) && !launches(name), "{name}");
        }
    }

    #[test]
    fn queries_are_not_waits_and_allocations_are_not_frees() {
        assert!(!synchronizes("cudaStreamQuery") && does("cudaEventQuery") == Does::Queries);
        assert!(synchronizes("cudaDeviceSynchronize") && synchronizes("cuEventSynchronize"));
        assert!(allocates("cudaHostAlloc") && !frees("cudaHostAlloc") && manages_memory("cudaHostAlloc"));
        assert!(reads_device("cuMemcpyDtoHAsync_v2") && !reads_device("cuMemcpyHtoD") && !reads_device("cudaMemcpy"));
        assert!(
            allocates_host("cudaHostAlloc") && allocates_host("cuMemAllocHost_v2") && !allocates_host("cudaMalloc")
        );
        assert!(frees("cuMemFree_v2") && !allocates("cuMemFree_v2") && manages_memory("cudaHostUnregister"));
        assert!(loads_or_creates("cuInit") && loads_or_creates("cuDevicePrimaryCtxRetain_v2"));
        assert!(!loads_or_creates("cuLaunchKernel") && !loads_module("cuModuleUnload"));
        assert!(may_load_lazily("cudaFuncGetAttributes") && may_load_lazily("cuLaunchKernel"));
        assert!(!may_load_lazily("cudaLaunchHostFunc") && !may_load_lazily("cudaMemcpyAsync"));
    }

    #[test]
    fn every_entry_is_reached() {
        // An entry hidden by a longer one of the same name, or by the getters the tracer leaves out, would be
        // dead.
        for (prefix, d) in TABLE {
            assert_eq!(does(prefix), *d, "{prefix}");
        }
        assert_eq!(does("cuDevicePrimaryCtxGetState"), Does::Answers);
        assert_eq!(does("cudaStreamIsCapturing_ptsz"), Does::Answers);
    }
}

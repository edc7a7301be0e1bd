//! Which API calls the tracer subscribes to by default: every call that can hold its thread (enqueues,
//! synchronization, allocation and free, module loading and symbol lookups, graphs, memory operations,
//! context and stream management), not the getters and queries a framework makes around every operation
//! (PyTorch makes about eleven calls per op, of which two launch). A denylist rather than an allowlist: a
//! call this list does not name is traced, so a new API call is never missed.
//!
//! Getters that load are kept: with lazy module loading `cuModuleGetFunction`, `cuLibraryGetKernel`,
//! `cudaGetFuncBySymbol`, `cudaFuncGetAttributes` and their kin load the module and wait for the GPU.

/// The calls that answer from the driver's state and never wait: their names without version suffixes.
const NEVER_HOLD: &[&str] = &[
    // Devices and contexts.
    "cudaGetDevice",
    "cudaGetDeviceCount",
    "cudaGetDeviceFlags",
    "cudaDeviceGetAttribute",
    "cudaDeviceGetLimit",
    "cudaDeviceGetStreamPriorityRange",
    "cudaDeviceGetPCIBusId",
    "cudaDeviceGetByPCIBusId",
    "cudaDriverGetVersion",
    "cudaRuntimeGetVersion",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetAttribute",
    "cuDeviceGetName",
    "cuDeviceGetUuid",
    "cuDeviceTotalMem",
    "cuDeviceComputeCapability",
    "cuDevicePrimaryCtxGetState",
    "cuDriverGetVersion",
    "cuCtxGetCurrent",
    "cuCtxGetDevice",
    "cuCtxGetApiVersion",
    "cuCtxGetFlags",
    "cuCtxGetId",
    "cuCtxGetLimit",
    "cuCtxGetStreamPriorityRange",
    "cuCtxGetCacheConfig",
    "cuCtxGetSharedMemConfig",
    // Errors.
    "cudaGetLastError",
    "cudaPeekAtLastError",
    "cudaGetErrorString",
    "cudaGetErrorName",
    "cuGetErrorString",
    "cuGetErrorName",
    // Streams and capture.
    "cudaStreamIsCapturing",
    "cudaStreamGetCaptureInfo",
    "cudaStreamGetPriority",
    "cudaStreamGetFlags",
    "cudaStreamGetId",
    "cudaStreamGetDevice",
    "cuStreamIsCapturing",
    "cuStreamGetCaptureInfo",
    "cuStreamGetPriority",
    "cuStreamGetFlags",
    "cuStreamGetId",
    "cuStreamGetCtx",
    "cuStreamGetDevice",
    "cudaThreadExchangeStreamCaptureMode",
    "cuThreadExchangeStreamCaptureMode",
    // Names and pointers.
    "cuKernelGetName",
    "cuFuncGetName",
    "cuPointerGetAttribute",
    "cuPointerGetAttributes",
    "cudaPointerGetAttributes",
    // Entry points.
    "cuGetProcAddress",
    "cudaGetDriverEntryPoint",
    "cudaGetDriverEntryPointByVersion",
    "cuGetExportTable",
    "cudaGetExportTable",
];

/// The name without CUPTI's version suffix (`cudaGetDevice_v3020`), the driver's (`cuCtxGetDevice_v2`) or the
/// per-thread stream's (`_ptsz`, `_ptds`).
pub fn base_name(name: &str) -> &str {
    let mut name = name;
    loop {
        let Some(cut) = name.rfind('_') else { return name };
        let suffix = &name[cut + 1..];
        let versioned = suffix.len() > 1 && suffix.starts_with('v') && suffix[1..].bytes().all(|b| b.is_ascii_digit());
        if versioned || suffix == "ptsz" || suffix == "ptds" {
            name = &name[..cut];
        } else {
            return name;
        }
    }
}

/// Whether a call (by its API name, with or without a version suffix) can hold its thread, and so is traced
/// by default.
pub fn may_hold(name: &str) -> bool {
    !NEVER_HOLD.contains(&base_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_come_off() {
        assert_eq!(base_name("cudaGetDevice_v3020"), "cudaGetDevice");
        assert_eq!(base_name("cuCtxGetDevice_v2"), "cuCtxGetDevice");
        assert_eq!(base_name("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync");
        assert_eq!(base_name("cuMemcpyHtoD_v2_ptds"), "cuMemcpyHtoD");
        assert_eq!(base_name("cuLaunchKernel"), "cuLaunchKernel");
        assert_eq!(base_name("cudaGetDriverEntryPointByVersion"), "cudaGetDriverEntryPointByVersion");
        // A name part that only looks like a version stays.
        assert_eq!(base_name("cuda_v"), "cuda_v");
    }

    #[test]
    fn getters_and_queries_are_left_out() {
        for name in [
            "cudaGetDevice_v3020",
            "cuCtxGetDevice",
            "cuCtxGetDevice_v2",
            "cudaGetLastError_v3020",
            "cudaPeekAtLastError",
            "cuDeviceGetAttribute",
            "cudaDeviceGetAttribute_v5000",
            "cudaStreamIsCapturing_ptsz_v10000",
            "cuStreamIsCapturing",
            "cuStreamGetCaptureInfo_v3",
            "cuKernelGetName",
            "cuFuncGetName",
            "cuDevicePrimaryCtxGetState",
            "cuCtxGetCurrent",
            "cudaGetDeviceCount_v3020",
            "cuPointerGetAttribute",
            "cuPointerGetAttributes",
            "cudaPointerGetAttributes_v4000",
            "cuGetProcAddress_v2",
            "cudaGetDriverEntryPoint",
            "cudaGetDriverEntryPointByVersion_v12050",
        ] {
            assert!(!may_hold(name), "{name} never holds");
        }
    }

    #[test]
    fn calls_that_wait_enqueue_allocate_or_load_are_kept() {
        for name in [
            "cudaLaunchKernel_v7000",
            "cuLaunchKernel",
            "cuLaunchKernel_ptsz",
            "cudaMemcpyAsync_v3020",
            "cuMemcpyDtoHAsync_v2",
            "cudaStreamSynchronize_v3020",
            "cuStreamSynchronize",
            "cudaDeviceSynchronize",
            "cuCtxSynchronize",
            "cudaEventSynchronize",
            "cudaMalloc_v3020",
            "cudaFree_v3020",
            "cudaHostAlloc",
            "cuMemAlloc_v2",
            "cuMemsetD32Async",
            "cudaMemsetAsync",
            "cuModuleGetFunction",
            "cuLibraryGetKernel",
            "cuKernelGetFunction",
            "cudaGetFuncBySymbol",
            "cudaFuncGetAttributes_v3020",
            "cuFuncGetAttribute",
            "cuKernelGetAttribute",
            "cudaGetSymbolAddress",
            "cuModuleGetGlobal_v2",
            "cuGraphLaunch",
            "cudaStreamCreate",
            "cuDevicePrimaryCtxRetain",
            "cuInit",
            "cudaStreamQuery",
            "cudaEventQuery",
        ] {
            assert!(may_hold(name), "{name} may hold");
        }
    }
}

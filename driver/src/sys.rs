//! The driver entry points this project calls itself, declared with an integer result.
//!
//! `cust_raw` declares `CUresult` as a Rust enum; a driver newer than its CUDA 11.4 headers can return codes
//! that enum lacks, and reading such a value into it would be undefined behaviour. Declaring the functions
//! here with `u32` results (the enum's representation, so the ABI is the same) keeps every code readable.
//! Types and constants come from `cust_raw`. Every name here must also be in `../cuda-stub/symbols.txt`.
#![allow(non_snake_case)]

use std::ffi::{c_char, c_int, c_uint, c_void};

pub use cust::sys::{
    CUcontext, CUdevice, CUdevice_attribute, CUdeviceptr, CUevent, CUfunction, CUhostFn, CUmemPool_attribute,
    CUmemoryPool, CUstream,
};

/// `CUstreamCallback`, with the status as a raw code (see above).
pub type CUstreamCallbackRaw = Option<unsafe extern "C" fn(stream: CUstream, status: CuResult, user_data: *mut c_void)>;

/// A raw driver result code (`CUresult`).
pub type CuResult = u32;

pub const CUDA_SUCCESS: CuResult = 0;
pub const CUDA_ERROR_INVALID_VALUE: CuResult = 1;
pub const CUDA_ERROR_OUT_OF_MEMORY: CuResult = 2;
pub const CUDA_ERROR_NOT_INITIALIZED: CuResult = 3;
pub const CUDA_ERROR_STUB_LIBRARY: CuResult = 34;
pub const CUDA_ERROR_NO_DEVICE: CuResult = 100;
pub const CUDA_ERROR_INVALID_DEVICE: CuResult = 101;
pub const CUDA_ERROR_NOT_READY: CuResult = 600;
pub const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: CuResult = 704;
pub const CUDA_ERROR_PEER_ACCESS_NOT_ENABLED: CuResult = 705;
pub const CUDA_ERROR_INSUFFICIENT_DRIVER: CuResult = 35;
pub const CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: CuResult = 803;
pub const CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: CuResult = 804;

/// The legacy default stream (`CU_STREAM_LEGACY`, a C macro: handle value 1).
pub const CU_STREAM_LEGACY: CUstream = 0x1 as CUstream;
/// The per-thread default stream (`CU_STREAM_PER_THREAD`, a C macro: handle value 2).
pub const CU_STREAM_PER_THREAD: CUstream = 0x2 as CUstream;
pub const CU_STREAM_DEFAULT: c_uint = 0;
pub const CU_STREAM_NON_BLOCKING: c_uint = 1;
pub const CU_EVENT_DEFAULT: c_uint = 0;
pub const CU_EVENT_BLOCKING_SYNC: c_uint = 1;
pub const CU_MEMHOSTALLOC_WRITECOMBINED: c_uint = 4;
pub const CU_MEMHOSTREGISTER_DEFAULT: c_uint = 0;
pub const CU_MEM_ATTACH_GLOBAL: c_uint = 1;
pub const CU_CTX_SCHED_AUTO: c_uint = 0;
pub const CU_CTX_SCHED_SPIN: c_uint = 1;
pub const CU_CTX_SCHED_YIELD: c_uint = 2;
pub const CU_CTX_SCHED_BLOCKING_SYNC: c_uint = 4;
/// `CUdevice_P2PAttribute` values (declared as integers, like the results).
pub const CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: c_int = 1;
pub const CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED: c_int = 3;

#[link(name = "cuda")]
extern "C" {
    pub fn cuInit(flags: c_uint) -> CuResult;
    pub fn cuDriverGetVersion(version: *mut c_int) -> CuResult;
    pub fn cuGetErrorName(error: CuResult, name: *mut *const c_char) -> CuResult;
    pub fn cuGetErrorString(error: CuResult, text: *mut *const c_char) -> CuResult;

    pub fn cuDeviceGetCount(count: *mut c_int) -> CuResult;
    pub fn cuDeviceGet(device: *mut CUdevice, ordinal: c_int) -> CuResult;
    pub fn cuDeviceGetName(name: *mut c_char, len: c_int, device: CUdevice) -> CuResult;
    pub fn cuDeviceGetAttribute(value: *mut c_int, attribute: CUdevice_attribute, device: CUdevice) -> CuResult;
    pub fn cuDeviceTotalMem_v2(bytes: *mut usize, device: CUdevice) -> CuResult;
    pub fn cuDeviceCanAccessPeer(can: *mut c_int, device: CUdevice, peer: CUdevice) -> CuResult;
    pub fn cuDeviceGetP2PAttribute(value: *mut c_int, attribute: c_int, src: CUdevice, dst: CUdevice) -> CuResult;
    pub fn cuDeviceGetDefaultMemPool(pool: *mut CUmemoryPool, device: CUdevice) -> CuResult;

    pub fn cuCtxCreate_v2(ctx: *mut CUcontext, flags: c_uint, device: CUdevice) -> CuResult;
    pub fn cuCtxDestroy_v2(ctx: CUcontext) -> CuResult;
    pub fn cuCtxSetCurrent(ctx: CUcontext) -> CuResult;
    pub fn cuCtxGetCurrent(ctx: *mut CUcontext) -> CuResult;
    pub fn cuCtxSynchronize() -> CuResult;
    pub fn cuCtxEnablePeerAccess(peer: CUcontext, flags: c_uint) -> CuResult;
    pub fn cuCtxDisablePeerAccess(peer: CUcontext) -> CuResult;

    pub fn cuStreamCreate(stream: *mut CUstream, flags: c_uint) -> CuResult;
    pub fn cuStreamDestroy_v2(stream: CUstream) -> CuResult;
    pub fn cuStreamSynchronize(stream: CUstream) -> CuResult;
    pub fn cuStreamQuery(stream: CUstream) -> CuResult;

    pub fn cuEventCreate(event: *mut CUevent, flags: c_uint) -> CuResult;
    pub fn cuEventDestroy_v2(event: CUevent) -> CuResult;
    pub fn cuEventRecord(event: CUevent, stream: CUstream) -> CuResult;
    pub fn cuEventQuery(event: CUevent) -> CuResult;
    pub fn cuEventSynchronize(event: CUevent) -> CuResult;
    pub fn cuEventElapsedTime(ms: *mut f32, start: CUevent, end: CUevent) -> CuResult;

    pub fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CuResult;
    pub fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytes: usize) -> CuResult;
    pub fn cuMemFree_v2(dptr: CUdeviceptr) -> CuResult;
    pub fn cuMemAllocHost_v2(pp: *mut *mut c_void, bytes: usize) -> CuResult;
    pub fn cuMemHostAlloc(pp: *mut *mut c_void, bytes: usize, flags: c_uint) -> CuResult;
    pub fn cuMemFreeHost(p: *mut c_void) -> CuResult;
    pub fn cuMemHostRegister_v2(p: *mut c_void, bytes: usize, flags: c_uint) -> CuResult;
    pub fn cuMemHostUnregister(p: *mut c_void) -> CuResult;
    pub fn cuMemAllocManaged(dptr: *mut CUdeviceptr, bytes: usize, flags: c_uint) -> CuResult;
    pub fn cuMemAllocAsync(dptr: *mut CUdeviceptr, bytes: usize, stream: CUstream) -> CuResult;
    pub fn cuMemFreeAsync(dptr: CUdeviceptr, stream: CUstream) -> CuResult;
    pub fn cuMemPoolSetAttribute(pool: CUmemoryPool, attr: CUmemPool_attribute, value: *mut c_void) -> CuResult;
    pub fn cuMemPoolTrimTo(pool: CUmemoryPool, min_bytes_to_keep: usize) -> CuResult;

    pub fn cuMemcpy(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize) -> CuResult;
    pub fn cuMemcpyAsync(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, stream: CUstream) -> CuResult;
    pub fn cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, bytes: usize) -> CuResult;
    pub fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, bytes: usize) -> CuResult;
    pub fn cuMemcpyDtoD_v2(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize) -> CuResult;
    pub fn cuMemcpyHtoDAsync_v2(dst: CUdeviceptr, src: *const c_void, bytes: usize, stream: CUstream) -> CuResult;
    pub fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: CUdeviceptr, bytes: usize, stream: CUstream) -> CuResult;
    pub fn cuMemcpyDtoDAsync_v2(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, stream: CUstream) -> CuResult;
    pub fn cuMemcpyPeer(
        dst: CUdeviceptr,
        dst_ctx: CUcontext,
        src: CUdeviceptr,
        src_ctx: CUcontext,
        bytes: usize,
    ) -> CuResult;
    pub fn cuMemcpyPeerAsync(
        dst: CUdeviceptr,
        dst_ctx: CUcontext,
        src: CUdeviceptr,
        src_ctx: CUcontext,
        bytes: usize,
        stream: CUstream,
    ) -> CuResult;
    pub fn cuMemsetD8_v2(dst: CUdeviceptr, value: u8, count: usize) -> CuResult;
    pub fn cuMemsetD8Async(dst: CUdeviceptr, value: u8, count: usize, stream: CUstream) -> CuResult;

    pub fn cuLaunchKernel(
        f: CUfunction,
        grid_x: c_uint,
        grid_y: c_uint,
        grid_z: c_uint,
        block_x: c_uint,
        block_y: c_uint,
        block_z: c_uint,
        shared_bytes: c_uint,
        stream: CUstream,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> CuResult;
    pub fn cuLaunchHostFunc(stream: CUstream, f: CUhostFn, user_data: *mut c_void) -> CuResult;
    pub fn cuStreamAddCallback(
        stream: CUstream,
        f: CUstreamCallbackRaw,
        user_data: *mut c_void,
        flags: c_uint,
    ) -> CuResult;
}

pub use cust::sys::{CUjit_option, CUmodule};
/// A library loaded with `cuLibraryLoadData` (CUDA 12.0; an opaque pointer, not in cust_raw's headers).
pub type CUlibrary = *mut c_void;
/// A kernel of a library, independent of any context (CUDA 12.0; an opaque pointer, not in cust_raw's headers).
pub type CUkernel = *mut c_void;

// Loading code: modules (one context) and libraries (every context, CUDA 12.0).
#[link(name = "cuda")]
extern "C" {
    pub fn cuModuleLoadData(module: *mut CUmodule, image: *const c_void) -> CuResult;
    pub fn cuModuleUnload(module: CUmodule) -> CuResult;
    pub fn cuModuleGetFunction(f: *mut CUfunction, module: CUmodule, name: *const c_char) -> CuResult;
    /// `library_options` points to `CUlibraryOption` values (a C enum, int-sized; not in cust_raw's headers).
    pub fn cuLibraryLoadData(
        library: *mut CUlibrary,
        code: *const c_void,
        jit_options: *mut CUjit_option,
        jit_option_values: *mut *mut c_void,
        jit_option_count: c_uint,
        library_options: *mut c_int,
        library_option_values: *mut *mut c_void,
        library_option_count: c_uint,
    ) -> CuResult;
    pub fn cuLibraryUnload(library: CUlibrary) -> CuResult;
    pub fn cuLibraryGetKernel(kernel: *mut CUkernel, library: CUlibrary, name: *const c_char) -> CuResult;
    pub fn cuKernelGetFunction(f: *mut CUfunction, kernel: CUkernel) -> CuResult;
}

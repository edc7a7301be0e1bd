//! The runtime's limits, attributes and queries the limits experiments time, one function per runtime call:
//! `cudaDeviceSetLimit`/`cudaDeviceGetLimit` (the current device's primary context, the one the driver-side
//! objects live in), `cudaMemGetInfo`, `cudaDeviceGetAttribute`, and `cudaFuncSetAttribute` of a kernel the
//! runtime loaded (a `cudaKernel_t`, which the runtime takes where it wants a `const void *func`: "if the
//! specified function does not exist, then it is assumed to be a cudaKernel_t").

use super::library::RtKernel;
use super::sys;
use crate::CudaResult;
use std::ffi::{c_int, c_void};

pub use sys::{cudaDeviceAttr as DeviceAttr, cudaLimit as Limit};

/// `cudaDeviceSetLimit` on the current device.
pub fn device_set_limit(limit: Limit, value: usize) -> CudaResult<()> {
    // SAFETY: plain values; the runtime answers an error for a limit or value it does not take.
    unsafe { crate::rt!(cudaDeviceSetLimit(limit, value)) }
}

/// `cudaDeviceGetLimit` of the current device.
pub fn device_get_limit(limit: Limit) -> CudaResult<usize> {
    let mut v = 0;
    // SAFETY: a valid out-pointer; the limit is checked by the runtime.
    unsafe { crate::rt!(cudaDeviceGetLimit(&mut v, limit))? };
    Ok(v)
}

/// `cudaMemGetInfo`: free and total bytes of the current device.
pub fn mem_get_info() -> CudaResult<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: valid out-pointers.
    unsafe { crate::rt!(cudaMemGetInfo(&mut free, &mut total))? };
    Ok((free, total))
}

/// `cudaDeviceGetAttribute` of runtime device `device`.
pub fn device_attribute(attr: DeviceAttr, device: i32) -> CudaResult<i32> {
    let mut v = 0;
    // SAFETY: a valid out-pointer; the runtime answers an error for a bad device or attribute.
    unsafe { crate::rt!(cudaDeviceGetAttribute(&mut v, attr, device))? };
    Ok(v)
}

/// `cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize)` of `kernel`.
///
/// # Safety
/// The kernel's library is still loaded.
pub unsafe fn set_max_dynamic_shared(kernel: RtKernel, bytes: c_int) -> CudaResult<()> {
    let attr = sys::cudaFuncAttribute::cudaFuncAttributeMaxDynamicSharedMemorySize;
    // SAFETY: `kernel` is live (the caller's promise), passed as the runtime documents for a cudaKernel_t;
    // plain values otherwise, checked by the runtime.
    unsafe { crate::rt!(cudaFuncSetAttribute(kernel.raw() as *const c_void, attr, bytes)) }
}

/// `struct cudaFuncAttributes` as CUDA 12.0 to 13.x lay it out: three `size_t`, then 29 `int`s (the fields
/// added since 12.0 took the place of reserved ones, so the size never changed). Declared here with plain
/// `int`s so that no value the runtime writes can be invalid for a Rust enum field.
#[repr(C)]
struct FuncAttributes {
    sizes: [usize; 3],
    /// `maxThreadsPerBlock`, `numRegs`, `ptxVersion`, `binaryVersion`, `cacheModeCA`,
    /// `maxDynamicSharedSizeBytes` (index 5), ...
    ints: [c_int; 29],
}

const _: () = assert!(std::mem::size_of::<FuncAttributes>() == std::mem::size_of::<sys::cudaFuncAttributes>());

/// `cudaFuncGetAttributes(..).maxDynamicSharedSizeBytes` of `kernel`.
///
/// # Safety
/// As for `set_max_dynamic_shared`.
pub unsafe fn max_dynamic_shared(kernel: RtKernel) -> CudaResult<c_int> {
    let mut out = FuncAttributes { sizes: [0; 3], ints: [0; 29] };
    let p = (&mut out as *mut FuncAttributes).cast::<sys::cudaFuncAttributes>();
    // SAFETY: `p` points to a writable buffer of the struct's size (asserted above); the runtime only writes
    // it; `kernel` is live (the caller's promise).
    unsafe { crate::rt!(cudaFuncGetAttributes(p, kernel.raw() as *const c_void))? };
    Ok(out.ints[5])
}

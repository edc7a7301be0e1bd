//! Asking the driver about a device and about itself, one function per driver call: an attribute, the
//! device's name, the current context's memory, the driver's version.

use super::error::{check, CudaResult};
use super::sys::{self, CUdevice, CUdevice_attribute};

/// `cuDeviceGetAttribute`.
#[inline]
pub fn attribute(device: CUdevice, attribute: CUdevice_attribute) -> CudaResult<i32> {
    let mut v = 0;
    // SAFETY: a valid out-pointer; an invalid handle or attribute is reported as an error code.
    unsafe { check(sys::cuDeviceGetAttribute(&mut v, attribute, device), "cuDeviceGetAttribute")? };
    Ok(v)
}

/// Whether the GPU reads pageable host memory itself (`CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`, HMM or
/// ATS): where it does not, a pageable buffer is read only by the driver's host code, which is what lets the
/// staging probe overwrite one while its copy is in flight.
pub fn reads_pageable_memory(device: CUdevice) -> CudaResult<bool> {
    Ok(attribute(device, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)? == 1)
}

/// `cuDeviceGetName`.
pub fn name(device: CUdevice) -> CudaResult<String> {
    let mut name = [0 as std::ffi::c_char; 256];
    // SAFETY: the buffer holds 256 chars and the driver writes at most `len` including the NUL.
    unsafe { check(sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device), "cuDeviceGetName")? };
    // SAFETY: the driver NUL-terminated the name within the buffer (the call succeeded).
    Ok(unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned())
}

/// `cuMemGetInfo`: free and total bytes of the current context's device. A context must be current.
#[inline]
pub fn memory_free_and_total() -> CudaResult<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: valid out-pointers; without a current context the driver returns an error code.
    unsafe { check(sys::cuMemGetInfo_v2(&mut free, &mut total), "cuMemGetInfo")? };
    Ok((free, total))
}

/// `cuDriverGetVersion`: e.g. 13000 for CUDA 13.0.
pub fn driver_version() -> CudaResult<i32> {
    let mut version = 0;
    // SAFETY: a valid out-pointer.
    unsafe { check(sys::cuDriverGetVersion(&mut version), "cuDriverGetVersion")? };
    Ok(version)
}

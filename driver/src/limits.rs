//! Context limits and function attributes, for the experiments that change or read them while work is in
//! flight: `cuCtxSetLimit`/`cuCtxGetLimit` and `cuFuncSetAttribute`/`cuFuncGetAttribute`. Each wrapper is the
//! one driver call it names (the experiments time them).
#![allow(non_snake_case)]

use super::error::{check, CudaResult};
use super::sys::{CUfunction, CuResult};
use std::ffi::c_int;

/// `CUlimit` values.
pub const CU_LIMIT_STACK_SIZE: c_int = 0;
pub const CU_LIMIT_PRINTF_FIFO_SIZE: c_int = 1;
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` (a `CUfunction_attribute`).
pub const CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;

// In every driver since CUDA 9 (cust_raw's headers declare them, so the link-time stub has them too). The C
// enums `CUlimit` and `CUfunction_attribute` are int-sized.
#[link(name = "cuda")]
extern "C" {
    fn cuCtxSetLimit(limit: c_int, value: usize) -> CuResult;
    fn cuCtxGetLimit(value: *mut usize, limit: c_int) -> CuResult;
    fn cuFuncSetAttribute(f: CUfunction, attribute: c_int, value: c_int) -> CuResult;
    fn cuFuncGetAttribute(value: *mut c_int, attribute: c_int, f: CUfunction) -> CuResult;
}

/// `cuCtxSetLimit` on the current context.
pub fn ctx_set_limit(limit: c_int, value: usize) -> CudaResult<()> {
    // SAFETY: plain values; the driver checks the limit id and answers CUDA_ERROR_INVALID_VALUE or
    // CUDA_ERROR_UNSUPPORTED_LIMIT for one it does not take; without a current context it returns an error.
    check(unsafe { cuCtxSetLimit(limit, value) }, "cuCtxSetLimit")
}

/// `cuCtxGetLimit` of the current context.
pub fn ctx_get_limit(limit: c_int) -> CudaResult<usize> {
    let mut v = 0;
    // SAFETY: valid out-pointer; the limit id is checked by the driver.
    check(unsafe { cuCtxGetLimit(&mut v, limit) }, "cuCtxGetLimit")?;
    Ok(v)
}

/// `cuFuncSetAttribute` of `f`.
///
/// # Safety
/// `f` is a function of a module that is still loaded (as `Gpu::kernels`' are while the `Gpu` lives).
pub unsafe fn set_function_attribute(f: CUfunction, attribute: c_int, value: c_int) -> CudaResult<()> {
    // SAFETY: `f` is live (the caller's promise); plain values otherwise, checked by the driver.
    check(unsafe { cuFuncSetAttribute(f, attribute, value) }, "cuFuncSetAttribute")
}

/// `cuFuncGetAttribute` of `f`.
///
/// # Safety
/// As for `set_function_attribute`.
pub unsafe fn function_attribute(f: CUfunction, attribute: c_int) -> CudaResult<c_int> {
    let mut v = 0;
    // SAFETY: `f` is live (the caller's promise); valid out-pointer.
    check(unsafe { cuFuncGetAttribute(&mut v, attribute, f) }, "cuFuncGetAttribute")?;
    Ok(v)
}

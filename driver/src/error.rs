//! `CudaError`: a failed CUDA call, driver or runtime, and `check()` to turn driver codes into `Result`s.
//!
//! Runtime API calls fail with the same type (`api` says which API's numbering the code is in), so that an
//! experiment's timed call has one result type whichever API it goes through. What an error says (its code's
//! name and sentence, asked of the driver or of the loaded runtime) is `error_text.rs`, above both this module
//! and `runtime`, which makes its errors with this type.

use super::sys::{self, CuResult};
use async_lab_core::api::Api;

/// A failed CUDA call, driver or runtime: the raw code, the call it came from, and the API whose codes it is in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CudaError {
    pub code: CuResult,
    pub call: &'static str,
    pub api: Api,
}

pub type CudaResult<T> = Result<T, CudaError>;

/// Turns a driver result into `Ok(())` or a `CudaError` that remembers `call`.
pub fn check(code: CuResult, call: &'static str) -> CudaResult<()> {
    if code == sys::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(CudaError { code, call, api: Api::Driver })
    }
}

impl CudaError {
    /// A failed driver call.
    pub fn driver(code: CuResult, call: &'static str) -> CudaError {
        CudaError { code, call, api: Api::Driver }
    }
}

/// Calls a driver function and checks its result, naming the call in the error: `drv!(cuCtxSynchronize())`.
#[macro_export]
macro_rules! drv {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        $crate::error::check($crate::sys::$f($($arg),*), stringify!($f))
    };
}

//! `DriverError`: a CUDA result code that names itself, and `check()` to turn codes into `Result`s.
//!
//! Runtime API calls fail with the same type (`api` says which API's numbering the code is in), so that an
//! experiment's timed call has one result type whichever API it goes through.

use super::sys::{self, CuResult};
use async_lab_core::api::Api;
use std::ffi::CStr;
use std::fmt;

/// A failed driver (or runtime) call: the raw code, the call it came from, and the API whose codes it is in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DriverError {
    pub code: CuResult,
    pub call: &'static str,
    pub api: Api,
}

pub type DriverResult<T> = Result<T, DriverError>;

/// Turns a driver result into `Ok(())` or a `DriverError` that remembers `call`.
pub fn check(code: CuResult, call: &'static str) -> DriverResult<()> {
    if code == sys::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(DriverError { code, call, api: Api::Driver })
    }
}

impl DriverError {
    /// The driver's name for the code (`CUDA_ERROR_...`), or the number where the driver can't say.
    pub fn name(&self) -> String {
        if self.api == Api::Runtime {
            return crate::runtime::error_name(self.code);
        }
        lookup(self.code, sys::cuGetErrorName).unwrap_or_else(|| format!("CUresult {}", self.code))
    }

    /// The driver's sentence for the code, where it has one.
    pub fn description(&self) -> Option<String> {
        if self.api == Api::Runtime {
            return crate::runtime::error_text(self.code);
        }
        lookup(self.code, sys::cuGetErrorString)
    }
}

/// Asks the driver for the text behind a code. The stub library answers nothing, so neither do we.
fn lookup(
    code: CuResult,
    f: unsafe extern "C" fn(CuResult, *mut *const std::ffi::c_char) -> CuResult,
) -> Option<String> {
    if code == sys::CUDA_ERROR_STUB_LIBRARY {
        return Some("CUDA_ERROR_STUB_LIBRARY".into());
    }
    let mut text = std::ptr::null();
    // SAFETY: the driver writes a pointer to a static, NUL-terminated string into `text` or leaves it null;
    // it accepts any code, known or not, and returns an error for unknown ones.
    let rc = unsafe { f(code, &mut text) };
    if rc != sys::CUDA_SUCCESS || text.is_null() {
        return None;
    }
    // SAFETY: non-null and pointing at a static NUL-terminated string owned by the driver (see above).
    Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.call, self.name())?;
        if let Some(text) = self.description() {
            write!(f, " ({text})")?;
        }
        Ok(())
    }
}

impl fmt::Debug for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for DriverError {}

impl DriverError {
    /// A failed driver call.
    pub fn driver(code: CuResult, call: &'static str) -> DriverError {
        DriverError { code, call, api: Api::Driver }
    }
}

/// Calls a driver function and checks its result, naming the call in the error: `drv!(cuCtxSynchronize())`.
#[macro_export]
macro_rules! drv {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        $crate::error::check($crate::sys::$f($($arg),*), stringify!($f))
    };
}

//! What a `CudaError` says: its code's name and sentence, asked of the driver for driver codes and of the
//! loaded runtime for runtime codes, and its `Display`.
//!
//! Kept apart from `error.rs` so that the error type sits below `runtime` (whose calls fail with it) while
//! naming a runtime code may ask the runtime.

use crate::error::CudaError;
use crate::sys::{self, CuResult};
use async_lab_core::api::Api;
use std::ffi::CStr;
use std::fmt;

impl CudaError {
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

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.call, self.name())?;
        if let Some(text) = self.description() {
            write!(f, " ({text})")?;
        }
        Ok(())
    }
}

impl fmt::Debug for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for CudaError {}

//! The runtime's batched copy, `cudaMemcpyBatchAsync` (CUDA 12.8), in the form the loaded runtime has.
//!
//! CUDA 13 dropped its failure-index argument (12.8 and 12.9: `..., numAttrs, size_t *failIdx, stream`; 13:
//! `..., numAttrs, stream`), under the same exported name. cudarc's declaration is CUDA 13's, so the call is
//! looked up by name and typed by the loaded runtime's version (`form`); a runtime older than 12.8, or one
//! without the name, leaves the batched-copy experiments *not run*, with the reason. The attributes are the
//! driver's (`cudaMemcpyAttributes` has `CUmemcpyAttributes`' layout and values).

use super::check_code;
use crate::batch::{MemcpyAttributes, SrcAccessOrder};
use crate::stream_handle::StreamHandle;
use crate::CudaResult;
use std::ffi::{c_int, c_void};

type Batch13 = unsafe extern "C" fn(
    *const *mut c_void,
    *const *const c_void,
    *const usize,
    usize,
    *mut MemcpyAttributes,
    *mut usize,
    usize,
    *mut c_void,
) -> c_int;
type Batch128 = unsafe extern "C" fn(
    *mut *mut c_void,
    *mut *mut c_void,
    *mut usize,
    usize,
    *mut MemcpyAttributes,
    *mut usize,
    usize,
    *mut usize,
    *mut c_void,
) -> c_int;

/// Which signature `cudaMemcpyBatchAsync` has in a runtime of a given version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// CUDA 12.8 and 12.9: with the failure index.
    WithFailIndex,
    /// CUDA 13 on: without it.
    Cuda13,
}

/// The form for a runtime of `version` (`cudaRuntimeGetVersion`), or why it has none.
pub fn form(version: i32) -> Result<Form, String> {
    match version {
        v if v >= 13000 => Ok(Form::Cuda13),
        v if v >= 12080 => Ok(Form::WithFailIndex),
        v => Err(format!(
            "the CUDA runtime {} has no cudaMemcpyBatchAsync (CUDA 12.8 or newer)",
            super::version_string(v)
        )),
    }
}

/// The runtime's batched copy, looked up once (outside any timed span).
#[derive(Clone, Copy)]
pub struct RtBatchCopy {
    f: Result<Batch13, Batch128>,
}

impl RtBatchCopy {
    /// Looks the call up in the loaded runtime; an error says why it cannot be used.
    pub fn resolve() -> Result<RtBatchCopy, String> {
        let version = super::get()?.version;
        let f = match form(version)? {
            Form::Cuda13 => Ok(crate::rt_resolve!(cudaMemcpyBatchAsync: Batch13)?),
            Form::WithFailIndex => Err(crate::rt_resolve!(cudaMemcpyBatchAsync: Batch128)?),
        };
        Ok(RtBatchCopy { f })
    }

    /// `cudaMemcpyBatchAsync` of the copies `dsts[i] <- srcs[i]` (`sizes[i]` bytes each; addresses in the
    /// unified address space, host or device), all with `order`, on `stream`, and nothing else.
    ///
    /// # Safety
    /// As for the driver's `BatchCopy::copy`: every range is live memory of its size, untouched and allocated
    /// until the stream is synchronized, except that a source may be changed once the order allows it.
    pub unsafe fn copy(
        &self,
        dsts: &mut [u64],
        srcs: &mut [u64],
        sizes: &mut [usize],
        order: SrcAccessOrder,
        stream: StreamHandle<'_>,
    ) -> CudaResult<()> {
        assert!(dsts.len() == srcs.len() && srcs.len() == sizes.len(), "one size per copy");
        const _: () = assert!(std::mem::size_of::<u64>() == std::mem::size_of::<*mut c_void>());
        let mut attrs = MemcpyAttributes::with_order(order);
        let mut first = 0usize;
        let (n, s) = (dsts.len(), stream.raw().cast::<c_void>());
        // An array of u64 addresses is an array of pointers (same size, checked above).
        let (d, sr) = (dsts.as_mut_ptr().cast::<*mut c_void>(), srcs.as_mut_ptr().cast::<*mut c_void>());
        // SAFETY: the function is the runtime's of that exported name, typed as the loaded runtime's version
        // declares it (`form`); the arrays hold `n` entries each; one attribute set applies from copy 0 on
        // (`attrsIdxs` = [0]); the memory is the caller's promise; the stream is live (its lifetime).
        let rc = unsafe {
            match self.f {
                Ok(v13) => v13(d, sr.cast(), sizes.as_ptr(), n, &mut attrs, &mut first, 1, s),
                Err(v128) => {
                    let mut fail = 0usize;
                    v128(d, sr, sizes.as_mut_ptr(), n, &mut attrs, &mut first, 1, &mut fail, s)
                }
            }
        };
        check_code(rc, "cudaMemcpyBatchAsync")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_follows_the_runtime_version_and_older_runtimes_say_why_not() {
        assert_eq!(form(13000), Ok(Form::Cuda13));
        assert_eq!(form(13040), Ok(Form::Cuda13));
        assert_eq!(form(12080), Ok(Form::WithFailIndex));
        assert_eq!(form(12090), Ok(Form::WithFailIndex));
        let why = form(12060).unwrap_err();
        assert!(why.contains("12.6") && why.contains("cudaMemcpyBatchAsync") && why.contains("12.8"), "{why}");
    }
}

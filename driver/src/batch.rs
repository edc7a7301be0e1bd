//! Batched copies: `cuMemcpyBatchAsync` (CUDA 12.8), many copies in one call, each with a *source access
//! order* that says when the driver may read the source. Looked up at run time (see `resolve`): CUDA 13's form,
//! exported as `cuMemcpyBatchAsync_v2`, has no failure-index argument; 12.8's, exported under the plain name,
//! has one. A driver with neither does not run the family.

use super::error::{check, CudaResult};
use super::stream_handle::StreamHandle;
use super::sys::{CUdeviceptr, CUstream, CuResult};
use super::unified::MemLocation;
use std::ffi::c_uint;

/// `CUmemcpySrcAccessOrder`: when the source may be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrcAccessOrder {
    /// In stream order, like any async copy (`CU_MEMCPY_SRC_ACCESS_ORDER_STREAM`, 1).
    Stream = 1,
    /// Only during the call: every read is done when it returns (`..._DURING_API_CALL`, 2).
    DuringCall = 2,
    /// At any time, also after the call returns (`..._ANY`, 3).
    Any = 3,
}

/// `CUmemcpyAttributes` (CUDA 12.8); the runtime's `cudaMemcpyAttributes` has the same layout and values.
#[repr(C)]
pub(crate) struct MemcpyAttributes {
    pub(crate) src_access_order: i32,
    pub(crate) src_location_hint: MemLocation,
    pub(crate) dst_location_hint: MemLocation,
    pub(crate) flags: c_uint,
}

impl MemcpyAttributes {
    /// Every copy with `order`, no location hints, no flags.
    pub(crate) fn with_order(order: SrcAccessOrder) -> MemcpyAttributes {
        let none = MemLocation { kind: 0, id: 0 };
        MemcpyAttributes { src_access_order: order as i32, src_location_hint: none, dst_location_hint: none, flags: 0 }
    }
}

type BatchV2 = unsafe extern "C" fn(
    *mut CUdeviceptr,
    *mut CUdeviceptr,
    *mut usize,
    usize,
    *mut MemcpyAttributes,
    *mut usize,
    usize,
    CUstream,
) -> CuResult;
type BatchV1 = unsafe extern "C" fn(
    *mut CUdeviceptr,
    *mut CUdeviceptr,
    *mut usize,
    usize,
    *mut MemcpyAttributes,
    *mut usize,
    usize,
    *mut usize,
    CUstream,
) -> CuResult;

/// The driver's batched copy, looked up once (outside any timed span).
#[derive(Clone, Copy)]
pub struct BatchCopy {
    f: Result<BatchV2, BatchV1>,
}

impl BatchCopy {
    pub fn resolve() -> Result<BatchCopy, &'static str> {
        match crate::resolve!(cuMemcpyBatchAsync_v2: BatchV2) {
            Ok(f) => Ok(BatchCopy { f: Ok(f) }),
            Err(_) => crate::resolve!(cuMemcpyBatchAsync: BatchV1)
                .map(|f| BatchCopy { f: Err(f) })
                .map_err(|_| "the driver has no cuMemcpyBatchAsync (CUDA 12.8 or newer)"),
        }
    }

    /// `cuMemcpyBatchAsync` of the copies `dsts[i] <- srcs[i]` (`sizes[i]` bytes each), all with `order`, on
    /// `stream`, and nothing else.
    ///
    /// # Safety
    /// Every range is live memory of its size; the ranges stay untouched and allocated until the stream is
    /// synchronized, except that a source may be changed once the order allows it (`DuringCall`: after the
    /// return).
    pub unsafe fn copy(
        &self,
        dsts: &mut [CUdeviceptr],
        srcs: &mut [CUdeviceptr],
        sizes: &mut [usize],
        order: SrcAccessOrder,
        stream: StreamHandle<'_>,
    ) -> CudaResult<()> {
        assert!(dsts.len() == srcs.len() && srcs.len() == sizes.len(), "one size per copy");
        let mut attrs = MemcpyAttributes::with_order(order);
        let mut first = 0usize;
        let n = dsts.len();
        // SAFETY: the function is the driver's of that exported name and signature; the arrays hold `n` entries
        // each; one attribute set applies from copy 0 on (`attrsIdxs` = [0]); the memory is the caller's promise;
        // the stream is live (its lifetime).
        let rc = unsafe {
            match self.f {
                Ok(v2) => v2(
                    dsts.as_mut_ptr(),
                    srcs.as_mut_ptr(),
                    sizes.as_mut_ptr(),
                    n,
                    &mut attrs,
                    &mut first,
                    1,
                    stream.raw(),
                ),
                Err(v1) => {
                    let mut fail = 0usize;
                    v1(
                        dsts.as_mut_ptr(),
                        srcs.as_mut_ptr(),
                        sizes.as_mut_ptr(),
                        n,
                        &mut attrs,
                        &mut first,
                        1,
                        &mut fail,
                        stream.raw(),
                    )
                }
            }
        };
        check(rc, "cuMemcpyBatchAsync")
    }
}

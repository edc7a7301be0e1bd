//! Stream memory operations: `cuStreamWaitValue32` (a stream waits until a 32-bit word in memory reaches a
//! value) and `cuStreamWriteValue32` (a stream writes one). Looked up at run time (see `resolve`): the `_v2`
//! names (CUDA 11.7), which need no driver module option, first; the plain names, same signature, otherwise.

use super::error::{check, CudaResult};
use super::stream_handle::StreamHandle;
use super::sys::{CUdeviceptr, CUstream, CuResult};
use std::ffi::c_uint;

/// `CU_STREAM_WAIT_VALUE_GEQ`: wait until `(int32)(*addr - value) >= 0`.
pub const CU_STREAM_WAIT_VALUE_GEQ: c_uint = 0;
/// `CU_STREAM_WRITE_VALUE_DEFAULT`.
pub const CU_STREAM_WRITE_VALUE_DEFAULT: c_uint = 0;

type ValueOp = unsafe extern "C" fn(CUstream, CUdeviceptr, u32, c_uint) -> CuResult;

/// The two entry points, looked up once (outside any timed span).
#[derive(Clone, Copy)]
pub struct StreamMemOps {
    wait: ValueOp,
    write: ValueOp,
}

impl StreamMemOps {
    /// Looks both calls up; an error names what the driver lacks.
    pub fn resolve() -> Result<StreamMemOps, &'static str> {
        let wait =
            crate::resolve!(cuStreamWaitValue32_v2: ValueOp).or(crate::resolve!(cuStreamWaitValue32: ValueOp))?;
        let write =
            crate::resolve!(cuStreamWriteValue32_v2: ValueOp).or(crate::resolve!(cuStreamWriteValue32: ValueOp))?;
        Ok(StreamMemOps { wait, write })
    }

    /// `cuStreamWaitValue32(GEQ)`: work enqueued in `stream` after this waits until the word at `addr` reaches
    /// `value`, and nothing else.
    ///
    /// # Safety
    /// `addr` is a 4-byte-aligned device-accessible word that stays allocated until the wait is satisfied and
    /// the stream has moved past it; something must write the value (or the stream waits for ever).
    pub unsafe fn wait_geq(&self, stream: StreamHandle<'_>, addr: CUdeviceptr, value: u32) -> CudaResult<()> {
        // SAFETY: `wait` is the driver's function of that name and signature; the stream is live (its lifetime);
        // the memory is the caller's promise.
        check(unsafe { (self.wait)(stream.raw(), addr, value, CU_STREAM_WAIT_VALUE_GEQ) }, "cuStreamWaitValue32")
    }

    /// `cuStreamWriteValue32`: `stream` writes `value` to the word at `addr`, and nothing else.
    ///
    /// # Safety
    /// As for `wait_geq`: the word stays allocated until the stream has written it.
    pub unsafe fn write(&self, stream: StreamHandle<'_>, addr: CUdeviceptr, value: u32) -> CudaResult<()> {
        // SAFETY: as in `wait_geq`.
        check(unsafe { (self.write)(stream.raw(), addr, value, CU_STREAM_WRITE_VALUE_DEFAULT) }, "cuStreamWriteValue32")
    }

    /// `write` given raw handles, for the watchdog thread (which cannot hold a borrowed `StreamHandle`).
    ///
    /// # Safety
    /// `stream` is a live stream of the context current on the calling thread; the word as for `write`.
    pub unsafe fn write_raw(&self, stream: CUstream, addr: CUdeviceptr, value: u32) -> CudaResult<()> {
        // SAFETY: the caller's promises above.
        check(unsafe { (self.write)(stream, addr, value, CU_STREAM_WRITE_VALUE_DEFAULT) }, "cuStreamWriteValue32")
    }
}

//! A stream to put work on, borrowed: what every function that enqueues work takes, from the kernel launches
//! of `gpu.rs` to the copies of `memory.rs` and the runtime's calls. The streams it borrows are made by
//! `stream.rs` (or by the runtime); the two default streams need no owner.

use super::error::CudaResult;
use super::sys::{self, CUstream};
use std::marker::PhantomData;

/// A stream to put work on: borrowed from a live `Stream`, or one of the two default streams, which always
/// exist. Functions that take one need no `unsafe`: the lifetime keeps the stream alive.
#[derive(Clone, Copy, Debug)]
pub struct StreamHandle<'s> {
    raw: CUstream,
    _stream: PhantomData<&'s ()>,
}

impl StreamHandle<'static> {
    /// The legacy default stream.
    pub const LEGACY: StreamHandle<'static> = StreamHandle { raw: sys::CU_STREAM_LEGACY, _stream: PhantomData };
}

impl<'s> StreamHandle<'s> {
    /// The handle of a stream that the caller keeps alive for `'s` (`Stream::handle` ties `'s` to its borrow
    /// of the stream).
    pub(crate) fn borrowed(raw: CUstream) -> StreamHandle<'s> {
        StreamHandle { raw, _stream: PhantomData }
    }

    /// A handle for a stream made outside `Stream` (the runtime's `cudaStreamCreate`, in the shared primary
    /// context).
    ///
    /// # Safety
    /// `raw` must be a stream of the primary context, or a default stream, that is not destroyed during `'s`.
    pub unsafe fn from_raw(raw: CUstream) -> StreamHandle<'s> {
        StreamHandle { raw, _stream: PhantomData }
    }
}

impl StreamHandle<'_> {
    pub fn raw(self) -> CUstream {
        self.raw
    }

    /// Whether all work enqueued on the stream so far has finished (`cuStreamQuery`).
    ///
    /// Right after a call returns this is the way to ask whether the call's work is done: an event recorded
    /// after the return completes only once the GPU has processed it, microseconds later, even when the
    /// call's work had already finished.
    pub fn is_idle(self) -> CudaResult<bool> {
        // SAFETY: the handle is a live stream (its lifetime says so) or a default stream.
        match unsafe { sys::cuStreamQuery(self.raw) } {
            sys::CUDA_SUCCESS => Ok(true),
            sys::CUDA_ERROR_NOT_READY => Ok(false),
            rc => Err(crate::CudaError::driver(rc, "cuStreamQuery")),
        }
    }
}

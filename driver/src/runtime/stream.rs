//! The runtime's stream calls the experiments time, one function per runtime call, on streams of the primary
//! context the runtime shares with the driver; and a stream the runtime makes itself.

use crate::gpu::Gpu;
use crate::runtime::{stream_callback, sys, RawStreamCallback};
use crate::stream::HostFn;
use crate::stream_handle::StreamHandle;
use crate::CudaError;
use std::ffi::c_void;
use std::marker::PhantomData;

/// `cudaLaunchHostFunc`: `f(user)` runs on a runtime thread once the work ahead of it in `stream` is done.
///
/// # Safety
/// `f` must be sound to call with `user` from another thread at any later time (whatever `user` points at
/// must outlive every pending call).
#[inline]
pub unsafe fn rt_launch_host_func(stream: StreamHandle<'_>, f: HostFn, user: *mut c_void) -> Result<(), CudaError> {
    // SAFETY: the stream is live (its lifetime) and of the shared context; the caller vouches for `f` and `user`.
    unsafe { crate::rt!(cudaLaunchHostFunc(stream.raw().cast(), Some(f), user)) }
}

/// `cudaStreamAddCallback` (flags 0, the only value allowed): as `rt_launch_host_func`, in the callback form.
///
/// # Safety
/// As for `rt_launch_host_func`.
#[inline]
pub unsafe fn rt_stream_add_callback(
    stream: StreamHandle<'_>,
    f: RawStreamCallback,
    user: *mut c_void,
) -> Result<(), CudaError> {
    // SAFETY: the stream is live (its lifetime) and of the shared context; the caller vouches for `f` and `user`.
    unsafe { crate::rt!(cudaStreamAddCallback(stream.raw().cast(), stream_callback(f), user, 0)) }
}

/// `cudaStreamDestroy` of a stream the driver created, now, and how long the call took (the SD1 experiment
/// through the runtime; the driver's is `Stream::destroy_timed`).
pub fn stream_destroy_timed(stream: crate::stream::Stream<'_>) -> Result<crate::measure::Timed, CudaError> {
    let raw = stream.disown();
    let t = crate::measure::Stopwatch::start();
    // SAFETY: the stream was created by the driver and is destroyed exactly once: `disown` handed it over. The
    // runtime shares its (primary) context, so its destroy call accepts the handle.
    let result = unsafe { crate::rt!(cudaStreamDestroy(raw.cast())) };
    let elapsed = t.stop();
    result?;
    Ok(elapsed)
}

/// `cudaStreamSynchronize`: waits until the work on `stream` has finished.
#[inline]
pub fn stream_synchronize(stream: StreamHandle<'_>) -> Result<(), CudaError> {
    // SAFETY: the stream is live (its lifetime) and of the primary context the runtime uses.
    unsafe { crate::rt!(cudaStreamSynchronize(stream.raw().cast())) }
}

/// `cudaEventRecord`: records `event` (a driver event of the primary context the runtime uses) in `stream`.
#[inline]
pub fn event_record(event: &crate::stream::Event<'_>, stream: StreamHandle<'_>) -> Result<(), CudaError> {
    // SAFETY: the event and the stream are live (borrowed) and of the primary context the runtime uses.
    unsafe { crate::rt!(cudaEventRecord(event.raw().cast(), stream.raw().cast())) }
}

/// `cudaEventSynchronize`: waits until the work the event's last record captured has finished.
#[inline]
pub fn event_synchronize(event: &crate::stream::Event<'_>) -> Result<(), CudaError> {
    // SAFETY: the event is live (borrowed) and of the primary context the runtime uses.
    unsafe { crate::rt!(cudaEventSynchronize(event.raw().cast())) }
}

/// A stream made by the runtime, as a runtime program makes it: `cudaStreamCreateWithFlags(cudaStreamNonBlocking)`
/// on the runtime's current device (its primary context), destroyed on drop.
pub struct RtStream<'g> {
    raw: sys::cudaStream_t,
    _gpu: PhantomData<&'g Gpu>,
}

impl<'g> RtStream<'g> {
    /// Needs `gpu` to be the runtime's current device (`set_device`).
    pub fn new_non_blocking(_gpu: &'g Gpu) -> Result<RtStream<'g>, CudaError> {
        let mut raw: sys::cudaStream_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the runtime answers an error when it has no device.
        unsafe { crate::rt!(cudaStreamCreateWithFlags(&mut raw, sys::cudaStreamNonBlocking))? };
        Ok(RtStream { raw, _gpu: PhantomData })
    }

    /// A handle for the functions that take one (a `cudaStream_t` is a `CUstream`); it cannot outlive the stream.
    pub fn handle(&self) -> StreamHandle<'_> {
        // SAFETY: a stream of the primary context (the runtime's current device's), destroyed only in `drop`,
        // which cannot run while `self` is borrowed.
        unsafe { StreamHandle::from_raw(self.raw.cast()) }
    }

    /// `cudaStreamSynchronize`.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        stream_synchronize(self.handle())
    }
}

impl Drop for RtStream<'_> {
    fn drop(&mut self) {
        // SAFETY: created in `new_non_blocking`, destroyed once here; the GPU's context outlives `'g`.
        unsafe { sys::cudaStreamDestroy(self.raw) };
    }
}

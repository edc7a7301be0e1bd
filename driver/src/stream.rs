//! Streams of the four kinds the experiments compare, and events to time and query them.

use super::error::{check, CudaResult};
use super::gpu::Gpu;
use super::stream_handle::StreamHandle;
use super::sys::{self, CUevent, CUstream};
use std::ffi::c_void;
use std::marker::PhantomData;

pub use async_lab_core::setup::StreamKind;

/// A stream handle; created streams are destroyed on drop, the two default streams are not.
pub struct Stream<'g> {
    raw: CUstream,
    owned: bool,
    pub kind: StreamKind,
    gpu: &'g Gpu,
}

impl<'g> Stream<'g> {
    pub fn new(gpu: &'g Gpu, kind: StreamKind) -> CudaResult<Stream<'g>> {
        gpu.bind()?;
        let (raw, owned) = match kind {
            StreamKind::Legacy => (sys::CU_STREAM_LEGACY, false),
            StreamKind::PerThread => (sys::CU_STREAM_PER_THREAD, false),
            StreamKind::NonBlocking | StreamKind::Blocking => {
                let flags =
                    if kind == StreamKind::NonBlocking { sys::CU_STREAM_NON_BLOCKING } else { sys::CU_STREAM_DEFAULT };
                let mut raw = std::ptr::null_mut();
                // SAFETY: `raw` is a valid out-pointer; `gpu`'s context was just made current and is alive for 'g.
                unsafe { check(sys::cuStreamCreate(&mut raw, flags), "cuStreamCreate")? };
                (raw, true)
            }
        };
        Ok(Stream { raw, owned, kind, gpu })
    }

    pub fn raw(&self) -> CUstream {
        self.raw
    }

    /// A handle for functions that enqueue work; it cannot outlive the stream.
    pub fn handle(&self) -> StreamHandle<'_> {
        StreamHandle::borrowed(self.raw)
    }

    pub fn synchronize(&self) -> CudaResult<()> {
        // SAFETY: `raw` is a live stream of the current context, or one of the two default-stream handles.
        unsafe { check(sys::cuStreamSynchronize(self.raw), "cuStreamSynchronize") }
    }

    /// Destroys the stream now (`cuStreamDestroy`) and returns how long the call took (the SD1 experiment; the
    /// runtime's is `runtime::stream::stream_destroy_timed`).
    pub fn destroy_timed(self) -> CudaResult<crate::measure::Timed> {
        let raw = self.disown();
        let t = crate::measure::Stopwatch::start();
        // SAFETY: the stream was created by us and is destroyed exactly once: `disown` handed it over.
        let result = unsafe { check(sys::cuStreamDestroy_v2(raw), "cuStreamDestroy") };
        let elapsed = t.stop();
        result?;
        Ok(elapsed)
    }

    /// A created stream handed over, for the caller to destroy once: its drop no longer does.
    pub(crate) fn disown(mut self) -> CUstream {
        assert!(self.owned, "only created streams can be destroyed");
        self.owned = false;
        self.raw
    }
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        if self.owned {
            let _ = self.gpu.bind();
            // SAFETY: created by cuStreamCreate in this (still alive, now current) context and not destroyed before.
            unsafe { sys::cuStreamDestroy_v2(self.raw) };
        }
    }
}

/// A CUDA event (timing enabled).
pub struct Event<'g> {
    raw: CUevent,
    gpu: &'g Gpu,
}

impl<'g> Event<'g> {
    pub fn new(gpu: &'g Gpu) -> CudaResult<Event<'g>> {
        Self::with_flags(gpu, sys::CU_EVENT_DEFAULT)
    }

    pub fn with_flags(gpu: &'g Gpu, flags: u32) -> CudaResult<Event<'g>> {
        gpu.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the context is alive for 'g.
        unsafe { check(sys::cuEventCreate(&mut raw, flags), "cuEventCreate")? };
        Ok(Event { raw, gpu })
    }

    pub fn raw(&self) -> CUevent {
        self.raw
    }

    pub fn record(&self, stream: StreamHandle<'_>) -> CudaResult<()> {
        // SAFETY: both handles are live in the current context (the stream's lifetime guarantees it).
        unsafe { check(sys::cuEventRecord(self.raw, stream.raw()), "cuEventRecord") }
    }

    /// Whether all work captured by the last `record` has finished.
    pub fn is_done(&self) -> CudaResult<bool> {
        // SAFETY: live event handle.
        match unsafe { sys::cuEventQuery(self.raw) } {
            sys::CUDA_SUCCESS => Ok(true),
            sys::CUDA_ERROR_NOT_READY => Ok(false),
            rc => Err(crate::CudaError::driver(rc, "cuEventQuery")),
        }
    }

    pub fn synchronize(&self) -> CudaResult<()> {
        // SAFETY: live event handle.
        unsafe { check(sys::cuEventSynchronize(self.raw), "cuEventSynchronize") }
    }

    /// Nanoseconds from `start` to `self` (both recorded and finished).
    pub fn ns_since(&self, start: &Event<'_>) -> CudaResult<u64> {
        let mut ms = 0f32;
        // SAFETY: valid out-pointer; both events are live, recorded and complete (callers synchronize first).
        unsafe { check(sys::cuEventElapsedTime(&mut ms, start.raw, self.raw), "cuEventElapsedTime")? };
        Ok((ms as f64 * 1e6).max(0.0) as u64)
    }

    /// Signed nanoseconds from `start` to `self` (negative when `self` completed first).
    pub fn signed_ns_since(&self, start: &Event<'_>) -> CudaResult<i64> {
        let mut ms = 0f32;
        // SAFETY: as in `ns_since`.
        unsafe { check(sys::cuEventElapsedTime(&mut ms, start.raw, self.raw), "cuEventElapsedTime")? };
        Ok((ms as f64 * 1e6) as i64)
    }
}

impl<'g> Event<'g> {
    /// A handle another thread can poll (`EventRef::is_done`); it cannot outlive the event.
    pub fn shared(&self) -> EventRef<'_> {
        EventRef { raw: self.raw, _event: PhantomData }
    }
}

/// A borrowed event that may cross to another thread, to be polled there.
#[derive(Clone, Copy, Debug)]
pub struct EventRef<'e> {
    raw: CUevent,
    _event: PhantomData<&'e ()>,
}

// SAFETY: the driver's event calls are thread-safe, the handle is only ever queried (never destroyed) through
// this type, and its lifetime keeps the event alive.
unsafe impl Send for EventRef<'_> {}

impl EventRef<'_> {
    /// The same handle without the borrow, for a thread that is not scoped (one the owner joins by hand).
    ///
    /// # Safety
    /// The event must stay alive (not be destroyed) for as long as the returned handle is used.
    pub unsafe fn unbounded(self) -> EventRef<'static> {
        EventRef { raw: self.raw, _event: PhantomData }
    }

    /// `cuEventQuery`: whether all work captured by the event's last record has finished.
    #[inline]
    pub fn is_done(self) -> CudaResult<bool> {
        // SAFETY: a live event handle (the lifetime says so).
        match unsafe { sys::cuEventQuery(self.raw) } {
            sys::CUDA_SUCCESS => Ok(true),
            sys::CUDA_ERROR_NOT_READY => Ok(false),
            rc => Err(crate::CudaError::driver(rc, "cuEventQuery")),
        }
    }
}

/// A host function for `launch_host_func`: the driver calls it with the user pointer on a thread of its own.
pub type HostFn = unsafe extern "C" fn(user: *mut c_void);

/// A stream callback for `stream_add_callback`: (stream, status as a raw code, user pointer).
pub type StreamCallback = unsafe extern "C" fn(stream: CUstream, status: sys::CuResult, user: *mut c_void);

/// `cuLaunchHostFunc`: `f(user)` runs on a driver thread once the work ahead of it in `stream` is done.
///
/// # Safety
/// `f` must be sound to call with `user` from another thread at any later time (whatever `user` points at
/// must outlive every pending call).
#[inline]
pub unsafe fn launch_host_func(stream: StreamHandle<'_>, f: HostFn, user: *mut c_void) -> CudaResult<()> {
    // SAFETY: the stream is live (its lifetime); the caller vouches for `f` and `user`.
    unsafe { check(sys::cuLaunchHostFunc(stream.raw(), Some(f), user), "cuLaunchHostFunc") }
}

/// `cuStreamAddCallback` (flags 0, the only value allowed): as `launch_host_func`, in the callback form.
///
/// # Safety
/// As for `launch_host_func`.
#[inline]
pub unsafe fn stream_add_callback(stream: StreamHandle<'_>, f: StreamCallback, user: *mut c_void) -> CudaResult<()> {
    // SAFETY: the stream is live (its lifetime); the caller vouches for `f` and `user`.
    unsafe { check(sys::cuStreamAddCallback(stream.raw(), Some(f), user, 0), "cuStreamAddCallback") }
}

impl Drop for Event<'_> {
    fn drop(&mut self) {
        let _ = self.gpu.bind();
        // SAFETY: created by cuEventCreate in this (still alive, now current) context and destroyed only here.
        unsafe { sys::cuEventDestroy_v2(self.raw) };
    }
}

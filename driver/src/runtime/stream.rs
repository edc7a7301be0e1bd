//! The runtime's host-function calls the experiments time, one function per runtime call, on driver streams
//! of the primary context the runtime shares.

use crate::runtime::{stream_callback, RawStreamCallback};
use crate::stream::{HostFn, StreamHandle};
use crate::DriverError;
use std::ffi::c_void;

/// `cudaLaunchHostFunc`: `f(user)` runs on a runtime thread once the work ahead of it in `stream` is done.
///
/// # Safety
/// `f` must be sound to call with `user` from another thread at any later time (whatever `user` points at
/// must outlive every pending call).
#[inline]
pub unsafe fn launch_host_func(stream: StreamHandle<'_>, f: HostFn, user: *mut c_void) -> Result<(), DriverError> {
    // SAFETY: the stream is live (its lifetime) and of the shared context; the caller vouches for `f` and `user`.
    unsafe { crate::rt!(cudaLaunchHostFunc(stream.raw().cast(), Some(f), user)) }
}

/// `cudaStreamAddCallback` (flags 0, the only value allowed): as `launch_host_func`, in the callback form.
///
/// # Safety
/// As for `launch_host_func`.
#[inline]
pub unsafe fn stream_add_callback(
    stream: StreamHandle<'_>,
    f: RawStreamCallback,
    user: *mut c_void,
) -> Result<(), DriverError> {
    // SAFETY: the stream is live (its lifetime) and of the shared context; the caller vouches for `f` and `user`.
    unsafe { crate::rt!(cudaStreamAddCallback(stream.raw().cast(), stream_callback(f), user, 0)) }
}

/// `cudaStreamSynchronize`: waits until the work on `stream` has finished.
#[inline]
pub fn stream_synchronize(stream: StreamHandle<'_>) -> Result<(), DriverError> {
    // SAFETY: the stream is live (its lifetime) and of the primary context the runtime uses.
    unsafe { crate::rt!(cudaStreamSynchronize(stream.raw().cast())) }
}

/// `cudaEventSynchronize`: waits until the work the event's last record captured has finished.
#[inline]
pub fn event_synchronize(event: &crate::stream::Event<'_>) -> Result<(), DriverError> {
    // SAFETY: the event is live (borrowed) and of the primary context the runtime uses.
    unsafe { crate::rt!(cudaEventSynchronize(event.raw().cast())) }
}

//! The runtime's unified-memory hints, `cudaMemPrefetchAsync` and `cudaMemAdvise`, in the form the loaded
//! runtime has.
//!
//! CUDA 13 changed both signatures: the destination (or the device an advice names) became a
//! `cudaMemLocation` (`{type, id}`; prefetch also gained a flags word). CUDA 12.x's plain names take an `int`
//! device (`cudaCpuDeviceId`, -1, for the host); 12.2 added `_v2` names with the location. cudarc's
//! declarations are CUDA 13's, so calling a 12.x runtime's plain names through them would pass the wrong
//! arguments. Neither call goes through cudarc: each is looked up by name, with the signature that name has in
//! the loaded runtime's version: on 13 and later the plain names with a location (`located_plain_names`); on
//! 12.2 to 12.9 the `_v2` names with a location; on 12.0 and 12.1 the plain names with a device ordinal.

use super::check_code;
use crate::stream_handle::StreamHandle;
use crate::unified::{MemLocation, Place};
use crate::CudaResult;
use std::ffi::{c_int, c_uint, c_void};

/// The location forms: `(ptr, bytes, location, flags, stream)` and `(ptr, bytes, advice, location)`.
type PrefetchLocated = unsafe extern "C" fn(*const c_void, usize, MemLocation, c_uint, *mut c_void) -> c_int;
type AdviseLocated = unsafe extern "C" fn(*const c_void, usize, c_int, MemLocation) -> c_int;
/// CUDA 12.x's plain names: `(ptr, bytes, device, stream)` and `(ptr, bytes, advice, device)`.
type PrefetchOrdinal = unsafe extern "C" fn(*const c_void, usize, c_int, *mut c_void) -> c_int;
type AdviseOrdinal = unsafe extern "C" fn(*const c_void, usize, c_int, c_int) -> c_int;

/// Whether a runtime of `version` (`cudaRuntimeGetVersion`) gives the plain names the location signature.
pub fn located_plain_names(version: i32) -> bool {
    version >= 13000
}

/// The runtime's prefetch and advice entry points, looked up once (outside any timed span).
#[derive(Clone, Copy)]
pub struct RtHints {
    prefetch: Result<PrefetchLocated, PrefetchOrdinal>,
    advise: Result<AdviseLocated, AdviseOrdinal>,
    /// The exported names used, for the record ("cudaMemPrefetchAsync_v2", ...).
    pub prefetch_name: &'static str,
    pub advise_name: &'static str,
    /// Whether both take a `cudaMemLocation` (else a device ordinal).
    pub located: bool,
}

impl RtHints {
    /// Looks both calls up in the loaded runtime; an error names what it lacks. Each name is used only in the
    /// versions whose headers declare it with the signature used: on 13 and later the plain names (with a
    /// location), on 12.2 to 12.9 the `_v2` names (with a location), on 12.0 and 12.1 the plain names (with a
    /// device ordinal).
    pub fn resolve() -> Result<RtHints, &'static str> {
        let version = super::get()?.version;
        if located_plain_names(version) {
            // CUDA 13 on: the plain names are the ones its headers declare, with a location.
            return Ok(RtHints {
                prefetch: Ok(crate::rt_resolve!(cudaMemPrefetchAsync: PrefetchLocated)?),
                advise: Ok(crate::rt_resolve!(cudaMemAdvise: AdviseLocated)?),
                prefetch_name: "cudaMemPrefetchAsync",
                advise_name: "cudaMemAdvise",
                located: true,
            });
        }
        let v2 = (
            crate::rt_resolve!(cudaMemPrefetchAsync_v2: PrefetchLocated),
            crate::rt_resolve!(cudaMemAdvise_v2: AdviseLocated),
        );
        let hints = match v2 {
            // CUDA 12.2 to 12.9: the `_v2` names take the location.
            (Ok(prefetch), Ok(advise)) => RtHints {
                prefetch: Ok(prefetch),
                advise: Ok(advise),
                prefetch_name: "cudaMemPrefetchAsync_v2",
                advise_name: "cudaMemAdvise_v2",
                located: true,
            },
            // CUDA 12.0 and 12.1: only the plain names, which there take a device ordinal.
            _ => RtHints {
                prefetch: Err(crate::rt_resolve!(cudaMemPrefetchAsync: PrefetchOrdinal)?),
                advise: Err(crate::rt_resolve!(cudaMemAdvise: AdviseOrdinal)?),
                prefetch_name: "cudaMemPrefetchAsync",
                advise_name: "cudaMemAdvise",
                located: false,
            },
        };
        Ok(hints)
    }

    /// `cudaMemPrefetchAsync` of `bytes` at `ptr` to `to` (a runtime device ordinal, or the host), in
    /// `stream`, and nothing else.
    ///
    /// # Safety
    /// `ptr..ptr+bytes` is managed (or, where the GPU can access it, pageable) memory that stays allocated until
    /// the stream has finished the prefetch.
    pub unsafe fn prefetch(&self, ptr: u64, bytes: usize, to: Place, stream: StreamHandle<'_>) -> CudaResult<()> {
        let (p, s) = (ptr as *const c_void, stream.raw().cast::<c_void>());
        // SAFETY: each pointer is the runtime's function of the exported name chosen in `resolve`, typed as that
        // name is declared in the loaded runtime's version; the stream is live (its lifetime) and of the shared
        // context; the memory is the caller's promise.
        let rc = unsafe {
            match self.prefetch {
                Ok(located) => located(p, bytes, to.location(), 0, s),
                Err(ordinal) => ordinal(p, bytes, to.ordinal(), s),
            }
        };
        check_code(rc, "cudaMemPrefetchAsync")
    }

    /// `cudaMemAdvise` of `advice` for `bytes` at `ptr`, naming `place`, and nothing else. `advice` is a
    /// `cudaMemoryAdvise` value (the same numbers as the driver's `CUmem_advise`).
    ///
    /// # Safety
    /// `ptr..ptr+bytes` is managed memory.
    pub unsafe fn advise(&self, ptr: u64, bytes: usize, advice: i32, place: Place) -> CudaResult<()> {
        let p = ptr as *const c_void;
        // SAFETY: as in `prefetch`; an advice only changes how the runtime treats the range.
        let rc = unsafe {
            match self.advise {
                Ok(located) => located(p, bytes, advice, place.location()),
                Err(ordinal) => ordinal(p, bytes, advice, place.ordinal()),
            }
        };
        check_code(rc, "cudaMemAdvise")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cuda_13_and_later_give_the_plain_names_a_location() {
        assert!(located_plain_names(13000) && located_plain_names(13040));
        assert!(!located_plain_names(12090) && !located_plain_names(12020) && !located_plain_names(12000));
    }

    #[test]
    fn the_location_and_the_ordinal_say_the_same_place() {
        // cudaMemLocationTypeDevice = 1, cudaMemLocationTypeHost = 2, cudaCpuDeviceId = -1.
        let d = Place::Device(3).location();
        assert_eq!((d.kind, d.id), (1, 3));
        assert_eq!(Place::Host.location().kind, 2);
        assert_eq!(Place::Host.ordinal(), -1);
        assert_eq!(std::mem::size_of::<MemLocation>(), 8);
    }
}

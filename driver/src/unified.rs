//! Unified-memory hints: `cuMemPrefetchAsync` and `cuMemAdvise`, in the form the driver has.
//!
//! CUDA 12.2 added `_v2` forms that name a destination as a `CUmemLocation` (device or host); CUDA 13 gave the
//! plain names that signature. The exported `_v2` names keep it on every driver since 12.2, so they are looked
//! up first; on an older driver the exported plain names, which there take a device ordinal (`CU_DEVICE_CPU`,
//! -1, for the host), are used. Both are looked up at run time (`resolve`), never linked, so the binary starts
//! on any driver and an experiment lacking both is *not run*.

use super::error::{check, CudaResult};
use super::stream_handle::StreamHandle;
use super::sys::{CUdevice, CUdeviceptr, CUstream, CuResult};
use std::ffi::c_uint;

/// `CUmemLocation` (CUDA 11.2): a kind of place and its id, passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MemLocation {
    pub kind: i32,
    pub id: i32,
}

/// `CU_MEM_LOCATION_TYPE_DEVICE` and `CU_MEM_LOCATION_TYPE_HOST` (the latter CUDA 12.2).
pub const CU_MEM_LOCATION_TYPE_DEVICE: i32 = 1;
pub const CU_MEM_LOCATION_TYPE_HOST: i32 = 2;
/// The host as a "device" ordinal in the calls' older forms.
pub const CU_DEVICE_CPU: CUdevice = -1;

/// `CUmem_advise` values.
pub const CU_MEM_ADVISE_SET_READ_MOSTLY: i32 = 1;
pub const CU_MEM_ADVISE_UNSET_READ_MOSTLY: i32 = 2;
pub const CU_MEM_ADVISE_SET_PREFERRED_LOCATION: i32 = 3;
pub const CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: i32 = 4;
pub const CU_MEM_ADVISE_SET_ACCESSED_BY: i32 = 5;
pub const CU_MEM_ADVISE_UNSET_ACCESSED_BY: i32 = 6;

type PrefetchV2 = unsafe extern "C" fn(CUdeviceptr, usize, MemLocation, c_uint, CUstream) -> CuResult;
type PrefetchV1 = unsafe extern "C" fn(CUdeviceptr, usize, CUdevice, CUstream) -> CuResult;
type AdviseV2 = unsafe extern "C" fn(CUdeviceptr, usize, i32, MemLocation) -> CuResult;
type AdviseV1 = unsafe extern "C" fn(CUdeviceptr, usize, i32, CUdevice) -> CuResult;

/// Where prefetched pages go, or whom an advice names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Device(CUdevice),
    Host,
}

impl Place {
    /// As a `CUmemLocation` (the runtime's `cudaMemLocation` has the same layout).
    pub(crate) fn location(self) -> MemLocation {
        match self {
            Place::Device(d) => MemLocation { kind: CU_MEM_LOCATION_TYPE_DEVICE, id: d },
            Place::Host => MemLocation { kind: CU_MEM_LOCATION_TYPE_HOST, id: 0 },
        }
    }

    /// As the older forms' device ordinal (`CU_DEVICE_CPU`, like the runtime's `cudaCpuDeviceId`, is -1).
    pub(crate) fn ordinal(self) -> CUdevice {
        match self {
            Place::Device(d) => d,
            Place::Host => CU_DEVICE_CPU,
        }
    }
}

/// The driver's prefetch and advice entry points, looked up once (outside any timed span).
#[derive(Clone, Copy)]
pub struct Hints {
    prefetch: Result<PrefetchV2, PrefetchV1>,
    advise: Result<AdviseV2, AdviseV1>,
    /// The exported names used, for the record ("cuMemPrefetchAsync_v2", ...).
    pub prefetch_name: &'static str,
    pub advise_name: &'static str,
}

impl Hints {
    /// Looks both calls up; an error names what the driver lacks.
    pub fn resolve() -> Result<Hints, &'static str> {
        let (prefetch, prefetch_name) = match crate::resolve!(cuMemPrefetchAsync_v2: PrefetchV2) {
            Ok(f) => (Ok(f), "cuMemPrefetchAsync_v2"),
            Err(_) => (Err(crate::resolve!(cuMemPrefetchAsync: PrefetchV1)?), "cuMemPrefetchAsync"),
        };
        let (advise, advise_name) = match crate::resolve!(cuMemAdvise_v2: AdviseV2) {
            Ok(f) => (Ok(f), "cuMemAdvise_v2"),
            Err(_) => (Err(crate::resolve!(cuMemAdvise: AdviseV1)?), "cuMemAdvise"),
        };
        Ok(Hints { prefetch, advise, prefetch_name, advise_name })
    }

    /// `cuMemPrefetchAsync` of `bytes` at `ptr` to `to`, in `stream`, and nothing else.
    ///
    /// # Safety
    /// `ptr..ptr+bytes` is managed memory that stays allocated until the stream has finished the prefetch.
    pub unsafe fn prefetch(
        &self,
        ptr: CUdeviceptr,
        bytes: usize,
        to: Place,
        stream: StreamHandle<'_>,
    ) -> CudaResult<()> {
        // SAFETY: each pointer is the driver's function of that exported name, typed as its header declares it;
        // the stream is live (its lifetime); the memory is the caller's promise.
        let rc = unsafe {
            match self.prefetch {
                Ok(v2) => v2(ptr, bytes, to.location(), 0, stream.raw()),
                Err(v1) => v1(ptr, bytes, to.ordinal(), stream.raw()),
            }
        };
        check(rc, "cuMemPrefetchAsync")
    }

    /// `cuMemAdvise(advice)` for `bytes` at `ptr`, naming `place`, and nothing else.
    ///
    /// # Safety
    /// `ptr..ptr+bytes` is managed memory.
    pub unsafe fn advise(&self, ptr: CUdeviceptr, bytes: usize, advice: i32, place: Place) -> CudaResult<()> {
        // SAFETY: as in `prefetch`; an advice only changes how the driver treats the range.
        let rc = unsafe {
            match self.advise {
                Ok(v2) => v2(ptr, bytes, advice, place.location()),
                Err(v1) => v1(ptr, bytes, advice, place.ordinal()),
            }
        };
        check(rc, "cuMemAdvise")
    }
}

//! The runtime's allocation, copy and memset calls the experiments time, one function per runtime call; and
//! buffers allocated the way a runtime program allocates them.
//!
//! Each is the `cuda*` call and nothing else (the runtime must have been loaded and its device set first, by
//! `set_device`), so a measured span holds exactly the one call. Streams are driver streams of the primary
//! context the runtime shares (see the module above).

use crate::gpu::Gpu;
use crate::memory::{HostKind, PageableBuffer};
use crate::runtime::sys;
use crate::stream_handle::StreamHandle;
use crate::CudaError;
use std::ffi::{c_int, c_void};
use std::marker::PhantomData;

type RtResult<T> = Result<T, CudaError>;

fn rt_stream(stream: StreamHandle<'_>) -> sys::cudaStream_t {
    stream.raw().cast()
}

/// `cudaMalloc`: `n` bytes of device memory.
#[inline]
pub fn malloc(n: usize) -> RtResult<u64> {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: `p` is a valid out-pointer.
    unsafe { crate::rt!(cudaMalloc(&mut p, n))? };
    Ok(p as u64)
}

/// `cudaFree`.
///
/// # Safety
/// `ptr` must come from `cudaMalloc`/`cudaMallocManaged` (or the driver's counterparts), not be freed yet,
/// and not be used again.
#[inline]
pub unsafe fn free(ptr: u64) -> RtResult<()> {
    // SAFETY: the caller promises a live allocation that nothing uses any more.
    unsafe { crate::rt!(cudaFree(ptr as *mut c_void)) }
}

/// `cudaMallocHost`: `n` bytes of pinned host memory.
#[inline]
pub fn malloc_host(n: usize) -> RtResult<*mut c_void> {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: `p` is a valid out-pointer.
    unsafe { crate::rt!(cudaMallocHost(&mut p, n))? };
    Ok(p)
}

/// `cudaFreeHost`.
///
/// # Safety
/// `p` must be pinned memory from `cudaMallocHost` (or `cuMemAllocHost`), not freed yet, not used again.
#[inline]
pub unsafe fn free_host(p: *mut c_void) -> RtResult<()> {
    // SAFETY: the caller promises a live pinned allocation that nothing uses any more.
    unsafe { crate::rt!(cudaFreeHost(p)) }
}

/// `cudaHostRegister`.
///
/// # Safety
/// `p..p+n` must be live host memory that stays allocated until it is unregistered.
#[inline]
pub unsafe fn host_register(p: *mut c_void, n: usize, flags: u32) -> RtResult<()> {
    // SAFETY: the caller promises the range is live and outlives the registration.
    unsafe { crate::rt!(cudaHostRegister(p, n, flags)) }
}

/// `cudaHostUnregister`.
///
/// # Safety
/// `p` must be registered, and no pending GPU work may still use it.
#[inline]
pub unsafe fn host_unregister(p: *mut c_void) -> RtResult<()> {
    // SAFETY: the caller promises a registered range that no GPU work uses any more.
    unsafe { crate::rt!(cudaHostUnregister(p)) }
}

/// `cudaMallocManaged`: `n` bytes of managed memory (`flags`: 1 is `cudaMemAttachGlobal`).
#[inline]
pub fn malloc_managed(n: usize, flags: u32) -> RtResult<u64> {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: `p` is a valid out-pointer.
    unsafe { crate::rt!(cudaMallocManaged(&mut p, n, flags))? };
    Ok(p as u64)
}

/// `cudaMallocAsync`: `n` bytes from the device's current pool, ordered on `stream`.
#[inline]
pub fn malloc_async(n: usize, stream: StreamHandle<'_>) -> RtResult<u64> {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: `p` is a valid out-pointer; the handle is a live stream of the shared context or a default one.
    unsafe { crate::rt!(cudaMallocAsync(&mut p, n, rt_stream(stream)))? };
    Ok(p as u64)
}

/// `cudaFreeAsync`.
///
/// # Safety
/// `ptr` must be a stream-ordered allocation not freed yet, unused after the work ahead of the free.
#[inline]
pub unsafe fn free_async(ptr: u64, stream: StreamHandle<'_>) -> RtResult<()> {
    // SAFETY: the caller promises a live stream-ordered allocation that nothing uses after the free.
    unsafe { crate::rt!(cudaFreeAsync(ptr as *mut c_void, rt_stream(stream))) }
}

/// `cudaMemcpy`: `n` bytes from address `src` to address `dst` (unified addresses), of direction `kind`.
///
/// # Safety
/// Both ranges must be live memory of the kinds `kind` names, until the copy has finished.
#[inline]
pub unsafe fn rt_memcpy(dst: u64, src: u64, n: usize, kind: sys::cudaMemcpyKind) -> RtResult<()> {
    // SAFETY: the caller promises both ranges.
    unsafe { crate::rt!(cudaMemcpy(dst as *mut c_void, src as *const c_void, n, kind)) }
}

/// `cudaMemcpyAsync`: as `rt_memcpy`, ordered on `stream`.
///
/// # Safety
/// As for `rt_memcpy`, and both ranges stay live, and the host leaves them alone, until `stream` has run the copy.
#[inline]
pub unsafe fn rt_memcpy_async(
    dst: u64,
    src: u64,
    n: usize,
    kind: sys::cudaMemcpyKind,
    stream: StreamHandle<'_>,
) -> RtResult<()> {
    // SAFETY: the caller promises both ranges, live until the stream has copied them.
    unsafe { crate::rt!(cudaMemcpyAsync(dst as *mut c_void, src as *const c_void, n, kind, rt_stream(stream))) }
}

/// `cudaMemset`: sets `n` bytes at `dst` to `value`.
///
/// # Safety
/// `dst..dst+n` must be device-accessible memory, live until the device has written it.
#[inline]
pub unsafe fn memset(dst: u64, value: u8, n: usize) -> RtResult<()> {
    // SAFETY: the caller promises the range.
    unsafe { crate::rt!(cudaMemset(dst as *mut c_void, value as c_int, n)) }
}

/// `cudaMemsetAsync`: as `memset`, ordered on `stream`.
///
/// # Safety
/// As for `memset`, live until `stream` has run the memset.
#[inline]
pub unsafe fn memset_async(dst: u64, value: u8, n: usize, stream: StreamHandle<'_>) -> RtResult<()> {
    // SAFETY: the caller promises the range, live until the stream has written it.
    unsafe { crate::rt!(cudaMemsetAsync(dst as *mut c_void, value as c_int, n, rt_stream(stream))) }
}

/// `cudaFree(NULL)`: frees nothing (documented as no operation); programs call it to start the runtime.
#[inline]
pub fn free_null() -> RtResult<()> {
    // SAFETY: a null pointer, which cudaFree documents as no operation.
    unsafe { crate::rt!(cudaFree(std::ptr::null_mut())) }
}

/// Device memory from `cudaMalloc` on the runtime's current device, freed with `cudaFree` on drop.
pub struct RtDeviceBuffer<'g> {
    ptr: *mut c_void,
    _gpu: PhantomData<&'g Gpu>,
}

impl<'g> RtDeviceBuffer<'g> {
    /// Needs `gpu` to be the runtime's current device (`set_device`). A zero-length request is bumped to 1 byte.
    pub fn new(_gpu: &'g Gpu, len: usize) -> RtResult<RtDeviceBuffer<'g>> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        unsafe { crate::rt!(cudaMalloc(&mut ptr, len.max(1)))? };
        Ok(RtDeviceBuffer { ptr, _gpu: PhantomData })
    }

    /// The buffer's device address.
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }
}

impl Drop for RtDeviceBuffer<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by cudaMalloc in `new`, freed once here, while the context is alive (`'g`).
        unsafe { sys::cudaFree(self.ptr) };
    }
}

/// Host memory as runtime programs allocate it: pageable (a plain allocation, as `new char[]` and `malloc`
/// give) or pinned (`cudaMallocHost`), freed on drop the way it was allocated.
pub struct RtHostBuffer<'g> {
    ptr: *mut u8,
    len: usize,
    /// Owns pageable memory; `None` for pinned memory, which `drop` frees with `cudaFreeHost`.
    pageable: Option<PageableBuffer>,
    _gpu: PhantomData<&'g Gpu>,
}

impl<'g> RtHostBuffer<'g> {
    /// Pageable or pinned memory (needs `gpu` to be the runtime's current device for pinned memory).
    pub fn new(_gpu: &'g Gpu, kind: HostKind, len: usize) -> anyhow::Result<RtHostBuffer<'g>> {
        let (ptr, pageable) = match kind {
            HostKind::Pageable => {
                let b = PageableBuffer::new(len);
                (b.as_ptr(), Some(b))
            }
            HostKind::Pinned => (malloc_host(len.max(1))?.cast(), None),
            other => anyhow::bail!("the seed programs use pageable or pinned memory, not {}", other.slug()),
        };
        Ok(RtHostBuffer { ptr, len, pageable, _gpu: PhantomData })
    }

    /// The buffer's address (a unified address, as `cudaMemcpyDefault` takes it).
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    /// The bytes, for the host to read or write.
    ///
    /// # Safety
    /// No copy that touches this buffer may be pending on the GPU while the slice is in use.
    pub unsafe fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is a live allocation of at least `len` bytes owned by `self`; the caller rules out the
        // GPU writing it meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for RtHostBuffer<'_> {
    fn drop(&mut self) {
        if self.pageable.is_none() {
            // SAFETY: allocated by cudaMallocHost in `new`, freed once here, while the context is alive (`'g`).
            unsafe { sys::cudaFreeHost(self.ptr.cast()) };
        }
    }
}

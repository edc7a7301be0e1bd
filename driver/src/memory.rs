//! Buffers of every kind the experiments copy between: device memory and five kinds of host memory.

use super::error::{check, CudaResult};
use super::gpu::Gpu;
use super::stream_handle::StreamHandle;
use super::sys::{self, CUdeviceptr};
use std::alloc::{self, Layout};
use std::ffi::c_void;

pub use async_lab_core::setup::HostKind;

const PAGE: usize = 4096;

/// Device memory from `cuMemAlloc`, freed on drop.
pub struct DeviceBuffer<'g> {
    pub ptr: CUdeviceptr,
    pub len: usize,
    gpu: &'g Gpu,
}

impl<'g> DeviceBuffer<'g> {
    pub fn new(gpu: &'g Gpu, len: usize) -> CudaResult<DeviceBuffer<'g>> {
        gpu.bind()?;
        let mut ptr = 0;
        // SAFETY: valid out-pointer; the context is alive for 'g. A zero-length request is bumped to 1 byte.
        unsafe { check(sys::cuMemAlloc_v2(&mut ptr, len.max(1)), "cuMemAlloc")? };
        Ok(DeviceBuffer { ptr, len, gpu })
    }

    /// `cuMemcpyHtoD`: the first `src.len()` bytes of the buffer from `src`. Returns once `src` may be reused
    /// (the driver has copied it, or staged it: rules S1, S2).
    pub fn copy_from_host(&self, src: &[u8]) -> CudaResult<()> {
        assert!(src.len() <= self.len, "{} bytes into a buffer of {}", src.len(), self.len);
        // SAFETY: `src` is live and readable for its length, which fits the buffer (checked); the buffer is
        // alive for as long as `self` is borrowed.
        unsafe { check(sys::cuMemcpyHtoD_v2(self.ptr, src.as_ptr().cast(), src.len()), "cuMemcpyHtoD") }
    }

    /// `cuMemcpyDtoH`: the first `dst.len()` bytes of the buffer into `dst`, after the work ahead of it in the
    /// legacy stream. Returns once the copy has finished (rule S3).
    pub fn copy_to_host(&self, dst: &mut [u8]) -> CudaResult<()> {
        assert!(dst.len() <= self.len, "{} bytes from a buffer of {}", dst.len(), self.len);
        // SAFETY: `dst` is exclusively borrowed and writable for its length, which fits the buffer (checked);
        // the synchronous copy has written it when the call returns.
        unsafe { check(sys::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), self.ptr, dst.len()), "cuMemcpyDtoH") }
    }

    /// The first `n` 64-bit words of the buffer (stamps and sums that kernels write), by `copy_to_host`.
    pub fn read_u64s(&self, n: usize) -> CudaResult<Vec<u64>> {
        let mut bytes = vec![0u8; n * 8];
        self.copy_to_host(&mut bytes)?;
        Ok(bytes.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes"))).collect())
    }

    /// `cuMemsetD8` of the whole buffer, on the legacy stream. It may return before the device has written
    /// (rule M1), and work on a non-blocking stream is not ordered after it.
    pub fn set_bytes(&self, value: u8) -> CudaResult<()> {
        // SAFETY: the range is this live allocation's own `len` bytes.
        unsafe { check(sys::cuMemsetD8_v2(self.ptr, value, self.len), "cuMemsetD8") }
    }

    /// Gives up ownership without freeing (the allocation experiments free it themselves, timed).
    pub fn into_raw(self) -> CUdeviceptr {
        let ptr = self.ptr;
        std::mem::forget(self);
        ptr
    }
}

impl Drop for DeviceBuffer<'_> {
    fn drop(&mut self) {
        let _ = self.gpu.bind();
        // SAFETY: allocated by cuMemAlloc in this (still alive, now current) context, freed only here.
        unsafe { sys::cuMemFree_v2(self.ptr) };
    }
}

/// Page-aligned pageable memory from the Rust allocator (page alignment lets `cuMemHostRegister` take it).
pub struct PageableBuffer {
    ptr: *mut u8,
    len: usize,
}

impl PageableBuffer {
    pub fn new(len: usize) -> PageableBuffer {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size (at least one page).
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            alloc::handle_alloc_error(layout);
        }
        PageableBuffer { ptr, len }
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len.max(1).div_ceil(PAGE) * PAGE, PAGE).expect("buffer size fits a Layout")
    }
}

impl Drop for PageableBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout.
        unsafe { alloc::dealloc(self.ptr, Self::layout(self.len)) };
    }
}

/// Host-accessible memory of any `HostKind`, freed on drop the way it was allocated.
pub struct HostBuffer<'g> {
    ptr: *mut u8,
    len: usize,
    pub kind: HostKind,
    /// Owns the memory of `Pageable` and `Registered` buffers.
    pageable: Option<PageableBuffer>,
    gpu: &'g Gpu,
}

impl<'g> HostBuffer<'g> {
    pub fn new(gpu: &'g Gpu, kind: HostKind, len: usize) -> CudaResult<HostBuffer<'g>> {
        gpu.bind()?;
        let bytes = len.max(1);
        let mut pageable = None;
        let ptr: *mut u8 = match kind {
            HostKind::Pageable | HostKind::Registered => {
                let buf = PageableBuffer::new(bytes);
                let p = buf.ptr;
                if kind == HostKind::Registered {
                    // SAFETY: `p..p+bytes` is a live, page-aligned allocation owned by `buf`, which is kept in
                    // `self` and unregistered in `drop` before it is freed.
                    unsafe {
                        check(
                            sys::cuMemHostRegister_v2(p.cast(), bytes, sys::CU_MEMHOSTREGISTER_DEFAULT),
                            "cuMemHostRegister",
                        )?
                    };
                }
                pageable = Some(buf);
                p
            }
            HostKind::Pinned => {
                let mut p: *mut c_void = std::ptr::null_mut();
                // SAFETY: valid out-pointer; context alive.
                unsafe { check(sys::cuMemAllocHost_v2(&mut p, bytes), "cuMemAllocHost")? };
                p.cast()
            }
            HostKind::WriteCombined => {
                let mut p: *mut c_void = std::ptr::null_mut();
                // SAFETY: valid out-pointer; context alive.
                unsafe {
                    check(sys::cuMemHostAlloc(&mut p, bytes, sys::CU_MEMHOSTALLOC_WRITECOMBINED), "cuMemHostAlloc")?
                };
                p.cast()
            }
            HostKind::Managed => {
                let mut d: CUdeviceptr = 0;
                // SAFETY: valid out-pointer; context alive. Managed memory is host-addressable at `d`.
                unsafe {
                    check(sys::cuMemAllocManaged(&mut d, bytes, sys::CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged")?
                };
                d as *mut u8
            }
        };
        Ok(HostBuffer { ptr, len, kind, pageable, gpu })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The buffer's address as the driver's unified address space sees it (UVA: host pointers are valid
    /// `CUdeviceptr`s for `cuMemcpy`).
    pub fn addr(&self) -> CUdeviceptr {
        self.ptr as CUdeviceptr
    }

    /// The bytes, for the host to read or write.
    ///
    /// # Safety
    /// No copy or kernel that touches this buffer may be pending on the GPU while the slice is in use.
    pub unsafe fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is this buffer's own allocation of `len` bytes, alive as long as `self`, and `&mut self`
        // keeps the host from aliasing it; the caller promises that no GPU work touches it meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for HostBuffer<'_> {
    fn drop(&mut self) {
        let _ = self.gpu.bind();
        // SAFETY: each arm frees memory the same way `new` obtained it, in the still-alive context (made current
        // just above), once.
        unsafe {
            match self.kind {
                HostKind::Pageable => {}
                HostKind::Registered => {
                    sys::cuMemHostUnregister(self.ptr.cast());
                }
                HostKind::Pinned | HostKind::WriteCombined => {
                    sys::cuMemFreeHost(self.ptr.cast());
                }
                HostKind::Managed => {
                    sys::cuMemFree_v2(self.ptr as CUdeviceptr);
                }
            }
        }
        drop(self.pageable.take());
    }
}

// The allocation, copy and memset calls the experiments time, one function per driver call. None of them
// makes a context current (the callers bind before the clock starts), so a measured span holds exactly the
// one driver call.

/// `cuMemAlloc`: `len` bytes of device memory in the current context.
#[inline]
pub fn mem_alloc(len: usize) -> CudaResult<CUdeviceptr> {
    let mut ptr = 0;
    // SAFETY: `ptr` is a valid out-pointer; the driver reports a missing context as an error.
    unsafe { check(sys::cuMemAlloc_v2(&mut ptr, len), "cuMemAlloc_v2")? };
    Ok(ptr)
}

/// `cuMemFree`.
///
/// # Safety
/// `ptr` must come from `cuMemAlloc` or `cuMemAllocManaged` (or their runtime counterparts) in the current
/// context, not be freed yet, and not be used again, by the host or by pending GPU work.
#[inline]
pub unsafe fn mem_free(ptr: CUdeviceptr) -> CudaResult<()> {
    // SAFETY: the caller promises a live allocation that nothing uses any more.
    unsafe { check(sys::cuMemFree_v2(ptr), "cuMemFree_v2") }
}

/// `cuMemAllocHost`: `len` bytes of pinned host memory.
#[inline]
pub fn mem_alloc_host(len: usize) -> CudaResult<*mut c_void> {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: `p` is a valid out-pointer.
    unsafe { check(sys::cuMemAllocHost_v2(&mut p, len), "cuMemAllocHost_v2")? };
    Ok(p)
}

/// `cuMemFreeHost`.
///
/// # Safety
/// `p` must come from `cuMemAllocHost` or `cuMemHostAlloc` (or `cudaMallocHost`), not be freed yet, and not
/// be used again.
#[inline]
pub unsafe fn mem_free_host(p: *mut c_void) -> CudaResult<()> {
    // SAFETY: the caller promises a live pinned allocation that nothing uses any more.
    unsafe { check(sys::cuMemFreeHost(p), "cuMemFreeHost") }
}

/// `cuMemHostRegister`: pins `len` bytes of host memory at `p` for the GPU.
///
/// # Safety
/// `p..p+len` must be live host memory that stays allocated until `mem_host_unregister` (or its runtime
/// counterpart) has been called on `p`.
#[inline]
pub unsafe fn mem_host_register(p: *mut c_void, len: usize, flags: u32) -> CudaResult<()> {
    // SAFETY: the caller promises the range is live and outlives the registration.
    unsafe { check(sys::cuMemHostRegister_v2(p, len, flags), "cuMemHostRegister_v2") }
}

/// `cuMemHostUnregister`.
///
/// # Safety
/// `p` must have been registered (`mem_host_register`), and no pending GPU work may still use it.
#[inline]
pub unsafe fn mem_host_unregister(p: *mut c_void) -> CudaResult<()> {
    // SAFETY: the caller promises a registered range that no GPU work uses any more.
    unsafe { check(sys::cuMemHostUnregister(p), "cuMemHostUnregister") }
}

/// `cuMemAllocManaged`: `len` bytes of managed memory (`flags`: `CU_MEM_ATTACH_GLOBAL` or `_HOST`).
#[inline]
pub fn mem_alloc_managed(len: usize, flags: u32) -> CudaResult<CUdeviceptr> {
    let mut ptr = 0;
    // SAFETY: `ptr` is a valid out-pointer.
    unsafe { check(sys::cuMemAllocManaged(&mut ptr, len, flags), "cuMemAllocManaged")? };
    Ok(ptr)
}

/// `cuMemAllocAsync`: `len` bytes from the device's current pool, ordered on `stream`.
#[inline]
pub fn mem_alloc_async(len: usize, stream: StreamHandle<'_>) -> CudaResult<CUdeviceptr> {
    let mut ptr = 0;
    // SAFETY: `ptr` is a valid out-pointer; the handle is a live stream or a default stream.
    unsafe { check(sys::cuMemAllocAsync(&mut ptr, len, stream.raw()), "cuMemAllocAsync")? };
    Ok(ptr)
}

/// `cuMemFreeAsync`: gives `ptr` back to its pool, ordered on `stream`.
///
/// # Safety
/// `ptr` must come from a stream-ordered allocation not freed yet, and nothing may use it after the work
/// ahead of this call in `stream`.
#[inline]
pub unsafe fn mem_free_async(ptr: CUdeviceptr, stream: StreamHandle<'_>) -> CudaResult<()> {
    // SAFETY: the caller promises a live stream-ordered allocation that nothing uses after the free.
    unsafe { check(sys::cuMemFreeAsync(ptr, stream.raw()), "cuMemFreeAsync") }
}

/// A device's default memory pool, which lives as long as the driver does.
#[derive(Clone, Copy, Debug)]
pub struct DefaultMemPool(sys::CUmemoryPool);

impl DefaultMemPool {
    /// `cuDeviceGetDefaultMemPool`.
    pub fn of(device: sys::CUdevice) -> CudaResult<DefaultMemPool> {
        let mut pool = std::ptr::null_mut();
        // SAFETY: `pool` is a valid out-pointer; the driver checks the device handle.
        unsafe { check(sys::cuDeviceGetDefaultMemPool(&mut pool, device), "cuDeviceGetDefaultMemPool")? };
        Ok(DefaultMemPool(pool))
    }

    /// `cuMemPoolSetAttribute(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)`: how many bytes the pool keeps at a
    /// synchronization instead of giving them back.
    pub fn set_release_threshold(self, bytes: u64) -> CudaResult<()> {
        let mut v = bytes;
        // SAFETY: the pool is a default pool, never destroyed; the attribute takes a pointer to a u64, which
        // the driver reads during the call.
        unsafe {
            check(
                sys::cuMemPoolSetAttribute(
                    self.0,
                    sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&mut v as *mut u64).cast(),
                ),
                "cuMemPoolSetAttribute",
            )
        }
    }
}

// The copies. Addresses are raw because the experiments copy between every kind of memory (device, pinned,
// registered, managed, pageable) through one probe; the caller vouches for them.

/// `cuMemcpy`: `n` bytes from `src` to `dst`, either side host or device (unified addressing).
///
/// # Safety
/// `src..src+n` must be readable and `dst..dst+n` writable memory the driver can address, both live until
/// the copy has finished.
#[inline]
pub unsafe fn memcpy(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> CudaResult<()> {
    // SAFETY: the caller promises both ranges are live and addressable.
    unsafe { check(sys::cuMemcpy(dst, src, n), "cuMemcpy") }
}

/// `cuMemcpyAsync`: as `memcpy`, ordered on `stream`.
///
/// # Safety
/// As for `memcpy`, and both ranges stay live, and the host leaves them alone, until `stream` has run the copy.
#[inline]
pub unsafe fn memcpy_async(dst: CUdeviceptr, src: CUdeviceptr, n: usize, stream: StreamHandle<'_>) -> CudaResult<()> {
    // SAFETY: the caller promises both ranges stay live and untouched until the stream has copied them.
    unsafe { check(sys::cuMemcpyAsync(dst, src, n, stream.raw()), "cuMemcpyAsync") }
}

/// `cuMemcpyHtoD`: `n` bytes from host memory at `src` to device memory at `dst`.
///
/// # Safety
/// `src..src+n` must be readable host memory and `dst..dst+n` a live device range.
#[inline]
pub unsafe fn memcpy_htod(dst: CUdeviceptr, src: *const c_void, n: usize) -> CudaResult<()> {
    // SAFETY: the caller promises both ranges.
    unsafe { check(sys::cuMemcpyHtoD_v2(dst, src, n), "cuMemcpyHtoD_v2") }
}

/// `cuMemcpyDtoH`: `n` bytes from device memory at `src` to host memory at `dst`.
///
/// # Safety
/// `dst..dst+n` must be writable host memory and `src..src+n` a live device range.
#[inline]
pub unsafe fn memcpy_dtoh(dst: *mut c_void, src: CUdeviceptr, n: usize) -> CudaResult<()> {
    // SAFETY: the caller promises both ranges.
    unsafe { check(sys::cuMemcpyDtoH_v2(dst, src, n), "cuMemcpyDtoH_v2") }
}

/// `cuMemcpyDtoD`: `n` bytes between two device ranges.
///
/// # Safety
/// Both ranges must be live device memory until the copy has finished.
#[inline]
pub unsafe fn memcpy_dtod(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> CudaResult<()> {
    // SAFETY: the caller promises both ranges.
    unsafe { check(sys::cuMemcpyDtoD_v2(dst, src, n), "cuMemcpyDtoD_v2") }
}

/// `cuMemcpyHtoDAsync`: as `memcpy_htod`, ordered on `stream`.
///
/// # Safety
/// As for `memcpy_htod`, and both ranges stay live until `stream` has run the copy.
#[inline]
pub unsafe fn memcpy_htod_async(
    dst: CUdeviceptr,
    src: *const c_void,
    n: usize,
    stream: StreamHandle<'_>,
) -> CudaResult<()> {
    // SAFETY: the caller promises both ranges, live until the stream has copied them.
    unsafe { check(sys::cuMemcpyHtoDAsync_v2(dst, src, n, stream.raw()), "cuMemcpyHtoDAsync_v2") }
}

/// `cuMemcpyDtoHAsync`: as `memcpy_dtoh`, ordered on `stream`.
///
/// # Safety
/// As for `memcpy_dtoh`, and both ranges stay live, and the host leaves `dst` alone, until `stream` has run
/// the copy.
#[inline]
pub unsafe fn memcpy_dtoh_async(
    dst: *mut c_void,
    src: CUdeviceptr,
    n: usize,
    stream: StreamHandle<'_>,
) -> CudaResult<()> {
    // SAFETY: the caller promises both ranges, live until the stream has copied them.
    unsafe { check(sys::cuMemcpyDtoHAsync_v2(dst, src, n, stream.raw()), "cuMemcpyDtoHAsync_v2") }
}

/// `cuMemcpyDtoDAsync`: as `memcpy_dtod`, ordered on `stream`.
///
/// # Safety
/// Both ranges must be live device memory until `stream` has run the copy.
#[inline]
pub unsafe fn memcpy_dtod_async(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    n: usize,
    stream: StreamHandle<'_>,
) -> CudaResult<()> {
    // SAFETY: the caller promises both ranges, live until the stream has copied them.
    unsafe { check(sys::cuMemcpyDtoDAsync_v2(dst, src, n, stream.raw()), "cuMemcpyDtoDAsync_v2") }
}

/// `cuMemsetD8`: sets `n` bytes at `dst` to `value`, on the legacy stream.
///
/// # Safety
/// `dst..dst+n` must be device-accessible memory, live until the device has written it.
#[inline]
pub unsafe fn memset_d8(dst: CUdeviceptr, value: u8, n: usize) -> CudaResult<()> {
    // SAFETY: the caller promises the range.
    unsafe { check(sys::cuMemsetD8_v2(dst, value, n), "cuMemsetD8_v2") }
}

/// `cuMemsetD8Async`: as `memset_d8`, ordered on `stream`.
///
/// # Safety
/// As for `memset_d8`, live until `stream` has run the memset.
#[inline]
pub unsafe fn memset_d8_async(dst: CUdeviceptr, value: u8, n: usize, stream: StreamHandle<'_>) -> CudaResult<()> {
    // SAFETY: the caller promises the range, live until the stream has written it.
    unsafe { check(sys::cuMemsetD8Async(dst, value, n, stream.raw()), "cuMemsetD8Async") }
}

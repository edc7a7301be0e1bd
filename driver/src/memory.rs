//! Buffers of every kind the experiments copy between: device memory and five kinds of host memory.

use super::error::{check, DriverResult};
use super::gpu::Gpu;
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
    pub fn new(gpu: &'g Gpu, len: usize) -> DriverResult<DeviceBuffer<'g>> {
        gpu.bind()?;
        let mut ptr = 0;
        // SAFETY: valid out-pointer; the context is alive for 'g. A zero-length request is bumped to 1 byte.
        unsafe { check(sys::cuMemAlloc_v2(&mut ptr, len.max(1)), "cuMemAlloc")? };
        Ok(DeviceBuffer { ptr, len, gpu })
    }

    /// `cuMemcpyHtoD`: the first `src.len()` bytes of the buffer from `src`. Returns once `src` may be reused
    /// (the driver has copied it, or staged it: rules S1, S2).
    pub fn copy_from_host(&self, src: &[u8]) -> DriverResult<()> {
        assert!(src.len() <= self.len, "{} bytes into a buffer of {}", src.len(), self.len);
        // SAFETY: `src` is live and readable for its length, which fits the buffer (checked); the buffer is
        // alive for as long as `self` is borrowed.
        unsafe { check(sys::cuMemcpyHtoD_v2(self.ptr, src.as_ptr().cast(), src.len()), "cuMemcpyHtoD") }
    }

    /// `cuMemcpyDtoH`: the first `dst.len()` bytes of the buffer into `dst`, after the work ahead of it in the
    /// legacy stream. Returns once the copy has finished (rule S3).
    pub fn copy_to_host(&self, dst: &mut [u8]) -> DriverResult<()> {
        assert!(dst.len() <= self.len, "{} bytes from a buffer of {}", dst.len(), self.len);
        // SAFETY: `dst` is exclusively borrowed and writable for its length, which fits the buffer (checked);
        // the synchronous copy has written it when the call returns.
        unsafe { check(sys::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), self.ptr, dst.len()), "cuMemcpyDtoH") }
    }

    /// The first `n` 64-bit words of the buffer (stamps and sums that kernels write), by `copy_to_host`.
    pub fn read_u64s(&self, n: usize) -> DriverResult<Vec<u64>> {
        let mut bytes = vec![0u8; n * 8];
        self.copy_to_host(&mut bytes)?;
        Ok(bytes.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes"))).collect())
    }

    /// `cuMemsetD8` of the whole buffer, on the legacy stream. It may return before the device has written
    /// (rule M1), and work on a non-blocking stream is not ordered after it.
    pub fn set_bytes(&self, value: u8) -> DriverResult<()> {
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
    pub fn new(gpu: &'g Gpu, kind: HostKind, len: usize) -> DriverResult<HostBuffer<'g>> {
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

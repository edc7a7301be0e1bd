//! Virtual memory management: physical memory made with `cuMemCreate`, mapped into an address range reserved
//! with `cuMemAddressReserve` (`cuMemMap`), made accessible (`cuMemSetAccess`), unmapped (`cuMemUnmap`) and
//! released (`cuMemRelease`). `Vmm` owns one range and at most one piece of memory; each step is one call, and
//! drop undoes whatever is left, once the device is idle.
#![allow(non_snake_case)]

use super::error::{check, CudaResult};
use super::gpu::Gpu;
use super::sys::{CUdeviceptr, CuResult};
use super::unified::{MemLocation, CU_MEM_LOCATION_TYPE_DEVICE};
use std::ffi::{c_int, c_void};

/// `CUmemAllocationProp` (CUDA 10.2), for pinned device memory without shareable handles.
#[repr(C)]
struct AllocationProp {
    /// `CU_MEM_ALLOCATION_TYPE_PINNED` (1).
    kind: c_int,
    /// `CU_MEM_HANDLE_TYPE_NONE` (0).
    handle_types: c_int,
    location: MemLocation,
    win32_metadata: *mut c_void,
    compression_type: u8,
    gpu_direct_rdma_capable: u8,
    usage: u16,
    reserved: [u8; 4],
}

/// `CUmemAccessDesc`: who may access a mapping, and how.
#[repr(C)]
struct AccessDesc {
    location: MemLocation,
    /// `CU_MEM_ACCESS_FLAGS_PROT_READWRITE` (3).
    flags: c_int,
}

// In every driver since CUDA 10.2 (cust_raw's headers declare them, so the link-time stub has them too).
#[link(name = "cuda")]
extern "C" {
    fn cuMemGetAllocationGranularity(granularity: *mut usize, prop: *const AllocationProp, option: c_int) -> CuResult;
    fn cuMemAddressReserve(ptr: *mut CUdeviceptr, size: usize, align: usize, addr: CUdeviceptr, flags: u64)
        -> CuResult;
    fn cuMemAddressFree(ptr: CUdeviceptr, size: usize) -> CuResult;
    fn cuMemCreate(handle: *mut u64, size: usize, prop: *const AllocationProp, flags: u64) -> CuResult;
    fn cuMemRelease(handle: u64) -> CuResult;
    fn cuMemMap(ptr: CUdeviceptr, size: usize, offset: usize, handle: u64, flags: u64) -> CuResult;
    fn cuMemUnmap(ptr: CUdeviceptr, size: usize) -> CuResult;
    fn cuMemSetAccess(ptr: CUdeviceptr, size: usize, desc: *const AccessDesc, count: usize) -> CuResult;
}

/// A reserved address range of one allocation granule, and the memory that may be mapped there.
pub struct Vmm<'g> {
    gpu: &'g Gpu,
    pub size: usize,
    /// The start of the reserved range.
    pub va: CUdeviceptr,
    handle: Option<u64>,
    mapped: bool,
}

impl<'g> Vmm<'g> {
    /// Reserves a range of the GPU's minimum granularity (2 MiB on current GPUs).
    pub fn reserve(gpu: &'g Gpu) -> CudaResult<Vmm<'g>> {
        gpu.bind()?;
        let prop = Self::prop(gpu);
        let mut size = 0;
        // SAFETY: valid out-pointer and property struct; option 0 is CU_MEM_ALLOC_GRANULARITY_MINIMUM.
        check(unsafe { cuMemGetAllocationGranularity(&mut size, &prop, 0) }, "cuMemGetAllocationGranularity")?;
        let mut va = 0;
        // SAFETY: valid out-pointer; no fixed address (0), default alignment (0), no flags.
        check(unsafe { cuMemAddressReserve(&mut va, size, 0, 0, 0) }, "cuMemAddressReserve")?;
        Ok(Vmm { gpu, size, va, handle: None, mapped: false })
    }

    fn prop(gpu: &Gpu) -> AllocationProp {
        AllocationProp {
            kind: 1,
            handle_types: 0,
            location: MemLocation { kind: CU_MEM_LOCATION_TYPE_DEVICE, id: gpu.device },
            win32_metadata: std::ptr::null_mut(),
            compression_type: 0,
            gpu_direct_rdma_capable: 0,
            usage: 0,
            reserved: [0; 4],
        }
    }

    pub fn has_memory(&self) -> bool {
        self.handle.is_some()
    }

    pub fn is_mapped(&self) -> bool {
        self.mapped
    }

    /// `cuMemCreate` of one granule on this GPU, and nothing else. There must be no memory yet.
    pub fn create(&mut self) -> CudaResult<()> {
        assert!(self.handle.is_none(), "release the memory before creating more");
        let prop = Self::prop(self.gpu);
        let mut handle = 0;
        // SAFETY: valid out-pointer and property struct; the size is a multiple of the granularity; no flags.
        check(unsafe { cuMemCreate(&mut handle, self.size, &prop, 0) }, "cuMemCreate")?;
        self.handle = Some(handle);
        Ok(())
    }

    /// `cuMemRelease` of the memory, and nothing else (mapped or not: mapped memory lives until it is unmapped).
    pub fn release(&mut self) -> CudaResult<()> {
        let handle = self.handle.take().expect("memory to release");
        // SAFETY: a handle from `cuMemCreate`, released once (it is taken out of `self`).
        check(unsafe { cuMemRelease(handle) }, "cuMemRelease")
    }

    /// `cuMemMap` of the memory over the whole range, and nothing else.
    pub fn map(&mut self) -> CudaResult<()> {
        let handle = self.handle.expect("memory to map");
        assert!(!self.mapped, "already mapped");
        // SAFETY: the reserved range and a live handle of the same size; offset and flags 0.
        check(unsafe { cuMemMap(self.va, self.size, 0, handle, 0) }, "cuMemMap")?;
        self.mapped = true;
        Ok(())
    }

    /// `cuMemSetAccess`: read-write access for this GPU over the mapped range, and nothing else.
    pub fn set_access(&self) -> CudaResult<()> {
        let desc =
            AccessDesc { location: MemLocation { kind: CU_MEM_LOCATION_TYPE_DEVICE, id: self.gpu.device }, flags: 3 };
        // SAFETY: the range is mapped (callers map first; the driver refuses an unmapped one); one descriptor.
        check(unsafe { cuMemSetAccess(self.va, self.size, &desc, 1) }, "cuMemSetAccess")
    }

    /// `cuMemUnmap` of the whole range, and nothing else.
    ///
    /// # Safety
    /// Work on the GPU that still uses the range faults once the range is unmapped, unless it is mapped again
    /// before that work runs (which is what the experiment that calls this with work queued does).
    pub unsafe fn unmap(&mut self) -> CudaResult<()> {
        assert!(self.mapped, "not mapped");
        // SAFETY: the whole mapped range (cuMemUnmap takes nothing less); the GPU's use is the caller's promise.
        check(unsafe { cuMemUnmap(self.va, self.size) }, "cuMemUnmap")?;
        self.mapped = false;
        Ok(())
    }
}

impl Drop for Vmm<'_> {
    fn drop(&mut self) {
        // Nothing may use the range any more when it goes.
        let _ = self.gpu.synchronize();
        // SAFETY: each step undoes one made by `self`, once, in reverse order, with the device idle.
        unsafe {
            if self.mapped {
                cuMemUnmap(self.va, self.size);
            }
            if let Some(h) = self.handle.take() {
                cuMemRelease(h);
            }
            cuMemAddressFree(self.va, self.size);
        }
    }
}

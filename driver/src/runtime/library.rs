//! The kernels through the runtime: the same Rust PTX, loaded with `cudaLibraryLoadData` and launched with
//! `cudaLaunchKernel`.
//!
//! A runtime program built by nvcc has its kernels registered at start-up and loaded into the context when
//! first launched (lazy loading, the default since CUDA 12.2) or when the context starts (eager). The library
//! API keeps that behaviour for code loaded at run time: `cudaLibraryLoadData` makes a context-independent
//! library, and a kernel is loaded into the context at its first launch under `CUDA_MODULE_LOADING=LAZY`, or
//! at load under `EAGER`. That is why async-lab loads its runtime kernels this way rather than through the
//! driver's module API and a function pointer.

use super::sys;
use crate::rt;
use crate::{CudaError, CudaResult};
use async_lab_core::api::Api;
use std::ffi::{c_void, CStr, CString};

/// A library loaded by the runtime, unloaded on drop.
pub struct RtLibrary {
    raw: sys::cudaLibrary_t,
}

impl RtLibrary {
    /// Loads `ptx` (PTX text; a NUL is appended).
    pub fn load(ptx: &str) -> CudaResult<RtLibrary> {
        let image = CString::new(ptx).map_err(|_| CudaError {
            code: sys::cudaError_t::cudaErrorInvalidPtx as u32,
            call: "cudaLibraryLoadData (the PTX holds a NUL)",
            api: Api::Runtime,
        })?;
        RtLibrary::load_image(&image)
    }

    /// Loads a NUL-terminated PTX image (for timed loads: no copy of the text inside the measured span).
    pub fn load_image(image: &CStr) -> CudaResult<RtLibrary> {
        super::get().map_err(|_| no_runtime("cudaLibraryLoadData"))?;
        let mut raw: sys::cudaLibrary_t = std::ptr::null_mut();
        // SAFETY: `image` is a NUL-terminated PTX image that outlives the call (the runtime copies what it
        // keeps); no JIT or library options are passed (null arrays with count 0).
        unsafe {
            rt!(cudaLibraryLoadData(
                &mut raw,
                image.as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0
            ))?
        };
        Ok(RtLibrary { raw })
    }

    /// The kernel `name` (`cudaLibraryGetKernel`). Under lazy loading this does not load it into the context.
    pub fn kernel(&self, name: &str) -> CudaResult<RtKernel> {
        self.kernel_named(&CString::new(name).expect("kernel names hold no NUL"))
    }

    /// `kernel` with the name already a C string (for timed lookups: no allocation in the measured span).
    pub fn kernel_named(&self, c: &CStr) -> CudaResult<RtKernel> {
        let mut raw: sys::cudaKernel_t = std::ptr::null_mut();
        // SAFETY: `self.raw` is a loaded library (unloaded only on drop); `c` is NUL-terminated.
        unsafe { rt!(cudaLibraryGetKernel(&mut raw, self.raw, c.as_ptr()))? };
        Ok(RtKernel { raw })
    }
}

impl Drop for RtLibrary {
    fn drop(&mut self) {
        // A kernel of this library may still run (an experiment that failed midway returns without
        // synchronizing): wait for the device before unloading its code.
        // SAFETY: a plain call; the runtime is loaded (`load` succeeded).
        unsafe { sys::cudaDeviceSynchronize() };
        // SAFETY: loaded in `load`, unloaded once here, after the device is idle. `RtKernel` handles do not
        // borrow the library; they are only launched by code that keeps it loaded (see `RtKernel::launch`).
        unsafe { sys::cudaLibraryUnload(self.raw) };
    }
}

/// A kernel of an `RtLibrary`: a handle, valid while its library stays loaded (experiments reload libraries
/// between repetitions, so the handle does not borrow it; `launch` is unsafe for that reason too).
#[derive(Clone, Copy)]
pub struct RtKernel {
    raw: sys::cudaKernel_t,
}

impl RtKernel {
    /// The raw handle, as the runtime's calls that take a kernel as `const void *func` want it.
    pub(crate) fn raw(&self) -> sys::cudaKernel_t {
        self.raw
    }

    /// `cudaLaunchKernel` of this kernel on `stream` (a driver stream handle: both APIs share the context).
    ///
    /// # Safety
    /// The kernel's library is still loaded. `params` holds one pointer per kernel parameter, to a value of
    /// that parameter's exact type, and every device pointer among them stays valid until the kernel has
    /// finished.
    pub unsafe fn launch(
        &self,
        grid: u32,
        block: u32,
        stream: crate::stream_handle::StreamHandle<'_>,
        params: &mut [*mut c_void],
    ) -> CudaResult<()> {
        let dim = |x| sys::dim3 { x, y: 1, z: 1 };
        // A cudaKernel_t is passed to cudaLaunchKernel as the function pointer (documented for the library API).
        // SAFETY: the caller promises that the library is loaded, that `params` matches the kernel's parameters
        // and that the device pointers among them outlive the kernel; `params` only needs to live for the call.
        unsafe {
            rt!(cudaLaunchKernel(
                self.raw as *const c_void,
                dim(grid),
                dim(block),
                params.as_mut_ptr(),
                0,
                stream.raw().cast()
            ))
        }
    }
}

impl RtKernel {
    /// Launches the project's `spin_wait_ns` kernel (one thread, `ns` of spinning, no stamps).
    ///
    /// # Safety
    /// This kernel is `spin_wait_ns` and its library is still loaded.
    pub unsafe fn launch_spin(&self, stream: crate::stream_handle::StreamHandle<'_>, ns: u64) -> CudaResult<()> {
        let (mut ns, mut stamps) = (ns, 0u64);
        let mut params = [(&mut ns as *mut u64).cast::<c_void>(), (&mut stamps as *mut u64).cast()];
        // SAFETY: spin_wait_ns(u64 ns, *mut u64 stamps) skips the stamps for a null pointer; `params` lives
        // through the call, which copies the values; the library is loaded (the caller's promise); `stream` is
        // live (its lifetime says so).
        unsafe { self.launch(1, 1, stream, &mut params) }
    }
}

fn no_runtime(call: &'static str) -> CudaError {
    CudaError { code: sys::cudaError_t::cudaErrorInitializationError as u32, call, api: Api::Runtime }
}

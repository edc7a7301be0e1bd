//! Code loaded through the driver: a module (`cuModuleLoadData`) or a library (`cuLibraryLoadData`, the
//! context-independent form the runtime uses), their kernels, and a kernel's launch by its library handle.
//! Each owner unloads its code on drop, after waiting for the device, so no kernel of it can still run.

use super::error::CudaResult;
use super::gpu::Gpu;
use super::stream_handle::StreamHandle;
use super::sys;
use std::ffi::CStr;
use std::marker::PhantomData;
use std::ptr::null_mut;

/// A module loaded with `cuModuleLoadData` into the GPU's context; unloaded on drop, once the device is idle.
pub struct Module<'g> {
    raw: sys::CUmodule,
    gpu: &'g Gpu,
}

impl<'g> Module<'g> {
    /// `cuModuleLoadData` and nothing else (it is the call of the module-load cases). The caller has made
    /// `gpu`'s context current.
    pub fn load(gpu: &'g Gpu, image: &CStr) -> CudaResult<Module<'g>> {
        module_load_data(image).map(|raw| Module { raw, gpu })
    }

    /// `cuModuleGetFunction`: the kernel `name` (under lazy loading, this loads it into the context).
    pub fn function(&self, name: &CStr) -> CudaResult<sys::CUfunction> {
        let mut f = null_mut();
        // SAFETY: `self.raw` is a loaded module (unloaded only on drop); `name` is NUL-terminated; `f` is a valid
        // out-pointer.
        unsafe { crate::drv!(cuModuleGetFunction(&mut f, self.raw, name.as_ptr()))? };
        Ok(f)
    }
}

/// `cuModuleLoadData` into the current context, and nothing else: a module handle the caller unloads
/// (`module_unload`). `Module::load` is the owning form.
#[inline]
pub fn module_load_data(image: &CStr) -> CudaResult<sys::CUmodule> {
    let mut raw = null_mut();
    // SAFETY: `raw` is a valid out-pointer; `image` is NUL-terminated PTX that lives through the call (the driver
    // keeps its own copy of what it needs); without a current context the driver returns an error code.
    unsafe { crate::drv!(cuModuleLoadData(&mut raw, image.as_ptr().cast()))? };
    Ok(raw)
}

/// `cuModuleUnload`.
///
/// # Safety
/// `module` comes from `module_load_data`, is not unloaded yet, and nothing of it runs or is used any more.
pub unsafe fn module_unload(module: sys::CUmodule) -> CudaResult<()> {
    // SAFETY: the caller promises a loaded module nothing uses any more.
    unsafe { crate::drv!(cuModuleUnload(module)) }
}

impl Drop for Module<'_> {
    fn drop(&mut self) {
        // Normally the device is idle already; after an error a kernel of this module could still be queued.
        // This also makes the module's context current, the one `cuModuleUnload` acts on.
        let _ = self.gpu.synchronize();
        // SAFETY: loaded in `load` into this GPU's context (current, just bound), unloaded once, here; nothing of
        // it runs any more (the device is idle) and the function handles looked up in it were not kept.
        unsafe { sys::cuModuleUnload(self.raw) };
    }
}

/// A library loaded with `cuLibraryLoadData`; unloaded on drop, once the device is idle.
pub struct Library<'g> {
    raw: sys::CUlibrary,
    gpu: &'g Gpu,
}

impl<'g> Library<'g> {
    /// `cuLibraryLoadData` without options, and nothing else (it is the call of the library-load cases).
    pub fn load(gpu: &'g Gpu, image: &CStr) -> CudaResult<Library<'g>> {
        let mut raw = null_mut();
        // SAFETY: `raw` is a valid out-pointer; `image` is NUL-terminated PTX that lives through the call (the
        // driver keeps its own copy of what it needs); no JIT or library options: null arrays, counts 0.
        unsafe {
            crate::drv!(cuLibraryLoadData(
                &mut raw,
                image.as_ptr().cast(),
                null_mut(),
                null_mut(),
                0,
                null_mut(),
                null_mut(),
                0
            ))?
        };
        Ok(Library { raw, gpu })
    }

    /// `cuLibraryGetKernel`: the kernel `name`, one handle for every context (nothing is loaded).
    pub fn kernel(&self, name: &CStr) -> CudaResult<Kernel<'_>> {
        let mut raw = null_mut();
        // SAFETY: `self.raw` is a loaded library (unloaded only on drop, which the returned kernel's borrow
        // prevents); `name` is NUL-terminated; `raw` is a valid out-pointer.
        unsafe { crate::drv!(cuLibraryGetKernel(&mut raw, self.raw, name.as_ptr()))? };
        Ok(Kernel { raw, _library: PhantomData })
    }
}

impl Drop for Library<'_> {
    fn drop(&mut self) {
        // Normally the device is idle already; after an error a kernel of this library could still be queued.
        let _ = self.gpu.synchronize();
        // SAFETY: loaded in `load`, unloaded once, here; no `Kernel` of it is left (they borrow it) and nothing of
        // it runs any more (the device is idle).
        unsafe { sys::cuLibraryUnload(self.raw) };
    }
}

/// A kernel of a `Library`: one handle for every context. It cannot outlive its library.
#[derive(Clone, Copy)]
pub struct Kernel<'l> {
    raw: sys::CUkernel,
    _library: PhantomData<&'l Library<'l>>,
}

impl Kernel<'_> {
    /// `cuKernelGetFunction`: the kernel's function in the current context (under lazy loading, this loads it).
    pub fn function(self) -> CudaResult<sys::CUfunction> {
        let mut f = null_mut();
        // SAFETY: `self.raw` is a kernel of a loaded library (the lifetime keeps the library loaded); `f` is a
        // valid out-pointer.
        unsafe { crate::drv!(cuKernelGetFunction(&mut f, self.raw))? };
        Ok(f)
    }

    /// `cuLaunchKernel` given the kernel handle itself: the driver takes the function of the stream's context
    /// (loading it there first, under lazy loading), as the runtime's `cudaLaunchKernel` does.
    ///
    /// # Safety
    /// `params` holds one pointer per kernel parameter, to a value of that parameter's exact type, and every
    /// device pointer among them stays valid until the kernel has finished.
    pub unsafe fn launch(
        self,
        grid: u32,
        block: u32,
        stream: StreamHandle<'_>,
        params: &mut [*mut std::ffi::c_void],
    ) -> CudaResult<()> {
        // SAFETY: cuLaunchKernel's API reference (CUDA 12.0 on) accepts a CUkernel from cuLibraryGetKernel cast
        // to CUfunction; the library stays loaded while `self` exists (its lifetime); the stream is live (its
        // lifetime); the rest is the caller's promise.
        unsafe {
            crate::drv!(cuLaunchKernel(
                self.raw.cast(),
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                stream.raw(),
                params.as_mut_ptr(),
                null_mut()
            ))
        }
    }

    /// `cuLaunchKernel` given the kernel handle itself, on one thread: the driver takes the function of the
    /// stream's context (loading it there first, under lazy loading).
    ///
    /// # Safety
    /// The kernel is `spin_wait_ns` (its parameters are what this passes).
    pub unsafe fn launch_spin(self, stream: StreamHandle<'_>, ns: u64) -> CudaResult<()> {
        let (mut ns, mut stamps) = (ns, 0u64);
        let mut params = [(&mut ns as *mut u64).cast::<std::ffi::c_void>(), (&mut stamps as *mut u64).cast()];
        // SAFETY: cuLaunchKernel's API reference (CUDA 12.0 on) accepts a CUkernel from cuLibraryGetKernel cast
        // to CUfunction, launched in the stream's context; `self.raw` is one, of a library that stays loaded
        // until the device is idle again (its lifetime; the library's drop synchronizes first); `spin_wait_ns` takes (u64 ns,
        // *mut u64 stamps) and skips the stamps for a null pointer; `params` outlives the call, which copies
        // the values; `stream` is live (its lifetime says so).
        unsafe {
            crate::drv!(cuLaunchKernel(
                self.raw.cast(),
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                stream.raw(),
                params.as_mut_ptr(),
                null_mut()
            ))
        }
    }
}

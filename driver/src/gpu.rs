//! `Gpu`: the context, the kernels' module and the device, owned together so the context is freed last.
//!
//! Everything else made on the GPU (streams, events, buffers) borrows `&Gpu` through a lifetime, so the
//! compiler refuses any order of drops that would free the context first (with cust's own types that
//! mistake is a crash at exit).
//!
//! With several GPUs open (the peer experiments), each has its own context and only one is current on the
//! thread. Every constructor and every helper here that is not itself under test makes its `Gpu`'s context
//! current first (`bind`), so objects land on the GPU they borrow. The calls that experiments time
//! (`launch`, `launch_empty`, `launch_spin_sleep`) do not: one extra driver call would sit inside the
//! measured span. Their callers bind before the clock starts.

use super::error::{check, CudaResult};
use super::probe::init_driver;
use super::stream_handle::StreamHandle;
use super::sys::{self, CUcontext, CUdevice, CUfunction, CUstream};
use crate::ptx::Ptx;
use anyhow::{anyhow, Context as _};
use async_lab_ptx::kernels;
use std::ffi::c_void;

/// The kernels of `gpu-kernels/kernels`, looked up once.
#[derive(Clone, Copy, Debug)]
pub struct Kernels {
    pub spin_sleep: CUfunction,
    pub spin_wait_ns: CUfunction,
    pub empty: CUfunction,
    pub fill: CUfunction,
    pub checksum: CUfunction,
    pub write_globaltimer: CUfunction,
}

/// Grid-stride kernels (fill, checksum) are launched with this many blocks of `WIDE_BLOCK` threads.
pub const WIDE_GRID: u32 = 1024;
pub const WIDE_BLOCK: u32 = 256;

pub struct Gpu {
    pub kernels: Kernels,
    pub device: CUdevice,
    pub ordinal: i32,
    /// How many GPUs the driver sees (this one included).
    pub device_count: i32,
    pub ptx: Ptx,
    /// The primary context's handle (owned by `_context`), for `bind` and the peer calls.
    context: CUcontext,
    // Declaration order is drop order: the module goes before the context.
    module: cust::module::Module,
    _context: cust::context::Context,
}

impl Gpu {
    /// Starts the driver, makes device `ordinal`'s primary context current and loads the kernels.
    pub fn open(ordinal: i32, ptx: Ptx) -> anyhow::Result<Gpu> {
        let count = init_driver()?;
        if ordinal < 0 || ordinal >= count {
            return Err(anyhow!("there is no GPU {ordinal}: this machine has {count} (0..{})", count - 1));
        }
        let device = cust::device::Device::get_device(ordinal as u32).map_err(|e| anyhow!("cuDeviceGet: {e}"))?;
        let context = cust::context::Context::new(device).map_err(|e| anyhow!("creating the CUDA context: {e}"))?;
        let module = load_module(&ptx)?;
        let kernels = lookup_kernels(&module)?;
        let raw = context.as_raw();
        Ok(Gpu {
            kernels,
            device: device.as_raw(),
            ordinal,
            device_count: count,
            ptx,
            context: raw,
            module,
            _context: context,
        })
    }

    /// Makes this GPU's context current on the calling thread (cheap when it already is).
    pub fn bind(&self) -> CudaResult<()> {
        // SAFETY: `self.context` is the primary context retained by `_context`, alive as long as `self`.
        unsafe { check(sys::cuCtxSetCurrent(self.context), "cuCtxSetCurrent") }
    }

    /// A handle to this GPU's context that another thread can make current (`ContextRef::bind`).
    pub fn context_ref(&self) -> ContextRef<'_> {
        ContextRef { raw: self.context, _gpu: std::marker::PhantomData }
    }

    /// The context's raw handle (for calls that name a context, such as `cuMemcpyPeer`).
    pub fn context(&self) -> CUcontext {
        self.context
    }

    /// Loads the PTX once more as a separate module (the first-launch experiments need a fresh one).
    pub fn load_fresh_module(&self) -> anyhow::Result<cust::module::Module> {
        load_module(&self.ptx)
    }

    /// The module the kernels come from.
    pub fn module(&self) -> &cust::module::Module {
        &self.module
    }

    /// Waits for all work on the device (`cuCtxSynchronize`).
    pub fn synchronize(&self) -> CudaResult<()> {
        self.bind()?;
        // SAFETY: this GPU's context is current (just bound) and alive for as long as `self`.
        unsafe { check(sys::cuCtxSynchronize(), "cuCtxSynchronize") }
    }

    /// Launches `f` on `stream`. `params` holds one pointer per kernel parameter, to a value of that
    /// parameter's exact type.
    ///
    /// # Safety
    /// `params` must match the kernel's parameter list, and every device pointer among the values must
    /// stay valid until the kernel has finished.
    pub unsafe fn launch(
        &self,
        f: CUfunction,
        grid: u32,
        block: u32,
        stream: CUstream,
        params: &mut [*mut c_void],
    ) -> CudaResult<()> {
        // SAFETY: the caller promises that `params` matches `f`'s parameters and that the device pointers
        // among them outlive the kernel; `params` itself only needs to live for the call, which copies it.
        let rc = unsafe {
            sys::cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, stream, params.as_mut_ptr(), std::ptr::null_mut())
        };
        check(rc, "cuLaunchKernel")
    }

    /// The blocker: one thread spinning on the GPU's nanosecond timer for `ns`; if `stamps` is not 0 it gets
    /// the start and end timer values (two u64).
    pub fn launch_spin_wait_ns(&self, stream: StreamHandle<'_>, ns: u64, stamps: u64) -> CudaResult<()> {
        self.bind()?;
        let (mut ns, mut stamps) = (ns, stamps);
        // SAFETY: spin_wait_ns(u64, *mut u64); `stamps` is 0 or a device allocation of at least 16 bytes that
        // the caller keeps alive until the stream is synchronized.
        unsafe { self.launch(self.kernels.spin_wait_ns, 1, 1, stream.raw(), &mut [ptr(&mut ns), ptr(&mut stamps)]) }
    }

    /// The blocker kernel for a launch that is itself timed: like `launch_spin_wait_ns` (no stamps), but it
    /// does not `bind` (the caller has), so the measured span holds one driver call.
    pub fn launch_spin_wait_ns_timed(&self, stream: StreamHandle<'_>, ns: u64) -> CudaResult<()> {
        let (mut ns, mut stamps) = (ns, 0u64);
        // SAFETY: spin_wait_ns(u64, *mut u64) with a null stamps pointer, which the kernel skips.
        unsafe { self.launch(self.kernels.spin_wait_ns, 1, 1, stream.raw(), &mut [ptr(&mut ns), ptr(&mut stamps)]) }
    }

    /// An empty kernel (one thread). Timed by the launch experiments, so it does not `bind`.
    pub fn launch_empty(&self, stream: StreamHandle<'_>) -> CudaResult<()> {
        // SAFETY: `empty` takes no parameters.
        unsafe { self.launch(self.kernels.empty, 1, 1, stream.raw(), &mut []) }
    }

    /// Fills `len` bytes at device address `dst` with the test pattern for `seed`.
    pub fn launch_fill(&self, stream: StreamHandle<'_>, dst: u64, len: u64, seed: u32) -> CudaResult<()> {
        self.bind()?;
        let (mut dst, mut len, mut seed) = (dst, len, seed);
        // SAFETY: fill(*mut u8, u64, u32); the caller guarantees `dst..dst+len` is device-accessible memory
        // that stays alive until the stream is synchronized.
        unsafe {
            self.launch(
                self.kernels.fill,
                WIDE_GRID,
                WIDE_BLOCK,
                stream.raw(),
                &mut [ptr(&mut dst), ptr(&mut len), ptr(&mut seed)],
            )
        }
    }

    /// Adds the checksum of `len` bytes at `src` to the u64 at `out` (which the caller zeroes first).
    pub fn launch_checksum(&self, stream: StreamHandle<'_>, src: u64, len: u64, out: u64) -> CudaResult<()> {
        self.bind()?;
        let (mut src, mut len, mut out) = (src, len, out);
        // SAFETY: checksum(*const u8, u64, *mut u64); the caller guarantees both ranges are device-accessible
        // and alive until the stream is synchronized.
        unsafe {
            self.launch(
                self.kernels.checksum,
                WIDE_GRID,
                WIDE_BLOCK,
                stream.raw(),
                &mut [ptr(&mut src), ptr(&mut len), ptr(&mut out)],
            )
        }
    }

    /// `grid` x `block` threads each spin for `cycles` SM clock cycles and write the cycles they waited to
    /// `out[thread]` (u64 each).
    pub fn launch_spin_sleep(
        &self,
        stream: StreamHandle<'_>,
        grid: u32,
        block: u32,
        cycles: u64,
        out: u64,
    ) -> CudaResult<()> {
        let (mut cycles, mut out) = (cycles, out);
        // SAFETY: spin_sleep(u64, *mut u64); `out` holds grid*block u64s, alive until the stream is synchronized.
        unsafe {
            self.launch(self.kernels.spin_sleep, grid, block, stream.raw(), &mut [ptr(&mut cycles), ptr(&mut out)])
        }
    }

    /// One thread writes the GPU's nanosecond timer to `out`.
    pub fn launch_write_globaltimer(&self, stream: StreamHandle<'_>, out: u64) -> CudaResult<()> {
        self.bind()?;
        let mut out = out;
        // SAFETY: write_globaltimer(*mut u64); `out` is a live device allocation of at least 8 bytes.
        unsafe { self.launch(self.kernels.write_globaltimer, 1, 1, stream.raw(), &mut [ptr(&mut out)]) }
    }
}

/// `cuCtxSynchronize` of whatever context is current, without making one current first (`Gpu::synchronize`
/// does): for a measured span that must hold this one call.
#[inline]
pub fn ctx_synchronize() -> CudaResult<()> {
    // SAFETY: no arguments; without a current context the driver returns an error code.
    unsafe { check(sys::cuCtxSynchronize(), "cuCtxSynchronize") }
}

/// A borrowed context that may cross to another thread, to be made current there.
#[derive(Clone, Copy, Debug)]
pub struct ContextRef<'g> {
    raw: CUcontext,
    _gpu: std::marker::PhantomData<&'g Gpu>,
}

// SAFETY: a context may be made current on any thread; the handle is only ever passed to `cuCtxSetCurrent`,
// and its lifetime keeps the `Gpu` (which owns the context) alive.
unsafe impl Send for ContextRef<'_> {}

impl ContextRef<'_> {
    /// The same handle without the borrow, for a thread that is not scoped (one the owner joins by hand).
    ///
    /// # Safety
    /// The `Gpu` must stay alive for as long as the returned handle is used.
    pub unsafe fn unbounded(self) -> ContextRef<'static> {
        ContextRef { raw: self.raw, _gpu: std::marker::PhantomData }
    }

    /// `cuCtxSetCurrent`: makes the context current on the calling thread.
    pub fn bind(self) -> CudaResult<()> {
        // SAFETY: the context is alive as long as the borrowed `Gpu`.
        unsafe { check(sys::cuCtxSetCurrent(self.raw), "cuCtxSetCurrent") }
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // The module is unloaded from the current context: make it this GPU's (the fields drop after this).
        let _ = self.bind();
    }
}

/// A context of its own on `gpu`'s device, created with scheduling flags (`cuCtxCreate`), with the kernels'
/// module loaded again, a non-blocking stream and two events in it. It is current while it lives; dropping it
/// destroys what it made (in reverse order) and makes the previously current context current again.
///
/// Fields are declared in the order they must be destroyed.
pub struct FlaggedContext {
    start: sys::CUevent,
    end: sys::CUevent,
    stream: CUstream,
    spin_wait_ns: CUfunction,
    module: Option<cust::module::Module>,
    ctx: CUcontext,
    previous: CUcontext,
}

impl FlaggedContext {
    /// Creates the context with `flags` (`CU_CTX_SCHED_*`) and makes it current.
    pub fn create(gpu: &Gpu, flags: u32) -> anyhow::Result<FlaggedContext> {
        let mut fc = FlaggedContext {
            start: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            stream: std::ptr::null_mut(),
            spin_wait_ns: std::ptr::null_mut(),
            module: None,
            ctx: std::ptr::null_mut(),
            previous: std::ptr::null_mut(),
        };
        // SAFETY: valid out-pointers; cuCtxCreate makes the new context current, and `Drop` destroys what was
        // made (in reverse order) and makes the previous context current again.
        unsafe {
            crate::drv!(cuCtxGetCurrent(&mut fc.previous))?;
            crate::drv!(cuCtxCreate_v2(&mut fc.ctx, flags, gpu.device))?;
        }
        let module = gpu.load_fresh_module()?;
        fc.spin_wait_ns = module.get_function(kernels::SPIN_WAIT_NS.name)?.to_raw();
        fc.module = Some(module);
        // SAFETY: valid out-pointers in the (current) new context.
        unsafe {
            crate::drv!(cuStreamCreate(&mut fc.stream, sys::CU_STREAM_NON_BLOCKING))?;
            crate::drv!(cuEventCreate(&mut fc.start, sys::CU_EVENT_DEFAULT))?;
            crate::drv!(cuEventCreate(&mut fc.end, sys::CU_EVENT_DEFAULT))?;
        }
        Ok(fc)
    }

    /// Records the start event, launches `spin_wait_ns` for `ns` (no stamps) and records the end event, on
    /// the context's stream.
    pub fn enqueue_spin(&self, ns: u64) -> CudaResult<()> {
        let (mut ns, mut stamps) = (ns, 0u64);
        let mut params = [ptr(&mut ns), ptr(&mut stamps)];
        // SAFETY: spin_wait_ns(u64, *mut u64) with a null stamps pointer, which the kernel skips; all handles
        // belong to this context, alive as long as `self`; `params` outlives the launch, which copies it.
        unsafe {
            crate::drv!(cuEventRecord(self.start, self.stream))?;
            crate::drv!(cuLaunchKernel(
                self.spin_wait_ns,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                self.stream,
                params.as_mut_ptr(),
                std::ptr::null_mut()
            ))?;
            crate::drv!(cuEventRecord(self.end, self.stream))
        }
    }

    /// `cuStreamSynchronize` of the context's stream (the call under test: nothing else).
    #[inline]
    pub fn synchronize_stream(&self) -> CudaResult<()> {
        // SAFETY: a live stream of this context.
        unsafe { check(sys::cuStreamSynchronize(self.stream), "cuStreamSynchronize") }
    }

    /// Whether the kernel of the last `enqueue_spin` has finished (its end event, `cuEventQuery`).
    pub fn spin_done(&self) -> CudaResult<bool> {
        // SAFETY: a live event of this context.
        match unsafe { sys::cuEventQuery(self.end) } {
            sys::CUDA_SUCCESS => Ok(true),
            sys::CUDA_ERROR_NOT_READY => Ok(false),
            rc => Err(crate::CudaError::driver(rc, "cuEventQuery")),
        }
    }

    /// Nanoseconds between the two events of the last `enqueue_spin` (both complete).
    pub fn elapsed_ns(&self) -> CudaResult<u64> {
        let mut ms = 0f32;
        // SAFETY: valid out-pointer; both events are live, recorded and complete (the caller synchronized).
        unsafe { crate::drv!(cuEventElapsedTime(&mut ms, self.start, self.end))? };
        Ok((ms as f64 * 1e6) as u64)
    }
}

impl Drop for FlaggedContext {
    fn drop(&mut self) {
        // SAFETY: each handle was created in `create` in `self.ctx` (null ones are skipped) and is destroyed
        // once, the module before the context; then the previous context becomes current again.
        unsafe {
            if !self.end.is_null() {
                sys::cuEventDestroy_v2(self.end);
            }
            if !self.start.is_null() {
                sys::cuEventDestroy_v2(self.start);
            }
            if !self.stream.is_null() {
                sys::cuStreamDestroy_v2(self.stream);
            }
            self.module = None;
            if !self.ctx.is_null() {
                sys::cuCtxDestroy_v2(self.ctx);
            }
            sys::cuCtxSetCurrent(self.previous);
        }
    }
}

/// A kernel parameter slot for `cuLaunchKernel`.
fn ptr<T>(value: &mut T) -> *mut c_void {
    value as *mut T as *mut c_void
}

fn load_module(ptx: &Ptx) -> anyhow::Result<cust::module::Module> {
    cust::module::Module::from_ptx(ptx.text(), &[])
        .map_err(|e| anyhow!("the driver rejected the PTX from {}: {e}", ptx.origin()))
}

/// Looks up every kernel by name in `module`.
pub fn lookup_kernels(module: &cust::module::Module) -> anyhow::Result<Kernels> {
    let get = |name: &str| -> anyhow::Result<CUfunction> {
        Ok(module.get_function(name).with_context(|| format!("kernel `{name}` is not in the module"))?.to_raw())
    };
    Ok(Kernels {
        spin_sleep: get(kernels::SPIN_SLEEP.name)?,
        spin_wait_ns: get(kernels::SPIN_WAIT_NS.name)?,
        empty: get(kernels::EMPTY.name)?,
        fill: get(kernels::FILL.name)?,
        checksum: get(kernels::CHECKSUM.name)?,
        write_globaltimer: get(kernels::WRITE_GLOBALTIMER.name)?,
    })
}

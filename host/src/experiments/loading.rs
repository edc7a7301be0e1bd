//! Loading code while the GPU works: what the host thread does when it loads a module or a library, looks up
//! a kernel in it, or launches one of its kernels for the first time, while a kernel or a large copy runs.
//!
//! Programs load code at run time more often than one would think (JIT-compiled kernels, plugins, the kernels
//! of PyTorch's and JAX's compilers), and with lazy loading (the default on Linux since CUDA 12.2) the first
//! use of a kernel is a load too. NVIDIA warns that loading a kernel lazily may synchronize the context (rule
//! K4) and says nothing about the loads and lookups themselves (L1, L2). Each step is measured on its own,
//! under CUDA_MODULE_LOADING=LAZY and =EAGER (a child process each, see `runner.rs`):
//!
//! 1. the load of the project's PTX (`cuModuleLoadData`, `cuLibraryLoadData`, `cudaLibraryLoadData`);
//! 2. a lookup in code loaded just before (`cuModuleGetFunction`, `cuLibraryGetKernel`, `cuKernelGetFunction`,
//!    `cudaLibraryGetKernel`);
//! 3. the first launch of the kernel `spin_wait_ns` (1 ms) of a library loaded just before: `cuLaunchKernel`
//!    given the library's kernel handle itself (its API reference allows that since CUDA 12.0, the context
//!    being the stream's), and `cudaLaunchKernel`. The kernel runs 1 ms so that a launch that waited for the
//!    work ahead and then returned still has its own work running (an empty kernel's microseconds would race
//!    the stream query).
//!
//! Each in up to three situations: a blocker kernel ahead of the call in its own stream (launches only: the
//! other calls take no stream), a blocker on another non-blocking stream, and 256 MiB host → device copies from
//! pinned memory on another non-blocking stream. Both follow `method.rs`'s protocol: the copies take the
//! blocker's place as another `method::Background` (`Copies`).
//!
//! Every repetition starts from fresh code: what the call starts from (a module, a library, a kernel handle) is
//! loaded before the timed span, and what it used or loaded is unloaded after the device was synchronized,
//! outside the timed span (`repetition`).
//!
//! The cases' facts, ids and rules are the catalogue's (`async_lab_core::catalogue::loading`); this file
//! measures them.

use super::method::{blocker_ns_for, run_rep, Background, Blocker, BlockerPlan, Probe};
use super::{case_record, Case};
use async_lab_core::api::Api;
use async_lab_core::catalogue::loading::{Call, LoadFacts, Situation};
use async_lab_core::metrics::Metrics;
use async_lab_core::record::{CaseRecord, Rep};
use async_lab_driver::library::{Kernel, Library, Module};
use async_lab_driver::measure::monotonic_ns;
use async_lab_driver::runtime::library::{RtKernel, RtLibrary};
use async_lab_driver::{CudaResult, DeviceBuffer, Event, Gpu, HostBuffer, HostKind, Stream, StreamHandle, StreamKind};
use async_lab_ptx::kernels;
use std::ffi::{CStr, CString};

/// The kernel every case looks up and launches: no parameters, no work.
const EMPTY: &CStr = kernels::EMPTY.c_name;
/// The first launches run `spin_wait_ns` for this long: if a launch that waited for the work ahead then
/// returns at once, its own kernel is still running, so its own work never races the stream query.
const FIRST_LAUNCH_NS: u64 = 1_000_000;
const SPIN: &CStr = kernels::SPIN_WAIT_NS.c_name;
/// Bytes of each copy of the copy situation.
const COPY_BYTES: usize = 256 << 20;
/// At most this many copies are queued at once, well under the roughly thousand operations a stream queues
/// before an enqueue has to wait (K5).
const MAX_COPIES: usize = 512;

/// Code a repetition loaded: before its call (untimed; nothing for the loads themselves), or by its call.
enum Loaded<'g> {
    Nothing,
    Module(Module<'g>),
    Library(Library<'g>),
    Runtime(RtLibrary),
}

impl<'g> Loaded<'g> {
    fn for_call(gpu: &'g Gpu, api: Api, call: Call, image: &CStr) -> anyhow::Result<Loaded<'g>> {
        gpu.bind()?;
        Ok(match (api, call) {
            (_, Call::ModuleLoadData | Call::LibraryLoadData) => Loaded::Nothing,
            (Api::Driver, Call::ModuleGetFunction) => Loaded::Module(Module::load(gpu, image)?),
            (Api::Driver, Call::LibraryGetKernel | Call::KernelGetFunction | Call::FirstLaunch) => {
                Loaded::Library(Library::load(gpu, image)?)
            }
            (Api::Runtime, Call::LibraryGetKernel | Call::FirstLaunch) => {
                Loaded::Runtime(RtLibrary::load(gpu.ptx.text())?)
            }
            (Api::Runtime, Call::ModuleGetFunction | Call::KernelGetFunction) => {
                anyhow::bail!("the runtime has no counterpart of {}", call.driver_name())
            }
        })
    }
}

/// The call with what it starts from, borrowed from the repetition's `Loaded`.
#[derive(Clone, Copy)]
enum Step<'a> {
    ModuleLoadData,
    LibraryLoadData,
    RtLibraryLoadData,
    ModuleGetFunction(&'a Module<'a>),
    LibraryGetKernel(&'a Library<'a>),
    KernelGetFunction(Kernel<'a>),
    FirstLaunch(Kernel<'a>),
    RtLibraryGetKernel(&'a RtLibrary),
    RtFirstLaunch(RtKernel),
}

impl<'a> Step<'a> {
    /// Where the call starts from a kernel handle, looks it up now (untimed).
    fn new(api: Api, call: Call, loaded: &'a Loaded<'a>) -> anyhow::Result<Step<'a>> {
        Ok(match (api, call, loaded) {
            (Api::Driver, Call::ModuleLoadData, Loaded::Nothing) => Step::ModuleLoadData,
            (Api::Driver, Call::LibraryLoadData, Loaded::Nothing) => Step::LibraryLoadData,
            (Api::Runtime, Call::LibraryLoadData, Loaded::Nothing) => Step::RtLibraryLoadData,
            (Api::Driver, Call::ModuleGetFunction, Loaded::Module(m)) => Step::ModuleGetFunction(m),
            (Api::Driver, Call::LibraryGetKernel, Loaded::Library(l)) => Step::LibraryGetKernel(l),
            (Api::Driver, Call::KernelGetFunction, Loaded::Library(l)) => Step::KernelGetFunction(l.kernel(EMPTY)?),
            (Api::Driver, Call::FirstLaunch, Loaded::Library(l)) => Step::FirstLaunch(l.kernel(SPIN)?),
            (Api::Runtime, Call::LibraryGetKernel, Loaded::Runtime(l)) => Step::RtLibraryGetKernel(l),
            (Api::Runtime, Call::FirstLaunch, Loaded::Runtime(l)) => Step::RtFirstLaunch(l.kernel_named(SPIN)?),
            (_, call, _) => anyhow::bail!("{} was not given the code it starts from", call.driver_name()),
        })
    }
}

/// One repetition's call.
struct LoadProbe<'a> {
    gpu: &'a Gpu,
    step: Step<'a>,
    /// The launches' stream (the other calls take none).
    stream: StreamHandle<'a>,
    image: &'a CStr,
    /// What the call loaded, if it is a load; unloaded with the probe, after the device was synchronized.
    made: Loaded<'a>,
}

impl Probe for LoadProbe<'_> {
    fn prepare(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        // The code the call starts from was loaded before this probe was made (see `repetition`).
        Ok(())
    }

    fn call(&mut self, _gpu: &Gpu) -> CudaResult<()> {
        // Each arm is one API call. `made` is empty before it (a probe serves one repetition), so storing what
        // a load made unloads nothing inside the timed span. Both APIs get the same prebuilt C strings (the PTX
        // image, the kernel's name): no copy of them is timed.
        let (gpu, image) = (self.gpu, self.image);
        match self.step {
            Step::ModuleLoadData => Module::load(gpu, image).map(|m| self.made = Loaded::Module(m)),
            Step::LibraryLoadData => Library::load(gpu, image).map(|l| self.made = Loaded::Library(l)),
            Step::RtLibraryLoadData => RtLibrary::load_image(image).map(|l| self.made = Loaded::Runtime(l)),
            Step::ModuleGetFunction(m) => m.function(EMPTY).map(|_| ()),
            Step::LibraryGetKernel(l) => l.kernel(EMPTY).map(|_| ()),
            Step::KernelGetFunction(k) => k.function().map(|_| ()),
            // SAFETY: the kernel was looked up as `spin_wait_ns` (`SPIN`) in `for_call`.
            Step::FirstLaunch(k) => unsafe { k.launch_spin(self.stream, FIRST_LAUNCH_NS) },
            Step::RtLibraryGetKernel(l) => l.kernel_named(EMPTY).map(|_| ()),
            // SAFETY: the kernel is `spin_wait_ns`; its library is the repetition's `Loaded`, which `repetition`
            // unloads only after this probe is gone and the device is idle; `self.stream` is live (its lifetime
            // says so) and belongs to the primary context, the runtime's current device's.
            Step::RtFirstLaunch(k) => unsafe { k.launch_spin(self.stream, FIRST_LAUNCH_NS) },
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        matches!(self.step, Step::FirstLaunch(_) | Step::RtFirstLaunch(_)).then_some(self.stream)
    }

    fn verify(&mut self, _gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
        Ok(None)
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: LoadFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    // The PTX as the driver takes it, made once, outside every timed span.
    let image = CString::new(gpu.ptx.text())?;
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let other = Stream::new(gpu, StreamKind::NonBlocking)?;
    // The work that keeps the GPU busy during the call, made once per case: the blocker, or the copies on the
    // other stream (never ahead of the call).
    let on = if op.situation == Situation::Same { stream.handle() } else { other.handle() };
    let plan = BlockerPlan { stream: on, ahead: case.setup.layout.blocker_ahead };
    let background: Box<dyn Background + '_> = match op.situation {
        Situation::Same | Situation::Other => Box::new(Blocker::new(gpu)?),
        Situation::Copy => Box::new(Copies::new(gpu, other.handle())?),
    };
    let call = (case.setup.api, op.call);
    let one = |ns| repetition(gpu, call, &image, stream.handle(), background.as_ref(), plan, ns);
    // The warm-up is the call alone (on fresh code too); it sizes the blocker or the copies, as in `method.rs`.
    let warmup = one(0)?;
    let ns = blocker_ns_for(&warmup);
    let measured = (0..reps).map(|_| one(ns)).collect::<anyhow::Result<Vec<_>>>()?;
    Ok(case_record(case, Some(warmup), Some(ns), measured))
}

/// One repetition: the code the call starts from is loaded (untimed), the call is measured against the
/// background work (none when `ns` is 0), and the device is synchronized before this repetition's code is
/// unloaded. The code lives here, outside the probe, so that the probe's step borrows it: nothing the call
/// starts from can be unloaded before the probe is gone. `call` is the call under test and its API.
fn repetition(
    gpu: &Gpu,
    (api, call): (Api, Call),
    image: &CStr,
    stream: StreamHandle<'_>,
    background: &dyn Background,
    plan: BlockerPlan<'_>,
    ns: u64,
) -> anyhow::Result<Rep> {
    let loaded = Loaded::for_call(gpu, api, call, image)?;
    let mut probe = LoadProbe { gpu, step: Step::new(api, call, &loaded)?, stream, image, made: Loaded::Nothing };
    // The loading calls read no host memory, so no repetition is discarded for the staging probe.
    let rep = run_rep(gpu, &mut probe, plan, background, ns)
        .and_then(|rep| rep.ok_or_else(|| anyhow::anyhow!("a load never probes a source")));
    // Whatever happened, nothing from this repetition's code may still run when it is unloaded (the runtime's
    // `Library` does not wait by itself).
    let settled = gpu.synchronize();
    drop(probe); // with what the call loaded
    drop(loaded); // what it started from
    let rep = rep?;
    settled?;
    Ok(rep)
}

/// The copy situation's background work: 256 MiB host → device copies from pinned memory on another,
/// non-blocking stream, enough of them back to back to outlast the call the way a blocker would (one copy
/// takes a few milliseconds, a load can take longer).
struct Copies<'a> {
    gpu: &'a Gpu,
    stream: StreamHandle<'a>,
    host: HostBuffer<'a>,
    device: DeviceBuffer<'a>,
    start: Event<'a>,
    end: Event<'a>,
    /// `%globaltimer` stamps of two empty spins, one right before the copies and one right after them in their
    /// stream: the copies' span on the GPU's clock, which dates their end the way the blocker's stamps date its.
    stamps: DeviceBuffer<'a>,
    /// One copy's device time, measured alone.
    one_ns: u64,
}

impl<'a> Copies<'a> {
    fn new(gpu: &'a Gpu, stream: StreamHandle<'a>) -> anyhow::Result<Copies<'a>> {
        let host = HostBuffer::new(gpu, HostKind::Pinned, COPY_BYTES)?;
        let device = DeviceBuffer::new(gpu, COPY_BYTES)?;
        let stamps = DeviceBuffer::new(gpu, 32)?;
        let mut copies =
            Copies { gpu, stream, host, device, start: Event::new(gpu)?, end: Event::new(gpu)?, stamps, one_ns: 1 };
        // One copy alone, twice (the first may be slower); the second sizes the traffic.
        for _ in 0..2 {
            copies.launch(1)?;
            copies.end.synchronize()?;
        }
        copies.one_ns = copies.device_ns()?.max(1);
        Ok(copies)
    }

    /// Enqueues `count` copies between the two events; returns the host time just before.
    fn launch(&self, count: usize) -> CudaResult<u64> {
        self.gpu.bind()?;
        let t = monotonic_ns();
        self.start.record(self.stream)?;
        self.gpu.launch_spin_wait_ns(self.stream, 0, self.stamps.ptr)?;
        for _ in 0..count {
            // SAFETY: `host` is pinned memory and `device` device memory, both COPY_BYTES long and owned by `self`,
            // which synchronizes the device before they are freed (`Drop`); `self.stream` is live (its lifetime).
            // What the source holds does not matter: nothing reads what arrives.
            unsafe {
                async_lab_driver::memory::memcpy_htod_async(
                    self.device.ptr,
                    self.host.as_ptr().cast_const().cast(),
                    COPY_BYTES,
                    self.stream,
                )?
            };
        }
        self.gpu.launch_spin_wait_ns(self.stream, 0, self.stamps.ptr + 16)?;
        self.end.record(self.stream)?;
        Ok(t)
    }

    fn are_done(&self) -> CudaResult<bool> {
        self.end.is_done()
    }

    /// After they finished: the device time from the first copy's start to the last one's end.
    fn device_ns(&self) -> CudaResult<u64> {
        self.end.ns_since(&self.start)
    }
}

/// How many copies of `one_ns` each keep the copy engine busy for at least `ns` (at most `MAX_COPIES`).
fn copies_for(ns: u64, one_ns: u64) -> usize {
    usize::try_from(ns.div_ceil(one_ns.max(1))).unwrap_or(MAX_COPIES).clamp(1, MAX_COPIES)
}

/// The copies in the blocker's place (`method::run_rep`): "the blocker had finished" becomes "the copies had
/// finished" (their end event). They are on another stream, never ahead of the call, so `classify_rep` calls a
/// call that waited for them `device-sync`.
impl Background for Copies<'_> {
    /// `ns` of copies on their own stream (`stream`, the plan's, is that same stream).
    fn launch(&self, _stream: StreamHandle<'_>, ns: u64) -> CudaResult<u64> {
        Copies::launch(self, copies_for(ns, self.one_ns))
    }
    fn is_done(&self) -> CudaResult<bool> {
        self.are_done()
    }
    /// From the first spin's start to the last one's end on the GPU's clock: the copies between them.
    fn read(&self) -> CudaResult<(u64, Option<[u64; 2]>)> {
        let s = self.stamps.read_u64s(4)?;
        Ok((self.device_ns()?, Some([s[0], s[3]])))
    }
    fn start_event(&self) -> Option<&Event<'_>> {
        None
    }
    fn gpu(&self) -> &Gpu {
        self.gpu
    }
    fn metrics(&self, ns: u64) -> Metrics {
        Metrics { copies_in_flight: Some(copies_for(ns, self.one_ns) as f64), ..Metrics::EMPTY }
    }
}

impl Drop for Copies<'_> {
    fn drop(&mut self) {
        // After an error copies may still be in flight; the buffers are freed right after this.
        let _ = self.gpu.synchronize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_sized_to_outlast_the_call() {
        assert_eq!(copies_for(20_000_000, 5_000_000), 4);
        assert_eq!(copies_for(21_000_000, 5_000_000), 5);
        assert_eq!(copies_for(1, 5_000_000), 1);
        assert_eq!(copies_for(2_000_000_000, 1), MAX_COPIES);
        assert_eq!(copies_for(20_000_000, 0), MAX_COPIES);
    }
}

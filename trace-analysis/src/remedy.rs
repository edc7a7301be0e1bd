//! The remedies' words: for each cause a finding names (`cause::Kind`) and for each verdict (`headline`), what
//! to change, in the API of the framework the program's calls were made through (`framework`: PyTorch, JAX,
//! CuPy, Numba, or the CUDA API itself), fitted to the call it is about (an allocation is not a free, a
//! one-time upload is not a data loader's batch, a result read is not a stream of batches), with what the lab
//! measured of it on the H200 beside it (`remedies`, `capability`).
//!
//! A new remedy goes here: one function per cause, each worded per framework; [`remedy`] picks it.

use super::analysis::Analysis;
use super::capability;
use super::cause::Kind;
use super::format::cupti_kinds::copy;
use super::format::Domain;
use super::framework::Framework;
use super::functions::{self, Does};
use super::records::WorkKind;
use super::remedies;
use super::what_held::{gpu_busy, main_holder};
use super::words::{duration, percent};
use crate::units::size_words;
use serde::{Deserialize, Serialize};

/// What to change, and what the lab measured of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Remedy {
    /// In words.
    pub words: String,
    /// The lab's experiments behind the numbers in it.
    pub lab: Vec<LabEvidence>,
}

/// One experiment of the lab's that a remedy quotes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LabEvidence {
    /// The case id (`async-lab explain CASE --replay recordings/RECORDING`).
    pub case: String,
    pub recording: String,
    /// What it measured, in words.
    pub words: String,
}

/// What a remedy is about: a group of calls of one cause, its longest first, and the framework they were
/// made through.
struct Group<'a> {
    a: &'a Analysis<'a>,
    calls: &'a [usize],
    framework: Framework,
    /// `runtime` or `driver`: the API of the longest call, for the lab's measurement of the same API.
    api: &'static str,
    lab: Vec<LabEvidence>,
}

impl Group<'_> {
    fn longest(&self) -> usize {
        self.calls[0]
    }

    fn name(&self) -> &str {
        &self.a.program.calls[self.longest()].name
    }

    fn median(&self) -> String {
        let mut times: Vec<i64> = self.calls.iter().map(|&i| self.a.traced[i].held.total_ns).collect();
        times.sort_unstable();
        duration(times[times.len() / 2])
    }

    /// The lab's experiment that shows the longest call's function can wait the way it did.
    fn basis(&mut self) {
        let Some(e) = self.a.traced[self.longest()].basis.as_ref() else { return };
        let condition = if e.condition == capability::Condition::Always {
            String::new()
        } else {
            format!(" {}", e.condition.words())
        };
        self.lab.push(LabEvidence {
            case: e.case.clone(),
            recording: e.recording.clone(),
            words: format!("{} can {}{condition}", e.function, e.way.words()),
        });
    }
}

/// The remedy of a group of calls held by `kind`, made through `framework` (`calls`: longest first).
pub fn remedy(a: &Analysis, kind: Kind, calls: &[usize], framework: Framework) -> Remedy {
    let api = match a.program.calls[calls[0]].domain {
        Domain::Runtime => "runtime",
        Domain::Driver => "driver",
    };
    let mut g = Group { a, calls, framework, api, lab: Vec::new() };
    let words = match kind {
        Kind::ContextCreation => context_creation(framework),
        Kind::LoadingCode => loading_code(&mut g),
        Kind::Compiling => compiling(framework),
        Kind::LibrarySetup => library_setup(framework),
        Kind::AllocatorGrowth => allocator_growth(&g),
        Kind::Upload => upload(framework),
        Kind::PageableCopy => pageable_copy(&mut g),
        Kind::Synchronization => synchronization(&mut g),
        Kind::FreeDrainsDevice => free_drains_device(&mut g),
        Kind::DeviceWait => device_wait(&mut g),
        Kind::FullQueue => full_queue(&mut g),
        Kind::OtherThread => other_thread(&mut g),
        Kind::StreamWait => stream_wait(&mut g),
        Kind::DriverWork => driver_work(&mut g),
        Kind::Other => format!("See --explain {}.", a.program.calls[calls[0]].corr),
    };
    Remedy { words, lab: g.lab }
}

fn context_creation(f: Framework) -> String {
    let how = match f {
        Framework::Torch => "torch.cuda.init(), or any CUDA tensor at start-up",
        Framework::Jax => "jax.devices(), or a first jax.numpy operation at start-up",
        Framework::CuPy => "cupy.cuda.Device(0).use(), or a first CuPy array at start-up",
        Framework::Numba => "cuda.current_context() at start-up",
        Framework::Native => "cudaFree(0) or cudaInitDevice at start-up",
    };
    format!(
        "Paid once per process, and not to be avoided, only moved: create the context before the part you time \
         ({how}), or leave start-up out (--after-startup)."
    )
}

fn loading_code(g: &mut Group) -> String {
    let first = match g.framework {
        Framework::Torch => {
            "PyTorch loads each kernel's module and each library (cuBLAS, cuDNN) at its first use: run one \
             warm-up step with the real shapes before the part you time, or set CUDA_MODULE_LOADING=EAGER to load \
             a module's kernels with it."
        }
        Framework::Jax => {
            "JAX compiles a jitted function at its first call with each new shape and loads its kernels then: \
             call it once with the real shapes before the part you time (or jax.jit(f).lower(...).compile()), \
             and keep shapes fixed so that it does not compile again."
        }
        Framework::CuPy => {
            "CuPy compiles (and caches on disk) and loads a kernel at its first call: call it once before the \
             part you time; CUDA_MODULE_LOADING=EAGER loads a module's kernels with it."
        }
        Framework::Numba => {
            "A @cuda.jit kernel compiles and loads at its first call: call it once before the part you time, or \
             give it its signature (@cuda.jit(\"void(float32[:])\")) so that it compiles when defined."
        }
        Framework::Native => {
            "Load the code before the loop: launch each kernel once first (a warm-up), load libraries at \
             start-up, or set CUDA_MODULE_LOADING=EAGER to load a module's kernels with it."
        }
    };
    let mut words = first.to_owned();
    let lab = remedies::lab();
    let lazy = lab.load(g.api, "first-launch", "lazy", "other");
    let eager = lab.load(g.api, "first-launch", "eager", "other");
    let library = lab.load(g.api, "library-load-data", "eager", "other");
    if let (Some(lazy), Some(eager)) = (lazy, eager) {
        words.push_str(&format!(
            " On the lab's {} a first launch under lazy loading waited {} for a kernel on another stream \
             ({}); under EAGER it returned in {}",
            lab.gpu,
            duration(lazy.waited_ns),
            lazy.class,
            duration(eager.returned_ns)
        ));
        for l in [lazy, eager] {
            g.lab.push(LabEvidence {
                case: l.case.clone(),
                recording: l.recording.clone(),
                words: format!("a first launch under {} loading: {}, {}", l.loading, l.class, duration(l.returned_ns)),
            });
        }
        match library {
            Some(lib) if lib.waited_ns > 0 => {
                words.push_str(&format!(
                    ", and loading the library waited for the device instead ({}): load before the GPU is busy.",
                    duration(lib.waited_ns)
                ));
                g.lab.push(LabEvidence {
                    case: lib.case.clone(),
                    recording: lib.recording.clone(),
                    words: format!("a library load under eager loading: {}, {}", lib.class, duration(lib.returned_ns)),
                });
            }
            _ => words.push('.'),
        }
    }
    words
}

fn compiling(f: Framework) -> String {
    let how = match f {
        Framework::Numba => "give the kernel its signature so that it compiles when defined",
        Framework::CuPy => "CuPy keeps what it compiled on disk (CUPY_CACHE_DIR): later runs load it",
        Framework::Jax => {
            "JAX's persistent compilation cache (jax.config.update(\"jax_compilation_cache_dir\", ...)) \
                           keeps it for later runs"
        }
        _ => {
            "build for this GPU's architecture (nvcc -arch=sm_90) rather than PTX alone, so that nothing is compiled \
              at run time"
        }
    };
    format!(
        "The driver compiled code for this GPU once per kernel (a JIT): paid once, before the part you time; \
         {how}. The driver also caches it (CUDA_CACHE_PATH)."
    )
}

fn library_setup(f: Framework) -> String {
    match f {
        Framework::Torch => "cuBLAS and cuDNN set themselves up at their first use (a handle, a workspace, and with \
                             torch.backends.cudnn.benchmark=True the autotuning of each new shape): paid once; run a \
                             warm-up step with the real shapes before the part you time."
            .into(),
        Framework::Jax => {
            "XLA's libraries (cuBLAS, cuDNN) set themselves up and autotune at a jitted function's first \
                           call: paid once; call it once with the real shapes before the part you time."
                .into()
        }
        _ => "The library's handle and workspace are set up once: create the handle (cublasCreate, cudnnCreate) at \
              start-up and reuse it for every call, and set its stream and workspace once."
            .into(),
    }
}

fn allocator_growth(g: &Group) -> String {
    let host = g.calls.iter().filter(|&&i| functions::allocates_host(&g.a.program.calls[i].name)).count();
    if host > 0 && host < g.calls.len() && g.framework == Framework::Torch {
        return "PyTorch's caching allocators grew their pools (cudaMalloc for device memory, cudaHostAlloc for \
                pinned memory) at the first steps: they keep and reuse the memory from then on; paid once. To pay \
                it before the part you time, run a warm-up step with the real shapes, and keep shapes steady so \
                that they do not grow again."
            .into();
    }
    let pinned = host == g.calls.len();
    let what = match (g.framework, pinned) {
        (Framework::Torch, true) => {
            "PyTorch's pinned-memory cache grew (cudaHostAlloc at a first pin_memory() or pinned tensor of a size): \
             it keeps and reuses what it pinned"
        }
        (Framework::Torch, false) => {
            "PyTorch's caching allocator grew its pool (cudaMalloc) at the first steps: it keeps and reuses the \
             memory from then on"
        }
        (Framework::Jax, _) => {
            "XLA's allocator took memory (by default it reserves most of the GPU at start-up: \
             XLA_PYTHON_CLIENT_PREALLOCATE)"
        }
        (Framework::CuPy, true) => "CuPy's pinned memory pool grew: it keeps and reuses what it pinned",
        (_, _) => "The memory pool grew: it keeps and reuses what it allocated",
    };
    format!(
        "{what}; paid once. To pay it before the part you time, run a warm-up step with the real shapes, and \
         keep shapes steady so that it does not grow again."
    )
}

fn upload(f: Framework) -> String {
    let how = match f {
        Framework::Torch => {
            "the model's weights copied to the GPU once (model.to(device), .cuda()); to skip the copy, \
                             create them on the GPU: build the model under `with torch.device(\"cuda\"):`"
        }
        Framework::Jax => {
            "the parameters put on the GPU once (jax.device_put); to skip the copy, initialize them on \
                           the device (jax.random inside jax.jit)"
        }
        Framework::CuPy => {
            "the data copied to the GPU once (cupy.asarray); to skip the copy, create it there (cupy.random, \
                            cupy.zeros)"
        }
        Framework::Numba => {
            "the data copied to the GPU once (cuda.to_device); create it there (cuda.device_array) to skip \
                             the copy"
        }
        Framework::Native => "the program's data copied to the GPU once, before its first kernel",
    };
    format!("Paid once, at start-up, not in the loop: {how}. Pinning memory for a one-time copy saves little.")
}

fn pageable_copy(g: &mut Group) -> String {
    let p = &g.a.program;
    let own = p.own_work(g.longest());
    let copy = own.iter().find(|w| w.pageable());
    let (dtoh, bytes) = match copy.map(|w| (&w.kind, w.bytes)) {
        Some((WorkKind::Copy { copy_kind: copy::DTOH | copy::HTOH, .. }, b)) => (true, b),
        Some((_, b)) => (false, b),
        None => (false, 0),
    };
    let words = match (g.framework, dtoh) {
        (Framework::Torch, false) => "Pin the host memory: DataLoader(..., pin_memory=True) for batches, or \
                                      tensor.pin_memory() once for a tensor you reuse, then .to(device, \
                                      non_blocking=True)."
            .to_owned(),
        (Framework::Torch, true) => "Copy into pinned memory: a destination made once with torch.empty(..., \
                                     pin_memory=True), filled with dst.copy_(src, non_blocking=True), and an event \
                                     (torch.cuda.Event) waited on where the host reads it."
            .to_owned(),
        (Framework::Jax, false) => "jax.device_put of a NumPy array copies it through pageable memory: create the \
                                    data on the device (jax.numpy, jax.random), or put each batch ahead of its use \
                                    (prefetch the next batch with jax.device_put while the step runs)."
            .to_owned(),
        (Framework::Jax, true) => "Reading a result (np.asarray(x), float(x), jax.device_get) copies it into \
                                   pageable memory: read results less often (every N steps), or all at once with \
                                   one jax.device_get."
            .to_owned(),
        (Framework::CuPy, false) => "Allocate the host array in pinned memory (cupyx.empty_pinned, \
                                     cupyx.zeros_pinned) and copy it with ndarray.set(host, stream=stream)."
            .to_owned(),
        (Framework::CuPy, true) => "Copy into a pinned host array: x.get(stream=stream, out=cupyx.empty_pinned(...)), \
                                    then stream.synchronize() where the host reads it."
            .to_owned(),
        (Framework::Numba, false) => "Allocate the host array with cuda.pinned_array (or pin it with `with \
                                      cuda.pinned(a):`) and copy it on a stream: cuda.to_device(a, stream=stream)."
            .to_owned(),
        (Framework::Numba, true) => "Copy into an array made with cuda.pinned_array, on a stream: \
                                     d.copy_to_host(out, stream=stream)."
            .to_owned(),
        (Framework::Native, _) => "Pin the host memory: allocate it with cudaMallocHost / cudaHostAlloc (or pin an \
                                   existing buffer once with cudaHostRegister), then cudaMemcpyAsync on a stream."
            .to_owned(),
    };
    let mut words = words;
    let lab = remedies::lab();
    let direction = if dtoh { "dtoh" } else { "htod" };
    if let Some(m) = lab.pinned_copy(g.api, direction, bytes) {
        let gpu = m.gpu_ns.map_or(String::new(), |ns| {
            format!("; its transfer then ran {} on the GPU while the thread went on", duration(ns))
        });
        words.push_str(&format!(
            " On the lab's {} a pinned {} {} {} returned in {} (median of {}, {}–{}){gpu}.",
            lab.gpu,
            size_words(m.bytes),
            if dtoh { "device → host" } else { "host → device" },
            m.call.split('(').next().unwrap_or(&m.call),
            duration(m.returned_ns),
            m.repetitions,
            duration(m.min_ns),
            duration(m.max_ns)
        ));
        g.lab.push(LabEvidence {
            case: m.case.clone(),
            recording: m.recording.clone(),
            words: format!("a pinned {} copy returned in {}", size_words(m.bytes), duration(m.returned_ns)),
        });
    }
    words
}

fn synchronization(g: &mut Group) -> String {
    let first = match g.framework {
        Framework::Torch => {
            "Synchronize less often, only where the host needs a value: .item(), .cpu(), print(tensor) and `if \
             tensor:` each wait for all the work queued before them; read the loss every N steps (if step % N == \
             0: print(loss.item())), or add it up on the GPU (total += loss.detach()) and read it once."
        }
        Framework::Jax => {
            "Read results less often: float(x), np.asarray(x), x.block_until_ready() and printing each wait for \
             the computation; keep metrics as device arrays and jax.device_get them every N steps, so that the \
             jitted step's dispatch runs ahead."
        }
        Framework::CuPy => {
            "Read results less often: x.get(), cupy.asnumpy(x), float(x) and stream.synchronize() each wait for the \
             work queued before them; keep values on the GPU and read them every N steps."
        }
        Framework::Numba => {
            "Synchronize less often: copy_to_host() and cuda.synchronize() wait for the work queued before them; \
             enqueue a whole batch on a stream and synchronize it once."
        }
        Framework::Native => {
            "Synchronize less often, only where the host needs a result: cudaStreamSynchronize, cudaDeviceSynchronize \
             and a cudaMemcpy to the host wait for the work queued before them; record an event (cudaEventRecord) \
             and wait on it (cudaEventSynchronize, or cudaStreamWaitEvent on the GPU) where a later step needs it."
        }
    };
    let mut words = first.to_owned();
    let (busy, waited) = gpu_busy(&g.a.program, g.a, g.calls);
    if waited > 0 && busy * 10 >= waited * 9 {
        words.push_str(
            " The GPU was simply busy: the wait is its own work, so the step takes as long on the GPU; without the \
             synchronization the thread runs ahead and queues the next step meanwhile.",
        );
    } else if waited > 0 {
        words.push_str(&format!(
            " The GPU was idle {} of the wait: the thread waited for work queued late, or for a host function.",
            percent(waited - busy, waited)
        ));
    }
    g.basis();
    words
}

fn free_drains_device(g: &mut Group) -> String {
    g.basis();
    let what = match g.framework {
        Framework::Torch => "torch.cuda.empty_cache() gives the caching allocator's memory back with cudaFree, which \
                             waits for every stream: call it outside the loop, or not at all (the allocator reuses what \
                             it keeps).",
        Framework::Jax => "XLA freed device memory, which waits for every stream: keep arrays alive for reuse rather \
                           than deleting them in the loop (with XLA_PYTHON_CLIENT_ALLOCATOR=platform every array's \
                           memory is freed at once).",
        Framework::CuPy => "cupy.get_default_memory_pool().free_all_blocks() frees with cudaFree, which waits for every \
                            stream: call it outside the loop.",
        Framework::Numba => "A device array freed in the loop waits for every stream: allocate device arrays once, \
                             outside the loop, and reuse them.",
        Framework::Native => "cudaFree waits for every stream: free once at the end, or keep the buffer for reuse; \
                              cudaFreeAsync with a memory pool (cudaMallocAsync) does not wait for the device.",
    };
    format!("Move the free out of the loop: {what}")
}

fn device_wait(g: &mut Group) -> String {
    g.basis();
    let also = match g.framework {
        Framework::Torch => {
            " (torch.cuda.synchronize() does; a torch.cuda.Stream's own synchronize() waits for that stream \
             only)"
        }
        Framework::Native => " (cudaStreamSynchronize or cudaEventSynchronize wait for one stream only)",
        _ => "",
    };
    format!("Move {} out of the loop, or before the GPU work it waits for: it waits for every stream{also}.", g.name())
}

fn full_queue(g: &mut Group) -> String {
    g.basis();
    let lab = remedies::lab();
    let depth = capability::lab().queue_depth.unwrap_or(0.0);
    let shorter = match g.framework {
        Framework::Torch => "fewer, larger kernels (torch.compile fuses them; CUDA graphs replay a step in one launch)",
        Framework::Jax => "fewer, larger kernels (a larger jax.jit lets XLA fuse them)",
        Framework::CuPy => "fewer, larger kernels (cupy.fuse, or one ElementwiseKernel)",
        _ => "fewer, larger kernels (or a CUDA graph)",
    };
    format!(
        "The launch queue was full: {} launches ahead of it had not begun (the lab measured room for {depth:.0} on \
         its {}). The thread ran that far ahead of the GPU; the wait is the GPU's work. Only {shorter} shorten it; \
         nothing else on the host does.",
        g.a.program.queued_before(g.longest()),
        lab.gpu
    )
}

fn other_thread(g: &mut Group) -> String {
    g.basis();
    let who = main_holder(g.a, g.calls).map_or(String::new(), |(what, _, _)| format!(" ({what})"));
    let when = match g.framework {
        Framework::Torch => "before the threads start (a DataLoader's workers, a second model's thread)",
        _ => "before the threads start",
    };
    format!(
        "Another thread's slow call held it{who}: the driver lets one call of this kind run at a time. Make that \
         call (pinned allocation, module load) {when}, or outside the time that matters."
    )
}

fn stream_wait(g: &mut Group) -> String {
    g.basis();
    match g.framework {
        Framework::Torch => "It needs the work ahead in its stream to finish. Work that does not depend on it can go \
                             on a stream of its own (torch.cuda.Stream(), `with torch.cuda.stream(s):`); a copy from \
                             pinned memory with non_blocking=True does not wait."
            .into(),
        Framework::Jax => "It needs the computation ahead of it to finish: JAX orders work itself, so read results \
                           later or less often rather than right after the step that makes them."
            .into(),
        Framework::CuPy => {
            "It needs the work ahead in its stream to finish. Work that does not depend on it can go on \
                            a stream of its own (`with cupy.cuda.Stream(non_blocking=True):`)."
                .into()
        }
        Framework::Numba => {
            "It needs the work ahead in its stream to finish. Work that does not depend on it can go on \
                             a stream of its own (cuda.stream())."
                .into()
        }
        Framework::Native => "It needs the work ahead in its stream to finish. Work that does not depend on it can go \
                              on a stream of its own (cudaStreamCreateWithFlags(.., cudaStreamNonBlocking)); \
                              cudaMemcpyAsync from pinned memory does not wait."
            .into(),
    }
}

/// The driver's own work on the calling thread, worded by what the call does: an allocation, a free, pinning,
/// a launch, a stream or event created, or anything else.
fn driver_work(g: &mut Group) -> String {
    let median = g.median();
    let name = g.name().to_owned();
    match functions::does(&name) {
        Does::Allocates => match g.framework {
            Framework::Torch => format!(
                "PyTorch allocated again after memory was given back ({name} took {median} at the median here): \
                 keep torch.cuda.empty_cache() out of the loop and shapes steady, so that the caching allocator \
                 reuses its pool; pin a host tensor once and reuse it rather than pin_memory() at every step."
            ),
            _ if g.calls.len() == 1 => format!(
                "Allocate at start-up, before the part you time, and reuse the buffer: {name} took {median} here \
                 (pinning host memory takes the driver longest: it maps every page)."
            ),
            _ => format!(
                "Allocate once, outside the loop, and reuse the buffer ({name} took {median} at the median here); a \
                 memory pool (cudaMallocAsync) reuses freed memory without the driver's work."
            ),
        },
        Does::Frees | Does::Unregisters => format!(
            "Free (or unpin) once, at the end, not in the loop: {name} took {median} at the median here; keep \
             the buffer for reuse."
        ),
        Does::Registers => format!(
            "Pin once, outside the loop: {name} took {median} at the median here; pin a buffer once and reuse it."
        ),
        Does::LaunchesKernel | Does::LaunchesGraph => launch_work(g, &median),
        Does::Copies | Does::Sets => format!(
            "Each {} took {median} at the median here, in the driver's work on this thread: move fewer, larger \
             buffers (one per batch rather than one per tensor).",
            if functions::does(&name) == Does::Sets { "memset" } else { "copy" }
        ),
        Does::Synchronizes | Does::Queries => format!(
            "{name} found nothing to wait for and still took {median} at the median here in the driver: synchronize \
             (or ask) less often."
        ),
        Does::LooksUp => format!(
            "{name} looks up a function or its attributes ({median} at the median here): done once and kept, it costs \
             nothing more; made before each launch (by the program or its framework), it adds that to each."
        ),
        Does::Unloads => format!(
            "{name} unloaded code ({median} at the median here), as a program or its framework does when it lets go \
             of a module or library, usually at its end: paid once there; in a loop, keep the code loaded."
        ),
        Does::Manages => format!(
            "Create streams and events once, outside the loop, and reuse them ({name} took {median} at the median \
             here)."
        ),
        _ if g.a.traced[g.longest()].class == crate::class::Class::Blocking => format!(
            "The driver's own work on this thread held it ({median} at the median), and it returned only once its \
             own GPU work had ended; --explain shows the parts."
        ),
        _ => format!(
            "The driver's own work held it ({median} at the median), with nothing on the GPU to wait for; --explain \
             shows what ran during it."
        ),
    }
}

/// The remedy of launches the driver's work made slow, and of a thread busy launching: fewer launches.
fn launch_work(g: &mut Group, median: &str) -> String {
    let mut words = format!(
        "Each launch took {median} at the median here, in the driver's work on this thread: {}",
        fewer_launches(g.framework)
    );
    launch_costs(g.api, &mut words, &mut g.lab);
    words
}

/// How a framework makes fewer, larger launches.
fn fewer_launches(f: Framework) -> &'static str {
    match f {
        Framework::Torch => "launch fewer, larger kernels: torch.compile(model) fuses them, and \
                             torch.compile(model, mode=\"reduce-overhead\") or CUDA graphs (torch.cuda.CUDAGraph) replay a \
                             whole step in one launch; larger batches do more per launch.",
        Framework::Jax => "launch fewer, larger computations: jax.jit the whole training step (or several steps with \
                           jax.lax.scan), so that one dispatch runs many fused kernels.",
        Framework::CuPy => "launch fewer, larger kernels: fuse elementwise operations (cupy.fuse, an ElementwiseKernel), \
                            or capture the loop body in a CUDA graph (stream.begin_capture()).",
        Framework::Numba => "launch fewer, larger kernels: do more work per launch (a loop inside the kernel, larger \
                             grids).",
        Framework::Native => "launch fewer, larger kernels, or capture the loop body once in a CUDA graph \
                              (cudaStreamBeginCapture ... cudaGraphInstantiate) and launch it each step \
                              (cudaGraphLaunch).",
    }
}

/// What the lab measured of a warm kernel launch and a warm graph launch, through `api`.
fn launch_costs(api: &str, words: &mut String, lab_evidence: &mut Vec<LabEvidence>) {
    let lab = remedies::lab();
    if let (Some(kernel), Some(graph)) = (lab.launch(api, "kernel"), lab.launch(api, "graph")) {
        words.push_str(&format!(
            " On the lab's {} a warm {} returned in {} and a warm one-kernel {} in {} (medians of {}): a graph \
             launches all its kernels for about one launch's cost.",
            lab.gpu,
            kernel.call,
            duration(kernel.returned_ns),
            graph.call,
            duration(graph.returned_ns),
            kernel.repetitions
        ));
        for l in [kernel, graph] {
            lab_evidence.push(LabEvidence {
                case: l.case.clone(),
                recording: l.recording.clone(),
                words: format!("a warm {} returned in {}", l.call, duration(l.returned_ns)),
            });
        }
    }
}

/// The remedy of a thread *busy launching* (`headline`): it spends its time making CUDA calls.
pub fn busy_launching(f: Framework, api: &str) -> Remedy {
    let mut words = format!(
        "The thread is the bottleneck: it spends its time making calls while the GPU waits for them; {}",
        fewer_launches(f)
    );
    let mut lab = Vec::new();
    launch_costs(api, &mut words, &mut lab);
    Remedy { words, lab }
}

/// The remedy of a thread *mostly outside CUDA calls* (`headline`): its time goes to its own code.
pub fn mostly_outside(f: Framework) -> Remedy {
    let words = match f {
        Framework::Torch => {
            "The time goes to the program's own code between CUDA calls: the input pipeline \
                             (DataLoader(num_workers=..., pin_memory=True, persistent_workers=True), preprocessing \
                             moved to the GPU) or Python around the steps; profile the host side (py-spy, cProfile) \
                             to see where."
        }
        Framework::Jax => {
            "The time goes to the program's own code between CUDA calls: the input pipeline (prefetch \
                           batches ahead of the step, preprocessing inside jax.jit) or Python around the steps; \
                           profile the host side (py-spy, cProfile) to see where."
        }
        Framework::CuPy | Framework::Numba => {
            "The time goes to the program's own code between CUDA calls: its NumPy \
                                               or Python work around the kernels (move it to the GPU) or its input; \
                                               profile the host side (py-spy, cProfile) to see where."
        }
        Framework::Native => {
            "The time goes to the program's own code between CUDA calls, or to waiting for something \
                              else (input, I/O, locks): profile the host side (perf) to see where."
        }
    };
    Remedy { words: words.into(), lab: Vec::new() }
}

/// The remedy of a thread *held by CUDA* (`headline`): the findings, the most time first.
pub fn held_by_cuda() -> Remedy {
    Remedy {
        words: "The findings below say what held it and what to change, the most time first: each hold removed gives \
                its time back to the thread."
            .into(),
        lab: Vec::new(),
    }
}

/// The remedy of a thread whose every call is warm-up (`headline`).
pub fn only_warm_up() -> Remedy {
    Remedy {
        words: "Every call traced is paid once (warm-up): trace longer, past the first steps, to see the steady state."
            .into(),
        lab: Vec::new(),
    }
}

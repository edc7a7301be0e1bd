//! The remedies of the steady state's holds: a copy staged through pageable memory, a synchronization, a
//! free that drains the device, a wait for the device or for room in the launch queue, another thread's call,
//! a wait for another stream, the driver's own work: what to change, with what the lab measured of it.

use super::launches::launch_work;
use super::{Group, LabEvidence};
use crate::capability;
use crate::format::cupti_kinds::copy;
use crate::framework::Framework;
use crate::functions::{self, Does};
use crate::records::WorkKind;
use crate::remedies;
use crate::units::size_words;
use crate::what_held::{gpu_busy, main_holder};
use crate::words::{duration, percent};

pub(super) fn pageable_copy(g: &mut Group) -> String {
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

pub(super) fn synchronization(g: &mut Group) -> String {
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

pub(super) fn free_drains_device(g: &mut Group) -> String {
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

pub(super) fn device_wait(g: &mut Group) -> String {
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

pub(super) fn full_queue(g: &mut Group) -> String {
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

pub(super) fn other_thread(g: &mut Group) -> String {
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

pub(super) fn stream_wait(g: &mut Group) -> String {
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
pub(super) fn driver_work(g: &mut Group) -> String {
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

//! What held a traced call that CUDA held, as a finding names it ([`Kind`]), and the test of each call for it
//! ([`kind`]), in this order: first what the program pays once, by its cause (`once`: context creation,
//! loading code, compiling, a library's setup, a caching allocator's growth, a model's upload); then a copy
//! from or to pageable memory that held its thread for its transfer; another thread's call; a free that
//! drained the device, or another call that did; a launch into a full queue; a synchronization, or a copy to
//! the host, that waited for its stream; any other wait for its stream; driver work.

use super::analysis::Analysis;
use super::capability;
use super::format::cupti_kinds::copy;
use super::functions::{frees, launches, synchronizes};
use super::once::Once;
use super::records::WorkKind;
use super::scene::Program;
use crate::attribution::Cause;
use serde::{Deserialize, Serialize};

/// What held a group's calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The context created (once per process).
    ContextCreation,
    /// A module loaded lazily at a first launch or lookup, or a library or module loaded at run time.
    LoadingCode,
    /// The driver compiling code for the GPU (a JIT), once per kernel.
    Compiling,
    /// A library's setup: cuBLAS's and cuDNN's handles, workspaces and autotuning.
    LibrarySetup,
    /// A caching allocator growing its pool (PyTorch's, CuPy's, XLA's).
    AllocatorGrowth,
    /// A model's weights, or the program's first data, copied to the GPU once.
    Upload,
    /// A copy from or to pageable host memory, staged by the driver on the calling thread.
    PageableCopy,
    /// Another thread's call, until it ended.
    OtherThread,
    /// A free (`cudaFree`, `empty_cache()`'s frees, `cuMemFree`...) that waited for every stream.
    FreeDrainsDevice,
    /// Another call that waited for every stream.
    DeviceWait,
    /// A launch behind a full launch queue.
    FullQueue,
    /// A synchronization (`.item()`, `.cpu()`, `torch.cuda.synchronize()`) or a copy to the host that waited
    /// for the work ahead in its stream.
    Synchronization,
    /// Any other wait for the work ahead in its stream.
    StreamWait,
    /// The driver's own work on the calling thread (allocating, pinning, freeing pinned memory).
    DriverWork,
    /// Anything else (a class that decides nothing).
    Other,
}

impl Kind {
    /// A finding's title, for `calls` calls.
    pub fn title(self) -> &'static str {
        match self {
            Kind::ContextCreation => "context creation",
            Kind::LoadingCode => "loading code (lazy module loads, libraries)",
            Kind::Compiling => "compiling code for the GPU",
            Kind::LibrarySetup => "a library's setup (handles, workspaces, autotuning)",
            Kind::AllocatorGrowth => "the caching allocator's growth",
            Kind::Upload => "the upload to the GPU",
            Kind::PageableCopy => "pageable copies",
            Kind::OtherThread => "waits for another thread's call",
            Kind::FreeDrainsDevice => "frees that drained the device",
            Kind::DeviceWait => "waits for the whole device",
            Kind::FullQueue => "launches into a full launch queue",
            Kind::Synchronization => "synchronizations",
            Kind::StreamWait => "waits for earlier work in the stream",
            Kind::DriverWork => "driver work",
            Kind::Other => "other holds",
        }
    }

    /// Whether its findings are grouped by kind alone (what is paid once: it happens wherever the program
    /// first needs a kernel, a library or memory).
    pub fn by_kind_alone(self) -> bool {
        self.paid_once()
    }

    /// Whether it is work the program pays once (`once`).
    pub fn paid_once(self) -> bool {
        matches!(
            self,
            Kind::ContextCreation
                | Kind::LoadingCode
                | Kind::Compiling
                | Kind::LibrarySetup
                | Kind::AllocatorGrowth
                | Kind::Upload
        )
    }

    /// The kind of what is paid once for `once`.
    pub fn of_once(once: Once) -> Kind {
        match once {
            Once::ContextCreation => Kind::ContextCreation,
            Once::LoadingCode => Kind::LoadingCode,
            Once::Compiling => Kind::Compiling,
            Once::LibrarySetup => Kind::LibrarySetup,
            Once::AllocatorGrowth => Kind::AllocatorGrowth,
            Once::Upload => Kind::Upload,
        }
    }
}

/// What held call `i` (the order is in the module's doc).
pub fn kind(a: &Analysis, i: usize) -> Kind {
    let (p, t) = (&a.program, &a.traced[i]);
    let c = &p.calls[i];
    if let Some(once) = a.once[i] {
        return Kind::of_once(once);
    }
    let own = p.own_work(i);
    let own_ns = t.held.ns(Cause::Own);
    let waited = t.held.ns(Cause::Stream) + t.held.ns(Cause::Device) + t.held.ns(Cause::Thread);
    // A copy from pageable memory held through its staging, whatever it waited for first (from pinned memory it
    // would have returned at once, wait and all); a read into pageable memory held by its staging at least as
    // long as by any wait: pinned memory is the remedy. A read that mostly waited (an 8-byte result read behind
    // the work that computes it) is that wait: the host needs the value.
    let staged = own_ns > 0 && (own_ns >= waited || (t.class == crate::class::Class::Blocking && !to_host(p, i)));
    if own.iter().any(|w| w.pageable()) && staged {
        return Kind::PageableCopy;
    }
    // What it waited for: what released it, or, for a call its own work released after a longer wait, the
    // cause it waited for longest.
    let wait = match t.held.released_by().map(|s| s.cause) {
        Some(c @ (Cause::Thread | Cause::Device | Cause::Stream)) => Some(c),
        _ if waited > 0 && waited >= own_ns => {
            [Cause::Stream, Cause::Device, Cause::Thread].into_iter().max_by_key(|&c| t.held.ns(c))
        }
        _ => None,
    };
    match wait {
        Some(Cause::Thread) => Kind::OtherThread,
        Some(Cause::Device) if frees(&c.name) => Kind::FreeDrainsDevice,
        Some(Cause::Device) => Kind::DeviceWait,
        Some(_) if launches(&c.name) && full_queue(p, i) => Kind::FullQueue,
        Some(_) if synchronizes(&c.name) || to_host(p, i) => Kind::Synchronization,
        Some(_) => Kind::StreamWait,
        None if t.class == crate::class::Class::DriverWork || t.class == crate::class::Class::Blocking => {
            if own.iter().any(|w| w.pageable()) {
                Kind::PageableCopy
            } else {
                Kind::DriverWork
            }
        }
        None => Kind::Other,
    }
}

/// Whether call `i` launched behind a full launch queue (the lab's measured depth, `capability`).
fn full_queue(p: &Program, i: usize) -> bool {
    capability::lab().queue_depth.is_some_and(|d| p.queued_before(i) as f64 >= d)
}

/// Whether call `i` copied into host memory (`.item()`, `.cpu()`, `float(loss)`): from the device, or the last
/// leg of a read staged through pinned memory (pinned → pageable).
pub fn to_host(p: &Program, i: usize) -> bool {
    use super::format::cupti_kinds::memory;
    p.own_work(i).iter().any(|w| match w.kind {
        WorkKind::Copy { copy_kind: copy::DTOH, .. } => true,
        WorkKind::Copy { copy_kind: copy::HTOH, dst_kind, .. } => dst_kind == memory::PAGEABLE,
        _ => false,
    })
}

//! What a program pays once, recognised by its cause wherever in the run it happens: the context created, code
//! loaded (a module or library loaded at run time, or lazily at a kernel's first launch or lookup, or unloaded
//! again), the driver
//! compiling code (a JIT), a library's setup (cuBLAS's and cuDNN's handles, workspaces and autotuning: their
//! own allocations, streams, events and synchronizations), a caching allocator's growth (PyTorch's, CuPy's or
//! XLA's allocations: such an allocator allocates only where its pool cannot serve a request, and keeps what it
//! allocated; one emptied in a loop shows as that loop's frees, `cause::Kind::FreeDrainsDevice`), and a model's
//! upload to the GPU
//! (`resnet18().cuda()`, `GPT2LMHeadModel(config).cuda()`: host → device copies made through
//! `torch.nn.Module`'s `to`/`cuda`, or many from one place at start-up, before the program's first kernel).
//!
//! A user's loop pays for none of them again, so they are kept out of the steady state, the by-place table,
//! the page's longest calls and the gates (`--fail-on-held`, `no_blocking`, the pytest plugin) unless asked
//! (`--fail-on-warm-up`), and shown apart as what the program pays once (`warmup`).

use super::call_view::CallView;
use super::calls::Traced;
use super::format::cupti_kinds::copy;
use super::format::OverheadKind;
use super::framework::{self, Framework};
use super::functions::{self, Does};
use super::location::{Kind as PlaceKind, Locations, Place};
use super::records::WorkKind;
use super::scene::{Call, Program};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Why a call is paid once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Once {
    /// It created the context (or initialized the driver).
    ContextCreation,
    /// It loaded a module or a library: at run time, or lazily at a kernel's first launch or lookup; or unloaded
    /// one (a load's other half: at the program's end, or a library letting go of code it compiled for a while).
    LoadingCode,
    /// Code was compiled for the GPU (a JIT): by the driver, or by the framework's compiler at a function's
    /// first call, with the autotuning it runs on the runtime's threads meanwhile (XLA's, TorchInductor's).
    Compiling,
    /// A library (cuBLAS, cuDNN) set itself up: its handle, its workspace, its autotuning.
    LibrarySetup,
    /// A caching allocator grew its pool.
    AllocatorGrowth,
    /// A model's weights, or the program's first data, copied to the GPU.
    Upload,
}

impl Once {
    /// In a few words, for a list ("the allocator's growth").
    pub fn words(self) -> &'static str {
        match self {
            Once::ContextCreation => "context creation",
            Once::LoadingCode => "loading code",
            Once::Compiling => "compiling code",
            Once::LibrarySetup => "a library's setup",
            Once::AllocatorGrowth => "the allocator's growth",
            Once::Upload => "the upload to the GPU",
        }
    }
}

/// What a call paid once did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FirstUse {
    pub contexts: usize,
    pub module_loads: usize,
    /// Loading calls by name (`cuLibraryLoadData`, `cuModuleLoad`...): libraries and modules loaded at run time.
    pub libraries: usize,
    /// Calls in which the driver compiled code.
    pub compiles: usize,
    /// A library's setup calls (cuBLAS's, cuDNN's handles, workspaces, autotuning).
    pub library_setups: usize,
    /// A caching allocator's allocations (its pool's growth).
    pub allocations: usize,
    /// Copies of a model's upload.
    pub uploads: usize,
}

impl FirstUse {
    pub fn any(&self) -> bool {
        self.contexts
            + self.module_loads
            + self.libraries
            + self.compiles
            + self.library_setups
            + self.allocations
            + self.uploads
            > 0
    }

    pub fn add(&mut self, o: FirstUse) {
        self.contexts += o.contexts;
        self.module_loads += o.module_loads;
        self.libraries += o.libraries;
        self.compiles += o.compiles;
        self.library_setups += o.library_setups;
        self.allocations += o.allocations;
        self.uploads += o.uploads;
    }

    /// "context creation, 13 libraries loaded, 21 module loads, 35 allocations (the allocator's growth), 62
    /// copies (the upload)".
    pub fn words(&self) -> String {
        let mut parts = Vec::new();
        if self.contexts > 0 {
            parts.push(if self.contexts == 1 {
                "context creation".to_owned()
            } else {
                format!("{} contexts", self.contexts)
            });
        }
        if self.libraries > 0 {
            parts.push(format!("{} librar{} loaded", self.libraries, if self.libraries == 1 { "y" } else { "ies" }));
        }
        if self.module_loads > 0 {
            parts.push(format!("{} module load{}", self.module_loads, if self.module_loads == 1 { "" } else { "s" }));
        }
        let s = |n: usize| if n == 1 { "" } else { "s" };
        if self.compiles > 0 {
            parts.push(format!("{} compile{}", self.compiles, s(self.compiles)));
        }
        if self.library_setups > 0 {
            parts.push(format!("{} call{} of a library's setup", self.library_setups, s(self.library_setups)));
        }
        if self.allocations > 0 {
            parts.push(format!("{} allocation{} (the allocator's growth)", self.allocations, s(self.allocations)));
        }
        if self.uploads > 0 {
            parts.push(format!(
                "{} cop{} to the GPU (the upload)",
                self.uploads,
                if self.uploads == 1 { "y" } else { "ies" }
            ));
        }
        parts.join(", ")
    }
}

impl FirstUse {
    /// What call `c` (classified `t`, paid once for `once`, start-up or not) paid once for.
    pub fn of(c: &Call, t: &Traced, once: Option<Once>, startup: bool) -> FirstUse {
        let libraries = usize::from(std::iter::once(&c.name).chain(&c.inner).any(|n| functions::loads_module(n)));
        let mut f = FirstUse { contexts: t.contexts, module_loads: t.module_loads, libraries, ..FirstUse::default() };
        match once {
            Some(Once::Compiling) => f.compiles = 1,
            Some(Once::LibrarySetup) => f.library_setups = 1,
            Some(Once::AllocatorGrowth) => f.allocations = 1,
            Some(Once::Upload) => f.uploads = 1,
            // A lazy load only the driver's record tells of: counted as a module load. (A context retained again,
            // by its function alone, created none: it is warm-up without a count.)
            Some(Once::LoadingCode) if !f.any() => f.module_loads = 1,
            _ => {}
        }
        // Start-up by its own test (`startup`: a loading function inside it) with nothing counted above.
        if !f.any() && startup {
            f.libraries = 1;
        }
        f
    }
}

/// How many host → device copies one place must make, all before the program's first kernel, to be a model's
/// upload (one per weight: ResNet-18 has 62 tensors, GPT-2 about 150), and not a test's or a loop's copy.
pub const UPLOAD_COPIES: usize = 8;

/// The libraries whose own calls are their setup: their handles, workspaces and autotuning (cuBLAS, cuDNN,
/// cuFFT, cuSPARSE, cuSOLVER, cuRAND).
const SETUP_LIBRARIES: [&str; 6] = ["libcublas", "libcudnn", "libcufft", "libcusparse", "libcusolver", "libcurand"];

/// What a process says about its calls' causes, read once.
pub struct Causes {
    /// The process's framework.
    pub framework: Framework,
    /// When the program first launched a kernel (the start of the first call with a kernel of its own).
    first_kernel_ns: Option<i64>,
    /// Whether the trace holds the program's start-up (the context's creation): where it does not (the gate's
    /// window of a running program, whose start-up was long before), copies are an upload only through a
    /// module's `to`/`cuda`.
    from_start: bool,
    /// Per place (its key), its host → device copies before the first kernel and after it.
    uploads: HashMap<PlaceKey, (usize, usize)>,
    /// Per Python thread, the spans in which every reading of its frames found it in a framework's compile
    /// (from the first such reading to the last before one that did not).
    compiling: HashMap<u64, Vec<(i64, i64)>>,
}

impl Causes {
    pub fn of(program: &Program, places: &[Place], locations: &Locations, framework: Framework) -> Causes {
        let calls = &program.calls;
        let first_kernel_ns = (0..calls.len())
            .filter(|&i| program.own_work(i).iter().any(|w| matches!(w.kind, WorkKind::Kernel { .. })))
            .map(|i| calls[i].span.start)
            .min();
        let mut uploads: HashMap<PlaceKey, (usize, usize)> = HashMap::new();
        for i in (0..calls.len()).filter(|&i| to_device(program, i)) {
            let e = uploads.entry(key(&places[i])).or_default();
            if first_kernel_ns.is_none_or(|k| calls[i].span.start < k) {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
        let from_start =
            !program.contexts.is_empty() || calls.iter().any(|c| functions::does(&c.name) == Does::CreatesContext);
        let compiling = compile_spans(program, locations);
        Causes { framework, first_kernel_ns, uploads, from_start, compiling }
    }

    /// Whether thread `tid` was in a framework's compile for the whole of `[start, end]`, as its readings tell.
    fn in_compile(&self, tid: u64, start: i64, end: i64) -> bool {
        self.compiling.get(&tid).is_some_and(|spans| spans.iter().any(|&(a, b)| a <= start && end <= b))
    }

    /// Whether a host → device copy made at `place`, starting at `start`, is part of an upload: one of at least
    /// [`UPLOAD_COPIES`] of its place before the first kernel, where the place made none after it (or is not
    /// known: a call without a location is placed by its API function, which the loop's copies share), in a
    /// trace that holds the program's start-up.
    fn uploading(&self, place: &Place, start: i64) -> bool {
        if !self.from_start {
            return false;
        }
        let before_kernels = self.first_kernel_ns.is_none_or(|k| start < k);
        let (before, after) = self.uploads.get(&key(place)).copied().unwrap_or_default();
        before_kernels && before >= UPLOAD_COPIES && (after == 0 || place.kind == PlaceKind::Api)
    }
}

/// Each Python thread's spans in a framework's compile, from the readings of its frames the trace holds: its
/// own located calls' and, beside a thread that runs no Python, what it was doing then (`others`), in time
/// order; a span runs from the first reading in a compile to the last before one that was not.
fn compile_spans(program: &Program, locations: &Locations) -> HashMap<u64, Vec<(i64, i64)>> {
    let mut readings: Vec<(u64, i64, bool)> = Vec::new();
    for c in &program.calls {
        let own = locations.frames(c).python;
        if !own.is_empty() {
            readings.push((c.tid, c.span.end, jit_compile(own)));
        }
        for t in locations.others(c).iter().filter(|t| !t.python.is_empty()) {
            readings.push((t.tid, c.span.end, jit_compile(&t.python)));
        }
    }
    readings.sort_by_key(|&(tid, t, _)| (tid, t));
    let mut spans: HashMap<u64, Vec<(i64, i64)>> = HashMap::new();
    let mut open: Option<(u64, i64, i64)> = None;
    for (tid, t, compiling) in readings {
        match (&mut open, compiling) {
            (Some((o, _, last)), true) if *o == tid => *last = t,
            (_, true) => {
                if let Some((o, a, b)) = open.take() {
                    spans.entry(o).or_default().push((a, b));
                }
                open = Some((tid, t, t));
            }
            (_, false) => {
                if let Some((o, a, b)) = open.take() {
                    spans.entry(o).or_default().push((a, b));
                }
            }
        }
    }
    if let Some((o, a, b)) = open {
        spans.entry(o).or_default().push((a, b));
    }
    spans
}

/// A place as the by-location table keys it, owned.
type PlaceKey = (PlaceKind, String, Option<String>);

fn key(place: &Place) -> PlaceKey {
    let (kind, words, nvtx) = place.key();
    (kind, words.to_owned(), nvtx.map(str::to_owned))
}

/// Whether call `i` copied host → device.
fn to_device(p: &Program, i: usize) -> bool {
    p.own_work(i).iter().any(|w| matches!(w.kind, WorkKind::Copy { copy_kind: copy::HTOD, .. }))
}

/// The Python files of frameworks' compilers: a frame in one is a compile at a function's first call (JAX's
/// `backend_compile_and_load`, TorchInductor's and Dynamo's compile and autotuning, Numba's and Triton's
/// compilers).
const JIT_COMPILERS: [&str; 6] = [
    "jax/_src/compiler.py",
    "torch/_inductor/",
    "torch/_dynamo/",
    "numba/cuda/compiler.py",
    "triton/compiler/",
    "triton/runtime/autotuner.py",
];

/// Whether a thread's frames are inside a framework's compile.
fn jit_compile(python: &[super::format::PyFrame]) -> bool {
    python.iter().any(|f| JIT_COMPILERS.iter().any(|c| f.file.contains(c)))
}

/// Why call `v` is paid once, where it is (`locations` and `place`: where it was made).
pub fn of(v: &CallView, causes: &Causes, locations: &Locations, place: &Place) -> Option<Once> {
    let functions = v.functions();
    let does = |d: Does| functions.iter().any(|n| functions::does(n) == d);
    if v.contexts > 0 || does(Does::CreatesContext) {
        return Some(Once::ContextCreation);
    }
    if v.loading() || does(Does::LoadsModule) || does(Does::Unloads) {
        return Some(Once::LoadingCode);
    }
    if v.overheads.iter().any(|o| o.kind == OverheadKind::DriverCompiler) {
        return Some(Once::Compiling);
    }
    let frames = locations.frames(v.call);
    // Made inside a framework's compile: by the compiling thread itself, or by a thread that runs no Python
    // (XLA's, autotuning the kernels) while the Python thread it is placed by was in the compile.
    let waiting = place.via.as_ref().and_then(|via| locations.others(v.call).iter().find(|t| t.tid == via.thread));
    if jit_compile(frames.python) || waiting.is_some_and(|t| jit_compile(&t.python)) {
        return Some(Once::Compiling);
    }
    // A call of a thread that runs no Python with no reading of its own (under the location threshold), made
    // while the Python thread it is placed by was in a compile from a reading before it to one after it.
    if locations.runs_no_python(v.call.tid) && frames.python.is_empty() {
        if let Some(via) = &place.via {
            if causes.in_compile(via.thread, v.call.span.start, v.call.span.end) {
                return Some(Once::Compiling);
            }
        }
    }
    let in_library = frames.native.iter().any(|f| {
        let file = f.module.rsplit('/').next().unwrap_or(&f.module);
        SETUP_LIBRARIES.iter().any(|l| file.starts_with(l))
    });
    let setup = [Does::Allocates, Does::Manages, Does::Synchronizes, Does::Queries, Does::EnqueuesMarker];
    if in_library && setup.iter().any(|&d| functions::does(&v.call.name) == d) {
        return Some(Once::LibrarySetup);
    }
    if functions::allocates(&v.call.name) {
        let framework = framework::of_frames(frames.python, frames.native).unwrap_or(causes.framework);
        return framework.caches_memory().then_some(Once::AllocatorGrowth);
    }
    let own_upload = v.own_work.iter().any(|w| matches!(w.kind, WorkKind::Copy { copy_kind: copy::HTOD, .. }));
    if own_upload {
        // Through a module's `to`/`cuda` (PyTorch's `Module._apply`), or many copies of one place, all before
        // the first kernel.
        let module_to =
            frames.python.iter().any(|f| f.function == "_apply" && f.file.ends_with("torch/nn/modules/module.py"));
        if module_to || causes.uploading(place, v.call.span.start) {
            return Some(Once::Upload);
        }
    }
    None
}

//! The experiments: what each one does (the catalogue), which run in a preset, and the runner that measures
//! them one by one, with a progress bar, Ctrl-C handling and child processes where an environment variable
//! must be set before the driver starts.
//!
//! Start reading at `method.rs` (the protocol every "did it wait?" experiment follows), then `copies.rs`.

pub mod alloc;
pub mod batched;
pub mod buffers;
pub mod callbacks;
pub mod copies;
pub mod graphs;
pub mod interrupt;
pub mod launches;
pub mod limits;
pub mod loading;
pub mod memset;
pub mod method;
pub mod overhead;
pub mod peer;
pub mod queue;
pub mod runner;
pub mod seed;
pub mod seed_runtime;
pub mod streammem;
pub mod threads;
pub mod unified;
pub mod vmm;
pub mod waiting;

use crate::selection::{ApiChoice, Preset};
use anyhow::bail;
use async_lab_core::api::Api;
use async_lab_core::catalogue::{self, Experiment as _, Facts};
use async_lab_core::record::{CaseRecord, CaseSetup, Rep};
use async_lab_core::units::parse_size;

/// One experiment: how it is set up (recorded) and what to run (not recorded).
#[derive(Clone, Debug)]
pub struct Case {
    pub setup: CaseSetup,
    pub op: Op,
}

impl Case {
    /// The catalogue's case, with its setup and what to run.
    pub fn of(case: catalogue::Case) -> Case {
        let setup = CaseSetup::of(&case);
        let op = match case.facts {
            Facts::Copy(f) | Facts::Sweep(catalogue::copies::SweepFacts(f)) => Op::Copy(f),
            Facts::Memset(f) => Op::Memset(f),
            Facts::Launch(f) => Op::Launch(f),
            Facts::Callback(f) => Op::Callback(f),
            Facts::Wait(f) => Op::Wait(f),
            Facts::Alloc(f) => Op::Alloc(f),
            Facts::Load(f) => Op::Load(f),
            Facts::Seed(f) => Op::Seed(f),
            Facts::SeedRuntime(f) => Op::SeedRuntime(f),
            Facts::Graph(f) => Op::Graph(f),
            Facts::Unified(f) => Op::Unified(f),
            Facts::Limits(f) => Op::Limits(f),
            Facts::Vmm(f) => Op::Vmm(f),
            Facts::StreamMem(f) => Op::StreamMem(f),
            Facts::Batch(f) => Op::Batch(f),
            Facts::Threads(f) => Op::Threads(f),
            Facts::Peer(f) => Op::Peer(f),
            Facts::Overhead(f) => Op::Overhead(f),
        };
        Case { setup, op }
    }

    fn all(cases: Vec<catalogue::Case>) -> Vec<Case> {
        cases.into_iter().map(Case::of).collect()
    }
}

/// How a case's words say where its blocker runs: ahead of the call in its stream, or on another stream.
pub fn blocker_words(ahead: bool) -> &'static str {
    if ahead {
        "ahead of it in the same stream"
    } else {
        "on another, non-blocking stream"
    }
}

#[derive(Clone, Debug)]
pub enum Op {
    Copy(catalogue::copies::CopyFacts),
    Memset(catalogue::memset::MemsetFacts),
    Launch(catalogue::launches::LaunchFacts),
    Alloc(catalogue::alloc::AllocFacts),
    Callback(catalogue::callbacks::CallbackFacts),
    Wait(catalogue::waiting::WaitFacts),
    /// Loading code, looking up a kernel, a first launch; driver and runtime cases alike.
    Load(catalogue::loading::LoadFacts),
    /// The seed program's sequence; one run yields a record per step.
    Seed(catalogue::seed::SeedFacts),
    /// The seed program (or the accepted answer's variant) through the runtime API; a record per step.
    SeedRuntime(catalogue::seed_runtime::SeedRuntimeFacts),
    /// A copy between two GPUs; one run yields a record per ordered pair of GPUs.
    Peer(catalogue::peer::PeerFacts),
    /// The cheapest calls enqueued many times, for async-lab's own overhead; driver and runtime cases alike.
    Overhead(catalogue::overhead::OverheadFacts),
    /// CUDA graphs: instantiation, upload, launches (`graphs.rs`).
    Graph(catalogue::graphs::GraphFacts),
    /// Unified-memory hints: prefetch and advice (`unified.rs`).
    Unified(catalogue::unified::HintFacts),
    /// Attributes and limits while work is in flight (`limits.rs`).
    Limits(catalogue::limits::LimitFacts),
    /// Stream memory operations, and host calls while a stream waits on the host (`streammem.rs`).
    StreamMem(catalogue::streammem::StreamMemFacts),
    /// Virtual memory management (`vmm.rs`).
    Vmm(catalogue::vmm::VmmFacts),
    /// Batched copies (`batched.rs`).
    Batch(catalogue::batched::BatchFacts),
    /// One thread's quick call while another is inside a slow one (`threads.rs`).
    Threads(catalogue::threads::ThreadFacts),
}

impl Case {
    /// The environment variable a case needs set before the driver starts (it then runs in a child process).
    pub fn child_env(&self) -> Option<(&'static str, &'static str)> {
        if let Some(c) = &self.setup.case {
            return c.facts.child_env();
        }
        match &self.op {
            Op::Launch(l) => catalogue::Experiment::child_env(l),
            Op::Load(l) => l.child_env(),
            Op::SeedRuntime(s) => s.child_env(),
            _ => None,
        }
    }
}

/// A record from a case's setup and measurements.
pub fn case_record(case: &Case, warmup: Option<Rep>, blocker_ns: Option<u64>, reps: Vec<Rep>) -> CaseRecord {
    CaseRecord { setup: case.setup.clone(), blocker_ns, warmup, reps, series: None, error: None, skipped: None }
}

/// The record of a case this machine cannot run, with the reason.
pub fn not_run(case: &Case, why: &str) -> CaseRecord {
    let mut r = case_record(case, None, None, vec![]);
    r.skipped = Some(why.to_owned());
    r
}

pub const DEFAULT_SIZES: [&str; 4] = ["4KiB", "64KiB", "1MiB", "256MiB"];
/// The size for experiments that vary something other than size.
pub const MID_SIZE: u64 = 1 << 20;

/// Sizes of the sweep: 4 KiB to 1 GiB in powers of 4.
pub fn sweep_sizes() -> Vec<u64> {
    (0..10).map(|k| 4096u64 << (2 * k)).collect()
}

/// The runtime API's counterpart of a driver call, as the runtime twin of a case names it. Copies name the
/// `cudaMemcpyKind` they pass: the driver's typed calls map to an explicit kind, its unified `cuMemcpy*` to
/// `cudaMemcpyDefault`. `None` where the runtime has no such call (or it is measured elsewhere).
pub fn runtime_call(driver_call: &str) -> Option<&'static str> {
    Some(match driver_call {
        "cuMemcpy" => "cudaMemcpy(Default)",
        "cuMemcpyHtoD" => "cudaMemcpy(HostToDevice)",
        "cuMemcpyDtoH" => "cudaMemcpy(DeviceToHost)",
        "cuMemcpyDtoD" => "cudaMemcpy(DeviceToDevice)",
        "cuMemcpyAsync" => "cudaMemcpyAsync(Default)",
        "cuMemcpyHtoDAsync" => "cudaMemcpyAsync(HostToDevice)",
        "cuMemcpyDtoHAsync" => "cudaMemcpyAsync(DeviceToHost)",
        "cuMemcpyDtoDAsync" => "cudaMemcpyAsync(DeviceToDevice)",
        "cuMemsetD8" => "cudaMemset",
        "cuMemsetD8Async" => "cudaMemsetAsync",
        "cuLaunchKernel" => "cudaLaunchKernel",
        "cuMemAlloc" => "cudaMalloc",
        "cuMemFree" => "cudaFree",
        "cuMemAllocHost" => "cudaMallocHost",
        "cuMemFreeHost" => "cudaFreeHost",
        "cuMemHostRegister" => "cudaHostRegister",
        "cuMemHostUnregister" => "cudaHostUnregister",
        "cuMemAllocManaged" => "cudaMallocManaged",
        "cuMemAllocAsync" => "cudaMallocAsync",
        "cuMemFreeAsync" => "cudaFreeAsync",
        "cuLaunchHostFunc" => "cudaLaunchHostFunc",
        "cuStreamAddCallback" => "cudaStreamAddCallback",
        "cuStreamDestroy" => "cudaStreamDestroy",
        "cuStreamSynchronize" => "cudaStreamSynchronize",
        "cuEventSynchronize" => "cudaEventSynchronize",
        "cuEventRecord" => "cudaEventRecord",
        "cuGraphInstantiateWithFlags" => "cudaGraphInstantiateWithFlags",
        "cuGraphInstantiateWithParams" => "cudaGraphInstantiateWithParams",
        "cuGraphUpload" => "cudaGraphUpload",
        "cuGraphLaunch" => "cudaGraphLaunch",
        "cuMemPrefetchAsync" => "cudaMemPrefetchAsync",
        "cuMemAdvise" => "cudaMemAdvise",
        "cuCtxSetLimit" => "cudaDeviceSetLimit",
        "cuCtxGetLimit" => "cudaDeviceGetLimit",
        "cuMemGetInfo" => "cudaMemGetInfo",
        "cuDeviceGetAttribute" => "cudaDeviceGetAttribute",
        "cuFuncSetAttribute" => "cudaFuncSetAttribute",
        "cuMemcpyBatchAsync" => "cudaMemcpyBatchAsync",
        _ => return None,
    })
}

/// The same case through the runtime API: same setup and operation, the runtime's call, `runtime/` before
/// the id. `None` for families without a runtime twin here (the seed has its own runtime programs, in
/// `seed_runtime.rs`). The cases with catalogue facts get theirs from the catalogue (`Experiment::runtime_twin`:
/// the peer copies have none, the overhead family makes its runtime cases itself).
pub fn runtime_twin(case: &Case) -> Option<Case> {
    if let Some(c) = &case.setup.case {
        return c.runtime_twin().map(Case::of);
    }
    // The overhead family makes its runtime cases itself (`overhead.rs`). The stream-memory family's calls go
    // through the driver only: its probe has no runtime path. The runtime can name only a kernel it loaded
    // itself, never the blocker's (a driver module's), so setting the running blocker's attribute has no runtime
    // twin (`LimitCall::runtime_can_name_kernel`).
    let no_twin = matches!(case.op, Op::Peer(_) | Op::Overhead(..) | Op::StreamMem(_))
        || matches!(case.op, Op::Limits(l) if !l.call.runtime_can_name_kernel());
    // The loading and overhead families make their runtime cases themselves (`loading.rs`, `overhead.rs`). The
    // stream-memory family's calls go through the driver only: its probe has no runtime path.
    let no_twin = matches!(
        case.op,
        Op::Seed(_) | Op::SeedRuntime(_) | Op::Peer(_) | Op::Load(_) | Op::Overhead(..) | Op::StreamMem(_)
    );
    // runtime can name only a kernel it loaded itself, never the blocker's (a driver module's), so setting the
    // running blocker's attribute has no runtime twin (`LimitCall::runtime_can_name_kernel`).
    let no_twin = matches!(case.op, Op::Seed(_) | Op::SeedRuntime(_) | Op::Peer(_) | Op::Load(_) | Op::Overhead(..))
    // The loading family makes its runtime cases itself (`loading.rs`). The stream-memory family's calls go
    let no_twin = matches!(case.op, Op::Seed(_) | Op::SeedRuntime(_) | Op::Load(_) | Op::StreamMem(_))
        || matches!(case.op, Op::Limits(l) if !l.call.runtime_can_name_kernel());
    if case.setup.api != Api::Driver || no_twin {
        return None;
    }
    let call = runtime_call(&case.setup.call)?;
    let mut twin = case.clone();
    twin.setup.api = Api::Runtime;
    twin.setup.id = format!("{}{}", Api::Runtime.id_prefix(), case.setup.id);
    // The driver's words with the runtime's call in place of the driver's, where they name it.
    twin.setup.what = if case.setup.what.contains(case.setup.call.as_str()) {
        format!("{}, through the runtime API", case.setup.what.replacen(case.setup.call.as_str(), call, 1))
    } else {
        format!("{} (through the runtime API: {call})", case.setup.what)
    };
    twin.setup.call = call.to_owned();
    Some(twin)
}

/// Whether a driver case is also measured through the runtime (`runtime/` + its id exists in some preset:
/// made by `runtime_twin`, or by hand, as the loading family does).
pub fn has_runtime_twin(setup: &CaseSetup) -> bool {
    static RUNTIME_IDS: std::sync::OnceLock<std::collections::BTreeSet<String>> = std::sync::OnceLock::new();
    let ids = RUNTIME_IDS.get_or_init(|| {
        [Preset::Full, Preset::Seed, Preset::Sweep, Preset::Loading, Preset::Overhead]
            .into_iter()
            .flat_map(|p| catalogue(p, None))
            .filter(|c| c.setup.api == Api::Runtime)
            .map(|c| c.setup.id)
            .collect()
    });
    setup.api == Api::Driver && ids.contains(&format!("{}{}", Api::Runtime.id_prefix(), setup.id))
}

/// Each case followed by its runtime twin, where it has one.
fn with_twins(cases: Vec<Case>) -> Vec<Case> {
    let mut out = Vec::with_capacity(cases.len() * 2);
    for c in cases {
        let twin = runtime_twin(&c);
        out.push(c);
        out.extend(twin);
    }
    out
}

/// The cases of `cases` measured through the APIs `--api` chose.
pub fn select_api(cases: Vec<Case>, api: ApiChoice) -> Vec<Case> {
    cases.into_iter().filter(|c| api.includes(c.setup.api)).collect()
}

/// Every case of a preset, through both APIs (see `select_api`). `sizes` overrides the copy sizes of the
/// default, full and sweep presets.
pub fn catalogue(preset: Preset, sizes: Option<&[u64]>) -> Vec<Case> {
    catalogue_with(preset, sizes, catalogue::seed_runtime::ANSWER_BYTES)
}

/// `catalogue`, with the accepted answer's buffer of `seed_bytes` in the seed preset (`--seed-bytes`).
pub fn catalogue_with(preset: Preset, sizes: Option<&[u64]>, seed_bytes: u64) -> Vec<Case> {
    with_twins(driver_catalogue(preset, sizes, seed_bytes))
}

fn driver_catalogue(preset: Preset, sizes: Option<&[u64]>, seed_bytes: u64) -> Vec<Case> {
    let default_sizes: Vec<u64> = DEFAULT_SIZES.iter().map(|s| parse_size(s).expect("valid default size")).collect();
    let copy_sizes = sizes.unwrap_or(&default_sizes);
    let others = || {
        let mut v = Case::all(catalogue::memset::cases(MID_SIZE));
        v.extend(Case::all(catalogue::launches::cases()));
        v.extend(Case::all(catalogue::alloc::cases(MID_SIZE)));
        v.extend(Case::all(catalogue::callbacks::cases()));
        v.extend(Case::all(catalogue::waiting::cases()));
        // The loading family makes its runtime cases itself (its facts have no runtime twin).
        v.extend(Case::all(catalogue::loading::cases()));
        v
    };
    match preset {
        Preset::Default => {
            let mut v = Case::all(catalogue::copies::default_cases(copy_sizes, MID_SIZE));
            v.extend(others());
            v.extend(Case::all(catalogue::peer::cases(copy_sizes, false, false)));
            v
        }
        Preset::Full => {
            let mut v = Case::all(catalogue::copies::full_cases(copy_sizes));
            v.extend(others());
            v.extend(Case::all(catalogue::peer::cases(copy_sizes, true, true)));
            v.extend(next_cases());
            v
        }
        Preset::Seed => {
            // The runtime's programs are cases of their own, not twins of the driver's.
            let mut v = Case::all(catalogue::seed::cases());
            v.extend(Case::all(catalogue::seed_runtime::cases(seed_bytes, seed_runtime::module_loading())));
            v
        }
        Preset::Sweep => Case::all(catalogue::copies::sweep_cases(sizes.unwrap_or(&sweep_sizes()))),
        Preset::Peer => peer::cases(sizes.unwrap_or(&sweep_sizes()), false, true),
        Preset::Loading => Case::all(catalogue::loading::cases()),
        // Driver and runtime cases both (`runtime_twin` skips the family).
        Preset::Overhead => overhead::cases(),
        Preset::Peer => Case::all(catalogue::peer::cases(sizes.unwrap_or(&sweep_sizes()), false, true)),
        Preset::Loading => loading::cases(),
        // Driver and runtime cases both, made by the family (`Experiment::runtime_twin` is false for them).
        Preset::Overhead => Case::all(catalogue::overhead::cases()),
        Preset::Next => next_cases(),
    }
}

/// The newer families (the `next` preset; also in `full`, not in `default`).
fn next_cases() -> Vec<Case> {
    let mut v = Case::all(catalogue::graphs::cases());
    v.extend(Case::all(catalogue::unified::cases()));
    v.extend(Case::all(catalogue::limits::cases()));
    v.extend(streammem::cases());
    v.extend(Case::all(catalogue::vmm::cases()));
    v.extend(batched::cases());
    v.extend(threads::cases());
    let mut v = graphs::cases();
    v.extend(unified::cases());
    v.extend(limits::cases());
    v.extend(Case::all(catalogue::streammem::cases()));
    v.extend(vmm::cases());
    v.extend(Case::all(catalogue::batched::cases()));
    v.extend(Case::all(catalogue::threads::cases()));
    v
}

/// The cases whose id matches `pattern`: a glob (`copy/async/*`, `*pinned*`) or, without glob characters, a
/// substring. A pattern that matches nothing is an error that lists what exists.
pub fn select(cases: Vec<Case>, pattern: Option<&str>) -> anyhow::Result<Vec<Case>> {
    let Some(pattern) = pattern else { return Ok(cases) };
    let matcher: Box<dyn Fn(&str) -> bool> = if pattern.contains(['*', '?', '[']) {
        let glob = globset::Glob::new(pattern)?.compile_matcher();
        Box::new(move |id| glob.is_match(id))
    } else {
        let p = pattern.to_owned();
        Box::new(move |id: &str| id.contains(&p))
    };
    let total = cases.len();
    let ids: Vec<String> = cases.iter().map(|c| c.setup.id.clone()).collect();
    let chosen: Vec<Case> = cases.into_iter().filter(|c| matcher(&c.setup.id)).collect();
    if chosen.is_empty() {
        let mut prefixes: Vec<String> = Vec::new();
        for id in &ids {
            let p = id.split('/').take(2).collect::<Vec<_>>().join("/");
            if !prefixes.contains(&p) {
                prefixes.push(p);
            }
        }
        let mut listing = String::new();
        for p in &prefixes {
            let n = ids.iter().filter(|id| id.starts_with(p.as_str())).count();
            listing.push_str(&format!("\n  {p}/... ({n})"));
        }
        bail!(
            "no experiment matches {pattern:?}. This preset has {total} experiments; their ids start with:{listing}\n\
             (`async-lab list` prints every id)"
        );
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_in_every_preset() {
        for preset in [
            Preset::Default,
            Preset::Full,
            Preset::Seed,
            Preset::Sweep,
            Preset::Peer,
            Preset::Loading,
            Preset::Overhead,
            Preset::Next,
        ] {
            let cases = catalogue(preset, None);
            let mut ids: Vec<&str> = cases.iter().map(|c| c.setup.id.as_str()).collect();
            ids.sort();
            let n = ids.len();
            ids.dedup();
            assert_eq!(ids.len(), n, "duplicate ids in {preset:?}");
        }
    }

    #[test]
    fn runtime_twins_are_where_has_runtime_twin_says() {
        let all = catalogue(Preset::Full, None);
        let ids: std::collections::BTreeSet<&str> = all.iter().map(|c| c.setup.id.as_str()).collect();
        let mut twins = 0;
        for c in all.iter().filter(|c| c.setup.api == Api::Driver) {
            let twin = format!("runtime/{}", c.setup.id);
            assert_eq!(has_runtime_twin(&c.setup), ids.contains(twin.as_str()), "{}", c.setup.id);
            if c.setup.family != async_lab_core::setup::Family::Load {
                // Made by `runtime_twin`: exactly the calls the runtime table names.
                assert_eq!(
                    ids.contains(twin.as_str()),
                    runtime_call(&c.setup.call).is_some()
                        && !matches!(c.op, Op::Peer(_) | Op::StreamMem(_))
                        && !matches!(c.op, Op::Limits(l) if !l.call.runtime_can_name_kernel()),
                    "{}",
                    c.setup.id
                );
            }
            twins += usize::from(ids.contains(twin.as_str()));
        }
        assert!(twins > 100, "only {twins} runtime twins in the full preset");
        for c in all.iter().filter(|c| c.setup.api == Api::Runtime) {
            assert!(c.setup.id.starts_with("runtime/") && c.setup.call.starts_with("cuda"), "{}", c.setup.id);
        }
    }

    #[test]
    fn a_twin_differs_from_its_driver_case_only_in_api_id_call_and_words() {
        for c in catalogue(Preset::Full, None).iter().filter(|c| c.setup.api == Api::Driver) {
            let Some(twin) = runtime_twin(c) else { continue };
            let mut same = twin.setup.clone();
            same.api = c.setup.api;
            same.id = c.setup.id.clone();
            same.call = c.setup.call.clone();
            same.what = c.setup.what.clone();
            same.case = c.setup.case.clone();
            assert_eq!(same, c.setup, "{}", twin.setup.id);
            assert_ne!(twin.setup.what, c.setup.what, "{} says nothing of the runtime", twin.setup.id);
            assert!(twin.setup.call.starts_with("cuda"), "{}", twin.setup.call);
        }
    }

    #[test]
    fn every_case_names_a_known_rule() {
        for c in catalogue(Preset::Full, None) {
            assert!(
                async_lab_core::rules::rule(&c.setup.rule).is_some(),
                "{} names unknown rule {}",
                c.setup.id,
                c.setup.rule
            );
        }
    }

    #[test]
    fn select_by_glob_and_substring() {
        let all = catalogue(Preset::Default, None);
        let n = all.len();
        let pinned = select(all.clone(), Some("copy/async/htod/pinned/*")).unwrap();
        assert!(!pinned.is_empty() && pinned.len() < n);
        assert!(pinned.iter().all(|c| c.setup.id.starts_with("copy/async/htod/pinned/")));
        let mem = select(all.clone(), Some("memset")).unwrap();
        assert!(mem.iter().all(|c| c.setup.id.contains("memset")));
        let err = select(all, Some("nothing-like-this")).unwrap_err().to_string();
        assert!(err.contains("copy/async/...") && err.contains("no experiment matches"), "{err}");
    }

    #[test]
    fn sweep_sizes_span_4k_to_1g() {
        let s = sweep_sizes();
        assert_eq!(s.first(), Some(&4096));
        assert_eq!(s.last(), Some(&(1 << 30)));
    }
}

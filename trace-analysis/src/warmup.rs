//! A program's warm-up, told apart from its steady state: the calls the program pays once, recognised by
//! their cause wherever they happen (`once`: the context created, code loaded or compiled, a library's
//! setup, a caching allocator's growth, a model's upload), and with `--skip-first N` also everything before
//! the end of the program's N-th step.
//!
//! A *step* ends where the program waits for the GPU: a synchronization (`cudaStreamSynchronize`,
//! `cudaDeviceSynchronize`, `cudaEventSynchronize` and the driver's; what `.item()`, `.cpu()` and
//! `torch.cuda.synchronize()` call), counted on the thread that makes the most of them. A training loop makes
//! at least one per step where it reads its loss; one that reads it every 10 steps has steps 10 iterations
//! long. The step's end is a time: every thread's calls before it are warm-up.

use super::analysis::Analysis;
pub use super::once::FirstUse;

/// Which calls are warm-up, and why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WarmUp {
    /// Per call, indexed as `Program::calls`.
    pub calls: Vec<bool>,
    /// `--skip-first N`: N, and where the N-th step ended (`None`: the program made fewer synchronizations,
    /// so all of it is warm-up).
    pub skipped: Option<Skipped>,
}

/// The steps `--skip-first` left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub steps: usize,
    /// The end of the last step left out, on the trace's clock; `None` where the program made fewer steps.
    pub until_ns: Option<i64>,
    /// The thread whose synchronizations count the steps.
    pub tid: Option<u64>,
}

/// What call `i` paid once for (nothing, for most calls).
pub fn first_use(a: &Analysis, i: usize) -> FirstUse {
    FirstUse::of(&a.program.calls[i], &a.traced[i], a.once[i], a.startup[i])
}

/// Whether a function of this name synchronizes with the GPU (ends a step): the function table's answer.
pub fn synchronizes(name: &str) -> bool {
    super::functions::synchronizes(name)
}

/// The warm-up of a process, with the first `skip_first` steps left out too.
pub fn warm_up(a: &Analysis, skip_first: usize) -> WarmUp {
    let calls = &a.program.calls;
    let skipped = (skip_first > 0).then(|| {
        // The thread with the most synchronizations counts the steps.
        let mut per: std::collections::BTreeMap<u64, Vec<i64>> = std::collections::BTreeMap::new();
        for c in calls.iter().filter(|c| synchronizes(&c.name)) {
            per.entry(c.tid).or_default().push(c.span.end);
        }
        let stepping = per.iter().max_by_key(|(tid, ends)| (ends.len(), std::cmp::Reverse(**tid)));
        let until_ns = stepping.and_then(|(_, ends)| ends.get(skip_first - 1).copied());
        Skipped { steps: skip_first, until_ns, tid: stepping.map(|(tid, _)| *tid) }
    });
    let before = |i: usize| match skipped {
        Some(Skipped { until_ns: Some(t), .. }) => calls[i].span.start < t,
        Some(Skipped { until_ns: None, .. }) => true,
        None => false,
    };
    let calls = (0..calls.len()).map(|i| before(i) || a.once[i].is_some() || a.startup[i]).collect();
    WarmUp { calls, skipped }
}

//! A program's warm-up, told apart from its steady state: the calls that were the first use of something
//! (the context created, a module or a library loaded: a user's loop pays for them once), and with
//! `--skip-first N` also everything before the end of the program's N-th step.
//!
//! A *step* ends where the program waits for the GPU: a synchronization (`cudaStreamSynchronize`,
//! `cudaDeviceSynchronize`, `cudaEventSynchronize` and the driver's; what `.item()`, `.cpu()` and
//! `torch.cuda.synchronize()` call), counted on the thread that makes the most of them. A training loop makes
//! at least one per step where it reads its loss; one that reads it every 10 steps has steps 10 iterations
//! long. The step's end is a time: every thread's calls before it are warm-up.

use super::analysis::Analysis;
use super::calls::is_load;

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

/// What a first-use call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FirstUse {
    pub contexts: usize,
    pub module_loads: usize,
    /// Loading calls by name (`cuLibraryLoadData`, `cuModuleLoad`...): libraries and modules loaded at run time.
    pub libraries: usize,
}

impl FirstUse {
    pub fn any(&self) -> bool {
        self.contexts + self.module_loads + self.libraries > 0
    }

    pub fn add(&mut self, o: FirstUse) {
        self.contexts += o.contexts;
        self.module_loads += o.module_loads;
        self.libraries += o.libraries;
    }

    /// "context creation, 13 libraries loaded, 21 lazy module loads".
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
        parts.join(", ")
    }
}

/// What call `i` used for the first time (nothing, for most calls).
pub fn first_use(a: &Analysis, i: usize) -> FirstUse {
    let c = &a.program.calls[i];
    let t = &a.traced[i];
    let libraries = usize::from(std::iter::once(&c.name).chain(&c.inner).any(|n| is_load(n)));
    let mut f = FirstUse { contexts: t.contexts, module_loads: t.module_loads, libraries };
    // Start-up by its own test (`startup`: a loading function inside it) with nothing counted above.
    if !f.any() && a.startup[i] {
        f.libraries = 1;
    }
    f
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
    let calls = (0..calls.len()).map(|i| before(i) || first_use(a, i).any()).collect();
    WarmUp { calls, skipped }
}

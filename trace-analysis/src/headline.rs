//! The headline of a trace: each thread's time, from its first CUDA call to its last, split into what CUDA
//! held (by cause), what its calls that returned at once took, and the rest (time outside CUDA calls: its own
//! code, or waiting for something else), its warm-up apart from its steady state (`warmup`), and a verdict in
//! one line: *held by CUDA*, *busy launching* or *mostly outside CUDA calls*.
//!
//! It asks of the calls a trace does not hold nothing but totals per thread ([`ThreadTotals`]: how many
//! calls, their time, the first call's start and the last one's end); everything else comes from the calls
//! whose class says something held them, which every trace holds. A call *held by CUDA* is one whose class
//! is neither `async` nor `staged` (see `class`): waiting for its stream, the device or another thread, its
//! own transfer, or driver work.

use super::analysis::Analysis;
use super::remedy::{self, Remedy};
use super::scene::Program;
use super::warmup::{first_use, FirstUse, WarmUp};
use super::words::{duration, percent};
use crate::attribution::Cause;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A thread whose time outside CUDA calls averages at most this per call is *busy launching*: what it does
/// between its calls is the framework's work of making the next one. A PyTorch loop of small ops took 9.7 µs
/// per op on the H200 untraced (`recordings/trace-cost-frameworks-*`); ten times that still reads as
/// launching, not as work of the program's own.
pub const LAUNCH_GAP_NS: i64 = 100_000;

/// Per thread, what the headline needs of the calls a trace may not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadTotals {
    pub tid: u64,
    pub calls: usize,
    /// Their time in all.
    pub call_ns: i64,
    /// The first call's start and the last call's end.
    pub first_ns: i64,
    pub last_ns: i64,
}

/// The totals of every thread of a program that holds all its calls.
pub fn totals(p: &Program) -> Vec<ThreadTotals> {
    let mut by: BTreeMap<u64, ThreadTotals> = BTreeMap::new();
    for c in &p.calls {
        let t = by.entry(c.tid).or_insert(ThreadTotals {
            tid: c.tid,
            calls: 0,
            call_ns: 0,
            first_ns: c.span.start,
            last_ns: c.span.end,
        });
        t.calls += 1;
        t.call_ns += c.span.len();
        t.first_ns = t.first_ns.min(c.span.start);
        t.last_ns = t.last_ns.max(c.span.end);
    }
    // A bounded trace's calls that it only counted.
    for (tid, calls, call_ns, first, last) in p.rest.as_ref().map(super::counts::per_thread).unwrap_or_default() {
        let t = by.entry(tid).or_insert(ThreadTotals { tid, calls: 0, call_ns: 0, first_ns: first, last_ns: last });
        t.calls += calls;
        t.call_ns += call_ns;
        t.first_ns = t.first_ns.min(first);
        t.last_ns = t.last_ns.max(last);
    }
    by.into_values().collect()
}

/// The headline of one process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Headline {
    /// The verdict on the program's own thread with the most time in CUDA calls (its helpers' time counted where
    /// it waited for them): in a process that runs Python, a Python thread, not a worker of the runtime's.
    pub verdict: Verdict,
    /// Every thread that made a CUDA call: the verdict's first, then the most time in CUDA calls first.
    pub threads: Vec<ThreadAccount>,
    /// `--skip-first N`: the steps left out as warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_steps: Option<SkippedSteps>,
}

/// The steps `--skip-first` left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SkippedSteps {
    pub steps: usize,
    /// The end of the last one, on the trace's clock (ns); `None` where the program made fewer steps (then all
    /// of it is warm-up).
    pub until_ns: Option<i64>,
    /// The thread whose synchronizations count the steps.
    pub thread: Option<u64>,
}

/// What the headline says of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum VerdictKind {
    /// CUDA held it for at least half of its steady state: the findings say what to change.
    HeldByCuda,
    /// Held less than half; it made a CUDA call at least every [`LAUNCH_GAP_NS`] on average: it is busy
    /// making calls (a launch-bound loop).
    BusyLaunching,
    /// Held less than half, with its calls far apart: most of its time is outside CUDA calls (its own code,
    /// or waiting for something other than CUDA).
    MostlyOutsideCuda,
    /// All its calls are warm-up.
    OnlyWarmUp,
}

impl VerdictKind {
    pub fn words(self) -> &'static str {
        match self {
            VerdictKind::HeldByCuda => "held by CUDA",
            VerdictKind::BusyLaunching => "busy launching",
            VerdictKind::MostlyOutsideCuda => "mostly outside CUDA calls",
            VerdictKind::OnlyWarmUp => "only warm-up",
        }
    }
}

/// The verdict, in one line, and what to change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Verdict {
    pub thread: u64,
    pub kind: VerdictKind,
    /// The line ("held by CUDA: thread 695 was held 62% of its steady state, most by its stream, 171 ms").
    pub words: String,
    /// What to change, in the program's framework (`remedy`).
    #[serde(default)]
    pub remedy: Remedy,
}

/// One thread's time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ThreadAccount {
    pub thread: u64,
    /// Its name as the system gives it, where the trace says (format 5: `python3`, `pt_autograd_0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// How the text calls it: "main thread (python3)", "pt_autograd_0", "thread 751 (tf_XLAEigen)"; "thread
    /// 695" in a trace without names.
    #[serde(default)]
    pub words: String,
    /// It runs no Python in a process that does: a worker of the runtime (PyTorch's autograd thread, XLA's
    /// threads) making CUDA calls for the program's own threads (`helpers`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub helper: bool,
    /// For a helper, the program's thread it works for, where the trace says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helper_of: Option<u64>,
    /// From its first CUDA call's start to its last call's end.
    pub wall_ns: i64,
    pub calls: usize,
    pub in_calls_ns: i64,
    pub warm_up: Part,
    pub steady: Part,
    /// What its warm-up calls used for the first time.
    pub first_use: FirstUseCounts,
    pub verdict: VerdictKind,
}

/// What a thread's warm-up paid once for, counted (`trace::once`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FirstUseCounts {
    pub contexts: usize,
    pub module_loads: usize,
    /// Libraries and modules loaded by a call of the program's (or of its framework's): `cuLibraryLoadData`...
    pub libraries: usize,
    /// Calls in which the driver compiled code (a JIT).
    #[serde(default)]
    pub compiles: usize,
    /// Calls of a library's setup (cuBLAS's, cuDNN's handles, workspaces, autotuning).
    #[serde(default)]
    pub library_setups: usize,
    /// A caching allocator's allocations (its pool's growth).
    #[serde(default)]
    pub allocations: usize,
    /// Host → device copies of a model's upload.
    #[serde(default)]
    pub uploads: usize,
}

impl FirstUseCounts {
    fn of(f: FirstUse) -> FirstUseCounts {
        FirstUseCounts {
            contexts: f.contexts,
            module_loads: f.module_loads,
            libraries: f.libraries,
            compiles: f.compiles,
            library_setups: f.library_setups,
            allocations: f.allocations,
            uploads: f.uploads,
        }
    }

    /// The counts as the warm-up's words take them.
    pub fn counts(self) -> FirstUse {
        FirstUse {
            contexts: self.contexts,
            module_loads: self.module_loads,
            libraries: self.libraries,
            compiles: self.compiles,
            library_setups: self.library_setups,
            allocations: self.allocations,
            uploads: self.uploads,
        }
    }
}

/// A thread's warm-up or steady state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Part {
    /// Its share of the thread's time.
    pub wall_ns: i64,
    pub calls: usize,
    /// Its time inside CUDA calls.
    pub in_calls_ns: i64,
    /// Of that, held by CUDA (calls whose class is neither `async` nor `staged`).
    pub held_ns: i64,
    pub held_calls: usize,
    /// `held_ns` by cause, the most first.
    pub held_by: Vec<CauseTime>,
    /// Inside calls that returned at once.
    pub at_once_ns: i64,
    /// Outside CUDA calls: its own code, or waiting for something other than CUDA.
    pub outside_ns: i64,
    /// Of `outside_ns`, how long it waited for its helper threads' calls held by CUDA (`helpers`: calls placed
    /// at a line it was waiting at), by cause, the most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_for_helpers: Vec<CauseTime>,
    /// Their sum.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub helpers_ns: i64,
}

/// `i64` zero, for `skip_serializing_if`.
fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// One cause's time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CauseTime {
    /// `stream`, `device`, `thread`, `own` or `call` (see the report's segments).
    pub cause: String,
    /// In words ("its stream", "driver work").
    pub words: String,
    pub ns: i64,
}

/// The headline of an analysed process (`warm`: its warm-up; `totals`: per thread, `totals(&a.program)` for
/// a trace of every call).
pub fn headline(a: &Analysis, warm: &WarmUp, totals: &[ThreadTotals]) -> Headline {
    let helpers = super::helpers::helpers(a);
    let mut threads: Vec<ThreadAccount> = totals.iter().map(|t| account(a, warm, t, &helpers)).collect();
    threads.sort_by(|x, y| y.in_calls_ns.cmp(&x.in_calls_ns).then(x.thread.cmp(&y.thread)));
    // The verdict is about the program's own threads: its helpers' time counts where it waited for them.
    let reach = |t: &ThreadAccount| t.in_calls_ns + t.steady.helpers_ns + t.warm_up.helpers_ns;
    let own = threads.iter().filter(|t| !t.helper).min_by_key(|t| (std::cmp::Reverse(reach(t)), t.thread));
    let mut verdict = own.or(threads.first()).map_or(
        Verdict {
            thread: 0,
            kind: VerdictKind::OnlyWarmUp,
            words: "no CUDA call was traced".into(),
            remedy: Remedy::default(),
        },
        |t| verdict(t, &threads),
    );
    verdict.remedy = verdict_remedy(a, &verdict);
    // The thread the verdict is about comes first.
    if let Some(at) = threads.iter().position(|t| t.thread == verdict.thread) {
        let first = threads.remove(at);
        threads.insert(0, first);
    }
    let skipped_steps = warm.skipped.map(|s| SkippedSteps { steps: s.steps, until_ns: s.until_ns, thread: s.tid });
    Headline { verdict, threads, skipped_steps }
}

/// Whether call `i`'s class says something held it.
fn held(a: &Analysis, i: usize) -> bool {
    !a.traced[i].class.returns_at_once()
}

fn account(a: &Analysis, warm: &WarmUp, t: &ThreadTotals, helpers: &BTreeMap<u64, Option<u64>>) -> ThreadAccount {
    let calls = &a.program.calls;
    let wall = (t.last_ns - t.first_ns).max(0);
    let mine: Vec<usize> = (0..calls.len()).filter(|&i| calls[i].tid == t.tid).collect();
    let warm_calls: Vec<usize> = mine.iter().copied().filter(|&i| warm.calls[i]).collect();
    // The stretch `--skip-first` left out, and the warm-up calls after it.
    let until = warm.skipped.map(|s| s.until_ns.unwrap_or(t.last_ns));
    let range = until.map_or(0, |u| (u - t.first_ns).clamp(0, wall));
    let after: i64 = warm_calls
        .iter()
        .filter(|&&i| until.is_none_or(|u| calls[i].span.start >= u))
        .map(|&i| calls[i].span.len())
        .sum();
    let warm_wall = (range + after).min(wall);
    let warm_in_calls: i64 = warm_calls.iter().map(|&i| calls[i].span.len()).sum();
    let mut warm_up = part(a, &warm_calls, warm_wall, warm_calls.len(), warm_in_calls);
    // Calls of the stretch the trace may not hold are counted in its wall time, as time outside the calls.
    warm_up.outside_ns = (warm_wall - warm_in_calls).max(0);
    let steady_calls: Vec<usize> = mine.iter().copied().filter(|&i| !warm.calls[i]).collect();
    let mut steady = part(
        a,
        &steady_calls,
        wall - warm_wall,
        t.calls.saturating_sub(warm_calls.len()),
        (t.call_ns - warm_in_calls).max(0),
    );
    let mut first = FirstUse::default();
    for &i in &warm_calls {
        first.add(first_use(a, i));
    }
    // The calls of its helpers, warm-up and steady state apart.
    let theirs: Vec<usize> =
        (0..calls.len()).filter(|&i| helpers.get(&calls[i].tid).is_some_and(|of| *of == Some(t.tid))).collect();
    for (part, warm_up) in [(&mut warm_up, true), (&mut steady, false)] {
        let calls: Vec<usize> = theirs.iter().copied().filter(|&i| warm.calls[i] == warm_up).collect();
        waiting_for_helpers(part, super::helpers::waited_for(a, t.tid, &calls));
    }
    let kind = kind_of(&steady);
    ThreadAccount {
        thread: t.tid,
        name: a.program.threads.name(t.tid).map(str::to_owned),
        words: a.program.threads.words(t.tid),
        helper: helpers.contains_key(&t.tid),
        helper_of: helpers.get(&t.tid).copied().flatten(),
        wall_ns: wall,
        calls: t.calls,
        in_calls_ns: t.call_ns,
        warm_up,
        steady,
        first_use: FirstUseCounts::of(first),
        verdict: kind,
    }
}

/// One part of a thread: `calls` (of the trace) held by CUDA, out of `n_calls` that took `in_calls_ns`.
fn part(a: &Analysis, calls: &[usize], wall_ns: i64, n_calls: usize, in_calls_ns: i64) -> Part {
    let mut by: BTreeMap<Cause, i64> = BTreeMap::new();
    let mut held_calls = 0;
    for &i in calls.iter().filter(|&&i| held(a, i)) {
        held_calls += 1;
        for s in &a.traced[i].held.segments {
            *by.entry(s.cause).or_default() += s.span.len();
        }
    }
    let held_ns: i64 = by.values().sum();
    let mut held_by: Vec<CauseTime> = by
        .into_iter()
        .map(|(c, ns)| CauseTime { cause: c.slug().into(), words: super::words::cause(c).into(), ns })
        .collect();
    held_by.sort_by(|x, y| y.ns.cmp(&x.ns).then(x.cause.cmp(&y.cause)));
    let in_calls_ns = in_calls_ns.max(held_ns);
    Part {
        wall_ns,
        calls: n_calls,
        in_calls_ns,
        held_ns,
        held_calls,
        held_by,
        at_once_ns: in_calls_ns - held_ns,
        outside_ns: (wall_ns - in_calls_ns).max(0),
        waiting_for_helpers: Vec::new(),
        helpers_ns: 0,
    }
}

/// `part`'s time waiting for its helpers (`by` cause), within its time outside CUDA calls.
fn waiting_for_helpers(part: &mut Part, by: BTreeMap<Cause, i64>) {
    let mut left = part.outside_ns;
    let mut times: Vec<CauseTime> = by
        .into_iter()
        .map(|(c, ns)| CauseTime { cause: c.slug().into(), words: super::words::cause(c).into(), ns })
        .collect();
    times.sort_by(|x, y| y.ns.cmp(&x.ns).then(x.cause.cmp(&y.cause)));
    for t in &mut times {
        t.ns = t.ns.min(left);
        left -= t.ns;
    }
    times.retain(|t| t.ns > 0);
    part.helpers_ns = times.iter().map(|t| t.ns).sum();
    part.waiting_for_helpers = times;
}

/// The verdict on a thread's steady state (the rules are on [`VerdictKind`]).
fn kind_of(steady: &Part) -> VerdictKind {
    if steady.calls == 0 || steady.wall_ns <= 0 {
        VerdictKind::OnlyWarmUp
    } else if (steady.held_ns + steady.helpers_ns) * 2 >= steady.wall_ns {
        VerdictKind::HeldByCuda
    } else if (steady.outside_ns - steady.helpers_ns) / steady.calls as i64 <= LAUNCH_GAP_NS {
        VerdictKind::BusyLaunching
    } else {
        VerdictKind::MostlyOutsideCuda
    }
}

/// What to change for a verdict, in the framework of the process (and the API its thread used most).
fn verdict_remedy(a: &Analysis, v: &Verdict) -> Remedy {
    let calls = a.program.calls.iter().filter(|c| c.tid == v.thread);
    let runtime = calls.clone().filter(|c| c.domain == super::format::Domain::Runtime).count();
    let api = if runtime * 2 >= calls.count() { "runtime" } else { "driver" };
    match v.kind {
        VerdictKind::HeldByCuda => remedy::verdict::held_by_cuda(),
        VerdictKind::BusyLaunching => remedy::verdict::busy_launching(a.framework, api),
        VerdictKind::MostlyOutsideCuda => remedy::verdict::mostly_outside(a.framework),
        VerdictKind::OnlyWarmUp if v.thread == 0 => Remedy::default(),
        VerdictKind::OnlyWarmUp => remedy::verdict::only_warm_up(),
    }
}

fn verdict(t: &ThreadAccount, threads: &[ThreadAccount]) -> Verdict {
    let s = &t.steady;
    let who = &t.words;
    let held = percent(s.held_ns + s.helpers_ns, s.wall_ns);
    // Its helpers, by how the text calls them.
    let helpers: Vec<&ThreadAccount> = threads.iter().filter(|h| h.helper && h.helper_of == Some(t.thread)).collect();
    let names = {
        let mut n: Vec<&str> = helpers.iter().take(2).map(|h| h.words.as_str()).collect();
        let more = helpers.len().saturating_sub(2);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        if n.len() == 2 {
            n.insert(1, if more.is_empty() { " and " } else { ", " });
        }
        format!("{}{more}", n.concat())
    };
    let plural = if helpers.len() == 1 { "" } else { "s" };
    let through = if s.helpers_ns > 0 {
        format!(", {} of it waiting for its helper thread{plural} ({names})", percent(s.helpers_ns, s.wall_ns))
    } else {
        String::new()
    };
    let words = match t.verdict {
        VerdictKind::HeldByCuda => {
            // The cause that held it most, its own calls' and its helpers' while it waited for them together.
            let mut by: BTreeMap<&str, (&str, i64)> = BTreeMap::new();
            for c in s.held_by.iter().chain(&s.waiting_for_helpers) {
                by.entry(c.cause.as_str()).or_insert((c.words.as_str(), 0)).1 += c.ns;
            }
            let most = by
                .values()
                .max_by_key(|(w, ns)| (*ns, std::cmp::Reverse(*w)))
                .map_or(String::new(), |(w, ns)| format!(", most by {w} ({})", duration(*ns)));
            format!("held by CUDA: {who} was held {held} of its steady state ({}){through}{most}", duration(s.wall_ns))
        }
        VerdictKind::BusyLaunching => format!(
            "busy launching: {who} made a CUDA call every {} on average and was held {held} of its steady state \
             ({}){through}",
            duration((s.outside_ns - s.helpers_ns + s.at_once_ns) / s.calls.max(1) as i64),
            duration(s.wall_ns)
        ),
        VerdictKind::MostlyOutsideCuda => format!(
            "mostly outside CUDA calls: {who} spent {} of its steady state ({}) outside them (its own code, \
             or waiting for something else) and was held {held}{through}",
            percent(s.outside_ns - s.helpers_ns, s.wall_ns),
            duration(s.wall_ns)
        ),
        VerdictKind::OnlyWarmUp => format!("only warm-up: every call of {who} is warm-up"),
    };
    // Where the trace cannot tell that it waited for its helpers, what they were held is said beside.
    let theirs: i64 = helpers.iter().map(|h| h.steady.held_ns).sum();
    let beside = if s.helpers_ns == 0 && theirs > 0 {
        format!(
            "; its helper thread{plural} that run{} no Python ({names}) {} held {} in {} steady state",
            if helpers.len() == 1 { "s" } else { "" },
            if helpers.len() == 1 { "was" } else { "were" },
            duration(theirs),
            if helpers.len() == 1 { "its" } else { "their" }
        )
    } else {
        String::new()
    };
    Verdict { thread: t.thread, kind: t.verdict, words: words + &beside, remedy: Remedy::default() }
}

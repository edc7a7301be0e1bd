//! A lazy module load behind work: a call that loaded a module at a first use (a launch or a lookup, not a
//! loading function of its own: the driver's overhead record of a lazy load with its correlation id, or a
//! module-loaded event on its thread while it ran) waits for the work under way when it began before it loads
//! (the lab's K4: `runtime/load/first-launch/lazy/same` waited for its stream, `.../lazy/other` for the
//! device), so that work's end, where it came before the load, is a release: the call waited for it, and the
//! rest is the load's own driver work.
//!
//! The trace's word that the load began right after that work ended (within the release slack) is not needed:
//! a PyTorch first reduction behind a 50 ms kernel held 46.5 ms, the kernel ended 38.4 ms in, and the
//! driver's record of the function's load came 4.8 ms later, after the module's own load, which no record
//! covers. What the rule needs instead is that the load alone cannot explain the time: the call held longer
//! than every lazy load of the same trace that had nothing to wait for took ([`Program::lazy_alone_ns`]). A
//! training loop's 6.8 ms first launch during which a 3.8 ms GEMM ended, in a trace whose loads with nothing
//! ahead took up to 10.3 ms, stays its own driver work: the trace cannot tell that it waited. Where the rest
//! after the wait is longer than every such load, `--explain` says so: part of it may be something the trace
//! does not show.
//!
//! A trace without records of the work ahead (a kernel outside a sampled window) shows no such work: the rule
//! claims nothing there.

use super::calls::is_load;
use super::functions::may_load_lazily;
use super::scene::{Program, RESOLUTION_NS};

/// What the trace shows of call `i`'s lazy module load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LazyLoad {
    /// When the trace first shows the load: the earliest of its overhead records of a load and the
    /// module-loaded events on its thread while it ran.
    pub at: i64,
    /// The end of the work under way when the call began that ended before the load (the latest such end),
    /// where there was some.
    pub waited_until: Option<i64>,
    /// Whether the rule takes that end as the release: the call held longer than every lazy load of the trace
    /// with nothing to wait for (or the trace has none to compare with).
    pub waited: bool,
    /// The longest a lazy load with nothing to wait for held its thread in this trace, where it has one.
    pub alone_ns: Option<i64>,
}

impl LazyLoad {
    /// The load's own time after the wait (the call's end minus the wait's end), where it waited.
    pub fn rest_ns(&self, call_end: i64) -> Option<i64> {
        self.waited.then(|| self.waited_until.map(|e| call_end - e)).flatten()
    }
}

impl Program {
    /// Call `i`'s lazy module load, where it made one (see the module's doc).
    pub fn lazy_load(&self, i: usize) -> Option<LazyLoad> {
        let at = self.lazy_load_at(i)?;
        let c = &self.calls[i];
        let waited_until = self
            .pending_at_start(i)
            .filter(|&end| end <= at + RESOLUTION_NS && end <= c.span.end)
            .max()
            .filter(|&end| end > c.span.start + RESOLUTION_NS);
        let alone_ns = self.lazy_alone_ns();
        let waited = waited_until.is_some() && alone_ns.is_none_or(|alone| c.span.len() > alone);
        Some(LazyLoad { at, waited_until, waited, alone_ns })
    }

    /// When call `i` shows a lazy module load, where it is a call that loads lazily (a launch or a lookup, and
    /// no loading function among it and the driver calls inside it).
    fn lazy_load_at(&self, i: usize) -> Option<i64> {
        let c = &self.calls[i];
        let functions = || std::iter::once(&c.name).chain(&c.inner);
        if functions().any(|n| is_load(n)) || !functions().any(|n| may_load_lazily(n)) {
            return None;
        }
        let records = self.overheads_of(i).into_iter().filter(|o| o.is_load()).map(|o| o.span.start);
        records.chain(self.module_load_times_in(i)).min()
    }

    /// The ends of the GPU work enqueued before call `i` (a lower correlation id) and not ended when it began.
    fn pending_at_start(&self, i: usize) -> impl Iterator<Item = i64> + '_ {
        let c = &self.calls[i];
        let first_corr = c.corrs.iter().copied().min().unwrap_or(c.corr);
        self.work_during(c.span)
            .filter(move |w| w.corr < first_corr && w.span.end > c.span.start + RESOLUTION_NS)
            .map(|w| w.span.end)
    }

    /// The longest a lazy module load with nothing to wait for (no work under way when it began) held its
    /// thread in this trace, where it has one.
    pub fn lazy_alone_longest(&self) -> Option<i64> {
        (0..self.calls.len())
            .filter(|&i| self.lazy_load_at(i).is_some() && self.pending_at_start(i).next().is_none())
            .map(|i| self.calls[i].span.len())
            .max()
    }
}

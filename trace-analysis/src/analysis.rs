//! One process's section read once for every view: its calls classified (`calls`), where each was made
//! (`location`), which are start-up (`startup`) and paid once (`once`), and its framework, so that the
//! terminal's tables, the JSON report, the Perfetto export, the page and the gate agree call by call. A run
//! of `async-lab trace` makes one per process ([`Analysis::all`]) and hands it to each view (`made` counts
//! them; its test fails where a view makes its own again).

use super::by_location::{self, ByLocation};
use super::calls::{self, Traced};
use super::format::{ProcessTrace, Trace};
use super::framework::{self, Framework};
use super::location::{Locations, Place};
use super::once::{self, Once};
use super::scene::Program;
use super::startup;
use super::waiting;

/// A process, classified and located.
pub struct Analysis<'a> {
    pub process: &'a ProcessTrace,
    pub program: Program,
    /// Every call, in the order they began (`Traced::index` into `program.calls`).
    pub traced: Vec<Traced>,
    pub locations: Locations,
    /// Each call's innermost user frame, indexed as `program.calls`.
    pub places: Vec<Place>,
    /// Whether each call is start-up, indexed as `program.calls`.
    pub startup: Vec<bool>,
    /// The framework that made the process's calls (`framework`).
    pub framework: Framework,
    /// Why each call is paid once, where it is (`once`), indexed as `program.calls`.
    pub once: Vec<Option<Once>>,
}

impl<'a> Analysis<'a> {
    pub fn of(process: &'a ProcessTrace) -> Analysis<'a> {
        super::made::analysis();
        let program = Program::of(process);
        let traced = calls::classify(&program);
        let locations = Locations::of(process);
        let places = waiting::places(&locations, &program, &traced);
        let startup = startup::startup_calls(process, &program);
        let framework = framework::of_process(process);
        let causes = once::Causes::of(&program, &places, &locations, framework);
        let once =
            (0..program.calls.len()).map(|i| once::of(&program.view(i), &causes, &locations, &places[i])).collect();
        Analysis { process, program, traced, locations, places, startup, framework, once }
    }

    /// Every process of `trace`, each analysed once, in the trace's order.
    pub fn all(trace: &'a Trace) -> Vec<Analysis<'a>> {
        trace.processes.iter().map(Analysis::of).collect()
    }

    /// The framework call `i` was made through: its own frames', else the process's.
    pub fn framework_of(&self, i: usize) -> Framework {
        let f = self.locations.frames(&self.program.calls[i]);
        framework::of_frames(f.python, f.native).unwrap_or(self.framework)
    }

    /// Whether call `i` is one the program pays once (`once`) or start-up.
    pub fn paid_once(&self, i: usize) -> bool {
        self.once[i].is_some() || self.startup[i]
    }

    /// The calls the tables show: all of them, or those after start-up (`--after-startup`).
    pub fn shown(&self, after_startup: bool) -> Vec<Traced> {
        self.traced.iter().filter(|t| !(after_startup && self.startup[t.index])).cloned().collect()
    }

    /// The by-location table.
    pub fn by_location(&self, min_held_ns: i64, after_startup: bool) -> ByLocation {
        let paid_once: Vec<bool> = (0..self.program.calls.len()).map(|i| self.paid_once(i)).collect();
        let mut what = super::once::FirstUse::default();
        for i in (0..paid_once.len()).filter(|&i| paid_once[i] && !(after_startup && self.startup[i])) {
            what.add(super::once::FirstUse::of(&self.program.calls[i], &self.traced[i], self.once[i], self.startup[i]));
        }
        let apart = by_location::Apart { startup: &self.startup, paid_once: &paid_once, paid_once_words: what.words() };
        by_location::by_location(&self.program, &self.traced, &self.places, apart, min_held_ns, after_startup)
    }

    /// The calls held longer than `min_held_ns` (start-up left out with `after_startup`), longest first.
    pub fn held(&self, min_held_ns: i64, after_startup: bool) -> Vec<&Traced> {
        let mut held: Vec<&Traced> = self
            .traced
            .iter()
            .filter(|t| t.held.total_ns > min_held_ns && !(after_startup && self.startup[t.index]))
            .collect();
        held.sort_by(|a, b| b.held.total_ns.cmp(&a.held.total_ns).then(a.index.cmp(&b.index)));
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::made::{since, so_far, Made};

    #[test]
    fn an_analysis_is_counted_once_with_its_program() {
        let p = ProcessTrace::default();
        let before = so_far();
        let a = Analysis::of(&p);
        assert_eq!(since(before), Made { programs: 1, analyses: 1 });
        let _ = Program::of(a.process);
        assert_eq!(since(before), Made { programs: 2, analyses: 1 });
    }
}

//! One process's section read once for every view that needs more than the held-call tables: its calls
//! classified (`calls`), where each was made (`location`) and which are start-up (`startup`), so the
//! by-location table, the JSON report and the Perfetto export agree call by call.

use super::by_location::{self, ByLocation};
use super::calls::{self, Traced};
use super::format::ProcessTrace;
use super::location::{Locations, Place};
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
}

impl<'a> Analysis<'a> {
    pub fn of(process: &'a ProcessTrace) -> Analysis<'a> {
        let program = Program::of(process);
        let traced = calls::classify(&program);
        let locations = Locations::of(process);
        let places = waiting::places(&locations, &program, &traced);
        let startup = startup::startup_calls(process, &program);
        Analysis { process, program, traced, locations, places, startup }
    }

    /// The calls the tables show: all of them, or those after start-up (`--after-startup`).
    pub fn shown(&self, after_startup: bool) -> Vec<Traced> {
        self.traced.iter().filter(|t| !(after_startup && self.startup[t.index])).cloned().collect()
    }

    /// The by-location table.
    pub fn by_location(&self, min_held_ns: i64, after_startup: bool) -> ByLocation {
        by_location::by_location(&self.program, &self.traced, &self.places, &self.startup, min_held_ns, after_startup)
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

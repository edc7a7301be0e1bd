//! The capability table (`trace::capability`, `capabilities.json`) derived from recordings: each case of the
//! committed recordings [`RECORDINGS`] names replayed through today's rules, its class the way its function
//! was seen to wait, under the condition its facts say. A test in `tests/` derives it again and fails on any
//! difference from the committed table.

use crate::attribution::Cause;
use crate::catalogue::seed::Step;
use crate::catalogue::seed_runtime::{ModuleLoading, ProgramStep};
use crate::catalogue::Layout;
use crate::catalogue::{launches::LaunchFacts, Facts};
use crate::record::Recording;
use crate::report;
use crate::rules::Expected;
use crate::setup::{Direction, HostKind};
use crate::trace::capability::{function_of, Condition, Entry, Table, Way};

/// The committed recordings the table is derived from: the default run through both APIs, the `next` and
/// `loading` presets, and the seed's programs, all made on the H200 at one commit.
pub const RECORDINGS: [&str; 4] = [
    "async-lab-default-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json",
    "async-lab-next-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json",
    "async-lab-loading-h200-driver580.159.04-2026-12-03-daa644a.json",
    "async-lab-seed-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json",
];

/// The condition a case was measured under, from its facts.
pub fn condition_of(facts: &Facts, layout: &Layout) -> Condition {
    if layout.direction == Some(Direction::HtoH) {
        return Condition::HostToHost;
    }
    match facts {
        Facts::Launch(LaunchFacts::QueueDepth) => return Condition::FullQueue,
        Facts::Load(_) => return Condition::ModuleLoad,
        // The seed's first launch loads its kernel (lazily: its driver program loads the module without
        // its functions, and its runtime programs run under lazy loading unless told `EAGER`).
        Facts::Seed(f) if f.step == Some(Step::Launch) => return Condition::ModuleLoad,
        Facts::SeedRuntime(f)
            if matches!(f.loading, ModuleLoading::Unset | ModuleLoading::Lazy)
                && f.step == Some(ProgramStep::Seed(Step::Launch)) =>
        {
            return Condition::ModuleLoad
        }
        _ => {}
    }
    match layout.host_memory {
        Some(HostKind::Pageable) => Condition::PageableMemory,
        Some(HostKind::Managed) => Condition::ManagedMemory,
        _ => Condition::Always,
    }
}

/// The table of the given recordings (name, recording), in that order.
pub fn derive(recordings: &[(&str, &Recording)]) -> Table {
    let mut entries: Vec<Entry> = Vec::new();
    let mut queue_depth: Option<f64> = None;
    for (name, rec) in recordings {
        let results = report::build(rec).results;
        for (case, result) in rec.cases.iter().zip(&results) {
            if let Some(depth) = result.metrics.queue_depth {
                queue_depth = Some(queue_depth.map_or(depth, |d: f64| d.min(depth)));
            }
            let (Some(class), Some(facts)) = (result.class, case.setup.case.as_ref().map(|c| &c.facts)) else {
                continue;
            };
            if result.error.is_some() || result.not_run.is_some() {
                continue;
            }
            let Some(way) = Way::of(class) else { continue };
            let function = function_of(&case.setup.call).to_owned();
            let condition = condition_of(facts, &case.setup.layout);
            // The class names one way (a copy that waited for its stream and then held the thread through its
            // transfer is `blocking`); the waits its repetitions show are ways it can wait too.
            let mut ways = vec![way];
            for (cause, w) in [(Cause::Stream, Way::Stream), (Cause::Device, Way::Device), (Cause::Thread, Way::Thread)]
            {
                let waited = result.held.iter().filter(|h| h.ns(cause) > h.resolution_ns).count();
                if waited * 2 > result.held.len() && !ways.contains(&w) {
                    ways.push(w);
                }
            }
            for way in ways {
                add(
                    &mut entries,
                    Entry {
                        function: function.clone(),
                        way,
                        condition,
                        case: case.setup.id.clone(),
                        recording: (*name).to_owned(),
                        rule: case.setup.rule.clone(),
                        expected: match &case.setup.expected {
                            Expected::Classes { classes } => classes.clone(),
                            Expected::Undocumented { older } => older.clone().unwrap_or_default(),
                            Expected::WaitStyle { .. } => vec![],
                        },
                        cases: 1,
                    },
                );
            }
        }
    }
    entries.sort_by(|a, b| (&a.function, a.way, a.condition).cmp(&(&b.function, b.way, b.condition)));
    Table { recordings: recordings.iter().map(|(n, _)| (*n).to_owned()).collect(), entries, queue_depth }
}

/// Counts `e` into the entry of its function, way and condition, or adds it as the first.
fn add(entries: &mut Vec<Entry>, e: Entry) {
    match entries.iter_mut().find(|x| x.function == e.function && x.way == e.way && x.condition == e.condition) {
        Some(x) => x.cases += 1,
        None => entries.push(e),
    }
}

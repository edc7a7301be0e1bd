//! What the lab has measured about each API function, for the trace: which functions were seen to wait for
//! their stream, for the device, for another thread, or to hold the thread through their own work, and under
//! what condition (pageable or managed memory, a module load, a full launch queue), each with the experiment
//! and the recording that show it.
//!
//! The table is derived from recordings (a replay of each through today's rules: `from_recordings::capabilities`
//! beside the catalogue), never written by hand: `capabilities.json` beside this file is what that derivation
//! makes of the committed recordings it names, and a test in `tests/` derives it again and fails on any
//! difference (a rule or a recording that changed without it). Here: the table as the analysis reads it. A trace claims that a call waited some way only where the table holds
//! that way for the call's function (or for a driver function it called inside), under a condition the trace
//! shows; a function the lab never measured is "not known to wait" ([`Table::allows`]).

use crate::class::Class;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// What a call was measured to do with its thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Way {
    /// Waited for earlier work in its stream (`waited-for-stream`).
    Stream,
    /// Waited for the whole device (`device-sync`): also for its own stream.
    Device,
    /// Waited for another thread's call (`waited-for-thread`).
    Thread,
    /// Held the thread through its own GPU work (`blocking`).
    OwnWork,
    /// Returned without waiting (`async`, `staged`).
    Nothing,
}

impl Way {
    /// The way a class says the call waited; `None` for a class that decides nothing.
    pub fn of(class: Class) -> Option<Way> {
        match class {
            Class::WaitedForStream => Some(Way::Stream),
            Class::DeviceSync => Some(Way::Device),
            Class::WaitedForThread => Some(Way::Thread),
            Class::Blocking => Some(Way::OwnWork),
            // `driver-work` is a trace's word for a call that waited for nothing but the driver's own work.
            Class::Async | Class::Staged | Class::DriverWork => Some(Way::Nothing),
            Class::Indeterminate | Class::Unknown => None,
        }
    }

    pub fn words(self) -> &'static str {
        match self {
            Way::Stream => "wait for its stream",
            Way::Device => "wait for the device",
            Way::Thread => "wait for another thread",
            Way::OwnWork => "hold the thread through its own work",
            Way::Nothing => "return without waiting",
        }
    }
}

/// Under what condition the lab saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Condition {
    /// Whatever the memory, with no module load and a queue with room: its plain behaviour.
    Always,
    /// Copying from or to pageable host memory.
    PageableMemory,
    /// Touching managed memory.
    ManagedMemory,
    /// A module loaded inside the call (lazy loading at a first launch or lookup, or a load at run time).
    ModuleLoad,
    /// The launch queue full of earlier launches (K5).
    FullQueue,
    /// A copy from host memory to host memory (which the driver makes on the calling thread, in stream order).
    HostToHost,
}

impl Condition {
    pub fn words(self) -> &'static str {
        match self {
            Condition::Always => "",
            Condition::PageableMemory => "with pageable host memory",
            Condition::ManagedMemory => "with managed memory",
            Condition::ModuleLoad => "when it loads a module",
            Condition::FullQueue => "when the launch queue is full",
            Condition::HostToHost => "copying host to host",
        }
    }
}

/// One function, one way, one condition: the first case that shows it, and how many do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The API function, as a trace names it without its version suffix (`cuMemcpyHtoDAsync`).
    pub function: String,
    pub way: Way,
    pub condition: Condition,
    /// The experiment (case id) that shows it first, in the recordings' order.
    pub case: String,
    /// The recording it is in.
    pub recording: String,
    /// The documented rule the case is held to, and the classes that rule expects.
    pub rule: String,
    pub expected: Vec<Class>,
    /// How many cases show this way under this condition.
    pub cases: usize,
}

/// The table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// The recordings it was derived from.
    pub recordings: Vec<String>,
    /// Sorted by function, way, condition.
    pub entries: Vec<Entry>,
    /// How many launches the launch queue held before a launch had to wait (K5's `queue_depth`, the
    /// smallest measured): a trace's launch behind that many not yet begun met a full queue.
    pub queue_depth: Option<f64>,
}

/// A function's name without the version and stream suffixes that a trace carries (`cuMemcpyHtoDAsync_v2`,
/// `cudaMemcpyAsync_ptsz`) and without the argument a case's call names (`cudaMemcpy(HostToDevice)`).
pub fn function_of(name: &str) -> &str {
    super::functions::function_of(name)
}

/// The committed table (`capabilities.json`).
pub fn lab() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str(include_str!("capabilities.json"))
            .expect("capabilities.json is the derivation's own output")
    })
}

/// What the trace shows about a call, for the conditions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shown {
    pub pageable: bool,
    pub managed: bool,
    pub module_load: bool,
    pub full_queue: bool,
    pub host_to_host: bool,
}

impl Shown {
    fn met(&self, c: Condition) -> bool {
        match c {
            Condition::Always => true,
            Condition::PageableMemory => self.pageable,
            Condition::ManagedMemory => self.managed,
            Condition::ModuleLoad => self.module_load,
            Condition::FullQueue => self.full_queue,
            Condition::HostToHost => self.host_to_host,
        }
    }
}

/// Whether a call may be said to have waited some way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Allowed<'t> {
    /// The lab saw it: this entry.
    Yes(&'t Entry),
    /// The lab measured the function (these entries) but never saw it wait this way under what the trace shows.
    NeverSeen(Vec<&'t Entry>),
    /// The lab never measured any of these functions.
    NotMeasured,
}

impl Table {
    /// Whether a call of `functions` (its own, then the driver functions it called inside) can have waited
    /// `way` under what the trace `shown`: a wait for the device also counts as a wait for the stream.
    pub fn allows(&self, functions: &[&str], way: Way, shown: Shown) -> Allowed<'_> {
        let names: Vec<&str> = functions.iter().map(|f| function_of(f)).collect();
        let of: Vec<&Entry> = self.entries.iter().filter(|e| names.contains(&e.function.as_str())).collect();
        if of.is_empty() {
            return Allowed::NotMeasured;
        }
        let fits =
            |e: &&Entry| (e.way == way || (way == Way::Stream && e.way == Way::Device)) && shown.met(e.condition);
        match of.iter().copied().find(fits) {
            Some(e) => Allowed::Yes(e),
            None => Allowed::NeverSeen(of),
        }
    }

    /// The table in Markdown, for docs/capabilities.md.
    pub fn markdown(&self) -> String {
        let mut out =
            String::from("| function | can | condition | shown by | rule | cases |\n|---|---|---|---|---|---|\n");
        for e in &self.entries {
            out.push_str(&format!(
                "| `{}` | {} | {} | `{}` | {} | {} |\n",
                e.function,
                e.way.words(),
                if e.condition == Condition::Always { "always" } else { e.condition.words() },
                e.case,
                e.rule,
                e.cases
            ));
        }
        if let Some(depth) = self.queue_depth {
            out.push_str(&format!(
                "\nA launch queue full: {depth:.0} launches not yet begun (the smallest `queue_depth` of K5's cases).\n"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traces_suffixes_and_a_cases_argument_are_cut() {
        assert_eq!(function_of("cuMemcpyHtoDAsync_v2"), "cuMemcpyHtoDAsync");
        assert_eq!(function_of("cudaMemcpyAsync_ptsz"), "cudaMemcpyAsync");
        assert_eq!(function_of("cuMemcpyAsync_ptsz_v2"), "cuMemcpyAsync");
        assert_eq!(function_of("cudaMemcpy(HostToDevice)"), "cudaMemcpy");
        assert_eq!(function_of("cudaFree(0)"), "cudaFree");
        assert_eq!(function_of("cuGraphInstantiateWithFlags"), "cuGraphInstantiateWithFlags");
        assert_eq!(function_of("cuStreamWaitValue32"), "cuStreamWaitValue32");
        assert_eq!(function_of("cuStreamWaitValue32_v2"), "cuStreamWaitValue32");
    }

    fn entry(function: &str, way: Way, condition: Condition) -> Entry {
        Entry {
            function: function.into(),
            way,
            condition,
            case: "c".into(),
            recording: "r".into(),
            rule: "R".into(),
            expected: vec![],
            cases: 1,
        }
    }

    #[test]
    fn a_wait_is_allowed_only_the_way_and_under_the_condition_the_lab_saw() {
        let t = Table {
            recordings: vec![],
            queue_depth: None,
            entries: vec![
                entry("cuMemFree", Way::Device, Condition::Always),
                entry("cuLaunchKernel", Way::Stream, Condition::ModuleLoad),
                entry("cuLaunchKernel", Way::Nothing, Condition::Always),
                entry("cuMemAllocHost", Way::Nothing, Condition::Always),
            ],
        };
        let none = Shown::default();
        assert!(matches!(t.allows(&["cudaFree", "cuMemFree_v2"], Way::Device, none), Allowed::Yes(_)));
        assert!(matches!(t.allows(&["cudaFree", "cuMemFree_v2"], Way::Stream, none), Allowed::Yes(_)));
        assert!(matches!(t.allows(&["cuLaunchKernel"], Way::Stream, none), Allowed::NeverSeen(_)));
        let load = Shown { module_load: true, ..none };
        assert!(matches!(t.allows(&["cudaLaunchKernel", "cuLaunchKernel"], Way::Stream, load), Allowed::Yes(_)));
        assert!(matches!(t.allows(&["cuMemAllocHost_v2"], Way::Device, none), Allowed::NeverSeen(_)));
        assert_eq!(t.allows(&["cudaHostAlloc", "cuMemHostAlloc"], Way::Device, none), Allowed::NotMeasured);
    }
}

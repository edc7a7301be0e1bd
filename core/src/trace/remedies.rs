//! What the lab measured of the remedies a trace's findings propose, for the words of each remedy: how soon a
//! pinned copy of each size returned (the size sweep and the seed's programs), a first launch and a load
//! under lazy and under eager loading (the loading preset), and a warm kernel launch beside a warm graph
//! launch (the default and `next` presets: what a thread busy launching saves per launch with CUDA graphs), each with its
//! experiment and its recording.
//!
//! Like the capability table (`capability`), it is derived from committed recordings (a replay of each
//! through today's rules: [`derive`]), never written by hand: `remedies.json` beside this file is what
//! [`derive`] makes of the recordings [`RECORDINGS`] names, and a test in `tests/` derives it again and fails
//! on any difference.

use crate::api::Api;
use crate::catalogue::graphs::{GraphCall, GraphFacts};
use crate::catalogue::launches::LaunchFacts;
use crate::catalogue::loading::Call as LoadCall;
use crate::catalogue::seed::{SeedFacts, Step};
use crate::catalogue::seed_runtime::{ProgramStep, SeedRuntimeFacts};
use crate::catalogue::Facts;
use crate::class::Class;
use crate::record::Recording;
use crate::report;
use crate::setup::{BlockerPlacement, Direction, HostKind};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The committed recordings the table is derived from, all made on the H200 at one commit.
pub const RECORDINGS: [&str; 5] = [
    "async-lab-sweep-h200-driver580.159.04-2026-12-03-daa644a.json",
    "async-lab-seed-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json",
    "async-lab-loading-h200-driver580.159.04-2026-12-03-daa644a.json",
    "async-lab-next-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json",
    "async-lab-default-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json",
];

/// The table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Remedies {
    /// The recordings it was derived from.
    pub recordings: Vec<String>,
    /// The GPU they were made on.
    pub gpu: String,
    /// Copies from or to pinned memory, by API, direction and size.
    pub pinned_copies: Vec<PinnedCopy>,
    /// First launches and loads, under lazy and eager loading.
    pub loading: Vec<Load>,
    /// Warm launches of a kernel and of a one-kernel graph, by API.
    #[serde(default)]
    pub launches: Vec<Launch>,
}

/// A warm launch the lab measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    /// `driver` or `runtime`.
    pub api: String,
    /// `kernel` or `graph`.
    pub what: String,
    /// The function the case called.
    pub call: String,
    /// How soon it returned: the median of its repetitions, and their least and most (ns).
    pub returned_ns: i64,
    pub min_ns: i64,
    pub max_ns: i64,
    pub repetitions: usize,
    pub case: String,
    pub recording: String,
}

/// One pinned copy the lab measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PinnedCopy {
    /// `driver` or `runtime`.
    pub api: String,
    /// `htod` or `dtoh`.
    pub direction: String,
    pub bytes: u64,
    /// The function the case called.
    pub call: String,
    /// How soon it returned: the median of its repetitions, and their least and most (ns).
    pub returned_ns: i64,
    pub min_ns: i64,
    pub max_ns: i64,
    pub repetitions: usize,
    /// Its transfer's time on the GPU (median, ns), where measured.
    pub gpu_ns: Option<i64>,
    pub class: Class,
    pub case: String,
    pub recording: String,
}

/// One loading experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Load {
    pub api: String,
    /// `first-launch`, `library-load-data`, `module-load-data`...
    pub call: String,
    /// `lazy` or `eager`.
    pub loading: String,
    /// What kept the GPU busy: `same` (a kernel ahead in its stream), `other` (a kernel on another stream),
    /// `copy` (copies on another stream).
    pub situation: String,
    pub class: Class,
    /// The call's host time (median, ns).
    pub returned_ns: i64,
    /// Of it, waiting for the GPU's work (its stream or the device), in the median repetition.
    pub waited_ns: i64,
    pub case: String,
    pub recording: String,
}

/// The table of the given recordings (name, recording), in that order.
pub fn derive(recordings: &[(&str, &Recording)]) -> Remedies {
    let mut pinned_copies: Vec<PinnedCopy> = Vec::new();
    let mut loading: Vec<Load> = Vec::new();
    let mut launches: Vec<Launch> = Vec::new();
    let mut gpu = String::new();
    for (name, rec) in recordings {
        if gpu.is_empty() {
            gpu = rec.machine.gpu_name.clone();
        }
        let results = report::build(rec).results;
        for (case, r) in rec.cases.iter().zip(&results) {
            let (Some(class), Some(facts)) = (r.class, case.setup.case.as_ref().map(|c| &c.facts)) else { continue };
            if r.error.is_some() || r.not_run.is_some() {
                continue;
            }
            let ns = |us: f64| (us * 1000.0).round() as i64;
            let Some(call_us) = r.host_call_us else { continue };
            let api = match r.api {
                Api::Driver => "driver",
                Api::Runtime => "runtime",
            };
            // The seed's steps name their direction in their facts (their setups hold none).
            let direction = match facts {
                Facts::Seed(SeedFacts { step: Some(step), .. })
                | Facts::SeedRuntime(SeedRuntimeFacts { step: Some(ProgramStep::Seed(step)), .. }) => match step {
                    Step::HtoD => Some(Direction::HtoD),
                    Step::DtoH => Some(Direction::DtoH),
                    _ => None,
                },
                _ => r.direction,
            };
            match facts {
                Facts::Sweep(_) | Facts::Seed(_) | Facts::SeedRuntime(_)
                    if r.host_memory == Some(HostKind::Pinned)
                        && super::functions::does(&r.call) == super::functions::Does::Copies
                        && matches!(direction, Some(Direction::HtoD | Direction::DtoH)) =>
                {
                    let direction = direction.map_or("", |d| d.slug()).to_owned();
                    let seen =
                        pinned_copies.iter().any(|c| c.api == api && c.direction == direction && c.bytes == r.bytes);
                    if !seen {
                        pinned_copies.push(PinnedCopy {
                            api: api.into(),
                            direction,
                            bytes: r.bytes,
                            call: r.call.clone(),
                            returned_ns: ns(call_us.median),
                            min_ns: ns(call_us.min),
                            max_ns: ns(call_us.max),
                            repetitions: call_us.n,
                            gpu_ns: r.device_us.map(ns),
                            class,
                            case: r.id.clone(),
                            recording: (*name).to_owned(),
                        });
                    }
                }
                Facts::Load(f)
                    if matches!(
                        f.call,
                        LoadCall::FirstLaunch | LoadCall::LibraryLoadData | LoadCall::ModuleLoadData
                    ) =>
                {
                    let waited = r.median_held().map_or(0, |h| {
                        h.ns(crate::attribution::Cause::Stream) + h.ns(crate::attribution::Cause::Device)
                    });
                    loading.push(Load {
                        api: api.into(),
                        call: f.call.slug().into(),
                        loading: f.loading.slug().into(),
                        situation: f.situation.slug().into(),
                        class,
                        returned_ns: ns(call_us.median),
                        waited_ns: waited,
                        case: r.id.clone(),
                        recording: (*name).to_owned(),
                    });
                }
                // A warm kernel launch and a warm one-kernel graph launch, each behind a blocker in its stream.
                Facts::Launch(LaunchFacts::Warm)
                | Facts::Graph(GraphFacts { call: GraphCall::LaunchSteady, blocker: BlockerPlacement::Same, .. }) => {
                    let what = if matches!(facts, Facts::Launch(_)) { "kernel" } else { "graph" };
                    launches.push(Launch {
                        api: api.into(),
                        what: what.into(),
                        call: r.call.clone(),
                        returned_ns: ns(call_us.median),
                        min_ns: ns(call_us.min),
                        max_ns: ns(call_us.max),
                        repetitions: call_us.n,
                        case: r.id.clone(),
                        recording: (*name).to_owned(),
                    });
                }
                _ => {}
            }
        }
    }
    pinned_copies.sort_by(|a, b| (&a.api, &a.direction, a.bytes).cmp(&(&b.api, &b.direction, b.bytes)));
    launches.sort_by(|a, b| (&a.api, &a.what).cmp(&(&b.api, &b.what)));
    Remedies {
        recordings: recordings.iter().map(|(n, _)| (*n).to_owned()).collect(),
        gpu,
        pinned_copies,
        loading,
        launches,
    }
}

/// The committed table (`remedies.json`).
pub fn lab() -> &'static Remedies {
    static TABLE: OnceLock<Remedies> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str(include_str!("remedies.json")).expect("remedies.json is derive()'s own output")
    })
}

impl Remedies {
    /// The pinned copy the lab measured nearest in size to `bytes` (in powers of two; the larger where two
    /// are as near), through `api` in `direction`, or through the other API where this one has none.
    pub fn pinned_copy(&self, api: &str, direction: &str, bytes: u64) -> Option<&PinnedCopy> {
        let log = |b: u64| (b.max(1) as f64).log2();
        let nearest = |api: &str| {
            self.pinned_copies.iter().filter(|c| c.api == api && c.direction == direction).min_by(|a, b| {
                let (da, db) = ((log(a.bytes) - log(bytes)).abs(), (log(b.bytes) - log(bytes)).abs());
                da.total_cmp(&db).then(b.bytes.cmp(&a.bytes))
            })
        };
        nearest(api).or_else(|| nearest(if api == "runtime" { "driver" } else { "runtime" }))
    }

    /// The loading experiment of `call` under `loading` in `situation` through `api` (or the other API).
    pub fn load(&self, api: &str, call: &str, loading: &str, situation: &str) -> Option<&Load> {
        let find = |api: &str| {
            self.loading
                .iter()
                .find(|l| l.api == api && l.call == call && l.loading == loading && l.situation == situation)
        };
        find(api).or_else(|| find(if api == "runtime" { "driver" } else { "runtime" }))
    }

    /// The warm launch of `what` (`kernel` or `graph`) through `api` (or the other API).
    pub fn launch(&self, api: &str, what: &str) -> Option<&Launch> {
        let find = |api: &str| self.launches.iter().find(|l| l.api == api && l.what == what);
        find(api).or_else(|| find(if api == "runtime" { "driver" } else { "runtime" }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(api: &str, bytes: u64) -> PinnedCopy {
        PinnedCopy {
            api: api.into(),
            direction: "htod".into(),
            bytes,
            call: "c".into(),
            returned_ns: 5_000,
            min_ns: 4_000,
            max_ns: 6_000,
            repetitions: 5,
            gpu_ns: None,
            class: Class::Async,
            case: format!("{api}/{bytes}"),
            recording: "r".into(),
        }
    }

    #[test]
    fn the_nearest_size_is_found_in_powers_of_two_and_the_other_api_stands_in() {
        let t = Remedies {
            recordings: vec![],
            gpu: "G".into(),
            pinned_copies: vec![copy("driver", 1 << 20), copy("driver", 1 << 26), copy("driver", 1 << 28)],
            loading: vec![],
            launches: vec![],
        };
        assert_eq!(t.pinned_copy("driver", "htod", 128 << 20).unwrap().bytes, 1 << 28);
        assert_eq!(t.pinned_copy("driver", "htod", 70 << 20).unwrap().bytes, 1 << 26);
        assert_eq!(t.pinned_copy("runtime", "htod", 4 << 10).unwrap().bytes, 1 << 20);
        assert!(t.pinned_copy("driver", "dtoh", 1 << 20).is_none());
    }
}

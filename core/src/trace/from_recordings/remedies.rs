//! The remedies' table (`trace::remedies`, `remedies.json`) derived from recordings: from the committed
//! recordings [`RECORDINGS`] names, replayed through today's rules, the pinned copies by API, direction and
//! size, the first launches and loads under lazy and eager loading, and the warm launches of a kernel and of a
//! graph. A test in `tests/` derives it again and fails on any difference from the committed table.

use crate::api::Api;
use crate::catalogue::graphs::{GraphCall, GraphFacts};
use crate::catalogue::launches::LaunchFacts;
use crate::catalogue::loading::Call as LoadCall;
use crate::catalogue::seed::{SeedFacts, Step};
use crate::catalogue::seed_runtime::{ProgramStep, SeedRuntimeFacts};
use crate::catalogue::Facts;
use crate::record::Recording;
use crate::report;
use crate::setup::{BlockerPlacement, Direction, HostKind};
use crate::trace::remedies::{Launch, Load, PinnedCopy, Remedies};

/// The committed recordings the table is derived from, all made on the H200 at one commit.
pub const RECORDINGS: [&str; 5] = [
    "async-lab-sweep-h200-driver580.159.04-2026-12-03-daa644a.json",
    "async-lab-seed-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json",
    "async-lab-loading-h200-driver580.159.04-2026-12-03-daa644a.json",
    "async-lab-next-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json",
    "async-lab-default-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json",
];

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
                        && crate::trace::functions::does(&r.call) == crate::trace::functions::Does::Copies
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

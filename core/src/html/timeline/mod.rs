//! What an experiment's timeline shows: one representative repetition (the one whose call time is the
//! median) as spans on lanes, all on the host's clock.
//!
//! Host times are `CLOCK_MONOTONIC` readings taken around the call. GPU times come from the blocker's
//! `%globaltimer` stamps, and the call's own work from CUDA events measured relative to the blocker's start
//! event (or, for the seed, to a stamped reference event); the recording's [`ClockOffset`] moves them onto
//! the host's clock. Where something is missing (no clock offset in an older recording, no blocker, a failed
//! experiment) the timeline holds what exists and says in `notes` what is not there: it never fails.

use super::axis::duration;
use crate::clock::{ClockFit, ClockOffset};
use crate::record::{BlockerPlacement, CaseRecord, Family, Rep};

/// What a span or marker stands for (it decides the colour).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The host thread inside the call.
    Host,
    /// The blocker kernel on the GPU.
    Blocker,
    /// The call's own work on the GPU.
    Work,
    /// A step of the seed sequence (host and GPU spans share the step's colour).
    Step(usize),
}

/// One interval on a lane, in host-clock ns.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub lane: usize,
    pub start: i64,
    pub end: i64,
    pub kind: Kind,
    /// Written in or beside the span where it fits.
    pub label: String,
    /// Written instead where `label` does not fit.
    pub short: String,
    /// The tooltip: the exact numbers.
    pub title: String,
    /// Placed on the host's clock by an estimate, not by a measured offset (drawn dashed).
    pub approx: bool,
    /// The experiment this span belongs to, where one timeline draws several (the seed's steps).
    pub group: Option<String>,
}

/// A vertical line across the lanes at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub at: i64,
    pub label: String,
    pub kind: MarkerKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerKind {
    /// The call returned: the host thread had control again.
    Returned,
    /// The call's work finished on the GPU.
    Finished,
    /// Something the host did before the call (the blocker's launch).
    Minor,
}

/// A horizontal band; `empty` is written in it when no span lies on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    pub name: String,
    /// A second, smaller line under the name.
    pub detail: String,
    pub empty: String,
}

impl Lane {
    fn new(name: &str, detail: impl Into<String>, empty: impl Into<String>) -> Lane {
        Lane { name: name.into(), detail: detail.into(), empty: empty.into() }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub lanes: Vec<Lane>,
    pub spans: Vec<Span>,
    pub markers: Vec<Marker>,
    /// Which repetition is drawn.
    pub caption: String,
    /// What is missing or estimated, in plain words.
    pub notes: Vec<String>,
}

impl Timeline {
    /// Whether there is anything to draw.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// The index of the repetition whose `key` is the median (the lower middle one for an even count).
pub fn median_index<T>(items: &[T], key: impl Fn(&T) -> u64) -> Option<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| (key(&items[i]), i));
    order.get(order.len().saturating_sub(1) / 2).copied()
}

/// How GPU times are moved onto the host's clock: the run's fit of `%globaltimer − CLOCK_MONOTONIC` (with
/// drift, where the run measured it), or an estimate.
#[derive(Clone, Copy, Debug)]
struct Offset {
    fit: ClockFit,
    approx: bool,
}

impl Offset {
    fn measured(clock: Option<&ClockFit>) -> Option<Offset> {
        clock.map(|c| Offset { fit: *c, approx: false })
    }

    /// Without a measured offset: assume that a GPU instant `gpu` happened at host time `host`.
    fn assumed(gpu: u64, host: u64) -> Offset {
        let at = ClockOffset {
            gpu_minus_host_ns: gpu as i64 - host as i64,
            uncertainty_ns: 0,
            samples: 0,
            at_host_ns: Some(host as i64),
        };
        Offset { fit: ClockFit::constant(&at), approx: true }
    }

    fn to_host(self, gpu: i64) -> i64 {
        self.fit.to_host(gpu)
    }
}

/// Where the call's own work sat on the GPU clock (`%globaltimer` ns): its start and end events placed after
/// the blocker's start, or after the stamped reference event.
fn work_on_gpu(rep: &Rep) -> Option<[i64; 2]> {
    if let (Some(b), Some(w)) = (rep.blocker_gpu_ns, rep.op_gpu_ns_from_blocker) {
        return Some([b[0] as i64 + w[0], b[0] as i64 + w[1]]);
    }
    if let (Some(o), Some(w)) = (rep.gpu_origin_ns, rep.op_gpu_ns_from_origin) {
        return Some([o as i64 + w[0], o as i64 + w[1]]);
    }
    None
}

/// Whether a GPU instant, moved onto the host's clock, lies within a minute of a host instant of the same
/// repetition. An offset that does not fit (a clock from another boot, a corrupt stamp) would draw the lanes
/// hours apart; such GPU times are left out and the timeline says so.
fn plausible(o: Offset, gpu: i64, host: u64) -> bool {
    host == 0 || (o.to_host(gpu) - host as i64).abs() < 60_000_000_000
}

const MISFIT: &str =
    "The GPU times, moved onto the host's clock, lie more than a minute away from the call: the clock \
                      offset does not fit this repetition, so the GPU lanes are left empty.";

const NO_OFFSET: &str = "This recording has no host/GPU clock offset (it was made before async-lab measured one)";

/// The timeline of one experiment. `clock` is the recording's offset, where it has one.
pub fn for_case(record: &CaseRecord, clock: Option<&ClockFit>) -> Timeline {
    let s = &record.setup;
    let mut t = Timeline::default();
    let Some(index) = median_index(&record.reps, |r| r.host_call_ns) else {
        t.notes.push(match (&record.error, &record.skipped) {
            (Some(e), _) => format!("Nothing to draw: the experiment failed ({e})."),
            (None, Some(reason)) => format!("Nothing to draw: not run on this machine ({reason})."),
            (None, None) => "Nothing to draw: no repetition was measured.".to_owned(),
        });
        return t;
    };
    let rep = &record.reps[index];
    t.caption = format!(
        "Repetition {} of {}, the one with the median call time ({}).",
        index + 1,
        record.reps.len(),
        duration(rep.host_call_ns as f64)
    );
    if let Some(e) = &record.error {
        t.notes.push(format!("The experiment did not finish ({e}); this is what was measured before."));
    }

    let has_blocker = s.blocker != BlockerPlacement::None || rep.blocker_gpu_ns.is_some();
    t.lanes.push(Lane::new("host thread", "", ""));
    let blocker_lane = has_blocker.then(|| {
        let where_ = match (s.blocker, s.blocker_stream) {
            (BlockerPlacement::Same, _) => "same stream".to_owned(),
            (BlockerPlacement::Other, Some(k)) => format!("other stream, {}", k.slug()),
            (BlockerPlacement::Other, None) => "other stream".to_owned(),
            (BlockerPlacement::None, _) => "?".to_owned(),
        };
        t.lanes.push(Lane::new("GPU: blocker", where_, "blocker times not recorded"));
        t.lanes.len() - 1
    });
    let has_work = rep.op_done_at_return.is_some() || rep.op_device_ns.is_some() || work_on_gpu(rep).is_some();
    t.lanes.push(Lane::new(
        "GPU: the call's work",
        s.stream.map_or(String::new(), |k| format!("{} stream", k.slug())),
        if has_work { "position not recorded" } else { "no GPU work" },
    ));
    let work_lane = t.lanes.len() - 1;

    let start = rep.host_call_start_ns as i64;
    let end = start + rep.host_call_ns as i64;
    let host_known = rep.host_call_start_ns != 0;
    if !host_known {
        t.notes.push(format!(
            "When the call started on the host's clock was not recorded, only how long it took ({}): the host lane is empty.",
            duration(rep.host_call_ns as f64)
        ));
    }
    t.spans.extend(host_known.then(|| Span {
        lane: 0,
        start,
        end,
        kind: Kind::Host,
        label: format!("{} {}", s.call, duration(rep.host_call_ns as f64)),
        short: duration(rep.host_call_ns as f64),
        title: format!(
            "{}: the host thread was inside the call for {} (CPU time {})",
            s.call,
            duration(rep.host_call_ns as f64),
            duration(rep.host_cpu_ns as f64)
        ),
        approx: false,
        group: None,
    }));
    if let Some(launch) = rep.host_blocker_launch_ns {
        t.markers.push(Marker { at: launch as i64, label: "blocker launched".into(), kind: MarkerKind::Minor });
    }
    if host_known {
        t.markers.push(Marker { at: end, label: "call returned".into(), kind: MarkerKind::Returned });
    }

    let assumed = match (rep.blocker_gpu_ns, rep.host_blocker_launch_ns) {
        (Some(b), Some(launch)) => Some(Offset::assumed(b[0], launch)),
        _ => None,
    };
    // A peer copy's blocker on the destination GPU ran on that GPU's clock; the recording's offset is the
    // main GPU's, so that blocker is placed by its launch instead.
    let other_gpu = s.family == Family::Peer && s.blocker == BlockerPlacement::Other;
    if other_gpu && assumed.is_some() {
        t.notes.push(
            "The blocker ran on the destination GPU, whose clock the recording did not align with the host's: it is \
             placed as if it had started the moment it was launched (dashed)."
                .into(),
        );
    }
    let offset = if other_gpu { assumed } else { Offset::measured(clock).or(assumed) };
    let gpu_instant = rep.blocker_gpu_ns.map(|b| b[0] as i64).or(work_on_gpu(rep).map(|w| w[0]));
    let host_instant = rep.host_blocker_launch_ns.unwrap_or(rep.host_call_start_ns);
    let misfit = matches!((offset, gpu_instant), (Some(o), Some(g)) if !plausible(o, g, host_instant));
    let offset = if misfit { None } else { offset };
    match (offset, clock) {
        _ if misfit => t.notes.push(MISFIT.into()),
        (Some(o), None) if o.approx => t.notes.push(format!(
            "{NO_OFFSET}: the GPU lanes are placed as if the blocker had started the moment it was launched, \
             which puts them early by the launch latency (microseconds). They are drawn dashed."
        )),
        (None, None) if rep.blocker_gpu_ns.is_some() || work_on_gpu(rep).is_some() => t.notes.push(format!(
            "{NO_OFFSET}, and nothing else ties the GPU's clock to the host's: the GPU lanes are empty."
        )),
        _ => {}
    }

    if let (Some(lane), Some(b), Some(o)) = (blocker_lane, rep.blocker_gpu_ns, offset) {
        let len = b[1].saturating_sub(b[0]) as f64;
        t.spans.push(Span {
            lane,
            start: o.to_host(b[0] as i64),
            end: o.to_host(b[1] as i64),
            kind: Kind::Blocker,
            label: format!("blocker {}", duration(len)),
            short: "blocker".into(),
            title: format!("the blocker kernel ran for {} (its %globaltimer stamps)", duration(len)),
            approx: o.approx,
            group: None,
        });
    } else if blocker_lane.is_some() && rep.blocker_gpu_ns.is_none() {
        t.notes.push("The blocker's GPU times were not recorded in this repetition.".into());
    }

    match (work_on_gpu(rep), offset) {
        (Some(w), Some(o)) => {
            let len = (w[1] - w[0]) as f64;
            let (ws, we) = (o.to_host(w[0]), o.to_host(w[1]));
            t.spans.push(Span {
                lane: work_lane,
                start: ws,
                end: we,
                kind: Kind::Work,
                label: format!("work {}", duration(len)),
                short: "work".into(),
                title: format!(
                    "the call's work on the GPU: from its start event (when it could start) to its end event, {}",
                    duration(len)
                ),
                approx: o.approx,
                group: None,
            });
            t.markers.push(Marker { at: we, label: "operation finished".into(), kind: MarkerKind::Finished });
        }
        (None, _) if has_work => t.notes.push(match rep.op_device_ns {
            Some(ns) => format!(
                "The call's GPU work took {} (CUDA events), but where it sat on the GPU's clock was not recorded.",
                duration(ns as f64)
            ),
            None => "Where the call's GPU work sat on the GPU's clock was not recorded.".into(),
        }),
        _ => {}
    }
    t
}

/// The seed program's steps (one memory kind, through either API), from the same repetition, on one timeline.
/// `steps` are the step records in order. A step without GPU work (the answer's `cudaFree(0)`) has a host span
/// only.
pub fn for_seed(steps: &[&CaseRecord], clock: Option<&ClockFit>) -> Timeline {
    let mut t = Timeline::default();
    let n = steps.iter().map(|r| r.reps.len()).min().unwrap_or(0);
    let totals: Vec<u64> = (0..n).map(|i| steps.iter().map(|r| r.reps[i].host_call_ns).sum()).collect();
    let Some(index) = median_index(&totals, |&x| x) else {
        let errors: Vec<String> = steps.iter().filter_map(|r| r.error.clone()).collect();
        t.notes.push(if errors.is_empty() {
            "Nothing to draw: no repetition of the sequence was measured.".to_owned()
        } else {
            format!("Nothing to draw: the sequence failed ({}).", errors.join("; "))
        });
        return t;
    };
    t.caption = format!(
        "Repetition {} of {} of the whole sequence, the one whose calls took the median total time ({}).",
        index + 1,
        n,
        duration(totals[index] as f64)
    );
    t.lanes.push(Lane::new("host thread", "", ""));
    let stream = steps.iter().find_map(|r| r.setup.stream).map_or(String::new(), |k| format!("{} stream", k.slug()));
    t.lanes.push(Lane::new("GPU: the stream's work", stream, "not recorded"));
    let reps: Vec<&Rep> = steps.iter().map(|r| &r.reps[index]).collect();

    let first = reps[0];
    let offset =
        Offset::measured(clock).or_else(|| first.gpu_origin_ns.map(|g| Offset::assumed(g, first.host_call_start_ns)));
    let misfit = matches!((offset, first.gpu_origin_ns), (Some(o), Some(g)) if !plausible(o, g as i64, first.host_call_start_ns));
    let offset = if misfit { None } else { offset };
    if misfit {
        t.notes.push(MISFIT.into());
    } else if clock.is_none() {
        t.notes.push(match offset {
            Some(_) => format!(
                "{NO_OFFSET}: the GPU lane is placed as if the reference stamp, launched just before the first \
                 call, had run at that call's start. It is drawn dashed."
            ),
            None => format!("{NO_OFFSET}, and no reference stamp either: the GPU lane is empty."),
        });
    }

    let mut last_return = None;
    let mut last_finish = None;
    for (k, (record, rep)) in steps.iter().zip(&reps).enumerate() {
        let s = &record.setup;
        let step = s.id.rsplit('/').next().unwrap_or(&s.id).to_owned();
        let name = step.replacen('-', " ", 1);
        let number = step.split('-').next().unwrap_or("").to_owned();
        let start = rep.host_call_start_ns as i64;
        let end = start + rep.host_call_ns as i64;
        t.spans.push(Span {
            lane: 0,
            start,
            end,
            kind: Kind::Step(k),
            label: format!("{name} {}", duration(rep.host_call_ns as f64)),
            short: number.clone(),
            title: format!("step {name}: {} returned after {}", s.call, duration(rep.host_call_ns as f64)),
            approx: false,
            group: Some(s.id.clone()),
        });
        last_return = Some(last_return.map_or(end, |e: i64| e.max(end)));
        match (work_on_gpu(rep), offset) {
            (Some(w), Some(o)) => {
                let (ws, we) = (o.to_host(w[0]), o.to_host(w[1]));
                t.spans.push(Span {
                    lane: 1,
                    start: ws,
                    end: we,
                    kind: Kind::Step(k),
                    label: format!("{name} {}", duration((w[1] - w[0]) as f64)),
                    short: number,
                    title: format!(
                        "step {name} on the GPU: between the events before and after it, {}",
                        duration((w[1] - w[0]) as f64)
                    ),
                    approx: o.approx,
                    group: Some(s.id.clone()),
                });
                last_finish = Some(last_finish.map_or(we, |e: i64| e.max(we)));
            }
            (None, _) if s.stream.is_none() => {} // a call that puts no work on the stream
            (None, _) => t.notes.push(format!("Step {name}: where its GPU work sat was not recorded.")),
            (Some(_), None) => {}
        }
    }
    if let Some(at) = last_return {
        t.markers.push(Marker { at, label: "last call returned".into(), kind: MarkerKind::Returned });
    }
    if let Some(at) = last_finish {
        t.markers.push(Marker { at, label: "stream's work finished".into(), kind: MarkerKind::Finished });
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{CaseSetup, Family};
    use crate::rules::Expected;

    fn record(reps: Vec<Rep>) -> CaseRecord {
        let setup = CaseSetup {
            id: "copy/x".into(),
            family: Family::Copy,
            call: "cuMemcpyHtoDAsync".into(),
            rule: "A1".into(),
            expected: Expected::undocumented(),
            stream: None,
            blocker: BlockerPlacement::Same,
            blocker_stream: None,
            blocker_ahead: true,
            host_memory: None,
            bytes: 1,
            what: String::new(),
            api: crate::api::Api::Driver,
            peer: None,
            direction: None,
        };
        CaseRecord { setup, blocker_ns: None, warmup: None, reps, series: None, error: None, skipped: None }
    }

    /// A call 30 µs after its blocker's launch; the blocker starts 8 µs after it on the GPU (offset 1000 s).
    fn rep(call_ns: u64) -> Rep {
        let gpu = 1_000_000_000_000 + 5_000_000_008_000;
        Rep {
            host_call_ns: call_ns,
            host_call_start_ns: 5_000_000_030_000,
            host_blocker_launch_ns: Some(5_000_000_000_000),
            blocker_gpu_ns: Some([gpu, gpu + 20_000_000]),
            op_gpu_ns_from_blocker: Some([20_003_000, 20_050_000]),
            op_done_at_return: Some(false),
            ..Rep::default()
        }
    }

    const CLOCK: ClockOffset =
        ClockOffset { gpu_minus_host_ns: 1_000_000_000_000, uncertainty_ns: 900, samples: 50, at_host_ns: None };

    #[test]
    fn the_median_repetition_on_the_host_clock() {
        let t = for_case(&record(vec![rep(9_000), rep(5_000), rep(7_000)]), Some(&ClockFit::constant(&CLOCK)));
        assert!(t.caption.starts_with("Repetition 3 of 3"), "{}", t.caption);
        let kinds: Vec<(Kind, i64, i64, bool)> = t.spans.iter().map(|s| (s.kind, s.start, s.end, s.approx)).collect();
        assert_eq!(
            kinds,
            [
                (Kind::Host, 5_000_000_030_000, 5_000_000_037_000, false),
                (Kind::Blocker, 5_000_000_008_000, 5_000_020_008_000, false),
                (Kind::Work, 5_000_020_011_000, 5_000_020_058_000, false),
            ]
        );
        assert!(t.notes.is_empty(), "{:?}", t.notes);
        let markers: Vec<&str> = t.markers.iter().map(|m| m.label.as_str()).collect();
        assert_eq!(markers, ["blocker launched", "call returned", "operation finished"]);
    }

    #[test]
    fn without_a_clock_offset_the_blocker_launch_anchors_the_gpu() {
        let t = for_case(&record(vec![rep(5_000)]), None);
        let blocker = t.spans.iter().find(|s| s.kind == Kind::Blocker).unwrap();
        assert_eq!((blocker.start, blocker.approx), (5_000_000_000_000, true));
        assert!(t.notes[0].contains("no host/GPU clock offset"), "{:?}", t.notes);
    }

    #[test]
    fn an_offset_that_does_not_fit_leaves_the_gpu_lanes_empty() {
        let wrong = ClockOffset { gpu_minus_host_ns: -3_600_000_000_000, ..CLOCK };
        let t = for_case(&record(vec![rep(5_000)]), Some(&ClockFit::constant(&wrong)));
        assert_eq!(t.spans.len(), 1, "only the host span");
        assert_eq!(t.notes, [MISFIT]);
    }

    #[test]
    fn missing_fields_are_said() {
        let mut r = rep(5_000);
        r.host_call_start_ns = 0;
        r.blocker_gpu_ns = None;
        r.op_gpu_ns_from_blocker = None;
        r.host_blocker_launch_ns = None;
        let t = for_case(&record(vec![r]), Some(&ClockFit::constant(&CLOCK)));
        assert!(t.is_empty());
        assert_eq!(t.notes.len(), 3, "{:?}", t.notes);
        let mut failed = record(vec![]);
        failed.error = Some("out of memory".into());
        let t = for_case(&failed, Some(&ClockFit::constant(&CLOCK)));
        assert_eq!(t.notes, ["Nothing to draw: the experiment failed (out of memory)."]);
    }

    #[test]
    fn the_median_repetition() {
        assert_eq!(median_index(&[5u64, 1, 9], |&x| x), Some(0));
        assert_eq!(median_index(&[4u64, 1, 3, 2], |&x| x), Some(3));
        assert_eq!(median_index::<u64>(&[], |&x| x), None);
    }

    #[test]
    fn gpu_times_move_onto_the_host_clock() {
        let at = ClockOffset { gpu_minus_host_ns: 1_000, uncertainty_ns: 0, samples: 1, at_host_ns: None };
        let o = Offset { fit: ClockFit::constant(&at), approx: false };
        assert_eq!(o.to_host(5_000), 4_000);
        let rep = Rep {
            blocker_gpu_ns: Some([10_000, 30_000]),
            op_gpu_ns_from_blocker: Some([20_100, 20_600]),
            ..Rep::default()
        };
        assert_eq!(work_on_gpu(&rep), Some([30_100, 30_600]));
        let seed = Rep { gpu_origin_ns: Some(100), op_gpu_ns_from_origin: Some([5, 50]), ..Rep::default() };
        assert_eq!(work_on_gpu(&seed), Some([105, 150]));
    }
}

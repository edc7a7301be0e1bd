//! What an experiment's timeline shows: one representative repetition (the one whose call time is the
//! median) as spans on lanes, all on the host's clock.
//!
//! Host times are `CLOCK_MONOTONIC` readings taken around the call. GPU times come from the blocker's
//! `%globaltimer` stamps, and the call's own work from CUDA events measured relative to the blocker's start
//! event (or, for the seed, to a stamped reference event); the recording's clock fit
//! ([`ClockFit`](crate::clock::ClockFit)) moves them onto the host's clock. Where something is missing (no
//! clock offset in an older recording, no blocker, a failed experiment) the timeline holds what exists and says
//! in `notes` what is not there: it never fails.
//!
//! This file holds what a timeline is made of; `case.rs` builds an experiment's (its host lanes; `gpu_lanes.rs`
//! its GPU lanes), `seed.rs` the seed program's, `host_clock.rs` moves GPU times onto the host's clock, and
//! `other_thread.rs` draws the threads family's other thread (its slow call) on a host lane of its own.

mod case;
mod gpu_lanes;
mod host_clock;
mod other_thread;
mod seed;

pub use case::for_case;
pub use other_thread::has_other_thread;
pub use seed::for_seed;

/// What a span or marker stands for (it decides the colour).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The host thread inside the call.
    Host,
    /// Another thread inside its own call, beside the call under test (the threads family).
    Other,
    /// The blocker kernel on the GPU.
    Blocker,
    /// The call's own work on the GPU.
    Work,
    /// A step of the seed sequence (host and GPU spans share the step's colour).
    Step(usize),
    /// A stretch of the call's host time, coloured by what held the thread during it (`attribution`).
    Held(crate::attribution::Cause),
}

/// The lane under the host thread's: the call's time cut by what held the thread (`attribution`).
pub(crate) fn held_lane() -> Lane {
    Lane::new("thread held by", "what it waited for", "nothing measured")
}

/// The spans of `held` (a repetition's attribution) on `lane`, from the call's start at host time `start`;
/// `group` ties them to an experiment where one timeline draws several.
pub(crate) fn held_spans(held: &crate::attribution::Held, start: i64, lane: usize, group: Option<&str>) -> Vec<Span> {
    use crate::attribution::Cause;
    held.segments
        .iter()
        .map(|seg| {
            let ns = seg.span.len() as f64;
            let what = match seg.cause {
                Cause::Stream | Cause::Device | Cause::Thread if !seg.what.is_empty() => {
                    format!("{} ({})", seg.cause.words(), seg.what)
                }
                Cause::Own => match held.own_reading() {
                    Some(crate::attribution::OwnReading::Decided(share)) => {
                        format!("its own work ({:.0}% of it)", share * 100.0)
                    }
                    Some(crate::attribution::OwnReading::NearTheLine(share)) => {
                        format!("its own work (about {:.0}% of it)", share * 100.0)
                    }
                    _ => "its own work".to_owned(),
                },
                c => c.words().to_owned(),
            };
            Span {
                lane,
                start: start + seg.span.start,
                end: start + seg.span.end,
                kind: Kind::Held(seg.cause),
                label: format!("{} {}", seg.cause.words(), crate::html::axis::duration(ns)),
                short: crate::html::axis::duration(ns),
                title: format!("the thread was held {} by {what}", crate::html::axis::duration(ns)),
                approx: false,
                group: group.map(str::to_owned),
            }
        })
        .collect()
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

pub use crate::stats::median_index;

#[cfg(test)]
mod tests {
    use super::host_clock::{work_on_gpu, Offset, MISFIT};
    use super::*;
    use crate::clock::{ClockFit, ClockOffset};
    use crate::metrics::Metrics;
    use crate::record::{CaseRecord, CaseSetup, Rep};
    use crate::setup::{BlockerPlacement, Family};

    fn record(reps: Vec<Rep>) -> CaseRecord {
        let copy = crate::catalogue::copies::CopyFacts::new(
            crate::catalogue::copies::Form::Async,
            crate::setup::Direction::HtoD,
            Some(crate::setup::HostKind::Pinned),
            crate::setup::StreamKind::NonBlocking,
            BlockerPlacement::Same,
            1,
        );
        let setup = CaseSetup::of(&crate::catalogue::Case::driver(copy));
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
        // What held the thread tiles the call on its own lane: here nothing but the call itself (the blocker
        // still ran at the return, its own work had not begun).
        let held: Vec<(usize, Kind, i64, i64)> = t
            .spans
            .iter()
            .filter(|s| matches!(s.kind, Kind::Held(_)))
            .map(|s| (s.lane, s.kind, s.start, s.end))
            .collect();
        assert_eq!(held, [(1, Kind::Held(crate::attribution::Cause::Call), 5_000_000_030_000, 5_000_000_037_000)]);
        assert_eq!(t.lanes[1].name, "thread held by");
        let kinds: Vec<(Kind, i64, i64, bool)> = t
            .spans
            .iter()
            .filter(|s| !matches!(s.kind, Kind::Held(_)))
            .map(|s| (s.kind, s.start, s.end, s.approx))
            .collect();
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
        assert!(t.spans.iter().all(|s| matches!(s.kind, Kind::Host | Kind::Held(_))), "only the host lanes");
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

    /// `rep`'s call made while another thread was inside `cuMemAllocHost` from 10 µs before the call's start
    /// to 3 µs after its return.
    fn threads_record(other: Metrics) -> CaseRecord {
        let mut r = rep(5_000);
        r.metrics = other;
        let mut rec = record(vec![r]);
        rec.setup.family = Family::Threads;
        rec.setup.what = "cuLaunchKernel behind a blocker in its own stream, made while another thread is inside \
                          a 256 MiB cuMemAllocHost"
            .into();
        rec
    }

    const OTHER: Metrics = Metrics {
        other_start_ns: Some(5_000_000_020_000.0),
        other_end_ns: Some(5_000_000_038_000.0),
        other_alone_us: Some(17.5),
        ..Metrics::EMPTY
    };

    #[test]
    fn the_other_thread_has_a_host_lane_of_its_own() {
        let t = for_case(&threads_record(OTHER), Some(&ClockFit::constant(&CLOCK)));
        let lanes: Vec<(&str, &str)> = t.lanes.iter().map(|l| (l.name.as_str(), l.detail.as_str())).collect();
        assert_eq!(
            lanes,
            [
                ("host thread", "the measuring thread"),
                ("other thread", ""),
                ("thread held by", "what it waited for"),
                ("GPU: blocker", "same stream"),
                ("GPU: the call's work", "nonblocking stream"),
            ]
        );
        // Placed by its own host times: from before the call's start to after its return; the rest as before.
        let kinds: Vec<(usize, Kind, i64, i64)> = t
            .spans
            .iter()
            .filter(|s| !matches!(s.kind, Kind::Held(_)))
            .map(|s| (s.lane, s.kind, s.start, s.end))
            .collect();
        assert_eq!(
            kinds,
            [
                (0, Kind::Host, 5_000_000_030_000, 5_000_000_035_000),
                (1, Kind::Other, 5_000_000_020_000, 5_000_000_038_000),
                (3, Kind::Blocker, 5_000_000_008_000, 5_000_020_008_000),
                (4, Kind::Work, 5_000_020_011_000, 5_000_020_058_000),
            ]
        );
        let other = t.spans.iter().find(|s| s.kind == Kind::Other).unwrap();
        assert_eq!(other.label, "other thread's call 18.0 µs");
        assert!(
            other.title.contains("inside its slow call for 18.0 µs")
                && other.title.contains("the experiment: cuLaunchKernel behind a blocker")
                && other.title.contains("alone, before the repetitions, it took 17.5 µs")
                && other.title.contains("started 10.0 µs after its start and returned 3.0 µs before its end"),
            "{}",
            other.title
        );
        assert!(t.caption.contains("The other thread's call is on the lane under the host thread's"), "{}", t.caption);
        assert!(t.notes.is_empty(), "{:?}", t.notes);
    }

    #[test]
    fn without_the_other_thread_there_is_no_lane_for_it() {
        let t = for_case(&record(vec![rep(5_000)]), Some(&ClockFit::constant(&CLOCK)));
        let lanes: Vec<(&str, &str)> = t.lanes.iter().map(|l| (l.name.as_str(), l.detail.as_str())).collect();
        assert_eq!(
            lanes,
            [
                ("host thread", ""),
                ("thread held by", "what it waited for"),
                ("GPU: blocker", "same stream"),
                ("GPU: the call's work", "nonblocking stream")
            ]
        );
        assert!(t.spans.iter().all(|s| s.kind != Kind::Other));
        assert!(!t.caption.contains("other thread"), "{}", t.caption);
    }

    #[test]
    fn an_other_thread_recorded_in_part_is_said() {
        let t = for_case(
            &threads_record(Metrics { other_start_ns: OTHER.other_start_ns, ..Metrics::EMPTY }),
            Some(&ClockFit::constant(&CLOCK)),
        );
        assert_eq!(t.lanes[1].name, "other thread");
        assert!(t.spans.iter().all(|s| s.kind != Kind::Other));
        assert!(!t.caption.contains("other thread"), "{}", t.caption);
        assert_eq!(t.notes.len(), 1, "{:?}", t.notes);
        assert!(t.notes[0].contains("its lane is empty"), "{:?}", t.notes);
    }

    #[test]
    fn the_median_repetition() {
        assert_eq!(median_index(&[5u64, 1, 9], |&x| x), Some(0));
        assert_eq!(median_index(&[4u64, 1, 3, 2], |&x| x), Some(3));
        assert_eq!(median_index::<u64, u64>(&[], |&x| x), None);
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

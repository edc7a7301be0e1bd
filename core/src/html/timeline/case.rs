//! The timeline of one experiment: its median repetition's call, blocker and own work on host and GPU lanes,
//! and in the threads family the other thread's call on a second host lane.
//!
//! `for_case` lays out the lanes, then draws the host's (the call, what held the thread, the other thread's
//! call) here, and the GPU's (the blocker, the call's own work) through `gpu_lanes.rs`.

use super::gpu_lanes::{self, has_work};
use super::other_thread::{self, OtherCall};
use super::{median_index, Kind, Lane, Marker, MarkerKind, Span, Timeline};
use crate::clock::ClockFit;
use crate::html::axis::duration;
use crate::record::{CaseRecord, Rep};
use crate::setup::BlockerPlacement;

/// Where each of a case's lanes is in `Timeline::lanes` (the host thread's is the first).
struct Lanes {
    other: Option<usize>,
    held: usize,
    blocker: Option<usize>,
    work: usize,
}

/// The timeline of one experiment. `clock` is the recording's offset, where it has one.
pub fn for_case(record: &CaseRecord, clock: Option<&ClockFit>) -> Timeline {
    let mut t = Timeline::default();
    let Some(index) = median_index(&record.reps, |r| r.host_call_ns) else {
        t.notes.push(nothing_to_draw(record));
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
    // The threads family: another thread's call beside this one, on a host lane of its own under this one's.
    let other = other_thread::of(&record.setup, rep);
    let lanes = lanes(&mut t, record, rep, other.as_ref());
    host_lanes(&mut t, record, rep, clock, other.as_ref(), &lanes);
    gpu_lanes::draw(&mut t, &record.setup, rep, clock, lanes.blocker, lanes.work);
    t
}

/// Why a case without a measured repetition has nothing to draw.
fn nothing_to_draw(record: &CaseRecord) -> String {
    match (&record.error, &record.skipped) {
        (Some(e), _) => format!("Nothing to draw: the experiment failed ({e})."),
        (None, Some(reason)) => format!("Nothing to draw: not run on this machine ({reason})."),
        (None, None) => "Nothing to draw: no repetition was measured.".to_owned(),
    }
}

/// The case's lanes, top to bottom: the host thread, the other thread (threads family), what held the thread,
/// the blocker (where the case has one) and the call's work.
fn lanes(t: &mut Timeline, record: &CaseRecord, rep: &Rep, other: Option<&OtherCall>) -> Lanes {
    let s = &record.setup;
    t.lanes.push(Lane::new("host thread", if other.is_some() { "the measuring thread" } else { "" }, ""));
    let other_lane = other.map(|o| {
        t.lanes.push(o.lane());
        t.lanes.len() - 1
    });
    t.lanes.push(super::held_lane());
    let held = t.lanes.len() - 1;
    if other.is_some_and(|o| o.drawn()) {
        t.caption += " The other thread's call is on the lane under the host thread's: its own host times, on the \
                      same clock.";
    }
    let has_blocker = s.layout.blocker != BlockerPlacement::None || rep.blocker_gpu_ns.is_some();
    let blocker = has_blocker.then(|| {
        let where_ = match (s.layout.blocker, s.layout.blocker_stream) {
            (BlockerPlacement::Same, _) => "same stream".to_owned(),
            (BlockerPlacement::Other, Some(k)) => format!("other stream, {}", k.slug()),
            (BlockerPlacement::Other, None) => "other stream".to_owned(),
            (BlockerPlacement::None, _) => "?".to_owned(),
        };
        t.lanes.push(Lane::new("GPU: blocker", where_, "blocker times not recorded"));
        t.lanes.len() - 1
    });
    t.lanes.push(Lane::new(
        "GPU: the call's work",
        s.layout.stream.map_or(String::new(), |k| format!("{} stream", k.slug())),
        if has_work(rep) { "position not recorded" } else { "no GPU work" },
    ));
    Lanes { other: other_lane, held, blocker, work: t.lanes.len() - 1 }
}

/// The host's lanes: the call on the host thread's, what held the thread under it, the other thread's call,
/// and the blocker's launch and the call's return as markers.
fn host_lanes(
    t: &mut Timeline,
    record: &CaseRecord,
    rep: &Rep,
    clock: Option<&ClockFit>,
    other: Option<&OtherCall>,
    lanes: &Lanes,
) {
    let s = &record.setup;
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
    if host_known {
        let (_, held) = crate::report::decided(record, rep, clock);
        t.spans.extend(super::held_spans(&held, start, lanes.held, None));
    }
    if let (Some(o), Some(lane)) = (other, lanes.other) {
        match o.span(lane) {
            Some(span) => t.spans.push(span),
            None => t.notes.push(
                "The other thread's call was not recorded in full in this repetition (a start or an end is \
                 missing): its lane is empty."
                    .into(),
            ),
        }
    }
    if let Some(launch) = rep.host_blocker_launch_ns {
        t.markers.push(Marker { at: launch as i64, label: "blocker launched".into(), kind: MarkerKind::Minor });
    }
    if host_known {
        t.markers.push(Marker { at: end, label: "call returned".into(), kind: MarkerKind::Returned });
    }
}

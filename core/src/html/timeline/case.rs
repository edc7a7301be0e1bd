//! The timeline of one experiment: its median repetition's call, blocker and own work on host and GPU lanes,
//! and in the threads family the other thread's call on a second host lane.

use super::host_clock::{plausible, work_on_gpu, Offset, MISFIT, NO_OFFSET};
use super::{median_index, other_thread, Kind, Lane, Marker, MarkerKind, Span, Timeline};
use crate::clock::ClockFit;
use crate::html::axis::duration;
use crate::record::CaseRecord;
use crate::setup::{BlockerPlacement, Family};

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

    let has_blocker = s.layout.blocker != BlockerPlacement::None || rep.blocker_gpu_ns.is_some();
    // The threads family: another thread's call beside this one, on a host lane of its own under this one's.
    let other = other_thread::of(s, rep);
    t.lanes.push(Lane::new("host thread", if other.is_some() { "the measuring thread" } else { "" }, ""));
    let other_lane = other.as_ref().map(|o| {
        t.lanes.push(o.lane());
        t.lanes.len() - 1
    });
    t.lanes.push(super::held_lane());
    let held_lane = t.lanes.len() - 1;
    if other.as_ref().is_some_and(|o| o.drawn()) {
        t.caption += " The other thread's call is on the lane under the host thread's: its own host times, on the \
                      same clock.";
    }
    let blocker_lane = has_blocker.then(|| {
        let where_ = match (s.layout.blocker, s.layout.blocker_stream) {
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
        s.layout.stream.map_or(String::new(), |k| format!("{} stream", k.slug())),
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
    if host_known {
        let (_, held) = crate::report::decided(record, rep, clock);
        t.spans.extend(super::held_spans(&held, start, held_lane, None));
    }
    if let (Some(o), Some(lane)) = (&other, other_lane) {
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

    let assumed = match (rep.blocker_gpu_ns, rep.host_blocker_launch_ns) {
        (Some(b), Some(launch)) => Some(Offset::assumed(b[0], launch)),
        _ => None,
    };
    // A peer copy's blocker on the destination GPU ran on that GPU's clock; the recording's offset is the
    // main GPU's, so that blocker is placed by its launch instead.
    let other_gpu = s.family == Family::Peer && s.layout.blocker == BlockerPlacement::Other;
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

//! The GPU's lanes of one experiment's timeline: where the GPU's clock puts them on the host's (the recording's
//! clock fit, or the blocker's launch where it has none), the blocker's span and the call's own work's.

use super::host_clock::{plausible, work_on_gpu, Offset, MISFIT, NO_OFFSET};
use super::{Kind, Marker, MarkerKind, Span, Timeline};
use crate::clock::ClockFit;
use crate::html::axis::duration;
use crate::record::{CaseSetup, Rep};
use crate::setup::{BlockerPlacement, Family};

/// Draws the blocker and the call's work on their lanes (`blocker_lane` where the case has one), each where an
/// offset places it, and says in the notes what could not be placed.
pub(super) fn draw(
    t: &mut Timeline,
    s: &CaseSetup,
    rep: &Rep,
    clock: Option<&ClockFit>,
    blocker_lane: Option<usize>,
    work_lane: usize,
) {
    let offset = offset(t, s, rep, clock);
    blocker(t, rep, offset, blocker_lane);
    work(t, rep, offset, work_lane);
}

/// Whether the call put work of its own on the GPU, by any of its readings.
pub(super) fn has_work(rep: &Rep) -> bool {
    rep.op_done_at_return.is_some() || rep.op_device_ns.is_some() || work_on_gpu(rep).is_some()
}

/// What moves the GPU's times onto the host's clock: the recording's fit, else the blocker's launch taken as
/// its start (dashed); `None` where neither is there or what they give is implausible (said in the notes).
fn offset(t: &mut Timeline, s: &CaseSetup, rep: &Rep, clock: Option<&ClockFit>) -> Option<Offset> {
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
    offset
}

/// The blocker kernel's span on its lane (its `%globaltimer` stamps).
fn blocker(t: &mut Timeline, rep: &Rep, offset: Option<Offset>, lane: Option<usize>) {
    if let (Some(lane), Some(b), Some(o)) = (lane, rep.blocker_gpu_ns, offset) {
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
    } else if lane.is_some() && rep.blocker_gpu_ns.is_none() {
        t.notes.push("The blocker's GPU times were not recorded in this repetition.".into());
    }
}

/// The call's own work on its lane (from its start event to its end event), and the marker where it finished.
fn work(t: &mut Timeline, rep: &Rep, offset: Option<Offset>, lane: usize) {
    match (work_on_gpu(rep), offset) {
        (Some(w), Some(o)) => {
            let len = (w[1] - w[0]) as f64;
            let (ws, we) = (o.to_host(w[0]), o.to_host(w[1]));
            t.spans.push(Span {
                lane,
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
        (None, _) if has_work(rep) => t.notes.push(match rep.op_device_ns {
            Some(ns) => format!(
                "The call's GPU work took {} (CUDA events), but where it sat on the GPU's clock was not recorded.",
                duration(ns as f64)
            ),
            None => "Where the call's GPU work sat on the GPU's clock was not recorded.".into(),
        }),
        _ => {}
    }
}

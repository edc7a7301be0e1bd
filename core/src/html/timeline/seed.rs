//! The timeline of the seed program: its steps of one memory kind, from the same repetition, one after another.

use super::host_clock::{plausible, work_on_gpu, Offset, MISFIT, NO_OFFSET};
use super::{median_index, Kind, Lane, Marker, MarkerKind, Span, Timeline};
use crate::clock::ClockFit;
use crate::html::axis::duration;
use crate::record::{CaseRecord, Rep};

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
    t.lanes.push(super::held_lane());
    let stream =
        steps.iter().find_map(|r| r.setup.layout.stream).map_or(String::new(), |k| format!("{} stream", k.slug()));
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
        let step = super::super::cards::step_name(record);
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
        let (_, held) = crate::report::decided(record, rep, clock);
        t.spans.extend(super::held_spans(&held, start, 1, Some(&s.id)));
        last_return = Some(last_return.map_or(end, |e: i64| e.max(end)));
        match (work_on_gpu(rep), offset) {
            (Some(w), Some(o)) => {
                let (ws, we) = (o.to_host(w[0]), o.to_host(w[1]));
                t.spans.push(Span {
                    lane: 2,
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
            (None, _) if s.layout.stream.is_none() => {} // a call that puts no work on the stream
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

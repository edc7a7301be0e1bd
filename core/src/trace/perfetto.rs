//! `async-lab trace --perfetto FILE`: the trace as Chrome's trace-event JSON (the "JSON Object Format" of
//! the Trace Event Format document), which ui.perfetto.dev and chrome://tracing load. Serde structs of the
//! documented format: the maintained Rust crates for Perfetto write its protobuf format through a tracing
//! runtime, not a file built from records of another clock.
//!
//! - a track per host thread (the process's `pid`, the thread's `tid`) and per GPU stream (a process of its
//!   own, `GPU_PID + pid`, a `tid` per stream, and one more where a stream's records overlap), named by metadata events (`ph: "M"`, `process_name`,
//!   `thread_name`);
//! - each API call a complete slice (`ph: "X"`, `ts` and `dur` in µs from the trace's first time) with its
//!   class, time held, what held it, location and `--explain` id (its correlation id) in `args`;
//! - each held call's segments as child slices named by cause, coloured by cause (`cname`);
//! - a flow (`ph: "s"` on the holder, `ph: "f"` with `bp: "e"` on the held segment, one `id`) from what held
//!   it (GPU work, another thread's call) to the call;
//! - GPU kernels, copies and memsets as slices on their stream's track; NVTX ranges as slices on their
//!   thread's track.

use super::analysis::Analysis;
use super::format::Trace;
use super::text::duration;
use crate::attribution::{Cause, Span};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The GPU's tracks of process `pid` are in process `GPU_PID + pid`.
pub const GPU_PID: u64 = 1_000_000_000;

/// A file of the format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Export {
    #[serde(rename = "traceEvents")]
    pub trace_events: Vec<Event>,
    /// How the viewer shows times (`ns`: the trace's resolution).
    #[serde(rename = "displayTimeUnit")]
    pub display_time_unit: String,
}

/// One event (the fields the format documents that this export uses).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cat: Option<String>,
    /// `X` complete slice, `M` metadata, `s`/`f` flow start and end.
    pub ph: String,
    /// µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<f64>,
    /// µs, for `X`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    pub pid: u64,
    pub tid: u64,
    /// A flow's id, the same on its `s` and its `f`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// `e`: a flow's end binds to the slice that encloses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bp: Option<String>,
    /// One of the viewer's reserved colour names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
}

/// The reserved colour name of each cause (chrome://tracing's palette).
pub fn colour(cause: Cause) -> &'static str {
    match cause {
        Cause::Stream => "terrible",
        Cause::Device => "bad",
        Cause::Thread => "yellow",
        Cause::Own => "thread_state_iowait",
        Cause::Call => "thread_state_running",
    }
}

/// The export of `trace`: segments and flows for the calls held longer than `min_held_ns`.
pub fn export(trace: &Trace, min_held_ns: i64) -> Export {
    let analyses: Vec<Analysis> = trace.processes.iter().map(Analysis::of).collect();
    let origin = analyses
        .iter()
        .flat_map(|a| {
            let calls = a.program.calls.iter().map(|c| c.span.start);
            calls.chain(a.program.work.iter().map(|w| w.span.start))
        })
        .min()
        .unwrap_or(0);
    let mut events = Vec::new();
    let mut flows = 0u64;
    for a in &analyses {
        process(&mut events, &mut flows, a, origin, min_held_ns);
    }
    Export { trace_events: events, display_time_unit: "ns".into() }
}

fn process(events: &mut Vec<Event>, flows: &mut u64, a: &Analysis, origin: i64, min_held_ns: i64) {
    let p = &a.program;
    let pid = u64::from(a.process.pid);
    let gpu = GPU_PID + pid;
    let us = |t: i64| (t - origin) as f64 / 1000.0;
    let slice = |name: String, cat: &str, pid: u64, tid: u64, span: Span, cname: Option<&str>, args: Value| Event {
        name,
        cat: Some(cat.into()),
        ph: "X".into(),
        ts: Some(us(span.start)),
        dur: Some(span.len() as f64 / 1000.0),
        pid,
        tid,
        id: None,
        bp: None,
        cname: cname.map(Into::into),
        args: Some(args),
    };
    let meta = |name: &str, pid: u64, tid: u64, value: String| Event {
        name: name.into(),
        cat: None,
        ph: "M".into(),
        ts: None,
        dur: None,
        pid,
        tid,
        id: None,
        bp: None,
        cname: None,
        args: Some(json!({ "name": value })),
    };
    events.push(meta("process_name", pid, 0, format!("process {pid}: {}", a.process.program.join(" "))));
    let threads: BTreeSet<u64> = p.calls.iter().map(|c| c.tid).collect();
    for tid in &threads {
        events.push(meta("thread_name", pid, *tid, format!("thread {tid}")));
    }
    // Work that overlaps the work before it in its stream (the records of one stream are not always in
    // sequence) goes on a second track of the stream, since slices on one track must nest.
    let mut lanes: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
    let mut track_of: BTreeMap<(i64, i64, u32), u64> = BTreeMap::new();
    for w in &p.work {
        let ends = lanes.entry(w.stream).or_default();
        let lane = ends.iter().position(|&end| end <= w.span.start).unwrap_or(ends.len());
        if lane == ends.len() {
            ends.push(w.span.end);
            let name = match lane {
                0 => format!("stream {}", w.stream),
                n => format!("stream {} (overlapping work, {})", w.stream, n + 1),
            };
            if lane == 0 && lanes.len() == 1 {
                events.push(meta("process_name", gpu, 0, format!("GPU work of process {pid}")));
            }
            events.push(meta("thread_name", gpu, stream_track(w.stream, lane), name));
        } else {
            lanes.get_mut(&w.stream).unwrap()[lane] = w.span.end;
        }
        track_of.insert((w.span.start, w.span.end, w.corr), stream_track(w.stream, lane));
    }
    for tid in &threads {
        for r in a.locations.ranges(*tid) {
            let span = Span::new(r.start, r.end);
            events.push(slice(r.name.clone(), "nvtx", pid, *tid, span, None, json!({ "domain": r.domain })));
        }
    }
    for w in &p.work {
        let args = json!({ "enqueued by (--explain id)": w.corr, "bytes": w.bytes, "stream": w.stream });
        let tid = track_of[&(w.span.start, w.span.end, w.corr)];
        events.push(slice(w.words(), "gpu", gpu, tid, w.span, None, args));
    }
    let call_at: BTreeMap<u32, (u64, Span)> = p.calls.iter().map(|c| (c.corr, (c.tid, c.span))).collect();
    for t in &a.traced {
        let c = &p.calls[t.index];
        let held = t.held.total_ns > min_held_ns;
        let args = json!({
            "--explain id": c.corr,
            "class": t.class.as_str(),
            "held": duration(t.held.total_ns),
            "held_ns": t.held.total_ns,
            "what held it": t.cause,
            "location": a.places[t.index].shown(),
            "chain": a.places[t.index].chain_words(),
            "start-up": a.startup[t.index],
        });
        events.push(slice(c.name.clone(), "api", pid, c.tid, c.span, None, args));
        if !held {
            continue;
        }
        let holders = p.scene(t.index).holders;
        for s in &t.held.segments {
            let span = Span::new(s.span.start.max(c.span.start), s.span.end.min(c.span.end));
            if span.is_empty() {
                continue;
            }
            let args = json!({ "cause": s.cause.slug(), "what": s.what, "--explain id": c.corr });
            events.push(slice(
                super::words::cause(s.cause).into(),
                "held",
                pid,
                c.tid,
                span,
                Some(colour(s.cause)),
                args,
            ));
            if !matches!(s.cause, Cause::Stream | Cause::Device | Cause::Thread) {
                continue;
            }
            // The holder's track and slice.
            let Some(h) = holders.iter().find(|h| h.cause == s.cause && h.what == s.what) else { continue };
            let corr_of = |what: &str| what.rsplit("correlation ").next().and_then(|n| n.parse::<u32>().ok());
            let Some(holder_corr) = corr_of(&h.what) else { continue };
            let track = match s.cause {
                Cause::Thread => call_at.get(&holder_corr).map(|&(tid, _)| (pid, tid)),
                _ => track_of.get(&(h.span.start, h.span.end, holder_corr)).map(|&tid| (gpu, tid)),
            };
            let Some((from_pid, from_tid)) = track else { continue };
            *flows += 1;
            // Inside both slices: just before the holder's end, and just before the segment's end.
            let inside = |sp: Span| sp.end - (sp.len() / 2).min(1);
            let flow = |ph: &str, pid: u64, tid: u64, t: i64, bp: Option<&str>| Event {
                name: format!("held by {}", super::words::cause(s.cause)),
                cat: Some("held-by".into()),
                ph: ph.into(),
                ts: Some(us(t)),
                dur: None,
                pid,
                tid,
                id: Some(*flows),
                bp: bp.map(Into::into),
                cname: None,
                args: None,
            };
            // The holder may end after the segment within the clock's error: the arrow never points back.
            let from = inside(h.span).min(inside(span)).max(h.span.start);
            events.push(flow("s", from_pid, from_tid, from, None));
            events.push(flow("f", pid, c.tid, inside(span).max(from).min(span.end), Some("e")));
        }
    }
}

/// The track of a stream's `lane`th track (0: the stream's own; more where its work overlapped).
fn stream_track(stream: u32, lane: usize) -> u64 {
    u64::from(stream) + lane as u64 * (1 << 32)
}

/// The export as JSON text.
pub fn to_text(e: &Export) -> String {
    serde_json::to_string(e).expect("the export serializes") + "\n"
}

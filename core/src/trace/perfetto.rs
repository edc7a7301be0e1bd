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
use super::calls::Traced;
use super::scene::Program;
use super::text::duration;
use crate::attribution::{Cause, Holder, Span};
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

/// The export of a trace's processes, each analysed (`Analysis::all`): segments and flows for the calls held
/// longer than `min_held_ns`.
pub fn export(analyses: &[Analysis], min_held_ns: i64) -> Export {
    let origin = analyses
        .iter()
        .flat_map(|a| {
            let calls = a.program.calls.iter().map(|c| c.span.start);
            calls.chain(a.program.work.iter().map(|w| w.span.start))
        })
        .min()
        .unwrap_or(0);
    let mut out = Out { events: Vec::new(), origin, flows: 0 };
    for a in analyses {
        process(&mut out, a, min_held_ns);
    }
    Export { trace_events: out.events, display_time_unit: "ns".into() }
}

/// The events written so far, on the export's clock (µs from `origin`), and how many flows they hold.
struct Out {
    events: Vec<Event>,
    /// The trace's first time, ns.
    origin: i64,
    flows: u64,
}

impl Out {
    /// `t` (ns, the trace's clock) in µs from the trace's first time.
    fn us(&self, t: i64) -> f64 {
        (t - self.origin) as f64 / 1000.0
    }

    /// A complete slice over `span` on the track `(pid, tid)`.
    fn slice(&self, name: String, cat: &str, (pid, tid): (u64, u64), span: Span, args: Value) -> Event {
        Event {
            name,
            cat: Some(cat.into()),
            ph: "X".into(),
            ts: Some(self.us(span.start)),
            dur: Some(span.len() as f64 / 1000.0),
            pid,
            tid,
            id: None,
            bp: None,
            cname: None,
            args: Some(args),
        }
    }

    /// A metadata event naming the track `(pid, tid)` (`thread_name`) or its process (`process_name`).
    fn name(&mut self, name: &str, (pid, tid): (u64, u64), value: String) {
        self.events.push(Event {
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
        });
    }
}

/// One process's events: its threads' and streams' tracks named, its NVTX ranges, its GPU work, its calls.
fn process(out: &mut Out, a: &Analysis, min_held_ns: i64) {
    let pid = u64::from(a.process.pid);
    out.name("process_name", (pid, 0), format!("process {pid}: {}", a.process.program.join(" ")));
    let threads: BTreeSet<u64> = a.program.calls.iter().map(|c| c.tid).collect();
    for tid in &threads {
        out.name("thread_name", (pid, *tid), a.program.threads.words(*tid));
    }
    let tracks = Tracks {
        work: stream_tracks(out, &a.program, pid),
        calls: a.program.calls.iter().map(|c| (c.corr, c.tid)).collect(),
    };
    for tid in &threads {
        for r in a.locations.ranges(*tid) {
            let span = Span::new(r.start, r.end);
            let event = out.slice(r.name.clone(), "nvtx", (pid, *tid), span, json!({ "domain": r.domain }));
            out.events.push(event);
        }
    }
    for w in &a.program.work {
        let args = json!({ "enqueued by (--explain id)": w.corr, "bytes": w.bytes, "stream": w.stream });
        let track = (GPU_PID + pid, tracks.work[&(w.span.start, w.span.end, w.corr)]);
        let event = out.slice(w.words(), "gpu", track, w.span, args);
        out.events.push(event);
    }
    for t in &a.traced {
        call(out, a, t, &tracks, min_held_ns);
    }
}

/// The tracks of a process's slices that hold its calls: the GPU work's, by its start, end and correlation id
/// (`stream_tracks`); the calls' threads, by correlation id.
struct Tracks {
    work: BTreeMap<(i64, i64, u32), u64>,
    calls: BTreeMap<u32, u64>,
}

/// The GPU work of `p`, by its start, end and correlation id: the track it is on (its stream's, or another of
/// the stream's where it overlaps the work before it, since the records of one stream are not always in
/// sequence and slices on one track must nest). Names each track as it is first used.
fn stream_tracks(out: &mut Out, p: &Program, pid: u64) -> BTreeMap<(i64, i64, u32), u64> {
    let gpu = GPU_PID + pid;
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
                out.name("process_name", (gpu, 0), format!("GPU work of process {pid}"));
            }
            out.name("thread_name", (gpu, stream_track(w.stream, lane)), name);
        } else {
            lanes.get_mut(&w.stream).unwrap()[lane] = w.span.end;
        }
        track_of.insert((w.span.start, w.span.end, w.corr), stream_track(w.stream, lane));
    }
    track_of
}

/// A traced call's slice and, where it held its thread longer than `min_held_ns`, its segments, each with a
/// flow from what held it.
fn call(out: &mut Out, a: &Analysis, t: &Traced, tracks: &Tracks, min_held_ns: i64) {
    let p = &a.program;
    let c = &p.calls[t.index];
    let pid = u64::from(a.process.pid);
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
    let event = out.slice(c.name.clone(), "api", (pid, c.tid), c.span, args);
    out.events.push(event);
    if t.held.total_ns <= min_held_ns {
        return;
    }
    let holders = p.scene(t.index).holders;
    for s in &t.held.segments {
        let span = Span::new(s.span.start.max(c.span.start), s.span.end.min(c.span.end));
        if span.is_empty() {
            continue;
        }
        let args = json!({ "cause": s.cause.slug(), "what": s.what, "--explain id": c.corr });
        let segment = out.slice(super::words::cause(s.cause).into(), "held", (pid, c.tid), span, args);
        out.events.push(Event { cname: Some(colour(s.cause).into()), ..segment });
        if !matches!(s.cause, Cause::Stream | Cause::Device | Cause::Thread) {
            continue;
        }
        let Some(h) = holders.iter().find(|h| h.cause == s.cause && h.what == s.what) else { continue };
        let Some(from) = holder_track(pid, h, tracks) else { continue };
        flow(out, s.cause, (from, h.span), ((pid, c.tid), span));
    }
}

/// The track of the slice of what held a call: another thread's call's, or the GPU work's (by the holder's
/// correlation id).
fn holder_track(pid: u64, h: &Holder, tracks: &Tracks) -> Option<(u64, u64)> {
    let holder_corr = h.who.corr?;
    match h.cause {
        Cause::Thread => tracks.calls.get(&holder_corr).map(|&tid| (pid, tid)),
        _ => tracks.work.get(&(h.span.start, h.span.end, holder_corr)).map(|&tid| (GPU_PID + pid, tid)),
    }
}

/// A flow from the holder's slice (its track and span) to the held segment's, for a wait of `cause`.
fn flow(out: &mut Out, cause: Cause, (from_track, holder): ((u64, u64), Span), (to_track, span): ((u64, u64), Span)) {
    out.flows += 1;
    // Inside both slices: just before the holder's end, and just before the segment's end.
    let inside = |sp: Span| sp.end - (sp.len() / 2).min(1);
    let event = |ph: &str, (pid, tid): (u64, u64), t: i64, bp: Option<&str>| Event {
        name: format!("held by {}", super::words::cause(cause)),
        cat: Some("held-by".into()),
        ph: ph.into(),
        ts: Some(out.us(t)),
        dur: None,
        pid,
        tid,
        id: Some(out.flows),
        bp: bp.map(Into::into),
        cname: None,
        args: None,
    };
    // The holder may end after the segment within the clock's error: the arrow never points back.
    let from = inside(holder).min(inside(span)).max(holder.start);
    let to = inside(span).max(from).min(span.end);
    let (start, end) = (event("s", from_track, from, None), event("f", to_track, to, Some("e")));
    out.events.extend([start, end]);
}

/// The track of a stream's `lane`th track (0: the stream's own; more where its work overlapped).
fn stream_track(stream: u32, lane: usize) -> u64 {
    u64::from(stream) + lane as u64 * (1 << 32)
}

/// The export as JSON text.
pub fn to_text(e: &Export) -> String {
    serde_json::to_string(e).expect("the export serializes") + "\n"
}

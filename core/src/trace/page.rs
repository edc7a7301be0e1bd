//! A traced program as one self-contained HTML page (`async-lab report --replay TRACE`): the calls that held
//! their thread longest, each with a timeline of the moments around it (a host lane per thread, a GPU lane
//! per stream, the call's time coloured by what held it), the whole program's timeline (zoomed with the
//! mouse wheel, panned by dragging: the page's one small inline script, [`ZOOM_JS`]), the summary per API
//! function and the held calls by place in the program (`by_location`); above them, as in the terminal, the
//! headline (`headline`) and the findings with their remedies (`findings`).

use super::analysis::Analysis;
use super::by_location::{cause_words, class_words};
use super::calls::{self, Traced};
use super::scene::Program;
use super::text::duration;
use crate::attribution::{Cause, Span};
use crate::html::escape;
use std::collections::BTreeSet;
use std::fmt::Write as _;

const CSS: &str = "body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 24px;color:#111827}
table{border-collapse:collapse;font-size:13px}th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #e5e7eb}
.muted{color:#6b7280}svg{display:block;margin:6px 0 18px;background:#fff;border:1px solid #e5e7eb}
.sw{display:inline-block;width:22px;height:10px;margin:0 4px 0 12px;border-radius:2px}
svg.zoomable{cursor:grab}";

/// The whole program's lane zoomed and panned: the wheel zooms around the pointer, a drag pans. The lane's
/// data is an inner `<svg class="lane">` whose `viewBox` is the visible part (in the outer SVG's x units);
/// `data-view` holds the visible range in ns from the lane's start, and the "shown" label its length. A
/// page address ending in `#zoom=ID:FROM:TO` (fractions of the lane) opens it zoomed.
pub const ZOOM_JS: &str = r#"(function(){
function dur(ns){var u=[[1e9,' s'],[1e6,' ms'],[1e3,' µs']];for(var i=0;i<u.length;i++){if(ns>=u[i][0])return (ns/u[i][0]).toPrecision(3)+u[i][1];}return Math.round(ns)+' ns';}
function setView(svg,a,b){var lane=svg.querySelector('svg.lane');var x0=+lane.dataset.x0,w0=+lane.dataset.w,ns=+lane.dataset.ns;
var min=w0*1e-6;if(b-a<min){var m=(a+b)/2;a=m-min/2;b=m+min/2;}if(b-a>w0){a=x0;b=x0+w0;}
if(a<x0){b+=x0-a;a=x0;}if(b>x0+w0){a-=b-x0-w0;b=x0+w0;}
var vb=lane.getAttribute('viewBox').split(' ');lane.setAttribute('viewBox',a+' '+vb[1]+' '+(b-a)+' '+vb[3]);
var from=(a-x0)/w0*ns,to=(b-x0)/w0*ns;svg.setAttribute('data-view',Math.round(from)+' '+Math.round(to));
var label=svg.querySelector('.shown');if(label)label.textContent=dur(to-from)+' shown, from '+dur(from);}
function view(svg){var vb=svg.querySelector('svg.lane').getAttribute('viewBox').split(' ');return [+vb[0],+vb[0]+ +vb[2]];}
function at(svg,ev){var lane=svg.querySelector('svg.lane');var r=lane.getBoundingClientRect();var v=view(svg);return v[0]+(ev.clientX-r.left)/r.width*(v[1]-v[0]);}
document.querySelectorAll('svg.zoomable').forEach(function(svg){
svg.addEventListener('wheel',function(ev){ev.preventDefault();var v=view(svg),x=at(svg,ev),k=Math.exp(ev.deltaY*0.002);
setView(svg,x-(x-v[0])*k,x+(v[1]-x)*k);},{passive:false});
var drag=null;svg.addEventListener('mousedown',function(ev){drag={x:ev.clientX,v:view(svg)};});
window.addEventListener('mouseup',function(){drag=null;});
window.addEventListener('mousemove',function(ev){if(!drag)return;var lane=svg.querySelector('svg.lane');var r=lane.getBoundingClientRect();
var d=(ev.clientX-drag.x)/r.width*(drag.v[1]-drag.v[0]);setView(svg,drag.v[0]-d,drag.v[1]-d);});
svg.addEventListener('dblclick',function(){var lane=svg.querySelector('svg.lane');setView(svg,+lane.dataset.x0,+lane.dataset.x0+ +lane.dataset.w);});});
var m=/#zoom=([^:]+):([0-9.]+):([0-9.]+)$/.exec(location.hash);if(m){var svg=document.getElementById(m[1]);
if(svg&&svg.classList.contains('zoomable')){var lane=svg.querySelector('svg.lane');var x0=+lane.dataset.x0,w0=+lane.dataset.w;
setView(svg,x0+w0*+m[2],x0+w0*+m[3]);}}
})();"#;

/// The colour of each cause, and of everything else.
fn colour(cause: Option<Cause>) -> &'static str {
    match cause {
        Some(Cause::Stream) => "#dc2626",
        Some(Cause::Device) => "#9333ea",
        Some(Cause::Thread) => "#0d9488",
        Some(Cause::Own) => "#ea580c",
        Some(Cause::Call) => "#2563eb",
        None => "#cbd5e1",
    }
}

/// The page of a trace's processes, each analysed (`Analysis::all`; `label`: the trace file's name), showing
/// the `top` calls held longer than `min_held_ns`.
pub fn render(label: &str, analyses: &[Analysis], min_held_ns: i64, top: usize) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>async-lab trace</title>\n\
         <style>{CSS}</style>\n</head>\n<body>\n<h1>async-lab trace: which calls held their thread, and by what</h1>\n\
         <p class=\"muted\">From <code>{}</code>. Times are CUPTI's, on one clock; times closer than {} are not told \
         apart.</p>\n<p>",
        escape(label),
        duration(super::scene::RESOLUTION_NS)
    );
    for (cause, words) in [
        (Some(Cause::Stream), "held by its stream"),
        (Some(Cause::Device), "by other streams"),
        (Some(Cause::Thread), "by another thread"),
        (Some(Cause::Own), "by its own GPU work"),
        (Some(Cause::Call), "driver work"),
        (None, "other calls and GPU work"),
    ] {
        let _ = write!(o, "<span class=\"sw\" style=\"background:{}\"></span>{words}", colour(cause));
    }
    o.push_str("</p>\n");
    for (n, a) in analyses.iter().enumerate() {
        let p = a.process;
        let _ = writeln!(
            o,
            "<h2>Process {} (pid {}): <code>{}</code>{}</h2>",
            n + 1,
            p.pid,
            escape(&p.program.join(" ")),
            if p.partial { " <span class=\"muted\">(cut short)</span>" } else { "" }
        );
        answer(&mut o, n, a);
        section(&mut o, n, a, min_held_ns, top);
        by_location_table(&mut o, n, a, min_held_ns, top);
    }
    let _ = write!(o, "<script>\n{ZOOM_JS}\n</script>\n");
    o.push_str("</body>\n</html>\n");
    o
}

/// The headline and the findings with their remedies, as the terminal prints them first.
fn answer(o: &mut String, n: usize, a: &Analysis) {
    let warm = super::warmup::warm_up(a, 0);
    let h = super::headline::headline(a, &warm, &super::headline::totals(&a.program));
    let _ = writeln!(o, "<p id=\"p{n}-verdict\"><strong>Verdict: {}.</strong></p>", escape(&h.verdict.words));
    if !h.verdict.remedy.words.is_empty() {
        let _ = writeln!(o, "<p><em>Fix:</em> {}</p>", escape(&h.verdict.remedy.words));
    }
    // The terminal's lines, unwrapped, one paragraph each.
    let account = super::headline_text::text(&h, None);
    let _ = writeln!(o, "<ul class=\"account\">");
    // (The verdict's fix is its own paragraph above.)
    for line in account.lines().skip(1).filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("Fix: ")) {
        // A thread's parts (indented in the terminal) under the thread's line.
        let style = if line.starts_with(' ') { " style=\"margin-left:24px\"" } else { "" };
        let _ = writeln!(o, "<li{style}>{}</li>", escape(line.trim()));
    }
    o.push_str("</ul>\n");
    let findings = super::findings::findings(a, &warm, false);
    if findings.is_empty() {
        o.push_str("<p>No call was held by CUDA: nothing to change.</p>\n");
        return;
    }
    let _ = writeln!(o, "<h3>Findings, what to change</h3>\n<ol id=\"p{n}-findings\">");
    for f in &findings {
        let lab: Vec<String> =
            f.remedy.lab.iter().map(|e| format!("<code>{}</code> ({})", escape(&e.case), escape(&e.words))).collect();
        let _ = writeln!(
            o,
            "<li><strong>{}</strong>{} {}<code>{}</code>: {} call{}{}, median {}, total {}.<br>{}.<br><em>Fix:</em> {}{}\
             <br><span class=\"muted\">--explain {}</span></li>",
            escape(&f.title),
            if f.warm_up { " (warm-up)" } else { "" },
            // "at train.py:41", or a place that says when ("while the main thread waited at ...") as it is.
            if super::location::at(&f.where_words).starts_with("at ") { "at " } else { "" },
            escape(&f.where_words),
            f.calls,
            if f.calls == 1 { "" } else { "s" },
            escape(&super::findings::inferred_words(f)),
            duration(f.median_ns),
            duration(f.total_ns),
            escape(f.what.trim_end_matches('.')),
            escape(&f.remedy.words),
            if lab.is_empty() { String::new() } else { format!(" <span class=\"muted\">The lab: {}.</span>", lab.join("; ")) },
            f.explain
        );
    }
    o.push_str("</ol>\n");
}

/// The whole program's timeline, then the calls of the steady state held longest (what is paid once is in the
/// warm-up findings), each with a timeline of the moments around it.
fn section(o: &mut String, n: usize, a: &Analysis, min_held_ns: i64, top: usize) {
    let (p, traced) = (&a.program, &a.traced[..]);
    let (once, mut held): (Vec<&Traced>, Vec<&Traced>) =
        traced.iter().filter(|t| t.held.total_ns > min_held_ns).partition(|t| a.paid_once(t.index));
    held.sort_by(|a, b| b.held.total_ns.cmp(&a.held.total_ns).then(a.index.cmp(&b.index)));
    if let (Some(first), Some(last)) = (p.calls.first(), p.calls.iter().map(|c| c.span.end).max()) {
        let _ = writeln!(
            o,
            "<h3>The whole program</h3>\n<p class=\"muted\">Mouse wheel: zoom; drag: pan; double-click: the whole \
             program.</p>"
        );
        o.push_str(&timeline(p, traced, Span::new(first.span.start, last), None, &format!("p{n}-all"), true));
    }
    let _ = writeln!(
        o,
        "<h3>{} of {} calls held their thread longer than {}</h3>",
        held.len(),
        p.calls_made(p.calls.len() - traced.len()),
        duration(min_held_ns)
    );
    if !once.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"muted\">And {} paid once (the context, loading code, the allocator's growth, the upload...): \
             the warm-up findings above.</p>",
            if once.len() == 1 { "1 call".to_owned() } else { format!("{} calls", once.len()) }
        );
    }
    o.push_str(
        "<table><tr><th>held</th><th>class</th><th>what held it</th><th>call</th><th>thread</th><th>--explain</th></tr>\n",
    );
    for t in held.iter().take(top) {
        let c = &p.calls[t.index];
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><a href=\"#p{n}-c{}\"><code>{}</code></a></td><td>{}</td><td>{}</td></tr>",
            duration(t.held.total_ns),
            t.class,
            escape(&t.cause),
            c.corr,
            escape(&c.name),
            escape(&p.threads.cell(c.tid)),
            c.corr
        );
    }
    o.push_str("</table>\n");
    for t in held.iter().take(top.min(10)) {
        let c = &p.calls[t.index];
        let pad = (c.span.len() / 10).max(20_000);
        let _ = writeln!(
            o,
            "<h4 id=\"p{n}-c{}\"><code>{}</code> (--explain {}): held {}, {} ({})</h4>",
            c.corr,
            escape(&c.name),
            c.corr,
            duration(t.held.total_ns),
            escape(&t.cause),
            t.class
        );
        let window = Span::new(c.span.start - pad, c.span.end + pad);
        o.push_str(&timeline(p, traced, window, Some(t), &format!("p{n}-c{}-svg", c.corr), false));
    }
    o.push_str("<h3>Per API function</h3>\n<table><tr><th>API function</th><th>calls</th><th>held longer</th><th>total</th><th>median</th><th>longest</th></tr>\n");
    for r in calls::summary(p, traced, min_held_ns) {
        let _ = writeln!(
            o,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.name),
            r.calls,
            r.held_calls,
            duration(r.total_ns),
            duration(r.median_ns),
            duration(r.max_ns)
        );
    }
    o.push_str("</table>\n");
}

/// The held calls by place in the program, start-up on its own line.
fn by_location_table(o: &mut String, n: usize, a: &Analysis, min_held_ns: i64, top: usize) {
    let t = a.by_location(min_held_ns, false);
    let _ = writeln!(o, "<h3>By place in the program</h3>");
    if let Some(s) = &t.startup {
        let _ = writeln!(
            o,
            "<p>start-up: {} ({} call{}: context creation, module and library loading before the first enqueue of GPU \
             work)</p>",
            duration(s.total_ns),
            s.calls,
            if s.calls == 1 { "" } else { "s" }
        );
    }
    let _ = writeln!(
        o,
        "<table id=\"p{n}-by-location\"><tr><th>where</th><th>calls</th><th>total held</th><th>median</th><th>class</th>\
         <th>largest cause</th></tr>"
    );
    for r in t.rows.iter().take(top) {
        let _ = writeln!(
            o,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.place.shown()),
            r.calls,
            duration(r.total_ns),
            duration(r.median_ns),
            escape(&class_words(r)),
            escape(&cause_words(r))
        );
    }
    o.push_str("</table>\n");
}

/// An SVG of `window`: a lane per thread with calls in it, a lane per stream with work in it. The calls' time
/// is coloured by cause where they held their thread longer than the resolution; with a `focus` call, the
/// GPU work that held it takes its cause's colour and its own work the `Own` colour. A `zoomable` one holds
/// its lanes' data in an inner `<svg class="lane">` for [`ZOOM_JS`] to zoom.
fn timeline(p: &Program, traced: &[Traced], window: Span, focus: Option<&Traced>, id: &str, zoomable: bool) -> String {
    const W: f64 = 1000.0;
    const LABEL: f64 = 110.0;
    const LANE: f64 = 22.0;
    let len = window.len().max(1) as f64;
    let x = |t: i64| LABEL + ((t - window.start) as f64 / len * (W - LABEL)).clamp(0.0, W - LABEL);
    let in_window = |s: &Span| s.start < window.end && s.end > window.start;
    let threads: BTreeSet<u64> = p.calls.iter().filter(|c| in_window(&c.span)).map(|c| c.tid).collect();
    let streams: BTreeSet<u32> = p.work.iter().filter(|w| in_window(&w.span)).map(|w| w.stream).collect();
    let lanes = threads.len() + streams.len();
    let height = LANE * lanes as f64 + 24.0;
    let class = if zoomable { format!(" class=\"zoomable\" data-view=\"0 {}\"", window.len()) } else { String::new() };
    let mut svg = format!(
        "<svg id=\"{id}\"{class} width=\"{W}\" height=\"{height}\" viewBox=\"0 0 {W} {height}\" role=\"img\" \
         xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n"
    );
    // The labels stay where they are; the lanes' data (`o`) is what zooms.
    let mut labels = String::new();
    let mut o = String::new();
    // Zoomed in far, a tenth of a unit is too coarse.
    let digits = if zoomable { 3 } else { 1 };
    let rect = |o: &mut String, lane: usize, s: Span, fill: &str, title: &str| {
        let (a, b) = (x(s.start), x(s.end));
        let _ = writeln!(
            o,
            "<rect x=\"{a:.digits$}\" y=\"{:.1}\" width=\"{:.digits$}\" height=\"{:.1}\" fill=\"{fill}\"><title>{}</title></rect>",
            lane as f64 * LANE + 3.0,
            (b - a).max(if zoomable { 0.2 } else { 0.8 }),
            LANE - 6.0,
            escape(title)
        );
    };
    for (lane, tid) in threads.iter().enumerate() {
        let label = escape(&p.threads.words(*tid));
        let _ = writeln!(labels, "<text x=\"4\" y=\"{:.1}\">{label}</text>", lane as f64 * LANE + 15.0);
        for t in traced.iter().filter(|t| p.calls[t.index].tid == *tid && in_window(&p.calls[t.index].span)) {
            let c = &p.calls[t.index];
            let title = format!("{} (--explain {}): {}, {}", c.name, c.corr, duration(t.held.total_ns), t.cause);
            if t.held.total_ns > t.held.resolution_ns {
                for s in &t.held.segments {
                    rect(&mut o, lane, s.span, colour(Some(s.cause)), &title);
                }
            } else {
                rect(&mut o, lane, c.span, colour(None), &title);
            }
        }
    }
    let holders = focus.map(|f| p.scene(f.index).holders).unwrap_or_default();
    let own: Vec<u32> = focus.map(|f| p.calls[f.index].corrs.clone()).unwrap_or_default();
    let released = focus.and_then(|f| f.held.released_by().map(|s| (s.cause, s.span.end)));
    for (k, stream) in streams.iter().enumerate() {
        let lane = threads.len() + k;
        let _ = writeln!(labels, "<text x=\"4\" y=\"{:.1}\">stream {stream}</text>", lane as f64 * LANE + 15.0);
        for w in p.work.iter().filter(|w| w.stream == *stream && in_window(&w.span)) {
            let cause = if own.contains(&w.corr) {
                Some(Cause::Own)
            } else {
                holders
                    .iter()
                    .find(|h| h.span == w.span && released.is_some_and(|(c, end)| c == h.cause && end >= w.span.end))
                    .map(|h| h.cause)
            };
            let title = format!("{}, correlation {}, {} on the GPU", w.words(), w.corr, duration(w.span.len()));
            rect(&mut o, lane, w.span, colour(cause), &title);
        }
    }
    svg.push_str(&labels);
    if zoomable {
        let w = W - LABEL;
        let _ = writeln!(
            svg,
            "<svg class=\"lane\" x=\"{LABEL}\" y=\"0\" width=\"{w}\" height=\"{height}\" viewBox=\"{LABEL} 0 {w} {height}\" \
             preserveAspectRatio=\"none\" data-x0=\"{LABEL}\" data-w=\"{w}\" data-ns=\"{}\">",
            window.len()
        );
        svg.push_str(&o);
        svg.push_str("</svg>\n");
    } else {
        svg.push_str(&o);
    }
    let _ = writeln!(
        svg,
        "<text class=\"shown\" x=\"{LABEL}\" y=\"{:.1}\" fill=\"#6b7280\">{} shown</text>",
        height - 6.0,
        duration(window.len())
    );
    svg.push_str("</svg>\n");
    svg
}

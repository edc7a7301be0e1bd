//! Drawing a [`Timeline`] as inline SVG: lane names on the left, the spans on their lanes, markers as dashed
//! vertical lines with their labels stacked above the lanes so that none overlap, and one time axis with round
//! ticks, counted from the first event drawn. Colours come from CSS classes (`page.css`); every span carries a
//! `<title>` tooltip with its exact numbers.

use super::axis::{linear_ticks, nice_step, tick_label, time_unit};
use super::escape;
use super::timeline::{Kind, MarkerKind, Span, Timeline};
use std::fmt::Write as _;

/// The drawing's coordinate system (the SVG scales to the width of its box).
const WIDTH: f64 = 860.0;
const LEFT: f64 = 160.0;
const RIGHT: f64 = 16.0;
const ROW: f64 = 14.0;
const LANE: f64 = 28.0;
const GAP: f64 = 6.0;
/// Rough width of one character of the 11 px sans-serif labels.
const CHAR: f64 = 6.3;

fn text_width(text: &str) -> f64 {
    text.chars().count() as f64 * CHAR
}

fn span_class(kind: Kind) -> String {
    match kind {
        Kind::Host => "span host".into(),
        Kind::Other => "span other".into(),
        Kind::Blocker => "span blocker".into(),
        Kind::Work => "span work".into(),
        Kind::Step(k) => format!("span step{}", k % 5),
        Kind::Held(cause) => format!("span held-{}", cause.slug()),
    }
}

fn marker_class(kind: MarkerKind) -> &'static str {
    match kind {
        MarkerKind::Returned => "marker returned",
        MarkerKind::Finished => "marker finished",
        MarkerKind::Minor => "marker minor",
    }
}

/// Maps host-clock ns to x.
struct Scale {
    lo: f64,
    hi: f64,
}

impl Scale {
    fn x(&self, t: f64) -> f64 {
        LEFT + (t - self.lo) / (self.hi - self.lo) * (WIDTH - LEFT - RIGHT)
    }
}

/// Intervals of x already taken by labels, so that a new label can avoid them.
#[derive(Default)]
struct Taken(Vec<(f64, f64)>);

impl Taken {
    fn free(&self, a: f64, b: f64) -> bool {
        self.0.iter().all(|&(x, y)| b + 3.0 <= x || a >= y + 3.0)
    }
}

/// The SVG of `t`, with `id` on the `<svg>` element. An empty timeline gives an empty string.
pub fn svg(t: &Timeline, id: &str) -> String {
    if t.is_empty() {
        return String::new();
    }
    let frame = Frame::of(t);
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg class="tl" id="{}" viewBox="0 0 {WIDTH} {height:.0}" width="{WIDTH}" height="{height:.0}" role="img" aria-label="timeline">"#,
        escape(id),
        height = frame.height
    );
    lanes(&mut o, t, &frame);
    axis(&mut o, &frame);
    spans(&mut o, t, &frame);
    markers(&mut o, t, &frame);
    o.push_str("</svg>");
    o
}

/// Where a marker's label goes: its row above the lanes, and the x its text is anchored at, by its start or
/// its end.
struct MarkerLabel {
    row: usize,
    x: f64,
    anchor: &'static str,
}

/// The drawing's layout: the time scale, the markers' labels in rows at the top, the lanes under them and the
/// axis under the lanes.
struct Frame {
    scale: Scale,
    /// The first event drawn (host ns), which the axis counts from, and the time from it to the last.
    first: i64,
    range: f64,
    labels: Vec<MarkerLabel>,
    lanes_top: f64,
    lanes_bottom: f64,
    axis_y: f64,
    height: f64,
}

impl Frame {
    fn of(t: &Timeline) -> Frame {
        let times = t.spans.iter().flat_map(|s| [s.start, s.end]).chain(t.markers.iter().map(|m| m.at));
        let first = times.clone().min().unwrap_or(0);
        let last = times.max().unwrap_or(0).max(first + 1_000);
        let range = (last - first) as f64;
        let scale = Scale { lo: first as f64 - range * 0.02, hi: last as f64 + range * 0.02 };
        let (labels, rows) = marker_labels(t, &scale);
        let lanes_top = 6.0 + rows as f64 * ROW + 4.0;
        let lanes_bottom = lanes_top + t.lanes.len() as f64 * (LANE + GAP) - GAP;
        let axis_y = lanes_bottom + 6.0;
        Frame { scale, first, range, labels, lanes_top, lanes_bottom, axis_y, height: axis_y + 36.0 }
    }

    /// The top of lane `i`.
    fn lane_y(&self, i: usize) -> f64 {
        self.lanes_top + i as f64 * (LANE + GAP)
    }
}

/// Each marker's label in the first row where it does not overlap another, and how many rows that takes.
fn marker_labels(t: &Timeline, scale: &Scale) -> (Vec<MarkerLabel>, usize) {
    let mut rows: Vec<Taken> = Vec::new();
    let mut labels = Vec::new();
    for m in &t.markers {
        let x = scale.x(m.at as f64);
        let w = text_width(&m.label);
        // Text runs right of the line, or left of it near the right edge.
        let (a, b, anchor_x, anchor) =
            if x + 3.0 + w <= WIDTH { (x, x + 3.0 + w, x + 3.0, "start") } else { (x - 3.0 - w, x, x - 3.0, "end") };
        let row = match rows.iter().position(|r| r.free(a, b)) {
            Some(r) => r,
            None => {
                rows.push(Taken::default());
                rows.len() - 1
            }
        };
        rows[row].0.push((a, b));
        labels.push(MarkerLabel { row, x: anchor_x, anchor });
    }
    (labels, rows.len())
}

/// The lanes and their names, and on a lane without spans what it would have held.
fn lanes(o: &mut String, t: &Timeline, f: &Frame) {
    for (i, lane) in t.lanes.iter().enumerate() {
        let y = f.lane_y(i);
        let _ = write!(
            o,
            r#"<rect class="lane" x="{LEFT}" y="{y:.1}" width="{:.1}" height="{LANE}"/>"#,
            WIDTH - LEFT - RIGHT
        );
        if lane.detail.is_empty() {
            let _ = write!(
                o,
                r#"<text class="lane-name" x="{:.1}" y="{:.1}">{}</text>"#,
                LEFT - 8.0,
                y + 18.0,
                escape(&lane.name)
            );
        } else {
            let _ = write!(
                o,
                r#"<text class="lane-name" x="{:.1}" y="{:.1}">{}</text><text class="lane-detail" x="{:.1}" y="{:.1}">{}</text>"#,
                LEFT - 8.0,
                y + 12.0,
                escape(&lane.name),
                LEFT - 8.0,
                y + 24.0,
                escape(&lane.detail)
            );
        }
        if !t.spans.iter().any(|s| s.lane == i) && !lane.empty.is_empty() {
            let _ = write!(
                o,
                r#"<text class="lane-empty" x="{:.1}" y="{:.1}">{}</text>"#,
                (LEFT + WIDTH - RIGHT) / 2.0,
                y + 18.0,
                escape(&lane.empty)
            );
        }
    }
}

/// The grid lines, the axis with its ticks, and its name.
fn axis(o: &mut String, f: &Frame) {
    let (scale, first, axis_y) = (&f.scale, f.first, f.axis_y);
    let unit = time_unit(f.range);
    let step = nice_step(scale.hi - scale.lo, 8);
    let _ =
        write!(o, r#"<line class="axis" x1="{LEFT}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}"/>"#, WIDTH - RIGHT);
    for tick in linear_ticks(scale.lo - first as f64, scale.hi - first as f64, 8) {
        let x = scale.x(first as f64 + tick);
        let _ = write!(
            o,
            r#"<line class="grid" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}"/><line class="axis" x1="{x:.1}" y1="{axis_y:.1}" x2="{x:.1}" y2="{:.1}"/><text class="tick" x="{x:.1}" y="{:.1}">{}</text>"#,
            f.lanes_top,
            f.lanes_bottom,
            axis_y + 4.0,
            axis_y + 16.0,
            tick_label(tick, step, unit)
        );
    }
    let _ = write!(
        o,
        r#"<text class="axis-name" x="{:.1}" y="{:.1}">{}, from the first event drawn (host clock)</text>"#,
        WIDTH - RIGHT,
        axis_y + 31.0,
        unit.symbol
    );
}

/// The spans, grouped by the experiment they belong to. A label beside its span must not cover another span.
fn spans(o: &mut String, t: &Timeline, f: &Frame) {
    let scale = &f.scale;
    let mut labels: Vec<Taken> = t.lanes.iter().map(|_| Taken::default()).collect();
    let mut rects: Vec<Taken> = t.lanes.iter().map(|_| Taken::default()).collect();
    for s in &t.spans {
        let x0 = scale.x(s.start as f64);
        rects[s.lane].0.push((x0, scale.x(s.end as f64).max(x0 + 2.0)));
    }
    let mut groups: Vec<Option<&str>> = Vec::new();
    for s in &t.spans {
        if !groups.contains(&s.group.as_deref()) {
            groups.push(s.group.as_deref());
        }
    }
    for g in groups {
        match g {
            Some(id) => {
                let _ = write!(o, r#"<g id="{}">"#, escape(id));
            }
            None => o.push_str("<g>"),
        }
        for s in t.spans.iter().filter(|s| s.group.as_deref() == g) {
            span(o, s, scale, f.lane_y(s.lane), &mut labels[s.lane], &rects[s.lane]);
        }
        o.push_str("</g>");
    }
}

/// The markers, on top: a line down through the lanes and its label in its row.
fn markers(o: &mut String, t: &Timeline, f: &Frame) {
    for (m, l) in t.markers.iter().zip(&f.labels) {
        let x = f.scale.x(m.at as f64);
        let label_y = 6.0 + l.row as f64 * ROW + 10.0;
        let _ = write!(
            o,
            r#"<g class="{}"><line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}"/><text x="{:.1}" y="{label_y:.1}" text-anchor="{}">{}</text></g>"#,
            marker_class(m.kind),
            label_y + 2.0,
            f.lanes_bottom,
            l.x,
            l.anchor,
            escape(&m.label)
        );
    }
}

/// One span and its label: inside it where the label fits, else beside it (over no other span and no other
/// label), else its short label likewise, else none (the tooltip still has it).
fn span(o: &mut String, s: &Span, scale: &Scale, y: f64, taken: &mut Taken, rects: &Taken) {
    let x0 = scale.x(s.start as f64);
    let x1 = scale.x(s.end as f64).max(x0 + 2.0);
    let class = span_class(s.kind) + if s.approx { " approx" } else { "" };
    let _ = write!(
        o,
        r#"<rect class="{class}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>{}</title></rect>"#,
        y + 3.0,
        x1 - x0,
        LANE - 6.0,
        escape(&s.title)
    );
    let right_edge = WIDTH - RIGHT;
    for text in [&s.label, &s.short] {
        if text.is_empty() {
            continue;
        }
        let w = text_width(text);
        let inside = x1 - x0 >= w + 8.0;
        let candidates = [
            (inside, (x0 + x1 - w) / 2.0, "in"),
            (x1 + 4.0 + w <= right_edge, x1 + 4.0, "out"),
            (x0 - 4.0 - w >= LEFT, x0 - 4.0 - w, "out"),
        ];
        let fits = |&&(ok, x, class): &&(bool, f64, &str)| {
            ok && taken.free(x, x + w) && (class == "in" || rects.free(x - 1.0, x + w + 1.0))
        };
        if let Some(&(_, x, class)) = candidates.iter().find(fits) {
            taken.0.push((x, x + w));
            let _ = write!(o, r#"<text class="label {class}" x="{x:.1}" y="{:.1}">{}</text>"#, y + 18.0, escape(text));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::timeline::{Lane, Marker};
    use super::*;

    fn lane(name: &str) -> Lane {
        Lane { name: name.into(), detail: String::new(), empty: "nothing <here>".into() }
    }

    #[test]
    fn draws_spans_markers_and_ticks() {
        let t = Timeline {
            lanes: vec![lane("host thread"), lane("GPU")],
            spans: vec![Span {
                lane: 0,
                start: 1_000_000,
                end: 1_005_000,
                kind: Kind::Host,
                label: "cuMemcpy<Async> 5.0 µs".into(),
                short: "5.0 µs".into(),
                title: "a & b".into(),
                approx: false,
                group: Some("timeline-x-1".into()),
            }],
            markers: vec![Marker { at: 21_000_000, label: "call returned".into(), kind: MarkerKind::Returned }],
            caption: String::new(),
            notes: vec![],
        };
        let svg = svg(&t, "timeline-x");
        assert!(svg.starts_with(r#"<svg class="tl" id="timeline-x""#), "{svg}");
        assert!(svg.contains(r#"<g id="timeline-x-1">"#));
        assert!(svg.contains("cuMemcpy&lt;Async&gt;") && svg.contains("a &amp; b"));
        assert!(svg.contains("nothing &lt;here&gt;"), "the empty lane says so");
        assert!(svg.contains(">call returned</text>"));
        assert!(svg.contains(r#"class="tick""#) && svg.contains("ms, from the first event"));
        assert!(svg.ends_with("</svg>"));
    }

    #[test]
    fn an_empty_timeline_draws_nothing() {
        assert_eq!(svg(&Timeline::default(), "x"), "");
    }
}

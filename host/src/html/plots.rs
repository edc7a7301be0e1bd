//! The plots, drawn with plotters' SVG backend and embedded in the page as SVG text:
//! - the size sweep (`sweep/{htod,dtoh}/{pageable,pinned}/SIZE`): call time and bandwidth against copy size,
//!   log-log, pageable against pinned, with the crossover marked (the first pageable size whose class is
//!   neither `async` nor `staged`, as in the report's findings);
//! - the launch queue (`launch/queue-depth/*`): the time of each launch against its index, with the launch that
//!   found the queue full marked;
//! - the scheduling flags (`wait/*`): the waiting thread's CPU use and its wake-up latency for each flag;
//! - the peer copies (`peer/*/same/SIZE/gpuA-to-gpuB`): call time and bandwidth against size, one line per call,
//!   peer access setting and pair of GPUs.
//!
//! Each returns `None` when the recording has no data for it. A plot that cannot be drawn becomes a message,
//! never a failure of the page.

use super::axis::{log_label, log_ticks, pow2_ticks};
use crate::classify::Class;
use crate::record::{CaseRecord, Family};
use crate::report::CaseResult;
use crate::rules::Verdict;
use crate::units::format_size;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One figure: its SVGs side by side (or why one could not be drawn) and a caption in plain words.
pub struct Figure {
    pub svgs: Vec<Result<String, String>>,
    pub caption: String,
}

const FONT: &str = "sans-serif";
const PAGEABLE_HTOD: RGBColor = RGBColor(0xdc, 0x26, 0x26);
const PINNED_HTOD: RGBColor = RGBColor(0x25, 0x63, 0xeb);
const PAGEABLE_DTOH: RGBColor = RGBColor(0xd9, 0x77, 0x06);
const PINNED_DTOH: RGBColor = RGBColor(0x08, 0x91, 0xb2);
const GREY: RGBColor = RGBColor(0x6b, 0x72, 0x80);

fn verdict_color(v: Option<Verdict>) -> RGBColor {
    match v {
        Some(Verdict::Matches) => RGBColor(0x16, 0xa3, 0x4a),
        Some(Verdict::Deviates) => RGBColor(0xdc, 0x26, 0x26),
        Some(Verdict::Undocumented | Verdict::Inconclusive) | None => GREY,
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A line of points on a log-log chart.
struct Series {
    name: String,
    color: RGBColor,
    /// Triangles and a dashed line instead of circles and a solid one.
    alt: bool,
    points: Vec<(f64, f64)>,
}

/// A vertical dashed line with a label at its top.
struct VLine {
    x: f64,
    label: String,
    color: RGBColor,
}

fn positive(p: &(f64, f64)) -> bool {
    p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite()
}

/// Bounds of positive values, widened by `factor` on a log scale (and made non-empty).
fn log_bounds(values: impl Iterator<Item = f64>, factor: f64) -> Option<(f64, f64)> {
    let (lo, hi) = values.fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    (hi > 0.0).then(|| if lo == hi { (lo / 2.0, hi * 2.0) } else { (lo / factor, hi * factor) })
}

/// How a log-log size chart writes its y values, and where its legend goes (where its curves are not).
struct YAxis {
    desc: &'static str,
    label: fn(f64) -> String,
    legend: SeriesLabelPosition,
}

/// A µs value as a duration: "5 µs", "20 ms".
fn us_label(us: f64) -> String {
    let ns = us * 1e3;
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    format!("{} {unit}", log_label(v))
}

/// A log-log chart of copy size (bytes) against `y`.
fn size_chart(title: &str, y: YAxis, series: &[Series], vlines: &[VLine]) -> Result<String, String> {
    let points: Vec<(f64, f64)> = series.iter().flat_map(|s| s.points.iter().copied()).filter(positive).collect();
    let (xlo, xhi) = log_bounds(points.iter().map(|p| p.0), 1.6).ok_or("no data")?;
    let (ylo, yhi) = log_bounds(points.iter().map(|p| p.1), 2.0).ok_or("no data")?;
    // Room for the legend above or below the curves.
    let yhi = if matches!(y.legend, SeriesLabelPosition::UpperLeft) { yhi * 12.0 } else { yhi };
    let ylo = if matches!(y.legend, SeriesLabelPosition::LowerRight) { ylo / 12.0 } else { ylo };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 17))
            .margin(14)
            .x_label_area_size(46)
            .y_label_area_size(64)
            .build_cartesian_2d(
                (xlo..xhi).log_scale().with_key_points(pow2_ticks(xlo, xhi, 9)),
                (ylo..yhi).log_scale().with_key_points(log_ticks(ylo, yhi)),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("copy size")
            .y_desc(y.desc)
            .x_label_formatter(&|v| format_size(v.round() as u64))
            .y_label_formatter(&|v| (y.label)(*v))
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .bold_line_style(BLACK.mix(0.08))
            .draw()
            .map_err(err)?;
        for s in series {
            let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(positive).collect();
            let color = s.color;
            if s.alt {
                chart.draw_series(DashedLineSeries::new(pts.clone(), 6, 4, color.stroke_width(2))).map_err(err)?;
                chart
                    .draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 5, color.filled())))
                    .map_err(err)?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 5, color.filled()));
            } else {
                chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2))).map_err(err)?;
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
                    .map_err(err)?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
            }
        }
        for v in vlines {
            let style = v.color.stroke_width(2);
            chart
                .draw_series(std::iter::once(DashedPathElement::new(vec![(v.x, ylo), (v.x, yhi)], 5, 4, style)))
                .map_err(err)?
                .label(v.label.as_str())
                .legend(move |(x, y)| DashedPathElement::new(vec![(x, y), (x + 20, y)], 5, 3, style));
        }
        chart
            .configure_series_labels()
            .position(y.legend)
            .label_font((FONT, 12))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The size sweep, where the results have `sweep/...` experiments with a class.
pub fn sweep(results: &[CaseResult]) -> Option<Figure> {
    let sweep: Vec<&CaseResult> =
        results.iter().filter(|r| r.family == Family::Sweep && r.class.is_some() && r.bytes > 0).collect();
    if sweep.is_empty() {
        return None;
    }
    let kinds = [
        ("htod", "pageable", "H→D pageable", PAGEABLE_HTOD, false),
        ("htod", "pinned", "H→D pinned", PINNED_HTOD, false),
        ("dtoh", "pageable", "D→H pageable", PAGEABLE_DTOH, true),
        ("dtoh", "pinned", "D→H pinned", PINNED_DTOH, true),
    ];
    let of = |dir: &str, host: &str| -> Vec<&CaseResult> {
        let prefix = format!("sweep/{dir}/{host}/");
        let mut v: Vec<&CaseResult> = sweep.iter().copied().filter(|r| r.id.starts_with(&prefix)).collect();
        v.sort_by_key(|r| r.bytes);
        v
    };
    let mut times = Vec::new();
    let mut bandwidths = Vec::new();
    for (dir, host, name, color, alt) in kinds {
        let rs = of(dir, host);
        if rs.is_empty() {
            continue;
        }
        let t = rs.iter().filter_map(|r| Some((r.bytes as f64, r.host_call_us?.median))).collect();
        let b = rs.iter().filter_map(|r| Some((r.bytes as f64, r.bytes as f64 / (r.device_us? * 1e3)))).collect();
        times.push(Series { name: name.into(), color, alt, points: t });
        bandwidths.push(Series { name: name.into(), color, alt, points: b });
    }
    // As in the report's findings: the first pageable size whose class is neither async nor staged.
    let mut vlines = Vec::new();
    let mut words = Vec::new();
    for (dir, label, color) in [("htod", "H→D", PAGEABLE_HTOD), ("dtoh", "D→H", PAGEABLE_DTOH)] {
        let rs = of(dir, "pageable");
        if rs.is_empty() {
            continue;
        }
        match rs.iter().find(|r| !matches!(r.class, Some(Class::Async | Class::Staged))) {
            Some(r) => {
                vlines.push(VLine {
                    x: r.bytes as f64,
                    label: format!("{label} crossover {}", format_size(r.bytes)),
                    color,
                });
                words.push(format!(
                    "pageable {label} copies stop returning at once from {} (class {} there)",
                    format_size(r.bytes),
                    r.class.map_or("?".into(), |c| c.to_string())
                ));
            }
            None => words.push(format!("pageable {label} copies returned at once at every size measured")),
        }
    }
    let caption = format!(
        "cuMemcpy{{HtoD,DtoH}}Async on a non-blocking stream behind a blocker, median of the repetitions. Left: how \
         long the call held the host thread. Right: bytes divided by the copy's own GPU time (CUDA events), in GB/s \
         (10⁹ bytes per second). Dashed vertical lines mark the crossover: {}.",
        if words.is_empty() { "no pageable sizes were measured".to_owned() } else { words.join("; ") }
    );
    Some(Figure {
        svgs: vec![
            size_chart(
                "Call time against size",
                YAxis { desc: "time in the call", label: us_label, legend: SeriesLabelPosition::UpperLeft },
                &times,
                &vlines,
            ),
            size_chart(
                "Bandwidth against size",
                YAxis { desc: "bandwidth (GB/s)", label: log_label, legend: SeriesLabelPosition::LowerRight },
                &bandwidths,
                &vlines,
            ),
        ],
        caption,
    })
}

/// Colours of the three peer calls; peer access off is drawn dashed with triangles in the same colour.
const PEER_COLORS: [(&str, RGBColor); 3] = [
    ("cuMemcpyPeer", RGBColor(0x7c, 0x3a, 0xed)),
    ("cuMemcpyPeerAsync", RGBColor(0x05, 0x96, 0x69)),
    ("cuMemcpyDtoDAsync", RGBColor(0xdb, 0x27, 0x77)),
];

/// The peer copies with the blocker ahead in their stream, where there are some with a class.
pub fn peer(results: &[CaseResult]) -> Option<Figure> {
    let measured: Vec<&CaseResult> = results
        .iter()
        .filter(|r| r.family == Family::Peer && r.class.is_some() && r.bytes > 0 && !r.id.contains("/dst-gpu/"))
        .filter(|r| r.peer.is_some_and(|p| p.src_gpu.is_some() && p.dst_gpu.is_some()))
        .collect();
    if measured.is_empty() {
        return None;
    }
    let mut pairs: Vec<(i32, i32)> =
        measured.iter().filter_map(|r| r.peer.and_then(|p| Some((p.src_gpu?, p.dst_gpu?)))).collect();
    pairs.sort();
    pairs.dedup();
    let loopback = pairs.iter().any(|(a, b)| a == b);
    let mut times = Vec::new();
    let mut bandwidths = Vec::new();
    for (call, color) in PEER_COLORS {
        for access in [true, false] {
            for &(a, b) in &pairs {
                let mut rs: Vec<&CaseResult> = measured
                    .iter()
                    .copied()
                    .filter(|r| r.call == call)
                    .filter(|r| {
                        r.peer.is_some_and(|p| p.access == access && p.src_gpu == Some(a) && p.dst_gpu == Some(b))
                    })
                    .collect();
                if rs.is_empty() {
                    continue;
                }
                rs.sort_by_key(|r| r.bytes);
                let name = format!(
                    "{call}, access {}{}",
                    if access { "on" } else { "off" },
                    if pairs.len() > 1 { format!(", {a}→{b}") } else { String::new() }
                );
                let t = rs.iter().filter_map(|r| Some((r.bytes as f64, r.host_call_us?.median))).collect();
                let bw = rs.iter().filter_map(|r| Some((r.bytes as f64, r.bandwidth_gb_s?))).collect();
                times.push(Series { name: name.clone(), color, alt: !access, points: t });
                bandwidths.push(Series { name, color, alt: !access, points: bw });
            }
        }
    }
    let pair_words: Vec<String> = pairs.iter().map(|(a, b)| format!("GPU {a} → GPU {b}")).collect();
    let caption = format!(
        "Copies from one GPU's memory to another's ({}), on the source GPU's stream behind a blocker, median of the \
         repetitions; solid: peer access on (the copy can cross the link directly), dashed: off (by the Programming \
         Guide, the copy then goes through host memory). Left: how long the call held the host thread; a line that climbs with size is a call \
         that waits for its copy. Right: bytes divided by the copy's own GPU time (CUDA events), in GB/s.{}",
        pair_words.join(", "),
        if loopback {
            " LOOPBACK pairs copy within one GPU: they check the code on a one-GPU machine and measure no link."
        } else {
            ""
        }
    );
    Some(Figure {
        svgs: vec![
            size_chart(
                "Peer copies: call time against size",
                YAxis { desc: "time in the call", label: us_label, legend: SeriesLabelPosition::UpperLeft },
                &times,
                &[],
            ),
            size_chart(
                "Peer copies: bandwidth against size",
                YAxis { desc: "bandwidth (GB/s)", label: log_label, legend: SeriesLabelPosition::LowerRight },
                &bandwidths,
                &[],
            ),
        ],
        caption,
    })
}

/// The launch queue, where a `launch/queue-depth/*` record has its per-launch series.
pub fn queue(records: &[CaseRecord], results: &[CaseResult]) -> Option<Figure> {
    let record = records.iter().find(|r| r.setup.id.starts_with("launch/queue-depth") && r.series.is_some())?;
    let series = record.series.as_deref().unwrap_or_default();
    if series.is_empty() {
        return None;
    }
    // The series is the first repetition's; so is the depth marked on it.
    let first = record.reps.first().map(|r| &r.metrics);
    let depth = first.and_then(|m| m.get("queue_depth")).copied();
    let result = results.iter().find(|r| r.id == record.setup.id);
    let median_depth = result.and_then(|r| r.metrics.get("queue_depth")).copied();
    let svg = queue_chart(series, depth);
    let caption = match depth {
        Some(d) => format!(
            "{}: short kernels launched one after another behind a long blocker on one stream; the time each \
             cuLaunchKernel call took, in the first repetition. Launch {d:.0} (marked) found the queue full and \
             returned only when the blocker ended; the launches before it returned at once{}.",
            record.setup.id,
            median_depth.map_or(String::new(), |m| format!(" (median depth over the repetitions: {m:.0})"))
        ),
        None => format!(
            "{}: the time each cuLaunchKernel call took behind a long blocker, in the first repetition. No launch \
             waited: the queue held more than the {} launches tried.",
            record.setup.id,
            series.len()
        ),
    };
    Some(Figure { svgs: vec![svg], caption })
}

fn queue_chart(series: &[f64], depth: Option<f64>) -> Result<String, String> {
    let points: Vec<(f64, f64)> =
        series.iter().enumerate().map(|(i, &v)| (i as f64, v)).filter(|p| p.1 > 0.0 && p.1.is_finite()).collect();
    let (ylo, yhi) = log_bounds(points.iter().map(|p| p.1), 2.5).ok_or("no positive launch times")?;
    let xhi = (series.len() as f64).max(1.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Launches into the queue", (FONT, 17))
            .margin(14)
            .x_label_area_size(46)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..xhi, (ylo..yhi).log_scale().with_key_points(log_ticks(ylo, yhi)))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("launch number")
            .y_desc("time in cuLaunchKernel")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| us_label(*v))
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .bold_line_style(BLACK.mix(0.08))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(err)?;
        chart.draw_series(LineSeries::new(points.clone(), PINNED_HTOD.stroke_width(1))).map_err(err)?;
        if let Some(d) = depth {
            let style = PAGEABLE_HTOD.stroke_width(2);
            chart
                .draw_series(std::iter::once(DashedPathElement::new(vec![(d, ylo), (d, yhi)], 5, 4, style)))
                .map_err(err)?;
            if let Some(&(x, y)) = points.iter().find(|p| p.0 == d) {
                chart.draw_series(std::iter::once(Circle::new((x, y), 5, PAGEABLE_HTOD.filled()))).map_err(err)?;
            }
            let font = (FONT, 12).into_font().color(&PAGEABLE_HTOD).pos(Pos::new(HPos::Right, VPos::Top));
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((d, yhi)) + Text::new(format!("queue full: launch {d:.0} waited"), (-6, 4), font),
                ))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The scheduling flags, where the results have `wait/*` experiments with the two metrics.
pub fn wait(results: &[CaseResult]) -> Option<Figure> {
    let waits: Vec<&CaseResult> = results
        .iter()
        .filter(|r| r.family == Family::Wait && r.error.is_none())
        .filter(|r| r.metrics.contains_key("cpu_fraction") || r.metrics.contains_key("wake_latency_us"))
        .collect();
    if waits.is_empty() {
        return None;
    }
    let names: Vec<String> = waits.iter().map(|r| r.id.strip_prefix("wait/").unwrap_or(&r.id).to_owned()).collect();
    let bars = |key: &str, scale: f64| -> Vec<(f64, RGBColor)> {
        waits
            .iter()
            .map(|r| (r.metrics.get(key).copied().unwrap_or(f64::NAN) * scale, verdict_color(r.verdict)))
            .collect()
    };
    let cpu = bars("cpu_fraction", 100.0);
    let latency = bars("wake_latency_us", 1.0);
    Some(Figure {
        svgs: vec![
            bar_chart("CPU use while waiting", "share of one CPU core (%)", &names, &cpu, Some(100.0), "%"),
            bar_chart("Wake-up latency", "after the kernel ended (µs)", &names, &latency, None, " µs"),
        ],
        caption: "Each flag's wait for a 100 ms kernel, median of the repetitions. Left: the waiting thread's CPU \
                  time over its wall time (busy waiting uses a whole core). Right: how long after the kernel ended \
                  the wait returned (including a few µs of launch latency). Bars are green where the flag behaved \
                  as documented, red where it did not, grey where no rule says."
            .into(),
    })
}

fn bar_chart(
    title: &str,
    x_desc: &str,
    names: &[String],
    bars: &[(f64, RGBColor)],
    max: Option<f64>,
    unit: &str,
) -> Result<String, String> {
    let n = names.len() as i32;
    let top = bars.iter().map(|b| b.0).filter(|v| v.is_finite()).fold(0f64, f64::max);
    // Room right of the longest bar for its number.
    let xhi = max.map_or(top * 1.25, |m| m * 1.12).max(1e-9);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 80 + 36 * n.max(1) as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 17))
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(170)
            .build_cartesian_2d(0f64..xhi, (0..n).into_segmented())
            .map_err(err)?;
        // Index 0 at the top.
        let row = |i: usize| n - 1 - i as i32;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .x_labels(7)
            .y_labels(names.len() + 1)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(k) => names.get((n - 1 - k) as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_label_formatter(&|v| log_label(*v))
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .disable_y_mesh()
            .bold_line_style(BLACK.mix(0.08))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(err)?;
        for (i, &(v, color)) in bars.iter().enumerate() {
            if !v.is_finite() {
                continue;
            }
            let mut bar = Rectangle::new(
                [(0.0, SegmentValue::Exact(row(i))), (v, SegmentValue::Exact(row(i) + 1))],
                color.mix(0.85).filled(),
            );
            bar.set_margin(7, 7, 0, 0);
            chart.draw_series(std::iter::once(bar)).map_err(err)?;
            let text = if v >= 100.0 || unit == "%" { format!("{v:.0}{unit}") } else { format!("{v:.1}{unit}") };
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((v, SegmentValue::CenterOf(row(i))))
                        + Text::new(text, (4, -6), (FONT, 12).into_font().color(&BLACK)),
                ))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

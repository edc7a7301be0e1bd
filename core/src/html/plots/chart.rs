//! What the plots share: the font and colours, the verdict colours, and the log-log chart of a copy size
//! against a time or a bandwidth (lines, markers, dashed vertical marks, legend).

use super::super::axis::{log_label, log_ticks, pow2_ticks};
use crate::rules::Verdict;
use crate::units::format_size;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

pub(super) const FONT: &str = "sans-serif";
pub(super) const PAGEABLE_HTOD: RGBColor = RGBColor(0xdc, 0x26, 0x26);
pub(super) const PINNED_HTOD: RGBColor = RGBColor(0x25, 0x63, 0xeb);
pub(super) const PAGEABLE_DTOH: RGBColor = RGBColor(0xd9, 0x77, 0x06);
pub(super) const PINNED_DTOH: RGBColor = RGBColor(0x08, 0x91, 0xb2);
const GREY: RGBColor = RGBColor(0x6b, 0x72, 0x80);

pub(super) fn verdict_color(v: Option<Verdict>) -> RGBColor {
    match v {
        Some(Verdict::Matches) => RGBColor(0x16, 0xa3, 0x4a),
        Some(Verdict::Deviates) => RGBColor(0xdc, 0x26, 0x26),
        Some(Verdict::Undocumented | Verdict::Inconclusive) | None => GREY,
    }
}

pub(super) fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A line of points on a log-log chart.
pub(super) struct Series {
    pub(super) name: String,
    pub(super) color: RGBColor,
    /// Triangles and a dashed line instead of circles and a solid one.
    pub(super) alt: bool,
    pub(super) points: Vec<(f64, f64)>,
}

/// A vertical dashed line with a label at its top.
pub(super) struct VLine {
    pub(super) x: f64,
    pub(super) label: String,
    pub(super) color: RGBColor,
}

pub(super) fn positive(p: &(f64, f64)) -> bool {
    p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite()
}

/// Bounds of positive values, widened by `factor` on a log scale (and made non-empty).
pub(super) fn log_bounds(values: impl Iterator<Item = f64>, factor: f64) -> Option<(f64, f64)> {
    let (lo, hi) = values.fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    (hi > 0.0).then(|| if lo == hi { (lo / 2.0, hi * 2.0) } else { (lo / factor, hi * factor) })
}

/// How a log-log size chart writes its y values, and where its legend goes (where its curves are not).
pub(super) struct YAxis {
    pub(super) desc: &'static str,
    pub(super) label: fn(f64) -> String,
    pub(super) legend: SeriesLabelPosition,
}

/// A µs value as a duration: "5 µs", "20 ms".
pub(super) fn us_label(us: f64) -> String {
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
pub(super) fn size_chart(title: &str, y: YAxis, series: &[Series], vlines: &[VLine]) -> Result<String, String> {
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

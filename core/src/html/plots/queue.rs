//! The launch queue: the time of each launch against its index, with the launch that found the queue full
//! marked; kernel launches, and graph launches where the recording has them.

use super::super::axis::log_ticks;
use super::chart::{err, log_bounds, us_label, FONT, PAGEABLE_HTOD, PINNED_HTOD};
use super::Figure;
use crate::api::Api;
use crate::record::CaseRecord;
use crate::report::CaseResult;
use crate::setup::Family;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The launch queue, where the driver's launch-queue cases have their per-launch series: the launch family's
/// (kernel launches) and the graph family's (graph launches), one chart each, those of them the recording has.
pub fn queue(records: &[CaseRecord], results: &[CaseResult]) -> Option<Figure> {
    let mut svgs = Vec::new();
    let mut captions = Vec::new();
    for (family, call, what) in [
        (Family::Launch, "cuLaunchKernel", "short kernels launched"),
        (Family::Graph, "cuGraphLaunch", "a one-kernel graph launched"),
    ] {
        let Some(record) =
            records.iter().find(|r| r.setup.family == family && r.setup.api == Api::Driver && r.series.is_some())
        else {
            continue;
        };
        let series = record.series.as_deref().unwrap_or_default();
        if series.is_empty() {
            continue;
        }
        // The series is the first repetition's; so is the depth marked on it.
        let depth = record.reps.first().and_then(|r| r.metrics.queue_depth);
        let result = results.iter().find(|r| r.id == record.setup.id);
        let median_depth = result.and_then(|r| r.metrics.queue_depth);
        svgs.push(queue_chart(series, depth, call));
        captions.push(match depth {
            Some(d) => format!(
                "{}: {what} one after another behind a long blocker on one stream; the time each {call} call took, \
                 in the first repetition. Launch {d:.0} (marked) found the queue full and returned only when the \
                 blocker ended; the launches before it returned at once{}.",
                record.setup.id,
                median_depth.map_or(String::new(), |m| format!(" (median depth over the repetitions: {m:.0})"))
            ),
            None => format!(
                "{}: the time each {call} call took behind a long blocker, in the first repetition. No launch \
                 waited: the queue held more than the {} launches tried.",
                record.setup.id,
                series.len()
            ),
        });
    }
    (!svgs.is_empty()).then(|| Figure { svgs, caption: captions.join(" ") })
}

fn queue_chart(series: &[f64], depth: Option<f64>, call: &str) -> Result<String, String> {
    let points: Vec<(f64, f64)> =
        series.iter().enumerate().map(|(i, &v)| (i as f64, v)).filter(|p| p.1 > 0.0 && p.1.is_finite()).collect();
    let (ylo, yhi) = log_bounds(points.iter().map(|p| p.1), 2.5).ok_or("no positive launch times")?;
    let xhi = (series.len() as f64).max(1.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{call} into the queue"), (FONT, 17))
            .margin(14)
            .x_label_area_size(46)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..xhi, (ylo..yhi).log_scale().with_key_points(log_ticks(ylo, yhi)))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("launch number")
            .y_desc(format!("time in {call}"))
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

//! The scheduling flags: the waiting thread's CPU use and its wake-up latency for each flag.

use super::super::axis::log_label;
use super::chart::{err, verdict_color, FONT};
use super::Figure;
use crate::metrics::Metrics;
use crate::report::CaseResult;
use crate::setup::Family;
use plotters::prelude::*;

/// The scheduling flags, where the results have `wait/*` experiments with the two metrics.
pub fn wait(results: &[CaseResult]) -> Option<Figure> {
    let waits: Vec<&CaseResult> = results
        .iter()
        .filter(|r| r.family == Family::Wait && r.error.is_none())
        .filter(|r| r.metrics.cpu_fraction.is_some() || r.metrics.wake_latency_us.is_some())
        .collect();
    if waits.is_empty() {
        return None;
    }
    let names: Vec<String> = waits.iter().map(|r| r.id.strip_prefix("wait/").unwrap_or(&r.id).to_owned()).collect();
    let bars = |metric: fn(&Metrics) -> Option<f64>, scale: f64| -> Vec<(f64, RGBColor)> {
        waits.iter().map(|r| (metric(&r.metrics).unwrap_or(f64::NAN) * scale, verdict_color(r.verdict))).collect()
    };
    let cpu = bars(|m| m.cpu_fraction, 100.0);
    let latency = bars(|m| m.wake_latency_us, 1.0);
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

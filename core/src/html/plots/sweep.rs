//! The size sweep: call time and bandwidth against copy size, log-log, pageable against pinned, with the
//! crossover marked.

use super::super::axis::log_label;
use super::chart::{
    size_chart, us_label, Series, VLine, YAxis, PAGEABLE_DTOH, PAGEABLE_HTOD, PINNED_DTOH, PINNED_HTOD,
};
use super::Figure;
use crate::api::Api;
use crate::class::Class;
use crate::report::CaseResult;
use crate::setup::Family;
use crate::setup::{Direction, HostKind};
use crate::units::format_size;
use plotters::prelude::*;

/// The size sweep, where the results have `sweep/...` experiments with a class.
pub fn sweep(results: &[CaseResult]) -> Option<Figure> {
    let sweep: Vec<&CaseResult> =
        results.iter().filter(|r| r.family == Family::Sweep && r.class.is_some() && r.bytes > 0).collect();
    if sweep.is_empty() {
        return None;
    }
    let kinds = [
        (Direction::HtoD, HostKind::Pageable, "H→D pageable", PAGEABLE_HTOD, false),
        (Direction::HtoD, HostKind::Pinned, "H→D pinned", PINNED_HTOD, false),
        (Direction::DtoH, HostKind::Pageable, "D→H pageable", PAGEABLE_DTOH, true),
        (Direction::DtoH, HostKind::Pinned, "D→H pinned", PINNED_DTOH, true),
    ];
    // The driver's sweep (the runtime's, where measured too, is in the tables).
    let of = |dir: Direction, host: HostKind| -> Vec<&CaseResult> {
        let mut v: Vec<&CaseResult> = sweep
            .iter()
            .copied()
            .filter(|r| r.api == Api::Driver && r.direction == Some(dir) && r.host_memory == Some(host))
            .collect();
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
    for (dir, label, color) in [(Direction::HtoD, "H→D", PAGEABLE_HTOD), (Direction::DtoH, "D→H", PAGEABLE_DTOH)] {
        let rs = of(dir, HostKind::Pageable);
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

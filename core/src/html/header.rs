//! What a recording's section shows first: the machine it was made on, and one line per experiment linking
//! to its card.

use super::cards::{call_time, class_word, verdict_badge};
use super::escape;
use crate::record::Recording;
use crate::report::Report;
use std::fmt::Write as _;

pub(super) fn machine(o: &mut String, report: &Report, rec: &Recording) {
    let m = &report.machine;
    let unknown = || "unknown".to_owned();
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
    let rows = [
        (
            "GPU",
            format!(
                "{} (compute capability {}, {} SMs, {})",
                m.gpu_name,
                m.compute_capability,
                m.sm_count,
                gib(m.memory_total_bytes)
            ),
        ),
        (
            "driver",
            format!("{} (CUDA driver API {})", m.driver_release.clone().unwrap_or_else(unknown), m.cuda_driver_api),
        ),
        (
            "PCIe",
            format!(
                "{} now, {} max (bus {})",
                m.pcie_link.clone().unwrap_or_else(unknown),
                m.pcie_max_link.clone().unwrap_or_else(unknown),
                m.pci_bus_id
            ),
        ),
        ("host", format!("{} ({} CPUs), {}", m.host_cpu, m.host_cpus, m.os)),
        ("async-lab", format!("{} ({})", m.tool_version, m.git_commit)),
        (
            "run",
            format!(
                "preset {}, {} repetitions per experiment, {}{}",
                report.preset,
                report.reps_per_case,
                report.created,
                if rec.args.is_empty() { String::new() } else { format!(", arguments: {}", rec.args.join(" ")) }
            ),
        ),
    ];
    o.push_str("<dl class=\"machine\">\n");
    for (k, v) in rows {
        let _ = writeln!(o, "<dt>{k}</dt><dd>{}</dd>", escape(&v));
    }
    o.push_str("</dl>\n");
    if report.partial {
        o.push_str("<p class=\"missing\"><strong>Partial recording:</strong> the run was interrupted; what was measured is shown, the rest is missing.</p>\n");
    }
}

/// One line per experiment, linking to its card.
pub(super) fn overview(o: &mut String, report: &Report, case_ids: &[String]) {
    o.push_str("<h3>All experiments</h3>\n<table class=\"overview\">\n");
    o.push_str("<tr><th>experiment</th><th>rule</th><th>class</th><th>expected</th><th>verdict</th><th>call time: median [min – max]</th><th>held for</th></tr>\n");
    for (r, id) in report.results.iter().zip(case_ids) {
        let _ = writeln!(
            o,
            "<tr><td><a href=\"#{}\"><code>{}</code></a></td><td>{}</td><td class=\"class\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(id),
            escape(&r.id),
            escape(&r.rule),
            escape(&class_word(r)),
            escape(&r.expected.to_string()),
            verdict_badge(r),
            escape(&call_time(r)),
            escape(&r.held_for)
        );
    }
    o.push_str("</table>\n");
}

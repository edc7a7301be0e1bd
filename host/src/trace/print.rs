//! What `async-lab trace` prints of each process (its tables, the call `--explain` names, its steps beside the
//! tracer's) and of `--against`'s comparison.

use super::{Against, ReportFormat, TraceArgs};
use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::{against_recording, against_reference, layout, steps, text};
use std::path::Path;

/// Prints process `n` (of `processes`): the call `--explain` names, where it is this process's; else, with
/// `--format text`, its tables and, with `--steps`, its steps beside the tracer's.
pub(super) fn print_process(
    args: &TraceArgs,
    n: usize,
    processes: usize,
    a: &Analysis,
    steps: Option<&[steps::Step]>,
) -> anyhow::Result<()> {
    if let Some(corr) = args.explain {
        if let Some(t) = a.traced.iter().find(|t| a.program.calls[t.index].corr == corr) {
            // Names whole, lines wrapped to the width.
            let w = width(args.wide);
            crate::out!("{}", layout::wrap_lines(&text::explain(&a.program, t), w))?;
            crate::out!("{}", layout::wrap_lines(&text::explain_finding(a, t, args.skip_first), w))?;
            let location = text::explain_location(&a.locations, &a.program.calls[t.index], &a.places[t.index]);
            crate::out!("{}", layout::wrap_lines(&location, w))?;
        }
        return Ok(());
    }
    if args.format == ReportFormat::Json {
        return Ok(());
    }
    let p = a.process;
    if processes > 1 {
        let header = format!("process {} ({}): {}", n + 1, p.pid, p.program.join(" "));
        crate::out!("{}", layout::wrap(&header, width(args.wide), "", "  "))?;
    }
    if p.partial {
        crate::outln!("(this process's trace was cut short: it holds what was written before)")?;
    }
    let view = text::View {
        min_held_ns: args.min_held.as_nanos() as i64,
        top: args.top,
        after_startup: args.after_startup,
        skip_first: args.skip_first,
        width: width(args.wide),
    };
    crate::out!("{}", text::process(a, &view))?;
    if let Some(steps) = steps {
        print_steps(a, steps)?;
    }
    Ok(())
}

/// The program's own timing of the steps its threads in `a` made, beside the tracer's.
fn print_steps(a: &Analysis, steps: &[steps::Step]) -> anyhow::Result<()> {
    let (program, traced) = (&a.program, &a.traced);
    let mine: Vec<steps::Step> =
        steps.iter().filter(|s| program.calls.iter().any(|c| c.tid == s.tid)).cloned().collect();
    match steps::compare(a.process, program, traced, &mine) {
        Some(rows) if !rows.is_empty() => {
            crate::outln!("\nThe program's own timing of its steps beside the tracer's:\n")?;
            crate::out!("{}", steps::markdown(&rows))?;
        }
        Some(_) => {}
        None => crate::outln!(
            "\nThis trace has no clock pair (it was made before trace format 3): --steps cannot place the steps."
        )?,
    }
    Ok(())
}

/// `--against`'s classes beside the tracer's; with `--format json`, on stderr (stdout holds the one JSON
/// document).
pub(super) fn print_against(
    format: ReportFormat,
    against: &Against,
    path: &Path,
    analyses: &[Analysis],
) -> anyhow::Result<()> {
    let say = |s: String| {
        if format == ReportFormat::Json {
            eprint!("{s}");
            Ok(())
        } else {
            crate::out!("{s}")
        }
    };
    match against {
        Against::Recording(rec) => {
            say(format!("\nThe lab's classes beside the tracer's ({}):\n\n", path.display()))?;
            say(against_recording::markdown(&against_recording::compare(rec, analyses)))?;
        }
        Against::Reference(refs) => {
            say(format!("\nThe reference's classes beside the tracer's ({}):\n\n", path.display()))?;
            say(against_reference::markdown(
                &against_reference::compare(refs, analyses),
                against_reference::left_out(refs),
            ))?;
        }
    }
    Ok(())
}

/// The width the text fits: none with `--wide`; else `COLUMNS` where set, the terminal's where stdout is
/// one, 120 columns where it is not.
fn width(wide: bool) -> Option<u16> {
    if wide {
        return None;
    }
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<u16>().ok()).filter(|&c| c >= 40);
    Some(columns.or_else(layout::terminal_width).unwrap_or(layout::NOT_A_TERMINAL))
}

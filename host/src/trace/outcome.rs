//! How `async-lab trace` ends: the cut-down traces `--keep-matched` and `--keep-held` write, and the exit
//! status `--fail-on-held`'s gate (`trace::gate`) decides.

use super::Against;
use anyhow::Context as _;
use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::format::{stored, Trace};
use async_lab_core::trace::gate::{self, Gate};
use async_lab_core::trace::{against_recording, against_reference, steps, trim};
use std::path::Path;

/// How `trace` ended, when it did not fail.
pub enum Outcome {
    /// Nothing held longer than `--fail-on-held`.
    Ok,
    /// A call held longer than `--fail-on-held`: exit 4.
    HeldTooLong,
    /// The program itself failed (its status is reported): exit 1.
    ProgramFailed,
}

/// How `trace` ends: held too long where `--fail-on-held`'s gate did not pass (its calls said on stderr,
/// longest first: time held, class, API function, place, the `--explain` id last), else as the program did.
pub(super) fn decide(gate: Option<&Gate>, program_ok: bool) -> Outcome {
    if let Some(g) = gate {
        eprint!("{}", gate::text(g));
    }
    match gate {
        Some(g) if !g.passed => Outcome::HeldTooLong,
        _ if !program_ok => Outcome::ProgramFailed,
        _ => Outcome::Ok,
    }
}

/// Writes the trace (its processes, analysed) cut down to the calls `against` matched (`--keep-matched`).
pub(super) fn keep_matched(against: &Against, analyses: &[Analysis], out: &Path) -> anyhow::Result<()> {
    let timed = match against {
        Against::Recording(rec) => against_recording::timed(rec),
        Against::Reference(refs) => against_reference::timed(refs),
    };
    let (cut, calls) = trim::matched(analyses, &timed);
    write_cut(analyses, &cut, &format!("the {calls} calls --against matched"), out)
}

/// Writes the trace (its processes, analysed) cut down to its held calls and the calls inside `steps`
/// (`--keep-held`).
pub(super) fn keep_held(analyses: &[Analysis], min_held: i64, steps: &[steps::Step], out: &Path) -> anyhow::Result<()> {
    let (cut, calls) = trim::calls_where(analyses, |p, program, i| {
        let c = &program.calls[i];
        let in_step = steps::clock(p).is_some_and(|clock| {
            steps.iter().any(|s| {
                s.tid == c.tid && c.span.start >= clock.to_trace(s.start_ns) && c.span.end <= clock.to_trace(s.end_ns)
            })
        });
        in_step || c.span.len() > min_held
    });
    write_cut(analyses, &cut, &format!("the {calls} held calls and calls inside steps"), out)
}

/// Writes `cut`, a cut of the trace whose processes `analyses` are keeping `what`, to `out` as stored
/// (compressed where its name ends in `.gz`, as `--out`), and says so with how many of the trace's lines it kept.
fn write_cut(analyses: &[Analysis], cut: &Trace, what: &str, out: &Path) -> anyhow::Result<()> {
    stored::write(out, &trim::to_text(cut)).with_context(|| format!("writing {}", out.display()))?;
    let whole: usize = analyses.iter().map(|a| a.process.lines.len() + 1).sum();
    let kept: usize = cut.processes.iter().map(|p| p.lines.len() + 1).sum();
    eprintln!(
        "async-lab: {what}, with what their classes rest on, written to {} ({kept} of {whole} lines)",
        out.display()
    );
    Ok(())
}

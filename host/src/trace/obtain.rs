//! Getting the trace `async-lab trace` reads: the `--replay` file's, or a program's, run under the injection
//! library and written to `--out`; refused where a process could not have CUPTI.

use super::{spawn, TraceArgs};
use crate::trace::{conflicts, source, symbolize};
use anyhow::{bail, Context as _};
use async_lab_core::trace::format::{stored, Failure, Trace};
use spawn::NoCupti;

/// The trace: the `--replay` file's, or the program's, run under the injection library; and whether the
/// program succeeded (a replay's did).
pub(super) fn obtain(args: &TraceArgs) -> anyhow::Result<(Trace, bool)> {
    match (&args.replay, args.program.first()) {
        (Some(path), _) => {
            let (trace, note) = Trace::load_noting(path)?;
            if let Some(note) = note {
                eprintln!("async-lab: {note}");
            }
            Ok((trace, true))
        }
        (None, Some(program)) => trace_program(args, program),
        (None, None) => bail!("give a program to trace (`async-lab trace -- PROGRAM ARGS`) or --replay FILE"),
    }
}

/// Runs `program` (with the rest of `args.program`) under the injection library, writes its trace to
/// `--out`, and reads it back; and whether the program succeeded.
fn trace_program(args: &TraceArgs, program: &str) -> anyhow::Result<(Trace, bool)> {
    let cupti = spawn::cupti(args.cupti.as_deref(), program)?;
    let preload_cupti = spawn::preloads_cupti(cupti.source);
    let inject = spawn::injection_library()?;
    spawn::no_other_injection(&inject)?;
    // The driver and the injection library open these from the program's own folder: absolute paths.
    let cupti = std::fs::canonicalize(&cupti.path)
        .with_context(|| format!("CUPTI at {} cannot be opened", cupti.path.display()))?;
    let inject = std::fs::canonicalize(&inject)
        .with_context(|| format!("the injection library at {} cannot be opened", inject.display()))?;
    let options = spawn::Options {
        all_calls: args.all_calls,
        all_records: args.all_records,
        all_kernels: args.all_kernels,
        keep_over_ns: args.min_held.as_nanos() as u64,
        locate_over_ns: args.locate_over.max(args.min_held).as_nanos() as u64,
        yield_cupti: args.yield_cupti,
    };
    let mut ran = spawn::run(program, &args.program[1..], &inject, (&cupti, preload_cupti), options)?;
    // The native frames of held calls get their functions and lines from the files they are in,
    // now that the program is done (it paid for the addresses alone).
    ran.text = symbolize::text(&ran.text);
    // And the text of the program's own lines they were made at, for a replay without the files.
    ran.text = source::text(&ran.text);
    if ran.processes == 0 {
        bail!(
            "{program} {} and no process of it loaded the injection library: it initialized no CUDA, or a \
             tool inside it (compute-sanitizer, nsys) put its own injection library in its place",
            status_words(&ran.status)
        );
    }
    stored::write(&args.out, &ran.text).with_context(|| format!("writing {}", args.out.display()))?;
    let trace = Trace::parse(&ran.text).context("the trace the program wrote is not readable")?;
    eprintln!(
        "async-lab: {program} {}; trace of {} process{} written to {}",
        status_words(&ran.status),
        ran.processes,
        if ran.processes == 1 { "" } else { "es" },
        args.out.display()
    );
    for line in conflicts::words(&trace) {
        eprintln!("async-lab: {line}");
    }
    Ok((trace, ran.status.success()))
}

/// The error of a trace in which a process could not have CUPTI, where one could not.
pub(super) fn refuse_without_cupti(trace: &Trace) -> Result<(), NoCupti> {
    for p in &trace.processes {
        if let Some((failure, message)) = &p.failure {
            let what = match failure {
                Failure::CuptiMissing => "CUPTI could not be loaded",
                Failure::CuptiTaken => "CUPTI is taken",
                Failure::CuptiError => "CUPTI failed",
            };
            return Err(NoCupti(format!("{what} in process {}: {message}", p.pid)));
        }
    }
    Ok(())
}

fn status_words(s: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(0), _) => "exited with status 0".into(),
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "ended".into(),
    }
}

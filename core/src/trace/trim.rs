//! A trace cut down to what some of its calls need, so that a long run's trace can be kept small: the calls
//! (with the driver calls made inside them), their GPU work and synchronization records (and the records of
//! the events they waited for), the GPU work under way while they ran and the calls other threads had in
//! flight when they began (found with the same lookups `Program::scene` makes), and every resource event.
//! Those are all that [`Program::scene`] reads for a call, so each kept call is classified and explained from
//! the cut trace exactly as from the whole one (a test checks it).
//!
//! `async-lab trace --replay FILE --against REF --keep-matched OUT` writes the calls that `--against` matched;
//! `recordings/` keeps traces cut this way where the whole one would be too large.

use super::analysis::Analysis;
use super::format::{header, Line, ProcessTrace, Trace};
use super::scene::Program;
use super::timed_calls::{locate, Timed};
use std::collections::HashSet;

/// A trace (its processes, each analysed) with, in each process, only what the calls [`locate`] finds there
/// for `timed` need; and how many calls that is.
pub fn matched(analyses: &[Analysis], timed: &[Timed]) -> (Trace, usize) {
    cut_each(analyses, |_, program| locate(timed, program).into_iter().map(|(_, i)| i).collect())
}

/// A trace (its processes, each analysed) with, in each process, only what the calls `keep` picks need (`keep`
/// is asked of each call of each process's program, with the process); and how many calls that is. A trace of a program we did not write
/// is kept this way: the calls that held their thread longer than the tables show, and those inside the
/// program's own steps (`async-lab trace --keep-held`).
pub fn calls_where(analyses: &[Analysis], keep: impl Fn(&ProcessTrace, &Program, usize) -> bool) -> (Trace, usize) {
    cut_each(analyses, |p, program| (0..program.calls.len()).filter(|&i| keep(p, program, i)).collect())
}

/// Each analysed process cut to the calls `pick` names (indexes into its program's calls); and how many calls
/// that is.
fn cut_each(analyses: &[Analysis], pick: impl Fn(&ProcessTrace, &Program) -> Vec<usize>) -> (Trace, usize) {
    let mut calls = 0;
    let processes = analyses
        .iter()
        .map(|a| {
            let kept = pick(a.process, &a.program);
            calls += kept.len();
            cut(a.process, &a.program, &kept)
        })
        .collect();
    (Trace { processes }, calls)
}

/// `p` with only what its calls `keep` (indexes into `program`'s calls, `program` made from `p`) need.
fn cut(p: &ProcessTrace, program: &Program, keep: &[usize]) -> ProcessTrace {
    let mut corrs: HashSet<u32> = HashSet::new();
    let mut work: HashSet<(u32, i64, i64)> = HashSet::new();
    for k in keep.iter().filter_map(|&i| program.calls.get(i)) {
        corrs.extend(&k.corrs);
        // What the attribution may count as holders: other threads' calls in flight when it began, and the GPU
        // work under way while it ran.
        for other in program.calls_at(k.span.start).filter(|o| o.tid != k.tid) {
            corrs.extend(&other.corrs);
        }
        work.extend(program.work_during(k.span).map(|w| (w.corr, w.span.start, w.span.end)));
    }
    let waited: HashSet<u32> = p
        .lines
        .iter()
        .filter_map(|l| match l {
            Line::Sync { corr, event: Some(e), .. } if corrs.contains(corr) => Some(*e),
            _ => None,
        })
        .collect();
    let lines = p
        .lines
        .iter()
        .filter(|line| match line {
            Line::Api { corr, .. }
            | Line::Sync { corr, .. }
            | Line::Location { corr, .. }
            | Line::SameLocation { corr, .. }
            | Line::Ahead { corr, .. } => corrs.contains(corr),
            // The records of the events a kept wait waited for: the stream it waited for is one of them.
            Line::Event { event, .. } => waited.contains(event),
            // The driver's overheads inside a kept call (its lazy load, its wait for room in the queue).
            Line::Overhead { corr, .. } => corr.is_none_or(|c| corrs.contains(&c)),
            Line::Memcpy { corr, start, end, .. }
            | Line::Memset { corr, start, end, .. }
            | Line::Kernel { corr, start, end, .. } => {
                corrs.contains(corr) || work.contains(&(*corr, *start as i64, *end as i64))
            }
            Line::Header { .. } => false,
            Line::Resource { .. }
            | Line::Dropped { .. }
            | Line::Error { .. }
            | Line::End { .. }
            | Line::Setup { .. }
            | Line::Nvtx { .. }
            | Line::DefaultStreams { .. }
            | Line::Thread { .. }
            | Line::Conflict { .. }
            | Line::Signal { .. }
            | Line::Source { .. }
            | Line::RecordKinds { .. }
            | Line::KernelWindow { .. }
            | Line::Note { .. }
            | Line::Counts { .. } => true,
        })
        .cloned()
        .collect();
    ProcessTrace { lines, ..p.clone() }
}

/// The trace as JSON lines, the format `Trace::parse` reads: each process's header, then its lines.
pub fn to_text(trace: &Trace) -> String {
    let mut out = String::new();
    for p in &trace.processes {
        let head = header(p.pid, p.program.clone(), p.cupti_version);
        for line in std::iter::once(&head).chain(&p.lines) {
            // A `Line` is plain data (strings and numbers): it always serializes.
            out.push_str(&serde_json::to_string(line).unwrap_or_default());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::calls;
    use crate::trace::format::cupti_kinds::{copy, memory};
    use crate::trace::format::Domain;

    fn api(name: &str, tid: u64, corr: u32, start: u64, end: u64) -> Line {
        Line::Api { domain: Domain::Runtime, name: name.into(), cbid: 0, tid, corr, start, end }
    }

    fn kernel(corr: u32, start: u64, end: u64) -> Line {
        Line::Kernel { name: "k".into(), start, end, stream: 7, corr }
    }

    /// A blocker kernel, a copy queued behind it (the call to keep), calls before and after it, another
    /// thread's call in flight, a kernel of its own far away.
    fn trace() -> Trace {
        let mut lines = vec![
            api("cudaLaunchKernel", 1, 1, 0, 5_000),
            kernel(1, 10_000, 20_000_000),
            api("cudaMalloc", 2, 2, 1_000, 30_000_000),
            api("cudaMemcpyAsync", 1, 3, 100_000, 20_050_000),
            Line::Api {
                domain: Domain::Driver,
                name: "cuMemcpyAsync".into(),
                cbid: 0,
                tid: 1,
                corr: 4,
                start: 100_500,
                end: 20_049_000,
            },
            Line::Memcpy {
                copy_kind: copy::DTOH,
                src_kind: memory::DEVICE,
                dst_kind: memory::PAGEABLE,
                bytes: 1 << 20,
                start: 20_000_500,
                end: 20_040_000,
                stream: 7,
                corr: 4,
            },
            api("cudaLaunchKernel", 1, 5, 40_000_000, 40_005_000),
            kernel(5, 40_010_000, 41_000_000),
            Line::End { t: 50_000_000 },
        ];
        lines.insert(0, Line::Resource { event: crate::trace::format::Resource::ModuleLoaded, t: 1, tid: 1 });
        Trace {
            processes: vec![ProcessTrace {
                pid: 9,
                program: vec!["p".into()],
                cupti_version: Some(1),
                lines,
                ..Default::default()
            }],
        }
    }

    #[test]
    fn a_kept_call_is_classified_and_explained_from_the_cut_trace_as_from_the_whole() {
        let whole = trace();
        let p = Program::of(&whole.processes[0]);
        let copy = p.calls.iter().position(|c| c.name == "cudaMemcpyAsync").unwrap();
        let cut = Trace { processes: vec![super::cut(&whole.processes[0], &p, &[copy])] };
        let q = Program::of(&cut.processes[0]);
        let copy_cut = q.calls.iter().position(|c| c.name == "cudaMemcpyAsync").unwrap();
        assert_eq!(calls::traced(&p, copy).class, calls::traced(&q, copy_cut).class);
        assert_eq!(calls::traced(&p, copy).held, calls::traced(&q, copy_cut).held);
        assert_eq!(p.scene(copy), q.scene(copy_cut));
        // The first launch's kernel (a holder) and the other thread's call stay; the last launch and its kernel go.
        let names: Vec<&str> = q.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["cudaMalloc", "cudaMemcpyAsync"]);
        assert_eq!(q.work.len(), 2);
        assert_eq!(q.calls[copy_cut].inner, ["cuMemcpyAsync"]);
        assert_eq!(q.module_loads.len(), 1);
        assert!(!cut.processes[0].partial && matches!(cut.processes[0].lines.last(), Some(Line::End { .. })));
    }

    #[test]
    fn the_cut_trace_reads_back_as_written() {
        let whole = trace();
        let p = Program::of(&whole.processes[0]);
        let cut = Trace { processes: vec![super::cut(&whole.processes[0], &p, &[1])] };
        let text = to_text(&cut);
        assert_eq!(Trace::parse(&text).unwrap(), cut);
        assert_eq!(Trace::parse(&to_text(&whole)).unwrap(), whole);
        // No call to keep: the header and the end, nothing else.
        let empty = super::cut(&whole.processes[0], &p, &[]);
        assert!(empty.lines.iter().all(|l| matches!(l, Line::Resource { .. } | Line::End { .. })));
    }
}

//! The runtime's worker threads as helpers of the program's own Python threads: in a process that runs Python,
//! a thread that runs none (PyTorch's autograd thread, XLA's threads) makes CUDA calls for the Python thread
//! whose lines its calls are placed at (`waiting`), and the headline's verdict is about the program's own
//! threads, with their helpers' time counted where the trace shows the Python thread waited for it: a helper's
//! held call placed at a line the Python thread was waiting at, outside any CUDA call of its own, when the call
//! returned (`location::ViaHow::Waiting`, format 5).

use super::analysis::Analysis;
use super::location::ViaHow;
use crate::attribution::{Cause, Span};
use std::collections::BTreeMap;

/// Each helper thread (a thread that runs no Python in a process whose Python threads the trace tells), and
/// the Python thread it works for where the trace says: the thread most of its placed calls were placed
/// through, else the main thread where it runs Python.
pub fn helpers(a: &Analysis) -> BTreeMap<u64, Option<u64>> {
    let mut counts: BTreeMap<u64, BTreeMap<u64, usize>> = BTreeMap::new();
    for (c, place) in a.program.calls.iter().zip(&a.places) {
        if !a.locations.runs_no_python(c.tid) {
            continue;
        }
        let by = counts.entry(c.tid).or_default();
        if let Some(via) = &place.via {
            *by.entry(via.thread).or_default() += 1;
        }
    }
    let main = u64::from(a.process.pid);
    let main_runs_python = a.program.calls.iter().any(|c| c.tid == main) && !a.locations.runs_no_python(main);
    counts
        .into_iter()
        .map(|(tid, by)| {
            let most = by.into_iter().max_by_key(|&(t, n)| (n, std::cmp::Reverse(t))).map(|(t, _)| t);
            (tid, most.or(main_runs_python.then_some(main)))
        })
        .collect()
}

/// How long thread `tid` waited, outside its own CUDA calls, while its helpers' held calls among `calls`
/// (indexes into the program's calls) ran: those placed at a line it was waiting at when they returned. By
/// cause (what held the helper), each moment counted once.
pub fn waited_for(a: &Analysis, tid: u64, calls: &[usize]) -> BTreeMap<Cause, i64> {
    let p = &a.program;
    // Its own calls' spans, in order, merged: it was inside a call of its own then.
    let mut own: Vec<Span> = p.calls.iter().filter(|c| c.tid == tid).map(|c| c.span).collect();
    own.sort_by_key(|s| s.start);
    let own = merged(own);
    let mut segments: Vec<(Span, Cause)> = calls
        .iter()
        .filter(|&&i| {
            let via = a.places[i].via.as_ref();
            via.is_some_and(|v| v.thread == tid && v.how == ViaHow::Waiting) && !a.traced[i].class.returns_at_once()
        })
        .flat_map(|&i| a.traced[i].held.segments.iter().map(|s| (s.span, s.cause)))
        .collect();
    segments.sort_by_key(|(s, _)| s.start);
    let mut by: BTreeMap<Cause, i64> = BTreeMap::new();
    let mut covered = i64::MIN;
    for (s, cause) in segments {
        let from = s.start.max(covered);
        if from >= s.end {
            continue;
        }
        let piece = Span::new(from, s.end);
        covered = s.end;
        let inside: i64 = own[own.partition_point(|o| o.end <= piece.start)..]
            .iter()
            .take_while(|o| o.start < piece.end)
            .map(|o| o.overlap(&piece))
            .sum();
        let ns = piece.len() - inside;
        if ns > 0 {
            *by.entry(cause).or_default() += ns;
        }
    }
    by
}

/// Sorted spans merged where they overlap.
fn merged(spans: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for s in spans {
        match out.last_mut() {
            Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
            _ => out.push(s),
        }
    }
    out
}

//! A measuring program's timed calls found in a trace of it: async-lab's own repetitions
//! (`against_recording`) or the C++ reference's (`against_reference`), each given as its start and length on
//! the program's clock (`CLOCK_MONOTONIC`), the function it called and which repetition it was.
//!
//! The program's clock and CUPTI's differ by an offset, found as the one most repetitions agree on (among
//! the trace's calls of the same name and about the same length), then followed from repetition to
//! repetition; a call that starts within [`WINDOW_NS`] of where the offset puts it, with the same name, is
//! that repetition's call, the nearest one where there are several. A process's section is searched for each
//! repetition (the lab runs some cases in child processes).

use super::analysis::Analysis;
use super::scene::Program;
use crate::classify::Class;
use std::collections::HashMap;

/// How far from where the offset puts it a repetition's call may start.
pub const WINDOW_NS: i64 = 100_000;
/// The width of the window the offsets are first counted in.
const COARSE_NS: i64 = 20_000;
/// The width of the window the offset is then taken from, inside the first: about how much the time from
/// the program's clock reading to CUPTI's varies from call to call.
const FINE_NS: i64 = 2_000;

/// (case, repetition), in the measuring program's own order.
pub type Key = (usize, usize);

/// One timed call as the measuring program saw it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timed<'a> {
    /// Its start on the program's clock, in ns.
    pub start_ns: i64,
    /// Its length as the program timed it, in ns.
    pub len_ns: i64,
    /// The function it called, as the program names it (compared by [`base_name`]).
    pub call: &'a str,
    pub key: Key,
}

/// The leading identifier of a call as the lab names it (`cudaMemcpyAsync(Default)`) or CUPTI does
/// (`cuMemcpyHtoDAsync_v2`, `cudaLaunchKernel_ptsz`): `cudaMemcpyAsync`, `cuMemcpyHtoDAsync`.
pub fn base_name(name: &str) -> &str {
    let ident = name.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').next().unwrap_or(name);
    for suffix in ["_ptsz", "_ptds", "_v2", "_v3"] {
        if let Some(stem) = ident.strip_suffix(suffix) {
            return base_name(stem);
        }
    }
    ident
}

/// Each timed call that `p` holds: (its key, the call's index in `p.calls`).
pub fn locate(timed: &[Timed], p: &Program) -> Vec<(Key, usize)> {
    let mut by_name: HashMap<&str, Vec<(i64, usize)>> = HashMap::new();
    for (i, c) in p.calls.iter().enumerate() {
        by_name.entry(base_name(&c.name)).or_default().push((c.span.start, i));
    }
    for v in by_name.values_mut() {
        v.sort_unstable();
    }
    let mut order: Vec<&Timed> = timed.iter().collect();
    order.sort_by_key(|t| (t.start_ns, t.key));
    // Every offset that would put a repetition on a call of the same name and about the same length.
    let mut votes: Vec<i64> = Vec::new();
    for t in &order {
        for &(start, i) in by_name.get(base_name(t.call)).into_iter().flatten() {
            let len = p.calls[i].span.len();
            if (len - t.len_ns).abs() <= (t.len_ns / 10).max(10_000) {
                votes.push(start - t.start_ns);
            }
        }
    }
    let Some(mut offset) = agreed_offset(&mut votes) else {
        return vec![];
    };
    let mut out = Vec::new();
    for t in order {
        let Some(cands) = by_name.get(base_name(t.call)) else { continue };
        let at = t.start_ns + offset;
        let lo = cands.partition_point(|&(s, _)| s < at - WINDOW_NS);
        let best = cands[lo..].iter().take_while(|&&(s, _)| s <= at + WINDOW_NS).min_by_key(|&&(s, _)| (s - at).abs());
        if let Some(&(s, i)) = best {
            offset = s - t.start_ns;
            out.push((t.key, i));
        }
    }
    out
}

/// The offset most votes agree on: the [`COARSE_NS`] window that holds the most, then inside it the median
/// of the [`FINE_NS`] window that holds the most (a call of the same name made just before each timed one,
/// such as the blocker's launch before a timed launch, votes for an offset a few µs off). Ties go to the
/// smaller offset.
fn agreed_offset(votes: &mut [i64]) -> Option<i64> {
    votes.sort_unstable();
    let (lo, hi) = densest(votes, COARSE_NS)?;
    let inner = &votes[lo..hi];
    let (a, b) = densest(inner, FINE_NS)?;
    Some(inner[a + (b - a) / 2])
}

/// The first of the windows `[lo, hi)` of sorted `v` no wider than `width` that hold the most values.
fn densest(v: &[i64], width: i64) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    let mut lo = 0;
    for hi in 0..v.len() {
        while v[hi] - v[lo] > width {
            lo += 1;
        }
        if best.is_none_or(|(a, b)| hi + 1 - lo > b - a) {
            best = Some((lo, hi + 1));
        }
    }
    best
}

/// The tracer's class of each timed call a trace's processes (each analysed) hold, the first process that
/// holds it deciding.
pub fn traced_classes(timed: &[Timed], analyses: &[Analysis]) -> HashMap<Key, Class> {
    let mut out = HashMap::new();
    for a in analyses {
        for (key, call) in locate(timed, &a.program) {
            // Set beside a measuring program's classes, `driver-work` is the lab's `async` (`driver_work`).
            out.entry(key).or_insert_with(|| super::driver_work::as_lab(a.traced[call].class));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_by_their_leading_identifier() {
        assert_eq!(base_name("cudaMemcpyAsync(Default)"), "cudaMemcpyAsync");
        assert_eq!(base_name("cuMemcpyHtoDAsync_v2"), "cuMemcpyHtoDAsync");
        assert_eq!(base_name("cudaLaunchKernel_ptsz"), "cudaLaunchKernel");
        assert_eq!(base_name("cudaFree(0)"), "cudaFree");
        assert_eq!(base_name("cuMemcpyAsync_ptsz"), "cuMemcpyAsync");
    }

    #[test]
    fn the_offset_is_the_one_most_votes_agree_on_to_the_microsecond() {
        // Ten repetitions at +1.0 ms (± 0.3 µs), seven calls made 6 µs before theirs, strays.
        let mut votes: Vec<i64> = (0..10).map(|i| 1_000_000 + (i % 3) * 150).collect();
        votes.extend((0..7).map(|i| 994_000 + i * 100));
        votes.extend([5_000, 2_000_000, -40_000]);
        let offset = agreed_offset(&mut votes).unwrap();
        assert!((offset - 1_000_000).abs() <= 300, "{offset}");
        assert_eq!(agreed_offset(&mut []), None);
    }
}

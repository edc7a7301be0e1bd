//! A call with no location of its own (held less than the location threshold, or past the location budget)
//! placed where the same call site was placed, so that one line of the program is one row: a loop's `.item()`
//! held 0.8 ms one step and 1.2 ms the next is one synchronization at its line, not one at its line and one at
//! "cudaStreamSynchronize".
//!
//! The same call site: the same thread, the same API function, the same NVTX range (its numbers folded:
//! `batch-#`), the same GPU work of its own (a kernel by its name, a copy by its direction, memory kinds and
//! size, a memset by its size) in the same stream, and the same cause (its class, and what released it).
//! Only a place the trace shows is taken over: a call's own line (its Python or native frames), or the Python
//! line a thread was waiting at while a thread that runs no Python made it (`waiting`'s first two rules);
//! never a place itself taken over, nor a thread's latest call before. The nearest such call before it is
//! taken, else the nearest after it, and the place says which (`location::Inferred`).

use super::calls::Traced;
use super::location::{Inferred, Kind, Locations, Place, ViaHow};
use super::records::WorkKind;
use super::scene::Program;
use super::words::fold;
use std::collections::HashMap;

/// Places the calls of `p` that have no location of their own (and no place through a waiting thread) as the
/// same call site was placed, in `places` (indexed as `p.calls`; `traced` classifies them, indexed alike).
pub fn infer(l: &Locations, p: &Program, traced: &[Traced], places: &mut [Place]) {
    let calls = &p.calls;
    // The calls a place can be taken from, by call site, in the order they began (`calls` is).
    let mut sources: HashMap<String, Vec<usize>> = HashMap::new();
    let mut targets: Vec<usize> = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let place = &places[i];
        let shown = match &place.via {
            Some(via) => via.how != ViaHow::Before,
            None => l.located(c) && matches!(place.kind, Kind::Python | Kind::Native),
        };
        if shown {
            sources.entry(site(l, p, traced, i)).or_default().push(i);
        } else if place.via.is_none() && !l.located(c) {
            targets.push(i);
        }
    }
    if sources.is_empty() {
        return;
    }
    for i in targets {
        let Some(same) = sources.get(&site(l, p, traced, i)) else { continue };
        let start = calls[i].span.start;
        let before = same.partition_point(|&j| calls[j].span.start < start);
        let (j, earlier) = match before.checked_sub(1) {
            Some(k) => (same[k], true),
            None => (same[0], false),
        };
        let own_range = places[i].nvtx.clone().or_else(|| {
            (places[i].kind == Kind::Nvtx).then(|| places[i].words.trim_start_matches("nvtx: ").to_owned())
        });
        places[i] =
            Place { inferred: Some(Inferred { corr: calls[j].corr, earlier }), nvtx: own_range, ..places[j].clone() };
    }
}

/// Call `i`'s call site, as a key (see the module's doc).
fn site(l: &Locations, p: &Program, traced: &[Traced], i: usize) -> String {
    let c = &p.calls[i];
    let range = l.frames(c).nvtx.iter().find(|r| !r.name.is_empty()).map(|r| fold(&r.name)).unwrap_or_default();
    let work: Vec<String> = p
        .own_work(i)
        .iter()
        .map(|w| match &w.kind {
            WorkKind::Kernel { name } => format!("kernel {name} on {}", w.stream),
            WorkKind::Copy { copy_kind, src_kind, dst_kind } => {
                format!("copy {copy_kind} {src_kind}→{dst_kind} {}B on {}", w.bytes, w.stream)
            }
            WorkKind::Memset => format!("memset {}B on {}", w.bytes, w.stream),
        })
        .collect();
    let t = &traced[i];
    let released = t.held.released_by().map_or("", |s| s.cause.slug());
    format!("{}|{}|{range}|{}|{:?}|{}|{released}", c.tid, c.name, work.join(","), p.stream_of(i), t.class.as_str())
}

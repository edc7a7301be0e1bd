//! A call of a thread that runs no Python, in a process that does (PyTorch's autograd threads, JAX's runtime
//! threads), placed at the Python line that was waiting for its work, where the trace can tell: a call of a
//! Python thread under way for the whole of it (the main thread inside `loss.backward()`'s synchronization
//! while the autograd thread launches), else the latest located call of a Python thread that began before it.
//! A process with no located Python call leaves such a call at its own place (its native frames, its NVTX
//! range, its API function).

use super::location::{Kind, Locations, Place, Via, ViaHow};
use super::scene::Call;

/// Every call's place, indexed as `calls`: its own (`Locations::place`), or for a thread that runs no Python,
/// the Python line that waited for it where the trace tells.
pub fn places(l: &Locations, calls: &[Call]) -> Vec<Place> {
    let own: Vec<Place> = calls.iter().map(|c| l.place(c)).collect();
    placed(l, calls, own)
}

/// `places` (each call's own, indexed as `calls`) with the calls of threads that run no Python placed at the
/// Python line that waited for them.
fn placed(l: &Locations, calls: &[Call], mut places: Vec<Place>) -> Vec<Place> {
    // The calls of Python threads placed at a Python line, by when they began.
    let mut python: Vec<usize> =
        (0..calls.len()).filter(|&i| places[i].kind == Kind::Python && !l.runs_no_python(calls[i].tid)).collect();
    if python.is_empty() {
        return places;
    }
    python.sort_by_key(|&i| (calls[i].span.start, i));
    // The latest end among the first k of them: a backwards search for a call still under way stops where
    // none of the earlier ones lasted that long.
    let reach: Vec<i64> = python
        .iter()
        .scan(i64::MIN, |most, &i| {
            *most = (*most).max(calls[i].span.end);
            Some(*most)
        })
        .collect();
    for (i, c) in calls.iter().enumerate() {
        if !l.runs_no_python(c.tid) {
            continue;
        }
        let began = python.partition_point(|&j| calls[j].span.start <= c.span.start);
        let containing = (0..began)
            .rev()
            .take_while(|&k| reach[k] >= c.span.end)
            .map(|k| python[k])
            .find(|&j| calls[j].span.end >= c.span.end);
        let (j, how) = match containing {
            Some(j) => (j, ViaHow::Containing),
            None if began > 0 => (python[began - 1], ViaHow::Before),
            None => continue,
        };
        let from = &places[j];
        let who = if calls[j].tid == u64::from(l.pid()) {
            "main thread".to_owned()
        } else {
            format!("thread {}", calls[j].tid)
        };
        let words = match how {
            ViaHow::Containing => format!("via {who}'s {}", from.words),
            ViaHow::Before => format!("via {who}'s {} (its latest before)", from.words),
        };
        let place = Place {
            kind: Kind::Python,
            words,
            own: from.own,
            text: from.text.clone(),
            chain: from.chain.clone(),
            via: Some(Via { thread: calls[j].tid, corr: calls[j].corr, how }),
            nvtx: places[i].nvtx.clone().or_else(|| (places[i].kind == Kind::Nvtx).then(|| own_range(&places[i]))),
        };
        places[i] = place;
    }
    places
}

/// The name of the NVTX range an NVTX place names.
fn own_range(p: &Place) -> String {
    p.words.strip_prefix("nvtx: ").unwrap_or(&p.words).to_owned()
}

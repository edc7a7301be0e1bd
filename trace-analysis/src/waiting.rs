//! A call of a thread that runs no Python, in a process that does (PyTorch's autograd threads, JAX's runtime
//! threads), placed at the Python line that was waiting for its work, where the trace tells:
//! 1. a Python thread inside a CUDA call of its own for the whole of it (the main thread inside
//!    `loss.backward()`'s synchronization while the autograd thread launches): [`ViaHow::Containing`];
//! 2. a Python thread that, when the call returned, held no GIL and was at a line of the program outside any
//!    idle wait (a lock, a queue, a selector, a pipe: a `DataLoader`'s pin-memory thread, an idle thread
//!    pool), read from every Python thread's frames then (format 5, `Line::Location`'s `others`): the main
//!    thread at `v = float(loss)` while XLA's thread synchronizes: [`ViaHow::Waiting`];
//!
//! where several threads were, the main thread first, then the thread that made the work (the one whose
//! located call came latest before); else
//! 3. a call without a location of its own, as the same call site was placed (`sites`);
//! 4. else the latest located call of a Python thread that began before it, said as such, with whether the
//!    trace read the Python threads' frames then and saw none waiting: [`ViaHow::Before`].
//!
//! A process with no located Python call leaves such a call at its own place (its native frames, its NVTX
//! range, its API function).

use super::calls::Traced;
use super::format::{PyFrame, ThreadFrames};
use super::library_paths::standard_library;
use super::location::{Kind, Locations, Place, Via, ViaHow, AFTER, WHILE};
use super::scene::{Call, Program};
use super::threads::Names;

/// Every call's place, indexed as `p.calls` (`traced` classifies them, indexed alike): its own
/// (`Locations::place`), or for a thread that runs no Python, the Python line that waited for it where the
/// trace tells; a call without a location of its own where the same call site was placed (`sites`).
pub fn places(l: &Locations, p: &Program, traced: &[Traced]) -> Vec<Place> {
    let calls = &p.calls;
    let mut places: Vec<Place> = calls.iter().map(|c| l.place(c)).collect();
    let python = PythonCalls::of(l, calls, &places);
    let helpers: Vec<usize> = (0..calls.len()).filter(|&i| l.runs_no_python(calls[i].tid)).collect();
    for &i in &helpers {
        if let Some(place) = python.waiting(l, p, i, &places) {
            places[i] = place;
        }
    }
    super::sites::infer(l, p, traced, &mut places);
    if python.calls.is_empty() {
        return places;
    }
    for &i in &helpers {
        if places[i].via.is_none() && places[i].inferred.is_none() {
            if let Some(place) = python.before(l, p, i, &places) {
                places[i] = place;
            }
        }
    }
    places
}

/// The calls of Python threads placed at a Python line, by when they began.
struct PythonCalls {
    /// Indexes into the program's calls, by start.
    calls: Vec<usize>,
    /// The latest end among the first k of them: a backwards search for a call still under way stops where
    /// none of the earlier ones lasted that long.
    reach: Vec<i64>,
}

impl PythonCalls {
    fn of(l: &Locations, calls: &[Call], places: &[Place]) -> PythonCalls {
        let mut python: Vec<usize> =
            (0..calls.len()).filter(|&i| places[i].kind == Kind::Python && !l.runs_no_python(calls[i].tid)).collect();
        python.sort_by_key(|&i| (calls[i].span.start, i));
        let reach = python
            .iter()
            .scan(i64::MIN, |most, &i| {
                *most = (*most).max(calls[i].span.end);
                Some(*most)
            })
            .collect();
        PythonCalls { calls: python, reach }
    }

    /// How many of them began no later than `t`.
    fn began_by(&self, calls: &[Call], t: i64) -> usize {
        self.calls.partition_point(|&j| calls[j].span.start <= t)
    }

    /// Call `i`'s place through a Python thread that waited while it ran (rules 1 and 2 of the module's doc).
    fn waiting(&self, l: &Locations, p: &Program, i: usize, places: &[Place]) -> Option<Place> {
        let calls = &p.calls;
        let c = &calls[i];
        let began = self.began_by(calls, c.span.start);
        // Each thread's call under way for the whole of this one (the latest begun first).
        let mut waits: Vec<Wait> = Vec::new();
        for k in (0..began).rev().take_while(|&k| self.reach[k] >= c.span.end) {
            let j = self.calls[k];
            if calls[j].span.end >= c.span.end && !waits.iter().any(|w| w.thread == calls[j].tid) {
                waits.push(Wait { thread: calls[j].tid, corr: Some(calls[j].corr), place: places[j].clone() });
            }
        }
        // Each thread waiting outside a call of its own when this one returned.
        let outside: Vec<Wait> = l
            .others(c)
            .iter()
            .filter(|o| waited(o) && !waits.iter().any(|w| w.thread == o.tid))
            .filter_map(|o| Some(Wait { thread: o.tid, corr: None, place: l.python_place(&o.python)? }))
            .collect();
        waits.extend(outside);
        let maker = began.checked_sub(1).map(|k| calls[self.calls[k]].tid);
        let chosen = waits
            .iter()
            .find(|w| p.threads.is_main(w.thread))
            .or_else(|| waits.iter().find(|w| Some(w.thread) == maker))
            .or_else(|| waits.first())?;
        let how = if chosen.corr.is_some() { ViaHow::Containing } else { ViaHow::Waiting };
        let words = format!("{WHILE}{} waited at {}", the(&p.threads, chosen.thread), chosen.place.words);
        let via = Via { thread: chosen.thread, corr: chosen.corr, how, none_waiting: false };
        Some(through(&chosen.place, words, via, &places[i]))
    }

    /// Call `i`'s place at the latest located call of a Python thread that began before it (rule 4).
    fn before(&self, l: &Locations, p: &Program, i: usize, places: &[Place]) -> Option<Place> {
        let calls = &p.calls;
        let c = &calls[i];
        let j = self.calls[self.began_by(calls, c.span.start).checked_sub(1)?];
        // The trace read every Python thread's frames when the call returned, and none was waiting.
        let none_waiting = !l.others(c).is_empty();
        let note = if none_waiting { " (no Python thread was waiting)" } else { "" };
        let words =
            format!("{AFTER}the latest call of {}, at {}{note}", the(&p.threads, calls[j].tid), places[j].words);
        let via = Via { thread: calls[j].tid, corr: Some(calls[j].corr), how: ViaHow::Before, none_waiting };
        Some(through(&places[j], words, via, &places[i]))
    }
}

/// A Python thread that waited while a call ran: its call (none where it waited outside one) and its place.
struct Wait {
    thread: u64,
    corr: Option<u32>,
    place: Place,
}

/// Thread `tid` in words, with "the" before the main thread: "the main thread (python3)", "pt_autograd_0".
fn the(names: &Names, tid: u64) -> String {
    let who = names.who(tid);
    if names.is_main(tid) {
        format!("the {who}")
    } else {
        who
    }
}

/// The place `from` (another thread's) as the place of a call whose own place was `own`, in `words`, `via`.
fn through(from: &Place, words: String, via: Via, own: &Place) -> Place {
    Place {
        kind: Kind::Python,
        words,
        own: from.own,
        text: from.text.clone(),
        chain: from.chain.clone(),
        via: Some(via),
        inferred: None,
        nvtx: own.nvtx.clone().or_else(|| (own.kind == Kind::Nvtx).then(|| own_range(own))),
    }
}

/// The name of the NVTX range an NVTX place names.
fn own_range(p: &Place) -> String {
    p.words.strip_prefix("nvtx: ").unwrap_or(&p.words).to_owned()
}

/// Whether a Python thread's frames read at a moment say it was waiting for something the program needs: it
/// held no GIL (it was in a call that released it), it ran Python, and its innermost frame is not an idle
/// wait.
pub fn waited(o: &ThreadFrames) -> bool {
    !o.gil && o.python.first().is_some_and(|f| !idle(f))
}

/// The standard library's modules whose calls are a thread's idle wait: a lock or a condition (`threading`),
/// a queue (`queue`, `multiprocessing`'s queues and pipes), a selector or a socket, a thread pool's worker
/// waiting for work.
const IDLE: [&str; 8] = [
    "threading.py",
    "queue.py",
    "selectors.py",
    "socket.py",
    "multiprocessing/connection.py",
    "multiprocessing/queues.py",
    "multiprocessing/synchronize.py",
    "concurrent/futures/thread.py",
];

/// Whether a Python thread's innermost frame is an idle wait: in one of the standard library's [`IDLE`]
/// modules.
pub fn idle(innermost: &PyFrame) -> bool {
    let file = innermost.file.as_str();
    standard_library(file) && IDLE.iter().any(|m| file.ends_with(&format!("/{m}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(file: &str, function: &str) -> PyFrame {
        PyFrame { file: file.into(), line: 1, function: function.into() }
    }

    #[test]
    fn an_idle_wait_is_told_from_a_wait_for_the_gpu() {
        let lib = "/usr/lib/python3.12";
        assert!(idle(&frame(&format!("{lib}/threading.py"), "wait")));
        assert!(idle(&frame(&format!("{lib}/multiprocessing/connection.py"), "poll")));
        assert!(idle(&frame(&format!("{lib}/concurrent/futures/thread.py"), "_worker")));
        assert!(!idle(&frame("/v/lib/python3.12/site-packages/jax/_src/array.py", "__float__")));
        assert!(!idle(&frame("/home/me/train.py", "main")));
        // A program's own file of the same name is not the standard library's.
        assert!(!idle(&frame("/home/me/queue.py", "get")));
        let waiting = |gil, file: &str| ThreadFrames { tid: 1, gil, python: vec![frame(file, "f")] };
        assert!(waited(&waiting(false, "/home/me/train.py")));
        assert!(!waited(&waiting(true, "/home/me/train.py")));
        assert!(!waited(&waiting(false, &format!("{lib}/queue.py"))));
        assert!(!waited(&ThreadFrames { tid: 1, gil: false, python: vec![] }));
    }
}

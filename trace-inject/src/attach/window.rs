//! The recent part of this process's own trace, read back while it runs, for the gate (`attach`): the lines
//! written since the oldest open block began, and the lines every reading needs whenever they were written
//! (the header, the setup line, the default streams' ids). The file is read on from where the last reading
//! stopped, so each byte is parsed once. The held calls a block asks about get the Python frames the Python
//! side took when control came back to it, then go through the same analysis and JSON as
//! `async-lab trace --format json` (`async_lab_trace_analysis::json`).

use async_lab_trace_analysis::analysis::Analysis;
use async_lab_trace_analysis::json::{self, HeldCall};
use async_lab_trace_format::{Gil, KernelRecords, Line, ProcessTrace, PyFrame};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// One held call a block asks about: its correlation id, the Python frames the Python side read for it,
/// innermost first, the block's limit it held past (ns), and what the callback saw of it (its function, how
/// long it held: the words of a call whose lines are not in the trace yet).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Asked {
    pub corr: u32,
    pub python: Vec<PyFrame>,
    pub over_ns: i64,
    pub name: String,
    pub held_ns: i64,
}

/// The answer to a block's question, as JSON: `held_calls`, the entries of the steady state's calls (the
/// JSON report's, each with the gate's `message`); `paid_once`, those of the calls the program pays once
/// (warm-up: the context, loading code, the allocator's growth...), which gate nothing unless `warm_up` asked
/// for them, where they are in `held_calls`; `missing`, each call whose lines are not in the trace yet, by its
/// correlation id and message.
pub fn answer(p: ProcessTrace, asked: &[Asked], warm_up: bool) -> serde_json::Value {
    let (found, missing) = held_calls(p, asked);
    let mut held = Vec::new();
    let mut paid_once = Vec::new();
    for h in found {
        let over = asked.iter().find(|q| q.corr == h.corr).map_or(0, |q| q.over_ns);
        let message = async_lab_trace_analysis::held_message::message(&h, over);
        let once = h.warm_up && !warm_up;
        let mut v = serde_json::to_value(h).unwrap_or_default();
        v["message"] = message.into();
        if once {
            paid_once.push(v);
        } else {
            held.push(v);
        }
    }
    let missing: Vec<serde_json::Value> = missing
        .iter()
        .filter_map(|corr| asked.iter().find(|q| q.corr == *corr))
        .map(|q| {
            let message = async_lab_trace_analysis::held_message::missing(&q.name, q.held_ns, q.over_ns, &q.python);
            serde_json::json!({ "corr": q.corr, "message": message })
        })
        .collect();
    serde_json::json!({ "held_calls": held, "paid_once": paid_once, "missing": missing })
}

/// What has been read of the trace file.
#[derive(Debug)]
pub struct Window {
    path: PathBuf,
    /// Bytes of the file read so far (whole lines).
    scanned: u64,
    /// The header, the setup line and the default streams' lines.
    context: Vec<Line>,
    /// The lines at or after `keep_from`, each with its offset in the file.
    lines: Vec<(u64, Line)>,
    /// The start of each open block (offsets), in the order they began.
    open: Vec<u64>,
}

impl Window {
    pub fn new(path: PathBuf) -> Window {
        Window { path, scanned: 0, context: Vec::new(), lines: Vec::new(), open: Vec::new() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether no block is open.
    pub fn idle(&self) -> bool {
        self.open.is_empty()
    }

    /// The file is now `path`, empty: what was read of the old one is dropped, the context lines kept.
    pub fn moved_to(&mut self, path: PathBuf) {
        self.path = path;
        self.scanned = 0;
        self.lines.clear();
    }

    /// A block begins at `at`, the file's length once every line written before it went out.
    pub fn begin(&mut self, at: u64) -> u64 {
        self.open.push(at);
        at
    }

    /// The block that began at `since` ended: the lines no open block needs are dropped.
    pub fn end(&mut self, since: u64) {
        if let Some(i) = self.open.iter().position(|&s| s == since) {
            self.open.remove(i);
        }
        let keep = self.keep_from();
        self.lines.retain(|(at, _)| *at >= keep);
    }

    /// Where the oldest open block began; past the end where none is open.
    fn keep_from(&self) -> u64 {
        self.open.iter().copied().min().unwrap_or(u64::MAX)
    }

    /// Reads the lines written since the last reading (whole lines only: a line still being written waits for
    /// the next one). A line that is not a trace line is skipped: the file is the writer's own.
    pub fn read(&mut self) -> std::io::Result<()> {
        let mut file = std::fs::File::open(&self.path)?;
        file.seek(SeekFrom::Start(self.scanned))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        self.take(&bytes);
        Ok(())
    }

    /// Reads `bytes`, which follow what was read so far.
    fn take(&mut self, bytes: &[u8]) {
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let keep = self.keep_from();
        let mut at = self.scanned;
        for raw in bytes[..whole].split_inclusive(|&b| b == b'\n') {
            let offset = at;
            at += raw.len() as u64;
            let Ok(line) = serde_json::from_slice::<Line>(raw) else { continue };
            match line {
                Line::Header { .. } | Line::Setup { .. } | Line::DefaultStreams { .. } => self.context.push(line),
                line if offset >= keep => self.lines.push((offset, line)),
                _ => {}
            }
        }
        self.scanned = at;
    }

    /// The process as the lines since `since` show it, with the context lines first; partial (it is running).
    pub fn process(&self, since: u64) -> ProcessTrace {
        let mut p = ProcessTrace { partial: true, ..ProcessTrace::default() };
        for line in &self.context {
            match line {
                Line::Header { pid, program, cupti_version, .. } => {
                    p.pid = *pid;
                    p.program.clone_from(program);
                    p.cupti_version = *cupti_version;
                }
                other => p.lines.push(other.clone()),
            }
        }
        p.lines.extend(self.lines.iter().filter(|(at, _)| *at >= since).map(|(_, l)| l.clone()));
        p
    }
}

/// The entries of the asked calls, as the JSON report gives them, found in `p` with the Python frames given
/// for them; and the correlation ids of those not found (their lines not yet written). A call is found by its
/// own correlation id, else as the longest call a driver call of that id was made in; one the trace shows held
/// no longer than the block's limit is not the call the callback listed, and reads as not found, so that no
/// call under the limit is ever reported past it.
pub fn held_calls(mut p: ProcessTrace, asked: &[Asked]) -> (Vec<HeldCall>, Vec<u32>) {
    with_python_frames(&mut p, asked);
    let a = Analysis::of(&p);
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for q in asked {
        let calls = &a.program.calls;
        let own = a.traced.iter().find(|t| calls[t.index].corr == q.corr);
        let inside =
            || a.traced.iter().filter(|t| calls[t.index].corrs.contains(&q.corr)).max_by_key(|t| t.held.total_ns);
        match own.or_else(inside).filter(|t| t.held.total_ns > q.over_ns) {
            Some(t) => found.push(json::held_call(&a, t)),
            None => missing.push(q.corr),
        }
    }
    (found, missing)
}

/// Whether the asked calls that enqueue GPU work with a record of its own (a copy, a memset, a kernel's launch:
/// the function table's `enqueues_with_record`; not a graph's or a host function's launch, whose records may
/// never come) have their GPU records in `p`: CUPTI hands a record over once its work has ended, and a copy
/// staged through pageable memory may still be moving its last piece when its call returns.
pub fn records_in(p: &ProcessTrace, asked: &[Asked]) -> bool {
    // A launch has a record to wait for only where every kernel is recorded (`--all-kernels`, or a trace
    // without a `record-kinds` line); by default kernels are recorded in windows only.
    let kernels =
        !p.lines.iter().any(|l| matches!(l, Line::RecordKinds { kernels, .. } if *kernels != KernelRecords::All));
    let enqueues = |name: &str| {
        use async_lab_trace_format::functions::{does, Does};
        match does(name) {
            Does::Copies | Does::Sets => true,
            Does::LaunchesKernel => kernels,
            _ => false,
        }
    };
    let calls: Vec<(u32, bool)> = p
        .lines
        .iter()
        .filter_map(|l| match l {
            Line::Api { corr, name, .. } => Some((*corr, enqueues(name))),
            _ => None,
        })
        .collect();
    let has_record = |corr: u32| {
        p.lines.iter().any(|l| match l {
            Line::Memcpy { corr: c, .. } | Line::Memset { corr: c, .. } | Line::Kernel { corr: c, .. } => *c == corr,
            _ => false,
        })
    };
    asked.iter().all(|q| !calls.iter().any(|&(c, e)| c == q.corr && e) || has_record(q.corr))
}

/// Gives each asked call the Python frames the Python side read, where the trace's own location of the call
/// has none (its thread did not hold the GIL); its native frames stay.
fn with_python_frames(p: &mut ProcessTrace, asked: &[Asked]) {
    for q in asked.iter().filter(|q| !q.python.is_empty()) {
        let existing = p.lines.iter_mut().find_map(|l| match l {
            Line::Location { corr, python, .. } if *corr == q.corr => Some(python),
            _ => None,
        });
        match existing {
            Some(python) if python.is_empty() => python.clone_from(&q.python),
            Some(_) => {}
            None => {
                let tid = p.lines.iter().find_map(|l| match l {
                    Line::Api { corr, tid, .. } if *corr == q.corr => Some(*tid),
                    _ => None,
                });
                p.lines.push(Line::Location {
                    tid: tid.unwrap_or(0),
                    corr: q.corr,
                    gil: Gil::Held,
                    python: q.python.clone(),
                    native: Vec::new(),
                    took_ns: None,
                    others: Vec::new(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_lab_trace_format::cupti_kinds::{copy, memory};
    use async_lab_trace_format::{header, ApiCalls, ClockPair, Domain};

    fn text(lines: &[Line]) -> Vec<u8> {
        lines.iter().flat_map(|l| serde_json::to_vec(l).unwrap().into_iter().chain([b'\n'])).collect()
    }

    fn api(corr: u32, name: &str, start: u64, end: u64) -> Line {
        Line::Api { domain: Domain::Runtime, name: name.into(), cbid: 41, tid: 7, corr, start, end }
    }

    /// A pageable host → device copy held for the whole of its own transfer.
    fn pageable_copy(corr: u32, start: u64) -> [Line; 2] {
        [
            api(corr, "cudaMemcpyAsync", start, start + 3_000_000),
            Line::Memcpy {
                copy_kind: copy::HTOD,
                src_kind: memory::PAGEABLE,
                dst_kind: memory::DEVICE,
                bytes: 32 << 20,
                start: start + 20_000,
                end: start + 2_990_000,
                stream: 7,
                corr,
            },
        ]
    }

    fn context() -> Vec<Line> {
        vec![
            header(42, vec!["python3".into(), "train.py".into()], Some(130001)),
            Line::Setup {
                clock: ClockPair { cupti_ns: 1, monotonic_ns: 1 },
                api_calls: ApiCalls::MayHold,
                locate_over_ns: 1_000_000,
                python: None,
                several_subscribers: Some(false),
            },
            Line::DefaultStreams { tid: 7, legacy: 7, per_thread: Some(13) },
        ]
    }

    #[test]
    fn a_block_sees_the_lines_since_it_began_and_the_context_written_before() {
        let mut w = Window::new(PathBuf::from("unused"));
        let mut before = context();
        before.extend(pageable_copy(3, 1_000_000));
        let first = text(&before);
        w.take(&first);
        // Nothing is kept while no block is open: only the context lines.
        assert!(w.lines.is_empty());
        assert_eq!(w.context.len(), 3);
        let since = w.begin(first.len() as u64);
        let mut after = text(&pageable_copy(9, 50_000_000));
        // A line still being written is left for the next reading.
        after.extend_from_slice(b"{\"type\":\"api\",\"dom");
        w.take(&after);
        let p = w.process(since);
        assert_eq!(p.pid, 42);
        let corrs: Vec<u32> =
            p.lines.iter().filter_map(|l| if let Line::Api { corr, .. } = l { Some(*corr) } else { None }).collect();
        assert_eq!(corrs, [9]);
        assert!(p.lines.iter().any(|l| matches!(l, Line::DefaultStreams { .. })));
        assert_eq!(w.scanned, (first.len() + after.len() - "{\"type\":\"api\",\"dom".len()) as u64);
        w.end(since);
        assert!(w.idle() && w.lines.is_empty());
    }

    #[test]
    fn an_asked_call_reads_as_the_json_report_gives_it_placed_at_its_python_line() {
        let mut lines = context();
        lines.extend(pageable_copy(9, 50_000_000));
        let mut w = Window::new(PathBuf::from("unused"));
        let since = w.begin(0);
        w.take(&text(&lines));
        let frames = vec![
            PyFrame {
                file: "/venv/lib/python3.12/site-packages/torch/_tensor.py".into(),
                line: 5,
                function: "f".into(),
            },
            PyFrame { file: "/home/me/test_copy.py".into(), line: 12, function: "test_copy".into() },
        ];
        let asked = [
            Asked { corr: 9, python: frames, over_ns: 0, ..Asked::default() },
            Asked { corr: 77, python: vec![], over_ns: 0, ..Asked::default() },
        ];
        let p = w.process(since);
        assert!(records_in(&p, &asked[..1]));
        let (found, missing) = held_calls(p, &asked);
        assert_eq!(missing, [77]);
        let [h] = found.as_slice() else { panic!("one held call: {found:?}") };
        assert_eq!((h.corr, h.name.as_str(), h.held_ns), (9, "cudaMemcpyAsync", 3_000_000));
        assert_eq!(h.class, "blocking");
        assert_eq!(h.location.words, "test_copy.py:12 test_copy");
    }

    /// The answer words each call as the gate raises it, and keeps what is paid once (a library loaded) apart
    /// unless warm-up is asked for; a call not in the trace yet is worded from what the callback saw.
    #[test]
    fn the_answer_words_each_call_and_keeps_what_is_paid_once_apart() {
        let mut lines = context();
        lines.extend(pageable_copy(9, 50_000_000));
        lines.push(api(10, "cuLibraryLoadData", 60_000_000, 64_000_000));
        let mut w = Window::new(PathBuf::from("unused"));
        let since = w.begin(0);
        w.take(&text(&lines));
        let frames = vec![PyFrame { file: "/home/me/test_copy.py".into(), line: 12, function: "test_copy".into() }];
        let ask = |corr: u32, name: &str| Asked {
            corr,
            python: frames.clone(),
            over_ns: 1_000_000,
            name: name.into(),
            held_ns: 3_500_000,
        };
        let asked = [ask(9, "cudaMemcpyAsync"), ask(10, "cuLibraryLoadData"), ask(11, "cudaMemcpyAsync")];
        let a = answer(w.process(since), &asked, false);
        let [held] = a["held_calls"].as_array().unwrap().as_slice() else { panic!("{a}") };
        let message = held["message"].as_str().unwrap();
        assert!(
            message.starts_with(
                "test_copy.py:12 test_copy: cudaMemcpyAsync held this thread 3.0 ms (over 1.0 ms), class blocking"
            ),
            "{message}"
        );
        assert!(message.contains("\n  remedy: Pin the host memory"), "{message}");
        let [once] = a["paid_once"].as_array().unwrap().as_slice() else { panic!("{a}") };
        assert_eq!((once["corr"].as_u64(), once["once"].as_str()), (Some(10), Some("loading-code")), "{a}");
        let [missing] = a["missing"].as_array().unwrap().as_slice() else { panic!("{a}") };
        assert!(missing["message"].as_str().unwrap().contains("3.5 ms (over 1.0 ms), class unknown"), "{a}");
        let a = answer(w.process(since), &asked, true);
        assert_eq!(a["held_calls"].as_array().unwrap().len(), 2, "{a}");
    }

    /// A test's loop of pageable copies from one line, in a block of a running program: not an upload (that is
    /// start-up's, which the block's window does not hold), each one held.
    #[test]
    fn a_blocks_loop_of_copies_from_one_line_is_held_not_an_upload() {
        let mut lines = context();
        for k in 0..10u32 {
            lines.extend(pageable_copy(20 + k, 50_000_000 + u64::from(k) * 4_000_000));
        }
        let mut w = Window::new(PathBuf::from("unused"));
        let since = w.begin(0);
        w.take(&text(&lines));
        let frames = vec![PyFrame { file: "/home/me/test_copy.py".into(), line: 12, function: "test_copy".into() }];
        let asked: Vec<Asked> = (0..10u32)
            .map(|k| Asked { corr: 20 + k, python: frames.clone(), over_ns: 1_000_000, ..Asked::default() })
            .collect();
        let a = answer(w.process(since), &asked, false);
        assert_eq!(a["held_calls"].as_array().unwrap().len(), 10, "{a}");
        assert!(a["paid_once"].as_array().unwrap().is_empty(), "{a}");
    }

    #[test]
    fn a_call_the_trace_shows_under_the_limit_is_never_reported_past_it() {
        let mut lines = context();
        lines.extend(pageable_copy(9, 50_000_000));
        let mut w = Window::new(PathBuf::from("unused"));
        let since = w.begin(0);
        w.take(&text(&lines));
        let (found, missing) =
            held_calls(w.process(since), &[Asked { corr: 9, python: vec![], over_ns: 5_000_000, ..Asked::default() }]);
        assert!(found.is_empty() && missing == [9], "{found:?}");
    }

    #[test]
    fn a_copy_whose_record_has_not_come_is_told() {
        let mut lines = context();
        lines.push(api(9, "cudaMemcpyAsync", 50_000_000, 53_000_000));
        lines.push(api(10, "cudaStreamSynchronize", 53_000_000, 55_000_000));
        let mut w = Window::new(PathBuf::from("unused"));
        let since = w.begin(0);
        w.take(&text(&lines));
        let p = w.process(since);
        assert!(!records_in(&p, &[Asked { corr: 9, python: vec![], over_ns: 0, ..Asked::default() }]));
        // A synchronization has no record of its own to wait for.
        assert!(records_in(&p, &[Asked { corr: 10, python: vec![], over_ns: 0, ..Asked::default() }]));
    }

    #[test]
    fn a_graphs_or_a_host_functions_launch_has_no_record_to_wait_for() {
        let mut lines = context();
        lines.push(api(11, "cudaGraphLaunch", 50_000_000, 53_000_000));
        lines.push(api(12, "cudaLaunchHostFunc", 53_000_000, 55_000_000));
        lines.push(api(13, "cudaLaunchKernel", 55_000_000, 58_000_000));
        let mut w = Window::new(PathBuf::from("unused"));
        let since = w.begin(0);
        w.take(&text(&lines));
        let p = w.process(since);
        assert!(records_in(
            &p,
            &[
                Asked { corr: 11, python: vec![], over_ns: 0, ..Asked::default() },
                Asked { corr: 12, python: vec![], over_ns: 0, ..Asked::default() }
            ]
        ));
        assert!(!records_in(&p, &[Asked { corr: 13, python: vec![], over_ns: 0, ..Asked::default() }]));
    }
}

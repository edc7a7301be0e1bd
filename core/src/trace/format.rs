//! The trace recording: JSON lines, one [`Line`] each, written by the injection library (`trace-inject/`)
//! while the traced program runs, one section per process (each begins with its [`Line::Header`]).
//!
//! A section that ends with [`Line::End`] is complete; one without it was cut short (the program crashed or
//! was killed) and reads as *partial*: every line written before that still counts. A last line cut in the
//! middle is dropped. Times are CUPTI timestamps, in ns; GPU records carry the correlation id of the API call
//! that enqueued them (a runtime call and the driver call it makes share one).

use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What the header's `format` field says.
pub const TRACE_FORMAT: &str = "async-lab-trace";
/// The format's version; a reader refuses newer ones. Version 2 added the records of events (`Line::Event`)
/// and the event a synchronization waited for (`Line::Sync`'s `event`); version 1 traces read as before.
pub const TRACE_VERSION: u32 = 2;

/// The API a call belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Domain {
    Runtime,
    Driver,
}

/// A resource event: what the driver did that a call may have waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resource {
    ContextCreated,
    ModuleLoaded,
}

/// Why the injection library recorded nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Failure {
    /// CUPTI could not be loaded.
    CuptiMissing,
    /// CUPTI already has a subscriber (another tool: nsys, compute-sanitizer).
    CuptiTaken,
    /// Any other CUPTI error while setting up.
    CuptiError,
}

/// One line of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Line {
    /// The first line of a process's section.
    Header {
        format: String,
        version: u32,
        pid: u32,
        /// The program's command line (the program's file name, then its arguments).
        program: Vec<String>,
        /// CUPTI's API version (`cuptiGetVersion`), where it was loaded.
        #[serde(default)]
        cupti_version: Option<u32>,
    },
    /// A runtime or driver API call, written when it returned.
    Api { domain: Domain, name: String, cbid: u32, tid: u64, corr: u32, start: u64, end: u64 },
    /// A copy on the GPU. Kinds are CUPTI's: `copy_kind` 1 host → device, 2 device → host, 8 device →
    /// device, ...; `src_kind`/`dst_kind` 1 pageable, 2 pinned, 3 device, 4 array, 5 managed, ...
    Memcpy { copy_kind: u8, src_kind: u8, dst_kind: u8, bytes: u64, start: u64, end: u64, stream: u32, corr: u32 },
    /// A memset on the GPU.
    Memset { bytes: u64, start: u64, end: u64, stream: u32, corr: u32 },
    /// A kernel on the GPU.
    Kernel { name: String, start: u64, end: u64, stream: u32, corr: u32 },
    /// A synchronization the host did (a stream, an event, the context): CUPTI's `sync_type` (1 event
    /// synchronize, 2 stream wait event, 3 stream synchronize, 4 context synchronize).
    Sync {
        sync_type: u32,
        start: u64,
        end: u64,
        /// The stream, for a stream synchronization (CUPTI's stream id).
        #[serde(default)]
        stream: Option<u32>,
        corr: u32,
        /// The event, for an event synchronization (CUPTI's event id; see `Line::Event` for its stream).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event: Option<u32>,
    },
    /// An event recorded in a stream (`cuEventRecord`, `cudaEventRecord`): which stream an event
    /// synchronization with that event waits for, since CUPTI's record of the wait names none.
    Event { event: u32, stream: u32, corr: u32 },
    /// A resource event, on the thread that caused it.
    Resource { event: Resource, t: u64, tid: u64 },
    /// CUPTI dropped this many records (its buffers were full).
    Dropped { records: u64 },
    /// The injection library could not trace; nothing else follows.
    Error { error: Failure, message: String },
    /// The process ended and every record was flushed.
    End { t: u64 },
}

/// One process's section of a trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcessTrace {
    pub pid: u32,
    pub program: Vec<String>,
    pub cupti_version: Option<u32>,
    /// The lines after the header, in the order written.
    pub lines: Vec<Line>,
    /// No `end` line: the process was cut short, or its trace was.
    pub partial: bool,
    /// Where the injection library said it could not trace.
    pub failure: Option<(Failure, String)>,
}

/// A whole trace: one section per process that initialized CUDA.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub processes: Vec<ProcessTrace>,
}

impl Trace {
    /// Reads a trace file; a file that is not one gets one clear error naming it.
    pub fn load(path: &Path) -> anyhow::Result<Trace> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Trace::parse(&text).with_context(|| format!("{} is not an async-lab trace", path.display()))
    }

    /// Parses the text of a trace (see the module's doc for what is tolerated).
    pub fn parse(text: &str) -> anyhow::Result<Trace> {
        let mut processes: Vec<ProcessTrace> = Vec::new();
        let lines: Vec<&str> = text.lines().collect();
        let last_nonempty = lines.iter().rposition(|l| !l.trim().is_empty());
        for (i, raw) in lines.iter().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let line: Line = match serde_json::from_str(raw) {
                Ok(l) => l,
                // A last line cut in the middle: the writer was stopped while writing it.
                Err(_) if Some(i) == last_nonempty && !processes.is_empty() && !raw.trim_end().ends_with('}') => break,
                Err(e) => bail!("line {}: {e}", i + 1),
            };
            match line {
                Line::Header { format, version, pid, program, cupti_version } => {
                    if format != TRACE_FORMAT {
                        bail!("line {}: the header's format is {format:?}, not {TRACE_FORMAT:?}", i + 1);
                    }
                    if version > TRACE_VERSION {
                        bail!(
                            "line {}: trace format version {version} is newer than this async-lab reads \
                             ({TRACE_VERSION})",
                            i + 1
                        );
                    }
                    processes.push(ProcessTrace { pid, program, cupti_version, partial: true, ..Default::default() });
                }
                other => {
                    let Some(p) = processes.last_mut() else {
                        bail!("line {}: the first line must be a trace header", i + 1);
                    };
                    match &other {
                        Line::End { .. } => p.partial = false,
                        Line::Error { error, message } => {
                            p.failure = Some((*error, message.clone()));
                            p.partial = false;
                        }
                        _ => {}
                    }
                    p.lines.push(other);
                }
            }
        }
        if processes.is_empty() {
            bail!("it holds no trace header");
        }
        Ok(Trace { processes })
    }

    /// Whether any process's section was cut short.
    pub fn partial(&self) -> bool {
        self.processes.iter().any(|p| p.partial)
    }
}

/// Whether the file at `path` begins like a trace (its first line a trace header); `false` for anything else,
/// unreadable files included (the caller's own reading then says what is wrong).
pub fn is_trace(path: &Path) -> bool {
    use std::io::BufRead as _;
    let Ok(file) = std::fs::File::open(path) else { return false };
    let mut first = String::new();
    if std::io::BufReader::new(file).read_line(&mut first).is_err() {
        return false;
    }
    matches!(serde_json::from_str::<Line>(&first), Ok(Line::Header { format, .. }) if format == TRACE_FORMAT)
}

/// The header line of a process's section, as the injection library writes it.
pub fn header(pid: u32, program: Vec<String>, cupti_version: Option<u32>) -> Line {
    Line::Header { format: TRACE_FORMAT.into(), version: TRACE_VERSION, pid, program, cupti_version }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line]) -> String {
        lines.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect()
    }

    #[test]
    fn a_complete_section_reads_back_and_is_not_partial() {
        let api = Line::Api {
            domain: Domain::Runtime,
            name: "cudaMemcpyAsync".into(),
            cbid: 41,
            tid: 7,
            corr: 3,
            start: 10,
            end: 20,
        };
        let t = Trace::parse(&text(&[header(1, vec!["p".into()], Some(130001)), api.clone(), Line::End { t: 30 }]))
            .unwrap();
        assert_eq!(t.processes.len(), 1);
        assert!(!t.partial());
        assert_eq!(t.processes[0].lines[0], api);
    }

    #[test]
    fn without_an_end_line_it_is_partial_and_a_cut_last_line_is_dropped() {
        let mut s = text(&[header(1, vec![], None)]);
        s.push_str("{\"type\":\"api\",\"domain\":\"runt");
        let t = Trace::parse(&s).unwrap();
        assert!(t.partial());
        assert!(t.processes[0].lines.is_empty());
    }

    #[test]
    fn bad_files_get_one_clear_error() {
        let err = |s: &str| format!("{:#}", Trace::parse(s).unwrap_err());
        assert!(err("").contains("no trace header"));
        assert!(err("{\"type\":\"end\",\"t\":1}\n").contains("first line must be a trace header"));
        assert!(err("hello\n").contains("line 1"));
        let newer = text(&[Line::Header {
            format: TRACE_FORMAT.into(),
            version: TRACE_VERSION + 1,
            pid: 1,
            program: vec![],
            cupti_version: None,
        }]);
        assert!(err(&newer).contains("newer"));
        let other = "{\"type\":\"header\",\"format\":\"x\",\"version\":1,\"pid\":1,\"program\":[]}\n";
        assert!(err(other).contains("not \"async-lab-trace\""));
    }
}

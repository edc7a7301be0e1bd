//! Where in the program each call was made: the trace's code locations (`Line::Location`, by correlation id)
//! and NVTX ranges (`Line::Nvtx`, by thread and time) joined to its calls, and each call's [`Place`], the line
//! a user would change:
//! 1. the innermost Python frame in the program's own code, outside the installed packages and the
//!    interpreter's own library (`site-packages`, `dist-packages`, `lib/pythonX.Y`, `<frozen ...>`); where
//!    every frame is inside them, the innermost Python frame;
//! 2. a call of a thread that runs no Python in a process that does (PyTorch's autograd threads, JAX's
//!    runtime threads): the Python line that was waiting for its work (`waiting`);
//! 3. else the innermost native frame with a source file outside system and library paths;
//! 4. else the innermost NVTX range on the call's thread that contains its start;
//! 5. else the API function's name.
//!
//! A place of a Python or native line carries the chain from there to the library line that made the call
//! (`train.py:35 → transformers/generation/utils.py:2677 → …`) and the line's text where the trace holds it
//! (`Line::Source`, read from the file after the run); the NVTX range the call was made in stays beside it, a
//! second key. Paths inside an installed package are shown from the package's folder
//! (`torch/nn/modules/module.py`); a program's own file by its name (`library_paths`: which files are a
//! library's).

use super::format::{Line, NativeFrame, ProcessTrace, PyFrame, ThreadFrames};
use super::library_paths::{library_module, library_native, library_python, short_path, without_parameters};
use super::scene::Call;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Which kind of frame a location is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A Python frame (the call's own, or, with `via`, the Python line another thread was waiting at).
    Python,
    /// A native frame with its source file.
    Native,
    /// An NVTX range the call was made in.
    Nvtx,
    /// Nothing better known: the API function's name.
    Api,
}

/// How a call of a thread that runs no Python was placed at another thread's Python line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum ViaHow {
    /// That thread was inside a call of that line for the whole of this one.
    Containing,
    /// That thread was at that line when this call returned, outside any CUDA call of its own and without the
    /// GIL, in no idle wait (a lock, a queue, a selector): waiting for what this thread did (format 5's frames
    /// of every Python thread, `Line::Location`'s `others`).
    Waiting,
    /// That line's call is the latest located call of a Python thread that began before this one: no Python
    /// thread is known to have waited then.
    Before,
}

/// The other thread's call (or, waiting outside any call, its line) a place was taken from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Via {
    pub thread: u64,
    /// Its correlation id (none where the thread was waiting outside any CUDA call: `waiting`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corr: Option<u32>,
    pub how: ViaHow,
    /// For `before`: whether the trace read every Python thread's frames then (format 5) and none was waiting;
    /// `false` where it cannot tell (an older trace, a call without a location).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub none_waiting: bool,
}

/// A call with no location of its own placed where the same call site was placed (its thread, its function,
/// its NVTX range, its GPU work and its cause alike): a call held less than the location threshold, or past
/// the location budget.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Inferred {
    /// The correlation id of the located call it was placed as.
    pub corr: u32,
    /// Whether that call came earlier (else later: no such call was placed before it).
    pub earlier: bool,
}

/// A call's innermost user frame.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Place {
    pub kind: Kind,
    /// For people and for grouping: `train.py:41 forward`, `while the main thread waited at train.py:32 main`
    /// (`via`), `nvtx: backward`, `cudaMemcpy`.
    pub words: String,
    /// Whether the line is the program's own code, not a library's (a Python call whose every frame is in
    /// the installed packages or the standard library is placed at the innermost of them).
    #[serde(default)]
    pub own: bool,
    /// The source line's text, without its indentation (`value = loss.item()`), where the trace holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// From the user's frame to the library line that made the call (`train.py:35`,
    /// `transformers/generation/utils.py:2677`, ...), shortened to its first two and its last with `…`
    /// between.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
    /// Where the call's thread runs no Python: the Python thread's call, or line, it was placed by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// Where the call has no location of its own: the located call of the same call site it was placed as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inferred: Option<Inferred>,
    /// The innermost named NVTX range the call was made in, beside a place of another kind (the table's
    /// second key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvtx: Option<String>,
}

impl Place {
    /// A place of `kind` named `words`, nothing more known.
    pub fn named(kind: Kind, words: String) -> Place {
        Place { kind, words, own: false, text: None, chain: Vec::new(), via: None, inferred: None, nvtx: None }
    }

    /// What the by-location table groups by: the place and the NVTX range beside it (not the chain, which
    /// differs from call to call below one line of the program, nor which call a `via` came from, nor whether
    /// the place was `inferred`).
    pub fn key(&self) -> (Kind, &str, Option<&str>) {
        (self.kind, &self.words, self.nvtx.as_deref())
    }

    /// The place in one line: `train.py:35 main: value = loss.item() [nvtx: step]`.
    pub fn shown(&self) -> String {
        let mut s = self.words.clone();
        if let Some(text) = &self.text {
            s.push_str(": ");
            s.push_str(text);
        }
        if let Some(range) = &self.nvtx {
            s.push_str(" [nvtx: ");
            s.push_str(range);
            s.push(']');
        }
        s
    }

    /// The chain in words: `train.py:35 → transformers/generation/utils.py:2677 → … → torch/cuda/...:12`.
    pub fn chain_words(&self) -> String {
        self.chain.join(" → ")
    }
}

/// How a place through another thread's wait begins (`while the main thread waited at train.py:26 main`).
pub const WHILE: &str = "while ";
/// How a place through another thread's latest call begins (`after the latest call of the main thread, at ...`).
pub const AFTER: &str = "after ";

/// A place's words (or a group of places') after a noun: `at train.py:41 main`, or as they are where they say
/// when rather than where (`while the main thread waited at ...`): "synchronizations at train.py:41 main",
/// "synchronizations while the main thread waited at train.py:26 main".
pub fn at(where_words: &str) -> String {
    if where_words.starts_with(WHILE) || where_words.starts_with(AFTER) {
        where_words.to_owned()
    } else {
        format!("at {where_words}")
    }
}

/// The most frames a chain shows: the first two, `…`, the last.
const CHAIN_SHOWN: usize = 4;

/// A chain, outermost first, shortened to [`CHAIN_SHOWN`] entries.
fn shortened(mut chain: Vec<String>) -> Vec<String> {
    if chain.len() > CHAIN_SHOWN {
        let last = chain.pop().unwrap_or_default();
        chain.truncate(CHAIN_SHOWN - 2);
        chain.push("…".into());
        chain.push(last);
    }
    chain
}

/// One NVTX range.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    pub start: i64,
    pub end: i64,
    pub name: String,
    pub domain: Option<String>,
}

/// What the trace says of where one call was made.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frames<'a> {
    /// Innermost first.
    pub python: &'a [PyFrame],
    /// Innermost first.
    pub native: &'a [NativeFrame],
    /// The NVTX ranges holding its start, innermost first.
    pub nvtx: Vec<&'a Range>,
    /// What taking its location cost, where the trace says (format 4).
    pub took_ns: Option<u64>,
}

/// One code location, as the trace holds it.
#[derive(Clone, Debug, Default, PartialEq)]
struct Location {
    python: Vec<PyFrame>,
    native: Vec<NativeFrame>,
    took_ns: Option<u64>,
}

/// The code locations, NVTX ranges and source lines of one process's section.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Locations {
    by_corr: HashMap<u32, Location>,
    /// Per thread, in the order they began.
    nvtx: HashMap<u64, Vec<Range>>,
    /// The text of source lines, by file (as the frames give it) and line.
    sources: HashMap<(String, u32), String>,
    /// Each Python thread's frames when a call of a thread that runs no Python returned (format 5), by the
    /// call's correlation id.
    others: HashMap<u32, Vec<ThreadFrames>>,
    /// The threads with a location that holds Python frames, or that a location's `others` names with some.
    python_threads: HashSet<u64>,
    /// Whether the trace tells which threads run Python: a location of a thread that did not hold the GIL
    /// carries Python frames, so frames were read without it (format 4's reader); before, a thread that
    /// released the GIL had none either, and no thread can be said to run no Python.
    tells_python_threads: bool,
    /// The process's id: its main thread's.
    pid: u32,
}

impl Locations {
    /// Reads them off a process's lines.
    pub fn of(p: &ProcessTrace) -> Locations {
        let mut l = Locations { pid: p.pid, ..Locations::default() };
        for line in &p.lines {
            match line {
                Line::Location { tid, corr, gil, python, native, took_ns, others } => {
                    if !python.is_empty() {
                        l.python_threads.insert(*tid);
                    }
                    l.python_threads.extend(others.iter().filter(|o| !o.python.is_empty()).map(|o| o.tid));
                    // Other threads' frames are read without their GIL: the trace tells which threads run Python.
                    l.tells_python_threads |= others.iter().any(|o| !o.python.is_empty());
                    if !others.is_empty() {
                        l.others.insert(*corr, others.clone());
                    }
                    l.tells_python_threads |= *gil == super::format::Gil::NotHeld && !python.is_empty();
                    let location = Location { python: python.clone(), native: native.clone(), took_ns: *took_ns };
                    l.by_corr.insert(*corr, location);
                }
                Line::Nvtx { tid, start, end, name, domain } => l.nvtx.entry(*tid).or_default().push(Range {
                    start: *start as i64,
                    end: *end as i64,
                    name: name.clone(),
                    domain: domain.clone(),
                }),
                Line::Source { file, line, text } => {
                    l.sources.insert((file.clone(), *line), text.clone());
                }
                _ => {}
            }
        }
        for ranges in l.nvtx.values_mut() {
            ranges.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
        }
        l
    }

    /// The process's id, which is its main thread's.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The NVTX ranges of thread `tid`, in the order they began.
    pub fn ranges(&self, tid: u64) -> &[Range] {
        self.nvtx.get(&tid).map_or(&[], Vec::as_slice)
    }

    /// Whether thread `tid` runs no Python in a process that does, where the trace tells: no location of it
    /// holds a Python frame, while frames are read whether or not a thread holds the GIL.
    pub fn runs_no_python(&self, tid: u64) -> bool {
        self.tells_python_threads && !self.python_threads.contains(&tid)
    }

    /// What each Python thread was doing when `call` returned (its own correlation id's location, or a driver
    /// call's inside it), where the trace read it (format 5; none: not read, or no location).
    pub fn others(&self, call: &Call) -> &[ThreadFrames] {
        call.corrs.iter().find_map(|c| self.others.get(c)).map_or(&[], Vec::as_slice)
    }

    /// Whether `call` has a location of its own (Python or native frames).
    pub fn located(&self, call: &Call) -> bool {
        call.corrs.iter().filter_map(|c| self.by_corr.get(c)).any(|l| !l.python.is_empty() || !l.native.is_empty())
    }

    /// The place of a Python thread's frames (innermost first) read at a moment (`others`): its line of the
    /// program's own, with its chain and text; `None` where it has no frame.
    pub fn python_place(&self, python: &[PyFrame]) -> Option<Place> {
        let f = Frames { python, ..Frames::default() };
        self.own_line(&f).filter(|p| p.kind == Kind::Python)
    }

    /// The text of line `line` of `file`, where the trace holds it.
    pub fn source(&self, file: &str, line: u32) -> Option<&str> {
        self.sources.get(&(file.to_owned(), line)).map(String::as_str)
    }

    /// Everything known of where `call` was made (its own correlation id's location, or a driver call's inside
    /// it).
    pub fn frames(&self, call: &Call) -> Frames<'_> {
        let found = call.corrs.iter().find_map(|c| self.by_corr.get(c));
        let (python, native, took_ns) =
            found.map_or((&[][..], &[][..], None), |l| (l.python.as_slice(), l.native.as_slice(), l.took_ns));
        let t = call.span.start;
        let mut nvtx: Vec<&Range> = self.ranges(call.tid).iter().filter(|r| r.start <= t && t <= r.end).collect();
        // Innermost first: the one that began last (the shortest, where two began together).
        nvtx.sort_by_key(|r| (std::cmp::Reverse(r.start), r.end));
        Frames { python, native, nvtx, took_ns }
    }

    /// The call's place from its own frames and ranges (the order is in the module's doc; `waiting::places`
    /// adds the second).
    pub fn place(&self, call: &Call) -> Place {
        let f = self.frames(call);
        // A range without a name (a library's, named by a registered string the trace does not hold) says
        // nothing of where the call was made: the innermost named one.
        let range = f.nvtx.iter().find(|r| !r.name.is_empty()).map(|r| r.name.clone());
        let mut place = match self.own_line(&f) {
            Some(place) => place,
            None => match range.clone() {
                Some(name) => return Place::named(Kind::Nvtx, format!("nvtx: {name}")),
                None => return Place::named(Kind::Api, call.name.clone()),
            },
        };
        place.nvtx = range;
        place
    }

    /// The place of a Python or native line among a call's frames, with its chain and text.
    fn own_line(&self, f: &Frames) -> Option<Place> {
        if let Some(at) = user_python(f.python) {
            let py = &f.python[at];
            let chain =
                f.python[..=at].iter().rev().map(|fr| format!("{}:{}", short_path(&fr.file), fr.line)).collect();
            return Some(Place {
                own: !library_python(&py.file),
                text: self.source(&py.file, py.line).map(str::to_owned),
                chain: shortened(chain),
                ..Place::named(Kind::Python, format!("{}:{} {}", short_path(&py.file), py.line, py.function))
            });
        }
        let at = user_native(f.native)?;
        let fr = &f.native[at];
        let file = fr.file.as_deref()?;
        let mut words = match fr.line {
            Some(line) => format!("{}:{line}", short_path(file)),
            None => short_path(file).to_owned(),
        };
        if let Some(function) = &fr.function {
            words.push(' ');
            words.push_str(function);
        }
        let chain = f.native[..=at].iter().rev().map(native_words).collect();
        Some(Place {
            own: true,
            text: fr.line.and_then(|line| self.source(file, line)).map(str::to_owned),
            chain: shortened(chain),
            ..Place::named(Kind::Native, words)
        })
    }
}

/// A native frame in a chain: its source line where the program's own, else its function, else its file
/// and offset.
fn native_words(fr: &NativeFrame) -> String {
    let module = fr.module.rsplit('/').next().unwrap_or(&fr.module);
    match (&fr.file, fr.line, &fr.function) {
        (Some(file), Some(line), _) if !library_module(&fr.module) && !library_native(file) => {
            format!("{}:{line}", short_path(file))
        }
        (_, _, Some(function)) => format!("{} ({module})", without_parameters(function)),
        _ => format!("{module}+{:#x}", fr.offset),
    }
}

/// Which Python frame places a call (innermost first): the innermost of the program's own code, else the
/// innermost.
pub fn user_python(frames: &[PyFrame]) -> Option<usize> {
    frames.iter().position(|fr| !library_python(&fr.file)).or((!frames.is_empty()).then_some(0))
}

/// Which native frame places a call (innermost first): the innermost with a source file outside system and
/// library paths, in a file of the program's own.
pub fn user_native(frames: &[NativeFrame]) -> Option<usize> {
    frames
        .iter()
        .position(|fr| !library_module(&fr.module) && fr.file.as_deref().is_some_and(|file| !library_native(file)))
}

/// The source line a location's place is named by (file as the frame gives it, and line): what
/// `async-lab trace` reads the text of after the run.
pub fn place_line<'a>(python: &'a [PyFrame], native: &'a [NativeFrame]) -> Option<(&'a str, u32)> {
    if let Some(at) = user_python(python) {
        return Some((python[at].file.as_str(), python[at].line));
    }
    let fr = &native[user_native(native)?];
    Some((fr.file.as_deref()?, fr.line?))
}

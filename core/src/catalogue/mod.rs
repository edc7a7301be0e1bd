//! The catalogue: every experiment async-lab knows, as typed facts.
//!
//! A family's facts (`copies::CopyFacts`, `memset::MemsetFacts`, ...) say what its call does: which call,
//! which memory, which stream, where the blocker runs, how many bytes. Everything else is *derived* from them,
//! here and nowhere else: the id (never parsed back), the call's name through either API, the documented rule
//! it tests and the classes that rule predicts, the words that describe it, and the setup a recording keeps
//! (`record::CaseSetup::of`, the one place a setup is made). A recording keeps its case's facts, so a replay
//! asks today's rules what they predict for them ([`expectation`]); the measuring crate (`host/`) reads the
//! same facts to choose what to run.
//!
//! Adding a case to a family is one line of facts in its list (`copies::default_cases`, ...).

pub mod alloc;
pub mod batched;
pub mod callbacks;
pub mod copies;
pub mod graphs;
pub mod launches;
pub mod limits;
pub mod loading;
pub mod memset;
pub mod overhead;
pub mod peer;
pub mod presets;
pub mod seed;
pub mod seed_runtime;
pub mod streammem;
pub mod threads;
pub mod unified;
pub mod vmm;
pub mod waiting;

use crate::api::Api;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, CallTiming, Direction, Family, HostKind, PeerSetup, StreamKind};
use serde::{Deserialize, Serialize};

/// Where a case's call and its blocker run, and what memory it touches: the typed fields every recording's
/// setup carries, whatever the family (`CaseSetup::layout`, written among the setup's own fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// The call's stream, where it takes one (non-async calls use the legacy stream).
    #[serde(default)]
    pub stream: Option<StreamKind>,
    pub blocker: BlockerPlacement,
    /// The stream the blocker runs on.
    #[serde(default)]
    pub blocker_stream: Option<StreamKind>,
    /// Whether the blocker is ordered before the call (so waiting for it is not a device-wide wait).
    pub blocker_ahead: bool,
    #[serde(default)]
    pub host_memory: Option<HostKind>,
    pub bytes: u64,
    /// Which way a copy moves its bytes; `None` for every other call. A recording made before setups carried
    /// it gets it from its case's facts when read (`Recording::parse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// For copies between two GPUs: which two, and whether direct (peer) access was on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerSetup>,
    /// How the call's host time was taken; the stopwatch unless the setup says otherwise (from the case's
    /// facts, for a recording made before setups carried it).
    #[serde(default, skip_serializing_if = "CallTiming::is_stopwatch")]
    pub timing: CallTiming,
}

impl Layout {
    /// A call with no stream, no blocker, no memory: what the other layouts change.
    pub const NOTHING: Layout = Layout {
        stream: None,
        blocker: BlockerPlacement::None,
        blocker_stream: None,
        blocker_ahead: false,
        host_memory: None,
        bytes: 0,
        direction: None,
        peer: None,
        timing: CallTiming::Stopwatch,
    };

    /// A call on `stream` with the blocker in the same stream (ahead of it) or on a non-blocking one.
    pub fn behind(stream: StreamKind, blocker: BlockerPlacement) -> Layout {
        let same = blocker == BlockerPlacement::Same;
        Layout {
            stream: Some(stream),
            blocker,
            blocker_stream: Some(if same { stream } else { StreamKind::NonBlocking }),
            blocker_ahead: same,
            ..Layout::NOTHING
        }
    }
}

/// Where the blocker of a case runs, as its id, its words and its layout say it, for the families whose calls
/// either take a non-blocking stream (the blocker in it, or on another one) or take none (the blocker on
/// `blocker_stream`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Whether the call takes a stream (a non-blocking one).
    pub has_stream: bool,
    pub blocker: BlockerPlacement,
    pub blocker_stream: StreamKind,
}

impl Placement {
    /// Whether the blocker is in the call's stream, ahead of it.
    pub fn ahead(&self) -> bool {
        self.has_stream && self.blocker == BlockerPlacement::Same
    }

    /// The id's part for it: `nonblocking/same`, `nonblocking/other`, or the blocker's stream (`legacy`, ...).
    pub fn id_part(&self) -> String {
        if self.has_stream {
            format!("nonblocking/{}", if self.ahead() { "same" } else { "other" })
        } else {
            self.blocker_stream.slug().to_owned()
        }
    }

    /// "ahead of it in the same stream", "on another, non-blocking stream", "on the legacy stream", ...
    pub fn words(&self) -> String {
        if self.has_stream {
            blocker_words(self.ahead()).to_owned()
        } else {
            format!("on the {} stream", self.blocker_stream.slug())
        }
    }

    /// The layout of a call placed so: on a non-blocking stream where it takes one, the blocker on
    /// `blocker_stream`.
    pub fn layout(&self) -> Layout {
        let mut l = Layout::behind(StreamKind::NonBlocking, self.blocker);
        l.stream = self.has_stream.then_some(StreamKind::NonBlocking);
        l.blocker_stream = Some(self.blocker_stream);
        l.blocker_ahead = self.ahead();
        l
    }
}

/// What a family's facts say of themselves. Every method is a pure function of the facts.
pub trait Experiment {
    fn family(&self) -> Family;
    /// The id without the API's prefix (a runtime case's id is `runtime/` + this).
    fn id(&self) -> String;
    /// The function the call goes through, in `api`.
    fn call(&self, api: Api) -> &'static str;
    /// Whether the driver case of these facts is measured through the runtime too, with the same facts.
    fn runtime_twin(&self) -> bool;
    /// The documented rule the case tests, and what it predicts, through `api`.
    fn rule(&self, api: Api) -> (&'static str, Expected);
    /// A sentence on what the experiment does, through `api`.
    fn what(&self, api: Api) -> String;
    fn layout(&self) -> Layout;
    /// The environment variable the case needs set before the driver starts (it then runs in a child
    /// process of its own).
    fn child_env(&self) -> Option<(&'static str, &'static str)> {
        None
    }
}

/// The facts of one experiment, by family.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Facts {
    Copy(copies::CopyFacts),
    Sweep(copies::SweepFacts),
    Memset(memset::MemsetFacts),
    Launch(launches::LaunchFacts),
    Callback(callbacks::CallbackFacts),
    Wait(waiting::WaitFacts),
    Alloc(alloc::AllocFacts),
    Load(loading::LoadFacts),
    /// A step of the seed program through the driver, or the whole program.
    Seed(seed::SeedFacts),
    /// A step of one of the seed's programs through the runtime, or the whole program.
    SeedRuntime(seed_runtime::SeedRuntimeFacts),
    Graph(graphs::GraphFacts),
    Unified(unified::HintFacts),
    Limits(limits::LimitFacts),
    Vmm(vmm::VmmFacts),
    StreamMem(streammem::StreamMemFacts),
    Batch(batched::BatchFacts),
    Threads(threads::ThreadFacts),
    Peer(peer::PeerFacts),
    Overhead(overhead::OverheadFacts),
}

/// Calls `$body` with `$f` bound to the family's facts.
macro_rules! each_family {
    ($facts:expr, $f:ident => $body:expr) => {
        match $facts {
            Facts::Copy($f) => $body,
            Facts::Sweep($f) => $body,
            Facts::Memset($f) => $body,
            Facts::Launch($f) => $body,
            Facts::Callback($f) => $body,
            Facts::Wait($f) => $body,
            Facts::Alloc($f) => $body,
            Facts::Load($f) => $body,
            Facts::Seed($f) => $body,
            Facts::SeedRuntime($f) => $body,
            Facts::Graph($f) => $body,
            Facts::Unified($f) => $body,
            Facts::Limits($f) => $body,
            Facts::Vmm($f) => $body,
            Facts::StreamMem($f) => $body,
            Facts::Batch($f) => $body,
            Facts::Threads($f) => $body,
            Facts::Peer($f) => $body,
            Facts::Overhead($f) => $body,
        }
    };
}

impl Experiment for Facts {
    fn family(&self) -> Family {
        each_family!(self, f => f.family())
    }
    fn id(&self) -> String {
        each_family!(self, f => f.id())
    }
    fn call(&self, api: Api) -> &'static str {
        each_family!(self, f => f.call(api))
    }
    fn runtime_twin(&self) -> bool {
        each_family!(self, f => f.runtime_twin())
    }
    fn rule(&self, api: Api) -> (&'static str, Expected) {
        each_family!(self, f => f.rule(api))
    }
    fn what(&self, api: Api) -> String {
        each_family!(self, f => f.what(api))
    }
    fn layout(&self) -> Layout {
        each_family!(self, f => f.layout())
    }
    fn child_env(&self) -> Option<(&'static str, &'static str)> {
        each_family!(self, f => f.child_env())
    }
}

/// One experiment: the API its call goes through, and its facts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub api: Api,
    pub facts: Facts,
}

impl Case {
    /// A case through the driver API.
    pub fn driver(facts: impl Into<Facts>) -> Case {
        Case { api: Api::Driver, facts: facts.into() }
    }

    /// A case through the runtime API (for the facts a family measures through the runtime only, or whose
    /// runtime case it makes itself).
    pub fn runtime(facts: impl Into<Facts>) -> Case {
        Case { api: Api::Runtime, facts: facts.into() }
    }

    pub fn id(&self) -> String {
        format!("{}{}", self.api.id_prefix(), self.facts.id())
    }

    pub fn call(&self) -> &'static str {
        self.facts.call(self.api)
    }

    pub fn rule(&self) -> (&'static str, Expected) {
        self.facts.rule(self.api)
    }

    /// The pair of GPUs a peer record measured (`None` for a template, and for every other family).
    pub fn pair(&self) -> Option<peer::GpuPair> {
        match &self.facts {
            Facts::Peer(p) => p.pair,
            _ => None,
        }
    }

    /// The case a record was made from (the inverse of [`Case::records`]): a peer record's template (the pair
    /// cleared), a seed step's whole program (the step cleared), else the case itself.
    pub fn template(&self) -> Case {
        let facts = match &self.facts {
            Facts::Peer(p) => Facts::Peer(peer::PeerFacts { pair: None, ..*p }),
            Facts::Seed(f) => Facts::Seed(seed::SeedFacts { step: None, ..*f }),
            Facts::SeedRuntime(f) => Facts::SeedRuntime(seed_runtime::SeedRuntimeFacts { step: None, ..*f }),
            _ => return self.clone(),
        };
        Case { api: self.api, facts }
    }

    /// The records a run of this case yields, as cases: a seed program's steps, a peer template's pairs of the
    /// GPUs `0..gpus`; any other case (a step, a pair among them) is its own one record.
    pub fn records(&self, gpus: i32) -> Vec<Case> {
        let with = |facts: Facts| Case { api: self.api, facts };
        match &self.facts {
            Facts::Seed(f) if f.step.is_none() => seed::Step::ALL.iter().map(|&s| with(Facts::Seed(f.at(s)))).collect(),
            Facts::SeedRuntime(f) if f.step.is_none() => {
                f.steps().into_iter().map(|s| with(Facts::SeedRuntime(s))).collect()
            }
            Facts::Peer(p) if p.pair.is_none() => (0..gpus)
                .flat_map(|src| (0..gpus).map(move |dst| (src, dst)))
                .map(|(src, dst)| with(Facts::Peer(p.on(src, dst))))
                .collect(),
            _ => vec![self.clone()],
        }
    }

    /// A step of the seed's program by its slug ("1-htod"); `None` for a whole program and other families.
    pub fn step_slug(&self) -> Option<&'static str> {
        match &self.facts {
            Facts::Seed(f) => f.step.map(|s| s.slug()),
            Facts::SeedRuntime(f) => f.step.map(|s| s.slug()),
            _ => None,
        }
    }

    /// The same facts through the runtime API, where the family measures them there too.
    pub fn runtime_twin(&self) -> Option<Case> {
        (self.api == Api::Driver && self.facts.runtime_twin())
            .then(|| Case { api: Api::Runtime, facts: self.facts.clone() })
    }
}

/// Each case followed by its runtime twin, where it has one.
pub fn with_twins(cases: Vec<Case>) -> Vec<Case> {
    let mut out = Vec::with_capacity(cases.len() * 2);
    for c in cases {
        let twin = c.runtime_twin();
        out.push(c);
        out.extend(twin);
    }
    out
}

/// The words of a case's blocker placement: ahead of the call in its stream, or on another stream.
pub fn blocker_words(ahead: bool) -> &'static str {
    if ahead {
        "ahead of it in the same stream"
    } else {
        "on another, non-blocking stream"
    }
}

/// What a case's words add for the API its call goes through: nothing for the driver, for the runtime that it
/// goes through the runtime.
pub fn api_words(api: Api) -> &'static str {
    match api {
        Api::Driver => "",
        Api::Runtime => ", through the runtime API",
    }
}

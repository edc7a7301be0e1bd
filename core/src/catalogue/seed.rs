//! The seed question's program through the driver API (rules A1, A2, K4, CB1): a 10 MB host → device copy, a
//! kernel's first launch, the copy back and a host callback on one non-blocking stream, with pageable and with
//! pinned host memory. One run of the program yields a record per step; each step's facts say which step it
//! is (`SeedFacts::step`). The steps (`Step`) are shared with the runtime's programs (`seed_runtime`).

use super::{api_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::*;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, HostKind, StreamKind};
use serde::{Deserialize, Serialize};

/// The seed program's buffer: 10 MB.
pub const BUFFER_BYTES: u64 = 10_000_000;

/// The seed's four calls, whichever API makes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    #[serde(rename = "htod")]
    HtoD,
    Launch,
    #[serde(rename = "dtoh")]
    DtoH,
    Callback,
}

impl Step {
    pub const ALL: [Step; 4] = [Step::HtoD, Step::Launch, Step::DtoH, Step::Callback];

    /// The last part of the step's experiment id.
    pub fn slug(self) -> &'static str {
        match self {
            Step::HtoD => "1-htod",
            Step::Launch => "2-launch",
            Step::DtoH => "3-dtoh",
            Step::Callback => "4-callback",
        }
    }

    /// The function the step calls through `api`: the copies the unified form (`cudaMemcpyDefault`), the
    /// callback the stream callback.
    pub fn call(self, api: Api) -> &'static str {
        match (api, self) {
            (Api::Driver, Step::HtoD | Step::DtoH) => "cuMemcpyAsync",
            (Api::Driver, Step::Launch) => "cuLaunchKernel",
            (Api::Driver, Step::Callback) => "cuStreamAddCallback",
            (Api::Runtime, Step::HtoD | Step::DtoH) => "cudaMemcpyAsync(Default)",
            (Api::Runtime, Step::Launch) => "cudaLaunchKernel",
            (Api::Runtime, Step::Callback) => "cudaStreamAddCallback",
        }
    }

    /// The rule this step is held to with `kind` host memory, and the classes it allows.
    pub fn rule(self, kind: HostKind) -> (&'static str, Expected) {
        let pageable = kind == HostKind::Pageable;
        match self {
            Step::HtoD if pageable => ("A2", Expected::classes(&[Staged, Blocking])),
            Step::Launch => ("K4", Expected::classes(&[Async, WaitedForStream])),
            Step::DtoH if pageable => ("A2", Expected::classes(&[Blocking, WaitedForStream])),
            Step::Callback => ("CB1", Expected::classes(&[Async])),
            Step::HtoD | Step::DtoH => ("A1", Expected::classes(&[Async])),
        }
    }

    /// Whether the step copies the buffer.
    pub fn is_copy(self) -> bool {
        matches!(self, Step::HtoD | Step::DtoH)
    }

    /// The step's layout, with `kind` host memory and a buffer of `buffer_bytes`. The first step has nothing
    /// ahead of it in the stream; every later one has the step before it.
    pub fn layout(self, kind: HostKind, buffer_bytes: u64) -> Layout {
        let first = self == Step::HtoD;
        Layout {
            stream: Some(StreamKind::NonBlocking),
            blocker: if first { BlockerPlacement::None } else { BlockerPlacement::Same },
            blocker_stream: (!first).then_some(StreamKind::NonBlocking),
            blocker_ahead: !first,
            host_memory: self.is_copy().then_some(kind),
            bytes: if self.is_copy() { buffer_bytes } else { 0 },
            ..Layout::NOTHING
        }
    }
}

/// The driver's seed program with one kind of host memory: the whole program (`step: None`, recorded as its
/// first call), or one of its steps (the records a run of it yields).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedFacts {
    pub memory: HostKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<Step>,
}

impl SeedFacts {
    /// The facts of the program's step `step`.
    pub fn at(self, step: Step) -> SeedFacts {
        SeedFacts { step: Some(step), ..self }
    }

    /// The step these facts describe: the first one for the whole program.
    fn step_or_first(self) -> Step {
        self.step.unwrap_or(Step::HtoD)
    }
}

impl Experiment for SeedFacts {
    fn family(&self) -> Family {
        Family::Seed
    }

    fn id(&self) -> String {
        match self.step {
            None => format!("seed/{}", self.memory.slug()),
            Some(s) => format!("seed/{}/{}", self.memory.slug(), s.slug()),
        }
    }

    fn call(&self, api: Api) -> &'static str {
        self.step_or_first().call(api)
    }

    /// The seed's programs through the runtime are cases of their own (`seed_runtime`).
    fn runtime_twin(&self) -> bool {
        false
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        self.step_or_first().rule(self.memory)
    }

    fn what(&self, api: Api) -> String {
        let kind = self.memory.slug();
        let words = match self.step_or_first() {
            Step::HtoD => format!("the seed's first call: copy 10 MB of {kind} host memory to the device"),
            Step::Launch => "the seed's kernel (1e6 cycles on 128×128 threads), first launch of a kernel of a \
                library loaded just before (cuLibraryLoadData); the work ahead is the copy"
                .to_owned(),
            Step::DtoH => format!("copy the 10 MB back into the {kind} host buffer; the work ahead is the kernel"),
            Step::Callback => {
                "enqueue the callback that sets the \"stream concluded\" flag; the work ahead is the copy back"
                    .to_owned()
            }
        };
        format!("{words}{}", api_words(api))
    }

    fn layout(&self) -> Layout {
        self.step_or_first().layout(self.memory, BUFFER_BYTES)
    }
}

impl From<SeedFacts> for Facts {
    fn from(f: SeedFacts) -> Facts {
        Facts::Seed(f)
    }
}

/// The seed program with pageable and with pinned memory (each run yields its steps' records).
pub fn cases() -> Vec<Case> {
    [HostKind::Pageable, HostKind::Pinned].map(|memory| Case::driver(SeedFacts { memory, step: None })).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_and_its_steps_have_the_ids_and_calls_of_the_seed() {
        let ids: Vec<String> = cases().iter().map(Case::id).collect();
        assert_eq!(ids, ["seed/pageable", "seed/pinned"]);
        let pinned = SeedFacts { memory: HostKind::Pinned, step: None };
        let steps: Vec<(String, &str)> =
            Step::ALL.iter().map(|&s| (pinned.at(s).id(), pinned.at(s).call(Api::Driver))).collect();
        assert_eq!(
            steps,
            [
                ("seed/pinned/1-htod".to_owned(), "cuMemcpyAsync"),
                ("seed/pinned/2-launch".to_owned(), "cuLaunchKernel"),
                ("seed/pinned/3-dtoh".to_owned(), "cuMemcpyAsync"),
                ("seed/pinned/4-callback".to_owned(), "cuStreamAddCallback"),
            ]
        );
        assert!(cases().iter().all(|c| c.runtime_twin().is_none()));
    }

    #[test]
    fn the_program_is_recorded_as_its_first_step() {
        for c in cases() {
            let Facts::Seed(f) = c.facts else { panic!("{} is not the seed", c.id()) };
            let first = f.at(Step::HtoD);
            assert_eq!(f.layout(), first.layout());
            assert_eq!(f.rule(Api::Driver), first.rule(Api::Driver));
            assert_eq!(f.what(Api::Driver), first.what(Api::Driver));
            assert_eq!(f.call(Api::Driver), first.call(Api::Driver));
        }
    }

    #[test]
    fn steps_carry_bytes_memory_rules_and_the_step_before_as_their_blocker() {
        for memory in [HostKind::Pageable, HostKind::Pinned] {
            let pageable = memory == HostKind::Pageable;
            for step in Step::ALL {
                let f = SeedFacts { memory, step: Some(step) };
                let (rule, _) = f.rule(Api::Driver);
                assert!(crate::rules::rule(rule).is_some(), "{} names unknown rule {rule}", f.id());
                let want = match step {
                    Step::HtoD | Step::DtoH if pageable => "A2",
                    Step::HtoD | Step::DtoH => "A1",
                    Step::Launch => "K4",
                    Step::Callback => "CB1",
                };
                assert_eq!(rule, want, "{}", f.id());
                let l = f.layout();
                assert_eq!(l.blocker_ahead, step != Step::HtoD, "{}", f.id());
                assert_eq!(l.blocker == BlockerPlacement::None, step == Step::HtoD, "{}", f.id());
                assert_eq!(
                    (l.bytes, l.host_memory),
                    if step.is_copy() { (BUFFER_BYTES, Some(memory)) } else { (0, None) }
                );
            }
        }
    }
}

//! Loading code while the GPU works (rules L1, L2, K1, K4): the load of a module or a library, a lookup in
//! code loaded just before, and a kernel's first launch, under `CUDA_MODULE_LOADING=LAZY` and `=EAGER`, with a
//! blocker kernel ahead in the call's stream, on another stream, or large copies on another stream.
//!
//! The family makes its runtime cases itself (`cases`): the runtime has counterparts of only three of the
//! driver's calls (`Call::runtime_name`), so its cases are not runtime twins.

use super::{api_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::*;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, StreamKind};
use serde::{Deserialize, Serialize};

/// The call under test, named by what it does; the API a case goes through picks the function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Call {
    /// `cuModuleLoadData` (the runtime has none).
    ModuleLoadData,
    /// `cuLibraryLoadData`, `cudaLibraryLoadData`.
    LibraryLoadData,
    /// `cuLibraryGetKernel`, `cudaLibraryGetKernel`.
    LibraryGetKernel,
    /// `cuKernelGetFunction` (the runtime has none).
    KernelGetFunction,
    /// `cuModuleGetFunction` (the runtime has none).
    ModuleGetFunction,
    /// The first launch of a library's kernel: `cuLaunchKernel` given the kernel handle, `cudaLaunchKernel`.
    FirstLaunch,
}

impl Call {
    pub const ALL: [Call; 6] = [
        Call::ModuleLoadData,
        Call::LibraryLoadData,
        Call::LibraryGetKernel,
        Call::KernelGetFunction,
        Call::ModuleGetFunction,
        Call::FirstLaunch,
    ];

    /// The driver function's name.
    pub fn driver_name(self) -> &'static str {
        match self {
            Call::ModuleLoadData => "cuModuleLoadData",
            Call::LibraryLoadData => "cuLibraryLoadData",
            Call::LibraryGetKernel => "cuLibraryGetKernel",
            Call::KernelGetFunction => "cuKernelGetFunction",
            Call::ModuleGetFunction => "cuModuleGetFunction",
            Call::FirstLaunch => "cuLaunchKernel",
        }
    }

    /// The runtime function that does the same, where the runtime has one.
    pub fn runtime_name(self) -> Option<&'static str> {
        match self {
            Call::LibraryLoadData => Some("cudaLibraryLoadData"),
            Call::LibraryGetKernel => Some("cudaLibraryGetKernel"),
            Call::FirstLaunch => Some("cudaLaunchKernel"),
            Call::ModuleLoadData | Call::KernelGetFunction | Call::ModuleGetFunction => None,
        }
    }

    /// The call's part of the id: the same through both APIs.
    pub fn slug(self) -> &'static str {
        match self {
            Call::ModuleLoadData => "module-load-data",
            Call::LibraryLoadData => "library-load-data",
            Call::LibraryGetKernel => "library-get-kernel",
            Call::KernelGetFunction => "kernel-get-function",
            Call::ModuleGetFunction => "module-get-function",
            Call::FirstLaunch => "first-launch",
        }
    }

    /// Whether the call puts work on a stream (only the launch does).
    pub fn is_launch(self) -> bool {
        self == Call::FirstLaunch
    }

    /// What the call does, for a learner, through `api`.
    fn action(self, api: Api) -> &'static str {
        match (self, api) {
            (Call::ModuleLoadData, _) => "loading the project's kernels (PTX) as a new module",
            (Call::LibraryLoadData, _) => "loading the project's kernels (PTX) as a new library",
            (Call::LibraryGetKernel, _) => "looking up the kernel `empty` in a library loaded just before",
            (Call::KernelGetFunction, _) => {
                "asking for this context's function of a kernel of a library loaded just before (under lazy \
                 loading, that loads it)"
            }
            (Call::ModuleGetFunction, _) => {
                "looking up the kernel `empty` in a module loaded just before (under lazy loading, that loads it)"
            }
            (Call::FirstLaunch, Api::Driver) => {
                "the first launch of a kernel (1 ms) of a library loaded just before, given to cuLaunchKernel as \
                 the library's kernel handle"
            }
            (Call::FirstLaunch, Api::Runtime) => "the first launch of a kernel (1 ms) of a library loaded just before",
        }
    }
}

/// How the process loads code (`CUDA_MODULE_LOADING`, set for the child process the case runs in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Loading {
    Lazy,
    Eager,
}

impl Loading {
    pub fn slug(self) -> &'static str {
        match self {
            Loading::Lazy => "lazy",
            Loading::Eager => "eager",
        }
    }

    /// The value of `CUDA_MODULE_LOADING` that selects it.
    pub fn env_value(self) -> &'static str {
        match self {
            Loading::Lazy => "LAZY",
            Loading::Eager => "EAGER",
        }
    }
}

/// What keeps the GPU busy while the call is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Situation {
    /// A blocker kernel ahead of the call in its own stream (launches only).
    Same,
    /// A blocker kernel on another, non-blocking stream.
    Other,
    /// 256 MiB host → device copies from pinned memory on another, non-blocking stream.
    Copy,
}

impl Situation {
    pub const ALL: [Situation; 3] = [Situation::Same, Situation::Other, Situation::Copy];

    pub fn slug(self) -> &'static str {
        match self {
            Situation::Same => "same",
            Situation::Other => "other",
            Situation::Copy => "copy",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Situation::Same => "with a blocker kernel ahead of it in the same stream",
            Situation::Other => "while a blocker kernel runs on another, non-blocking stream",
            Situation::Copy => {
                "while 256 MiB host-to-device copies from pinned memory run on another, non-blocking stream"
            }
        }
    }
}

/// One loading experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadFacts {
    pub call: Call,
    pub loading: Loading,
    pub situation: Situation,
}

impl Experiment for LoadFacts {
    fn family(&self) -> Family {
        Family::Load
    }

    fn id(&self) -> String {
        format!("load/{}/{}/{}", self.call.slug(), self.loading.slug(), self.situation.slug())
    }

    /// Only the calls the runtime has are measured through it (`cases`); for the others the driver's name is
    /// the only one there is.
    fn call(&self, api: Api) -> &'static str {
        match api {
            Api::Driver => self.call.driver_name(),
            Api::Runtime => self.call.runtime_name().unwrap_or(self.call.driver_name()),
        }
    }

    /// The runtime's cases are made by `cases`, for the calls the runtime has.
    fn runtime_twin(&self) -> bool {
        false
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        let lazy = self.loading == Loading::Lazy;
        let ahead = self.situation == Situation::Same;
        match self.call {
            Call::ModuleLoadData | Call::LibraryLoadData => ("L1", Expected::undocumented()),
            // Under lazy loading these two are where the kernel is loaded into the context.
            Call::ModuleGetFunction | Call::KernelGetFunction if lazy => {
                ("K4", Expected::classes(&[Async, DeviceSync]))
            }
            Call::ModuleGetFunction | Call::KernelGetFunction | Call::LibraryGetKernel => {
                ("L2", Expected::undocumented())
            }
            // Under eager loading the library was loaded into the context with it: an ordinary launch.
            Call::FirstLaunch if !lazy => ("K1", Expected::classes(&[Async])),
            Call::FirstLaunch if ahead => ("K4", Expected::classes(&[Async, WaitedForStream])),
            Call::FirstLaunch => ("K4", Expected::classes(&[Async, DeviceSync])),
        }
    }

    fn what(&self, api: Api) -> String {
        let call = match api {
            Api::Driver => String::new(),
            Api::Runtime => format!(" ({})", self.call(api)),
        };
        format!(
            "{}{call}, in a process started with CUDA_MODULE_LOADING={}, {}{}",
            self.call.action(api),
            self.loading.env_value(),
            self.situation.words(),
            api_words(api)
        )
    }

    fn layout(&self) -> Layout {
        let ahead = self.situation == Situation::Same;
        let mut l = Layout::behind(
            StreamKind::NonBlocking,
            if ahead { BlockerPlacement::Same } else { BlockerPlacement::Other },
        );
        // Only the launch takes a stream; the blocker runs on a non-blocking one either way.
        l.stream = self.call.is_launch().then_some(StreamKind::NonBlocking);
        l
    }

    /// CUDA_MODULE_LOADING is read once, when the driver starts: every case runs in a child process.
    fn child_env(&self) -> Option<(&'static str, &'static str)> {
        Some(("CUDA_MODULE_LOADING", self.loading.env_value()))
    }
}

impl From<LoadFacts> for Facts {
    fn from(f: LoadFacts) -> Facts {
        Facts::Load(f)
    }
}

/// Every case of the family: each driver call, then each call the runtime has through the runtime, lazy and
/// eager, in each situation (a call without a stream has no "same stream").
pub fn cases() -> Vec<Case> {
    let driver = Call::ALL.map(|call| (Api::Driver, call));
    let runtime = Call::ALL.into_iter().filter(|c| c.runtime_name().is_some()).map(|call| (Api::Runtime, call));
    let mut v = Vec::new();
    for (api, call) in driver.into_iter().chain(runtime) {
        for loading in [Loading::Lazy, Loading::Eager] {
            for situation in Situation::ALL {
                if situation == Situation::Same && !call.is_launch() {
                    continue;
                }
                v.push(Case { api, facts: LoadFacts { call, loading, situation }.into() });
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(c: &Case) -> LoadFacts {
        match c.facts {
            Facts::Load(f) => f,
            _ => panic!("{} is not a loading case", c.id()),
        }
    }

    #[test]
    fn ids_are_unique() {
        let mut ids: Vec<String> = cases().iter().map(Case::id).collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n);
        // 6 driver and 3 runtime calls, lazy and eager, other and copy; the 2 launches also with "same".
        assert_eq!(n, (6 + 3) * 2 * 2 + 2 * 2);
    }

    #[test]
    fn each_case_names_a_known_rule() {
        for c in cases() {
            let (rule, _) = c.rule();
            assert!(crate::rules::rule(rule).is_some(), "{} names unknown rule {rule}", c.id());
            assert_eq!(c.facts.family(), Family::Load);
        }
    }

    #[test]
    fn lazy_and_eager_cases_run_in_the_right_child() {
        for c in cases() {
            let env = c.facts.child_env();
            if c.id().contains("/lazy/") {
                assert_eq!(env, Some(("CUDA_MODULE_LOADING", "LAZY")), "{}", c.id());
            } else {
                assert!(c.id().contains("/eager/"), "{}", c.id());
                assert_eq!(env, Some(("CUDA_MODULE_LOADING", "EAGER")), "{}", c.id());
            }
        }
    }

    #[test]
    fn runtime_cases_go_through_the_runtime() {
        let all = cases();
        let runtime: Vec<&Case> = all.iter().filter(|c| c.api == Api::Runtime).collect();
        assert_eq!(runtime.len(), 3 * 2 * 2 + 2);
        for c in &all {
            let is_runtime = c.api == Api::Runtime;
            assert_eq!(is_runtime, c.id().starts_with("runtime/load/"), "{}", c.id());
            assert_eq!(is_runtime, c.call().starts_with("cuda"), "{}", c.id());
            assert!(is_runtime || c.id().starts_with("load/"), "{}", c.id());
            assert!(c.runtime_twin().is_none(), "{}", c.id());
            if is_runtime {
                assert!(c.facts.what(c.api).contains(c.call()), "{}", c.id());
            }
        }
        // Each runtime case has its driver counterpart (the same facts through the driver).
        for c in runtime {
            assert!(all.iter().any(|d| d.facts == c.facts && d.api == Api::Driver), "{}", c.id());
        }
    }

    #[test]
    fn only_launches_have_a_stream_and_a_blocker_ahead() {
        for c in cases() {
            let (f, l) = (facts(&c), c.facts.layout());
            assert_eq!(l.stream.is_some(), f.call.is_launch(), "{}", c.id());
            assert_eq!(l.blocker_ahead, c.id().ends_with("/same"), "{}", c.id());
            assert_eq!(l.blocker_ahead, l.blocker == BlockerPlacement::Same, "{}", c.id());
            assert!(!l.blocker_ahead || f.call.is_launch(), "{}", c.id());
            assert_eq!(l.blocker_stream, Some(StreamKind::NonBlocking), "{}", c.id());
        }
    }

    #[test]
    fn lazy_lookups_that_load_and_lazy_first_launches_test_k4() {
        for c in cases() {
            let f = facts(&c);
            let loads_here = matches!(f.call, Call::ModuleGetFunction | Call::KernelGetFunction) || f.call.is_launch();
            assert_eq!(c.rule().0 == "K4", loads_here && f.loading == Loading::Lazy, "{}", c.id());
        }
    }
}

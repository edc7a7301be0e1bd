//! Kernel launches: a warm launch (K1), a launch in a process started with CUDA_LAUNCH_BLOCKING=1 (K2) and
//! the launch queue's depth (K5). A kernel's *first* launch, which under lazy loading loads it (K4), is
//! measured with the other ways of loading code (the loading family).

use super::{api_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::*;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, StreamKind};
use serde::{Deserialize, Serialize};

/// One launch experiment. Every launch goes on a non-blocking stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaunchFacts {
    /// An empty kernel, launched not for the first time, behind a blocker in the same stream.
    Warm,
    /// A 1 ms kernel in a process started with CUDA_LAUNCH_BLOCKING=1, without a blocker (every launch, the
    /// blocker's too, would wait).
    EnvBlocking,
    /// 20 µs kernels behind a 300 ms blocker until a launch has to wait for room in the queue: that launch.
    QueueDepth,
}

impl LaunchFacts {
    fn slug(self) -> &'static str {
        match self {
            LaunchFacts::Warm => "warm",
            LaunchFacts::EnvBlocking => "env-blocking",
            LaunchFacts::QueueDepth => "queue-depth",
        }
    }

    fn blocker(self) -> BlockerPlacement {
        match self {
            LaunchFacts::EnvBlocking => BlockerPlacement::None,
            LaunchFacts::Warm | LaunchFacts::QueueDepth => BlockerPlacement::Same,
        }
    }
}

impl Experiment for LaunchFacts {
    fn family(&self) -> Family {
        Family::Launch
    }

    fn id(&self) -> String {
        let blocker = if self.blocker() == BlockerPlacement::None { "none" } else { "same" };
        format!("launch/{}/nonblocking/{blocker}", self.slug())
    }

    fn call(&self, api: Api) -> &'static str {
        match api {
            Api::Driver => "cuLaunchKernel",
            Api::Runtime => "cudaLaunchKernel",
        }
    }

    fn runtime_twin(&self) -> bool {
        true
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        match self {
            LaunchFacts::Warm => ("K1", Expected::classes(&[Async])),
            LaunchFacts::EnvBlocking => ("K2", Expected::classes(&[Blocking])),
            LaunchFacts::QueueDepth => ("K5", Expected::undocumented()),
        }
    }

    fn what(&self, api: Api) -> String {
        let call = self.call(api);
        let what = match self {
            LaunchFacts::Warm => {
                format!(
                    "an empty kernel launched with {call} (not for the first time) behind a blocker in the same stream"
                )
            }
            LaunchFacts::EnvBlocking => format!(
                "a 1 ms kernel launched with {call} in a process started with CUDA_LAUNCH_BLOCKING=1 (no blocker: \
                 every launch, the blocker's too, would wait)"
            ),
            LaunchFacts::QueueDepth => format!(
                "20 µs kernels launched with {call} one after another behind a 300 ms blocker until a launch has \
                 to wait; the call measured is that launch"
            ),
        };
        format!("{what}{}", api_words(api))
    }

    fn layout(&self) -> Layout {
        let mut l = Layout::behind(StreamKind::NonBlocking, self.blocker());
        if self.blocker() == BlockerPlacement::None {
            l.blocker_stream = None;
        }
        l
    }

    /// CUDA_LAUNCH_BLOCKING is read once, when the driver starts.
    fn child_env(&self) -> Option<(&'static str, &'static str)> {
        match self {
            LaunchFacts::EnvBlocking => Some(("CUDA_LAUNCH_BLOCKING", "1")),
            LaunchFacts::Warm | LaunchFacts::QueueDepth => None,
        }
    }
}

impl From<LaunchFacts> for Facts {
    fn from(f: LaunchFacts) -> Facts {
        Facts::Launch(f)
    }
}

/// A warm launch, a launch with CUDA_LAUNCH_BLOCKING=1, and the launch queue's depth.
pub fn cases() -> Vec<Case> {
    [LaunchFacts::Warm, LaunchFacts::EnvBlocking, LaunchFacts::QueueDepth].into_iter().map(Case::driver).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_launch_with_the_variable_set_has_no_blocker_and_runs_in_a_child_process() {
        let ids: Vec<String> = cases().iter().map(Case::id).collect();
        assert_eq!(
            ids,
            [
                "launch/warm/nonblocking/same",
                "launch/env-blocking/nonblocking/none",
                "launch/queue-depth/nonblocking/same"
            ]
        );
        for f in [LaunchFacts::Warm, LaunchFacts::EnvBlocking, LaunchFacts::QueueDepth] {
            let env = f == LaunchFacts::EnvBlocking;
            assert_eq!(f.child_env().is_some(), env, "{}", f.id());
            assert_eq!(f.layout().blocker_stream.is_none(), env, "{}", f.id());
            assert_eq!(f.layout().blocker_ahead, !env, "{}", f.id());
        }
    }

    #[test]
    fn the_runtime_words_name_the_runtime_call() {
        let rt = Case::runtime(LaunchFacts::Warm);
        assert_eq!(rt.id(), "runtime/launch/warm/nonblocking/same");
        assert_eq!(rt.call(), "cudaLaunchKernel");
        let what = rt.facts.what(Api::Runtime);
        assert!(what.contains("cudaLaunchKernel") && what.ends_with("through the runtime API"), "{what}");
    }
}

//! Host callbacks (`cuLaunchHostFunc` and the older `cuStreamAddCallback`, the seed's call; rule CB1) and
//! destroying a stream that still has work (SD1), each behind a blocker in the same non-blocking stream.

use super::{api_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::*;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, StreamKind};
use serde::{Deserialize, Serialize};

/// One callback experiment: the call made behind the blocker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CallbackFacts {
    /// Enqueueing a host function; also measured: how long after the blocker ends it runs.
    LaunchHostFunc,
    /// Enqueueing a stream callback (the seed program's call); also measured as above.
    StreamAddCallback,
    /// Destroying the stream while the blocker still runs in it.
    StreamDestroy,
}

impl CallbackFacts {
    fn slug(self) -> &'static str {
        match self {
            CallbackFacts::LaunchHostFunc => "launch-host-func",
            CallbackFacts::StreamAddCallback => "stream-add-callback",
            CallbackFacts::StreamDestroy => "stream-destroy",
        }
    }
}

impl Experiment for CallbackFacts {
    fn family(&self) -> Family {
        Family::Callback
    }

    fn id(&self) -> String {
        format!("callback/{}/nonblocking/same", self.slug())
    }

    fn call(&self, api: Api) -> &'static str {
        match (api, self) {
            (Api::Driver, CallbackFacts::LaunchHostFunc) => "cuLaunchHostFunc",
            (Api::Driver, CallbackFacts::StreamAddCallback) => "cuStreamAddCallback",
            (Api::Driver, CallbackFacts::StreamDestroy) => "cuStreamDestroy",
            (Api::Runtime, CallbackFacts::LaunchHostFunc) => "cudaLaunchHostFunc",
            (Api::Runtime, CallbackFacts::StreamAddCallback) => "cudaStreamAddCallback",
            (Api::Runtime, CallbackFacts::StreamDestroy) => "cudaStreamDestroy",
        }
    }

    fn runtime_twin(&self) -> bool {
        true
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        match self {
            CallbackFacts::LaunchHostFunc | CallbackFacts::StreamAddCallback => ("CB1", Expected::classes(&[Async])),
            CallbackFacts::StreamDestroy => ("SD1", Expected::classes(&[Async])),
        }
    }

    fn what(&self, api: Api) -> String {
        let call = self.call(api);
        let what = match self {
            CallbackFacts::LaunchHostFunc => format!(
                "enqueueing a host function ({call}) behind a blocker in the same stream; also measured: how long \
                 after the blocker ends the function runs"
            ),
            CallbackFacts::StreamAddCallback => format!(
                "enqueueing a stream callback ({call}, the seed program's call) behind a blocker in the same \
                 stream; also measured: how long after the blocker ends it runs"
            ),
            CallbackFacts::StreamDestroy => {
                format!("destroying a stream ({call}) while a blocker still runs in it")
            }
        };
        format!("{what}{}", api_words(api))
    }

    fn layout(&self) -> Layout {
        Layout::behind(StreamKind::NonBlocking, BlockerPlacement::Same)
    }
}

impl From<CallbackFacts> for Facts {
    fn from(f: CallbackFacts) -> Facts {
        Facts::Callback(f)
    }
}

/// Both ways to enqueue a host callback, and destroying a stream with work.
pub fn cases() -> Vec<Case> {
    [CallbackFacts::LaunchHostFunc, CallbackFacts::StreamAddCallback, CallbackFacts::StreamDestroy]
        .into_iter()
        .map(Case::driver)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_calls_and_rules() {
        let got: Vec<(String, &str, &str)> = cases().iter().map(|c| (c.id(), c.call(), c.rule().0)).collect();
        let want = [
            ("callback/launch-host-func/nonblocking/same", "cuLaunchHostFunc", "CB1"),
            ("callback/stream-add-callback/nonblocking/same", "cuStreamAddCallback", "CB1"),
            ("callback/stream-destroy/nonblocking/same", "cuStreamDestroy", "SD1"),
        ];
        assert_eq!(got, want.map(|(id, call, rule)| (id.to_owned(), call, rule)));
        let twin = cases()[2].runtime_twin().expect("a runtime twin");
        assert_eq!(
            (twin.id().as_str(), twin.call()),
            ("runtime/callback/stream-destroy/nonblocking/same", "cudaStreamDestroy")
        );
        let what = twin.facts.what(twin.api);
        assert!(what.contains("cudaStreamDestroy") && what.ends_with("through the runtime API"), "{what}");
    }
}

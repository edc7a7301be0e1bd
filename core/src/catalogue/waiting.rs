//! How the host waits for a 100 ms kernel: `cuStreamSynchronize` in contexts created with each scheduling flag
//! (rule W1), and `cuEventSynchronize` on a default and a BLOCKING_SYNC event (W2). What each predicts is a
//! way of waiting (busy or asleep), not a class.
//!
//! The driver cases create a context with the flag; the runtime's set it with `cudaSetDeviceFlags` on the
//! running primary context, the way a runtime program changes how it waits after start-up.

use super::{api_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::rules::{Expected, WaitStyle};
use crate::setup::{BlockerPlacement, Family, StreamKind};
use serde::{Deserialize, Serialize};

/// A context's scheduling flag: how a thread waiting for the GPU waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedFlag {
    Spin,
    Yield,
    BlockingSync,
    Auto,
}

impl SchedFlag {
    pub const ALL: [SchedFlag; 4] = [SchedFlag::Spin, SchedFlag::Yield, SchedFlag::BlockingSync, SchedFlag::Auto];

    pub fn slug(self) -> &'static str {
        match self {
            SchedFlag::Spin => "spin",
            SchedFlag::Yield => "yield",
            SchedFlag::BlockingSync => "blocking-sync",
            SchedFlag::Auto => "auto",
        }
    }

    /// The flag's name in `api`: the driver's context flag, the runtime's device flag.
    pub fn name(self, api: Api) -> &'static str {
        match (api, self) {
            (Api::Driver, SchedFlag::Spin) => "CU_CTX_SCHED_SPIN",
            (Api::Driver, SchedFlag::Yield) => "CU_CTX_SCHED_YIELD",
            (Api::Driver, SchedFlag::BlockingSync) => "CU_CTX_SCHED_BLOCKING_SYNC",
            (Api::Driver, SchedFlag::Auto) => "CU_CTX_SCHED_AUTO",
            (Api::Runtime, SchedFlag::Spin) => "cudaDeviceScheduleSpin",
            (Api::Runtime, SchedFlag::Yield) => "cudaDeviceScheduleYield",
            (Api::Runtime, SchedFlag::BlockingSync) => "cudaDeviceScheduleBlockingSync",
            (Api::Runtime, SchedFlag::Auto) => "cudaDeviceScheduleAuto",
        }
    }
}

/// One wait for a 100 ms kernel on a non-blocking stream (the protocol's blocker, ahead of the wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitFacts {
    /// Waiting for the stream, with the context's (or device's) scheduling flag set.
    StreamSync(SchedFlag),
    /// Waiting for an event recorded after the kernel, created with default flags or BLOCKING_SYNC.
    EventSync { blocking_sync: bool },
}

impl Experiment for WaitFacts {
    fn family(&self) -> Family {
        Family::Wait
    }

    fn id(&self) -> String {
        match self {
            WaitFacts::StreamSync(flag) => format!("wait/stream-sync/{}", flag.slug()),
            WaitFacts::EventSync { blocking_sync } => {
                format!("wait/event-sync/{}", if *blocking_sync { "blocking-sync" } else { "default" })
            }
        }
    }

    fn call(&self, api: Api) -> &'static str {
        match (api, self) {
            (Api::Driver, WaitFacts::StreamSync(_)) => "cuStreamSynchronize",
            (Api::Driver, WaitFacts::EventSync { .. }) => "cuEventSynchronize",
            (Api::Runtime, WaitFacts::StreamSync(_)) => "cudaStreamSynchronize",
            (Api::Runtime, WaitFacts::EventSync { .. }) => "cudaEventSynchronize",
        }
    }

    fn runtime_twin(&self) -> bool {
        true
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        let busy = || Expected::WaitStyle { styles: vec![WaitStyle::Busy] };
        let sleeps = || Expected::WaitStyle { styles: vec![WaitStyle::Sleeps] };
        match self {
            WaitFacts::StreamSync(SchedFlag::Spin) => ("W1", busy()),
            // "Yield" says the thread yields, not whether it burns CPU time meanwhile: no prediction.
            WaitFacts::StreamSync(SchedFlag::Yield) => ("W1", Expected::undocumented()),
            WaitFacts::StreamSync(SchedFlag::BlockingSync) => ("W1", sleeps()),
            // With one context and many CPUs, AUTO spins.
            WaitFacts::StreamSync(SchedFlag::Auto) => ("W1", busy()),
            WaitFacts::EventSync { blocking_sync: true } => ("W2", sleeps()),
            WaitFacts::EventSync { blocking_sync: false } => ("W2", busy()),
        }
    }

    fn what(&self, api: Api) -> String {
        let call = self.call(api);
        let what = match (self, api) {
            (WaitFacts::StreamSync(flag), Api::Driver) => {
                format!("{call} on a 100 ms kernel, in a context created with {}", flag.name(api))
            }
            (WaitFacts::StreamSync(flag), Api::Runtime) => format!(
                "{call} on a 100 ms kernel, after cudaSetDeviceFlags({}) on the running primary context",
                flag.name(api)
            ),
            (WaitFacts::EventSync { blocking_sync }, _) => format!(
                "{call} on an event created with {} recorded after a 100 ms kernel",
                match (blocking_sync, api) {
                    (false, _) => "default flags",
                    (true, Api::Driver) => "CU_EVENT_BLOCKING_SYNC",
                    (true, Api::Runtime) => "cudaEventBlockingSync",
                }
            ),
        };
        format!("{what}{}", api_words(api))
    }

    fn layout(&self) -> Layout {
        // The 100 ms kernel the call waits for is the protocol's blocker, ahead of it in its stream.
        Layout::behind(StreamKind::NonBlocking, BlockerPlacement::Same)
    }
}

impl From<WaitFacts> for Facts {
    fn from(f: WaitFacts) -> Facts {
        Facts::Wait(f)
    }
}

/// A stream wait with each scheduling flag, and an event wait on each kind of event.
pub fn cases() -> Vec<Case> {
    let mut v: Vec<Case> = SchedFlag::ALL.into_iter().map(|f| Case::driver(WaitFacts::StreamSync(f))).collect();
    v.extend([false, true].map(|blocking_sync| Case::driver(WaitFacts::EventSync { blocking_sync })));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_words_name_the_context_flag_and_the_runtime_words_the_device_flag() {
        let spin = WaitFacts::StreamSync(SchedFlag::BlockingSync);
        assert_eq!(spin.id(), "wait/stream-sync/blocking-sync");
        assert_eq!(
            spin.what(Api::Driver),
            "cuStreamSynchronize on a 100 ms kernel, in a context created with CU_CTX_SCHED_BLOCKING_SYNC"
        );
        assert_eq!(
            spin.what(Api::Runtime),
            "cudaStreamSynchronize on a 100 ms kernel, after cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) \
             on the running primary context, through the runtime API"
        );
        let event = WaitFacts::EventSync { blocking_sync: true };
        assert_eq!(event.id(), "wait/event-sync/blocking-sync");
        assert!(event.what(Api::Runtime).contains("cudaEventBlockingSync"));
    }

    #[test]
    fn every_wait_waits_for_the_blocker_ahead_of_it() {
        for c in cases() {
            let l = c.facts.layout();
            assert!(l.blocker_ahead && l.blocker == BlockerPlacement::Same, "{}", c.id());
            assert_eq!(l.blocker_stream, l.stream, "{}", c.id());
        }
    }
}

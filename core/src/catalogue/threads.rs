//! Threads (rule TH1): one thread's quick asynchronous call while another thread of the same process, in the
//! same context, is inside a slow driver call, or while a host function runs on the driver's callback thread.
//! The runtime twins make the quick call through the runtime; the slow call stays the driver's, so that the
//! quick call's API is the one difference between a case and its twin.

use super::copies::CopyCall;
use super::{api_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, HostKind, StreamKind};
use serde::{Deserialize, Serialize};

/// What the other thread's slow calls move or take.
pub const SLOW_BYTES: u64 = 256 << 20;
/// What the quick copy moves.
pub const QUICK_BYTES: u64 = 4096;
/// How long the host function spins (ms).
pub const HOST_FUNC_SPIN_MS: u64 = 30;

/// The other thread's slow call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlowCall {
    PageableCopy,
    AllocHost,
    HostRegister,
    ModuleLoad,
    /// Not a driver call: a host function spinning `HOST_FUNC_SPIN_MS` on the driver's callback thread.
    HostFunc,
}

impl SlowCall {
    pub const ALL: [SlowCall; 5] =
        [SlowCall::PageableCopy, SlowCall::AllocHost, SlowCall::HostRegister, SlowCall::ModuleLoad, SlowCall::HostFunc];

    fn slug(self) -> &'static str {
        match self {
            SlowCall::PageableCopy => "pageable-copy",
            SlowCall::AllocHost => "alloc-host",
            SlowCall::HostRegister => "host-register",
            SlowCall::ModuleLoad => "module-load",
            SlowCall::HostFunc => "host-func",
        }
    }

    fn words(self) -> &'static str {
        match self {
            SlowCall::PageableCopy => "a 256 MiB pageable host → device cuMemcpyHtoD",
            SlowCall::AllocHost => "a 256 MiB cuMemAllocHost",
            SlowCall::HostRegister => "a 256 MiB cuMemHostRegister",
            SlowCall::ModuleLoad => "a cuModuleLoadData of the kernels' PTX",
            SlowCall::HostFunc => {
                "a 30 ms host function (cuLaunchHostFunc on a stream of its own, running on the driver's callback thread)"
            }
        }
    }
}

/// The measuring thread's quick call, on its own non-blocking stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QuickCall {
    /// An empty kernel's launch.
    Launch,
    /// A 4 KiB pinned host → device `cuMemcpyHtoDAsync`.
    PinnedCopyAsync,
    /// A `cuEventRecord`: the call the protocol itself makes around a blocker, and which waited for the other
    /// thread in the recordings of an older order (see the measuring file's doc).
    EventRecord,
}

impl QuickCall {
    pub const ALL: [QuickCall; 3] = [QuickCall::Launch, QuickCall::PinnedCopyAsync, QuickCall::EventRecord];

    fn slug(self) -> &'static str {
        match self {
            QuickCall::Launch => "launch",
            QuickCall::PinnedCopyAsync => "pinned-copy-async",
            QuickCall::EventRecord => "event-record",
        }
    }

    /// The call through `api`.
    fn call(self, api: Api) -> &'static str {
        match (self, api) {
            (QuickCall::Launch, Api::Driver) => "cuLaunchKernel",
            (QuickCall::Launch, Api::Runtime) => "cudaLaunchKernel",
            (QuickCall::PinnedCopyAsync, Api::Driver) => CopyCall::HtoDAsync.name(),
            (QuickCall::PinnedCopyAsync, Api::Runtime) => CopyCall::HtoDAsync.runtime_name(),
            (QuickCall::EventRecord, Api::Driver) => "cuEventRecord",
            (QuickCall::EventRecord, Api::Runtime) => "cudaEventRecord",
        }
    }
}

/// One threads experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadFacts {
    pub slow: SlowCall,
    pub quick: QuickCall,
}

impl Experiment for ThreadFacts {
    fn family(&self) -> Family {
        Family::Threads
    }

    /// `in-`: the quick call is made inside the slow call (recordings made before that order have ids
    /// without it).
    fn id(&self) -> String {
        format!("threads/in-{}/{}/nonblocking/same", self.slow.slug(), self.quick.slug())
    }

    fn call(&self, api: Api) -> &'static str {
        self.quick.call(api)
    }

    fn runtime_twin(&self) -> bool {
        true
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        ("TH1", Expected::undocumented())
    }

    fn what(&self, api: Api) -> String {
        format!(
            "{} behind a blocker in its own stream, made while another thread is inside {}{}",
            self.call(api),
            self.slow.words(),
            api_words(api)
        )
    }

    fn layout(&self) -> Layout {
        let copy = self.quick == QuickCall::PinnedCopyAsync;
        let mut l = Layout::behind(StreamKind::NonBlocking, BlockerPlacement::Same);
        l.host_memory = copy.then_some(HostKind::Pinned);
        l.bytes = if copy { QUICK_BYTES } else { 0 };
        l
    }
}

impl From<ThreadFacts> for Facts {
    fn from(f: ThreadFacts) -> Facts {
        Facts::Threads(f)
    }
}

/// Every slow call with every quick call.
pub fn cases() -> Vec<Case> {
    SlowCall::ALL
        .into_iter()
        .flat_map(|slow| QuickCall::ALL.into_iter().map(move |quick| Case::driver(ThreadFacts { slow, quick })))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slow_call_meets_every_quick_call() {
        let cases = cases();
        assert_eq!(cases.len(), 15);
        let mut ids: Vec<String> = cases.iter().map(Case::id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 15);
        assert!(cases.iter().all(|c| c.facts.layout().blocker_ahead && c.rule().0 == "TH1"));
        // The ids of this order are not those of the recordings made before it (see the measuring file's doc).
        assert!(ids.iter().all(|id| id.starts_with("threads/in-")), "{ids:?}");
    }

    #[test]
    fn a_host_function_running_is_a_slow_call_like_the_others() {
        let cases = cases();
        let host_func: Vec<&Case> = cases.iter().filter(|c| c.id().starts_with("threads/in-host-func/")).collect();
        let ids: Vec<String> = host_func.iter().map(|c| c.id()).collect();
        assert_eq!(
            ids,
            [
                "threads/in-host-func/launch/nonblocking/same",
                "threads/in-host-func/pinned-copy-async/nonblocking/same",
                "threads/in-host-func/event-record/nonblocking/same",
            ]
        );
        for c in host_func {
            assert_eq!(c.rule().0, "TH1");
            let what = c.facts.what(c.api);
            assert!(what.contains("cuLaunchHostFunc") && what.contains("30 ms"), "{what}");
            // Every quick call has its runtime twin, as for the other slow calls.
            let twin = c.runtime_twin().unwrap_or_else(|| panic!("{} has no runtime twin", c.id()));
            assert!(twin.call().starts_with("cuda"), "{}", twin.call());
        }
        // The words say how long it spins, and each slow call has its own slug.
        assert!(SlowCall::HostFunc.words().contains(&format!("{HOST_FUNC_SPIN_MS} ms")));
        for slow in [SlowCall::PageableCopy, SlowCall::AllocHost, SlowCall::HostRegister] {
            assert!(slow.words().contains(&format!("{} MiB", SLOW_BYTES >> 20)), "{}", slow.words());
        }
        let slugs = SlowCall::ALL.map(SlowCall::slug);
        assert!(slugs.iter().enumerate().all(|(i, s)| !slugs[..i].contains(s)), "{slugs:?}");
    }

    #[test]
    fn a_runtime_twin_names_the_runtime_quick_call_and_keeps_the_driver_slow_call() {
        let c = Case::driver(ThreadFacts { slow: SlowCall::PageableCopy, quick: QuickCall::PinnedCopyAsync });
        let twin = c.runtime_twin().expect("a twin");
        assert_eq!(twin.call(), "cudaMemcpyAsync(HostToDevice)");
        assert_eq!(
            twin.facts.what(twin.api),
            "cudaMemcpyAsync(HostToDevice) behind a blocker in its own stream, made while another thread is inside \
             a 256 MiB pageable host → device cuMemcpyHtoD, through the runtime API"
        );
    }
}

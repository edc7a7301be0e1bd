//! Unified-memory hints (rules UM1, UM2): prefetching managed memory to the GPU and back, and ordinary
//! pageable memory to the GPU (`cuMemPrefetchAsync`), next to a blocker in the call's stream or on another
//! stream; and advice on a managed range (`cuMemAdvise`: read-mostly, preferred location, accessed-by) while
//! a blocker runs on the legacy stream or on a non-blocking one. Every call has a runtime twin
//! (`cudaMemPrefetchAsync`, `cudaMemAdvise`).

use super::{api_words, Case, Experiment, Facts, Layout, Placement};
use crate::api::Api;
use crate::class::Class::*;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, HostKind, StreamKind};
use crate::units::format_size;
use serde::{Deserialize, Serialize};

/// The managed range every case works on.
pub const BYTES: u64 = 64 << 20;

/// The hint a case gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HintCall {
    /// Pages written by the host, prefetched to the GPU.
    PrefetchToDevice,
    /// Pages written by a kernel, prefetched to the host.
    PrefetchToHost,
    /// Ordinary (pageable, system-allocated) memory the host wrote, prefetched to the GPU: only where the GPU can
    /// access pageable memory (`CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`).
    PrefetchPageableToDevice,
    /// `CU_MEM_ADVISE_SET_READ_MOSTLY`.
    ReadMostly,
    /// `CU_MEM_ADVISE_SET_PREFERRED_LOCATION` to the GPU.
    PreferredLocation,
    /// `CU_MEM_ADVISE_SET_ACCESSED_BY` the GPU.
    AccessedBy,
}

impl HintCall {
    fn slug(self) -> &'static str {
        match self {
            HintCall::PrefetchToDevice => "prefetch/to-device",
            HintCall::PrefetchToHost => "prefetch/to-host",
            HintCall::PrefetchPageableToDevice => "prefetch/pageable-to-device",
            HintCall::ReadMostly => "advise/read-mostly",
            HintCall::PreferredLocation => "advise/preferred-location",
            HintCall::AccessedBy => "advise/accessed-by",
        }
    }

    /// A prefetch (on a stream), not advice (on none).
    pub fn is_prefetch(self) -> bool {
        matches!(self, HintCall::PrefetchToDevice | HintCall::PrefetchToHost | HintCall::PrefetchPageableToDevice)
    }

    /// The memory the hint is about: pageable for the pageable prefetch, managed otherwise.
    pub fn host_memory(self) -> HostKind {
        if self == HintCall::PrefetchPageableToDevice {
            HostKind::Pageable
        } else {
            HostKind::Managed
        }
    }

    fn words(self) -> &'static str {
        match self {
            HintCall::PrefetchToDevice => "prefetching managed memory the host wrote last to the GPU",
            HintCall::PrefetchToHost => "prefetching managed memory a kernel wrote last to the host",
            HintCall::PrefetchPageableToDevice => "prefetching ordinary pageable memory the host wrote to the GPU",
            HintCall::ReadMostly => "advising a managed range, resident on the GPU, as read-mostly",
            HintCall::PreferredLocation => "advising the GPU as the preferred location of a managed range on the GPU",
            HintCall::AccessedBy => "advising that the GPU accesses a managed range resident on the GPU",
        }
    }
}

/// One unified-memory hint experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HintFacts {
    pub call: HintCall,
    /// Prefetches: the blocker in the call's stream (ahead) or on another. Advice has no stream: the blocker
    /// is on `blocker_stream`, never ahead.
    pub blocker: BlockerPlacement,
    pub blocker_stream: StreamKind,
    pub bytes: u64,
}

impl HintFacts {
    pub fn placement(&self) -> Placement {
        Placement { has_stream: self.call.is_prefetch(), blocker: self.blocker, blocker_stream: self.blocker_stream }
    }
}

impl Experiment for HintFacts {
    fn family(&self) -> Family {
        Family::Unified
    }

    fn id(&self) -> String {
        format!("unified/{}/{}/{}", self.call.slug(), self.placement().id_part(), format_size(self.bytes))
    }

    fn call(&self, api: Api) -> &'static str {
        match (self.call.is_prefetch(), api) {
            (true, Api::Driver) => "cuMemPrefetchAsync",
            (true, Api::Runtime) => "cudaMemPrefetchAsync",
            (false, Api::Driver) => "cuMemAdvise",
            (false, Api::Runtime) => "cudaMemAdvise",
        }
    }

    fn runtime_twin(&self) -> bool {
        true
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        if self.call.is_prefetch() {
            // "Asynchronous with respect to the host and all work on other devices": returning at once is the
            // rule, whether or not the prefetch itself had run by then cannot be known at the return.
            ("UM1", Expected::classes(&[Async]))
        } else {
            ("UM2", Expected::undocumented())
        }
    }

    fn what(&self, api: Api) -> String {
        format!(
            "{} ({}, {}), with a blocker {}{}",
            self.call.words(),
            self.call(api),
            format_size(self.bytes),
            self.placement().words(),
            api_words(api)
        )
    }

    fn layout(&self) -> Layout {
        let mut l = self.placement().layout();
        l.host_memory = Some(self.call.host_memory());
        l.bytes = self.bytes;
        l
    }
}

impl From<HintFacts> for Facts {
    fn from(f: HintFacts) -> Facts {
        Facts::Unified(f)
    }
}

/// Each prefetch with its blocker in its stream and on another; each advice next to a blocker on the legacy
/// and on a non-blocking stream.
pub fn cases() -> Vec<Case> {
    let hint = |call, blocker, blocker_stream| Case::driver(HintFacts { call, blocker, blocker_stream, bytes: BYTES });
    let mut v = Vec::new();
    for call in [HintCall::PrefetchToDevice, HintCall::PrefetchToHost, HintCall::PrefetchPageableToDevice] {
        for blocker in [BlockerPlacement::Same, BlockerPlacement::Other] {
            v.push(hint(call, blocker, StreamKind::NonBlocking));
        }
    }
    for call in [HintCall::ReadMostly, HintCall::PreferredLocation, HintCall::AccessedBy] {
        for blocker_stream in [StreamKind::Legacy, StreamKind::NonBlocking] {
            v.push(hint(call, BlockerPlacement::Other, blocker_stream));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetches_have_a_stream_and_both_placements_advice_has_none() {
        let cases = cases();
        let prefetch: Vec<&Case> = cases.iter().filter(|c| c.call() == "cuMemPrefetchAsync").collect();
        assert_eq!(prefetch.len(), 6);
        assert!(prefetch.iter().all(|c| c.facts.layout().stream.is_some() && c.rule().0 == "UM1"));
        assert_eq!(prefetch.iter().filter(|c| c.facts.layout().blocker_ahead).count(), 3);
        let advise: Vec<&Case> = cases.iter().filter(|c| c.call() == "cuMemAdvise").collect();
        assert_eq!(advise.len(), 6);
        assert!(advise.iter().all(|c| {
            let l = c.facts.layout();
            l.stream.is_none() && !l.blocker_ahead && c.rule().0 == "UM2"
        }));
        let pageable = |c: &&&Case| c.facts.layout().host_memory == Some(HostKind::Pageable);
        assert_eq!(prefetch.iter().filter(pageable).count(), 2);
        assert!(cases.iter().all(|c| c.facts.layout().bytes == BYTES));
        assert!(advise.iter().all(|c| c.facts.layout().host_memory == Some(HostKind::Managed)));
    }

    #[test]
    fn ids_calls_and_words_through_both_apis() {
        let c = Case::driver(HintFacts {
            call: HintCall::ReadMostly,
            blocker: BlockerPlacement::Other,
            blocker_stream: StreamKind::Legacy,
            bytes: BYTES,
        });
        assert_eq!(c.id(), "unified/advise/read-mostly/legacy/64MiB");
        let twin = c.runtime_twin().expect("a runtime twin");
        assert_eq!(
            (twin.id().as_str(), twin.call()),
            ("runtime/unified/advise/read-mostly/legacy/64MiB", "cudaMemAdvise")
        );
        assert_eq!(
            twin.facts.what(Api::Runtime),
            "advising a managed range, resident on the GPU, as read-mostly (cudaMemAdvise, 64MiB), with a blocker on \
             the legacy stream, through the runtime API"
        );
    }
}

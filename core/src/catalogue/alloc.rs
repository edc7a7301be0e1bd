//! Allocation, freeing and registration: do they wait for work already running on the GPU? (rules AL1–AL4,
//! ST4). Calls without a stream are measured next to a blocker on the legacy stream and on a non-blocking
//! stream; stream-ordered allocation next to a blocker in its own stream and on another, with the default
//! pool releasing its memory at every synchronization or keeping it.

use super::{api_words, blocker_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::*;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, StreamKind};
use crate::units::format_size;
use serde::{Deserialize, Serialize};

/// The call under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AllocCall {
    MemAlloc,
    MemFree,
    AllocHost,
    FreeHost,
    HostRegister,
    HostUnregister,
    AllocManaged,
    AllocAsync,
    FreeAsync,
}

impl AllocCall {
    pub fn slug(self) -> &'static str {
        match self {
            AllocCall::MemAlloc => "mem-alloc",
            AllocCall::MemFree => "mem-free",
            AllocCall::AllocHost => "alloc-host",
            AllocCall::FreeHost => "free-host",
            AllocCall::HostRegister => "host-register",
            AllocCall::HostUnregister => "host-unregister",
            AllocCall::AllocManaged => "alloc-managed",
            AllocCall::AllocAsync => "alloc-async",
            AllocCall::FreeAsync => "free-async",
        }
    }

    /// The function the call goes through, in `api`.
    pub fn name(self, api: Api) -> &'static str {
        match (api, self) {
            (Api::Driver, AllocCall::MemAlloc) => "cuMemAlloc",
            (Api::Driver, AllocCall::MemFree) => "cuMemFree",
            (Api::Driver, AllocCall::AllocHost) => "cuMemAllocHost",
            (Api::Driver, AllocCall::FreeHost) => "cuMemFreeHost",
            (Api::Driver, AllocCall::HostRegister) => "cuMemHostRegister",
            (Api::Driver, AllocCall::HostUnregister) => "cuMemHostUnregister",
            (Api::Driver, AllocCall::AllocManaged) => "cuMemAllocManaged",
            (Api::Driver, AllocCall::AllocAsync) => "cuMemAllocAsync",
            (Api::Driver, AllocCall::FreeAsync) => "cuMemFreeAsync",
            (Api::Runtime, AllocCall::MemAlloc) => "cudaMalloc",
            (Api::Runtime, AllocCall::MemFree) => "cudaFree",
            (Api::Runtime, AllocCall::AllocHost) => "cudaMallocHost",
            (Api::Runtime, AllocCall::FreeHost) => "cudaFreeHost",
            (Api::Runtime, AllocCall::HostRegister) => "cudaHostRegister",
            (Api::Runtime, AllocCall::HostUnregister) => "cudaHostUnregister",
            (Api::Runtime, AllocCall::AllocManaged) => "cudaMallocManaged",
            (Api::Runtime, AllocCall::AllocAsync) => "cudaMallocAsync",
            (Api::Runtime, AllocCall::FreeAsync) => "cudaFreeAsync",
        }
    }

    /// Whether the call takes a stream (allocation from the stream-ordered allocator's pool).
    pub fn stream_ordered(self) -> bool {
        matches!(self, AllocCall::AllocAsync | AllocCall::FreeAsync)
    }
}

/// The default memory pool's release threshold during a stream-ordered experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pool {
    /// The default (0): the pool gives memory back at every synchronization, so allocations refill it.
    Threshold0,
    /// Threshold at its maximum and the pool primed: allocations are served from memory the pool keeps.
    Warm,
}

/// One allocation experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocFacts {
    pub call: AllocCall,
    /// For stream-ordered calls: the pool's release threshold (`Threshold0` for the others).
    pub pool: Pool,
    /// For calls without a stream: the stream the blocker runs on (legacy or non-blocking).
    pub blocker_stream: StreamKind,
    /// For stream-ordered calls: blocker in the call's stream or on another (`Other` for the others).
    pub blocker: BlockerPlacement,
    pub bytes: u64,
}

impl Experiment for AllocFacts {
    fn family(&self) -> Family {
        Family::Alloc
    }

    fn id(&self) -> String {
        let c = self.call;
        if c.stream_ordered() {
            let pool = if self.pool == Pool::Warm { "warm-pool" } else { "threshold-0" };
            let same = if self.blocker == BlockerPlacement::Same { "same" } else { "other" };
            format!("alloc/{}/{pool}/nonblocking/{same}", c.slug())
        } else {
            format!("alloc/{}/{}", c.slug(), self.blocker_stream.slug())
        }
    }

    fn call(&self, api: Api) -> &'static str {
        self.call.name(api)
    }

    fn runtime_twin(&self) -> bool {
        true
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        match self.call {
            AllocCall::MemAlloc | AllocCall::AllocManaged => ("ST4", Expected::undocumented()),
            AllocCall::MemFree => ("AL1", Expected::classes(&[DeviceSync])),
            AllocCall::AllocHost | AllocCall::FreeHost => ("AL3", Expected::undocumented()),
            AllocCall::HostRegister | AllocCall::HostUnregister => ("AL4", Expected::undocumented()),
            // With the blocker on another stream the call's own stream is not asked about (the host's probe
            // says why): these once took `blocking` as a second class, only to absorb what that query could not
            // tell.
            AllocCall::AllocAsync | AllocCall::FreeAsync => ("AL2", Expected::classes(&[Async])),
        }
    }

    fn what(&self, api: Api) -> String {
        let size = format_size(self.bytes);
        let what = if self.call.stream_ordered() {
            format!(
                "{} of {size} from the default pool ({}), with a blocker {}",
                self.call(api),
                match self.pool {
                    Pool::Warm => "release threshold at its maximum, pool primed",
                    Pool::Threshold0 => "release threshold 0, the default",
                },
                blocker_words(self.blocker == BlockerPlacement::Same)
            )
        } else {
            format!("{} of {size} while a blocker runs on the {} stream", self.call(api), self.blocker_stream.slug())
        };
        format!("{what}{}", api_words(api))
    }

    fn layout(&self) -> Layout {
        let mut l = if self.call.stream_ordered() {
            Layout::behind(StreamKind::NonBlocking, self.blocker)
        } else {
            // No stream of its own: the blocker runs on the stream the facts name, and the call is not ordered after it.
            Layout {
                stream: None,
                blocker: BlockerPlacement::Other,
                blocker_stream: Some(self.blocker_stream),
                blocker_ahead: false,
                ..Layout::NOTHING
            }
        };
        l.bytes = self.bytes;
        l
    }
}

impl From<AllocFacts> for Facts {
    fn from(f: AllocFacts) -> Facts {
        Facts::Alloc(f)
    }
}

/// Each call without a stream next to a blocker on the legacy and on a non-blocking stream; each
/// stream-ordered call with each pool threshold, the blocker in its stream and on another.
pub fn cases(bytes: u64) -> Vec<Case> {
    let mut v = Vec::new();
    for call in [
        AllocCall::MemAlloc,
        AllocCall::MemFree,
        AllocCall::AllocHost,
        AllocCall::FreeHost,
        AllocCall::HostRegister,
        AllocCall::HostUnregister,
        AllocCall::AllocManaged,
    ] {
        for blocker_stream in [StreamKind::Legacy, StreamKind::NonBlocking] {
            let blocker = BlockerPlacement::Other;
            v.push(Case::driver(AllocFacts { call, pool: Pool::Threshold0, blocker_stream, blocker, bytes }));
        }
    }
    for call in [AllocCall::AllocAsync, AllocCall::FreeAsync] {
        for pool in [Pool::Threshold0, Pool::Warm] {
            for blocker in [BlockerPlacement::Same, BlockerPlacement::Other] {
                v.push(Case::driver(AllocFacts {
                    call,
                    pool,
                    blocker_stream: StreamKind::NonBlocking,
                    blocker,
                    bytes,
                }));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_the_blocker_stream_or_the_pool_and_placement() {
        let ids: Vec<String> = cases(1 << 20).iter().map(Case::id).collect();
        assert_eq!(ids.len(), 22);
        assert_eq!(ids[0], "alloc/mem-alloc/legacy");
        assert_eq!(ids[1], "alloc/mem-alloc/nonblocking");
        assert!(ids.contains(&"alloc/free-async/warm-pool/nonblocking/other".to_owned()));
    }

    #[test]
    fn a_call_without_a_stream_has_its_blocker_on_the_stream_its_id_names() {
        for c in cases(4096) {
            let Facts::Alloc(f) = c.facts else { panic!("{} is not an allocation", c.id()) };
            let l = f.layout();
            assert_eq!(l.bytes, 4096);
            if f.call.stream_ordered() {
                assert_eq!(l.stream, Some(StreamKind::NonBlocking), "{}", c.id());
                assert_eq!(l.blocker_ahead, f.blocker == BlockerPlacement::Same, "{}", c.id());
            } else {
                assert_eq!((l.stream, l.blocker_ahead), (None, false), "{}", c.id());
                assert!(c.id().ends_with(l.blocker_stream.unwrap().slug()), "{}", c.id());
            }
        }
    }

    #[test]
    fn the_runtime_words_name_the_runtime_call() {
        let f = AllocFacts {
            call: AllocCall::FreeAsync,
            pool: Pool::Warm,
            blocker_stream: StreamKind::NonBlocking,
            blocker: BlockerPlacement::Same,
            bytes: 1 << 20,
        };
        assert_eq!(Case::runtime(f).call(), "cudaFreeAsync");
        assert_eq!(
            f.what(Api::Runtime),
            "cudaFreeAsync of 1MiB from the default pool (release threshold at its maximum, pool primed), with a \
             blocker ahead of it in the same stream, through the runtime API"
        );
    }
}

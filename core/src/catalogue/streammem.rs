//! Stream memory operations (rules SM1, SM2): whether `cuStreamWaitValue32` and `cuStreamWriteValue32` return
//! at once behind a blocker, and which host calls wait while a stream waits on a value only the host writes
//! (a watchdog thread writes it `WATCHDOG_MS` after the wait is armed, so nothing hangs).
//!
//! The family goes through the driver only: the runtime has no stream memory operations, and the measuring
//! probe has no runtime path, so no case here has a runtime twin.

use super::{blocker_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::*;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, HostKind, StreamKind};
use serde::{Deserialize, Serialize};

/// How long after arming the wait the watchdog writes the value (ms).
pub const WATCHDOG_MS: u64 = 100;
/// The bytes the copies and allocations of the held calls move or take.
pub const HELD_BYTES: u64 = 4096;
/// The bytes a wait or write of a value reads or writes: one 32-bit word.
const WORD_BYTES: u64 = 4;

/// The call under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemOpCall {
    /// Enqueueing `cuStreamWaitValue32` on a value already there.
    EnqueueWait,
    /// Enqueueing `cuStreamWriteValue32` to pinned host memory.
    EnqueueWrite,
    /// `cuCtxSynchronize` (the control: it must wait for the whole device).
    CtxSynchronize,
    /// `cuMemFree` of a 4 KiB device buffer.
    MemFree,
    /// `cuMemAlloc` of 4 KiB.
    MemAlloc,
    /// `cuModuleLoadData` of the kernels' PTX.
    ModuleLoad,
    /// `cuMemcpyDtoH` of 4 KiB on the legacy stream.
    LegacyCopyDtoH,
    /// `cuMemsetD8` of 4 KiB of device memory on the legacy stream.
    LegacyMemset,
    /// An empty kernel's launch on a third, non-blocking stream.
    LaunchOther,
}

impl MemOpCall {
    fn slug(self) -> &'static str {
        match self {
            MemOpCall::EnqueueWait => "wait-value",
            MemOpCall::EnqueueWrite => "write-value",
            MemOpCall::CtxSynchronize => "held/ctx-synchronize",
            MemOpCall::MemFree => "held/mem-free",
            MemOpCall::MemAlloc => "held/mem-alloc",
            MemOpCall::ModuleLoad => "held/module-load",
            MemOpCall::LegacyCopyDtoH => "held/copy-dtoh-legacy",
            MemOpCall::LegacyMemset => "held/memset-legacy",
            MemOpCall::LaunchOther => "held/launch-other-stream",
        }
    }

    /// The driver function's name.
    pub fn name(self) -> &'static str {
        match self {
            MemOpCall::EnqueueWait => "cuStreamWaitValue32",
            MemOpCall::EnqueueWrite => "cuStreamWriteValue32",
            MemOpCall::CtxSynchronize => "cuCtxSynchronize",
            MemOpCall::MemFree => "cuMemFree",
            MemOpCall::MemAlloc => "cuMemAlloc",
            MemOpCall::ModuleLoad => "cuModuleLoadData",
            MemOpCall::LegacyCopyDtoH => "cuMemcpyDtoH",
            MemOpCall::LegacyMemset => "cuMemsetD8",
            MemOpCall::LaunchOther => "cuLaunchKernel",
        }
    }

    /// Whether the call is made while a stream waits on the host (the second question), not enqueued behind
    /// a blocker (the first).
    pub fn held(self) -> bool {
        !matches!(self, MemOpCall::EnqueueWait | MemOpCall::EnqueueWrite)
    }

    fn words(self) -> &'static str {
        match self {
            MemOpCall::EnqueueWait => "enqueueing a wait on a word of pinned memory that already holds the value",
            MemOpCall::EnqueueWrite => "enqueueing a write of a word of pinned memory",
            MemOpCall::CtxSynchronize => "synchronizing the context",
            MemOpCall::MemFree => "freeing 4 KiB of device memory",
            MemOpCall::MemAlloc => "allocating 4 KiB of device memory",
            MemOpCall::ModuleLoad => "loading the kernels' PTX as a module",
            MemOpCall::LegacyCopyDtoH => "copying 4 KiB device → pageable host on the legacy stream",
            MemOpCall::LegacyMemset => "a memset of 4 KiB of device memory on the legacy stream",
            MemOpCall::LaunchOther => "launching an empty kernel on a third, non-blocking stream",
        }
    }

    /// The host memory the call touches, where it touches any.
    fn host_memory(self) -> Option<HostKind> {
        match self {
            MemOpCall::EnqueueWait | MemOpCall::EnqueueWrite => Some(HostKind::Pinned),
            MemOpCall::LegacyCopyDtoH => Some(HostKind::Pageable),
            _ => None,
        }
    }
}

/// One stream-memory experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamMemFacts {
    pub call: MemOpCall,
    /// The first question: the blocker in the call's stream or on another.
    pub blocker: BlockerPlacement,
    /// The second question: the kind of the stream that waits on the host (blocking streams are ordered with
    /// the legacy stream, non-blocking ones are not).
    pub waiting: StreamKind,
}

impl StreamMemFacts {
    /// The stream the call puts work on, where it does.
    pub fn call_stream(&self) -> Option<StreamKind> {
        match self.call {
            MemOpCall::EnqueueWait | MemOpCall::EnqueueWrite | MemOpCall::LaunchOther => Some(StreamKind::NonBlocking),
            MemOpCall::LegacyCopyDtoH | MemOpCall::LegacyMemset => Some(StreamKind::Legacy),
            _ => None,
        }
    }

    /// Whether the blocker is ahead of the call: in its stream for the first question; for a held call, only
    /// where the call is on the legacy stream and the waiting stream is a blocking one (the legacy stream's
    /// work is ordered after a blocking stream's, so the held wait is ahead of it).
    pub fn blocker_ahead(&self) -> bool {
        if self.call.held() {
            self.call_stream() == Some(StreamKind::Legacy) && self.waiting == StreamKind::Blocking
        } else {
            self.blocker == BlockerPlacement::Same
        }
    }
}

impl Experiment for StreamMemFacts {
    fn family(&self) -> Family {
        Family::StreamMem
    }

    fn id(&self) -> String {
        if self.call.held() {
            format!("streammem/{}/{}", self.call.slug(), self.waiting.slug())
        } else {
            let same = self.blocker == BlockerPlacement::Same;
            format!("streammem/{}/nonblocking/{}", self.call.slug(), if same { "same" } else { "other" })
        }
    }

    /// The driver's name through either API: the family is measured through the driver only.
    fn call(&self, _api: Api) -> &'static str {
        self.call.name()
    }

    fn runtime_twin(&self) -> bool {
        false
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        match self.call {
            // "Blocks until the device has completed all preceding requested tasks" (API reference).
            MemOpCall::CtxSynchronize => ("SM2", Expected::classes(&[DeviceSync])),
            c if c.held() => ("SM2", Expected::undocumented()),
            _ => ("SM1", Expected::undocumented()),
        }
    }

    fn what(&self, api: Api) -> String {
        let where_ = if self.call.held() {
            format!(
                "while a {} stream waits on a value only the host writes (a watchdog thread writes it after {WATCHDOG_MS} ms), with the blocker queued behind that wait",
                self.waiting.slug()
            )
        } else {
            format!("with a blocker {}", blocker_words(self.blocker == BlockerPlacement::Same))
        };
        format!("{} ({}), {where_}", self.call.words(), self.call(api))
    }

    fn layout(&self) -> Layout {
        let held = self.call.held();
        Layout {
            stream: self.call_stream(),
            // The held calls' blocker is in the waiting stream, which the call does not use.
            blocker: if held { BlockerPlacement::Other } else { self.blocker },
            blocker_stream: Some(if held { self.waiting } else { StreamKind::NonBlocking }),
            blocker_ahead: self.blocker_ahead(),
            host_memory: self.call.host_memory(),
            bytes: if held { HELD_BYTES } else { WORD_BYTES },
            ..Layout::NOTHING
        }
    }
}

impl From<StreamMemFacts> for Facts {
    fn from(f: StreamMemFacts) -> Facts {
        Facts::StreamMem(f)
    }
}

/// The wait and the write behind a blocker in their stream and on another; the held calls while a
/// non-blocking stream waits on the host; the legacy stream's calls while a non-blocking and while a blocking
/// stream waits.
pub fn cases() -> Vec<Case> {
    let facts = |call, blocker, waiting| Case::driver(StreamMemFacts { call, blocker, waiting });
    let mut v = Vec::new();
    for call in [MemOpCall::EnqueueWait, MemOpCall::EnqueueWrite] {
        for blocker in [BlockerPlacement::Same, BlockerPlacement::Other] {
            v.push(facts(call, blocker, StreamKind::NonBlocking));
        }
    }
    for call in [
        MemOpCall::CtxSynchronize,
        MemOpCall::MemFree,
        MemOpCall::MemAlloc,
        MemOpCall::ModuleLoad,
        MemOpCall::LaunchOther,
    ] {
        v.push(facts(call, BlockerPlacement::Other, StreamKind::NonBlocking));
    }
    for call in [MemOpCall::LegacyCopyDtoH, MemOpCall::LegacyMemset] {
        for waiting in [StreamKind::NonBlocking, StreamKind::Blocking] {
            v.push(facts(call, BlockerPlacement::Other, waiting));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_calls_on_the_legacy_stream_count_a_blocking_waiting_stream_as_ahead() {
        let cases = cases();
        let find = |id: &str| {
            let c = cases.iter().find(|c| c.id() == id).unwrap_or_else(|| panic!("no {id}"));
            let Facts::StreamMem(f) = &c.facts else { panic!("{id} is not a stream-memory case") };
            *f
        };
        assert!(find("streammem/held/copy-dtoh-legacy/blocking").layout().blocker_ahead);
        assert!(!find("streammem/held/copy-dtoh-legacy/nonblocking").layout().blocker_ahead);
        assert!(!find("streammem/held/mem-free/nonblocking").layout().blocker_ahead);
        assert!(find("streammem/wait-value/nonblocking/same").layout().blocker_ahead);
        let control = find("streammem/held/ctx-synchronize/nonblocking");
        assert_eq!(control.rule(Api::Driver), ("SM2", Expected::classes(&[DeviceSync])));
        assert!(cases.iter().all(|c| c.facts.family() == Family::StreamMem));
    }

    #[test]
    fn no_case_has_a_runtime_twin_and_every_id_is_unique() {
        let cases = cases();
        assert!(cases.iter().all(|c| c.api == Api::Driver && c.runtime_twin().is_none()));
        let mut ids: Vec<String> = cases.iter().map(Case::id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), cases.len());
    }

    #[test]
    fn the_words_say_when_the_watchdog_writes_and_name_the_call() {
        let held = StreamMemFacts {
            call: MemOpCall::MemFree,
            blocker: BlockerPlacement::Other,
            waiting: StreamKind::NonBlocking,
        };
        let what = held.what(Api::Driver);
        assert!(what.contains("(cuMemFree)") && what.contains(&format!("after {WATCHDOG_MS} ms")), "{what}");
    }
}

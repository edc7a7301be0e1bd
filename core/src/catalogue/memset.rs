//! Memset of device, pinned host and managed memory, in both forms (rules M1–M3).

use super::{api_words, blocker_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::*;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, HostKind, StreamKind};
use crate::units::format_size;
use serde::{Deserialize, Serialize};

/// The memory a memset writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Target {
    Device,
    Pinned,
    Managed,
}

impl Target {
    pub fn slug(self) -> &'static str {
        match self {
            Target::Device => "device",
            Target::Pinned => "pinned",
            Target::Managed => "managed",
        }
    }

    /// The host memory a target is, where it is host memory.
    pub fn host_memory(self) -> Option<HostKind> {
        match self {
            Target::Device => None,
            Target::Pinned => Some(HostKind::Pinned),
            Target::Managed => Some(HostKind::Managed),
        }
    }
}

/// One memset experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemsetFacts {
    pub asynchronous: bool,
    pub target: Target,
    pub stream: StreamKind,
    pub blocker: BlockerPlacement,
    pub bytes: u64,
}

impl Experiment for MemsetFacts {
    fn family(&self) -> Family {
        Family::Memset
    }

    fn id(&self) -> String {
        format!(
            "memset/{}/{}/{}/{}/{}",
            if self.asynchronous { "async" } else { "sync" },
            self.target.slug(),
            self.stream.slug(),
            if self.blocker == BlockerPlacement::Same { "same" } else { "other" },
            format_size(self.bytes)
        )
    }

    fn call(&self, api: Api) -> &'static str {
        match (api, self.asynchronous) {
            (Api::Driver, true) => "cuMemsetD8Async",
            (Api::Driver, false) => "cuMemsetD8",
            (Api::Runtime, true) => "cudaMemsetAsync",
            (Api::Runtime, false) => "cudaMemset",
        }
    }

    fn runtime_twin(&self) -> bool {
        true
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        match (self.asynchronous, self.target) {
            (true, _) => ("M3", Expected::classes(&[Async])),
            (false, Target::Device) => ("M1", Expected::classes(&[Async])),
            // Fully synchronous: held through its own work; behind work in its stream, work too short for the
            // readings to say more reads as the wait for the stream.
            (false, Target::Pinned) if self.blocker == BlockerPlacement::Same => {
                ("M2", Expected::classes(&[Blocking, WaitedForStream]))
            }
            (false, Target::Pinned) => ("M2", Expected::classes(&[Blocking])),
            (false, Target::Managed) => ("M1", Expected::undocumented()),
        }
    }

    fn what(&self, api: Api) -> String {
        format!(
            "{} of {} of {} memory on the {} stream, with a blocker {}{}",
            self.call(api),
            format_size(self.bytes),
            self.target.slug(),
            self.stream.slug(),
            blocker_words(self.blocker == BlockerPlacement::Same),
            api_words(api)
        )
    }

    fn layout(&self) -> Layout {
        let mut l = Layout::behind(self.stream, self.blocker);
        l.host_memory = self.target.host_memory();
        l.bytes = self.bytes;
        l
    }
}

impl From<MemsetFacts> for Facts {
    fn from(f: MemsetFacts) -> Facts {
        Facts::Memset(f)
    }
}

/// Each target through both forms (the non-async one on the legacy stream), and the non-async device
/// memset with its blocker on another stream.
pub fn cases(bytes: u64) -> Vec<Case> {
    let memset = |asynchronous, target, stream, blocker| {
        Case::driver(MemsetFacts { asynchronous, target, stream, blocker, bytes })
    };
    let mut v = Vec::new();
    for target in [Target::Device, Target::Pinned, Target::Managed] {
        v.push(memset(false, target, StreamKind::Legacy, BlockerPlacement::Same));
        v.push(memset(true, target, StreamKind::NonBlocking, BlockerPlacement::Same));
    }
    v.push(memset(false, Target::Device, StreamKind::Legacy, BlockerPlacement::Other));
    v
}

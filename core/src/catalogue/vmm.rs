//! Virtual memory management (rules VM1, VM2): `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`, `cuMemUnmap` and
//! `cuMemRelease` while a blocker runs on the legacy stream or on a non-blocking one; and `cuMemUnmap` of
//! memory that work queued on the GPU is still going to write, a case run in a child process of its own. The
//! runtime has no virtual memory management of its own: no case has a runtime twin.

use super::{api_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, StreamKind};
use serde::{Deserialize, Serialize};

/// How long, in milliseconds, the spin kernel ahead of the writing kernel runs in the in-use unmap (far
/// longer than mapping the range again takes).
pub const HOLD_MS: u64 = 100;

/// The memory every case creates, maps and releases: one granule.
pub const BYTES: u64 = 2 << 20;

/// The call a case measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VmmCall {
    Create,
    Map,
    SetAccess,
    Unmap,
    Release,
    /// `cuMemUnmap` while a queued kernel is still to write into the range.
    UnmapInUse,
}

impl VmmCall {
    fn slug(self) -> &'static str {
        match self {
            VmmCall::Create => "create",
            VmmCall::Map => "map",
            VmmCall::SetAccess => "set-access",
            VmmCall::Unmap => "unmap",
            VmmCall::Release => "release",
            VmmCall::UnmapInUse => "unmap-in-use",
        }
    }

    /// The driver function the call goes through (the runtime has none of its own).
    pub fn name(self) -> &'static str {
        match self {
            VmmCall::Create => "cuMemCreate",
            VmmCall::Map => "cuMemMap",
            VmmCall::SetAccess => "cuMemSetAccess",
            VmmCall::Unmap | VmmCall::UnmapInUse => "cuMemUnmap",
            VmmCall::Release => "cuMemRelease",
        }
    }

    fn words(self) -> &'static str {
        match self {
            VmmCall::Create => "creating one granule (2 MiB) of device memory",
            VmmCall::Map => "mapping it into a reserved range",
            VmmCall::SetAccess => "granting this GPU read-write access to the mapping",
            VmmCall::Unmap => "unmapping it; nothing uses it",
            VmmCall::Release => "releasing the unmapped memory",
            VmmCall::UnmapInUse => "unmapping it while a queued kernel is still to write into it",
        }
    }
}

/// One virtual memory experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmmFacts {
    pub call: VmmCall,
    /// The stream the blocker runs on (for `UnmapInUse`: the stream that holds the writing kernel, ahead).
    pub blocker_stream: StreamKind,
}

impl VmmFacts {
    fn in_use(&self) -> bool {
        self.call == VmmCall::UnmapInUse
    }
}

impl Experiment for VmmFacts {
    fn family(&self) -> Family {
        Family::Vmm
    }

    fn id(&self) -> String {
        format!("vmm/{}/{}", self.call.slug(), self.blocker_stream.slug())
    }

    /// The driver's function through either API: the runtime has no virtual memory management of its own.
    fn call(&self, _api: Api) -> &'static str {
        self.call.name()
    }

    fn runtime_twin(&self) -> bool {
        false
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        (if self.in_use() { "VM2" } else { "VM1" }, Expected::undocumented())
    }

    fn what(&self, api: Api) -> String {
        let what = if self.in_use() {
            format!(
                "{} ({}): the {} stream holds a {HOLD_MS} ms spin kernel, the writing kernel, then the blocker",
                self.call.words(),
                self.call(api),
                self.blocker_stream.slug(),
            )
        } else {
            format!(
                "{} ({}), while a blocker runs on the {} stream",
                self.call.words(),
                self.call(api),
                self.blocker_stream.slug()
            )
        };
        format!("{what}{}", api_words(api))
    }

    fn layout(&self) -> Layout {
        let in_use = self.in_use();
        let blocker = if in_use { BlockerPlacement::Same } else { BlockerPlacement::Other };
        let mut l = Layout::behind(self.blocker_stream, blocker);
        l.stream = in_use.then_some(self.blocker_stream);
        l.blocker_stream = Some(self.blocker_stream);
        l.bytes = BYTES;
        l
    }

    /// Run in a child process: the one case where a wrong guess about the driver could fault the context.
    fn child_env(&self) -> Option<(&'static str, &'static str)> {
        self.in_use().then_some(("ASYNC_LAB_ISOLATED", "vmm-unmap-in-use"))
    }
}

impl From<VmmFacts> for Facts {
    fn from(f: VmmFacts) -> Facts {
        Facts::Vmm(f)
    }
}

/// Each call next to a blocker on the legacy stream and on a non-blocking one, and the in-use unmap behind
/// work in a non-blocking stream.
pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for call in [VmmCall::Create, VmmCall::Map, VmmCall::SetAccess, VmmCall::Unmap, VmmCall::Release] {
        for blocker_stream in [StreamKind::Legacy, StreamKind::NonBlocking] {
            v.push(Case::driver(VmmFacts { call, blocker_stream }));
        }
    }
    v.push(Case::driver(VmmFacts { call: VmmCall::UnmapInUse, blocker_stream: StreamKind::NonBlocking }));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_in_use_unmap_runs_apart_with_a_stream_and_work_ahead() {
        let cases = cases();
        assert_eq!(cases.len(), 11);
        for c in &cases {
            let Facts::Vmm(f) = c.facts else { panic!("{} is not a vmm case", c.id()) };
            let in_use = f.call == VmmCall::UnmapInUse;
            assert_eq!(c.facts.child_env().is_some(), in_use, "{}", c.id());
            assert_eq!(c.facts.layout().blocker_ahead, in_use, "{}", c.id());
            assert_eq!(c.facts.layout().stream.is_some(), in_use, "{}", c.id());
            assert_eq!(c.rule().0, if in_use { "VM2" } else { "VM1" });
            assert!(c.runtime_twin().is_none(), "{}", c.id());
        }
    }

    #[test]
    fn the_in_use_unmap_says_what_holds_its_stream() {
        let c = Case::driver(VmmFacts { call: VmmCall::UnmapInUse, blocker_stream: StreamKind::NonBlocking });
        assert_eq!(c.id(), "vmm/unmap-in-use/nonblocking");
        assert_eq!(
            c.facts.what(Api::Driver),
            "unmapping it while a queued kernel is still to write into it (cuMemUnmap): the nonblocking stream \
             holds a 100 ms spin kernel, the writing kernel, then the blocker"
        );
    }
}

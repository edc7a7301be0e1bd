//! The tool's own overhead (rule O1): the cheapest calls enqueued many times behind a long kernel, each timed
//! alone, to compare with the C++ reference's `--overhead`. Two calls, each through the driver and through the
//! runtime (the family makes both cases itself), each timed with the stopwatch and with the wall clock alone.

use super::{api_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, CallTiming, Family, HostKind, StreamKind};
use serde::{Deserialize, Serialize};

/// Calls timed per case (the C++ reference's `--overhead` times as many).
pub const ENQUEUES: usize = 500;
/// The kernel every call of a round is enqueued behind, in ns.
pub const BLOCKER_NS: u64 = 200_000_000;
/// The copy's size.
pub const COPY_BYTES: u64 = 4;

/// The call a case times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverheadOp {
    /// `cuMemcpyHtoDAsync` (`cudaMemcpyAsync(HostToDevice)`) of 4 bytes from pinned host memory.
    MemcpyHtoDPinned4B,
    /// `cuLaunchKernel` (`cudaLaunchKernel`) of the `empty` kernel, one thread.
    LaunchEmpty,
}

impl OverheadOp {
    pub const ALL: [OverheadOp; 2] = [OverheadOp::MemcpyHtoDPinned4B, OverheadOp::LaunchEmpty];

    fn slug(self) -> &'static str {
        match self {
            OverheadOp::MemcpyHtoDPinned4B => "memcpy-htod-async/pinned/4B",
            OverheadOp::LaunchEmpty => "launch/empty",
        }
    }
}

/// One overhead experiment: the call, and how each call's host time is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverheadFacts {
    pub op: OverheadOp,
    pub timing: CallTiming,
}

impl Experiment for OverheadFacts {
    fn family(&self) -> Family {
        Family::Overhead
    }

    fn id(&self) -> String {
        let wall_only = if self.timing == CallTiming::WallClockOnly { "/wall-only" } else { "" };
        format!("overhead/{}{wall_only}", self.op.slug())
    }

    fn call(&self, api: Api) -> &'static str {
        match (api, self.op) {
            (Api::Driver, OverheadOp::MemcpyHtoDPinned4B) => "cuMemcpyHtoDAsync",
            (Api::Driver, OverheadOp::LaunchEmpty) => "cuLaunchKernel",
            (Api::Runtime, OverheadOp::MemcpyHtoDPinned4B) => "cudaMemcpyAsync(HostToDevice)",
            (Api::Runtime, OverheadOp::LaunchEmpty) => "cudaLaunchKernel",
        }
    }

    /// The family makes its runtime cases itself (`cases`).
    fn runtime_twin(&self) -> bool {
        false
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        ("O1", Expected::undocumented())
    }

    fn what(&self, api: Api) -> String {
        format!(
            "{ENQUEUES} {} ({}) enqueued one after another behind a {} ms kernel in the same non-blocking stream, \
             each timed alone: the host cost of the call, to compare with the C++ reference's --overhead{}{}",
            match self.op {
                OverheadOp::MemcpyHtoDPinned4B => "4-byte copies from pinned host memory",
                OverheadOp::LaunchEmpty => "launches of an empty kernel",
            },
            self.call(api),
            BLOCKER_NS / 1_000_000,
            match self.timing {
                CallTiming::WallClockOnly => "; timed with the wall clock alone (no CPU-time reads around the call)",
                CallTiming::Stopwatch => "",
            },
            api_words(api)
        )
    }

    fn layout(&self) -> Layout {
        let memcpy = self.op == OverheadOp::MemcpyHtoDPinned4B;
        let mut l = Layout::behind(StreamKind::NonBlocking, BlockerPlacement::Same);
        l.host_memory = memcpy.then_some(HostKind::Pinned);
        l.bytes = if memcpy { COPY_BYTES } else { 0 };
        l.timing = self.timing;
        l
    }
}

impl From<OverheadFacts> for Facts {
    fn from(f: OverheadFacts) -> Facts {
        Facts::Overhead(f)
    }
}

/// Each call through the driver and the runtime, timed with the stopwatch and then with the wall clock alone.
pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for timing in [CallTiming::Stopwatch, CallTiming::WallClockOnly] {
        for op in OverheadOp::ALL {
            let facts = OverheadFacts { op, timing };
            v.extend([Case::driver(facts), Case::runtime(facts)]);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_the_runtime_ones_prefixed() {
        let cases = cases();
        let ids: Vec<String> = cases.iter().map(Case::id).collect();
        assert_eq!(
            ids,
            [
                "overhead/memcpy-htod-async/pinned/4B",
                "runtime/overhead/memcpy-htod-async/pinned/4B",
                "overhead/launch/empty",
                "runtime/overhead/launch/empty",
                "overhead/memcpy-htod-async/pinned/4B/wall-only",
                "runtime/overhead/memcpy-htod-async/pinned/4B/wall-only",
                "overhead/launch/empty/wall-only",
                "runtime/overhead/launch/empty/wall-only",
            ]
        );
        let unique: std::collections::BTreeSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        for c in &cases {
            let prefixed = c.id().starts_with("runtime/");
            assert_eq!(prefixed, c.api == Api::Runtime, "{}", c.id());
            assert_eq!(prefixed, c.call().starts_with("cuda"), "{}", c.id());
            assert_eq!(c.facts.family(), Family::Overhead);
            assert!(crate::rules::rule(c.rule().0).is_some());
            assert!(c.runtime_twin().is_none(), "{} would get a second twin", c.id());
        }
    }

    #[test]
    fn the_words_name_the_call_and_the_timing() {
        let facts = OverheadFacts { op: OverheadOp::MemcpyHtoDPinned4B, timing: CallTiming::WallClockOnly };
        let driver = facts.what(Api::Driver);
        assert!(driver.contains("(cuMemcpyHtoDAsync)") && driver.contains("wall clock alone"), "{driver}");
        let runtime = facts.what(Api::Runtime);
        assert!(runtime.contains("(cudaMemcpyAsync(HostToDevice))"), "{runtime}");
        assert!(runtime.ends_with(", through the runtime API"), "{runtime}");
        let l = facts.layout();
        assert_eq!((l.host_memory, l.bytes, l.timing), (Some(HostKind::Pinned), 4, CallTiming::WallClockOnly));
    }
}

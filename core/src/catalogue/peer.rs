//! Copies from one GPU's memory to another's (rules P1–P4): `cuMemcpyPeer`, `cuMemcpyPeerAsync`, and
//! `cuMemcpyDtoDAsync` given two pointers on different GPUs, each with direct (peer) access between the two
//! GPUs switched on and switched off, with the blocker ahead of the copy in its stream or on the destination
//! GPU.
//!
//! Each case of the lists is a template: one run yields one record per ordered pair of GPUs, whose facts are
//! the template's with the pair set ([`PeerFacts::on`]); the record's id adds `/gpuN-to-gpuM` to the
//! template's. The peer copies are measured through the driver only.

use super::{api_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::Async;
use crate::rules::Expected;
use crate::setup::{pair_id, BlockerPlacement, Family, PeerSetup, StreamKind};
use crate::units::format_size;
use serde::{Deserialize, Serialize};

/// The copy call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeerCall {
    /// `cuMemcpyPeer`: no stream argument (the legacy stream of the current context).
    Peer,
    /// `cuMemcpyPeerAsync` on a non-blocking stream of the source GPU.
    PeerAsync,
    /// `cuMemcpyDtoDAsync` with pointers on two GPUs, on a non-blocking stream of the source GPU.
    DtoDAsync,
}

impl PeerCall {
    pub const ALL: [PeerCall; 3] = [PeerCall::Peer, PeerCall::PeerAsync, PeerCall::DtoDAsync];

    fn slug(self) -> &'static str {
        match self {
            PeerCall::Peer => "peer",
            PeerCall::PeerAsync => "peer-async",
            PeerCall::DtoDAsync => "dtod-async",
        }
    }

    /// The function the call goes through, in `api`.
    pub fn name(self, api: Api) -> &'static str {
        match (api, self) {
            (Api::Driver, PeerCall::Peer) => "cuMemcpyPeer",
            (Api::Driver, PeerCall::PeerAsync) => "cuMemcpyPeerAsync",
            (Api::Driver, PeerCall::DtoDAsync) => "cuMemcpyDtoDAsync",
            (Api::Runtime, PeerCall::Peer) => "cudaMemcpyPeer",
            (Api::Runtime, PeerCall::PeerAsync) => "cudaMemcpyPeerAsync",
            (Api::Runtime, PeerCall::DtoDAsync) => "cudaMemcpyAsync(DeviceToDevice)",
        }
    }

    /// The call's stream, on the source GPU.
    pub fn stream(self) -> StreamKind {
        if self == PeerCall::Peer {
            StreamKind::Legacy
        } else {
            StreamKind::NonBlocking
        }
    }
}

/// Where the blocker runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeerBlocker {
    /// Ahead of the copy in its own stream, on the source GPU.
    Same,
    /// On a non-blocking stream of the destination GPU.
    DstGpu,
}

/// The two GPUs of one record: the copy's source (whose stream and context the call uses) and destination,
/// by ordinal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuPair {
    pub src: i32,
    pub dst: i32,
}

impl GpuPair {
    /// Source and destination on the same GPU (`--peer-loopback`): a check of the code, not a peer measurement.
    pub fn is_loopback(self) -> bool {
        self.src == self.dst
    }
}

/// What a record's pair and its access say of the path the data took, in a sentence of its explanation.
pub fn access_words(p: &PeerSetup) -> &'static str {
    if p.is_loopback() {
        " Source and destination were on the same GPU (loopback): a check of the code, not a peer measurement."
    } else if p.access {
        " Peer access was on: the copy engines can move the data across the link between the GPUs directly."
    } else {
        " Peer access was off: by the Programming Guide, the data then goes through host memory (GPU → host → GPU)."
    }
}

/// One peer experiment: a template (no pair), or one of its records (the pair set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerFacts {
    pub call: PeerCall,
    /// Direct access between the two GPUs on (both directions) or off.
    pub access: bool,
    pub blocker: PeerBlocker,
    pub bytes: u64,
    /// Every ordered pair of GPUs, or only the pairs with the GPU the run was started on (`--device`).
    pub all_pairs: bool,
    /// The pair a record measured; `None` in the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<GpuPair>,
}

impl PeerFacts {
    /// The record of this template for the copy from GPU `src` to GPU `dst`.
    pub fn on(self, src: i32, dst: i32) -> PeerFacts {
        PeerFacts { pair: Some(GpuPair { src, dst }), ..self }
    }

    /// The template's id: call, access, placement and size.
    pub fn template_id(&self) -> String {
        format!(
            "peer/{}/{}/{}/{}",
            self.call.slug(),
            if self.access { "p2p-on" } else { "p2p-off" },
            if self.blocker == PeerBlocker::Same { "same" } else { "dst-gpu" },
            format_size(self.bytes)
        )
    }

    /// Whether the blocker is ordered before the copy: only when it is in the copy's own stream. The page of
    /// `cuMemcpyPeer` says that call is serialized with all pending work of both contexts; one GPU's
    /// loopback runs showed it not ordered after a non-blocking stream's work, so no call is assumed to be:
    /// a host wait for the destination GPU's blocker reads as `device-sync`, and whether the device ordered
    /// the copy after it shows in the copy's own GPU time.
    pub fn blocker_ahead(&self) -> bool {
        self.blocker == PeerBlocker::Same
    }
}

impl Experiment for PeerFacts {
    fn family(&self) -> Family {
        Family::Peer
    }

    fn id(&self) -> String {
        let template = self.template_id();
        match self.pair {
            Some(p) => pair_id(&template, p.src, p.dst),
            None => template,
        }
    }

    fn call(&self, api: Api) -> &'static str {
        self.call.name(api)
    }

    fn runtime_twin(&self) -> bool {
        false
    }

    /// Every page promises the host no wait; none says whether that still holds when the driver must stage
    /// the copy through host memory (access off), so that gets its own rule.
    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        let rule = match (self.access, self.call) {
            (false, _) => "P4",
            (true, PeerCall::Peer) => "P1",
            (true, PeerCall::PeerAsync) => "P2",
            (true, PeerCall::DtoDAsync) => "P3",
        };
        (rule, Expected::classes(&[Async]))
    }

    fn what(&self, api: Api) -> String {
        format!(
            "{} of {} from one GPU's memory to another's, peer access {}, {}, with a blocker {}{}{}",
            self.call(api),
            format_size(self.bytes),
            if self.access {
                "on (the copy can go over the link directly)"
            } else {
                "off (the Programming Guide says such a copy goes through host memory)"
            },
            match self.call {
                PeerCall::Peer => "on the source GPU's legacy default stream (the call has no stream argument)",
                _ => "on a non-blocking stream of the source GPU",
            },
            match self.blocker {
                PeerBlocker::Same => "ahead of it in the same stream",
                PeerBlocker::DstGpu => "on a non-blocking stream of the destination GPU",
            },
            if self.pair.is_some_and(GpuPair::is_loopback) {
                " (LOOPBACK: source and destination on the same GPU; peer access does not apply; a check of this \
                 code, not a peer measurement)"
            } else {
                ""
            },
            api_words(api)
        )
    }

    fn layout(&self) -> Layout {
        let placement =
            if self.blocker == PeerBlocker::Same { BlockerPlacement::Same } else { BlockerPlacement::Other };
        let mut l = Layout::behind(self.call.stream(), placement);
        l.blocker_ahead = self.blocker_ahead();
        l.bytes = self.bytes;
        l.peer = Some(PeerSetup {
            src_gpu: self.pair.map(|p| p.src),
            dst_gpu: self.pair.map(|p| p.dst),
            access: self.access,
        });
        l
    }
}

impl From<PeerFacts> for Facts {
    fn from(f: PeerFacts) -> Facts {
        Facts::Peer(f)
    }
}

/// The peer experiments: every call, with access on and off, at each of `sizes` with the blocker ahead in the
/// stream; and with the blocker on the destination GPU at the largest size, where the copy takes long enough
/// that "was it finished at the return?" is not a race with a few microseconds of transfer. `all_placements`
/// puts the second placement at every size (the full preset); `all_pairs` measures every ordered pair of GPUs
/// rather than only those with the GPU the run was started on.
pub fn cases(sizes: &[u64], all_placements: bool, all_pairs: bool) -> Vec<Case> {
    let mut v = Vec::new();
    let largest = sizes.iter().copied().max().unwrap_or(0);
    for call in PeerCall::ALL {
        for access in [true, false] {
            let peer = |blocker, bytes| Case::driver(PeerFacts { call, access, blocker, bytes, all_pairs, pair: None });
            for &bytes in sizes {
                v.push(peer(PeerBlocker::Same, bytes));
            }
            let dst_sizes: &[u64] = if all_placements { sizes } else { std::slice::from_ref(&largest) };
            for &bytes in dst_sizes {
                v.push(peer(PeerBlocker::DstGpu, bytes));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(call: PeerCall, access: bool, blocker: PeerBlocker, bytes: u64) -> PeerFacts {
        PeerFacts { call, access, blocker, bytes, all_pairs: true, pair: None }
    }

    #[test]
    fn ids_name_call_access_placement_size_and_pair() {
        let op = facts(PeerCall::PeerAsync, false, PeerBlocker::DstGpu, 1 << 20);
        assert_eq!(op.id(), "peer/peer-async/p2p-off/dst-gpu/1MiB");
        let id = op.on(1, 0).id();
        assert_eq!(id, "peer/peer-async/p2p-off/dst-gpu/1MiB/gpu1-to-gpu0");
    }

    #[test]
    fn a_pairs_layout_names_its_gpus_and_a_loopback_says_so() {
        let op = facts(PeerCall::Peer, true, PeerBlocker::Same, 4096);
        assert_eq!(op.layout().peer, Some(PeerSetup { src_gpu: None, dst_gpu: None, access: true }));
        let pair = op.on(0, 1);
        assert_eq!(pair.layout().peer, Some(PeerSetup { src_gpu: Some(0), dst_gpu: Some(1), access: true }));
        assert_eq!(pair.what(Api::Driver), op.what(Api::Driver));
        assert_eq!((pair.call(Api::Driver), pair.rule(Api::Driver).0), ("cuMemcpyPeer", "P1"));
        let loopback = op.on(1, 1);
        let what = loopback.what(Api::Driver);
        assert!(what.starts_with(&op.what(Api::Driver)) && what.contains("LOOPBACK"), "{what}");
        assert!(loopback.layout().peer.unwrap().is_loopback());
    }

    #[test]
    fn rules_follow_the_call_and_the_access() {
        let rule = |call, access| facts(call, access, PeerBlocker::Same, 4096).rule(Api::Driver).0;
        assert_eq!(rule(PeerCall::Peer, true), "P1");
        assert_eq!(rule(PeerCall::PeerAsync, true), "P2");
        assert_eq!(rule(PeerCall::DtoDAsync, true), "P3");
        for call in PeerCall::ALL {
            assert_eq!(rule(call, false), "P4");
        }
    }

    #[test]
    fn only_the_copys_own_stream_is_ahead_of_it() {
        for call in PeerCall::ALL {
            let op = |blocker| facts(call, true, blocker, 4096).layout();
            assert!(op(PeerBlocker::Same).blocker_ahead);
            assert_eq!(op(PeerBlocker::Same).blocker_stream, Some(call.stream()));
            assert!(!op(PeerBlocker::DstGpu).blocker_ahead);
            assert_eq!(op(PeerBlocker::DstGpu).blocker_stream, Some(StreamKind::NonBlocking));
        }
    }

    #[test]
    fn default_matrix_covers_every_call_access_and_size() {
        let sizes = [4096, 1 << 20];
        let v = cases(&sizes, false, false);
        // 3 calls × 2 access × (2 sizes with the blocker ahead + 1 with it on the destination GPU).
        assert_eq!(v.len(), 3 * 2 * 3);
        assert_eq!(cases(&sizes, true, true).len(), 3 * 2 * 4);
        assert!(v.iter().all(|c| c.facts.family() == Family::Peer && c.facts.layout().peer.is_some()));
        assert!(v.iter().all(|c| c.runtime_twin().is_none()));
        // The destination-GPU placement uses the largest size, where the copy is not over in microseconds.
        let dst: Vec<&Case> = v.iter().filter(|c| c.id().contains("/dst-gpu/")).collect();
        assert_eq!(dst.len(), 6);
        assert!(dst.iter().all(|c| c.facts.layout().bytes == 1 << 20));
    }
}

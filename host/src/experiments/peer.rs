//! Copies from one GPU's memory to another's (rules P1–P4): `cuMemcpyPeer`, `cuMemcpyPeerAsync`, and
//! `cuMemcpyDtoDAsync` given two pointers on different GPUs (unified addressing tells the driver which), each
//! with direct (peer) access between the two GPUs switched on and switched off, for every ordered pair of
//! GPUs on the machine.
//!
//! With peer access on, the copy engines move the data across the link (NVLink or PCIe) directly. With it
//! off, the driver copies through a buffer in host memory: GPU A → host → GPU B. That is where a host wait
//! could hide, and the documentation of these calls does not mention it.
//!
//! Each experiment here is a template: one run yields one record per ordered pair (`.../gpu0-to-gpu1`). The
//! call's stream belongs to the source GPU, and the source GPU's context is current during the call. The
//! blocker runs either ahead of the call in that stream (`same`), or on a stream of the destination GPU
//! (`dst-gpu`), which `cuMemcpyPeer` is documented to serialize with and the async forms are documented
//! not to wait for. On a machine with one GPU the family reports "needs 2 GPUs" and runs nothing.

use super::buffers::{Checker, Side};
use super::method::{measure_using, Blocker, BlockerPlan, Probe};
use super::{case_record, Case, Op};
use async_lab_core::classify::Class::Async;
use async_lab_core::record::{CaseRecord, CaseSetup};
use async_lab_core::rules::Expected;
use async_lab_core::setup::CallTiming;
use async_lab_core::setup::{BlockerPlacement, Family, PeerSetup};
use async_lab_core::units::format_size;
use async_lab_driver::memory;
use async_lab_driver::peer::{self, can_access_peer, ordered_pairs, set_peer_access};
use async_lab_driver::{DriverResult, Gpu, Stream, StreamHandle, StreamKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

    pub fn name(self) -> &'static str {
        match self {
            PeerCall::Peer => "cuMemcpyPeer",
            PeerCall::PeerAsync => "cuMemcpyPeerAsync",
            PeerCall::DtoDAsync => "cuMemcpyDtoDAsync",
        }
    }

    fn stream(self) -> StreamKind {
        if self == PeerCall::Peer {
            StreamKind::Legacy
        } else {
            StreamKind::NonBlocking
        }
    }
}

/// Where the blocker runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerBlocker {
    /// Ahead of the copy in its own stream, on the source GPU.
    Same,
    /// On a non-blocking stream of the destination GPU.
    DstGpu,
}

#[derive(Clone, Copy, Debug)]
pub struct PeerOp {
    pub call: PeerCall,
    /// Direct access between the two GPUs on (both directions) or off.
    pub access: bool,
    pub blocker: PeerBlocker,
    pub bytes: u64,
    /// Every ordered pair of GPUs, or only the pairs with the GPU the run was started on (`--device`).
    pub all_pairs: bool,
}

impl PeerOp {
    pub fn id(&self) -> String {
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
    fn blocker_ahead(&self) -> bool {
        self.blocker == PeerBlocker::Same
    }

    /// The rule and its prediction. Every page promises the host no wait; none says whether that still holds
    /// when the driver must stage the copy through host memory (access off), so that gets its own rule.
    pub fn rule(&self) -> (&'static str, Expected) {
        let rule = match (self.access, self.call) {
            (false, _) => "P4",
            (true, PeerCall::Peer) => "P1",
            (true, PeerCall::PeerAsync) => "P2",
            (true, PeerCall::DtoDAsync) => "P3",
        };
        (rule, Expected::classes(&[Async]))
    }

    pub fn case(self) -> Case {
        let (rule, expected) = self.rule();
        let what = format!(
            "{} of {} from one GPU's memory to another's, peer access {}, {}, with a blocker {}",
            self.call.name(),
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
            }
        );
        Case {
            setup: CaseSetup {
                id: self.id(),
                family: Family::Peer,
                call: self.call.name().to_owned(),
                rule: rule.to_owned(),
                expected,
                stream: Some(self.call.stream()),
                blocker: if self.blocker == PeerBlocker::Same {
                    BlockerPlacement::Same
                } else {
                    BlockerPlacement::Other
                },
                blocker_stream: Some(if self.blocker == PeerBlocker::Same {
                    self.call.stream()
                } else {
                    StreamKind::NonBlocking
                }),
                blocker_ahead: self.blocker_ahead(),
                host_memory: None,
                bytes: self.bytes,
                what,
                api: async_lab_core::api::Api::Driver,
                peer: Some(PeerSetup { src_gpu: None, dst_gpu: None, access: self.access }),
                direction: None,
                timing: CallTiming::Stopwatch,
                case: None,
            },
            op: Op::Peer(self),
        }
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
            for &bytes in sizes {
                v.push(PeerOp { call, access, blocker: PeerBlocker::Same, bytes, all_pairs }.case());
            }
            let dst_sizes: &[u64] = if all_placements { sizes } else { std::slice::from_ref(&largest) };
            for &bytes in dst_sizes {
                v.push(PeerOp { call, access, blocker: PeerBlocker::DstGpu, bytes, all_pairs }.case());
            }
        }
    }
    v
}

pub use async_lab_core::setup::{pair_id, split_pair_id, template_id};

/// The two buffers and the stream of one pair's experiment.
struct PeerProbe<'a, 'g> {
    op: PeerOp,
    src_gpu: &'g Gpu,
    dst_gpu: &'g Gpu,
    src: Side<'g>,
    dst: Side<'g>,
    /// On the destination GPU: poisons and verifies `dst`.
    checker: Checker<'g>,
    stream: &'a Stream<'g>,
}

impl Probe for PeerProbe<'_, '_> {
    fn prepare(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        self.checker.poison(&mut self.dst)
    }

    fn call(&mut self, _gpu: &Gpu) -> DriverResult<()> {
        let n = self.op.bytes as usize;
        let (dst, src) = (self.dst.addr(), self.src.addr());
        let (dst_gpu, src_gpu, stream) = (self.dst_gpu, self.src_gpu, self.stream.handle());
        // SAFETY: `dst` and `src` are live device allocations of `n` bytes on the two GPUs, owned by this probe
        // and untouched until both GPUs are synchronized; `run_rep` made the source GPU's context, which owns
        // `self.stream`, current.
        unsafe {
            match self.op.call {
                PeerCall::Peer => peer::memcpy_peer(dst, dst_gpu, src, src_gpu, n),
                PeerCall::PeerAsync => peer::memcpy_peer_async(dst, dst_gpu, src, src_gpu, n, stream),
                PeerCall::DtoDAsync => memory::memcpy_dtod_async(dst, src, n, stream),
            }
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        Some(self.stream.handle())
    }

    fn settle(&self, _gpu: &Gpu) -> DriverResult<()> {
        self.src_gpu.synchronize()?;
        self.dst_gpu.synchronize()
    }

    fn verify(&mut self, _gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
        self.checker.verify(self.dst_gpu, &mut self.dst, None)?;
        Ok(None)
    }
}

/// Runs one template on the ordered pairs of `gpus` (indexed by ordinal): all of them, or those with GPU
/// `main` (see `PeerOp::all_pairs`); `loopback` adds each GPU paired with itself, to check this code on a
/// machine with one GPU (that is not a peer measurement).
/// `progress` hears each pair's record id before it runs. After Ctrl-C (`interrupt::STOP`) no further pair starts.
pub fn run(
    gpus: &[&Gpu],
    main: usize,
    case: &Case,
    op: PeerOp,
    reps: usize,
    loopback: bool,
    progress: &dyn Fn(&str),
) -> Vec<CaseRecord> {
    let pairs = match pairs(gpus.len(), loopback, (!op.all_pairs).then_some(main)) {
        Ok(p) => p,
        Err(reason) => {
            let mut r = case_record(case, None, None, vec![]);
            r.skipped = Some(reason);
            return vec![r];
        }
    };
    pairs
        .into_iter()
        .take_while(|_| !super::interrupt::STOP.load(std::sync::atomic::Ordering::SeqCst))
        .map(|(a, b)| {
            let (src, dst) = (gpus[a], gpus[b]);
            let mut case = case.clone();
            case.setup.id = pair_id(&case.setup.id, src.ordinal, dst.ordinal);
            case.setup.peer = Some(PeerSetup { src_gpu: Some(src.ordinal), dst_gpu: Some(dst.ordinal), access: op.access });
            progress(&case.setup.id);
            if a == b {
                case.setup.what.push_str(" (LOOPBACK: source and destination on the same GPU; peer access does not apply; a check of this code, not a peer measurement)");
            }
            let outcome = match unreachable_pair(src, dst, op.access, a == b) {
                Ok(None) => run_pair(src, dst, &case, op, reps, a == b),
                Ok(Some(reason)) => {
                    let mut r = case_record(&case, None, None, vec![]);
                    r.skipped = Some(reason);
                    Ok(r)
                }
                Err(e) => Err(e.into()),
            };
            outcome.unwrap_or_else(|e| {
                let mut r = case_record(&case, None, None, vec![]);
                r.error = Some(format!("{e:#}"));
                r
            })
        })
        .collect()
}

/// The reason a pair cannot run with peer access on, if it cannot.
fn unreachable_pair(src: &Gpu, dst: &Gpu, access: bool, loopback: bool) -> DriverResult<Option<String>> {
    if !access || loopback {
        return Ok(None);
    }
    for (from, to) in [(src, dst), (dst, src)] {
        if !can_access_peer(from, to)? {
            return Ok(Some(format!(
                "GPU {} cannot access GPU {}'s memory directly (cuDeviceCanAccessPeer = 0), so peer access cannot be \
                 switched on for this pair",
                from.ordinal, to.ordinal
            )));
        }
    }
    Ok(None)
}

/// The (source, destination) index pairs to measure on `count` GPUs (only those with `with` where given),
/// or why there are none.
pub fn pairs(count: usize, loopback: bool, with: Option<usize>) -> Result<Vec<(usize, usize)>, String> {
    let mut pairs = ordered_pairs(count);
    if loopback {
        pairs.extend((0..count).map(|i| (i, i)));
    }
    if let Some(m) = with {
        pairs.retain(|&(a, b)| a == m || b == m);
    }
    if pairs.is_empty() {
        return Err(format!("needs 2 GPUs: this machine has {count}"));
    }
    Ok(pairs)
}

fn run_pair(
    src_gpu: &Gpu,
    dst_gpu: &Gpu,
    case: &Case,
    op: PeerOp,
    reps: usize,
    loopback: bool,
) -> anyhow::Result<CaseRecord> {
    if !loopback {
        set_peer_access(src_gpu, dst_gpu, op.access)?;
    }
    let len = op.bytes as usize;
    let checker = Checker::new(dst_gpu, op.bytes)?;
    let mut src = Side::new(src_gpu, None, len)?;
    checker.fill(src_gpu, &mut src)?;
    let dst = Side::new(dst_gpu, None, len)?;
    let stream = Stream::new(src_gpu, op.call.stream())?;
    let blocker_gpu = if op.blocker == PeerBlocker::Same { src_gpu } else { dst_gpu };
    let other = Stream::new(blocker_gpu, StreamKind::NonBlocking)?;
    let blocker = Blocker::new(blocker_gpu)?;
    let plan = BlockerPlan {
        stream: if op.blocker == PeerBlocker::Same { stream.handle() } else { other.handle() },
        ahead: op.blocker_ahead(),
    };
    let mut probe = PeerProbe { op, src_gpu, dst_gpu, src, dst, checker, stream: &stream };
    let (warmup, blocker_ns, reps) = measure_using(src_gpu, &mut probe, plan, &blocker, reps, true)?;
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_call_access_placement_and_size() {
        let op = PeerOp {
            call: PeerCall::PeerAsync,
            access: false,
            blocker: PeerBlocker::DstGpu,
            bytes: 1 << 20,
            all_pairs: true,
        };
        assert_eq!(op.id(), "peer/peer-async/p2p-off/dst-gpu/1MiB");
        let id = pair_id(&op.id(), 1, 0);
        assert_eq!(id, "peer/peer-async/p2p-off/dst-gpu/1MiB/gpu1-to-gpu0");
        assert_eq!(template_id(&id), op.id());
        assert_eq!(split_pair_id(&id), Some((op.id().as_str(), 1, 0)));
        assert_eq!(split_pair_id("peer/peer/p2p-on/same/4KiB"), None);
        assert_eq!(
            template_id("copy/async/htod/pinned/nonblocking/same/1MiB"),
            "copy/async/htod/pinned/nonblocking/same/1MiB"
        );
    }

    #[test]
    fn one_gpu_needs_two_unless_looping_back() {
        assert_eq!(pairs(1, false, None), Err("needs 2 GPUs: this machine has 1".to_owned()));
        assert_eq!(pairs(1, true, None), Ok(vec![(0, 0)]));
        assert_eq!(pairs(2, false, None), Ok(vec![(0, 1), (1, 0)]));
        assert_eq!(pairs(3, false, None).unwrap().len(), 6);
        assert_eq!(pairs(2, true, None).unwrap().len(), 4);
        assert_eq!(pairs(1, false, Some(0)), Err("needs 2 GPUs: this machine has 1".to_owned()));
    }

    #[test]
    fn the_default_preset_pairs_only_with_the_main_gpu() {
        assert_eq!(pairs(3, false, Some(1)), Ok(vec![(0, 1), (1, 0), (1, 2), (2, 1)]));
        assert_eq!(pairs(8, false, Some(0)).unwrap().len(), 14);
        assert_eq!(pairs(8, false, None).unwrap().len(), 56);
    }

    #[test]
    fn rules_follow_the_call_and_the_access() {
        let rule =
            |call, access| PeerOp { call, access, blocker: PeerBlocker::Same, bytes: 4096, all_pairs: true }.rule().0;
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
            let op = |blocker| PeerOp { call, access: true, blocker, bytes: 4096, all_pairs: true };
            assert!(op(PeerBlocker::Same).blocker_ahead());
            assert!(!op(PeerBlocker::DstGpu).blocker_ahead());
        }
    }

    #[test]
    fn default_matrix_covers_every_call_access_and_size() {
        let sizes = [4096, 1 << 20];
        let v = cases(&sizes, false, false);
        // 3 calls × 2 access × (2 sizes with the blocker ahead + 1 with it on the destination GPU).
        assert_eq!(v.len(), 3 * 2 * 3);
        assert_eq!(cases(&sizes, true, true).len(), 3 * 2 * 4);
        assert!(v.iter().all(|c| c.setup.family == Family::Peer && c.setup.peer.is_some()));
        // The destination-GPU placement uses the largest size, where the copy is not over in microseconds.
        let dst: Vec<&Case> = v.iter().filter(|c| c.setup.id.contains("/dst-gpu/")).collect();
        assert_eq!(dst.len(), 6);
        assert!(dst.iter().all(|c| c.setup.bytes == 1 << 20));
    }
}

//! Copies from one GPU's memory to another's (rules P1–P4): `cuMemcpyPeer`, `cuMemcpyPeerAsync`, and
//! `cuMemcpyDtoDAsync` given two pointers on different GPUs (unified addressing tells the driver which), each
//! with direct (peer) access between the two GPUs switched on and switched off, for every ordered pair of
//! GPUs on the machine.
//!
//! With peer access on, the copy engines move the data across the link (NVLink or PCIe) directly. With it
//! off, the driver copies through a buffer in host memory: GPU A → host → GPU B. That is where a host wait
//! could hide, and the documentation of these calls does not mention it.
//!
//! The cases and their facts are the catalogue's (`async_lab_core::catalogue::peer`); this file measures them.
//! Each case is a template: one run yields one record per ordered pair (`.../gpu0-to-gpu1`), set up from the
//! template's facts with the pair set (`PeerFacts::on`). The
//! call's stream belongs to the source GPU, and the source GPU's context is current during the call. The
//! blocker runs either ahead of the call in that stream (`same`), or on a stream of the destination GPU
//! (`dst-gpu`), which `cuMemcpyPeer` is documented to serialize with and the async forms are documented
//! not to wait for. On a machine with one GPU the family reports "needs 2 GPUs" and runs nothing.

use super::buffers::{Checker, Side};
use super::method::{measure_using, Blocker, BlockerPlan, Probe};
use super::{case_record, Case};
use async_lab_core::catalogue::peer::{PeerBlocker, PeerCall, PeerFacts};
use async_lab_core::catalogue::{self, Facts};
use async_lab_core::record::CaseRecord;
use async_lab_driver::memory;
use async_lab_driver::peer::{self, can_access_peer, ordered_pairs, set_peer_access};
use async_lab_driver::{CudaResult, Gpu, Stream, StreamHandle, StreamKind};

/// The two buffers and the stream of one pair's experiment.
struct PeerProbe<'a, 'g> {
    op: PeerFacts,
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

    fn call(&mut self, _gpu: &Gpu) -> CudaResult<()> {
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

    fn settle(&self, _gpu: &Gpu) -> CudaResult<()> {
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
    op: PeerFacts,
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
            let pair = catalogue::Case { api: case.setup.api, facts: Facts::Peer(op.on(src.ordinal, dst.ordinal)) };
            let case = Case::of(pair);
            progress(&case.setup.id);
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
fn unreachable_pair(src: &Gpu, dst: &Gpu, access: bool, loopback: bool) -> CudaResult<Option<String>> {
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
    op: PeerFacts,
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
}

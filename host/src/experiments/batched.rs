//! Batched copies (rules BC1, BC2): `cuMemcpyBatchAsync` (CUDA 12.8) of one buffer in 8 pieces, host → device
//! and device → host, from pageable and from pinned memory, with each source access order (in stream order,
//! only during the call, any time), behind a blocker in the same stream. The same bytes copied by one
//! `cuMemcpyHtoDAsync`/`cuMemcpyDtoHAsync` are the copy family's `copy/async/...` cases.
//!
//! Host sources read in stream order or only during the call get the copy family's staging probe: right after
//! the return, while the blocker still runs, the first page of the source is overwritten; if what arrives is
//! still the original, the driver had taken the data by the return (`staged`). "Only during the call" promises
//! exactly that. A source that may be read at any time is not probed (the copy may be reading it right then).
//!
//! The runtime twins (`runtime/batch/...`) make the same batch through `cudaMemcpyBatchAsync`, looked up in the
//! loaded runtime with the signature its version gives it (CUDA 13 dropped the failure index; see
//! `runtime::batch`); a runtime older than 12.8 leaves them *not run*, with the reason.

use super::buffers::{Checker, Side};
use super::method::{measure, BlockerPlan, Probe};
use super::{case_record, Case, Op};
use crate::classify::Class::*;
use crate::driver::batch::{BatchCopy, SrcAccessOrder};
use crate::driver::{DriverResult, Gpu, HostKind, Stream, StreamHandle, StreamKind};
use crate::record::{BlockerPlacement, CaseRecord, CaseSetup, Family};
use crate::rules::Expected;
use crate::runtime::batch as rtbatch;
use crate::setup::CallTiming;
use crate::setup::Direction;
use crate::units::format_size;

/// The buffer every case copies, and the number of pieces it goes in.
pub const BYTES: u64 = 4 << 20;
pub const PIECES: u64 = 8;

#[derive(Clone, Copy, Debug)]
pub struct BatchOp {
    /// Host → device (`true`) or device → host.
    pub htod: bool,
    pub host: HostKind,
    pub order: SrcAccessOrder,
    pub bytes: u64,
}

fn order_slug(o: SrcAccessOrder) -> &'static str {
    match o {
        SrcAccessOrder::Stream => "stream",
        SrcAccessOrder::DuringCall => "during-call",
        SrcAccessOrder::Any => "any",
    }
}

impl BatchOp {
    fn case(self) -> Case {
        let dir = if self.htod { "htod" } else { "dtoh" };
        // The "during the call" order promises that the source is read by the return: for a host source the
        // staging probe can see whether it was.
        let (rule, expected) = if self.htod && self.order == SrcAccessOrder::DuringCall {
            ("BC2", Expected::classes(&[Staged, WaitedThenStaged, Blocking]))
        } else {
            ("BC1", Expected::undocumented())
        };
        Case {
            setup: CaseSetup {
                id: format!(
                    "batch/{dir}/{}/{}/nonblocking/same/{}",
                    self.host.slug(),
                    order_slug(self.order),
                    format_size(self.bytes)
                ),
                family: Family::Batch,
                call: "cuMemcpyBatchAsync".into(),
                rule: rule.into(),
                expected,
                stream: Some(StreamKind::NonBlocking),
                blocker: BlockerPlacement::Same,
                blocker_stream: Some(StreamKind::NonBlocking),
                blocker_ahead: true,
                host_memory: Some(self.host),
                direction: Some(if self.htod { Direction::HtoD } else { Direction::DtoH }),
                bytes: self.bytes,
                what: format!(
                    "cuMemcpyBatchAsync of {} in {PIECES} pieces, {} {} memory, source access order {}, with a blocker ahead of it in the same stream",
                    format_size(self.bytes),
                    if self.htod { "host → device, from" } else { "device → host, into" },
                    self.host.slug(),
                    order_slug(self.order)
                ),
                api: crate::api::Api::Driver,
                peer: None,
                timing: CallTiming::Stopwatch,
            },
            op: Op::Batch(self),
        }
    }
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for htod in [true, false] {
        for host in [HostKind::Pageable, HostKind::Pinned] {
            for order in [SrcAccessOrder::Stream, SrcAccessOrder::DuringCall, SrcAccessOrder::Any] {
                v.push(BatchOp { htod, host, order, bytes: BYTES }.case());
            }
        }
    }
    v
}

/// The batched copy through the API under test.
enum Via {
    Driver(BatchCopy),
    Runtime(rtbatch::BatchCopy),
}

struct BatchProbe<'a, 'g> {
    op: BatchOp,
    batch: Via,
    stream: &'a Stream<'g>,
    src: Side<'g>,
    dst: Side<'g>,
    checker: Checker<'g>,
    /// The batch's arrays, filled in `prepare` so that nothing is allocated inside the timed call (the driver
    /// takes them as mutable pointers, so they are filled again before every repetition).
    dsts: Vec<u64>,
    srcs: Vec<u64>,
    sizes: Vec<usize>,
}

impl Probe for BatchProbe<'_, '_> {
    fn prepare(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        self.checker.restore_head(&mut self.src);
        self.checker.poison(&mut self.dst)?;
        let piece = self.op.bytes / PIECES;
        let (d, s) = (self.dst.addr(), self.src.addr());
        self.dsts = (0..PIECES).map(|i| d + i * piece).collect();
        self.srcs = (0..PIECES).map(|i| s + i * piece).collect();
        self.sizes = vec![piece as usize; PIECES as usize];
        Ok(())
    }

    fn call(&mut self, _gpu: &Gpu) -> DriverResult<()> {
        let (dsts, srcs, sizes) = (&mut self.dsts, &mut self.srcs, &mut self.sizes);
        // SAFETY: the pieces tile the two live buffers of `bytes` bytes exactly; they stay allocated and are
        // not touched until the protocol synchronizes, except the staging probe's overwrite of the source's
        // first page, which `probe_source` explains.
        unsafe {
            match &self.batch {
                Via::Driver(b) => b.copy(dsts, srcs, sizes, self.op.order, self.stream.handle()),
                Via::Runtime(b) => b.copy(dsts, srcs, sizes, self.op.order, self.stream.handle()),
            }
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        Some(self.stream.handle())
    }

    fn probe_source(&mut self) -> bool {
        // A copy allowed to read the source at any time may be reading it right now, out of stream order: an
        // overwrite could give it a mix of both patterns, which says nothing. Those are not probed.
        if !self.op.htod || self.op.order == SrcAccessOrder::Any {
            return false;
        }
        // SAFETY: as in the copy family: `run_rep` calls this only while the blocker ahead still runs and the
        // stream's work is unfinished; a copy that reads the source in stream order cannot have started, one
        // that reads it only during the call has finished reading. The host writes plain bytes the copy only
        // reads: no memory is used after it is freed.
        unsafe { self.checker.overwrite_head(&mut self.src) };
        true
    }

    fn verify(&mut self, gpu: &Gpu, probed: bool) -> anyhow::Result<Option<bool>> {
        let original = self.checker.verify(gpu, &mut self.dst, probed)?;
        Ok(probed.then_some(original))
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: BatchOp, reps: usize) -> anyhow::Result<CaseRecord> {
    let batch = match case.setup.api {
        crate::api::Api::Driver => BatchCopy::resolve().map(Via::Driver).map_err(str::to_owned),
        crate::api::Api::Runtime => rtbatch::BatchCopy::resolve().map(Via::Runtime),
    };
    let batch = match batch {
        Ok(b) => b,
        Err(why) => return Ok(super::runner::not_run(case, &why)),
    };
    let len = op.bytes as usize;
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let checker = Checker::new(gpu, op.bytes)?;
    let (src_host, dst_host) = if op.htod { (Some(op.host), None) } else { (None, Some(op.host)) };
    let mut src = Side::new(gpu, src_host, len)?;
    let dst = Side::new(gpu, dst_host, len)?;
    checker.fill(gpu, &mut src)?;
    let plan = BlockerPlan { stream: stream.handle(), ahead: true };
    let mut probe = BatchProbe {
        op,
        batch,
        stream: &stream,
        src,
        dst,
        checker,
        dsts: Vec::new(),
        srcs: Vec::new(),
        sizes: Vec::new(),
    };
    let (warmup, blocker_ns, reps) = measure(gpu, &mut probe, plan, reps)?;
    drop(probe);
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_order_kind_and_direction_once_and_only_host_sources_read_during_the_call_have_a_rule() {
        let cases = cases();
        assert_eq!(cases.len(), 12);
        for c in &cases {
            let Op::Batch(op) = c.op else { panic!("{} is not a batch case", c.setup.id) };
            let documented = matches!(c.setup.expected, Expected::Classes { .. });
            assert_eq!(documented, op.htod && op.order == SrcAccessOrder::DuringCall, "{}", c.setup.id);
            assert!(c.setup.blocker_ahead && c.setup.stream == Some(StreamKind::NonBlocking));
        }
    }
}

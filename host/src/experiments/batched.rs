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

use super::buffers::{Checker, Probeable, Side};
use super::method::{measure, BlockerPlan, Page, Probe};
use super::{case_record, Case, Op};
use async_lab_core::api::Api;
use async_lab_core::catalogue::copies::{CopyFacts, Entry, Form, Residency};
use async_lab_core::catalogue::Experiment as _;
use async_lab_core::classify::Class::*;
use async_lab_core::record::{CaseRecord, CaseSetup};
use async_lab_core::rules::Expected;
use async_lab_core::setup::CallTiming;
use async_lab_core::setup::Direction;
use async_lab_core::setup::{BlockerPlacement, Family};
use async_lab_core::units::format_size;
use async_lab_driver::batch::{BatchCopy, SrcAccessOrder};
use async_lab_driver::memory;
use async_lab_driver::runtime::batch as rtbatch;
use async_lab_driver::runtime::memory as rtmem;
use async_lab_driver::runtime::sys::cudaMemcpyKind;
use async_lab_driver::{DriverResult, Gpu, HostKind, Stream, StreamHandle, StreamKind};
use std::ffi::c_void;

/// The buffer every case copies, and the number of pieces it goes in.
pub const BYTES: u64 = 4 << 20;
pub const PIECES: u64 = 8;

#[derive(Clone, Copy, Debug)]
pub struct BatchOp {
    /// Host → device (`true`) or device → host.
    pub htod: bool,
    pub host: HostKind,
    pub submit: Submit,
    pub bytes: u64,
}

/// How the pieces are handed to the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    /// One `cuMemcpyBatchAsync` with this source access order for every piece.
    Batch(SrcAccessOrder),
    /// The same pieces as one `cuMemcpyHtoDAsync`/`cuMemcpyDtoHAsync` each, one after another, timed together:
    /// what the batch replaces.
    OneByOne,
}

impl Submit {
    fn slug(self) -> &'static str {
        match self {
            Submit::Batch(SrcAccessOrder::Stream) => "stream",
            Submit::Batch(SrcAccessOrder::DuringCall) => "during-call",
            Submit::Batch(SrcAccessOrder::Any) => "any",
            Submit::OneByOne => "one-by-one",
        }
    }
}

impl BatchOp {
    /// The single copy each piece is when made one by one (the copy family's case of that size).
    fn piece_copy(self) -> CopyFacts {
        CopyFacts {
            form: Form::Async,
            dir: if self.htod { Direction::HtoD } else { Direction::DtoH },
            host: Some(self.host),
            stream: StreamKind::NonBlocking,
            blocker: BlockerPlacement::Same,
            bytes: self.bytes / PIECES,
            entry: Entry::Typed,
            residency: Residency::HostTouched,
        }
    }
}

impl BatchOp {
    /// Which pages of the source the staging probe may overwrite: only the first, with the blocker ahead
    /// holding the batch back (as the copy family probes a source the GPU can read), and only of a host source. A copy allowed to read the
    /// source at any time may be reading it right then, out of stream order: an overwrite could give it a mix
    /// of both patterns, which says nothing. Those are not probed.
    fn probeable(self) -> Probeable {
        match self.submit {
            Submit::Batch(SrcAccessOrder::Any) => Probeable::Neither,
            _ if self.htod => Probeable::Head,
            _ => Probeable::Neither,
        }
    }

    fn case(self) -> Case {
        let dir = if self.htod { "htod" } else { "dtoh" };
        // The "during the call" order promises that the source is read by the return: for a host source the
        // staging probe can see whether it was.
        let (rule, expected) = match self.submit {
            Submit::Batch(SrcAccessOrder::DuringCall) if self.htod => {
                ("BC2", Expected::classes(&[Staged, WaitedForStream, Blocking]))
            }
            Submit::Batch(_) => ("BC1", Expected::undocumented()),
            // Each call is an ordinary async copy: the copy family's rule for one piece holds for each, and so
            // for the last, whose return ends the timed span.
            Submit::OneByOne => self.piece_copy().rule(Api::Driver),
        };
        let call = match self.submit {
            Submit::Batch(_) => "cuMemcpyBatchAsync",
            Submit::OneByOne => self.piece_copy().call(Api::Driver),
        };
        Case {
            setup: CaseSetup {
                id: format!(
                    "batch/{dir}/{}/{}/nonblocking/same/{}",
                    self.host.slug(),
                    self.submit.slug(),
                    format_size(self.bytes)
                ),
                family: Family::Batch,
                call: call.into(),
                rule: rule.into(),
                expected,
                stream: Some(StreamKind::NonBlocking),
                blocker: BlockerPlacement::Same,
                blocker_stream: Some(StreamKind::NonBlocking),
                blocker_ahead: true,
                host_memory: Some(self.host),
                direction: Some(if self.htod { Direction::HtoD } else { Direction::DtoH }),
                bytes: self.bytes,
                what: match self.submit {
                    Submit::Batch(order) => format!(
                        "cuMemcpyBatchAsync of {} in {PIECES} pieces, {} {} memory, source access order {}, with a blocker ahead of it in the same stream",
                        format_size(self.bytes),
                        if self.htod { "host → device, from" } else { "device → host, into" },
                        self.host.slug(),
                        Submit::Batch(order).slug()
                    ),
                    Submit::OneByOne => format!(
                        "the same {} in {PIECES} pieces as {PIECES} {call} calls one after another, timed together, {} {} memory, with a blocker ahead of them in the same stream: what one cuMemcpyBatchAsync replaces",
                        format_size(self.bytes),
                        if self.htod { "host → device, from" } else { "device → host, into" },
                        self.host.slug(),
                    ),
                },
                api: async_lab_core::api::Api::Driver,
                peer: None,
                timing: CallTiming::Stopwatch,
                case: None,
            },
            op: Op::Batch(self),
        }
    }
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for htod in [true, false] {
        for host in [HostKind::Pageable, HostKind::Pinned] {
            for submit in [
                Submit::Batch(SrcAccessOrder::Stream),
                Submit::Batch(SrcAccessOrder::DuringCall),
                Submit::Batch(SrcAccessOrder::Any),
                Submit::OneByOne,
            ] {
                v.push(BatchOp { htod, host, submit, bytes: BYTES }.case());
            }
        }
    }
    v
}

/// The copies through the API under test: one batch, or the pieces one by one.
enum Via {
    Driver(BatchCopy),
    Runtime(rtbatch::BatchCopy),
    OneByOne,
}

struct BatchProbe<'a, 'g> {
    op: BatchOp,
    api: Api,
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

impl BatchProbe<'_, '_> {
    /// The pieces as one async copy each, in order, through the API under test.
    ///
    /// # Safety
    /// As for the batch: the pieces tile two live buffers that stay allocated until the protocol synchronizes.
    unsafe fn one_by_one(&self) -> DriverResult<()> {
        let s = self.stream.handle();
        for ((&d, &src), &n) in self.dsts.iter().zip(&self.srcs).zip(&self.sizes) {
            // SAFETY: the caller's promise, piece by piece; the stream is live (borrowed by the probe) and a
            // driver stream of the primary context the runtime shares.
            unsafe {
                match (self.api, self.op.htod) {
                    (Api::Driver, true) => memory::memcpy_htod_async(d, src as *const c_void, n, s)?,
                    (Api::Driver, false) => memory::memcpy_dtoh_async(d as *mut c_void, src, n, s)?,
                    (Api::Runtime, true) => rtmem::memcpy_async(d, src, n, cudaMemcpyKind::cudaMemcpyHostToDevice, s)?,
                    (Api::Runtime, false) => rtmem::memcpy_async(d, src, n, cudaMemcpyKind::cudaMemcpyDeviceToHost, s)?,
                }
            }
        }
        Ok(())
    }
}

impl Probe for BatchProbe<'_, '_> {
    fn prepare(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        self.checker.restore(&mut self.src);
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
            match (&self.batch, self.op.submit) {
                (Via::Driver(b), Submit::Batch(order)) => b.copy(dsts, srcs, sizes, order, self.stream.handle()),
                (Via::Runtime(b), Submit::Batch(order)) => b.copy(dsts, srcs, sizes, order, self.stream.handle()),
                (_, _) => self.one_by_one(),
            }
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        Some(self.stream.handle())
    }

    fn probe_source(&mut self, page: Page) -> bool {
        // SAFETY: as in the copy family: `run_rep` asks for the first page only while the blocker ahead still
        // runs and the stream's work is unfinished, and `probeable` allows no other page; a copy that reads the
        // source in stream order cannot have started, one that reads it only during the call has finished
        // reading, and one that may read it at any time is not probed. The host writes plain bytes the copy
        // only reads: no memory is used after it is freed.
        unsafe { self.checker.probe_source(&mut self.src, page, self.op.probeable()) }
    }

    fn verify(&mut self, gpu: &Gpu, probed: Option<Page>) -> anyhow::Result<Option<bool>> {
        self.checker.verify_probe(gpu, &mut self.dst, probed)
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: BatchOp, reps: usize) -> anyhow::Result<CaseRecord> {
    let batch = match (op.submit, case.setup.api) {
        (Submit::OneByOne, _) => Ok(Via::OneByOne),
        (Submit::Batch(_), Api::Driver) => BatchCopy::resolve().map(Via::Driver).map_err(str::to_owned),
        (Submit::Batch(_), Api::Runtime) => rtbatch::BatchCopy::resolve().map(Via::Runtime),
    };
    let batch = match batch {
        Ok(b) => b,
        Err(why) => return Ok(super::not_run(case, &why)),
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
        api: case.setup.api,
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
        assert_eq!(cases.len(), 16);
        for c in &cases {
            let Op::Batch(op) = c.op else { panic!("{} is not a batch case", c.setup.id) };
            let documented = matches!(c.setup.expected, Expected::Classes { .. });
            match op.submit {
                Submit::Batch(order) => {
                    assert_eq!(documented, op.htod && order == SrcAccessOrder::DuringCall, "{}", c.setup.id);
                    assert_eq!(c.setup.call, "cuMemcpyBatchAsync");
                }
                // The pieces one by one are ordinary async copies, which the copy family's rules cover.
                Submit::OneByOne => {
                    assert!(documented, "{}", c.setup.id);
                    let want = if op.htod { "cuMemcpyHtoDAsync" } else { "cuMemcpyDtoHAsync" };
                    assert_eq!(c.setup.call, want, "{}", c.setup.id);
                    assert!(c.setup.id.contains("/one-by-one/"), "{}", c.setup.id);
                }
            }
            assert!(c.setup.blocker_ahead && c.setup.stream == Some(StreamKind::NonBlocking));
        }
    }

    #[test]
    fn the_probe_overwrites_only_the_first_page_of_a_host_source_not_read_at_any_time() {
        for c in cases() {
            let Op::Batch(op) = c.op else { panic!("{} is not a batch case", c.setup.id) };
            let probed = op.htod && op.submit != Submit::Batch(SrcAccessOrder::Any);
            assert_eq!(op.probeable(), if probed { Probeable::Head } else { Probeable::Neither }, "{}", c.setup.id);
        }
    }

    #[test]
    fn the_pieces_one_by_one_follow_the_copy_rules_of_one_piece() {
        let one_by_one: Vec<Case> = cases()
            .into_iter()
            .filter(|c| matches!(c.op, Op::Batch(BatchOp { submit: Submit::OneByOne, .. })))
            .collect();
        assert_eq!(one_by_one.len(), 4);
        let rule = |htod: bool, host: HostKind| {
            one_by_one
                .iter()
                .find(|c| matches!(c.op, Op::Batch(op) if op.htod == htod && op.host == host))
                .map(|c| c.setup.rule.clone())
                .unwrap()
        };
        // 512 KiB pieces: above the 64 KiB of rule G1; pageable copies stage (A2), pinned ones are async (A1).
        assert_eq!(rule(true, HostKind::Pageable), "A2");
        assert_eq!(rule(false, HostKind::Pageable), "A2");
        assert_eq!(rule(true, HostKind::Pinned), "A1");
        assert_eq!(rule(false, HostKind::Pinned), "A1");
    }
}

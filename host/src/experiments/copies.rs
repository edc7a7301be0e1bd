//! Copies in every direction, from and to every kind of host memory, in both API forms, on every kind of
//! stream (rules S1–S5, A1–A4, G1, ST1–ST3, AL4, AL5).
//!
//! Each copy goes through one of the driver's two entry forms: *typed* (`cuMemcpyHtoDAsync`, ...: the
//! caller says which side is host memory) or *unified* (`cuMemcpyAsync`: the driver infers it from the
//! addresses). The runtime twin of a typed copy passes the explicit `cudaMemcpyKind`, that of a unified one
//! `cudaMemcpyDefault`. Managed memory is measured in two states: pages last touched by the host, and pages
//! resident on the GPU (written by a kernel just before).

use super::buffers::{Checker, Probeable, Side};
use super::method::{measure, BlockerPlan, Page, Probe};
use super::{case_record, Case, Op};
use async_lab_core::api::Api;
use async_lab_core::classify::Class::{self, *};
use async_lab_core::record::{BlockerPlacement, CaseRecord, CaseSetup, Family};
use async_lab_core::rules::Expected;
use async_lab_core::setup::CallTiming;
use async_lab_core::setup::Direction;
use async_lab_core::units::format_size;
use async_lab_driver::memory as mem;
use async_lab_driver::runtime::memory as rtmem;
use async_lab_driver::{DriverResult, Gpu, HostKind, Stream, StreamHandle, StreamKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// cuMemcpyHtoD and friends: no stream argument; they use the legacy default stream.
    Sync,
    /// cuMemcpyHtoDAsync and friends.
    Async,
}

#[derive(Clone, Copy, Debug)]
pub struct CopyOp {
    pub form: Form,
    pub dir: Direction,
    /// The host memory involved (both ends for host → host); `None` for device → device.
    pub host: Option<HostKind>,
    pub stream: StreamKind,
    pub blocker: BlockerPlacement,
    pub bytes: u64,
    /// Which driver entry form: the unified `cuMemcpy*` (and `cudaMemcpyDefault`) or a typed one.
    pub entry: Entry,
    /// For managed memory: where its pages are when the copy starts.
    pub residency: Residency,
}

/// The driver's two ways to name a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `cuMemcpyHtoD*`, `cuMemcpyDtoH*`, `cuMemcpyDtoD*`; runtime: an explicit `cudaMemcpyKind`.
    Typed,
    /// `cuMemcpy*`, direction inferred from the addresses; runtime: `cudaMemcpyDefault`.
    Unified,
}

/// Where managed memory's pages are before the copy (no meaning for other memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residency {
    /// Last written or read by the host (the state a program is in after filling a buffer on the CPU).
    HostTouched,
    /// Written by a kernel just before: resident on the GPU.
    GpuResident,
}

impl Residency {
    pub fn slug(self) -> &'static str {
        match self {
            Residency::HostTouched => "host-touched",
            Residency::GpuResident => "gpu-resident",
        }
    }
}

/// The driver function a copy goes through: one per form, entry and direction (`CopyOp::driver_call`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyCall {
    /// `cuMemcpy`: the unified form, on the legacy default stream.
    Memcpy,
    /// `cuMemcpyAsync`: the unified form, on a stream.
    MemcpyAsync,
    HtoD,
    DtoH,
    DtoD,
    HtoDAsync,
    DtoHAsync,
    DtoDAsync,
}

impl CopyCall {
    /// The driver function's name, as a case's setup records it (`call`).
    pub fn name(self) -> &'static str {
        match self {
            CopyCall::Memcpy => "cuMemcpy",
            CopyCall::MemcpyAsync => "cuMemcpyAsync",
            CopyCall::HtoD => "cuMemcpyHtoD",
            CopyCall::DtoH => "cuMemcpyDtoH",
            CopyCall::DtoD => "cuMemcpyDtoD",
            CopyCall::HtoDAsync => "cuMemcpyHtoDAsync",
            CopyCall::DtoHAsync => "cuMemcpyDtoHAsync",
            CopyCall::DtoDAsync => "cuMemcpyDtoDAsync",
        }
    }
}

const SMALL: u64 = 64 << 10;

impl CopyOp {
    /// A copy in the entry form the catalogue used before both forms were measured: unified for managed
    /// memory and host → host, typed otherwise; managed pages last touched by the host.
    pub fn natural(
        form: Form,
        dir: Direction,
        host: Option<HostKind>,
        stream: StreamKind,
        blocker: BlockerPlacement,
        bytes: u64,
    ) -> CopyOp {
        let entry =
            if dir == Direction::HtoH || host == Some(HostKind::Managed) { Entry::Unified } else { Entry::Typed };
        CopyOp { form, dir, host, stream, blocker, bytes, entry, residency: Residency::HostTouched }
    }

    fn is_natural_entry(&self) -> bool {
        let natural = CopyOp::natural(self.form, self.dir, self.host, self.stream, self.blocker, self.bytes);
        natural.entry == self.entry
    }

    /// The id. Copies in the form the catalogue has always used keep their old ids; the other form adds
    /// `/typed` or `/unified`, and GPU-resident managed memory adds `/gpu-resident`.
    pub fn id(&self, prefix: &str) -> String {
        let mut id = self.base_id(prefix);
        if !self.is_natural_entry() {
            id.push_str(if self.entry == Entry::Unified { "/unified" } else { "/typed" });
        }
        if self.host == Some(HostKind::Managed) && self.residency == Residency::GpuResident {
            id.push_str("/gpu-resident");
        }
        id
    }

    fn base_id(&self, prefix: &str) -> String {
        format!(
            "{prefix}/{}/{}/{}/{}/{}/{}",
            if self.form == Form::Sync { "sync" } else { "async" },
            self.dir.slug(),
            self.host.map_or("device", |h| h.slug()),
            self.stream.slug(),
            if self.blocker == BlockerPlacement::Same { "same" } else { "other" },
            format_size(self.bytes)
        )
    }

    /// The driver function this experiment calls. Host → host has only the unified form.
    pub fn driver_call(&self) -> CopyCall {
        use Direction::*;
        use Entry::*;
        match (self.form, self.entry, self.dir) {
            (Form::Sync, Unified, _) | (Form::Sync, Typed, HtoH) => CopyCall::Memcpy,
            (Form::Async, Unified, _) | (Form::Async, Typed, HtoH) => CopyCall::MemcpyAsync,
            (Form::Sync, Typed, HtoD) => CopyCall::HtoD,
            (Form::Sync, Typed, DtoH) => CopyCall::DtoH,
            (Form::Sync, Typed, DtoD) => CopyCall::DtoD,
            (Form::Async, Typed, HtoD) => CopyCall::HtoDAsync,
            (Form::Async, Typed, DtoH) => CopyCall::DtoHAsync,
            (Form::Async, Typed, DtoD) => CopyCall::DtoDAsync,
        }
    }

    /// The name of the driver function this experiment calls, as its setup records it.
    pub fn call(&self) -> &'static str {
        self.driver_call().name()
    }

    /// The rule this copy tests, and what it predicts.
    pub fn rule(&self) -> (&'static str, Expected) {
        let host = self.host;
        let other = self.blocker == BlockerPlacement::Other;
        if host == Some(HostKind::Managed) {
            return ("A4", Expected::Undocumented { older: Some(vec![Blocking]) });
        }
        let pageable = host == Some(HostKind::Pageable);
        let c = |v: &[Class]| Expected::classes(v);
        match (self.form, self.dir) {
            (_, Direction::HtoD) if pageable && self.bytes <= SMALL => ("G1", c(&[Async, Staged])),
            // "Returns once the data is in a staging buffer": staged, or held through its transfer where the
            // staging buffer is smaller than the copy; behind work in its stream, after waiting for it.
            (Form::Sync, Direction::HtoD) if pageable && other => ("S1", c(&[Staged, Blocking])),
            (Form::Sync, Direction::HtoD) if pageable => ("S1", c(&[WaitedForStream, Blocking])),
            // Fully synchronous: held through its own work; behind work in its stream, a transfer too short for
            // the readings to say more reads as the wait for the stream.
            (Form::Sync, Direction::HtoD) if other => ("S2", c(&[Blocking])),
            (Form::Sync, Direction::HtoD) => ("S2", c(&[Blocking, WaitedForStream])),
            (Form::Sync, Direction::DtoH) if other => ("S3", c(&[Blocking])),
            (Form::Sync, Direction::DtoH) => ("S3", c(&[Blocking, WaitedForStream])),
            (Form::Sync, Direction::DtoD) => ("S4", c(&[Async])),
            (Form::Sync, Direction::HtoH) => ("S5", c(&[Blocking])),
            (Form::Async, Direction::HtoH) => ("A3", c(&[Blocking])),
            // "Returns once the pageable buffer has been copied to the staging memory": staged, or held
            // through its transfer where the staging buffer is smaller than the copy; the driver may first wait
            // for the stream ("may be synchronous").
            (Form::Async, Direction::HtoD) if pageable && other => ("A2", c(&[Staged, Blocking])),
            (Form::Async, Direction::HtoD) if pageable => ("A2", c(&[Staged, WaitedForStream, Blocking])),
            // Into pageable memory the data must exist first: held through the work ahead and its own transfer
            // (a transfer too short for the readings to say more reads as the wait for the stream).
            (Form::Async, Direction::DtoH) if pageable && other => ("A2", c(&[Blocking])),
            (Form::Async, Direction::DtoH) if pageable => ("A2", c(&[Blocking, WaitedForStream])),
            (Form::Async, _) if host == Some(HostKind::Registered) => ("AL4", c(&[Async])),
            (Form::Async, _) if host == Some(HostKind::WriteCombined) => ("AL5", c(&[Async])),
            (Form::Async, _) => ("A1", c(&[Async])),
        }
    }

    pub fn case(self, prefix: &str, family: Family) -> Case {
        let (rule, expected) = self.rule();
        let what = format!(
            "{} of {} {}, {}, with a blocker {}",
            self.call(),
            format_size(self.bytes),
            match self.dir {
                Direction::HtoD => format!("from {} host memory to the device", self.host_slug()),
                Direction::DtoH => format!("from the device to {} host memory", self.host_slug()),
                Direction::DtoD => "between two device buffers".to_owned(),
                Direction::HtoH => format!("between two {} host buffers", self.host_slug()),
            },
            match self.form {
                Form::Sync => "on the legacy default stream (the non-async form has no stream argument)".to_owned(),
                Form::Async => format!("on a {} stream", self.stream.slug()),
            },
            if self.blocker == BlockerPlacement::Same {
                "ahead of it in the same stream"
            } else {
                "on another, non-blocking stream"
            }
        );
        let what = if self.host == Some(HostKind::Managed) {
            format!(
                "{what}; the managed pages were last {}",
                match self.residency {
                    Residency::HostTouched => "touched by the host",
                    Residency::GpuResident => "written by a kernel (resident on the GPU)",
                }
            )
        } else {
            what
        };
        let blocker_stream = if self.blocker == BlockerPlacement::Same { self.stream } else { StreamKind::NonBlocking };
        Case {
            setup: CaseSetup {
                id: self.id(prefix),
                family,
                call: self.call().to_owned(),
                rule: rule.to_owned(),
                expected,
                stream: Some(self.stream),
                blocker: self.blocker,
                blocker_stream: Some(blocker_stream),
                blocker_ahead: self.blocker == BlockerPlacement::Same,
                host_memory: self.host,
                bytes: self.bytes,
                what,
                api: async_lab_core::api::Api::Driver,
                peer: None,
                direction: Some(self.dir),
                timing: CallTiming::Stopwatch,
            },
            op: Op::Copy(self),
        }
    }

    /// Which pages of the source the staging probe may overwrite. Only a host source, and with the copy in
    /// flight only one the GPU cannot read itself: pageable memory (on a GPU that cannot access pageable
    /// memory: `CopyProbe::probe_source` checks the device's attribute), which only the driver's host code
    /// copies into its staging buffer.
    fn probeable(&self) -> Probeable {
        match (self.dir, self.host) {
            (Direction::DtoH | Direction::DtoD, _) => Probeable::Neither,
            (Direction::HtoD | Direction::HtoH, Some(HostKind::Pageable)) => Probeable::Either,
            (Direction::HtoD | Direction::HtoH, _) => Probeable::Head,
        }
    }

    fn host_slug(&self) -> &'static str {
        match self.host {
            Some(HostKind::WriteCombined) => "write-combined pinned",
            Some(h) => h.slug(),
            None => "device",
        }
    }
}

/// The buffers and streams of one copy experiment.
struct CopyProbe<'a, 'g> {
    op: CopyOp,
    api: Api,
    src: Side<'g>,
    dst: Side<'g>,
    checker: Checker<'g>,
    stream: &'a Stream<'g>,
    /// Whether the GPU reads pageable memory itself: then no page of a copy in flight may be overwritten.
    gpu_reads_pageable: bool,
}

impl Probe for CopyProbe<'_, '_> {
    fn prepare(&mut self, gpu: &Gpu) -> anyhow::Result<()> {
        if self.op.residency == Residency::GpuResident {
            // Written on the GPU, so the pages are resident there (the probe's host write may have moved one).
            self.checker.fill_on_gpu(gpu, &self.src)?;
            self.checker.poison_on_gpu(gpu, &self.dst)?;
        } else {
            self.checker.restore(&mut self.src);
            self.checker.poison(&mut self.dst)?;
        }
        Ok(())
    }

    fn call(&mut self, _gpu: &Gpu) -> DriverResult<()> {
        let (n, s) = (self.op.bytes as usize, self.stream.handle());
        let (dst, src) = (self.dst.addr(), self.src.addr());
        if self.api == Api::Runtime {
            use async_lab_driver::runtime::sys::cudaMemcpyKind as K;
            let kind = match (self.op.entry, self.op.dir) {
                (_, Direction::HtoH) | (Entry::Unified, _) => K::cudaMemcpyDefault,
                (Entry::Typed, Direction::HtoD) => K::cudaMemcpyHostToDevice,
                (Entry::Typed, Direction::DtoH) => K::cudaMemcpyDeviceToHost,
                (Entry::Typed, Direction::DtoD) => K::cudaMemcpyDeviceToDevice,
            };
            // SAFETY: as for the driver calls below: live buffers of `n` bytes, untouched until synchronized;
            // the stream is a driver stream of the primary context the runtime uses too.
            return unsafe {
                match self.op.form {
                    Form::Sync => rtmem::memcpy(dst, src, n, kind),
                    Form::Async => rtmem::memcpy_async(dst, src, n, kind, s),
                }
            };
        }
        // SAFETY: `dst` and `src` are live buffers of `n` bytes owned by this probe; for the async forms they
        // stay alive and are not touched by the host until the device is synchronized (the one exception is
        // the staging probe, see `probe_source`).
        unsafe {
            match self.op.driver_call() {
                CopyCall::Memcpy => mem::memcpy(dst, src, n),
                CopyCall::MemcpyAsync => mem::memcpy_async(dst, src, n, s),
                CopyCall::HtoD => mem::memcpy_htod(dst, src as *const _, n),
                CopyCall::DtoH => mem::memcpy_dtoh(dst as *mut _, src, n),
                CopyCall::DtoD => mem::memcpy_dtod(dst, src, n),
                CopyCall::HtoDAsync => mem::memcpy_htod_async(dst, src as *const _, n, s),
                CopyCall::DtoHAsync => mem::memcpy_dtoh_async(dst as *mut _, src, n, s),
                CopyCall::DtoDAsync => mem::memcpy_dtod_async(dst, src, n, s),
            }
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        Some(match self.op.form {
            Form::Sync => StreamHandle::LEGACY,
            Form::Async => self.stream.handle(),
        })
    }

    fn probe_source(&mut self, page: Page) -> bool {
        // A GPU that reads pageable memory itself (HMM, ATS) may be reading the source right now.
        if page == Page::Tail && self.gpu_reads_pageable {
            return false;
        }
        // SAFETY: `run_rep` asks for the first page only while the blocker ahead of the copy is still running
        // and the copy's own work has not finished, so the copy engine cannot read the source before the
        // blocker ends (if it ends during the overwrite, `run_rep` sees it and discards the repetition); the
        // last page only with the copy in flight, which `probeable` allows only for pageable memory, which no
        // DMA reads. Staged data comes from the driver's buffer, not this one. Either way the host writes plain
        // bytes the copy only reads: no memory is used after it is freed.
        unsafe { self.checker.probe_source(&mut self.src, page, self.op.probeable()) }
    }

    fn verify(&mut self, gpu: &Gpu, probed: Option<Page>) -> anyhow::Result<Option<bool>> {
        self.checker.verify_probe(gpu, &mut self.dst, probed)
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: CopyOp, reps: usize) -> anyhow::Result<CaseRecord> {
    let len = op.bytes as usize;
    let (src_host, dst_host) = match op.dir {
        Direction::HtoD => (op.host, None),
        Direction::DtoH => (None, op.host),
        Direction::DtoD => (None, None),
        Direction::HtoH => (op.host, op.host),
    };
    let stream = Stream::new(gpu, if op.form == Form::Sync { StreamKind::Legacy } else { op.stream })?;
    let other = Stream::new(gpu, StreamKind::NonBlocking)?;
    let checker = Checker::new(gpu, op.bytes)?;
    let mut src = Side::new(gpu, src_host, len)?;
    checker.fill(gpu, &mut src)?;
    let dst = Side::new(gpu, dst_host, len)?;
    if op.residency == Residency::GpuResident {
        // The GPU-resident state is made in `prepare`, before every repetition: only managed memory has it.
        anyhow::ensure!(op.host == Some(HostKind::Managed), "only managed memory can be GPU-resident");
    }
    let plan = BlockerPlan {
        stream: if op.blocker == BlockerPlacement::Same { stream.handle() } else { other.handle() },
        ahead: op.blocker == BlockerPlacement::Same,
    };
    let gpu_reads_pageable = async_lab_driver::device::reads_pageable_memory(gpu.device)?;
    let mut probe = CopyProbe { op, api: case.setup.api, src, dst, checker, stream: &stream, gpu_reads_pageable };
    let (warmup, blocker_ns, reps) = measure(gpu, &mut probe, plan, reps)?;
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}

/// The default preset's copies: each direction and memory kind at each size on a non-blocking stream, the
/// non-async forms, the other stream kinds, and blockers on another stream.
pub fn default_cases(sizes: &[u64], mid: u64) -> Vec<Case> {
    let mut v = Vec::new();
    let same = BlockerPlacement::Same;
    let other = BlockerPlacement::Other;
    let nb = StreamKind::NonBlocking;
    let mut push = |form, dir, host, stream, blocker, bytes| {
        v.push(CopyOp::natural(form, dir, host, stream, blocker, bytes).case("copy", Family::Copy));
    };
    for dir in [Direction::HtoD, Direction::DtoH] {
        for host in HostKind::ALL {
            for &b in sizes {
                push(Form::Async, dir, Some(host), nb, same, b);
            }
        }
    }
    for &b in sizes {
        push(Form::Async, Direction::DtoD, None, nb, same, b);
    }
    for host in [HostKind::Pageable, HostKind::Pinned] {
        push(Form::Async, Direction::HtoH, Some(host), nb, same, mid);
    }
    for dir in [Direction::HtoD, Direction::DtoH] {
        for host in [HostKind::Pageable, HostKind::Pinned] {
            for &b in sizes {
                push(Form::Sync, dir, Some(host), StreamKind::Legacy, same, b);
            }
        }
    }
    for &b in sizes.iter().filter(|&&b| b == 64 << 10 || b == *sizes.last().unwrap()) {
        push(Form::Sync, Direction::DtoD, None, StreamKind::Legacy, same, b);
    }
    push(Form::Sync, Direction::HtoH, Some(HostKind::Pageable), StreamKind::Legacy, same, mid);
    for (dir, host) in [
        (Direction::HtoD, HostKind::Pageable),
        (Direction::HtoD, HostKind::Pinned),
        (Direction::DtoH, HostKind::Pageable),
    ] {
        for stream in [StreamKind::Blocking, StreamKind::Legacy, StreamKind::PerThread] {
            push(Form::Async, dir, Some(host), stream, same, mid);
        }
    }
    push(Form::Async, Direction::HtoD, Some(HostKind::Pageable), nb, other, mid);
    push(Form::Async, Direction::DtoH, Some(HostKind::Pageable), nb, other, mid);
    push(Form::Sync, Direction::HtoD, Some(HostKind::Pageable), StreamKind::Legacy, other, mid);
    push(Form::Sync, Direction::DtoH, Some(HostKind::Pageable), StreamKind::Legacy, other, mid);
    push(Form::Sync, Direction::HtoD, Some(HostKind::Pinned), StreamKind::Legacy, other, mid);
    v.extend(forms_and_residency_cases(sizes, mid));
    v
}

/// Every host kind through the entry form the cases above do not use (unified for pageable, pinned,
/// registered and write-combined memory at `mid`; typed for managed at every size), and managed memory
/// resident on the GPU (every size through the unified form, `mid` through the typed one).
pub fn forms_and_residency_cases(sizes: &[u64], mid: u64) -> Vec<Case> {
    let mut v = Vec::new();
    let nb = StreamKind::NonBlocking;
    let same = BlockerPlacement::Same;
    for dir in [Direction::HtoD, Direction::DtoH] {
        for host in [HostKind::Pageable, HostKind::Pinned, HostKind::Registered, HostKind::WriteCombined] {
            let mut op = CopyOp::natural(Form::Async, dir, Some(host), nb, same, mid);
            op.entry = Entry::Unified;
            v.push(op.case("copy", Family::Copy));
        }
        // Managed memory at every size: through the typed form (the runtime's explicit kinds, which the C++
        // reference passes with --explicit-kinds), and resident on the GPU through both forms.
        for &bytes in sizes {
            let mut typed = CopyOp::natural(Form::Async, dir, Some(HostKind::Managed), nb, same, bytes);
            typed.entry = Entry::Typed;
            v.push(typed.case("copy", Family::Copy));
            let mut resident = CopyOp::natural(Form::Async, dir, Some(HostKind::Managed), nb, same, bytes);
            resident.residency = Residency::GpuResident;
            v.push(resident.case("copy", Family::Copy));
            if bytes == mid {
                typed.residency = Residency::GpuResident;
                v.push(typed.case("copy", Family::Copy));
            }
        }
    }
    v
}

/// The whole matrix: every direction × memory kind × form × size × stream, blocker in the same stream.
pub fn full_cases(sizes: &[u64]) -> Vec<Case> {
    let mut v = Vec::new();
    for form in [Form::Sync, Form::Async] {
        let streams: &[StreamKind] = if form == Form::Sync { &[StreamKind::Legacy] } else { &StreamKind::ALL };
        for dir in [Direction::HtoD, Direction::DtoH, Direction::DtoD, Direction::HtoH] {
            let hosts: Vec<Option<HostKind>> =
                if dir == Direction::DtoD { vec![None] } else { HostKind::ALL.iter().copied().map(Some).collect() };
            for host in hosts {
                for &stream in streams {
                    for &bytes in sizes {
                        for blocker in [BlockerPlacement::Same, BlockerPlacement::Other] {
                            v.push(CopyOp::natural(form, dir, host, stream, blocker, bytes).case("copy", Family::Copy));
                        }
                    }
                }
            }
        }
    }
    v
}

/// The size sweep: async copies on a non-blocking stream, pageable against pinned, both directions.
pub fn sweep_cases(sizes: &[u64]) -> Vec<Case> {
    let mut v = Vec::new();
    for dir in [Direction::HtoD, Direction::DtoH] {
        for host in [HostKind::Pageable, HostKind::Pinned] {
            for &bytes in sizes {
                let op = CopyOp::natural(
                    Form::Async,
                    dir,
                    Some(host),
                    StreamKind::NonBlocking,
                    BlockerPlacement::Same,
                    bytes,
                );
                let mut case = op.case("sweep", Family::Sweep);
                case.setup.id = format!("sweep/{}/{}/{}", dir.slug(), host.slug(), format_size(bytes));
                v.push(case);
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_to_host_takes_the_unified_call_and_the_full_matrix_makes_all_eight() {
        let mut seen = Vec::new();
        for case in full_cases(&[4 << 10]) {
            let Op::Copy(op) = case.op else { panic!("{} is not a copy", case.setup.id) };
            let call = op.driver_call();
            assert_eq!(case.setup.call, call.name(), "{}", case.setup.id);
            if op.dir == Direction::HtoH {
                assert!(matches!(call, CopyCall::Memcpy | CopyCall::MemcpyAsync), "{}", case.setup.id);
            }
            if !seen.contains(&call) {
                seen.push(call);
            }
        }
        assert_eq!(seen.len(), 8, "{seen:?}");
    }

    #[test]
    fn the_probe_overwrites_a_host_source_and_its_last_page_only_if_pageable() {
        for case in full_cases(&[4 << 10]) {
            let Op::Copy(op) = case.op else { panic!("{} is not a copy", case.setup.id) };
            let want = match (op.dir, op.host) {
                (Direction::DtoH | Direction::DtoD, _) => Probeable::Neither,
                (_, Some(HostKind::Pageable)) => Probeable::Either,
                _ => Probeable::Head,
            };
            assert_eq!(op.probeable(), want, "{}", case.setup.id);
            assert_eq!(want.allows(Page::Tail), want == Probeable::Either);
            assert_eq!(want.allows(Page::Head), want != Probeable::Neither);
        }
    }
}

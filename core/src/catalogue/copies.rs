//! Copies in every direction, from and to every kind of host memory, in both API forms, on every kind of
//! stream (rules S1–S5, A1–A4, G1, ST1–ST3, AL4, AL5), and the size sweep.
//!
//! Each copy goes through one of the driver's two entry forms: *typed* (`cuMemcpyHtoDAsync`, ...: the
//! caller says which side is host memory) or *unified* (`cuMemcpyAsync`: the driver infers it from the
//! addresses). The runtime twin of a typed copy passes the explicit `cudaMemcpyKind`, that of a unified one
//! `cudaMemcpyDefault`. Managed memory is measured in two states: pages last touched by the host, and pages
//! resident on the GPU (written by a kernel just before).

use super::{api_words, blocker_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::{self, *};
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Direction, Family, HostKind, StreamKind};
use crate::units::format_size;
use serde::{Deserialize, Serialize};

/// The copy call's form: with a stream argument or without.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    /// cuMemcpyHtoD and friends: no stream argument; they use the legacy default stream.
    Sync,
    /// cuMemcpyHtoDAsync and friends.
    Async,
}

/// The driver's two ways to name a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Entry {
    /// `cuMemcpyHtoD*`, `cuMemcpyDtoH*`, `cuMemcpyDtoD*`; runtime: an explicit `cudaMemcpyKind`.
    Typed,
    /// `cuMemcpy*`, direction inferred from the addresses; runtime: `cudaMemcpyDefault`.
    Unified,
}

impl Entry {
    /// The form a copy's id does not name: unified for managed memory and host → host, typed otherwise. A
    /// copy through the other form says so in its id (`/typed`, `/unified`).
    pub fn usual(dir: Direction, host: Option<HostKind>) -> Entry {
        if dir == Direction::HtoH || host == Some(HostKind::Managed) {
            Entry::Unified
        } else {
            Entry::Typed
        }
    }
}

/// Where managed memory's pages are before the copy (no meaning for other memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Residency {
    /// Last written or read by the host (the state a program is in after filling a buffer on the CPU).
    HostTouched,
    /// Written by a kernel just before: resident on the GPU.
    GpuResident,
}

/// The driver function a copy goes through: one per form, entry and direction (`CopyFacts::driver_call`).
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
    /// The driver function's name.
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

    /// The runtime's call that does the same, named with the `cudaMemcpyKind` it passes: the typed calls an
    /// explicit kind, the unified ones `cudaMemcpyDefault`.
    pub fn runtime_name(self) -> &'static str {
        match self {
            CopyCall::Memcpy => "cudaMemcpy(Default)",
            CopyCall::MemcpyAsync => "cudaMemcpyAsync(Default)",
            CopyCall::HtoD => "cudaMemcpy(HostToDevice)",
            CopyCall::DtoH => "cudaMemcpy(DeviceToHost)",
            CopyCall::DtoD => "cudaMemcpy(DeviceToDevice)",
            CopyCall::HtoDAsync => "cudaMemcpyAsync(HostToDevice)",
            CopyCall::DtoHAsync => "cudaMemcpyAsync(DeviceToHost)",
            CopyCall::DtoDAsync => "cudaMemcpyAsync(DeviceToDevice)",
        }
    }
}

/// One copy experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyFacts {
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

const SMALL: u64 = 64 << 10;

impl CopyFacts {
    /// A copy through its usual entry form (`Entry::usual`), managed pages last touched by the host.
    pub fn new(
        form: Form,
        dir: Direction,
        host: Option<HostKind>,
        stream: StreamKind,
        blocker: BlockerPlacement,
        bytes: u64,
    ) -> CopyFacts {
        CopyFacts {
            form,
            dir,
            host,
            stream,
            blocker,
            bytes,
            entry: Entry::usual(dir, host),
            residency: Residency::HostTouched,
        }
    }

    /// The same copy through the other entry form.
    pub fn through(self, entry: Entry) -> CopyFacts {
        CopyFacts { entry, ..self }
    }

    /// The same copy of managed memory whose pages are resident on the GPU.
    pub fn gpu_resident(self) -> CopyFacts {
        CopyFacts { residency: Residency::GpuResident, ..self }
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

    /// The id's part after `copy/` (or the sweep's): form, direction, memory, stream, blocker, size, and the
    /// entry form and residency where they are not the usual ones.
    fn id_parts(&self) -> String {
        let mut id = format!(
            "{}/{}/{}/{}/{}/{}",
            if self.form == Form::Sync { "sync" } else { "async" },
            self.dir.slug(),
            self.host.map_or("device", |h| h.slug()),
            self.stream.slug(),
            if self.blocker == BlockerPlacement::Same { "same" } else { "other" },
            format_size(self.bytes)
        );
        if self.entry != Entry::usual(self.dir, self.host) {
            id.push_str(if self.entry == Entry::Unified { "/unified" } else { "/typed" });
        }
        if self.host == Some(HostKind::Managed) && self.residency == Residency::GpuResident {
            id.push_str("/gpu-resident");
        }
        id
    }

    fn host_slug(&self) -> &'static str {
        match self.host {
            Some(HostKind::WriteCombined) => "write-combined pinned",
            Some(h) => h.slug(),
            None => "device",
        }
    }
}

impl Experiment for CopyFacts {
    fn family(&self) -> Family {
        Family::Copy
    }

    fn id(&self) -> String {
        format!("copy/{}", self.id_parts())
    }

    fn call(&self, api: Api) -> &'static str {
        match api {
            Api::Driver => self.driver_call().name(),
            Api::Runtime => self.driver_call().runtime_name(),
        }
    }

    fn runtime_twin(&self) -> bool {
        true
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
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

    fn what(&self, api: Api) -> String {
        let what = format!(
            "{} of {} {}, {}, with a blocker {}",
            self.call(api),
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
            blocker_words(self.blocker == BlockerPlacement::Same)
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
        format!("{what}{}", api_words(api))
    }

    fn layout(&self) -> Layout {
        let mut l = Layout::behind(self.stream, self.blocker);
        l.host_memory = self.host;
        l.bytes = self.bytes;
        l.direction = Some(self.dir);
        l
    }
}

/// A copy of the size sweep: an async copy on a non-blocking stream, its id naming only direction, memory
/// and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepFacts(pub CopyFacts);

impl Experiment for SweepFacts {
    fn family(&self) -> Family {
        Family::Sweep
    }
    fn id(&self) -> String {
        let c = &self.0;
        format!("sweep/{}/{}/{}", c.dir.slug(), c.host.map_or("device", |h| h.slug()), format_size(c.bytes))
    }
    fn call(&self, api: Api) -> &'static str {
        self.0.call(api)
    }
    fn runtime_twin(&self) -> bool {
        true
    }
    fn rule(&self, api: Api) -> (&'static str, Expected) {
        self.0.rule(api)
    }
    fn what(&self, api: Api) -> String {
        self.0.what(api)
    }
    fn layout(&self) -> Layout {
        self.0.layout()
    }
}

impl From<CopyFacts> for Facts {
    fn from(f: CopyFacts) -> Facts {
        Facts::Copy(f)
    }
}

impl From<SweepFacts> for Facts {
    fn from(f: SweepFacts) -> Facts {
        Facts::Sweep(f)
    }
}

/// The default preset's copies: each direction and memory kind at each size on a non-blocking stream, the
/// non-async forms, the other stream kinds, and blockers on another stream.
pub fn default_cases(sizes: &[u64], mid: u64) -> Vec<Case> {
    let mut v = Vec::new();
    let same = BlockerPlacement::Same;
    let other = BlockerPlacement::Other;
    let nb = StreamKind::NonBlocking;
    let mut push = |form, dir, host, stream, blocker, bytes| {
        v.push(Case::driver(CopyFacts::new(form, dir, host, stream, blocker, bytes)));
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
            v.push(Case::driver(CopyFacts::new(Form::Async, dir, Some(host), nb, same, mid).through(Entry::Unified)));
        }
        // Managed memory at every size: through the typed form (the runtime's explicit kinds, which the C++
        // reference passes with --explicit-kinds), and resident on the GPU through both forms.
        for &bytes in sizes {
            let managed = CopyFacts::new(Form::Async, dir, Some(HostKind::Managed), nb, same, bytes);
            v.push(Case::driver(managed.through(Entry::Typed)));
            v.push(Case::driver(managed.gpu_resident()));
            if bytes == mid {
                v.push(Case::driver(managed.through(Entry::Typed).gpu_resident()));
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
                            v.push(Case::driver(CopyFacts::new(form, dir, host, stream, blocker, bytes)));
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
                let copy = CopyFacts::new(
                    Form::Async,
                    dir,
                    Some(host),
                    StreamKind::NonBlocking,
                    BlockerPlacement::Same,
                    bytes,
                );
                v.push(Case::driver(SweepFacts(copy)));
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
            let Facts::Copy(op) = case.facts else { panic!("{} is not a copy", case.id()) };
            let call = op.driver_call();
            assert_eq!(case.call(), call.name(), "{}", case.id());
            if op.dir == Direction::HtoH {
                assert!(matches!(call, CopyCall::Memcpy | CopyCall::MemcpyAsync), "{}", case.id());
            }
            if !seen.contains(&call) {
                seen.push(call);
            }
        }
        assert_eq!(seen.len(), 8, "{seen:?}");
    }

    #[test]
    fn an_id_names_the_entry_form_and_residency_only_where_they_are_not_the_usual_ones() {
        let nb = StreamKind::NonBlocking;
        let same = BlockerPlacement::Same;
        let pinned = CopyFacts::new(Form::Async, Direction::HtoD, Some(HostKind::Pinned), nb, same, 1 << 20);
        assert_eq!(pinned.id(), "copy/async/htod/pinned/nonblocking/same/1MiB");
        assert_eq!(pinned.through(Entry::Unified).id(), "copy/async/htod/pinned/nonblocking/same/1MiB/unified");
        let managed = CopyFacts::new(Form::Async, Direction::DtoH, Some(HostKind::Managed), nb, same, 4096);
        assert_eq!(managed.entry, Entry::Unified);
        assert_eq!(
            managed.through(Entry::Typed).gpu_resident().id(),
            "copy/async/dtoh/managed/nonblocking/same/4KiB/typed/gpu-resident"
        );
        assert_eq!(Case::runtime(pinned).call(), "cudaMemcpyAsync(HostToDevice)");
        assert_eq!(Case::runtime(managed).call(), "cudaMemcpyAsync(Default)");
    }
}

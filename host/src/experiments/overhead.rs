//! The tool's own overhead: what async-lab's host thread pays to enqueue the cheapest calls, timed the way a
//! C++ program would time them, so that it can be compared with `reference/async_ref.cu --overhead` run on
//! the same machine (the goal: medians within 10% of the C++ driver-API program's).
//!
//! The cases and their facts are the catalogue's (`async_lab_core::catalogue::overhead`); this file measures them.
//!
//! Every other experiment asks "did this call wait?"; this one only asks "how long did the call take?". Two
//! calls, each through the driver and through the runtime: a 4-byte `cuMemcpyHtoDAsync` from pinned memory
//! (`cudaMemcpyAsync(HostToDevice)`) and a launch of the `empty` kernel (`cudaLaunchKernel`).
//!
//! Method, per case, on one non-blocking stream:
//! 1. One call and a synchronize, untimed (under lazy loading a runtime kernel is loaded at its first launch).
//! 2. A warm-up round, untimed: the round below, its times thrown away.
//! 3. The measured round: a 200 ms blocker, then `ENQUEUES` calls, each timed alone (`Stopwatch`: nothing but
//!    the clock reads around the call), then a synchronize. 500 launches stay well under the launch queue's
//!    depth (about 1000), so no call waits for the blocker; the blocker's event is queried once, after the last
//!    call, and a blocker that had already finished makes the record an error.
//!
//! No signal is read between the calls, so the repetitions carry none (`blocker_done_at_return` and
//! `op_done_at_return` are `None`) and classify as `async`: the numbers are the point. The record holds one
//! repetition per call, the per-call times in µs as its `series`, and `median_us`, `p10_us`, `p90_us` on its
//! first repetition. `--reps` does not apply: the count is fixed so that both programs time the same number of
//! calls.

use super::method::Blocker;
use super::{case_record, Case};
use anyhow::{bail, Context as _};
use async_lab_core::api::Api;
use async_lab_core::catalogue::overhead::{OverheadFacts, OverheadOp, BLOCKER_NS, ENQUEUES};
use async_lab_core::record::{CaseRecord, Rep};
use async_lab_core::setup::CallTiming;
use async_lab_driver::measure::{monotonic_ns, Stopwatch, Timed};
use async_lab_driver::runtime::library::{RtKernel, RtLibrary};
use async_lab_driver::runtime::memory as rtmem;
use async_lab_driver::{memory, CudaResult, DeviceBuffer, Gpu, HostBuffer, HostKind, Stream, StreamKind};
use async_lab_ptx::kernels;

/// The copy's size, and what it carries (checked on the device after the measured round).
const COPY_BYTES: usize = async_lab_core::catalogue::overhead::COPY_BYTES as usize;
const PATTERN: [u8; COPY_BYTES] = [0xA5, 0x11, 0xCE, 0x5A];

/// The `empty` kernel through the runtime (`cudaLibraryLoadData`, `cudaLibraryGetKernel`).
struct RuntimeEmpty {
    kernel: RtKernel,
    /// Keeps the kernel loaded; dropped only after the device was synchronized (see `run`).
    _library: RtLibrary,
}

impl RuntimeEmpty {
    fn load(gpu: &Gpu) -> CudaResult<RuntimeEmpty> {
        let library = RtLibrary::load(gpu.ptx.text())?;
        Ok(RuntimeEmpty { kernel: library.kernel(kernels::EMPTY.name)?, _library: library })
    }
}

/// The value at percentile `p` (0 to 100) of `sorted` (ascending), interpolating linearly between the two
/// nearest ranks (rank `p / 100 · (n − 1)`, as numpy's default); the 50th is the median `stats::median` gives.
/// `None` when empty. The C++ reference computes its percentiles the same way.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = (p / 100.0).clamp(0.0, 1.0) * last as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64))
}

/// One round's timed calls: the host clock at each call's start and its stopwatch reading.
struct Round {
    blocker_launch_ns: u64,
    calls: Vec<(u64, Timed)>,
    /// Whether the blocker was still running after the last call returned.
    blocker_running_at_end: bool,
}

/// The blocker, then `ENQUEUES` calls each timed alone. The caller synchronizes.
fn round(
    stream: &Stream,
    blocker: &Blocker,
    timing: CallTiming,
    call: &dyn Fn() -> CudaResult<()>,
) -> anyhow::Result<Round> {
    // `launch` makes the GPU's context current; nothing in the loop below calls the driver but `call`.
    let blocker_launch_ns = blocker.launch(stream.handle(), BLOCKER_NS)?;
    let mut calls = Vec::with_capacity(ENQUEUES);
    for _ in 0..ENQUEUES {
        let start = monotonic_ns();
        let (result, timed) = match timing {
            CallTiming::Stopwatch => {
                let watch = Stopwatch::start();
                let result = call();
                (result, watch.stop())
            }
            CallTiming::WallClockOnly => {
                let wall = std::time::Instant::now();
                let result = call();
                (result, Timed { wall_ns: wall.elapsed().as_nanos() as u64, cpu_ns: 0 })
            }
        };
        result?;
        calls.push((start, timed));
    }
    let blocker_running_at_end = !blocker.is_done()?;
    Ok(Round { blocker_launch_ns, calls, blocker_running_at_end })
}

pub fn run(gpu: &Gpu, case: &Case, facts: OverheadFacts) -> anyhow::Result<CaseRecord> {
    let OverheadFacts { op, timing } = facts;
    let runtime = case.setup.api == Api::Runtime;
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let blocker = Blocker::new(gpu)?;
    let mut host = HostBuffer::new(gpu, HostKind::Pinned, COPY_BYTES)?;
    let device = DeviceBuffer::new(gpu, COPY_BYTES)?;
    // SAFETY: the buffer was just allocated; no copy touches it yet.
    unsafe { host.bytes_mut() }.copy_from_slice(&PATTERN);
    device.set_bytes(0)?;
    // The memset went to the legacy stream, which the calls' non-blocking stream is not ordered with.
    gpu.synchronize()?;
    let empty = (runtime && op == OverheadOp::LaunchEmpty).then(|| RuntimeEmpty::load(gpu)).transpose()?;

    let (src, dst, s) = (host.as_ptr(), device.ptr, stream.handle());
    let call = || -> CudaResult<()> {
        match (op, &empty) {
            (OverheadOp::MemcpyHtoDPinned4B, _) if runtime => {
                use async_lab_driver::runtime::sys::cudaMemcpyKind::cudaMemcpyHostToDevice;
                // SAFETY: `src` and `dst` are live buffers of COPY_BYTES bytes; both outlive every copy (the
                // device is synchronized before `run` returns, on errors too) and the host does not write
                // `src` meanwhile. `s` is a driver stream of the primary context the runtime uses too.
                unsafe { rtmem::rt_memcpy_async(dst, src as u64, COPY_BYTES, cudaMemcpyHostToDevice, s) }
            }
            // SAFETY: as for the runtime's copy: `src` (pinned, host) and `dst` (device) hold COPY_BYTES bytes
            // each and stay allocated, and `src` unwritten, until the device is synchronized, which `run` does
            // before they are dropped, on errors too; `s` is a live stream of the current context.
            (OverheadOp::MemcpyHtoDPinned4B, _) => unsafe {
                memory::memcpy_htod_async(dst, src as *const std::ffi::c_void, COPY_BYTES, s)
            },
            // SAFETY: the kernel `empty` takes no parameters, so an empty parameter array matches it; its
            // library is held by `rt` (in `empty`), which is dropped only after `run` synchronized the device.
            (OverheadOp::LaunchEmpty, Some(rt)) => unsafe { rt.kernel.launch(1, 1, s, &mut []) },
            (OverheadOp::LaunchEmpty, None) => gpu.launch_empty(stream.handle()),
        }
    };

    let measured = (|| -> anyhow::Result<Round> {
        gpu.bind()?;
        call().context("the untimed first call")?;
        gpu.synchronize()?;
        round(&stream, &blocker, timing, &call).context("the warm-up round")?;
        gpu.synchronize()?;
        round(&stream, &blocker, timing, &call)
    })();
    // Whatever happened, nothing may be in flight when the buffers and the library are freed.
    let settled = gpu.synchronize();
    let round = measured?;
    settled.context("synchronizing after the measured round")?;

    let (blocker_device_ns, blocker_gpu_ns) = blocker.read()?;
    if op == OverheadOp::MemcpyHtoDPinned4B {
        let mut arrived = [0u8; COPY_BYTES];
        // The device is synchronized.
        device.copy_to_host(&mut arrived)?;
        if arrived != PATTERN {
            bail!("the copies delivered {arrived:02x?}, not {PATTERN:02x?}");
        }
    }

    let us: Vec<f64> = round.calls.iter().map(|(_, t)| t.wall_ns as f64 / 1e3).collect();
    let mut sorted = us.clone();
    sorted.sort_by(f64::total_cmp);
    let mut reps: Vec<Rep> = round
        .calls
        .iter()
        .map(|&(start, t)| Rep {
            host_call_ns: t.wall_ns,
            host_cpu_ns: t.cpu_ns,
            blocker_done_at_return: None,
            op_done_at_return: None,
            blocker_device_ns: Some(blocker_device_ns),
            host_call_start_ns: start,
            host_blocker_launch_ns: Some(round.blocker_launch_ns),
            blocker_gpu_ns: Some(blocker_gpu_ns),
            ..Rep::default()
        })
        .collect();
    if let Some(first) = reps.first_mut() {
        let at = |p: f64| Some(percentile(&sorted, p).unwrap_or(f64::NAN));
        first.metrics.p10_us = at(10.0);
        first.metrics.median_us = at(50.0);
        first.metrics.p90_us = at(90.0);
        first.metrics.blocker_running_at_end = Some(round.blocker_running_at_end);
    }
    let mut record = case_record(case, None, Some(BLOCKER_NS), reps);
    record.series = Some(us);
    if !round.blocker_running_at_end {
        record.error = Some(format!(
            "the {} ms blocker had finished before the last of the {ENQUEUES} calls returned: they were not all \
             enqueued behind running work (the times are kept)",
            BLOCKER_NS / 1_000_000
        ));
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_as_times_not_as_a_verdict_on_waiting() {
        let facts = OverheadFacts { op: OverheadOp::LaunchEmpty, timing: CallTiming::Stopwatch };
        let case = Case::of(async_lab_core::catalogue::Case::driver(facts));
        let mut reps: Vec<Rep> =
            [3000, 1000, 2000, 5000, 4000].iter().map(|&ns| Rep { host_call_ns: ns, ..Rep::default() }).collect();
        reps[0].metrics.p10_us = Some(1.4);
        reps[0].metrics.median_us = Some(3.0);
        reps[0].metrics.p90_us = Some(4.6);
        let r = async_lab_core::report::result(&case_record(&case, None, Some(BLOCKER_NS), reps), None);
        assert_eq!(r.host_call_us.map(|s| s.median), Some(3.0));
        assert_eq!(r.metrics.median_us, Some(3.0));
        assert_eq!(r.class, Some(async_lab_core::classify::Class::Async));
        assert!(r.explanation.contains("median of 5 calls, p10–p90 1.40–4.60 µs"), "{}", r.explanation);
        assert!(!r.explanation.contains("puts no work"), "{}", r.explanation);
    }

    #[test]
    fn percentiles_interpolate_between_ranks() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7.0], 10.0), Some(7.0));
        let v: Vec<f64> = (1..=11).map(f64::from).collect(); // 1..=11: rank p/10
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 10.0), Some(2.0));
        assert_eq!(percentile(&v, 50.0), Some(6.0));
        assert_eq!(percentile(&v, 90.0), Some(10.0));
        assert_eq!(percentile(&v, 100.0), Some(11.0));
        // Between ranks: [1, 2, 3, 4], p10 at rank 0.3, p90 at rank 2.7.
        let w = [1.0, 2.0, 3.0, 4.0];
        assert!((percentile(&w, 10.0).unwrap() - 1.3).abs() < 1e-12);
        assert!((percentile(&w, 90.0).unwrap() - 3.7).abs() < 1e-12);
        // The median agrees with `stats::median`, even count included.
        let mut m = w.to_vec();
        assert_eq!(percentile(&w, 50.0), async_lab_core::stats::median(&mut m));
    }
}

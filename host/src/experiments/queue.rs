//! A launch into a full launch queue: one call (a kernel launch, a graph launch) made again and again behind a
//! long blocker in the same stream, until a call returns only after the blocker finished: the queue was full,
//! and that call waited for room. Shared by the launch family's queue-depth case (K5) and the graph family's
//! full-queue launch (GR3).
//!
//! Each repetition records that call (the wait), how many calls went before it (`queue_depth`), the median
//! time of a call before and after the queue filled, and the first repetition's time of every call as the
//! record's series (µs). No call waiting within `MAX_LAUNCHES` is recorded as such (`queue_depth_at_least`).

use super::method::Blocker;
use super::{case_record, Case};
use async_lab_core::metrics::Metrics;
use async_lab_core::record::{CaseRecord, Rep};
use async_lab_driver::measure::{monotonic_ns, Stopwatch};
use async_lab_driver::{CudaResult, Gpu, Stream};

/// The blocker the queue fills behind: long enough that thousands of calls are made before it ends.
pub const BLOCKER_NS: u64 = 300_000_000;
/// The most calls a repetition makes before it gives up waiting for one to wait.
pub const MAX_LAUNCHES: usize = 16_384;
/// Calls made after the one that waited, for the time of a call into a queue that stays full.
pub const AFTER: usize = 256;

/// Makes `launch` (one call that enqueues work on `stream`) behind a `BLOCKER_NS` blocker in `stream` until a
/// call returns after the blocker finished, `reps` times; one warm-up call first, so that no measured call is
/// a first one.
pub fn fill_until_a_launch_waits(
    gpu: &Gpu,
    case: &Case,
    stream: &Stream,
    reps: usize,
    launch: impl FnMut() -> CudaResult<()>,
) -> anyhow::Result<CaseRecord> {
    let blocker = Blocker::new(gpu)?;
    let record = fill(gpu, case, stream, reps, launch, &blocker);
    if record.is_err() {
        // A launch that failed mid-queue leaves the blocker and the queued work running: they must end before
        // the blocker's stamps buffer (and the caller's buffers) are freed.
        let _ = gpu.synchronize();
    }
    record
}

fn fill(
    gpu: &Gpu,
    case: &Case,
    stream: &Stream,
    reps: usize,
    mut launch: impl FnMut() -> CudaResult<()>,
    blocker: &Blocker,
) -> anyhow::Result<CaseRecord> {
    // The timed launches do not make the context current themselves (one driver call per measured span).
    gpu.bind()?;
    let mut out = Vec::new();
    let mut series = None;
    launch()?;
    gpu.synchronize()?;
    for _ in 0..reps {
        let blocker_launch = blocker.launch(stream.handle(), BLOCKER_NS)?;
        let mut times = Vec::new();
        let mut blocked: Option<(usize, u64, bool)> = None;
        let mut host_call_start_ns = 0;
        let mut cpu_ns = 0;
        while times.len() < MAX_LAUNCHES {
            let start = monotonic_ns();
            let w = Stopwatch::start();
            launch()?;
            let t = w.stop();
            times.push(t.wall_ns);
            if blocker.is_done()? {
                let op_done = stream.handle().is_idle()?;
                blocked = Some((times.len() - 1, t.wall_ns, op_done));
                host_call_start_ns = start;
                cpu_ns = t.cpu_ns;
                break;
            }
        }
        if blocked.is_some() {
            for _ in 0..AFTER {
                let w = Stopwatch::start();
                launch()?;
                times.push(w.stop().wall_ns);
            }
        }
        gpu.synchronize()?;
        let (blocker_device_ns, stamps) = blocker.read()?;
        let median = |s: &[u64]| -> f64 {
            let mut v: Vec<f64> = s.iter().map(|&x| x as f64 / 1e3).collect();
            async_lab_core::stats::median(&mut v).unwrap_or(f64::NAN)
        };
        let rep = match blocked {
            Some((depth, call_ns, op_done)) => {
                let metrics = Metrics {
                    queue_depth: Some(depth as f64),
                    launch_us_before_full: Some(median(&times[..depth])),
                    launch_us_blocked: Some(call_ns as f64 / 1e3),
                    launch_us_after_full: Some(median(&times[depth + 1..])),
                    ..Metrics::EMPTY
                };
                Rep {
                    host_call_ns: call_ns,
                    host_cpu_ns: cpu_ns,
                    blocker_done_at_return: Some(true),
                    op_done_at_return: Some(op_done),
                    blocker_device_ns: Some(blocker_device_ns),
                    host_call_start_ns,
                    host_blocker_launch_ns: Some(blocker_launch),
                    blocker_gpu_ns: Some(stamps),
                    metrics,
                    ..Rep::default()
                }
            }
            None => {
                // No launch waited: the queue holds more than we tried. Report the last launch.
                let metrics = Metrics {
                    queue_depth_at_least: Some(times.len() as f64),
                    launch_us_before_full: Some(median(&times)),
                    ..Metrics::EMPTY
                };
                Rep {
                    host_call_ns: *times.last().unwrap_or(&0),
                    blocker_done_at_return: Some(false),
                    op_done_at_return: Some(false),
                    blocker_device_ns: Some(blocker_device_ns),
                    host_blocker_launch_ns: Some(blocker_launch),
                    blocker_gpu_ns: Some(stamps),
                    metrics,
                    ..Rep::default()
                }
            }
        };
        if series.is_none() {
            series = Some(times.iter().map(|&t| t as f64 / 1e3).collect());
        }
        out.push(rep);
    }
    let mut record = case_record(case, None, Some(BLOCKER_NS), out);
    record.series = series;
    Ok(record)
}

//! The measurement protocol shared by every experiment that asks "did this call wait?".
//!
//! One repetition:
//! 1. `prepare` the operation (buffers filled, destinations poisoned) and synchronize the device, so that
//!    nothing but the blocker is in flight.
//! 2. Launch the *blocker*: one GPU thread spinning on `%globaltimer` for a known time, on the call's own
//!    stream (it is then "ahead" of the call) or on another stream. Events bracket it.
//! 3. Read the host clocks, make THE call, read the clocks again. Nothing else happens in between.
//!    With nothing ahead of the call in its stream, first wait until the GPU has reached the event recorded
//!    before the call: otherwise the query after the return may see that event's few µs of submission
//!    latency instead of the call's own work. Then the probe's `before_call` runs (nothing, for most
//!    probes; the threads family lets another thread into a slow call there), and the clocks start.
//! 4. Right after the return, ask: had the call's own work finished (a query of its stream, before anything
//!    else is enqueued)? Had the blocker finished (did the call wait for it)? Each query's start and end are
//!    timed, and the GPU's times later bound each answer (`timing`). For copies out of host memory whose
//!    work had not finished, overwrite a page of the source (the first, while the blocker ahead holds the
//!    copy back; the last, for a pageable source with nothing ahead): if the data that arrives is still the
//!    original, the driver had staged it before returning.
//! 5. Synchronize, read the device times, and verify what arrived (a wrong result is an error, never a
//!    class).
//!
//! The blocker must outlast anything the call could do on its own, or a slow call would look as if it had
//! waited. A warm-up repetition without a blocker measures the call alone (W = wall time + device time), and
//! the blocker is then `clamp(3 W, 20 ms, 2 s)`.

pub use super::buffers::Page;
use async_lab_core::metrics::Metrics;
use async_lab_core::record::Rep;
use async_lab_driver::measure::{monotonic_ns, Stopwatch};
use async_lab_driver::{CudaResult, DeviceBuffer, Event, Gpu, StreamHandle};
use std::time::Duration;

pub const MIN_BLOCKER: Duration = Duration::from_millis(20);
pub const MAX_BLOCKER: Duration = Duration::from_secs(2);

/// The call under test, with whatever it needs around it.
pub trait Probe {
    /// Gets one repetition ready (outside the timed span). The device is synchronized afterwards.
    fn prepare(&mut self, gpu: &Gpu) -> anyhow::Result<()>;
    /// THE call. Exactly one driver call, ideally.
    fn call(&mut self, gpu: &Gpu) -> CudaResult<()>;
    /// The stream the call puts work on, where it does (`None` for allocation, registration, ...).
    fn op_stream(&self) -> Option<StreamHandle<'_>>;
    /// Right after the return of a call whose own work had not finished: overwrite one page of the source if
    /// the call reads host memory and the page can tell (`Page::Head` with the blocker still running ahead of
    /// the call, so its work has not started; `Page::Tail` with nothing ahead of it, its copy in flight, where
    /// only a source the GPU cannot read itself may be touched). Returns whether it did.
    fn probe_source(&mut self, _page: Page) -> bool {
        false
    }
    /// Whether `prepare` left work in flight on purpose, work the call must meet (a kernel queued behind a
    /// wait): the protocol then does not synchronize after `prepare`. (What must start only after the blocker's
    /// launch, such as another thread's slow call, goes in `before_call`.)
    /// Asked right after `prepare`; derived from what `prepare` made.
    fn prepared_work_in_flight(&self) -> bool {
        false
    }
    /// Runs right before the clocks start for THE call: after the blocker and the event before the call are
    /// enqueued (and, with nothing ahead of the call in its stream, after the GPU reached that event), so
    /// with the blocker already running. For what must begin only once the protocol's own driver calls are
    /// made and must still be going on when THE call starts: the threads family releases another thread into
    /// a slow driver call here and returns once that thread is inside it. It may wait and make host-side
    /// calls; it must not enqueue work in the call's stream or the blocker's, nor synchronize anything (the
    /// blocker must still run, and the stream query after the return must see only the call's work). Its
    /// time is in no reading (it lies between `host_blocker_launch_ns` and `host_call_start_ns`). An error
    /// ends the repetition, with the blocker in flight. Default: nothing.
    fn before_call(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        Ok(())
    }
    /// Waits until every GPU the call touches is idle. One GPU unless the call spans two (the peer copies).
    fn settle(&self, gpu: &Gpu) -> CudaResult<()> {
        gpu.synchronize()
    }
    /// After the device is synchronized: checks the result. Returns whether the delivered data was the
    /// original (`Some(true)`) or the one with the `probed` page overwritten (`Some(false)`), else `None`.
    fn verify(&mut self, gpu: &Gpu, probed: Option<Page>) -> anyhow::Result<Option<bool>>;
}

/// The blocker kernel and the events and stamps around it.
pub struct Blocker<'g> {
    gpu: &'g Gpu,
    start: Event<'g>,
    end: Event<'g>,
    stamps: DeviceBuffer<'g>,
}

impl<'g> Blocker<'g> {
    pub fn new(gpu: &'g Gpu) -> CudaResult<Blocker<'g>> {
        Ok(Blocker { gpu, start: Event::new(gpu)?, end: Event::new(gpu)?, stamps: DeviceBuffer::new(gpu, 16)? })
    }

    /// Enqueues the blocker on `stream`; returns the host time just before.
    pub fn launch(&self, stream: StreamHandle<'_>, ns: u64) -> CudaResult<u64> {
        // The blocker's GPU must be current: `stream` may be a default-stream handle, which names the current
        // context's stream, and the events below belong to this GPU.
        self.gpu.bind()?;
        let t = monotonic_ns();
        self.start.record(stream)?;
        self.gpu.launch_spin_wait_ns(stream, ns, self.stamps.ptr)?;
        self.end.record(stream)?;
        Ok(t)
    }

    pub fn is_done(&self) -> CudaResult<bool> {
        self.end.is_done()
    }

    /// The event recorded right before the blocker.
    pub fn start_event(&self) -> &Event<'g> {
        &self.start
    }

    /// The event recorded right after the blocker, for polling from another thread.
    pub fn end_event(&self) -> &Event<'g> {
        &self.end
    }

    /// The GPU the blocker runs on.
    pub fn gpu(&self) -> &'g Gpu {
        self.gpu
    }

    /// After synchronization: the blocker's device time and its `%globaltimer` stamps.
    pub fn read(&self) -> CudaResult<(u64, [u64; 2])> {
        self.gpu.bind()?;
        let stamps = self.stamps.read_u64s(2)?;
        Ok((self.end.ns_since(&self.start)?, [stamps[0], stamps[1]]))
    }
}

/// Where the blocker goes for a repetition.
#[derive(Clone, Copy)]
pub struct BlockerPlan<'s> {
    pub stream: StreamHandle<'s>,
    /// Whether the blocker is ordered before the call (probing the source is only safe then).
    pub ahead: bool,
}

/// What the protocol puts on the GPU before the call, to see whether the call waits for it: the blocker kernel
/// (every family), or the loading family's back-to-back copies on another stream (`loading::Copies`). One
/// protocol (`run_rep`) serves both.
pub trait Background {
    /// Enqueues about `ns` of work (on `stream`, or on a stream of its own); returns the host time just before.
    fn launch(&self, stream: StreamHandle<'_>, ns: u64) -> CudaResult<u64>;
    /// Whether all of it has finished (an event query).
    fn is_done(&self) -> CudaResult<bool>;
    /// After synchronization: its device time, and its `%globaltimer` start and end where it stamps them.
    fn read(&self) -> CudaResult<(u64, Option<[u64; 2]>)>;
    /// The event recorded right before it, where the call's work may be placed against it on the GPU's
    /// timeline (`None`: no placement).
    fn start_event(&self) -> Option<&Event<'_>>;
    /// The GPU it runs on.
    fn gpu(&self) -> &Gpu;
    /// What a repetition records about it, for `ns` of work (nothing, for the blocker).
    fn metrics(&self, _ns: u64) -> Metrics {
        Metrics::EMPTY
    }
}

impl Background for Blocker<'_> {
    fn launch(&self, stream: StreamHandle<'_>, ns: u64) -> CudaResult<u64> {
        Blocker::launch(self, stream, ns)
    }
    fn is_done(&self) -> CudaResult<bool> {
        Blocker::is_done(self)
    }
    fn read(&self) -> CudaResult<(u64, Option<[u64; 2]>)> {
        Blocker::read(self).map(|(ns, stamps)| (ns, Some(stamps)))
    }
    fn start_event(&self) -> Option<&Event<'_>> {
        Some(&self.start)
    }
    fn gpu(&self) -> &Gpu {
        self.gpu
    }
}

/// Runs one repetition; `blocker_ns == 0` runs without a blocker (the warm-up). `None` when the repetition
/// cannot be used: the staging probe overwrote the source, but the blocker ahead had ended by the time the
/// overwrite was done, so the copy may have read the source before or after it (the caller repeats it).
/// `blocker` is whatever runs in the background (see `Background`); "the blocker" below means it.
pub fn run_rep(
    gpu: &Gpu,
    probe: &mut dyn Probe,
    plan: BlockerPlan,
    blocker: &dyn Background,
    blocker_ns: u64,
) -> anyhow::Result<Option<Rep>> {
    let (op_start, op_end) = (Event::new(gpu)?, Event::new(gpu)?);
    probe.prepare(gpu)?;
    if !probe.prepared_work_in_flight() {
        probe.settle(gpu)?;
    }

    let blocker_launch = if blocker_ns > 0 { Some(blocker.launch(plan.stream, blocker_ns)?) } else { None };
    // The call runs in `gpu`'s context (the blocker may have been launched on another GPU's).
    gpu.bind()?;
    if let Some(s) = probe.op_stream() {
        op_start.record(s)?;
    }
    let op_stream_clear = blocker_launch.is_none() || !plan.ahead;
    let start_pending =
        if op_stream_clear { !reach_start_event(&op_start, probe.op_stream().is_some())? } else { false };
    probe.before_call(gpu)?;

    let watch = Stopwatch::start();
    let host_call_start_ns = watch.started_at_ns();
    let result = probe.call(gpu);
    let wall_end = watch.stop_wall();

    // Signals first, errors after: reading them is what must happen right at the return (before even the
    // CPU clock, whose system call can take microseconds). The call's own
    // state comes from a stream query made before anything else is enqueued (see `StreamHandle::is_idle`),
    // the blocker's right after; each query's start and end are timed (see `timing`).
    let op_query = match (probe.op_stream(), &result) {
        (Some(s), Ok(())) => Some(timed_query(host_call_start_ns, || s.is_idle())?),
        _ => None,
    };
    let blocker_query =
        if blocker_launch.is_some() { Some(timed_query(host_call_start_ns, || blocker.is_done())?) } else { None };
    let (op_done, blocker_done) = (op_query.map(|q| q.0), blocker_query.map(|q| q.0));
    let timed = watch.finish(wall_end, monotonic_ns().saturating_sub(wall_end));
    let op_end_recorded = probe.op_stream().map(|s| op_end.record(s));
    // Which page of the source could tell whether the call had copied it away by its return: the first,
    // while the blocker ahead holds the copy back; the last, while a copy with nothing ahead is in flight.
    let page = match (blocker_launch.is_some(), plan.ahead, blocker_done, op_done) {
        (true, true, Some(false), Some(false)) => Some(Page::Head),
        (true, false, _, Some(false)) => Some(Page::Tail),
        _ => None,
    };
    let probed = page.filter(|&p| probe.probe_source(p));
    // The first page proves something only if the copy could not have started during the overwrite: the
    // blocker ahead of it must still have been running when the overwrite was done.
    let probe_held = probed != Some(Page::Head) || !blocker.is_done()?;
    result?;
    if let Some(r) = op_end_recorded {
        r?;
    }

    probe.settle(gpu)?;
    let (blocker_device_ns, blocker_gpu_ns) = match blocker_launch {
        Some(_) => {
            let (ns, stamps) = blocker.read()?;
            (Some(ns), stamps)
        }
        None => (None, None),
    };
    let op_device_ns = match probe.op_stream() {
        Some(_) => Some(op_end.ns_since(&op_start)?),
        None => None,
    };
    // Where the call's work sat on the GPU's timeline, relative to the blocker's start (for timelines). Events
    // of two GPUs have no common clock, so a blocker on another GPU gives no placement.
    let same_gpu = blocker.gpu().ordinal == gpu.ordinal;
    let op_gpu_ns_from_blocker = match (probe.op_stream(), blocker_launch, blocker.start_event()) {
        (Some(_), Some(_), Some(start)) if same_gpu => {
            Some([op_start.signed_ns_since(start)?, op_end.signed_ns_since(start)?])
        }
        _ => None,
    };
    if !probe_held {
        // The copy may have read the page half before and half after the overwrite: nothing to verify it
        // against. The next repetition's `prepare` restores the source and poisons the destination.
        return Ok(None);
    }
    let data_captured_at_return = probe.verify(gpu, probed)?;
    let mut metrics = if blocker_launch.is_some() { blocker.metrics(blocker_ns) } else { Metrics::EMPTY };
    // Each flag is written only where set, as recordings have always had it.
    metrics.start_event_pending = start_pending.then_some(true);
    metrics.probed_last_page = (probed == Some(Page::Tail)).then_some(true);
    Ok(Some(Rep {
        host_call_ns: timed.wall_ns,
        host_cpu_ns: timed.cpu_ns,
        blocker_done_at_return: blocker_done,
        op_done_at_return: op_done,
        data_captured_at_return,
        blocker_device_ns,
        op_device_ns,
        host_call_start_ns,
        host_blocker_launch_ns: blocker_launch,
        blocker_gpu_ns,
        op_gpu_ns_from_blocker,
        op_gpu_ns_from_origin: None,
        gpu_origin_ns: None,
        op_query_ns: op_query.map(|q| q.1),
        blocker_query_ns: blocker_query.map(|q| q.1),
        metrics,
    }))
}

/// A query's answer, with when it began and ended in ns after `call_start_ns`.
pub fn timed_query(call_start_ns: u64, query: impl FnOnce() -> CudaResult<bool>) -> CudaResult<(bool, [u64; 2])> {
    let q0 = monotonic_ns();
    let done = query()?;
    let q1 = monotonic_ns();
    Ok((done, [q0.saturating_sub(call_start_ns), q1.saturating_sub(call_start_ns)]))
}

/// How long to wait for the call's stream to reach the event recorded just before the call.
const START_EVENT_WAIT: Duration = Duration::from_millis(1);

/// With nothing ahead of the call in its stream, waits until the GPU has reached the event recorded just
/// before the call (a few µs of submission latency), so that the query after the return sees the call's own
/// work and not that event. Returns whether it was reached (`true` without a stream); `false` after
/// `START_EVENT_WAIT`, which the repetition notes (`start_event_pending`).
pub fn reach_start_event(start: &Event<'_>, has_stream: bool) -> CudaResult<bool> {
    if !has_stream {
        return Ok(true);
    }
    let t0 = std::time::Instant::now();
    while !start.is_done()? {
        if t0.elapsed() > START_EVENT_WAIT {
            return Ok(false);
        }
        std::hint::spin_loop();
    }
    Ok(true)
}

/// Takes repetitions from `next` until `reps` are usable, noting on each how many were discarded before it
/// (`discarded_before`); gives up at the `MAX_DISCARDED`th discard in a row.
fn collect_reps(
    reps: usize,
    blocker_ns: u64,
    mut next: impl FnMut() -> anyhow::Result<Option<Rep>>,
) -> anyhow::Result<Vec<Rep>> {
    let mut out: Vec<Rep> = Vec::with_capacity(reps);
    let mut discarded = 0;
    while out.len() < reps {
        match next()? {
            Some(mut rep) => {
                if discarded > 0 {
                    rep.metrics.discarded_before = Some(discarded as f64);
                    discarded = 0;
                }
                out.push(rep);
            }
            None => {
                discarded += 1;
                anyhow::ensure!(
                    discarded < MAX_DISCARDED,
                    "the staging probe could not be held {MAX_DISCARDED} times in a row: the {} ms blocker ended \
                     before the source's first page was overwritten",
                    blocker_ns / 1_000_000
                );
            }
        }
    }
    Ok(out)
}

/// How many repetitions a case may discard (the probe not held) before it gives up: the blocker is at least
/// 20 ms and the overwrite one page, so a discard is rare; many mean something else is wrong.
const MAX_DISCARDED: usize = 10;

/// The blocker length for a call whose warm-up took `warmup`.
pub fn blocker_ns_for(warmup: &Rep) -> u64 {
    let alone = warmup.host_call_ns + warmup.op_device_ns.unwrap_or(0);
    (3 * alone).clamp(MIN_BLOCKER.as_nanos() as u64, MAX_BLOCKER.as_nanos() as u64)
}

/// Warm-up (no blocker), then `reps` measured repetitions with a scaled blocker.
pub fn measure(
    gpu: &Gpu,
    probe: &mut dyn Probe,
    plan: BlockerPlan,
    reps: usize,
) -> anyhow::Result<(Rep, u64, Vec<Rep>)> {
    measure_with(gpu, probe, plan, reps, true)
}

/// Like `measure`; with `use_blocker == false` the repetitions run without one (blocker length 0).
pub fn measure_with(
    gpu: &Gpu,
    probe: &mut dyn Probe,
    plan: BlockerPlan,
    reps: usize,
    use_blocker: bool,
) -> anyhow::Result<(Rep, u64, Vec<Rep>)> {
    let blocker = Blocker::new(gpu)?;
    measure_using(gpu, probe, plan, &blocker, reps, use_blocker)
}

/// Like `measure_with`, with a blocker made by the caller (on another GPU, for the peer copies; `plan.stream`
/// must then be a stream of the blocker's GPU).
pub fn measure_using(
    gpu: &Gpu,
    probe: &mut dyn Probe,
    plan: BlockerPlan,
    blocker: &Blocker,
    reps: usize,
    use_blocker: bool,
) -> anyhow::Result<(Rep, u64, Vec<Rep>)> {
    let warmup = run_rep(gpu, probe, plan, blocker, 0)?.expect("a repetition without a blocker never probes");
    let blocker_ns = if use_blocker { blocker_ns_for(&warmup) } else { 0 };
    let out = collect_reps(reps, blocker_ns, || run_rep(gpu, probe, plan, blocker, blocker_ns))?;
    Ok((warmup, blocker_ns, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repetition_whose_probe_was_not_held_is_repeated_and_counted() {
        let mut script = vec![None, Some(1), None, None, Some(2), Some(3)].into_iter();
        let got = collect_reps(3, 20_000_000, || {
            Ok(script.next().unwrap().map(|n| Rep { host_call_ns: n, ..Rep::default() }))
        })
        .unwrap();
        assert_eq!(got.iter().map(|r| r.host_call_ns).collect::<Vec<_>>(), vec![1, 2, 3]);
        let discarded: Vec<Option<f64>> = got.iter().map(|r| r.metrics.discarded_before).collect();
        assert_eq!(discarded, vec![Some(1.0), Some(2.0), None]);
        let err = collect_reps(1, 20_000_000, || Ok(None)).unwrap_err().to_string();
        assert!(err.contains("could not be held") && err.contains("20 ms"), "{err}");
    }

    #[test]
    fn blocker_scales_with_the_call_and_is_bounded() {
        let rep = |call_ms: u64, dev_ms: u64| Rep {
            host_call_ns: call_ms * 1_000_000,
            op_device_ns: Some(dev_ms * 1_000_000),
            ..Rep::default()
        };
        assert_eq!(blocker_ns_for(&rep(0, 0)), 20_000_000);
        assert_eq!(blocker_ns_for(&rep(10, 5)), 45_000_000);
        assert_eq!(blocker_ns_for(&rep(5000, 0)), 2_000_000_000);
    }
}

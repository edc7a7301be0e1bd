//! The seed question's program, step by step: a 10 MB host → device copy, a 1e6-cycle kernel on 128×128
//! threads, the copy back, and a host callback, all on one non-blocking stream, with pageable and with pinned
//! host memory. For each call: its time, whether the work ahead of it had finished when it returned, and
//! whether its own work had; after the last call, whether the callback had run (the question's "has the
//! stream concluded?"), and after synchronizing.
//!
//! Whether a call waited for the work ahead of it is read off the GPU's timeline: the events between the
//! steps give the time each step's work ended on the GPU's clock, the host/GPU clock offset (see `clock.rs`)
//! puts that on the host's clock, and that is compared with the call's start and return. (Querying the event
//! right after the call cannot tell: an event recorded just after a blocking call is itself still pending for
//! a few microseconds.) Whether its own work was done comes from a query of the stream right at the return.
//!
//! The kernel comes from a module loaded just before, so its launch is a first launch: under lazy loading
//! (the default on Linux since CUDA 12.2) that is when the kernel is loaded.

use super::Case;
use crate::classify::Class::*;
use crate::driver::{sys, DeviceBuffer, Event, Gpu, HostBuffer, HostKind, Stream, StreamKind};
use crate::drv;
use crate::measure::{monotonic_ns, Stopwatch, Timed};
use crate::pattern;
use crate::record::{BlockerPlacement, CaseRecord, CaseSetup, Family, Rep};
use crate::rules::Expected;
use anyhow::ensure;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

/// The seed program's sizes.
pub const BUFFER_BYTES: usize = 10_000_000;
pub const KERNEL_CYCLES: u64 = 1_000_000;
/// How much later than the work it follows an event may complete: allowed for when comparing times.
const EVENT_SLACK_NS: i64 = 2_000;
const GRID: u32 = 128;
const BLOCK: u32 = 128;

const STEPS: [(&str, &str); 4] = [
    ("1-htod", "cuMemcpyHtoDAsync"),
    ("2-launch", "cuLaunchKernel"),
    ("3-dtoh", "cuMemcpyDtoHAsync"),
    ("4-callback", "cuLaunchHostFunc"),
];

pub fn cases() -> Vec<Case> {
    [HostKind::Pageable, HostKind::Pinned].into_iter().map(group_case).collect()
}

/// The case that runs a whole sequence (its records carry the per-step setups).
fn group_case(kind: HostKind) -> Case {
    let mut setup = step_setup(kind, 0);
    setup.id = format!("seed/{}", kind.slug());
    Case { setup, op: super::Op::Seed(kind) }
}

fn step_setup(kind: HostKind, step: usize) -> CaseSetup {
    let pageable = kind == HostKind::Pageable;
    let (rule, expected) = match step {
        0 if pageable => ("A2", Expected::classes(&[Async, Staged])),
        1 => ("K4", Expected::classes(&[Async, WaitedThenStaged])),
        2 if pageable => ("A2", Expected::classes(&[Blocking])),
        3 => ("CB1", Expected::classes(&[Async])),
        _ => ("A1", Expected::classes(&[Async])),
    };
    let what = match step {
        0 => format!("the seed's first call: copy 10 MB of {} host memory to the device", kind.slug()),
        1 => "the seed's kernel (1e6 cycles on 128×128 threads), first launch of a module loaded just before; the work ahead is the copy".into(),
        2 => format!("copy the 10 MB back into the {} host buffer; the work ahead is the kernel", kind.slug()),
        _ => "enqueue the callback that sets the \"stream concluded\" flag; the work ahead is the copy back".into(),
    };
    CaseSetup {
        id: format!("seed/{}/{}", kind.slug(), STEPS[step].0),
        family: Family::Seed,
        call: STEPS[step].1.into(),
        rule: rule.into(),
        expected,
        stream: Some(StreamKind::NonBlocking),
        blocker: if step == 0 { BlockerPlacement::None } else { BlockerPlacement::Same },
        blocker_stream: (step > 0).then_some(StreamKind::NonBlocking),
        blocker_ahead: step > 0,
        host_memory: (step != 1 && step != 3).then_some(kind),
        bytes: if step == 0 || step == 2 { BUFFER_BYTES as u64 } else { 0 },
        what,
        peer: None,
    }
}

unsafe extern "C" fn set_flag(user: *mut c_void) {
    // SAFETY: `user` points at the AtomicBool in `run`, alive until after the stream is synchronized.
    unsafe { &*(user as *const AtomicBool) }.store(true, Ordering::SeqCst);
}

/// Runs the sequence `reps` times (plus a warm-up) and returns one record per step.
pub fn run(gpu: &Gpu, kind: HostKind, reps: usize) -> anyhow::Result<Vec<CaseRecord>> {
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let mut host = HostBuffer::new(gpu, kind, BUFFER_BYTES)?;
    let device = DeviceBuffer::new(gpu, BUFFER_BYTES)?;
    let out = DeviceBuffer::new(gpu, (GRID * BLOCK) as usize * 8)?;
    let mut reference = vec![0u8; BUFFER_BYTES];
    pattern::fill(&mut reference, 0, 0x5EED);
    let events: Vec<Event> = (0..5).map(|_| Event::new(gpu)).collect::<Result<_, _>>()?;
    let flag = Box::new(AtomicBool::new(false));
    let origin = DeviceBuffer::new(gpu, 8)?;
    let clock = crate::clock::calibrate(gpu, 50)?;
    let mut records: Vec<CaseRecord> = (0..4)
        .map(|s| CaseRecord {
            setup: step_setup(kind, s),
            blocker_ns: None,
            warmup: None,
            reps: vec![],
            series: None,
            error: None,
            skipped: None,
        })
        .collect();

    for rep in 0..=reps {
        // SAFETY: the device is idle between repetitions (synchronized at the end of the last one).
        unsafe { host.bytes_mut() }.copy_from_slice(&reference);
        // SAFETY: `device` holds BUFFER_BYTES bytes.
        unsafe { drv!(cuMemsetD8_v2(device.ptr, 0, BUFFER_BYTES))? };
        flag.store(false, Ordering::SeqCst);
        let module = gpu.load_fresh_module()?;
        let dummy = module.get_function("spin_sleep")?.to_raw();
        gpu.synchronize()?;
        let s = stream.raw();
        let mut timed = [Timed::default(); 4];
        let mut starts = [0u64; 4];
        let mut own_done = [None; 4];

        // The GPU's clock at the sequence's start, for timelines: the stamp kernel runs at once (the stream is
        // idle) and the first event completes right after it.
        gpu.launch_write_globaltimer(stream.handle(), origin.ptr)?;
        events[0].record(stream.handle())?;
        for step in 0..4 {
            starts[step] = monotonic_ns();
            let w = Stopwatch::start();
            // SAFETY: the buffers are live and `BUFFER_BYTES` long; they are not touched by the host until the
            // stream is synchronized below. spin_sleep takes (u64 cycles, *mut u64 out) and `out` holds one u64
            // per thread. `set_flag` only stores into `flag`, which outlives the synchronization.
            let rc = unsafe {
                match step {
                    0 => sys::cuMemcpyHtoDAsync_v2(device.ptr, host.as_ptr().cast(), BUFFER_BYTES, s),
                    1 => {
                        let (mut cycles, mut out_ptr) = (KERNEL_CYCLES, out.ptr);
                        let mut params =
                            [(&mut cycles as *mut u64).cast::<c_void>(), (&mut out_ptr as *mut u64).cast::<c_void>()];
                        sys::cuLaunchKernel(
                            dummy,
                            GRID,
                            1,
                            1,
                            BLOCK,
                            1,
                            1,
                            0,
                            s,
                            params.as_mut_ptr(),
                            std::ptr::null_mut(),
                        )
                    }
                    2 => sys::cuMemcpyDtoHAsync_v2(host.as_ptr().cast(), device.ptr, BUFFER_BYTES, s),
                    _ => sys::cuLaunchHostFunc(s, Some(set_flag), (&*flag as *const AtomicBool) as *mut c_void),
                }
            };
            timed[step] = w.stop();
            own_done[step] = if rc == sys::CUDA_SUCCESS { Some(stream.handle().is_idle()?) } else { None };
            events[step + 1].record(stream.handle())?;
            crate::driver::check(rc, STEPS[step].1)?;
        }
        let concluded_after_enqueue = flag.load(Ordering::SeqCst);
        stream.synchronize()?;
        let concluded_after_sync = flag.load(Ordering::SeqCst);
        // SAFETY: the stream is synchronized: the copy back has finished.
        let arrived = unsafe { host.bytes_mut() };
        ensure!(arrived == reference.as_slice(), "the seed's round trip delivered wrong bytes");
        drop(module);
        if rep == 0 {
            continue; // warm-up: buffers touched, streams and staging buffers created
        }
        let mut gpu_origin_ns = 0u64;
        // SAFETY: 8 bytes into a u64; the stream is synchronized.
        unsafe { drv!(cuMemcpyDtoH_v2((&mut gpu_origin_ns as *mut u64).cast(), origin.ptr, 8))? };
        let origin_host = clock.to_host(gpu_origin_ns);
        for step in 0..4 {
            // When the work ahead ended, on the host's clock: did it end during the call (the call waited for
            // it), after it (the call did not), or before the call even started (nothing to wait for)?
            let prior_done = if step == 0 {
                None
            } else {
                let prior_end = origin_host + events[step].signed_ns_since(&events[0])?;
                let (start, end) = (starts[step] as i64, (starts[step] + timed[step].wall_ns) as i64);
                let margin = clock.uncertainty_ns as i64 + EVENT_SLACK_NS;
                (prior_end > start + margin).then_some(prior_end <= end + margin)
            };
            let mut r = Rep {
                host_call_ns: timed[step].wall_ns,
                host_cpu_ns: timed[step].cpu_ns,
                blocker_done_at_return: prior_done,
                op_done_at_return: own_done[step],
                op_device_ns: Some(events[step + 1].ns_since(&events[step])?),
                op_gpu_ns_from_origin: Some([
                    events[step].signed_ns_since(&events[0])?,
                    events[step + 1].signed_ns_since(&events[0])?,
                ]),
                gpu_origin_ns: Some(gpu_origin_ns),
                host_call_start_ns: starts[step],
                ..Rep::default()
            };
            if step == 3 {
                r.metrics.insert("concluded_after_enqueue".into(), concluded_after_enqueue as u8 as f64);
                r.metrics.insert("concluded_after_sync".into(), concluded_after_sync as u8 as f64);
            }
            records[step].reps.push(r);
        }
    }
    Ok(records)
}

//! Synthetic traces, one per cause the tracer names, built line by line as the injection library writes
//! them: the GPU-free tests run them through the classifier and the CLI.
//!
//! Times are CUPTI-like ns from an arbitrary origin; one stream (13) for the program's work, another (14)
//! for a second stream, thread 100 for the main thread and 200 for a second one.

use async_lab_core::trace::format::cupti_kinds::{copy, memory};
use async_lab_core::trace::format::{header, Domain, Line, OverheadKind, Resource};

/// The origin of the synthetic clock.
pub const T0: u64 = 1_000_000_000_000;
pub const US: u64 = 1_000;
pub const MS: u64 = 1_000_000;
/// 2 GiB.
pub const GIB2: u64 = 2 << 30;

/// A runtime call on thread 100.
pub fn call(name: &str, corr: u32, start: u64, end: u64) -> Line {
    call_on(100, name, corr, start, end)
}

/// A runtime call on thread `tid`.
pub fn call_on(tid: u64, name: &str, corr: u32, start: u64, end: u64) -> Line {
    Line::Api { domain: Domain::Runtime, name: name.into(), cbid: 0, tid, corr, start: T0 + start, end: T0 + end }
}

/// A driver call on thread 100 (inside a runtime call when its times are).
pub fn driver_call(name: &str, corr: u32, start: u64, end: u64) -> Line {
    Line::Api { domain: Domain::Driver, name: name.into(), cbid: 0, tid: 100, corr, start: T0 + start, end: T0 + end }
}

/// A host → device copy from pinned (`memory::PINNED`) or pageable (`memory::PAGEABLE`) memory.
pub fn htod(src_kind: u8, bytes: u64, stream: u32, corr: u32, start: u64, end: u64) -> Line {
    Line::Memcpy {
        copy_kind: copy::HTOD,
        src_kind,
        dst_kind: memory::DEVICE,
        bytes,
        start: T0 + start,
        end: T0 + end,
        stream,
        corr,
    }
}

/// A kernel.
pub fn kernel(name: &str, stream: u32, corr: u32, start: u64, end: u64) -> Line {
    Line::Kernel { name: name.into(), start: T0 + start, end: T0 + end, stream, corr }
}

/// A module loaded on thread 100.
pub fn module_loaded(t: u64) -> Line {
    Line::Resource { event: Resource::ModuleLoaded, t: T0 + t, tid: 100 }
}

/// A whole trace's text: a header, the lines, an end line.
pub fn trace(lines: Vec<Line>) -> String {
    let mut all = vec![header(4242, vec!["synthetic".into()], Some(130001))];
    all.extend(lines);
    all.push(Line::End { t: T0 + 10_000 * MS });
    all.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect()
}

/// The seed's program, pinned, under lazy loading: the first launch waits for the 2 GiB copy ahead of it
/// (38 ms), while the kernel's module loads.
pub fn lazy_launch_waits_for_the_copy() -> String {
    trace(vec![
        call("cudaMemcpyAsync", 10, 0, 15 * US),
        htod(memory::PINNED, GIB2, 13, 10, 10 * US, 38 * MS),
        call("cudaLaunchKernel", 11, 20 * US, 38 * MS + 140 * US),
        driver_call("cuLibraryLoadData", 12, 30 * US, 110 * US),
        module_loaded(38 * MS + 41 * US),
        kernel("sleep_cycles", 13, 11, 38 * MS + 150 * US, 39 * MS),
    ])
}

/// The same launch under eager loading: it returns at once.
pub fn eager_launch_returns() -> String {
    trace(vec![
        call("cudaMemcpyAsync", 10, 0, 15 * US),
        htod(memory::PINNED, GIB2, 13, 10, 10 * US, 38 * MS),
        call("cudaLaunchKernel", 11, 20 * US, 24 * US),
        kernel("sleep_cycles", 13, 11, 38 * MS + 10 * US, 39 * MS),
    ])
}

/// A pageable 2 GiB copy: the thread stages the data and is held for the whole transfer.
pub fn pageable_copy_staged() -> String {
    trace(vec![
        call("cudaMemcpyAsync", 10, 0, 320 * MS),
        htod(memory::PAGEABLE, GIB2, 13, 10, 3 * MS, 320 * MS + 2 * US),
    ])
}

/// A copy from pageable memory into a stream whose earlier kernel runs 20 ms: the copy waits for it, then
/// returns before its own transfer ends.
pub fn copy_waits_for_its_stream() -> String {
    trace(trace_lines_copy_waits_for_its_stream())
}

/// The lines of [`copy_waits_for_its_stream`].
pub fn trace_lines_copy_waits_for_its_stream() -> Vec<Line> {
    vec![
        call("cudaLaunchKernel", 10, 0, 5 * US),
        kernel("spin", 13, 10, 10 * US, 20 * MS),
        call("cudaMemcpyAsync", 11, 10 * US, 20 * MS + 30 * US),
        htod(memory::PAGEABLE, 64 << 20, 13, 11, 20 * MS + 5 * US, 23 * MS),
    ]
}

/// A free while a kernel runs on another stream: the free waits for it (the device drained).
pub fn free_drains_the_device() -> String {
    trace(vec![
        call("cudaLaunchKernel", 10, 0, 5 * US),
        kernel("spin", 14, 10, 10 * US, 20 * MS),
        call("cudaFree", 11, 10 * US, 20 * MS + 20 * US),
    ])
}

/// A launch on thread 100 made while thread 200 is inside a 133 ms `cudaMallocHost`: it returns when that
/// call does.
pub fn launch_waits_for_another_thread() -> String {
    trace(vec![
        call_on(200, "cudaMallocHost", 10, 0, 133 * MS),
        call("cudaLaunchKernel", 11, 50 * US, 133 * MS + 10 * US),
        kernel("empty", 13, 11, 133 * MS + 20 * US, 133 * MS + 23 * US),
    ])
}

/// An asynchronous launch behind a long kernel in its stream: it returns at once.
pub fn launch_is_async() -> String {
    trace(vec![
        call("cudaLaunchKernel", 10, 0, 5 * US),
        kernel("spin", 13, 10, 10 * US, 20 * MS),
        call("cudaLaunchKernel", 11, 10 * US, 14 * US),
        kernel("spin", 13, 11, 20 * MS, 40 * MS),
    ])
}

/// An event recorded after a 100 ms kernel in stream 13, then waited for: CUPTI's record of the wait names
/// the event, not the stream; the event's record names the stream. A second kernel runs on stream 14 and
/// ends earlier. With `event_records` false the trace has no event records (a CUPTI before CUDA 12.8).
pub fn event_wait(event_records: bool) -> String {
    let mut lines = vec![
        call("cudaLaunchKernel", 10, 0, 5 * US),
        kernel("spin", 13, 10, 10 * US, 100 * MS),
        call("cudaLaunchKernel", 11, 6 * US, 9 * US),
        kernel("short", 14, 11, 20 * US, 50 * MS),
        call("cudaEventRecord", 12, 10 * US, 12 * US),
        call("cudaEventSynchronize", 13, 15 * US, 100 * MS + 20 * US),
        Line::Sync {
            sync_type: 1,
            start: T0 + 15 * US,
            end: T0 + 100 * MS + 20 * US,
            stream: None,
            corr: 13,
            event: Some(7),
        },
    ];
    if event_records {
        // The same event recorded once before in stream 14, then in stream 13 just before the wait.
        lines.insert(0, Line::Event { event: 7, stream: 14, corr: 2 });
        lines.push(Line::Event { event: 7, stream: 13, corr: 12 });
    }
    trace(lines)
}

/// Thread 200 synchronizes stream 14, where a 50 ms kernel runs; meanwhile thread 100's first launch loads its
/// module lazily, which waits for the device: both wait for the kernel, and the launch is released 1.4 ms
/// after it ends (its module-loaded event), 80 µs after the other thread's synchronize returned.
pub fn lazy_load_beside_another_threads_wait() -> String {
    trace(vec![
        call_on(200, "cudaLaunchKernel", 10, 0, 5 * US),
        kernel("spin", 14, 10, 10 * US, 50 * MS),
        call_on(200, "cudaStreamSynchronize", 11, MS, 50 * MS + 40 * US),
        Line::Sync {
            sync_type: 3,
            start: T0 + MS,
            end: T0 + 50 * MS + 40 * US,
            stream: Some(14),
            corr: 11,
            event: None,
        },
        call("cudaLaunchKernel", 12, 2 * MS, 51 * MS + 500 * US),
        driver_call("cuLibraryLoadData", 13, 2 * MS + 10 * US, 51 * MS + 450 * US),
        module_loaded(51 * MS + 400 * US),
        kernel("first", 13, 12, 51 * MS + 520 * US, 51 * MS + 530 * US),
    ])
}

/// CUPTI's overhead record of `kind` for the call `corr` (format 4).
pub fn overhead(kind: OverheadKind, corr: u32, start: u64, end: u64) -> Line {
    Line::Overhead { kind, start: T0 + start, end: T0 + end, corr: Some(corr), stream: None, queue_length: None }
}

/// A first launch under lazy loading behind a 33.2 ms kernel (`spin`, correlation 10) in its own stream
/// (13), or with `other_stream` in stream 14, as on the H200: the launch was held 44.5 ms, the kernel ran
/// 33.2 ms of it, then the load took 11.1 ms. Nothing on the thread shows when the load began, but with
/// `record`, CUPTI's overhead record of the lazy load (`LAZY_FUNCTION_LOADING`, 40 µs after the kernel
/// ended).
pub fn lazy_load_after_drain(other_stream: bool, record: bool) -> String {
    let mut lines = vec![
        call("cudaLaunchKernel", 10, 0, 5 * US),
        kernel("spin", if other_stream { 14 } else { 13 }, 10, 10 * US, 33_210 * US),
        call("cudaLaunchKernel", 11, 20 * US, 44_500 * US),
        driver_call("cuLaunchKernel", 11, 25 * US, 44_490 * US),
        module_loaded(44_400 * US),
        kernel("first", 13, 11, 44_520 * US, 44_530 * US),
    ];
    if record {
        lines.push(overhead(OverheadKind::LazyFunctionLoading, 11, 33_250 * US, 44_380 * US));
    }
    trace(lines)
}

/// A PyTorch program's first reduction (`g.sum()`) behind a 50 ms `torch.cuda._sleep`, as the H200 traced it
/// (driver 580, torch 2.11): the first `_sleep` launch (corr 10) loaded its module lazily with nothing ahead,
/// 3.1 ms. Then, on the same stream (7), the sleep kernel (corr 20) runs from 10 ms to 48.4 ms, and the
/// reduction's launch (corr 30, thread 100) begins at 10 ms and is held 46.5 ms: the kernel ends 38.4 ms in,
/// CUPTI's `LAZY_FUNCTION_LOADING` record (with a module-loaded event 10 µs before it, where `event`) is at
/// 43.2–43.3 ms, the call returns at 46.5 ms. With `other_thread`, thread 200 put the kernel on its own stream
/// (14) and the launch is held 35.1 ms: the kernel ends 30.9 ms in, the record is at 34.3 ms.
pub fn lazy_load_behind_work(other_thread: bool, event: bool) -> String {
    let spin = "_ZN2at4cuda12_GLOBAL__N_111spin_kernelEl";
    let (held, ends, record) = if other_thread { (35_100, 30_900, 34_300) } else { (46_500, 38_400, 43_200) };
    let begin = 10 * MS;
    let mut lines = vec![
        // The `_sleep` kernel's own first launch: its module loaded lazily, nothing ahead.
        call("cudaLaunchKernel", 10, 0, 3_100 * US),
        driver_call("cuLaunchKernel", 10, 5 * US, 3_090 * US),
        module_loaded(3_000 * US),
        overhead(OverheadKind::LazyFunctionLoading, 10, 3_010 * US, 3_060 * US),
        kernel(spin, 7, 10, 3_110 * US, 3_120 * US),
    ];
    let (tid, stream) = if other_thread { (200, 14) } else { (100, 7) };
    lines.push(call_on(tid, "cudaLaunchKernel", 20, begin - 30 * US, begin - 20 * US));
    lines.push(kernel(spin, stream, 20, begin - 10 * US, begin + ends * US));
    lines.push(call("cudaLaunchKernel", 30, begin, begin + held * US));
    lines.push(driver_call("cuLaunchKernel", 30, begin + 5 * US, begin + (held - 10) * US));
    if event {
        lines.push(module_loaded(begin + (record - 10) * US));
    }
    lines.push(overhead(OverheadKind::LazyFunctionLoading, 30, begin + record * US, begin + (record + 100) * US));
    lines.push(kernel(
        "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7SumOpsIffEEjfLi4ELi4EEEEEvT1_",
        7,
        30,
        begin + (held + 20) * US,
        begin + (held + 30) * US,
    ));
    trace(lines)
}

/// A launch into a stream whose launch queue is full: 3 ms after it began, the kernel ahead (correlation 10)
/// ended and made room; the launch returned 40 µs later. With `record`, CUPTI's overhead record
/// `COMMAND_BUFFER_FULL` covers the wait; without it the trace shows no full queue (its earlier launches are
/// not in it).
pub fn launch_into_a_full_queue(record: bool) -> String {
    let mut lines = vec![
        call("cudaLaunchKernel", 10, 0, 5 * US),
        kernel("spin", 13, 10, 10 * US, 3_020 * US),
        call("cudaLaunchKernel", 11, 20 * US, 3_060 * US),
        kernel("next", 13, 11, 3_030 * US, 3_040 * US),
    ];
    if record {
        lines.push(Line::Overhead {
            kind: OverheadKind::CommandBufferFull,
            start: T0 + 30 * US,
            end: T0 + 3_030 * US,
            corr: Some(11),
            stream: Some(13),
            queue_length: Some(1024),
        });
    }
    trace(lines)
}

/// A program killed 0.3 s after its last call: six 250 ms device → host copies into pageable memory, each
/// held for its whole transfer, each followed by a synchronize; with `records`, the copies' GPU records were
/// handed back before the kill; without, none was (CUPTI still held them). No `end` line: the section was cut
/// short.
pub fn killed_after_held_copies(records: bool) -> String {
    let mut lines = vec![header(4242, vec!["killed".into()], Some(130001))];
    for k in 0..6u64 {
        let t = k * 300 * MS;
        let corr = 10 + 2 * k as u32;
        lines.push(call("cudaMemcpyAsync", corr, t, t + 250 * MS));
        if records {
            lines.push(Line::Memcpy {
                copy_kind: copy::DTOH,
                src_kind: memory::DEVICE,
                dst_kind: memory::PAGEABLE,
                bytes: 1 << 30,
                start: T0 + t + 20 * US,
                end: T0 + t + 250 * MS - 10 * US,
                stream: 7,
                corr,
            });
        }
        lines.push(call("cudaStreamSynchronize", corr + 1, t + 250 * MS + 5 * US, t + 250 * MS + 9 * US));
    }
    lines.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect()
}

/// `reference/frameworks/killed.py` as its trace would read: six times a 250 ms GPU sleep
/// (`spin_kernel`) on stream 7, then a 4 MiB device → pageable copy held until the sleep ended, and its
/// stream synchronized; killed 0.3 s after the last (no `end` line). CUPTI handed back every record that
/// ended before `handed_back_until` (ms after the first call; none later: the program was killed first).
pub fn killed_program(handed_back_until: u64) -> String {
    let mut lines = vec![header(4242, vec!["python3".into(), "killed.py".into()], Some(130001))];
    let kept = |end: u64| end < handed_back_until * MS;
    for k in 0..6u64 {
        let t = 100 * MS + k * 260 * MS;
        let (sleep, copy) = (100 + 3 * k as u32, 101 + 3 * k as u32);
        lines.push(call("cudaLaunchKernel", sleep, t, t + 6 * US));
        lines.push(driver_call("cuLaunchKernel", sleep, t + US, t + 5 * US));
        if kept(t + 250 * MS) {
            lines.push(kernel("_ZN2at4cuda12_GLOBAL__N_111spin_kernelEl", 7, sleep, t + 10 * US, t + 250 * MS));
        }
        lines.push(call("cudaMemcpyAsync", copy, t + 20 * US, t + 250 * MS + 700 * US));
        lines.push(driver_call("cuMemcpyDtoHAsync_v2", copy, t + 25 * US, t + 250 * MS + 690 * US));
        if kept(t + 250 * MS + 600 * US) {
            lines.push(Line::Memcpy {
                copy_kind: copy::DTOH,
                src_kind: memory::DEVICE,
                dst_kind: memory::PAGEABLE,
                bytes: 4 << 20,
                start: T0 + t + 250 * MS + 5 * US,
                end: T0 + t + 250 * MS + 600 * US,
                stream: 7,
                corr: copy,
            });
        }
        lines.push(call("cudaStreamSynchronize", copy + 1, t + 250 * MS + 710 * US, t + 250 * MS + 715 * US));
    }
    lines.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect()
}

/// `reference/frameworks/torch_profiler.py` traced with a CUPTI that takes several subscribers: the tracer
/// subscribed as one of several, the profiler (libkineto in libtorch_cpu.so) subscribed beside it 2 s in,
/// CUPTI took it (`accepted`), and the tracer went on recording the 20 profiled kernels; without
/// `several`, CUPTI refused the profiler (one subscriber).
pub fn profiler_beside_the_tracer(several: bool) -> String {
    let mut lines = vec![
        header(4242, vec!["python3".into(), "torch_profiler.py".into()], Some(if several { 130500 } else { 130001 })),
        Line::Setup {
            clock: async_lab_core::trace::format::ClockPair { cupti_ns: T0, monotonic_ns: 0 },
            api_calls: async_lab_core::trace::format::ApiCalls::MayHold,
            locate_over_ns: 1_000_000,
            python: None,
            several_subscribers: Some(several),
        },
        Line::Conflict {
            t: T0 + 2_000 * MS,
            tid: 100,
            library: "/v/site-packages/torch/lib/libtorch_cpu.so".into(),
            call: "cuptiSubscribe".into(),
            yielded: false,
            accepted: Some(several),
        },
    ];
    for k in 0..20u64 {
        let t = 2_100 * MS + k * 20 * US;
        lines.push(call("cudaLaunchKernel", 200 + k as u32, t, t + 8 * US));
        lines.push(kernel("mul", 7, 200 + k as u32, t + 10 * US, t + 12 * US));
    }
    lines.push(Line::End { t: T0 + 3_000 * MS });
    lines.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect()
}

/// Every synthetic trace, by name.
pub fn all() -> Vec<(&'static str, String)> {
    vec![
        ("lazy-launch-waits-for-the-copy", lazy_launch_waits_for_the_copy()),
        ("eager-launch-returns", eager_launch_returns()),
        ("pageable-copy-staged", pageable_copy_staged()),
        ("copy-waits-for-its-stream", copy_waits_for_its_stream()),
        ("free-drains-the-device", free_drains_the_device()),
        ("launch-waits-for-another-thread", launch_waits_for_another_thread()),
        ("launch-is-async", launch_is_async()),
        ("event-wait", event_wait(true)),
        ("lazy-load-beside-another-threads-wait", lazy_load_beside_another_threads_wait()),
        ("lazy-load-after-drain-its-stream", lazy_load_after_drain(false, true)),
        ("lazy-load-after-drain-other-stream", lazy_load_after_drain(true, true)),
        ("launch-into-a-full-queue", launch_into_a_full_queue(true)),
        ("killed-after-held-copies", killed_after_held_copies(false)),
    ]
}

/// Where the C++ reference's clock (`CLOCK_MONOTONIC`) stands when the synthetic trace's clock reads `T0`: the
/// two differ by `T0 - REFERENCE_ORIGIN`, which the matching has to find.
pub const REFERENCE_ORIGIN: u64 = 7_300_000_000_000;

/// How one repetition of a synthetic reference case looks in the trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RepShape {
    /// A blocker kernel in the call's stream (launched just before), the call held until it ends, then its
    /// copy (from pageable memory where the case's id says so, else pinned): the tracer says
    /// `waited-for-stream`.
    WaitsForTheBlocker,
    /// The same blocker, the call returns at once, its pageable copy runs after the blocker: `async`.
    ReturnsAtOnce,
    /// The blocker's launch 8 µs before the timed launch of the same name, which returns at once: `async`.
    LaunchBehindTheBlockersLaunch,
    /// The call alone, no GPU work: `async`.
    Alone,
    /// Nothing in the trace.
    Untraced,
}

/// One case of the synthetic reference run: what the reference wrote, how the trace shows it, and how the
/// two classes stand (`None`: the case is left out, its `error` set).
pub struct RefCaseSpec {
    pub id: &'static str,
    pub call: &'static str,
    pub class: Option<&'static str>,
    pub blocker_ahead: bool,
    pub shape: RepShape,
    pub expect: Option<async_lab_core::trace::against_reference::Verdict>,
}

/// The cases of [`reference_run`], one for each way a traced case can stand to the reference's.
pub fn reference_cases() -> Vec<RefCaseSpec> {
    use async_lab_core::trace::against_reference::{Reason, Verdict};
    let case =
        |id, call, class, blocker_ahead, shape, expect| RefCaseSpec { id, call, class, blocker_ahead, shape, expect };
    vec![
        case(
            "copy/async/htod/pageable/nonblocking/same/1MiB",
            "cudaMemcpyAsync",
            Some("waited-then-staged"),
            true,
            RepShape::WaitsForTheBlocker,
            Some(Verdict::Equal),
        ),
        case(
            "copy/async/htod/pageable/nonblocking/same/64MiB",
            "cudaMemcpyAsync",
            Some("staged"),
            true,
            RepShape::ReturnsAtOnce,
            Some(Verdict::Compatible(Reason::NoStagingProbe)),
        ),
        case(
            "copy/sync/htod/pinned/legacy/same/64MiB",
            "cudaMemcpy",
            Some("blocking"),
            true,
            RepShape::WaitsForTheBlocker,
            Some(Verdict::Compatible(Reason::BlockerAhead)),
        ),
        case(
            "launch/warm/nonblocking/same",
            "cudaLaunchKernel",
            Some("async"),
            true,
            RepShape::LaunchBehindTheBlockersLaunch,
            Some(Verdict::Equal),
        ),
        case(
            "alloc/mem-alloc/nonblocking",
            "cudaMalloc",
            Some("device-sync"),
            false,
            RepShape::Alone,
            Some(Verdict::Disagrees),
        ),
        case(
            "alloc/free-host/legacy",
            "cudaFreeHost",
            Some("async"),
            false,
            RepShape::Untraced,
            Some(Verdict::NotFound),
        ),
        case("alloc/host-register/legacy", "cudaHostRegister", None, false, RepShape::Alone, None),
    ]
}

/// A synthetic traced run of the C++ reference (`reference/async_ref.cu`): the trace, the JSON the reference
/// wrote (on its own clock, [`REFERENCE_ORIGIN`]), and the correlation id of each repetition's timed call
/// ((case, repetition) → corr; none for the untraced).
pub struct ReferenceRun {
    pub trace: String,
    pub json: String,
    pub timed: Vec<((usize, usize), u32)>,
}

/// [`reference_cases`], `reps` repetitions each, 50 ms apart; each timed call's start on the reference's clock
/// is 1 µs before CUPTI's (the reference reads its clock, then calls), its length 2 µs longer.
pub fn reference_run(reps: usize) -> ReferenceRun {
    let mut lines = Vec::new();
    let mut cases = Vec::new();
    let mut timed = Vec::new();
    let mut corr = 100u32;
    for (ci, spec) in reference_cases().iter().enumerate() {
        let (mut starts, mut lens) = (Vec::new(), Vec::new());
        for ri in 0..reps {
            let b = (ci as u64 * reps as u64 + ri as u64) * 50 * MS;
            let (blocker, own) = (corr, corr + 1);
            corr += 2;
            let blocker_lines = |launch_len: u64| {
                vec![
                    call("cudaLaunchKernel", blocker, b, b + launch_len),
                    kernel("spin", 13, blocker, b + 10 * US, b + 20 * MS),
                ]
            };
            let (start, end) = match spec.shape {
                RepShape::WaitsForTheBlocker => {
                    lines.extend(blocker_lines(5 * US));
                    lines.push(call(spec.call, own, b + 15 * US, b + 20 * MS + 30 * US));
                    let src = if spec.id.contains("/pageable/") { 1 } else { 2 };
                    lines.push(htod(src, 64 << 20, 13, own, b + 20 * MS + 5 * US, b + 23 * MS));
                    (b + 15 * US, b + 20 * MS + 30 * US)
                }
                RepShape::ReturnsAtOnce => {
                    lines.extend(blocker_lines(5 * US));
                    lines.push(call(spec.call, own, b + 15 * US, b + 21 * US));
                    lines.push(htod(memory::PAGEABLE, 64 << 20, 13, own, b + 20 * MS + 5 * US, b + 30 * MS));
                    (b + 15 * US, b + 21 * US)
                }
                RepShape::LaunchBehindTheBlockersLaunch => {
                    lines.extend(blocker_lines(4 * US));
                    lines.push(call(spec.call, own, b + 8 * US, b + 12 * US));
                    lines.push(kernel("empty_kernel", 13, own, b + 20 * MS, b + 20 * MS + 3 * US));
                    (b + 8 * US, b + 12 * US)
                }
                RepShape::Alone => {
                    lines.push(call(spec.call, own, b, b + 10 * US));
                    (b, b + 10 * US)
                }
                RepShape::Untraced => (b, b + 10 * US),
            };
            if spec.shape != RepShape::Untraced {
                timed.push(((ci, ri), own));
            }
            starts.push(REFERENCE_ORIGIN + start - US);
            lens.push(end - start + 2 * US);
        }
        cases.push(serde_json::json!({
            "id": spec.id,
            "call": spec.call,
            "class": spec.class,
            "classes": if spec.class.is_some() { vec![spec.class; reps] } else { vec![] },
            "host_call_us": {"median": lens[0] as f64 / 1e3},
            "error": if spec.class.is_none() { Some("the call under test, cudaHostRegister -> out of memory") } else { None },
            "blocker_ahead": spec.blocker_ahead,
            "host_call_start_ns": starts,
            "host_call_ns": lens,
        }));
    }
    let json = serde_json::json!({"tool": "async_ref", "memcpy_kind": "default", "reps": reps, "cases": cases});
    ReferenceRun { trace: trace(lines), json: json.to_string(), timed }
}

/// A synthetic training loop with code locations and NVTX ranges (format 3), on thread 100 and stream 13:
/// start-up (a 120 ms `cudaFree` that creates the context), then three steps whose `cudaMemcpy` (made at
/// `train.py:41` in `train_step`, under `torch/_tensor.py`'s `item`) waits 8 ms for the kernel `backward`
/// ahead in its stream; a `cudaStreamSynchronize` with only native frames (`/home/me/app/main.cu:12`) that
/// waits 5 ms for the kernel `optimizer`; a 2 ms `cudaMalloc` with no location inside the NVTX range
/// `optimizer step`, itself inside `epoch 1`.
pub fn located_training_loop() -> String {
    use async_lab_core::trace::format::{Gil, NativeFrame, PyFrame};
    let py = |file: &str, line: u32, function: &str| PyFrame { file: file.into(), line, function: function.into() };
    let mut lines = vec![
        call("cudaFree", 1, 0, 120 * MS),
        Line::Resource { event: Resource::ContextCreated, t: T0 + MS, tid: 100 },
        Line::Nvtx { tid: 100, start: T0 + 190 * MS, end: T0 + 400 * MS, name: "epoch 1".into(), domain: None },
    ];
    for k in 0..3u32 {
        let base = 200 * MS + u64::from(k) * 20 * MS;
        let (launch, copy) = (10 + 10 * k, 11 + 10 * k);
        lines.push(call("cudaLaunchKernel", launch, base, base + 5 * US));
        lines.push(kernel("backward", 13, launch, base + 10 * US, base + 8 * MS));
        lines.push(call("cudaMemcpy", copy, base + 10 * US, base + 8 * MS + 50 * US));
        lines.push(Line::Location {
            tid: 100,
            corr: copy,
            gil: Gil::Held,
            python: vec![
                py("/venv/lib/python3.11/site-packages/torch/_tensor.py", 1000, "item"),
                py("train.py", 41, "train_step"),
                py("train.py", 60, "<module>"),
            ],
            native: vec![],
            took_ns: None,
            others: Vec::new(),
        });
        lines.push(Line::Memcpy {
            copy_kind: 2,
            src_kind: 3,
            dst_kind: 1,
            bytes: 4,
            start: T0 + base + 8 * MS + 10 * US,
            end: T0 + base + 8 * MS + 20 * US,
            stream: 13,
            corr: copy,
        });
    }
    lines.extend([
        call("cudaLaunchKernel", 49, 299 * MS, 299 * MS + 5 * US),
        kernel("optimizer", 13, 49, 299 * MS + 10 * US, 305 * MS),
        call("cudaStreamSynchronize", 50, 300 * MS, 305 * MS + 10 * US),
        Line::Sync { sync_type: 3, start: T0 + 300 * MS, end: T0 + 305 * MS, stream: Some(13), corr: 50, event: None },
        Line::Location {
            tid: 100,
            corr: 50,
            gil: Gil::NoPython,
            python: vec![],
            native: vec![
                NativeFrame {
                    module: "/usr/lib/libcudart.so.12".into(),
                    offset: 0x100,
                    function: None,
                    file: None,
                    line: None,
                },
                NativeFrame {
                    module: "/home/me/app/app".into(),
                    offset: 0x2000,
                    function: Some("step".into()),
                    file: Some("/home/me/app/main.cu".into()),
                    line: Some(12),
                },
            ],
            took_ns: None,
            others: Vec::new(),
        },
        Line::Nvtx { tid: 100, start: T0 + 309 * MS, end: T0 + 320 * MS, name: "optimizer step".into(), domain: None },
        call("cudaMalloc", 60, 310 * MS, 312 * MS),
    ]);
    trace(lines)
}

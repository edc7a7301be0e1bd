//! A SYNTHETIC recording for the tests of the HTML page (`tests/tests/html_*.rs`): every number in it is made
//! up (plausible, so that the page looks like a real one, but not a measurement), and it is labelled so on the
//! page. It never goes under recordings/. Its setups come from the experiment catalogue, so that they are the
//! ones a real run would record.
//!
//! It holds text that must come out escaped wherever it is shown (`HOSTILE`), a failed experiment, a partial
//! older-style recording without a clock offset, the data of every plot, and the threads family's other thread.

use async_lab::experiments::catalogue;

use async_lab_core::catalogue::presets::Preset;
use async_lab_core::classify::Class;
use async_lab_core::clock::ClockOffset;
use async_lab_core::html::Source;
use async_lab_core::metrics::Metrics;
use async_lab_core::record::{CaseRecord, CaseSetup, Recording, Rep, RECORDING_KIND, SCHEMA_VERSION};
use async_lab_core::rules::Expected;
use async_lab_core::setup::BlockerPlacement;
use async_lab_core::units::parse_size;

/// `%globaltimer − CLOCK_MONOTONIC` in the synthetic runs.
const OFFSET: i64 = 1_700_000_000_000_000;
const MS: u64 = 1_000_000;
const US: u64 = 1_000;
/// Text that must come out escaped wherever it is shown.
const HOSTILE: &str = "<script>alert('x')</script> & \"quoted\"";

fn machine(name: &str) -> async_lab_core::machine::MachineInfo {
    serde_json::from_value(serde_json::json!({
        "gpu_name": name, "gpu_ordinal": 0, "compute_capability": "9.0", "sm_count": 132,
        "memory_total_bytes": 150u64 << 30, "memory_free_bytes": 149u64 << 30, "cuda_driver_api": "13.0",
        "driver_release": "synthetic", "pci_bus_id": "0000:00:00.0", "pcie_link": "32.0 GT/s PCIe x16",
        "pcie_max_link": "32.0 GT/s PCIe x16", "sm_clock_max_mhz": 1980, "memory_clock_max_mhz": 2619,
        "async_engine_count": 3, "concurrent_managed_access": true, "pageable_memory_access": false,
        "host_cpu": "synthetic <CPU>", "host_cpus": 16, "os": "synthetic", "tool_version": "0.1.0",
        "git_commit": "synthetic"
    }))
    .unwrap()
}

fn setup(preset: Preset, sizes: Option<&[u64]>, id: &str) -> CaseSetup {
    catalogue(preset, sizes)
        .into_iter()
        .find(|c| c.setup.id == id)
        .unwrap_or_else(|| panic!("no experiment {id} in the {preset:?} catalogue"))
        .setup
}

fn record(setup: CaseSetup, blocker_ns: Option<u64>, reps: Vec<Rep>) -> CaseRecord {
    CaseRecord { setup, blocker_ns, warmup: None, reps, series: None, error: None, skipped: None }
}

/// Small spread over five repetitions.
const JITTER: [f64; 5] = [1.0, 1.03, 0.97, 1.01, 0.99];

/// What one repetition behind a blocker did (host times relative to the blocker's launch).
struct Behind {
    blocker_ns: u64,
    /// When the call started, after the blocker's launch.
    call_at: u64,
    call_ns: u64,
    /// The call's work, in ns after the blocker's start.
    work: Option<(i64, i64)>,
    waited: bool,
    done: Option<bool>,
    captured: Option<bool>,
}

/// Five repetitions of `b`, each at its own (made-up) host time; the blocker starts 8 µs after its launch.
fn reps_behind(b: &Behind, base: u64) -> Vec<Rep> {
    JITTER
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let launch = base + i as u64 * 500 * MS;
            let blocker_start = (launch + 8 * US) as i64 + OFFSET;
            let call_ns = (b.call_ns as f64 * j) as u64;
            Rep {
                host_call_ns: call_ns,
                host_cpu_ns: call_ns * 9 / 10,
                blocker_done_at_return: Some(b.waited),
                op_done_at_return: b.done,
                data_captured_at_return: b.captured,
                blocker_device_ns: Some(b.blocker_ns),
                op_device_ns: b.work.map(|(s, e)| (e - s) as u64),
                host_call_start_ns: launch + b.call_at,
                host_blocker_launch_ns: Some(launch),
                blocker_gpu_ns: Some([blocker_start as u64, blocker_start as u64 + b.blocker_ns]),
                op_gpu_ns_from_blocker: b.work.map(|(s, e)| [s, e]),
                ..Rep::default()
            }
        })
        .collect()
}

fn copies(base: u64) -> Vec<CaseRecord> {
    let d = |id: &str| setup(Preset::Default, None, id);
    let blocker = 20 * MS;
    let after = blocker as i64 + 3_000;
    let mut hostile = d("copy/async/htod/pinned/nonblocking/same/1MiB");
    hostile.what = format!("a pinned copy whose description holds {HOSTILE}");
    let mut failed = record(d("copy/async/htod/wc/nonblocking/same/4KiB"), None, vec![]);
    failed.error = Some("cuMemHostAlloc failed: <CUDA_ERROR_OUT_OF_MEMORY> & nothing was measured".into());
    vec![
        record(
            hostile,
            Some(blocker),
            reps_behind(
                &Behind {
                    blocker_ns: blocker,
                    call_at: 30 * US,
                    call_ns: 5 * US,
                    work: Some((after, after + 45_000)),
                    waited: false,
                    done: Some(false),
                    captured: Some(false),
                },
                base,
            ),
        ),
        record(
            d("copy/async/htod/pageable/nonblocking/same/1MiB"),
            Some(blocker),
            reps_behind(
                &Behind {
                    blocker_ns: blocker,
                    call_at: 30 * US,
                    call_ns: 380 * US,
                    work: Some((after, after + 90_000)),
                    waited: false,
                    done: Some(false),
                    captured: Some(true),
                },
                base + 10_000 * MS,
            ),
        ),
        record(
            d("copy/async/dtoh/pageable/nonblocking/same/1MiB"),
            Some(blocker),
            reps_behind(
                &Behind {
                    blocker_ns: blocker,
                    call_at: 30 * US,
                    call_ns: blocker + 8 * US + 3 * US + 110 * US + 6 * US - 30 * US,
                    work: Some((after, after + 110_000)),
                    waited: true,
                    done: Some(true),
                    captured: None,
                },
                base + 20_000 * MS,
            ),
        ),
        record(
            d("alloc/mem-free/nonblocking"),
            Some(blocker),
            reps_behind(
                &Behind {
                    blocker_ns: blocker,
                    call_at: 30 * US,
                    call_ns: blocker + 8 * US + 4 * US - 30 * US,
                    work: None,
                    waited: true,
                    done: None,
                    captured: None,
                },
                base + 30_000 * MS,
            ),
        ),
        failed,
    ]
}

fn queue(base: u64) -> CaseRecord {
    let depth = 1024usize;
    let mut series: Vec<f64> = (0..depth).map(|i| 2.1 + 0.4 * ((i * 37 % 17) as f64 / 17.0)).collect();
    series.push(299_400.0);
    series.extend((0..256).map(|i| 2.6 + 0.5 * ((i * 13 % 11) as f64 / 11.0)));
    let reps = (0..5)
        .map(|i| {
            let launch = base + i * 1_000 * MS;
            let blocker_start = (launch + 8 * US) as i64 + OFFSET;
            let call_at = 2_400 * US;
            let metrics = Metrics {
                queue_depth: Some(depth as f64),
                launch_us_before_full: Some(2.3),
                launch_us_blocked: Some(299_400.0),
                launch_us_after_full: Some(2.8),
                ..Metrics::EMPTY
            };
            Rep {
                host_call_ns: (300 * MS + 8 * US) - call_at + 2 * US,
                host_cpu_ns: 299 * MS,
                blocker_done_at_return: Some(true),
                op_done_at_return: Some(false),
                blocker_device_ns: Some(300 * MS),
                host_call_start_ns: launch + call_at,
                host_blocker_launch_ns: Some(launch),
                blocker_gpu_ns: Some([blocker_start as u64, blocker_start as u64 + 300 * MS]),
                metrics,
                ..Rep::default()
            }
        })
        .collect();
    let mut r = record(setup(Preset::Default, None, "launch/queue-depth/nonblocking/same"), Some(300 * MS), reps);
    r.series = Some(series);
    r
}

fn waits(base: u64) -> Vec<CaseRecord> {
    [
        ("wait/stream-sync/spin", 0.99, 3.4),
        ("wait/stream-sync/yield", 0.97, 5.8),
        ("wait/stream-sync/blocking-sync", 0.002, 57.0),
        ("wait/stream-sync/auto", 0.98, 3.7),
        ("wait/event-sync/default", 0.99, 3.1),
        ("wait/event-sync/blocking-sync", 0.003, 61.0),
    ]
    .into_iter()
    .enumerate()
    .map(|(k, (id, cpu, latency))| {
        let reps = JITTER
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let wall = 100 * MS + (latency * j * 1e3) as u64 + 9 * US;
                Rep {
                    host_call_ns: wall,
                    host_cpu_ns: (wall as f64 * cpu) as u64,
                    op_done_at_return: Some(true),
                    op_device_ns: Some(100 * MS),
                    host_call_start_ns: base + (k as u64 * 10 + i as u64) * 200 * MS,
                    metrics: Metrics { cpu_fraction: Some(cpu), wake_latency_us: Some(latency * j), ..Metrics::EMPTY },
                    ..Rep::default()
                }
            })
            .collect();
        record(setup(Preset::Default, None, id), None, reps)
    })
    .collect()
}

/// One step of the seed sequence: host call [start, start + len] and GPU work [gpu0, gpu1], all in µs after
/// the sequence's start (the reference stamp runs 5 µs before it).
struct Step {
    host: (f64, f64),
    gpu: (f64, f64),
    prior_done: bool,
    own_done: bool,
}

fn seed(kind: &str, base: u64, steps: [Step; 4]) -> Vec<CaseRecord> {
    let group = setup(Preset::Seed, None, &format!("seed/{kind}"));
    let names = [
        ("1-htod", "cuMemcpyHtoDAsync"),
        ("2-launch", "cuLaunchKernel"),
        ("3-dtoh", "cuMemcpyDtoHAsync"),
        ("4-callback", "cuLaunchHostFunc"),
    ];
    let ns = |us: f64| (us * 1e3) as i64;
    names
        .iter()
        .zip(&steps)
        .enumerate()
        .map(|(k, ((step, call), s))| {
            // As host/src/experiments/seed.rs sets up its steps.
            let mut setup = group.clone();
            setup.id = format!("seed/{kind}/{step}");
            setup.call = (*call).to_owned();
            setup.layout.blocker = if k == 0 { BlockerPlacement::None } else { BlockerPlacement::Same };
            setup.layout.blocker_ahead = k > 0;
            let (rule, expected) = match k {
                0 if kind == "pageable" => ("A2", Expected::classes(&[Class::Async, Class::Staged])),
                1 => ("K4", Expected::classes(&[Class::Async, Class::WaitedForStream])),
                2 if kind == "pageable" => ("A2", Expected::classes(&[Class::Blocking])),
                3 => ("CB1", Expected::classes(&[Class::Async])),
                _ => ("A1", Expected::classes(&[Class::Async])),
            };
            setup.rule = rule.into();
            setup.expected = expected;
            let reps = JITTER
                .iter()
                .enumerate()
                .map(|(i, j)| {
                    let start = base + i as u64 * 100 * MS;
                    let origin_host = start as i64 - 5_000;
                    let mut rep = Rep {
                        host_call_ns: (ns(s.host.1 - s.host.0) as f64 * j) as u64,
                        host_cpu_ns: (ns(s.host.1 - s.host.0) as f64 * j * 0.95) as u64,
                        blocker_done_at_return: (k > 0).then_some(s.prior_done),
                        op_done_at_return: Some(s.own_done),
                        op_device_ns: Some(ns(s.gpu.1 - s.gpu.0) as u64),
                        host_call_start_ns: start + ns(s.host.0) as u64,
                        op_gpu_ns_from_origin: Some([ns(s.gpu.0) + 5_000, ns(s.gpu.1) + 5_000]),
                        gpu_origin_ns: Some((origin_host + OFFSET) as u64),
                        ..Rep::default()
                    };
                    if k == 3 {
                        rep.metrics.concluded_after_enqueue = Some(false);
                        rep.metrics.concluded_after_sync = Some(true);
                    }
                    rep
                })
                .collect();
            record(setup, None, reps)
        })
        .collect()
}

fn seeds(base: u64) -> Vec<CaseRecord> {
    let step = |host, gpu, prior_done, own_done| Step { host, gpu, prior_done, own_done };
    let mut v = seed(
        "pageable",
        base,
        [
            step((0.0, 3100.0), (50.0, 3300.0), false, false),
            step((3102.0, 3150.0), (3300.0, 3820.0), false, false),
            step((3152.0, 4950.0), (3820.0, 4900.0), true, true),
            step((4952.0, 4958.0), (4960.0, 4975.0), true, false),
        ],
    );
    v.extend(seed(
        "pinned",
        base + 10_000 * MS,
        [
            step((0.0, 8.0), (10.0, 210.0), false, false),
            step((10.0, 50.0), (210.0, 730.0), false, false),
            step((52.0, 58.0), (730.0, 930.0), false, false),
            step((60.0, 64.0), (930.0, 950.0), false, false),
        ],
    ));
    v
}

fn sweep(base: u64) -> Vec<CaseRecord> {
    let sizes: Vec<u64> = ["4KiB", "16KiB", "64KiB", "256KiB", "1MiB", "4MiB", "16MiB", "64MiB", "256MiB", "1GiB"]
        .iter()
        .map(|s| parse_size(s).unwrap())
        .collect();
    let mut out = Vec::new();
    let mut n = 0;
    for dir in ["htod", "dtoh"] {
        for host in ["pageable", "pinned"] {
            for &bytes in &sizes {
                // GB/s = bytes per ns.
                let bw = match (dir, host) {
                    (_, "pinned") => 52.0,
                    ("htod", _) => 14.0,
                    _ => 9.5,
                };
                let device = 2_000 + (bytes as f64 / bw) as u64;
                let blocker = (3 * device).clamp(20 * MS, 2_000 * MS);
                let after = blocker as i64 + 3_000;
                let work = Some((after, after + device as i64));
                let wait_end = blocker + 8 * US - 30 * US;
                let b = match (dir, host) {
                    (_, "pinned") => Behind {
                        blocker_ns: blocker,
                        call_at: 30 * US,
                        call_ns: 4 * US + bytes / 200_000,
                        work,
                        waited: false,
                        done: Some(false),
                        captured: (dir == "htod").then_some(false),
                    },
                    ("htod", _) if bytes <= 64 << 10 => Behind {
                        blocker_ns: blocker,
                        call_at: 30 * US,
                        call_ns: 3 * US + bytes / 6,
                        work,
                        waited: false,
                        done: Some(false),
                        captured: Some(true),
                    },
                    ("htod", _) => Behind {
                        blocker_ns: blocker,
                        call_at: 30 * US,
                        call_ns: wait_end + 3 * US + (bytes as f64 / bw * 0.97) as u64,
                        work,
                        waited: true,
                        done: Some(false),
                        captured: None,
                    },
                    _ => Behind {
                        blocker_ns: blocker,
                        call_at: 30 * US,
                        call_ns: wait_end + 3 * US + device + 5 * US,
                        work,
                        waited: true,
                        done: Some(true),
                        captured: None,
                    },
                };
                let id = format!("sweep/{dir}/{host}/{}", async_lab_core::units::format_size(bytes));
                let reps = reps_behind(&b, base + n * 20_000 * MS);
                out.push(record(setup(Preset::Sweep, Some(&sizes), &id), Some(blocker), reps));
                n += 1;
            }
        }
    }
    out
}

/// Peer copies on a made-up two-GPU machine: every call, access on (link) and off (through the host), both
/// directions, three sizes; one pair that the driver would not let access each other directly.
fn peers(base: u64) -> Vec<CaseRecord> {
    let sizes: Vec<u64> = ["4KiB", "1MiB", "256MiB"].iter().map(|s| parse_size(s).unwrap()).collect();
    let mut out = Vec::new();
    let mut n = 0;
    for call in ["peer", "peer-async", "dtod-async"] {
        for access in ["p2p-on", "p2p-off"] {
            for (src, dst) in [(0, 1), (1, 0)] {
                for &bytes in &sizes {
                    let template = format!("peer/{call}/{access}/same/{}", async_lab_core::units::format_size(bytes));
                    let mut setup = setup(Preset::Peer, Some(&sizes), &template);
                    setup.id = async_lab_core::setup::pair_id(&template, src, dst);
                    setup.layout.peer = Some(async_lab_core::setup::PeerSetup {
                        src_gpu: Some(src),
                        dst_gpu: Some(dst),
                        access: access == "p2p-on",
                    });
                    if access == "p2p-on" && src == 1 {
                        let mut r = record(setup, None, vec![]);
                        r.skipped = Some("GPU 1 cannot access GPU 0's memory directly (made up)".into());
                        out.push(r);
                        continue;
                    }
                    // GB/s = bytes per ns: a link of 300 GB/s, or 20 GB/s through the host.
                    let bw = if access == "p2p-on" { 300.0 } else { 20.0 };
                    let device = 3_000 + (bytes as f64 / bw) as u64;
                    let blocker = (3 * device).clamp(20 * MS, 2_000 * MS);
                    let after = blocker as i64 + 3_000;
                    let b = Behind {
                        blocker_ns: blocker,
                        call_at: 30 * US,
                        call_ns: 6 * US,
                        work: Some((after, after + device as i64)),
                        waited: false,
                        done: Some(false),
                        captured: None,
                    };
                    out.push(record(setup, Some(blocker), reps_behind(&b, base + n * 20_000 * MS)));
                    n += 1;
                }
            }
        }
    }
    out
}

/// The threads family: a quick call made while another thread is inside a slow call (`cuMemAllocHost`, which
/// the launch waits for, returning 4 µs after it), and while a host function runs (which the event record does
/// not wait for). The other thread's span is kept as the metrics the family records, on the same host clock.
fn threads(base: u64) -> Vec<CaseRecord> {
    [
        ("threads/in-alloc-host/launch/nonblocking/same", 145 * MS, true),
        ("threads/in-host-func/event-record/nonblocking/same", 30 * MS, false),
    ]
    .into_iter()
    .enumerate()
    .map(|(k, (id, other_ns, waits))| {
        let blocker = 3 * other_ns;
        let after = blocker as i64 + 3_000;
        // The other thread starts 40 µs after the blocker's launch; the quick call 50 µs into its call.
        let (other_at, call_at) = (40 * US, 90 * US);
        let call_ns = if waits { other_ns - 50 * US + 4 * US } else { 3 * US };
        let b = Behind {
            blocker_ns: blocker,
            call_at,
            call_ns,
            work: Some((after, after + 3_000)),
            waited: false,
            done: Some(false),
            captured: None,
        };
        let mut reps = reps_behind(&b, base + k as u64 * 10_000 * MS);
        for r in &mut reps {
            let t0 = r.host_blocker_launch_ns.unwrap() + other_at;
            let t1 = t0 + other_ns;
            let end = r.host_call_start_ns + r.host_call_ns;
            let m = |v: u64| v as f64;
            r.metrics = Metrics {
                overlapped: Some(true),
                waited_for_other_thread: Some(end >= t1),
                started_into_other_us: Some((m(r.host_call_start_ns) - m(t0)) / 1e3),
                returned_after_other_end_us: Some((m(end) - m(t1)) / 1e3),
                other_start_ns: Some(m(t0)),
                other_end_ns: Some(m(t1)),
                other_call_us: Some(m(other_ns) / 1e3),
                other_alone_us: Some(m(other_ns) / 1e3 * 0.98),
                ..Metrics::EMPTY
            };
        }
        record(setup(Preset::Next, None, id), Some(blocker), reps)
    })
    .collect()
}

fn recording(preset: &str, clock: Option<ClockOffset>, cases: Vec<CaseRecord>) -> Recording {
    Recording {
        kind: RECORDING_KIND.into(),
        schema_version: SCHEMA_VERSION,
        created: "2026-12-02T00:00:00Z".into(),
        preset: preset.into(),
        args: vec!["--synthetic".into()],
        reps_per_case: 5,
        partial: false,
        machine: machine("SYNTHETIC GPU (made-up numbers, not a measurement)"),
        clock,
        clock_later: vec![],
        cases,
    }
}

/// The synthetic fixture: a run with a clock offset and every kind of experiment, and an older-style one
/// without (and with a partial blocker record).
pub fn synthetic() -> Vec<Source> {
    let clock = Some(ClockOffset { gpu_minus_host_ns: OFFSET, uncertainty_ns: 1_800, samples: 50, at_host_ns: None });
    let base = 5_000_000 * MS;
    let mut cases = copies(base);
    cases.push(queue(base + 100_000 * MS));
    cases.extend(waits(base + 200_000 * MS));
    cases.extend(seeds(base + 300_000 * MS));
    cases.extend(sweep(base + 400_000 * MS));
    cases.extend(peers(base + 600_000 * MS));
    cases.extend(threads(base + 2_000_000 * MS));
    let full = recording("synthetic", clock, cases);

    let mut older = copies(base);
    older.truncate(2);
    // No blocker stamps at all in one repetition set: only the host span can be drawn.
    for rep in &mut older[1].reps {
        rep.blocker_gpu_ns = None;
        rep.op_gpu_ns_from_blocker = None;
    }
    let mut old = recording("synthetic-older", None, older);
    old.partial = true;
    vec![
        Source { label: "SYNTHETIC fixture (made-up numbers) <1>".into(), recording: full },
        Source { label: "SYNTHETIC older-style fixture (no clock offset)".into(), recording: old },
    ]
}

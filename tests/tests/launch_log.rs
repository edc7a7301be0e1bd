//! Format 5's default mode: a held call's cause from the launch log where the trace has no kernel record,
//! beside the same program with every record (`--all-kernels`), on the synthetic traces of
//! `tests/src/launch_log.rs`.

use async_lab_core::attribution::Cause;
use async_lab_core::class::Class;
use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::calls::{self, Traced};
use async_lab_core::trace::findings;
use async_lab_core::trace::format::Trace;
use async_lab_core::trace::scene::Program;
use async_lab_core::trace::warmup;
use async_lab_tests::launch_log as log;
use async_lab_tests::trace_synthetic::MS;

/// The longest call, classified.
fn longest(text: &str) -> (String, Traced) {
    let trace = Trace::parse(text).expect("a synthetic trace parses");
    let program = Program::of(&trace.processes[0]);
    let t = calls::classify(&program).into_iter().max_by_key(|t| t.held.total_ns).expect("a call");
    (program.calls[t.index].name.clone(), t)
}

#[test]
fn a_synchronization_behind_a_kernel_without_its_record_waited_for_the_work_last_enqueued() {
    let (name, t) = longest(&log::sync_behind_a_kernel(false));
    assert_eq!(name, "cudaStreamSynchronize");
    assert_eq!(t.class, Class::WaitedForStream);
    assert_eq!(t.cause, "waited for the work ahead in its stream, last enqueued: the kernel spin (correlation 10)");
    assert!(t.held.ns(Cause::Stream) > 49 * MS as i64);
    // With every record: the same class, the kernel named by its record.
    let (_, whole) = longest(&log::sync_behind_a_kernel(true));
    assert_eq!(whole.class, t.class);
    assert_eq!(whole.cause, "waited for the kernel spin ahead in its stream, correlation 10");
}

#[test]
fn a_copy_behind_a_kernel_waited_until_its_own_record_began() {
    let (_, t) = longest(&log::copy_behind_a_kernel(false));
    let (_, whole) = longest(&log::copy_behind_a_kernel(true));
    assert_eq!(t.class, whole.class);
    assert_eq!(t.class, Class::WaitedForStream);
    // The wait ends where the copy's own record begins, as the kernel's end (2 µs before it) says with records.
    let wait = |t: &Traced| t.held.ns(Cause::Stream);
    assert!((wait(&t) - wait(&whole)).abs() <= 5_000, "{} vs {}", wait(&t), wait(&whole));
    assert!(
        t.cause.starts_with("waited for the work ahead in its stream, last enqueued: the kernel gemm"),
        "{}",
        t.cause
    );
}

#[test]
fn a_free_whose_wait_nothing_bounds_is_unknown_never_a_guess() {
    let (name, t) = longest(&log::free_behind_another_streams_kernel(false));
    assert_eq!(name, "cudaFree");
    assert_eq!(t.class, Class::Unknown);
    assert!(t.cause.contains("the kernel spin (correlation 10)") && t.cause.contains("no record"), "{}", t.cause);
    // With every record the trace can say it drained the device.
    let (_, whole) = longest(&log::free_behind_another_streams_kernel(true));
    assert_eq!(whole.class, Class::DeviceSync);
}

#[test]
fn a_loops_holds_are_named_by_the_kernels_of_the_steps_inside_a_window_marked_as_sampled() {
    let text = log::loop_with_a_window(10, 3..5);
    let trace = Trace::parse(&text).unwrap();
    let a = Analysis::of(&trace.processes[0]);
    // Every hold waited for its stream, inside the window or not.
    let syncs: Vec<&Traced> =
        a.traced.iter().filter(|t| a.program.calls[t.index].name == "cudaStreamSynchronize").collect();
    assert_eq!(syncs.len(), 10);
    assert!(syncs.iter().all(|t| t.class == Class::WaitedForStream), "{syncs:#?}");
    let warm = warmup::warm_up(&a, 0);
    let fs = findings::findings(&a, &warm, false);
    let f = fs.iter().find(|f| f.calls == 10).unwrap_or_else(|| panic!("{fs:#?}"));
    assert!(f.what.contains("the kernel gemm"), "{}", f.what);
    assert!(f.what.contains("(sampled: the 2 of 10 calls with kernel records)"), "{}", f.what);
    // How busy the GPU was comes from the steps with records alone (there the GPU ran the whole wait).
    assert!(f.what.ends_with("The GPU was busy 100% of the wait."), "{}", f.what);
}

#[test]
fn a_launch_into_a_full_queue_waited_until_room_came() {
    let (name, t) = longest(&log::launch_into_a_full_queue(true));
    assert_eq!(name, "cudaLaunchKernel");
    assert_eq!(t.class, Class::WaitedForStream, "{}", t.cause);
    assert!(
        t.cause
            .starts_with("launch queue full: waited for the work ahead in its stream, last enqueued: the kernel spin"),
        "{}",
        t.cause
    );
    // Without the driver's record the trace shows no full queue, and the lab never saw a launch wait without
    // one (or a load): driver work, whatever the log says was ahead.
    let (_, t) = longest(&log::launch_into_a_full_queue(false));
    assert_eq!(t.class, Class::DriverWork, "{}", t.cause);
}

//! The launch log through the library as a traced program drives it: CUPTI's callbacks for a launch and for a
//! synchronization that held its thread, with CUPTI's data made by hand (parameter blocks, the kernel's name)
//! and the clock given, written as a bounded trace to a file: the held call's line is followed by its `ahead`
//! line naming the kernel launched last before it in its stream.

use async_lab_inject::bench;
use async_lab_trace_format::{EnqueueKind, Line, Trace};
use cudarc::cupti::sys::{
    self, CUpti_ApiCallbackSite as Site, CUpti_CallbackData, CUpti_CallbackDomain as D,
    CUpti_driver_api_trace_cbid as DR, CUpti_runtime_api_trace_cbid as RT,
};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};

/// The trace's clock, set by the test.
static NOW: AtomicU64 = AtomicU64::new(1_000_000_000);

fn now() -> u64 {
    NOW.load(Ordering::SeqCst)
}

/// One call's enter at `start` and exit at `end`, as CUPTI calls back (CUPTI's data, field by field).
#[allow(clippy::too_many_arguments)]
fn call(domain: D, cbid: u32, name: &CStr, params: *const c_void, symbol: &CStr, corr: u32, start: u64, end: u64) {
    let mut slot = 0u64;
    let mut data = CUpti_CallbackData {
        callbackSite: Site::CUPTI_API_ENTER,
        functionName: name.as_ptr(),
        functionParams: params,
        functionReturnValue: std::ptr::null_mut(),
        symbolName: symbol.as_ptr(),
        context: std::ptr::null_mut(),
        contextUid: 1,
        correlationData: &mut slot,
        correlationId: corr,
    };
    NOW.store(start, Ordering::SeqCst);
    // SAFETY: `data` lives during the call, its slot from enter to exit, its strings for the whole test.
    unsafe { bench::callback(domain, cbid, &data) };
    data.callbackSite = Site::CUPTI_API_EXIT;
    NOW.store(end, Ordering::SeqCst);
    // SAFETY: as above.
    unsafe { bench::callback(domain, cbid, &data) };
}

#[test]
fn a_held_synchronization_is_written_with_the_kernel_launched_ahead_of_it() {
    let path = std::env::temp_dir().join(format!("async-lab-launch-log-{}.jsonl", std::process::id()));
    bench::start(&path, now).unwrap();
    let t0 = 2_000_000_000u64;
    // 5,000 launches of one kernel into one stream, 10 µs apart.
    // SAFETY: a plain C struct of integers and pointers: all zero is a valid value.
    let mut rt: sys::cudaLaunchKernel_v7000_params = unsafe { std::mem::zeroed() };
    rt.stream = 0x77 as _;
    // SAFETY: as above.
    let mut dr: sys::cuLaunchKernel_params = unsafe { std::mem::zeroed() };
    dr.hStream = 0x77 as _;
    let kernel = c"_Z12spin_kernelv";
    for k in 0..5_000u32 {
        let t = t0 + u64::from(k) * 10_000;
        // The runtime launch's enter, the driver launch inside it, then the runtime launch's exit.
        let mut slot = 0u64;
        let mut outer = CUpti_CallbackData {
            callbackSite: Site::CUPTI_API_ENTER,
            functionName: c"cudaLaunchKernel".as_ptr(),
            functionParams: (&raw const rt).cast(),
            functionReturnValue: std::ptr::null_mut(),
            symbolName: kernel.as_ptr(),
            context: std::ptr::null_mut(),
            contextUid: 1,
            correlationData: &mut slot,
            correlationId: 10 + k,
        };
        NOW.store(t, Ordering::SeqCst);
        // SAFETY: as in `call`.
        unsafe {
            bench::callback(
                D::CUPTI_CB_DOMAIN_RUNTIME_API,
                RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 as u32,
                &outer,
            )
        };
        call(
            D::CUPTI_CB_DOMAIN_DRIVER_API,
            DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel as u32,
            c"cuLaunchKernel",
            (&raw const dr).cast(),
            kernel,
            10 + k,
            t + 1_000,
            t + 3_000,
        );
        outer.callbackSite = Site::CUPTI_API_EXIT;
        NOW.store(t + 4_000, Ordering::SeqCst);
        // SAFETY: as in `call`.
        unsafe {
            bench::callback(
                D::CUPTI_CB_DOMAIN_RUNTIME_API,
                RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 as u32,
                &outer,
            )
        };
    }
    // SAFETY: as above.
    let mut sync: sys::cudaStreamSynchronize_v3020_params = unsafe { std::mem::zeroed() };
    sync.stream = 0x77 as _;
    let start = t0 + 60_000_000;
    call(
        D::CUPTI_CB_DOMAIN_RUNTIME_API,
        RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020 as u32,
        c"cudaStreamSynchronize",
        (&raw const sync).cast(),
        c"",
        9_000,
        start,
        start + 30_000_000,
    );
    NOW.store(start + 500_000_000, Ordering::SeqCst);
    bench::flush();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let trace = Trace::parse(&format!("{text}{}\n", serde_json::to_string(&Line::End { t: now() }).unwrap())).unwrap();
    let lines = &trace.processes[0].lines;
    let held = lines.iter().position(|l| matches!(l, Line::Api { corr: 9_000, .. })).expect("the held call is written");
    let Some(Line::Ahead { corr, stream, work, device, .. }) =
        lines[held + 1..].iter().find(|l| matches!(l, Line::Ahead { .. }))
    else {
        panic!("no ahead line: {text}");
    };
    assert_eq!((*corr, *stream, *device), (9_000, Some(0x77), false));
    let last = work.last().unwrap();
    assert_eq!(last.kind, EnqueueKind::Kernel);
    assert_eq!(last.kernel.as_deref(), Some("_Z12spin_kernelv"));
    // The last launch before it, with its runtime call's correlation id and times.
    assert_eq!(last.corr, 10 + 4_999);
    assert_eq!(last.stream, Some(0x77));
    assert!(work.len() <= 4);
}

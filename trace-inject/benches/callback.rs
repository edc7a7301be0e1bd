//! The price of the hot path: CUPTI's callback for an API call's enter and exit, as the library handles it
//! in a traced program, with CUPTI's data made by hand and the host's monotonic clock in place of CUPTI's (no
//! GPU needed). Each change to the hot path shows its price here:
//! `cargo bench -p async-lab-trace-inject` (the trace goes to /dev/null).

use async_lab_inject::bench;
use cudarc::cupti::sys::{CUpti_ApiCallbackSite as Site, CUpti_CallbackData, CUpti_CallbackDomain as D};
use divan::Bencher;
use std::ffi::CStr;

/// The host's monotonic clock, as cheap to read as CUPTI's (both a vDSO read).
fn monotonic() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid place for the one timespec clock_gettime writes.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn main() {
    bench::start(std::path::Path::new("/dev/null"), monotonic).expect("/dev/null opens");
    divan::main();
    bench::flush();
}

/// One API call as CUPTI describes it to the callback: a launch's parameter block (`cudaLaunchKernel`'s and
/// `cuLaunchKernel`'s put the stream at different places; the launch log reads it), its kernel's name.
struct Call {
    data: CUpti_CallbackData,
    slot: Box<u64>,
    _params: Box<[u64; 16]>,
}

/// The kernel's name, as CUPTI gives it for a launch.
const KERNEL: &CStr = c"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_";

impl Call {
    fn new(name: &'static CStr, corr: u32) -> Call {
        let mut slot = Box::new(0u64);
        // Every word a stream handle's worth: wherever the function's struct has its stream, it reads 0x5000.
        let params = Box::new([0x5000u64; 16]);
        let data = CUpti_CallbackData {
            callbackSite: Site::CUPTI_API_ENTER,
            functionName: name.as_ptr(),
            functionParams: params.as_ptr().cast(),
            functionReturnValue: std::ptr::null_mut(),
            symbolName: KERNEL.as_ptr(),
            // No context: the library asks CUPTI for nothing (the launch log asks the benchmark's resolver).
            context: std::ptr::null_mut(),
            contextUid: 1,
            correlationData: &mut *slot,
            correlationId: corr,
        };
        Call { data, slot, _params: params }
    }

    fn site(&mut self, domain: D, cbid: u32, site: Site) {
        self.data.callbackSite = site;
        self.data.correlationData = &mut *self.slot;
        // SAFETY: `data` lives during the call, its slot from enter to exit, its name (static) for ever.
        unsafe { bench::callback(domain, cbid, &self.data) }
    }
}

/// One launch through the runtime: `cudaLaunchKernel` and the `cuLaunchKernel` it makes, four callbacks.
fn launch(runtime: &mut Call, driver: &mut Call, corr: u32) {
    runtime.data.correlationId = corr;
    driver.data.correlationId = corr;
    runtime.site(D::CUPTI_CB_DOMAIN_RUNTIME_API, 211, Site::CUPTI_API_ENTER);
    driver.site(D::CUPTI_CB_DOMAIN_DRIVER_API, 307, Site::CUPTI_API_ENTER);
    driver.site(D::CUPTI_CB_DOMAIN_DRIVER_API, 307, Site::CUPTI_API_EXIT);
    runtime.site(D::CUPTI_CB_DOMAIN_RUNTIME_API, 211, Site::CUPTI_API_EXIT);
}

/// A launch's four callbacks, on one thread and on several at once.
#[divan::bench(threads = [1, 2, 4], sample_count = 200, sample_size = 2000)]
fn runtime_launch(b: Bencher) {
    let mut runtime = Call::new(c"cudaLaunchKernel", 0);
    let mut driver = Call::new(c"cuLaunchKernel", 0);
    let mut corr = 0u32;
    b.bench_local(|| {
        corr = corr.wrapping_add(1);
        launch(&mut runtime, &mut driver, corr);
    });
}

/// A launch's four callbacks while the gate has no block open (`bench::idle`): what the program pays for
/// the gate between its blocks, beside CUPTI's own dispatch.
#[divan::bench(sample_count = 200, sample_size = 2000)]
fn runtime_launch_between_blocks(b: Bencher) {
    let mut runtime = Call::new(c"cudaLaunchKernel", 0);
    let mut driver = Call::new(c"cuLaunchKernel", 0);
    let mut corr = 0u32;
    bench::idle(true);
    b.bench_local(|| {
        corr = corr.wrapping_add(1);
        launch(&mut runtime, &mut driver, corr);
    });
    bench::idle(false);
}

/// One driver call's two callbacks.
#[divan::bench(sample_count = 200, sample_size = 2000)]
fn driver_call(b: Bencher) {
    let mut driver = Call::new(c"cuLaunchKernel", 0);
    let mut corr = 0u32;
    b.bench_local(|| {
        corr = corr.wrapping_add(1);
        driver.data.correlationId = corr;
        driver.site(D::CUPTI_CB_DOMAIN_DRIVER_API, 307, Site::CUPTI_API_ENTER);
        driver.site(D::CUPTI_CB_DOMAIN_DRIVER_API, 307, Site::CUPTI_API_EXIT);
    });
}

/// 4,096 launches, then every ring drained through the bounded trace's filter and written: the library's
/// thread's work per launch is this less `runtime_launch`'s.
#[divan::bench(sample_count = 50, sample_size = 1)]
fn launches_then_drain(b: Bencher) {
    let mut runtime = Call::new(c"cudaLaunchKernel", 0);
    let mut driver = Call::new(c"cuLaunchKernel", 0);
    let mut corr = 0u32;
    b.counter(divan::counter::ItemsCount::new(4096usize)).bench_local(|| {
        for _ in 0..4096 {
            corr = corr.wrapping_add(1);
            launch(&mut runtime, &mut driver, corr);
        }
        bench::flush();
    });
}

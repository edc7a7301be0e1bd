//! CUPTI's callbacks: every runtime and driver API call (written when it returns, with its enter and exit
//! times) and the resource events a call may wait on (a context created, a module loaded).

use crate::cupti::{check, timestamp};
use crate::writer;
use async_lab_core::trace::format::{Domain, Failure, Resource};
use cudarc::cupti::sys::{self, CUpti_CallbackDomain as D, CUpti_CallbackIdResource as R};
use std::ffi::{c_char, c_void, CStr};
use std::panic::AssertUnwindSafe;
use std::ptr::addr_of;

/// Subscribes to the runtime and driver domains and the two resource events.
pub fn subscribe() -> Result<(), (Failure, String)> {
    let mut handle: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: `handle` is a valid place for the subscriber CUPTI writes; `on_callback` is an `extern "C"`
    // function with CUPTI's callback signature, alive as long as the process (this library is never unloaded).
    let code = unsafe { sys::cuptiSubscribe(&mut handle, Some(on_callback), std::ptr::null_mut()) };
    if code == sys::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED {
        return Err((
            Failure::CuptiTaken,
            "CUPTI already has a subscriber: another tool (nsys, ncu, compute-sanitizer, ...) is tracing this \
             program, and CUPTI allows one"
                .into(),
        ));
    }
    check(code, "cuptiSubscribe")?;
    for domain in [D::CUPTI_CB_DOMAIN_RUNTIME_API, D::CUPTI_CB_DOMAIN_DRIVER_API] {
        // SAFETY: `handle` is the subscriber just made.
        check(unsafe { sys::cuptiEnableDomain(1, handle, domain) }, "cuptiEnableDomain")?;
    }
    for cbid in [R::CUPTI_CBID_RESOURCE_CONTEXT_CREATED, R::CUPTI_CBID_RESOURCE_MODULE_LOADED] {
        // SAFETY: `handle` is the subscriber just made.
        let code = unsafe { sys::cuptiEnableCallback(1, handle, D::CUPTI_CB_DOMAIN_RESOURCE, cbid as u32) };
        check(code, "cuptiEnableCallback")?;
    }
    Ok(())
}

/// CUPTI calls this on the thread of each call's enter and exit, and of each resource event.
unsafe extern "C" fn on_callback(_user: *mut c_void, domain: D, cbid: sys::CUpti_CallbackId, data: *const c_void) {
    // A panic must not cross into the driver (nothing here is expected to panic): the line is lost, the
    // program goes on.
    // SAFETY: `data` is what CUPTI passed for this `domain` and `cbid`.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| unsafe { dispatch(domain, cbid, data) }));
}

/// # Safety
/// `data` is what CUPTI passed to [`on_callback`] with `domain` and `cbid`.
unsafe fn dispatch(domain: D, cbid: sys::CUpti_CallbackId, data: *const c_void) {
    if data.is_null() {
        return;
    }
    match domain {
        D::CUPTI_CB_DOMAIN_RUNTIME_API | D::CUPTI_CB_DOMAIN_DRIVER_API => {
            let which = if domain == D::CUPTI_CB_DOMAIN_RUNTIME_API { Domain::Runtime } else { Domain::Driver };
            // SAFETY: for the API domains CUPTI passes a `CUpti_CallbackData`, valid during the callback.
            unsafe { api(which, cbid, data.cast()) }
        }
        D::CUPTI_CB_DOMAIN_RESOURCE => {
            let event = match cbid {
                c if c == R::CUPTI_CBID_RESOURCE_CONTEXT_CREATED as u32 => Resource::ContextCreated,
                c if c == R::CUPTI_CBID_RESOURCE_MODULE_LOADED as u32 => Resource::ModuleLoaded,
                _ => return,
            };
            writer::resource(event, timestamp());
        }
        _ => {}
    }
}

/// # Safety
/// `data` points to the `CUpti_CallbackData` CUPTI passed to this callback.
unsafe fn api(domain: Domain, cbid: u32, data: *const sys::CUpti_CallbackData) {
    // The site is read as the integer it is (enter 0, exit 1), never as a Rust enum.
    // SAFETY: `data` is valid (the caller's promise); the field is a 32-bit C enum.
    let site = unsafe { addr_of!((*data).callbackSite).cast::<u32>().read() };
    // SAFETY: as above; CUPTI gives each call one u64 of its own for enter and exit to share.
    let slot = unsafe { addr_of!((*data).correlationData).read() };
    if slot.is_null() {
        return;
    }
    if site == sys::CUpti_ApiCallbackSite::CUPTI_API_ENTER as u32 {
        // SAFETY: `slot` points to the call's own u64, which no one else writes.
        unsafe { slot.write(timestamp()) };
        return;
    }
    let end = timestamp();
    // SAFETY: the enter callback of this same call wrote it.
    let start = unsafe { slot.read() };
    // SAFETY: as above, for the call's correlation id and name (a C string CUPTI keeps for the whole run).
    let (corr, name) = unsafe { (addr_of!((*data).correlationId).read(), addr_of!((*data).functionName).read()) };
    // SAFETY: `name` is null or CUPTI's C string, as read above.
    unsafe { record(domain, cbid, name, corr, start, end) }
}

/// Writes the line of one call.
///
/// # Safety
/// `name` is null or a C string alive during the call.
unsafe fn record(domain: Domain, cbid: u32, name: *const c_char, corr: u32, start: u64, end: u64) {
    // Borrowed, not copied: CUPTI keeps the name for the whole run, and the line is formatted before this returns.
    // SAFETY: the caller's promise.
    let name = if name.is_null() { c"" } else { unsafe { CStr::from_ptr(name) } };
    writer::api(domain, name, cbid, corr, start, end);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// This thread's CPU time, in ns: what the calls cost it, whatever else the machine runs meanwhile.
    fn cpu_ns() -> u64 {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `t` is a valid place for the one timespec clock_gettime writes.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    }

    /// `n` calls of the hot path on this thread: (wall ns, this thread's CPU ns).
    fn calls(n: u64, domain: Domain, base: u64) -> (u64, u64) {
        let name = c"cudaMemcpyAsync";
        let (t0, c0) = (Instant::now(), cpu_ns());
        for i in 0..n {
            let start = base + i * 1000;
            // SAFETY: a C string literal.
            unsafe { record(domain, 41, name.as_ptr(), i as u32, start, start + 500) };
        }
        (t0.elapsed().as_nanos() as u64, cpu_ns() - c0)
    }

    /// The cost of what this library does per API call once CUPTI has called it, the two timestamps aside
    /// (CUPTI's): the line built and written, to /dev/null. The best of five rounds of 10^6 calls, on one
    /// thread and on two at once (the machine's cores permitting: wall time / calls then).
    #[test]
    #[ignore = "a benchmark: cargo test --release -p async-lab-trace-inject -- --ignored --nocapture"]
    fn hot_path_ns_per_call() {
        const N: u64 = 1_000_000;
        writer::open_at(std::path::Path::new("/dev/null")).unwrap();
        let (mut wall1, mut cpu1, mut wall2, mut cpu2) = (u64::MAX, u64::MAX, u64::MAX, u64::MAX);
        for round in 0..5 {
            let (w, c) = calls(N, Domain::Runtime, round * N * 1000);
            writer::flush();
            (wall1, cpu1) = (wall1.min(w), cpu1.min(c));
            let t0 = Instant::now();
            let cpu: u64 = std::thread::scope(|s| {
                let h: Vec<_> = (0..2).map(|_| s.spawn(|| calls(N / 2, Domain::Driver, round * N * 1000).1)).collect();
                h.into_iter().map(|h| h.join().unwrap()).sum()
            });
            writer::flush();
            (wall2, cpu2) = (wall2.min(t0.elapsed().as_nanos() as u64), cpu2.min(cpu));
        }
        let per = |ns: u64| ns as f64 / N as f64;
        println!("hot path, one thread: {:.1} ns per call (CPU {:.1})", per(wall1), per(cpu1));
        println!("hot path, two threads: {:.1} ns wall per call (CPU {:.1})", per(wall2), per(cpu2));
    }
}

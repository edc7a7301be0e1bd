//! CUPTI's callbacks: the runtime and driver API calls that can hold their thread (`subscribed::may_hold`;
//! every call with [`ALL_VAR`]), each written when it returns, with its enter and exit times, and where it
//! held longer than the trace's threshold ([`LOCATE_VAR`]) where it was made (`location`, as `budget` allows); the resource
//! events a call may wait on (a context created, a module loaded); the program's NVTX ranges (`nvtx`); and,
//! on each thread's first call in a context, the ids of its default streams.

use crate::clock::now as timestamp;
use crate::cupti::{check, Subscriber};
use crate::switches::{self, DOMAINS_VAR};
use crate::{budget, gated, launches, location, nvtx, writer};
use async_lab_trace_format::subscribed;
use async_lab_trace_format::{ApiCalls, Domain, Failure, Line, Resource};
use cudarc::cupti::sys::{self, CUpti_CallbackDomain as D, CUpti_CallbackIdResource as R};
use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr};
use std::panic::AssertUnwindSafe;
use std::ptr::addr_of;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

/// Set to 1 (by `async-lab trace --all-calls`): every runtime and driver call, getters and queries too.
pub const ALL_VAR: &str = "ASYNC_LAB_TRACE_ALL";
/// Calls that held their thread longer than this many ns have their location written (set by `async-lab
/// trace` from `--min-held`).
pub const LOCATE_VAR: &str = "ASYNC_LAB_LOCATE_OVER_NS";
/// The threshold where [`LOCATE_VAR`] is not set: `async-lab trace`'s default `--min-held`.
const LOCATE_DEFAULT_NS: u64 = 20_000;

/// The resource events subscribed: what a call may wait on.
const RESOURCES: [R; 2] = [R::CUPTI_CBID_RESOURCE_CONTEXT_CREATED, R::CUPTI_CBID_RESOURCE_MODULE_LOADED];

/// The tracer's subscriber, while it has one.
static HANDLE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
/// The tracer stepped aside for another subscriber: nothing more is written.
static YIELDED: AtomicBool = AtomicBool::new(false);
static LOCATE_OVER: AtomicU64 = AtomicU64::new(LOCATE_DEFAULT_NS);

thread_local! {
    /// How many more of this thread's calls may ask CUPTI for the default streams' ids: asked until CUPTI
    /// answers (it cannot while the call that creates the context returns), then never again.
    static STREAMS_TRIES: Cell<u8> = const { Cell::new(32) };
    /// The traced calls this thread is inside (a runtime call and the driver calls it makes).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Which calls are traced and which are located, as the environment says.
pub fn settings() -> (ApiCalls, u64) {
    let all = std::env::var_os(ALL_VAR).is_some_and(|v| v == "1");
    let over = std::env::var(LOCATE_VAR).ok().and_then(|v| v.parse().ok()).unwrap_or(LOCATE_DEFAULT_NS);
    (if all { ApiCalls::All } else { ApiCalls::MayHold }, over)
}

/// Whether the tracer holds CUPTI's subscriber.
pub fn subscribed() -> bool {
    !HANDLE.load(Ordering::SeqCst).is_null() && !YIELDED.load(Ordering::SeqCst)
}

/// Gives CUPTI's subscriber up (for another subscriber): no line is written after this.
pub fn unsubscribe() {
    YIELDED.store(true, Ordering::SeqCst);
    let handle = HANDLE.swap(std::ptr::null_mut(), Ordering::SeqCst);
    if !handle.is_null() {
        // SAFETY: `handle` is the subscriber `subscribe` made, given up once (swapped out above).
        unsafe { sys::cuptiUnsubscribe(handle.cast()) };
    }
}

/// Subscribes to the calls `api_calls` names, the two resource events and NVTX (`cupti::subscribe`: as one
/// of several subscribers where CUPTI allows it).
pub fn subscribe(api_calls: ApiCalls, locate_over_ns: u64) -> Result<Subscriber, (Failure, String)> {
    LOCATE_OVER.store(locate_over_ns, Ordering::Relaxed);
    launches::init(match switches::writer() {
        switches::Writer::On { keep_over_ns, .. } => keep_over_ns,
        _ => switches::KEEP_OVER_DEFAULT_NS,
    });
    let subscriber = crate::cupti::subscribe(Some(on_callback))?;
    let handle = subscriber.handle;
    HANDLE.store(handle.cast(), Ordering::SeqCst);
    let sizes = [
        (D::CUPTI_CB_DOMAIN_RUNTIME_API, sys::CUpti_runtime_api_trace_cbid::CUPTI_RUNTIME_TRACE_CBID_SIZE as u32),
        (D::CUPTI_CB_DOMAIN_DRIVER_API, sys::CUpti_driver_api_trace_cbid::CUPTI_DRIVER_TRACE_CBID_SIZE as u32),
    ];
    for (domain, size) in sizes {
        let word = if domain == D::CUPTI_CB_DOMAIN_RUNTIME_API { "runtime" } else { "driver" };
        if !switches::listed(DOMAINS_VAR, word) {
            continue;
        }
        if api_calls == ApiCalls::All {
            // SAFETY: `handle` is the subscriber just made.
            check(unsafe { sys::cuptiEnableDomain(1, handle, domain) }, "cuptiEnableDomain")?;
            continue;
        }
        // Each call by its id, named by CUPTI itself (ids this CUPTI does not know answer an error and are
        // skipped); a newer CUPTI's ids past the binding's are all traced.
        for cbid in 1..size + 64 {
            let mut name: *const c_char = std::ptr::null();
            // SAFETY: `name` is a valid place for the pointer to CUPTI's static name.
            let code = unsafe { sys::cuptiGetCallbackName(domain, cbid, &mut name) };
            let known = code == sys::CUptiResult::CUPTI_SUCCESS;
            if !known || name.is_null() {
                continue;
            }
            // SAFETY: CUPTI's static C string, as just returned.
            let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            if cbid >= size || subscribed::may_hold(&name) {
                // SAFETY: `handle` is the subscriber just made; `cbid` an id of `domain`, as CUPTI named it.
                let code = unsafe { sys::cuptiEnableCallback(1, handle, domain, cbid) };
                // CUPTI 13.5 names ids it refuses to enable (on the H200's driver 580 it answered
                // CUPTI_ERROR_INVALID_PARAMETER for one): such an id is left out, the others are traced.
                if code != sys::CUptiResult::CUPTI_ERROR_INVALID_PARAMETER {
                    check(code, "cuptiEnableCallback")?;
                }
            }
        }
    }
    let resources = if switches::listed(DOMAINS_VAR, "resource") { &RESOURCES[..] } else { &[] };
    for &cbid in resources {
        // SAFETY: `handle` is the subscriber just made.
        let code = unsafe { sys::cuptiEnableCallback(1, handle, D::CUPTI_CB_DOMAIN_RESOURCE, cbid as u32) };
        check(code, "cuptiEnableCallback")?;
    }
    // NVTX's calls reach CUPTI only where NVTX_INJECTION64_PATH names it; the ranges' calls alone (not the
    // marks, names and categories a program may make at every step); optional: an older CUPTI without the
    // domain still traces.
    if switches::listed(DOMAINS_VAR, "nvtx") {
        for cbid in nvtx::CALLBACKS {
            // SAFETY: `handle` is the subscriber just made; `cbid` an id of the NVTX domain.
            let _ = unsafe { sys::cuptiEnableCallback(1, handle, D::CUPTI_CB_DOMAIN_NVTX, cbid as u32) };
        }
    }
    Ok(subscriber)
}

/// CUPTI calls this on the thread of each call's enter and exit, and of each resource event.
pub(crate) unsafe extern "C" fn on_callback(
    _user: *mut c_void,
    domain: D,
    cbid: sys::CUpti_CallbackId,
    data: *const c_void,
) {
    // A panic must not cross into the driver (nothing here is expected to panic): the line is lost, the
    // program goes on.
    // SAFETY: `data` is what CUPTI passed for this `domain` and `cbid`.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| unsafe { dispatch(domain, cbid, data) }));
}

/// # Safety
/// `data` is what CUPTI passed to [`on_callback`] with `domain` and `cbid`.
unsafe fn dispatch(domain: D, cbid: sys::CUpti_CallbackId, data: *const c_void) {
    if data.is_null() || YIELDED.load(Ordering::Relaxed) {
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
        // SAFETY: for the NVTX domain CUPTI passes a `CUpti_NvtxData`, valid during the callback.
        D::CUPTI_CB_DOMAIN_NVTX => unsafe { nvtx::on(cbid, data.cast()) },
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
        let start = timestamp();
        // SAFETY: `slot` points to the call's own u64, which no one else writes.
        unsafe { slot.write(start) };
        if DEPTH.with(|d| d.replace(d.get() + 1)) == 0 {
            // The library's thread holds back what this call may need, should it hold (`writer`).
            writer::in_call(start);
        }
        return;
    }
    let end = timestamp();
    let (entered, outermost) = DEPTH.with(|d| {
        let was = d.get();
        d.set(was.saturating_sub(1));
        (was > 0, was <= 1)
    });
    // A call in flight when the library subscribed (loaded into a running program: `attach`) returns
    // without its enter having been seen: its start is unknown, so it has no line.
    if !entered {
        return;
    }
    // SAFETY: the enter callback of this same call wrote it.
    let start = unsafe { slot.read() };
    // SAFETY: as above, for the call's correlation id and name (a C string CUPTI keeps for the whole run).
    let (corr, name) = unsafe { (addr_of!((*data).correlationId).read(), addr_of!((*data).functionName).read()) };
    // The hot path: one record into this thread's ring, nothing formatted or allocated (the name is CUPTI's).
    writer::api(domain, name, cbid, corr, start, end, outermost);
    // SAFETY: `data` is this exit callback's data, valid during it.
    let own = unsafe { launches::returned(domain == Domain::Runtime, cbid, data, corr, start, end) };
    if outermost {
        // SAFETY: `name` is null or CUPTI's C string, as read above.
        unsafe { gated::returned(corr, name, start, end) };
    }
    // The outermost call alone: a driver call that held inside a runtime call made it hold as well, and
    // the runtime call's location is the same stack seen from further out.
    let held = end.saturating_sub(start);
    if outermost {
        launches::held(cbid, corr, start, end, own, held > LOCATE_OVER.load(Ordering::Relaxed));
    }
    // The gate between its blocks records nothing (`writer::idle`): no location either.
    if outermost && held > LOCATE_OVER.load(Ordering::Relaxed) && !writer::idle() {
        // Past the budget, the Python frames alone (a few µs, where the walk through a framework's native
        // libraries can take milliseconds): a Python program's held calls keep their lines.
        let tid = writer::tid();
        if let Some(taken) = location::here(tid, corr, budget::may_locate(held)) {
            writer::located(taken);
            budget::spent(timestamp().saturating_sub(end));
        }
    }
    if outermost {
        writer::in_call(0);
    }
    if STREAMS_TRIES.with(Cell::get) > 0 {
        // SAFETY: as above, for the call's context.
        let context = unsafe { addr_of!((*data).context).read() };
        if !context.is_null() {
            let answered = default_streams(context.cast(), end);
            STREAMS_TRIES.with(|s| s.set(if answered { 0 } else { s.get() - 1 }));
        }
    }
}

/// Writes the ids CUPTI gives this thread's default streams (the legacy one, the per-thread one) in
/// `context`; whether CUPTI answered.
fn default_streams(context: cudarc::driver::sys::CUcontext, t: u64) -> bool {
    let id = |per_thread: u8| {
        let mut id = 0u32;
        // SAFETY: `context` is the live context of the call being returned from; the null stream with the
        // flag names a default stream; `id` is a valid place for the one u32 CUPTI writes.
        let code = unsafe { sys::cuptiGetStreamIdEx(context, std::ptr::null_mut(), per_thread, &mut id) };
        (code == sys::CUptiResult::CUPTI_SUCCESS).then_some(id)
    };
    match id(0) {
        Some(legacy) => {
            let tid = writer::tid();
            writer::append(&Line::DefaultStreams { tid, legacy, per_thread: id(1) }, t);
            true
        }
        None => false,
    }
}

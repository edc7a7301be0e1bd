//! CUPTI's callbacks: every runtime and driver API call (written when it returns, with its enter and exit
//! times) and the resource events a call may wait on (a context created, a module loaded).

use crate::cupti::{check, timestamp};
use crate::writer;
use async_lab_core::trace::format::{Domain, Failure, Line, Resource};
use cudarc::cupti::sys::{self, CUpti_CallbackDomain as D, CUpti_CallbackIdResource as R};
use std::ffi::{c_void, CStr};
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

thread_local! {
    static TID: u64 = {
        // SAFETY: gettid has no preconditions.
        (unsafe { libc::gettid() }) as u64
    };
}

fn tid() -> u64 {
    TID.with(|t| *t)
}

/// CUPTI calls this on the thread of each call's enter and exit, and of each resource event.
unsafe extern "C" fn on_callback(_user: *mut c_void, domain: D, cbid: sys::CUpti_CallbackId, data: *const c_void) {
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
            writer::write(&Line::Resource { event, t: timestamp(), tid: tid() });
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
    let (corr, name) = unsafe {
        let name = addr_of!((*data).functionName).read();
        let name = if name.is_null() { String::new() } else { CStr::from_ptr(name).to_string_lossy().into_owned() };
        (addr_of!((*data).correlationId).read(), name)
    };
    writer::write(&Line::Api { domain, name, cbid, tid: tid(), corr, start, end });
}

//! Another subscriber to CUPTI: CUPTI takes one, and the tracer holds it. Where `async-lab trace` preloads
//! this library (`LD_PRELOAD`), its `cuptiSubscribe` comes before CUPTI's for the program's libraries (a
//! profiler: PyTorch's kineto, ...): each attempt is written as a `Line::Conflict` naming the caller's file,
//! and forwarded to CUPTI, which refuses it where it takes one subscriber, and takes it beside the tracer where
//! the tracer subscribed as one of several (CUPTI 13.2 and later, `cupti::subscribe`): the line says which.
//! With [`YIELD_VAR`] set the tracer steps aside first: it flushes what it holds, unsubscribes and stops
//! writing, and the other subscriber gets CUPTI.

use crate::{activity, callbacks, cupti, location, writer};
use async_lab_trace_format::Line;
use cudarc::cupti::sys;
use std::ffi::{c_void, CStr};

/// Set to 1 by `async-lab trace --yield-cupti`.
pub const YIELD_VAR: &str = "ASYNC_LAB_YIELD_CUPTI";

/// The file of the first frame outside this library: the library that called.
fn caller() -> String {
    let mut found = String::new();
    backtrace::trace(|frame| match location::module_of((frame.ip() as usize).saturating_sub(1)) {
        Some((module, _)) if !module.rsplit('/').next().unwrap_or("").starts_with("libasync_lab_inject") => {
            found = module;
            false
        }
        _ => true,
    });
    found
}

/// What the tracer saw of another library's subscribing, before CUPTI answered it.
struct Seen {
    t: u64,
    library: String,
    yielded: bool,
}

/// Another library asks for a subscriber: who, and with [`YIELD_VAR`] the tracer steps aside first (flushes
/// what it holds, unsubscribes); `None` where the tracer holds no subscriber.
fn another_subscriber() -> Option<Seen> {
    if !callbacks::subscribed() || !writer::ours() {
        return None;
    }
    let yielded = std::env::var_os(YIELD_VAR).is_some_and(|v| v == "1");
    let seen = Seen { t: cupti::timestamp(), library: caller(), yielded };
    if yielded {
        activity::flush_all();
        callbacks::unsubscribe();
    }
    Some(seen)
}

/// Writes the conflict with CUPTI's answer to the other library: refused (CUPTI takes one subscriber), or
/// taken beside the tracer (a CUPTI that takes several).
fn answered(call: &str, seen: Option<Seen>, code: sys::CUptiResult) {
    let Some(s) = seen else { return };
    writer::write(&Line::Conflict {
        t: s.t,
        tid: writer::tid(),
        library: s.library,
        call: call.into(),
        yielded: s.yielded,
        accepted: Some(code == sys::CUptiResult::CUPTI_SUCCESS),
    });
    if s.yielded {
        writer::flush();
    }
}

/// CUPTI's own definition of `name`: the next one after this library's in the global scope, else the one
/// of the CUPTI already loaded (a library loaded in a local scope, as Python loads extension modules, is
/// not in the global one).
fn real(name: &CStr) -> *mut c_void {
    // SAFETY: dlsym only reads the loaded objects' symbol tables.
    let next = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if !next.is_null() {
        return next;
    }
    for soname in [c"libcupti.so.13", c"libcupti.so.12", c"libcupti.so"] {
        // SAFETY: RTLD_NOLOAD loads nothing: it only finds a library already loaded (and counts a reference
        // to it, which keeps a library the caller uses anyway).
        let handle = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if !handle.is_null() {
            // SAFETY: as above.
            let f = unsafe { libc::dlsym(handle, name.as_ptr()) };
            if !f.is_null() {
                return f;
            }
        }
    }
    std::ptr::null_mut()
}

/// `cuptiSubscribe`, as the program's libraries see it.
///
/// # Safety
/// As CUPTI's `cuptiSubscribe`.
#[no_mangle]
pub unsafe extern "C" fn cuptiSubscribe(
    subscriber: *mut sys::CUpti_SubscriberHandle,
    callback: sys::CUpti_CallbackFunc,
    userdata: *mut c_void,
) -> sys::CUptiResult {
    let seen = std::panic::catch_unwind(another_subscriber).ok().flatten();
    let f = real(c"cuptiSubscribe");
    if f.is_null() {
        return sys::CUptiResult::CUPTI_ERROR_NOT_INITIALIZED;
    }
    // SAFETY: CUPTI's `cuptiSubscribe`, of this signature, called with the caller's own arguments.
    let code = unsafe {
        let f: unsafe extern "C" fn(
            *mut sys::CUpti_SubscriberHandle,
            sys::CUpti_CallbackFunc,
            *mut c_void,
        ) -> sys::CUptiResult = std::mem::transmute(f);
        f(subscriber, callback, userdata)
    };
    let _ = std::panic::catch_unwind(|| answered("cuptiSubscribe", seen, code));
    code
}

/// `cuptiSubscribe_v2`, as the program's libraries see it.
///
/// # Safety
/// As CUPTI's `cuptiSubscribe_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuptiSubscribe_v2(
    subscriber: *mut sys::CUpti_SubscriberHandle,
    callback: sys::CUpti_CallbackFunc,
    userdata: *mut c_void,
    params: *mut sys::CUpti_SubscriberParams,
) -> sys::CUptiResult {
    let seen = std::panic::catch_unwind(another_subscriber).ok().flatten();
    let f = real(c"cuptiSubscribe_v2");
    if f.is_null() {
        return sys::CUptiResult::CUPTI_ERROR_NOT_INITIALIZED;
    }
    // SAFETY: CUPTI's `cuptiSubscribe_v2`, of this signature, called with the caller's own arguments.
    let code = unsafe {
        let f: unsafe extern "C" fn(
            *mut sys::CUpti_SubscriberHandle,
            sys::CUpti_CallbackFunc,
            *mut c_void,
            *mut sys::CUpti_SubscriberParams,
        ) -> sys::CUptiResult = std::mem::transmute(f);
        f(subscriber, callback, userdata, params)
    };
    let _ = std::panic::catch_unwind(|| answered("cuptiSubscribe_v2", seen, code));
    code
}

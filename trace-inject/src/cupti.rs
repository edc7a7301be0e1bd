//! Loading CUPTI at run time: the file `async-lab trace` found (named by `CUPTI_VAR`), or else the one the
//! system's library search finds. The binding (cudarc) opens CUPTI by its usual names; loading our file first
//! makes those names resolve to it (the loader matches a loaded library's soname), and the check below makes
//! sure they did.
//!
//! Subscribing ([`subscribe`]): a CUPTI of 13.2 or later is asked with `cuptiSubscribe_v2` to take several
//! subscribers, so that a profiler of the program (torch.profiler) may subscribe beside the tracer; where it
//! cannot (an older CUPTI, or a driver that lets one subscriber trace), the tracer takes CUPTI alone, as
//! before.

use crate::CUPTI_VAR;
use async_lab_trace_format::Failure;
use cudarc::cupti::sys;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

static LOADED: OnceLock<libloading::Library> = OnceLock::new();
/// CUPTI's API version (`cuptiGetVersion`), 0 where it did not answer: which fields its records have.
static VERSION: AtomicU32 = AtomicU32::new(0);

/// The first CUPTI API version that takes several subscribers (`cuptiSubscribe_v2`'s
/// `allowMultipleSubscribers`, and the per-subscriber activity functions): CUDA 13.2.
pub const SEVERAL_SUBSCRIBERS: u32 = 130_200;

/// Set to 1 to ask a CUPTI of 13.2 or later for several subscribers. Off by default: on the H200's driver 580,
/// CUPTI 13.5 took the tracer as one of several, then gave it no timestamps (`cuptiGetTimestamp` left every
/// call's times at 0) and still refused torch.profiler's subscriber; CUPTI's notes tie activity for several
/// subscribers to a newer driver (r610).
pub const SEVERAL_VAR: &str = "ASYNC_LAB_SEVERAL_SUBSCRIBERS";

fn several_wanted() -> bool {
    std::env::var_os(SEVERAL_VAR).is_some_and(|v| v == "1")
}

/// CUPTI's API version: 21 (CUDA 12.3) ... 28 (12.9 update 1), then `xxyyzz` from CUDA 13.0 (130001, 130500);
/// 0 where it did not answer.
pub fn version() -> u32 {
    VERSION.load(Ordering::Relaxed)
}

/// Loads CUPTI; its API version, or why it could not be loaded.
pub fn load() -> Result<Option<u32>, String> {
    if let Some(path) = std::env::var_os(CUPTI_VAR) {
        // SAFETY: loading CUPTI runs its initializers, which only set up CUPTI's own state; it is the library
        // the CUDA driver expects a tool to load at this point (inside cuInit's injection call).
        let lib = unsafe { libloading::Library::new(&path) }
            .map_err(|e| format!("cannot load CUPTI from {}: {e}", std::path::Path::new(&path).display()))?;
        let lib = LOADED.get_or_init(|| lib);
        // SAFETY: `is_culib_present` only tries to open libraries by name, and closes what it opened.
        if !unsafe { sys::is_culib_present() } {
            return Err(format!(
                "CUPTI at {} does not answer to its usual names (libcupti.so*)",
                std::path::Path::new(&path).display()
            ));
        }
        // SAFETY: `culib` returns the library the binding resolves every CUPTI call in; present, as just checked.
        let bound = unsafe { sys::culib() };
        // SAFETY: looking a symbol up reads the libraries' symbol tables; the pointers are compared, not called.
        let same = unsafe {
            match (lib.get::<*const ()>(b"cuptiGetVersion\0"), bound.get::<*const ()>(b"cuptiGetVersion\0")) {
                (Ok(a), Ok(b)) => *a == *b,
                _ => false,
            }
        };
        if !same {
            return Err(format!(
                "another CUPTI than {} is on the library path; put its folder first in LD_LIBRARY_PATH",
                std::path::Path::new(&path).display()
            ));
        }
    // SAFETY: as above: only tries to open libraries by name.
    } else if !unsafe { sys::is_culib_present() } {
        return Err("no CUPTI library (libcupti.so*) on the library path".into());
    }
    let mut version = 0u32;
    // SAFETY: `version` is a valid place for the one u32 cuptiGetVersion writes.
    let ok = unsafe { sys::cuptiGetVersion(&mut version) } == sys::CUptiResult::CUPTI_SUCCESS;
    VERSION.store(if ok { version } else { 0 }, Ordering::Relaxed);
    Ok(ok.then_some(version))
}

/// `CUpti_SubscriberParams` as CUPTI 13.5's `cupti_callbacks.h` declares it (13.2 added
/// `allowMultipleSubscribers`): declared here, since the binding's follows the one CUDA version it was made
/// for, and CUPTI reads only the fields `struct_size` covers.
#[repr(C)]
struct SubscriberParams {
    struct_size: usize,
    subscriber_name: *const c_char,
    old_subscriber_name: *mut c_char,
    old_subscriber_size: usize,
    allow_multiple_subscribers: u8,
    padding: [u8; 7],
}

/// `CUpti_SubscriberParams_STRUCT_SIZE`: up to the end of `padding`.
const SUBSCRIBER_PARAMS_SIZE: usize = std::mem::size_of::<SubscriberParams>();
/// `CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN`.
const OLD_NAME_LEN: usize = 64;

type SubscribeV2 = unsafe extern "C" fn(
    *mut sys::CUpti_SubscriberHandle,
    sys::CUpti_CallbackFunc,
    *mut c_void,
    *mut SubscriberParams,
) -> sys::CUptiResult;

/// The tracer's subscriber, and whether CUPTI took it as one of several.
#[derive(Clone, Copy, Debug)]
pub struct Subscriber {
    pub handle: sys::CUpti_SubscriberHandle,
    /// CUPTI (13.2 or later) took it allowing several subscribers: its activity goes through the
    /// per-subscriber functions (`activity`).
    pub several: bool,
}

/// Subscribes `callback`: with a CUPTI of 13.2 or later through `cuptiSubscribe_v2`, asking to allow several
/// subscribers, and where CUPTI cannot (a driver before r610 lets one subscriber trace activity) asking again
/// for CUPTI alone; with an older CUPTI through `cuptiSubscribe`. CUPTI already taken is
/// `Failure::CuptiTaken`, naming the tool that holds it where CUPTI says.
pub fn subscribe(callback: sys::CUpti_CallbackFunc) -> Result<Subscriber, (Failure, String)> {
    let taken = |holder: &str| {
        let by = if holder.is_empty() { String::new() } else { format!(" ({holder})") };
        (
            Failure::CuptiTaken,
            format!(
                "CUPTI already has a subscriber{by}: another tool (nsys, ncu, compute-sanitizer, ...) is tracing \
                 this program, and CUPTI allows one"
            ),
        )
    };
    let v2 = if version() >= SEVERAL_SUBSCRIBERS && several_wanted() {
        // SAFETY: looking a symbol up reads the bound library's symbol table; `cuptiSubscribe_v2` has the
        // signature `SubscribeV2` declares (cupti_callbacks.h, CUDA 13.0 and later).
        unsafe { sys::culib().get::<SubscribeV2>(b"cuptiSubscribe_v2\0").ok().map(|f| *f) }
    } else {
        None
    };
    if let Some(subscribe_v2) = v2 {
        let mut holder = [0 as c_char; OLD_NAME_LEN];
        for allow in [1u8, 0] {
            let mut params = SubscriberParams {
                struct_size: SUBSCRIBER_PARAMS_SIZE,
                subscriber_name: c"async-lab".as_ptr(),
                old_subscriber_name: holder.as_mut_ptr(),
                old_subscriber_size: holder.len(),
                allow_multiple_subscribers: allow,
                padding: [0; 7],
            };
            let mut handle: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
            // SAFETY: `handle` and `params` are valid places CUPTI reads and writes; `holder` holds
            // `old_subscriber_size` bytes for the name CUPTI may write; `callback` is the caller's `extern "C"`
            // function, alive as long as the process.
            let code = unsafe { subscribe_v2(&mut handle, callback, std::ptr::null_mut(), &mut params) };
            match code {
                sys::CUptiResult::CUPTI_SUCCESS => return Ok(Subscriber { handle, several: allow == 1 }),
                // Several subscribers cannot be had here: ask for CUPTI alone; taken even so: say by whom.
                sys::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED if allow == 0 => {
                    // SAFETY: CUPTI wrote a C string into `holder` (zeroed, so terminated however it wrote).
                    let name = unsafe { std::ffi::CStr::from_ptr(holder.as_ptr()) };
                    return Err(taken(&name.to_string_lossy()));
                }
                sys::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => {}
                // Any other answer (parameters this CUPTI reads otherwise): the older call below.
                _ => break,
            }
        }
    }
    let mut handle: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: `handle` is a valid place for the subscriber CUPTI writes; `callback` as above.
    let code = unsafe { sys::cuptiSubscribe(&mut handle, callback, std::ptr::null_mut()) };
    if code == sys::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED {
        return Err(taken(""));
    }
    check(code, "cuptiSubscribe")?;
    Ok(Subscriber { handle, several: false })
}

/// A CUPTI result as the failure a trace records: `Ok` on success, else the call's name and CUPTI's words.
pub fn check(code: sys::CUptiResult, call: &str) -> Result<(), (Failure, String)> {
    if code == sys::CUptiResult::CUPTI_SUCCESS {
        Ok(())
    } else {
        Err((Failure::CuptiError, format!("{call} failed: {}", error_words(code))))
    }
}

/// A CUPTI error in words: its name and CUPTI's own text.
pub fn error_words(code: sys::CUptiResult) -> String {
    let mut text: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: `text` is a valid place for the pointer cuptiGetResultString writes; the string it points to is
    // CUPTI's static text.
    let words = unsafe {
        if sys::cuptiGetResultString(code, &mut text) == sys::CUptiResult::CUPTI_SUCCESS && !text.is_null() {
            std::ffi::CStr::from_ptr(text).to_string_lossy().into_owned()
        } else {
            String::new()
        }
    };
    format!("{code:?}: {words}")
}

/// CUPTI's clock, in ns (the clock of every time in the trace); 0 where CUPTI does not answer.
pub fn timestamp() -> u64 {
    let mut t = 0u64;
    // SAFETY: `t` is a valid place for the one u64 cuptiGetTimestamp writes.
    unsafe { sys::cuptiGetTimestamp(&mut t) };
    t
}

//! Loading CUPTI at run time: the file `async-lab trace` found (named by `CUPTI_VAR`), or else the one the
//! system's library search finds. The binding (cudarc) opens CUPTI by its usual names; loading our file first
//! makes those names resolve to it (the loader matches a loaded library's soname), and the check below makes
//! sure they did.

use crate::CUPTI_VAR;
use async_lab_core::trace::format::Failure;
use cudarc::cupti::sys;
use std::sync::OnceLock;

static LOADED: OnceLock<libloading::Library> = OnceLock::new();

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
    Ok(ok.then_some(version))
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

//! Nothing lost when the program dies: handlers for SIGSEGV, SIGBUS, SIGABRT, SIGTERM and SIGINT flush the
//! trace (this library's lines and CUPTI's buffered GPU records) before the program's own handler or the
//! default action runs; `_exit` and `_Exit` (which skip `atexit`) flush first too, where `async-lab trace`
//! preloads this library (`LD_PRELOAD`) so that its definitions come before libc's; and a thread flushes
//! every [`FLUSH_MS`] (CUPTI's buffers whose records are complete, then the lines), which bounds what SIGKILL
//! loses.
//!
//! A signal the program handles itself (Python's SIGINT handler, which only sets a flag and raises
//! `KeyboardInterrupt` later) is flushed and passed on, and no `signal` line is written: the program goes
//! on. A handler the program installs after CUDA started replaces this one: its signal is then covered by
//! the periodic flush alone.

use crate::{activity, cupti, writer};
use async_lab_trace_format::Line;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// How often the flusher thread has CUPTI hand back its complete buffers and hands the lines to the file:
/// a program killed 0.3 s after a call keeps the call and its GPU records (a flush comes within any 0.2 s).
pub const FLUSH_MS: u64 = 200;

const SIGNALS: [(c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGABRT, "SIGABRT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGINT, "SIGINT"),
];

/// The handlers the program had before, by signal number.
static OLD: Mutex<Vec<(c_int, libc::sigaction)>> = Mutex::new(Vec::new());
/// The trace is set up: the handlers and `_exit` flush only then.
static TRACING: AtomicBool = AtomicBool::new(false);
/// The `signal` line is written once.
static ENDED: AtomicBool = AtomicBool::new(false);

/// Installs the handlers and starts the flusher thread.
pub fn install() {
    TRACING.store(true, Ordering::SeqCst);
    let mut old = OLD.lock().unwrap_or_else(|e| e.into_inner());
    for (sig, _) in SIGNALS {
        // SAFETY: a zeroed sigaction is a valid value (no handler, empty mask) for sigaction to fill or read.
        let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
        new.sa_sigaction = on_signal as *const () as usize;
        new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: as above.
        let mut was: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: `new.sa_mask` is a valid sigset; both pointers point to live sigactions; `on_signal` has
        // the SA_SIGINFO handler's signature and lives as long as the process.
        unsafe {
            libc::sigemptyset(&mut new.sa_mask);
            if libc::sigaction(sig, &new, &mut was) == 0 {
                old.push((sig, was));
            }
        }
    }
    drop(old);
    let _ = std::thread::Builder::new().name("async-lab-flush".into()).spawn(|| loop {
        std::thread::sleep(std::time::Duration::from_millis(FLUSH_MS));
        if !writer::ours() {
            return;
        }
        activity::hand_back();
        writer::flush();
    });
}

/// Flushes everything as the process ends without `exit`: the `signal` line, CUPTI's records, the lines.
fn flush_at_end(signal: Option<&str>) {
    if !TRACING.load(Ordering::SeqCst) || !writer::ours() {
        return;
    }
    writer::in_handler(|| {
        activity::flush_all();
        if let Some(signal) = signal {
            if !ENDED.swap(true, Ordering::SeqCst) {
                writer::write(&Line::Signal { t: cupti::timestamp(), signal: signal.into() });
            }
        }
        writer::flush();
    });
}

extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let name = SIGNALS.iter().find(|(s, _)| *s == sig).map_or("signal", |(_, n)| n);
    // The program's own handler, where it had one (tried: the lock is never held while a signal can come
    // but at install time).
    let old = OLD.try_lock().ok().and_then(|o| o.iter().find(|(s, _)| *s == sig).map(|(_, a)| *a));
    let handled = old.is_some_and(|a| a.sa_sigaction != libc::SIG_DFL && a.sa_sigaction != libc::SIG_IGN);
    // A panic must not unwind out of a signal handler.
    let _ = std::panic::catch_unwind(|| flush_at_end((!handled).then_some(name)));
    match old {
        Some(a) if handled => {
            // SAFETY: the program installed this handler for `sig` with these flags; it is called as the
            // kernel would have called it, with the same arguments.
            unsafe {
                if a.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                        std::mem::transmute(a.sa_sigaction);
                    f(sig, info, context);
                } else {
                    let f: extern "C" fn(c_int) = std::mem::transmute(a.sa_sigaction);
                    f(sig);
                }
            }
        }
        _ => {
            // The default action: the signal again, with the default disposition, once this handler
            // returns (it is blocked until then); a fault re-faults on return as well.
            // SAFETY: a zeroed sigaction with SIG_DFL is the default disposition; raise has no
            // preconditions.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigemptyset(&mut dfl.sa_mask);
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
                libc::raise(sig);
            }
        }
    }
}

/// libc's definition of `name` (the next one after this library's).
fn next(name: &std::ffi::CStr) -> Option<unsafe extern "C" fn(c_int) -> !> {
    // SAFETY: dlsym only reads the loaded objects' symbol tables.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    // SAFETY: `_exit` and `_Exit` are `void f(int)` that never return.
    (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int) -> !>(p) })
}

/// `_exit`, where the program ends without `exit` (Python's `os._exit`, a forked child): the trace first.
///
/// # Safety
/// As libc's `_exit`.
#[no_mangle]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    let _ = std::panic::catch_unwind(|| flush_at_end(Some("_exit")));
    match next(c"_exit") {
        // SAFETY: libc's own `_exit`.
        Some(f) => unsafe { f(status) },
        // SAFETY: exit_group ends the process; it has no other preconditions.
        None => unsafe {
            libc::syscall(libc::SYS_exit_group, status);
            std::hint::unreachable_unchecked()
        },
    }
}

/// `_Exit`: as `_exit`.
///
/// # Safety
/// As libc's `_Exit`.
#[no_mangle]
#[allow(non_snake_case)]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    let _ = std::panic::catch_unwind(|| flush_at_end(Some("_exit")));
    match next(c"_Exit") {
        // SAFETY: libc's own `_Exit`.
        Some(f) => unsafe { f(status) },
        // SAFETY: as in `_exit`.
        None => unsafe {
            libc::syscall(libc::SYS_exit_group, status);
            std::hint::unreachable_unchecked()
        },
    }
}

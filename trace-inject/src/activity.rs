//! CUPTI's activity records: the GPU's copies, memsets and kernels and the host's synchronizations, each
//! with its start, end, stream and the correlation id of the call that made it; the events recorded in
//! streams, which say what stream an event synchronization waited for; and the driver's overheads (a lazy
//! load, a launch that waited for room in a full queue), with the call that caused them. CUPTI fills buffers
//! this module hands it; each buffer CUPTI hands back goes to the library's thread (`writer`), which reads
//! its records into the trace and frees it, so memory stays bounded and nothing is read on the thread CUPTI
//! calls back on.
//!
//! CUPTI hands a buffer back when it is full, and whenever [`hand_back`] asks for every buffer whose records
//! are all complete (the library's periodic flush does): so a program killed by SIGKILL
//! loses only the records of work that ended after the last such flush, or that shares a buffer with work
//! still running. Each buffer comes back once, and is freed once written; only the flush at the end (exit, a
//! signal) also hands back buffers with records still incomplete, whose work never ended.
//!
//! Where CUPTI took the tracer as one of several subscribers (`cupti::Subscriber::several`), buffers and
//! record kinds are the tracer's own (the per-subscriber functions of CUPTI 13.2): a profiler that subscribes
//! beside it has its own.

use crate::cupti::{check, Subscriber};
use crate::{buffers, writer};
use async_lab_trace_format::{Failure, KernelRecords, Line, OverheadKind};
use cudarc::cupti::sys::{self, CUpti_ActivityKind as K};
use std::ffi::c_void;
use std::ptr::addr_of;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// One activity buffer, where [`BUFFER_VAR`] does not say: CUPTI's samples use 8 MiB. A buffer whose records
/// are not all complete (a busy GPU always has work in flight) comes back only when full: a smaller one comes
/// back sooner, at the price of one more hand-back (a write to the file) per this many bytes of records.
const BUFFER_DEFAULT: usize = 1 << 20;
/// The size of a buffer in KiB (for measuring what the size costs).
const BUFFER_VAR: &str = "ASYNC_LAB_BUFFER_KIB";
/// Set to 0: buffers come back only when full, not on the periodic flush (for measuring what it costs).
const HAND_BACK_VAR: &str = "ASYNC_LAB_FLUSH_RECORDS";

static BUFFER: AtomicUsize = AtomicUsize::new(BUFFER_DEFAULT);
static HAND_BACK: AtomicBool = AtomicBool::new(true);
/// The tracer's subscriber where CUPTI took it as one of several (its records are read through it).
static SUBSCRIBER: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

const KINDS: [(K, &str); 4] = [
    (K::CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy"),
    (K::CUPTI_ACTIVITY_KIND_MEMSET, "memset"),
    (K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel"),
    (K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "sync"),
];
/// The kinds an older CUPTI may lack: enabled where it has them.
const OPTIONAL: [(K, &str); 2] =
    [(K::CUPTI_ACTIVITY_KIND_CUDA_EVENT, "event"), (K::CUPTI_ACTIVITY_KIND_OVERHEAD, "overhead")];
/// The kinds enabled at the start, by their words.
static ENABLED: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Kernels are recorded in windows (`windows`).
static WINDOWS: AtomicBool = AtomicBool::new(false);
/// What could not be enabled, for `note` lines.
static NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// CUPTI 13.2's per-subscriber functions, looked up in the loaded CUPTI (the binding's are for one CUDA
/// version, and an older CUPTI has none).
type RegisterV2 = unsafe extern "C" fn(
    sys::CUpti_SubscriberHandle,
    sys::CUpti_BuffersCallbackRequestFunc_v2,
    sys::CUpti_BuffersCallbackCompleteFunc_v2,
) -> sys::CUptiResult;
type EnableV2 = unsafe extern "C" fn(sys::CUpti_SubscriberHandle, K, *mut c_void) -> sys::CUptiResult;
type DisableV2 = unsafe extern "C" fn(sys::CUpti_SubscriberHandle, K, *mut c_void) -> sys::CUptiResult;
type NextRecordV2 = unsafe extern "C" fn(
    sys::CUpti_SubscriberHandle,
    *mut u8,
    usize,
    *mut *mut sys::CUpti_Activity,
) -> sys::CUptiResult;
type DroppedV2 = unsafe extern "C" fn(
    sys::CUpti_SubscriberHandle,
    cudarc::driver::sys::CUcontext,
    u32,
    *mut usize,
) -> sys::CUptiResult;

/// `name` in the loaded CUPTI, where it has it.
///
/// # Safety
/// `F` is the function type CUPTI's header declares for `name`.
unsafe fn lookup<F: Copy>(name: &[u8]) -> Option<F> {
    // SAFETY: looking a symbol up reads the bound library's symbol table; the caller names its type.
    unsafe { sys::culib().get::<F>(name).ok().map(|f| *f) }
}

/// Registers the buffer callbacks and enables the record kinds, for `subscriber` alone where CUPTI took it
/// as one of several and lets several record activity; whether it did.
pub fn enable(subscriber: &Subscriber) -> Result<bool, (Failure, String)> {
    if let Some(kib) = std::env::var(BUFFER_VAR).ok().and_then(|v| v.parse::<usize>().ok()).filter(|&k| k >= 64) {
        BUFFER.store(kib << 10, Ordering::Relaxed);
    }
    HAND_BACK.store(std::env::var_os(HAND_BACK_VAR).is_none_or(|v| v != "0"), Ordering::Relaxed);
    buffers::fill(BUFFER.load(Ordering::Relaxed));
    let register_v2 = if subscriber.several {
        // SAFETY: `RegisterV2` is cuptiActivityRegisterCallbacks_v2's type (cupti_activity.h, 13.2).
        unsafe { lookup::<RegisterV2>(b"cuptiActivityRegisterCallbacks_v2\0") }
    } else {
        None
    };
    // CUPTI 13.5 on the H200's driver 580 took the tracer as one of several subscribers, then answered
    // CUPTI_ERROR_NOT_COMPATIBLE here (activity for several subscribers needs a driver of r610 or later): the
    // records then go through the one-client functions, as with an older CUPTI.
    let mut several = false;
    if let Some(register_v2) = register_v2 {
        // SAFETY: the subscriber CUPTI just made; both callbacks are `extern "C"` functions with CUPTI's
        // signatures, alive as long as the process.
        let code = unsafe { register_v2(subscriber.handle, Some(requested_v2), Some(completed_v2)) };
        if code != sys::CUptiResult::CUPTI_ERROR_NOT_COMPATIBLE {
            check(code, "cuptiActivityRegisterCallbacks_v2")?;
            SUBSCRIBER.store(subscriber.handle.cast(), Ordering::Relaxed);
            several = true;
        }
    }
    if !several {
        // SAFETY: both are `extern "C"` functions with CUPTI's signatures, alive as long as the process.
        let code = unsafe { sys::cuptiActivityRegisterCallbacks(Some(requested), Some(completed)) };
        check(code, "cuptiActivityRegisterCallbacks")?;
    }
    if std::env::var_os(crate::switches::PER_THREAD_BUFFERS_VAR).is_some_and(|v| v == "1") {
        let mut on: u8 = 1;
        let mut size = std::mem::size_of::<u8>();
        // SAFETY: both pointers are to locals alive for the call; the attribute's value is one byte (0 or 1).
        let code = unsafe {
            sys::cuptiActivitySetAttribute(
                sys::CUpti_ActivityAttribute::CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
                &mut size,
                (&raw mut on).cast(),
            )
        };
        if code != sys::CUptiResult::CUPTI_SUCCESS {
            eprintln!("async-lab trace: CUPTI kept one activity buffer for every thread ({code:?})");
        }
    }
    // Each kind as `switches::kind` says: by default copies, memsets and overheads, kernels in windows.
    let mut enabled = relock(&ENABLED);
    enabled.clear();
    for (kind, word) in KINDS {
        if crate::switches::kind(word) {
            check(set(kind, true), "cuptiActivityEnable")?;
            enabled.push(word.to_owned());
        }
    }
    // Kernels in windows: on from the start (the start-up window, `windows`).
    // Where CUPTI refuses, kernels are not recorded at all (the trace says so: `record-kinds` and a note).
    let windows = !crate::switches::kind("kernel") && crate::switches::kind("windows");
    if windows {
        let code = set(K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true);
        if code == sys::CUptiResult::CUPTI_SUCCESS {
            WINDOWS.store(true, Ordering::Relaxed);
        } else {
            relock(&NOTES).push(format!(
                "kernel records off: cuptiActivityEnable(CONCURRENT_KERNEL) failed: {}",
                crate::cupti::error_words(code)
            ));
        }
    }
    // Optional: a CUPTI without event records (before CUDA 12.8) still traces; its event waits then name no
    // stream. `ASYNC_LAB_TRACE_EVENTS=0` leaves them off, for measuring what they cost.
    if std::env::var_os("ASYNC_LAB_TRACE_EVENTS").is_none_or(|v| v != "0")
        && crate::switches::kind("event")
        && set(K::CUPTI_ACTIVITY_KIND_CUDA_EVENT, true) == sys::CUptiResult::CUPTI_SUCCESS
    {
        enabled.push("event".into());
    }
    // Optional: a CUPTI without overhead records still traces, by the rules that do without them.
    if crate::switches::kind("overhead")
        && set(K::CUPTI_ACTIVITY_KIND_OVERHEAD, true) == sys::CUptiResult::CUPTI_SUCCESS
    {
        enabled.push("overhead".into());
    }
    // For measuring only: what CUPTI's API records would cost in place of callbacks (no line is made of them).
    if crate::switches::kind("api") {
        let _ = set(K::CUPTI_ACTIVITY_KIND_RUNTIME, true);
        let _ = set(K::CUPTI_ACTIVITY_KIND_DRIVER, true);
    }
    Ok(several)
}

/// Enables (`on`) or disables record kind `kind`, for the tracer's subscriber alone where CUPTI took it as
/// one of several.
fn set(kind: K, on: bool) -> sys::CUptiResult {
    let handle = SUBSCRIBER.load(Ordering::Relaxed);
    if on {
        // SAFETY: `EnableV2` is cuptiActivityEnable_v2's type (cupti_activity.h, 13.2).
        match (handle.is_null(), unsafe { lookup::<EnableV2>(b"cuptiActivityEnable_v2\0") }) {
            // SAFETY: `handle` is the tracer's live subscriber; a null configuration asks for every field.
            (false, Some(enable_v2)) => unsafe { enable_v2(handle.cast(), kind, std::ptr::null_mut()) },
            // SAFETY: enabling a record kind has no pointer arguments.
            _ => unsafe { sys::cuptiActivityEnable(kind) },
        }
    } else {
        // SAFETY: `DisableV2` is cuptiActivityDisable_v2's type (cupti_activity.h, 13.2).
        match (handle.is_null(), unsafe { lookup::<DisableV2>(b"cuptiActivityDisable_v2\0") }) {
            // SAFETY: `handle` is the tracer's live subscriber.
            (false, Some(disable_v2)) => unsafe { disable_v2(handle.cast(), kind, std::ptr::null_mut()) },
            // SAFETY: disabling a record kind has no pointer arguments.
            _ => unsafe { sys::cuptiActivityDisable(kind) },
        }
    }
}

/// Whether kernels are recorded in windows (`windows`) rather than always or never.
pub fn windows() -> bool {
    WINDOWS.load(Ordering::Relaxed)
}

/// Switches the kernel records on or off (a window opens or closes); CUPTI's error in words where it refused.
pub fn kernels(on: bool) -> Result<(), String> {
    let code = set(K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, on);
    if code == sys::CUptiResult::CUPTI_SUCCESS {
        Ok(())
    } else {
        let call = if on { "cuptiActivityEnable" } else { "cuptiActivityDisable" };
        Err(format!("{call}(CONCURRENT_KERNEL) failed: {}", crate::cupti::error_words(code)))
    }
}

/// Switches every kind enabled at the start off (`paused`) or on again: the gate between its blocks.
pub fn pause(paused: bool) -> Result<(), String> {
    let words = relock(&ENABLED).clone();
    let mut failed = Vec::new();
    for (kind, word) in KINDS.iter().chain(&OPTIONAL) {
        if words.iter().any(|w| w == word) {
            let code = set(*kind, !paused);
            if code != sys::CUptiResult::CUPTI_SUCCESS {
                failed.push(format!("{word}: {}", crate::cupti::error_words(code)));
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} failed: {}",
            if paused { "cuptiActivityDisable" } else { "cuptiActivityEnable" },
            failed.join("; ")
        ))
    }
}

/// The `record-kinds` line: the kinds enabled at the start, and which kernels have a record; then a `note` for
/// what could not be enabled.
pub fn record_kinds() -> Vec<Line> {
    let mut lines = vec![kinds_line()];
    let t = crate::cupti::timestamp();
    lines.extend(relock(&NOTES).drain(..).map(|message| Line::Note { t, message }));
    lines
}

fn kinds_line() -> Line {
    let kinds = relock(&ENABLED).clone();
    let kernels = if kinds.iter().any(|k| k == "kernel") {
        KernelRecords::All
    } else if windows() {
        KernelRecords::Windows
    } else {
        KernelRecords::None
    };
    Line::RecordKinds { kinds, kernels }
}

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Asks CUPTI for every buffer whose records are all complete, full or not (the periodic flush): none is
/// handed back twice, and none whose work is still running.
pub fn hand_back() {
    // The buffers CUPTI will ask for next, made ready here rather than on the program's thread.
    buffers::fill(BUFFER.load(Ordering::Relaxed));
    if HAND_BACK.load(Ordering::Relaxed) {
        // SAFETY: no pointer arguments; 0 is the default flush (complete buffers only).
        unsafe { sys::cuptiActivityFlushAll(0) };
    }
}

/// Hands every record CUPTI still holds to `completed` (at exit, and in the signal handlers).
pub fn flush_all() {
    // SAFETY: no pointer arguments; 1 is CUPTI_ACTIVITY_FLAG_FLUSH_FORCED (also incomplete buffers).
    unsafe { sys::cuptiActivityFlushAll(1) };
}

unsafe extern "C" fn requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    // A buffer made ready beforehand (`buffers`): CUPTI calls this on the program's thread.
    let (p, len) = buffers::take(BUFFER.load(Ordering::Relaxed));
    // SAFETY: CUPTI passes valid places for the three answers; a null buffer tells it to drop records.
    unsafe {
        *buffer = p;
        *size = if p.is_null() { 0 } else { len };
        *max_records = 0;
    }
}

unsafe extern "C" fn requested_v2(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
    _info: *mut sys::CUpti_BufferCallbackRequestInfo,
) {
    // SAFETY: CUPTI's places, as for `requested`.
    unsafe { requested(buffer, size, max_records) }
}

unsafe extern "C" fn completed(
    _ctx: cudarc::driver::sys::CUcontext,
    _stream_id: u32,
    buffer: *mut u8,
    size: usize,
    valid: usize,
) {
    // SAFETY: CUPTI's arguments, as `hand_over` requires.
    unsafe { hand_over(buffer, size, valid) }
}

unsafe extern "C" fn completed_v2(
    buffer: *mut u8,
    size: usize,
    valid: usize,
    _info: *mut sys::CUpti_BufferCallbackCompleteInfo,
) {
    // SAFETY: CUPTI's arguments, as `hand_over` requires.
    unsafe { hand_over(buffer, size, valid) }
}

/// Hands a buffer CUPTI is done with to the library's thread (`writer`), which reads its records on its next
/// pass and frees it: nothing is read or formatted on the thread CUPTI calls back on (it may be the program's).
///
/// # Safety
/// `buffer` is null or one `requested` made with `size` bytes, holding `valid` bytes of records CUPTI wrote,
/// and CUPTI is done with it.
unsafe fn hand_over(buffer: *mut u8, size: usize, valid: usize) {
    if buffer.is_null() {
        return;
    }
    writer::completed(Box::new(Completed { buffer, size, valid }));
}

/// A buffer CUPTI handed back, its records not yet read; freed when dropped.
struct Completed {
    buffer: *mut u8,
    size: usize,
    valid: usize,
}

// SAFETY: once CUPTI handed it back, the buffer is ours alone (CUPTI never touches it again): whichever thread
// holds the `Completed` may read and free it, once.
unsafe impl Send for Completed {}

impl Drop for Completed {
    fn drop(&mut self) {
        // SAFETY: `requested` handed CUPTI this buffer from `buffers` with this size (CUPTI hands back the size
        // it was given), and CUPTI is done with it; a `Completed` is dropped once.
        unsafe { buffers::give_back(self.buffer, self.size) };
    }
}

impl writer::Records for Completed {
    /// The lines of its records, and CUPTI's count of dropped ones.
    fn lines(&self) -> Vec<Line> {
        // A panic must not unwind through the library's thread: the batch's lines are lost, the buffer is
        // still freed.
        // SAFETY: `buffer` is one `requested` made, holding `valid` bytes of records CUPTI wrote.
        std::panic::catch_unwind(|| unsafe { read_records(self.buffer, self.valid) }).unwrap_or_default()
    }
}

/// The records of a buffer CUPTI handed back, and CUPTI's count of dropped ones.
///
/// # Safety
/// `buffer` is one `requested` made, holding `valid` bytes of records CUPTI wrote.
unsafe fn read_records(buffer: *mut u8, valid: usize) -> Vec<Line> {
    let handle = SUBSCRIBER.load(Ordering::Relaxed);
    // The subscriber's own record walk and dropped count where it has them (CUPTI 13.3), else the global ones.
    let (next_v2, dropped_v2) = if handle.is_null() {
        (None, None)
    } else {
        // SAFETY: the types are those of cupti_activity.h (13.3) for these names.
        unsafe {
            (
                lookup::<NextRecordV2>(b"cuptiActivityGetNextRecord_v2\0"),
                lookup::<DroppedV2>(b"cuptiActivityGetNumDroppedRecords_v2\0"),
            )
        }
    };
    let mut lines = Vec::new();
    let mut record: *mut sys::CUpti_Activity = std::ptr::null_mut();
    loop {
        // SAFETY: `buffer` is one `requested` made, holding `valid` bytes of records that CUPTI wrote; each
        // record pointer it hands back points inside it; `handle` is the tracer's live subscriber.
        let code = unsafe {
            match next_v2 {
                Some(next) => next(handle.cast(), buffer, valid, &mut record),
                None => sys::cuptiActivityGetNextRecord(buffer, valid, &mut record),
            }
        };
        if code != sys::CUptiResult::CUPTI_SUCCESS {
            break;
        }
        // SAFETY: as above.
        if let Some(line) = unsafe { line_of(record) } {
            lines.push(line);
        }
    }
    let mut dropped = 0usize;
    // SAFETY: a null context and stream 0 ask for the count of the global queue (every buffer is global since
    // CUDA 6.0); `dropped` is a valid place for the count.
    unsafe {
        match dropped_v2 {
            Some(f) => f(handle.cast(), std::ptr::null_mut(), 0, &mut dropped),
            None => sys::cuptiActivityGetNumDroppedRecords(std::ptr::null_mut(), 0, &mut dropped),
        }
    };
    if dropped > 0 {
        lines.push(Line::Dropped { records: dropped as u64 });
    }
    lines
}

/// The trace line of one record, for the kinds enabled. Fields are read one by one from the start of each
/// record (the part every version of the record shares), never the whole record as a Rust value.
///
/// # Safety
/// `r` points to a record CUPTI wrote in a buffer of ours.
unsafe fn line_of(r: *const sys::CUpti_Activity) -> Option<Line> {
    // SAFETY: every record begins with its 32-bit kind.
    let kind = unsafe { r.cast::<u32>().read() };
    macro_rules! field {
        ($ty:ty, $f:ident) => {
            // SAFETY: a record of this kind is at least a `$ty`, whose first fields every later version keeps;
            // `read_unaligned` since the records are packed.
            unsafe { addr_of!((*r.cast::<$ty>()).$f).read_unaligned() }
        };
    }
    if kind == K::CUPTI_ACTIVITY_KIND_MEMCPY as u32 {
        type M = sys::CUpti_ActivityMemcpy;
        Some(Line::Memcpy {
            copy_kind: field!(M, copyKind),
            src_kind: field!(M, srcKind),
            dst_kind: field!(M, dstKind),
            bytes: field!(M, bytes),
            start: field!(M, start),
            end: field!(M, end),
            stream: field!(M, streamId),
            corr: field!(M, correlationId),
        })
    } else if kind == K::CUPTI_ACTIVITY_KIND_MEMSET as u32 {
        type M = sys::CUpti_ActivityMemset;
        Some(Line::Memset {
            bytes: field!(M, bytes),
            start: field!(M, start),
            end: field!(M, end),
            stream: field!(M, streamId),
            corr: field!(M, correlationId),
        })
    } else if kind == K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as u32 {
        type M = sys::CUpti_ActivityKernel4;
        let name: *const std::ffi::c_char = field!(M, name);
        let name = if name.is_null() {
            String::new()
        } else {
            // SAFETY: a non-null name is a C string CUPTI keeps at least while the buffer is ours.
            unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned()
        };
        Some(Line::Kernel {
            name,
            start: field!(M, start),
            end: field!(M, end),
            stream: field!(M, streamId),
            corr: field!(M, correlationId),
        })
    } else if kind == K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION as u32 {
        type M = sys::CUpti_ActivitySynchronization;
        // SAFETY: as in `field!`; the type is a 32-bit C enum, read as the integer it is.
        let sync_type = unsafe { addr_of!((*r.cast::<M>()).type_).cast::<u32>().read_unaligned() };
        let stream: u32 = field!(M, streamId);
        let event: u32 = field!(M, cudaEventId);
        // CUPTI's "no value" (CUPTI_SYNCHRONIZATION_INVALID_VALUE) where the field does not apply.
        let value = |v: u32| (v != u32::MAX).then_some(v);
        Some(Line::Sync {
            sync_type,
            start: field!(M, start),
            end: field!(M, end),
            stream: value(stream),
            corr: field!(M, correlationId),
            event: value(event),
        })
    } else if kind == K::CUPTI_ACTIVITY_KIND_CUDA_EVENT as u32 {
        type M = sys::CUpti_ActivityCudaEvent;
        Some(Line::Event { event: field!(M, eventId), stream: field!(M, streamId), corr: field!(M, correlationId) })
    } else if kind == K::CUPTI_ACTIVITY_KIND_OVERHEAD as u32 {
        // SAFETY: `r` is an overhead record of the loaded CUPTI, of its version.
        unsafe { overhead_of(r, crate::cupti::version()) }
    } else {
        None
    }
}

/// The trace line of an overhead record written by a CUPTI of API `version`, for the driver's overheads (a
/// lazy load, a full launch queue, a compilation); `None` for CUPTI's own. Its details, where CUPTI attached
/// them, are freed here, as CUPTI asks.
///
/// # Safety
/// `r` points to an overhead record that a CUPTI of API `version` wrote: `CUpti_ActivityOverhead` before 21
/// (CUDA 12.3), `CUpti_ActivityOverhead2` (with the correlation id) from 21, `CUpti_ActivityOverhead3` (with
/// the pointer to its details, which the client frees) from 22 (CUDA 12.4) and in every 13.x (130000 on).
unsafe fn overhead_of(r: *const sys::CUpti_Activity, version: u32) -> Option<Line> {
    type M = sys::CUpti_ActivityOverhead3;
    macro_rules! field {
        ($f:ident) => {
            // SAFETY: every version of the record begins with the fields of `CUpti_ActivityOverhead`, and the
            // later fields are read only for the versions that have them (below); unaligned as the records
            // are packed.
            unsafe { addr_of!((*r.cast::<M>()).$f).read_unaligned() }
        };
    }
    // The two kinds are 32-bit C enums, read as the integers they are: a newer CUPTI may write values this
    // binding does not know.
    // SAFETY: as in `field!`.
    let (raw, object) = unsafe {
        (
            addr_of!((*r.cast::<M>()).overheadKind).cast::<u32>().read_unaligned(),
            addr_of!((*r.cast::<M>()).objectKind).cast::<u32>().read_unaligned(),
        )
    };
    type O = sys::CUpti_ActivityOverheadKind;
    let corr = if version >= 21 { Some(field!(correlationId)).filter(|&c| c != 0) } else { None };
    let data: *mut c_void = if version >= 22 { field!(overheadData) } else { std::ptr::null_mut() };
    let full = O::CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL as u32;
    let queue_length = (raw == full && !data.is_null()).then(|| {
        // SAFETY: a command-buffer-full record's details are a `CUpti_ActivityOverheadCommandBufferFullData`.
        unsafe { data.cast::<sys::CUpti_ActivityOverheadCommandBufferFullData>().read_unaligned().commandBufferLength }
    });
    if !data.is_null() {
        // SAFETY: CUPTI allocated the details for the client to free with `free`, once; nothing reads them after.
        unsafe { libc::free(data) };
    }
    let kind = match raw {
        k if k == O::CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING as u32 => OverheadKind::LazyFunctionLoading,
        k if k == O::CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING as u32 => {
            OverheadKind::RuntimeTriggeredModuleLoading
        }
        k if k == full => OverheadKind::CommandBufferFull,
        k if k == O::CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER as u32 => OverheadKind::DriverCompiler,
        // CUPTI's own overheads (its buffers, its instrumentation): not the program's.
        _ => return None,
    };
    let id: sys::CUpti_ActivityObjectKindId = field!(objectId);
    // SAFETY: every bit pattern of the union is integers; for a stream object it holds the device, context
    // and stream ids (`dcs`), and for any other the value is not used.
    let stream_id = unsafe { id.dcs.streamId };
    let stream = (object == sys::CUpti_ActivityObjectKind::CUPTI_ACTIVITY_OBJECT_STREAM as u32).then_some(stream_id);
    Some(Line::Overhead { kind, start: field!(start), end: field!(end), corr, stream, queue_length })
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_lab_trace_format::Line;

    /// An 8-byte-aligned, zeroed buffer as large as any record read here.
    fn buffer() -> Vec<u64> {
        vec![0u64; 64]
    }

    /// Writes `value` into the record in `buf` at the field `f` of `$ty`.
    macro_rules! put {
        ($buf:expr, $ty:ty, $f:ident, $value:expr) => {{
            let r = $buf.as_mut_ptr().cast::<$ty>();
            // SAFETY: the buffer is larger than `$ty` and 8-byte aligned; the field is written as bytes,
            // unaligned as the packed layout may be, without forming a reference to the record.
            unsafe { std::ptr::addr_of_mut!((*r).$f).write_unaligned($value) }
        }};
    }

    fn kind(buf: &mut [u64], k: K) {
        // SAFETY: every record begins with its 32-bit kind; the buffer is larger than 4 bytes.
        unsafe { buf.as_mut_ptr().cast::<u32>().write(k as u32) }
    }

    fn read(buf: &[u64]) -> Option<Line> {
        // SAFETY: the buffer holds a record of the kind written in it, with every field `line_of` reads.
        unsafe { line_of(buf.as_ptr().cast()) }
    }

    #[test]
    fn a_copy_record_reads_its_kinds_bytes_times_stream_and_correlation() {
        type M = sys::CUpti_ActivityMemcpy;
        let mut b = buffer();
        kind(&mut b, K::CUPTI_ACTIVITY_KIND_MEMCPY);
        put!(b, M, copyKind, 1u8);
        put!(b, M, srcKind, 2u8);
        put!(b, M, dstKind, 3u8);
        put!(b, M, bytes, 2u64 << 30);
        put!(b, M, start, 100u64);
        put!(b, M, end, 200u64);
        put!(b, M, streamId, 13u32);
        put!(b, M, correlationId, 122u32);
        let want = Line::Memcpy {
            copy_kind: 1,
            src_kind: 2,
            dst_kind: 3,
            bytes: 2 << 30,
            start: 100,
            end: 200,
            stream: 13,
            corr: 122,
        };
        assert_eq!(read(&b), Some(want));
    }

    #[test]
    fn a_kernel_record_reads_its_name() {
        type M = sys::CUpti_ActivityKernel4;
        let name = c"sleep_cycles";
        let mut b = buffer();
        kind(&mut b, K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        put!(b, M, start, 5u64);
        put!(b, M, end, 9u64);
        put!(b, M, streamId, 7u32);
        put!(b, M, correlationId, 3u32);
        put!(b, M, name, name.as_ptr());
        assert_eq!(read(&b), Some(Line::Kernel { name: "sleep_cycles".into(), start: 5, end: 9, stream: 7, corr: 3 }));
    }

    #[test]
    fn memset_and_synchronization_records_and_unknown_kinds() {
        type S = sys::CUpti_ActivityMemset;
        let mut b = buffer();
        kind(&mut b, K::CUPTI_ACTIVITY_KIND_MEMSET);
        put!(b, S, bytes, 4096u64);
        put!(b, S, start, 1u64);
        put!(b, S, end, 2u64);
        put!(b, S, streamId, 14u32);
        put!(b, S, correlationId, 9u32);
        assert_eq!(read(&b), Some(Line::Memset { bytes: 4096, start: 1, end: 2, stream: 14, corr: 9 }));

        type Y = sys::CUpti_ActivitySynchronization;
        let mut b = buffer();
        kind(&mut b, K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
        // SAFETY: the synchronization type is a 32-bit field after the kind; written as the integer it is.
        unsafe { std::ptr::addr_of_mut!((*b.as_mut_ptr().cast::<Y>()).type_).cast::<u32>().write_unaligned(4) };
        put!(b, Y, start, 10u64);
        put!(b, Y, end, 20u64);
        put!(b, Y, streamId, u32::MAX);
        put!(b, Y, correlationId, 5u32);
        put!(b, Y, cudaEventId, u32::MAX);
        assert_eq!(read(&b), Some(Line::Sync { sync_type: 4, start: 10, end: 20, stream: None, corr: 5, event: None }));
        // An event synchronization names its event, and the event's record its stream.
        put!(b, Y, cudaEventId, 3u32);
        assert_eq!(
            read(&b),
            Some(Line::Sync { sync_type: 4, start: 10, end: 20, stream: None, corr: 5, event: Some(3) })
        );
        type E = sys::CUpti_ActivityCudaEvent;
        let mut b = buffer();
        kind(&mut b, K::CUPTI_ACTIVITY_KIND_CUDA_EVENT);
        put!(b, E, eventId, 3u32);
        put!(b, E, streamId, 13u32);
        put!(b, E, correlationId, 4u32);
        assert_eq!(read(&b), Some(Line::Event { event: 3, stream: 13, corr: 4 }));

        let mut b = buffer();
        kind(&mut b, K::CUPTI_ACTIVITY_KIND_DRIVER);
        assert_eq!(read(&b), None);
    }

    type O = sys::CUpti_ActivityOverhead3;

    /// An overhead record of `overhead` kind on `object` (CUPTI's object kind), its time and correlation id.
    fn overhead(overhead: sys::CUpti_ActivityOverheadKind, object: u32, corr: u32) -> Vec<u64> {
        let mut b = buffer();
        kind(&mut b, K::CUPTI_ACTIVITY_KIND_OVERHEAD);
        let r = b.as_mut_ptr().cast::<O>();
        // SAFETY: the two kinds are 32-bit fields of the record, written as the integers they are.
        unsafe {
            std::ptr::addr_of_mut!((*r).overheadKind).cast::<u32>().write_unaligned(overhead as u32);
            std::ptr::addr_of_mut!((*r).objectKind).cast::<u32>().write_unaligned(object);
        }
        put!(b, O, start, 1_000u64);
        put!(b, O, end, 45_000u64);
        put!(b, O, correlationId, corr);
        b
    }

    fn read_overhead(buf: &[u64], version: u32) -> Option<Line> {
        // SAFETY: the buffer holds an overhead record with every field of `CUpti_ActivityOverhead3`.
        unsafe { overhead_of(buf.as_ptr().cast(), version) }
    }

    #[test]
    fn a_lazy_load_record_reads_its_time_and_the_call_that_caused_it() {
        type OK = sys::CUpti_ActivityOverheadKind;
        let b = overhead(OK::CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING, 2, 125);
        let want = |corr| Line::Overhead {
            kind: OverheadKind::LazyFunctionLoading,
            start: 1_000,
            end: 45_000,
            corr,
            stream: None,
            queue_length: None,
        };
        assert_eq!(read_overhead(&b, 130_001), Some(want(Some(125))));
        // The correlation id came with CUPTI 12.3 (API 21): an older record has none to read.
        assert_eq!(read_overhead(&b, 20), Some(want(None)));
        // A record of no call (CUPTI writes 0) names none.
        let b = overhead(OK::CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING, 2, 0);
        assert!(matches!(
            read_overhead(&b, 22),
            Some(Line::Overhead { kind: OverheadKind::RuntimeTriggeredModuleLoading, corr: None, .. })
        ));
        // CUPTI's own overheads are not the program's.
        let b = overhead(OK::CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 2, 0);
        assert_eq!(read_overhead(&b, 130_001), None);
    }

    #[test]
    fn a_full_queue_record_reads_its_stream_and_the_queues_length_and_frees_the_details() {
        type OK = sys::CUpti_ActivityOverheadKind;
        type D = sys::CUpti_ActivityOverheadCommandBufferFullData;
        let mut b = overhead(OK::CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL, 5, 3_001);
        let r = b.as_mut_ptr().cast::<O>();
        // SAFETY: a stream object's ids are the union's `dcs` part; written without forming a reference.
        unsafe {
            let id = std::ptr::addr_of_mut!((*r).objectId).cast::<sys::CUpti_ActivityObjectKindId__bindgen_ty_2>();
            id.write_unaligned(sys::CUpti_ActivityObjectKindId__bindgen_ty_2 {
                deviceId: 0,
                contextId: 1,
                streamId: 13,
            });
        }
        // The details as CUPTI gives them: allocated for the reader to free.
        // SAFETY: malloc of a non-zero size; the pointer is checked, then written as the details' type.
        let data = unsafe { libc::malloc(std::mem::size_of::<D>()) }.cast::<D>();
        assert!(!data.is_null());
        // SAFETY: `data` holds one `D`.
        unsafe { data.write(D { commandBufferLength: 1024, channelID: 2, channelType: 1 }) };
        put!(b, O, overheadData, data.cast::<c_void>());
        assert_eq!(
            read_overhead(&b, 130_500),
            Some(Line::Overhead {
                kind: OverheadKind::CommandBufferFull,
                start: 1_000,
                end: 45_000,
                corr: Some(3_001),
                stream: Some(13),
                queue_length: Some(1024),
            })
        );
    }
}

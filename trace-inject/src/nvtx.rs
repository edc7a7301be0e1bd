//! NVTX ranges: `async-lab trace` points `NVTX_INJECTION64_PATH` at CUPTI, which hands the program's NVTX
//! calls to this library's callback. A range pushed (`nvtxRangePushA`, `torch.cuda.nvtx.range_push`,
//! `emit_nvtx`'s op names) is kept on its thread's stack until popped, a started one by its id until ended,
//! and each is written as one `Line::Nvtx` when it closes. The parameter blocks are NVTX's own
//! (`generated_nvtx_meta.h`), declared here since the binding has none of them.

use crate::cupti::timestamp;
use crate::writer;
use async_lab_trace_format::Line;
use cudarc::cupti::sys::CUpti_nvtx_api_trace_cbid as N;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::sync::Mutex;

/// The NVTX calls read here: the only ones the tracer subscribes to (a range's push, pop, start and end, a
/// domain's creation for its name).
pub const CALLBACKS: [N; 11] = [
    N::CUPTI_CBID_NVTX_nvtxRangePushA,
    N::CUPTI_CBID_NVTX_nvtxRangePushEx,
    N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
    N::CUPTI_CBID_NVTX_nvtxRangePop,
    N::CUPTI_CBID_NVTX_nvtxDomainRangePop,
    N::CUPTI_CBID_NVTX_nvtxRangeStartA,
    N::CUPTI_CBID_NVTX_nvtxRangeStartEx,
    N::CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
    N::CUPTI_CBID_NVTX_nvtxRangeEnd,
    N::CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
    N::CUPTI_CBID_NVTX_nvtxDomainCreateA,
];

/// Ranges open on one thread at most: a program that pushes without popping keeps the latest.
const MAX_OPEN: usize = 256;

/// NVTX's `nvtxEventAttributes_t` up to its message (version 2 and later).
#[repr(C)]
struct EventAttributes {
    version: u16,
    size: u16,
    category: u32,
    color_type: i32,
    color: u32,
    payload_type: i32,
    reserved0: i32,
    payload: u64,
    message_type: i32,
    message: *const c_char,
}
/// `NVTX_MESSAGE_TYPE_ASCII`.
const MESSAGE_ASCII: i32 = 1;

/// A range open on a thread: its start, name and domain.
type Open = (u64, String, Option<String>);

thread_local! {
    static STACK: RefCell<Vec<Open>> = const { RefCell::new(Vec::new()) };
}
/// Started ranges, by NVTX's id (they may end on another thread).
static STARTED: Mutex<Option<HashMap<u64, Started>>> = Mutex::new(None);
/// A started range: its thread, start, name and domain.
type Started = (u64, u64, String, Option<String>);
/// Domains' names, by NVTX's handle.
static DOMAINS: Mutex<Option<HashMap<usize, String>>> = Mutex::new(None);

/// One NVTX callback.
///
/// # Safety
/// `data` is the `CUpti_NvtxData` CUPTI passed with `cbid`, valid during the call.
pub unsafe fn on(cbid: u32, data: *const cudarc::cupti::sys::CUpti_NvtxData) {
    // SAFETY: the caller's promise: the fields are CUPTI's pointers to NVTX's parameter block and result.
    let (params, result) = unsafe { ((*data).functionParams, (*data).functionReturnValue) };
    if params.is_null() {
        return;
    }
    let now = timestamp();
    // SAFETY: `params` points to the parameter block of the NVTX call `cbid` names, whose
    // layout is NVTX's: pointers and ids in the order declared; strings are the program's, alive during
    // the call; `result`, where not null, points to the call's return value.
    unsafe {
        match cbid {
            c if c == N::CUPTI_CBID_NVTX_nvtxRangePushA as u32 => {
                push(now, ascii(*params.cast::<*const c_char>()), None)
            }
            c if c == N::CUPTI_CBID_NVTX_nvtxRangePushEx as u32 => push(now, attributes(*params.cast()), None),
            c if c == N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx as u32 => {
                let p = params.cast::<(*const c_void, *const EventAttributes)>();
                push(now, attributes((*p).1), domain((*p).0))
            }
            c if c == N::CUPTI_CBID_NVTX_nvtxRangePop as u32 || c == N::CUPTI_CBID_NVTX_nvtxDomainRangePop as u32 => {
                pop(now)
            }
            c if c == N::CUPTI_CBID_NVTX_nvtxRangeStartA as u32 => {
                start(now, result, ascii(*params.cast::<*const c_char>()), None)
            }
            c if c == N::CUPTI_CBID_NVTX_nvtxRangeStartEx as u32 => {
                start(now, result, attributes(*params.cast()), None)
            }
            c if c == N::CUPTI_CBID_NVTX_nvtxDomainRangeStartEx as u32 => {
                let p = params.cast::<(*const c_void, *const EventAttributes)>();
                start(now, result, attributes((*p).1), domain((*p).0))
            }
            c if c == N::CUPTI_CBID_NVTX_nvtxRangeEnd as u32 => end(now, *params.cast::<u64>()),
            c if c == N::CUPTI_CBID_NVTX_nvtxDomainRangeEnd as u32 => {
                end(now, (*params.cast::<(*const c_void, u64)>()).1)
            }
            c if c == N::CUPTI_CBID_NVTX_nvtxDomainCreateA as u32 && !result.is_null() => {
                let handle = *result.cast::<usize>();
                let name = ascii(*params.cast::<*const c_char>());
                DOMAINS.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).insert(handle, name);
            }
            _ => {}
        }
    }
}

/// # Safety
/// `s` is null or a C string.
unsafe fn ascii(s: *const c_char) -> String {
    if s.is_null() {
        String::new()
    } else {
        // SAFETY: the caller's promise.
        unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
    }
}

/// An event's message, where it is ASCII (registered and wide strings are not read).
///
/// # Safety
/// `a` is null or NVTX's event attributes.
unsafe fn attributes(a: *const EventAttributes) -> String {
    // SAFETY: the caller's promise; the message is read only where the block is large enough to hold it.
    unsafe {
        if a.is_null() || ((*a).size as usize) < std::mem::size_of::<EventAttributes>() {
            return String::new();
        }
        if (*a).message_type == MESSAGE_ASCII {
            ascii((*a).message)
        } else {
            String::new()
        }
    }
}

fn domain(handle: *const c_void) -> Option<String> {
    if handle.is_null() {
        return None;
    }
    DOMAINS.lock().unwrap_or_else(|e| e.into_inner()).as_ref()?.get(&(handle as usize)).cloned()
}

fn push(now: u64, name: String, domain: Option<String>) {
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() == MAX_OPEN {
            s.remove(0);
        }
        s.push((now, name, domain));
    });
}

fn pop(now: u64) {
    let Some((start, name, domain)) = STACK.with(|s| s.borrow_mut().pop()) else { return };
    let tid = writer::tid();
    writer::append(&Line::Nvtx { tid, start, end: now, name, domain }, now);
}

/// # Safety
/// `result` is null or points to the range's id.
unsafe fn start(now: u64, result: *const c_void, name: String, domain: Option<String>) {
    if result.is_null() {
        return;
    }
    // SAFETY: the caller's promise.
    let id = unsafe { *result.cast::<u64>() };
    if id == 0 {
        return;
    }
    let mut started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    let started = started.get_or_insert_with(HashMap::new);
    if started.len() < 4096 {
        started.insert(id, (writer::tid(), now, name, domain));
    }
}

fn end(now: u64, id: u64) {
    let open = STARTED.lock().unwrap_or_else(|e| e.into_inner()).as_mut().and_then(|m| m.remove(&id));
    if let Some((tid, start, name, domain)) = open {
        writer::append(&Line::Nvtx { tid, start, end: now, name, domain }, now);
    }
}

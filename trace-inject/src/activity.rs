//! CUPTI's activity records: the GPU's copies, memsets and kernels and the host's synchronizations, each
//! with its start, end, stream and the correlation id of the call that made it; and the events recorded in
//! streams, which say what stream an event synchronization waited for. CUPTI fills buffers this
//! module hands it; each buffer CUPTI completes goes to the library's thread (`writer`), which reads its
//! records into the trace and frees it, so memory stays bounded and nothing is read on CUPTI's calling thread.

use crate::cupti::check;
use crate::writer;
use async_lab_core::trace::format::{Failure, Line};
use cudarc::cupti::sys::{self, CUpti_ActivityKind as K};
use std::alloc::Layout;
use std::ptr::addr_of;

/// One activity buffer: CUPTI's samples use 8 MiB; smaller buffers are handed back sooner.
const BUFFER: Layout = match Layout::from_size_align(4 << 20, 8) {
    Ok(l) => l,
    Err(_) => panic!("a valid layout"),
};

/// How often CUPTI hands back partly filled buffers: with the writer's flusher, what SIGKILL loses stays under a
/// second.
const FLUSH_PERIOD_MS: u32 = crate::ending::FLUSH_MS as u32;

const KINDS: [(K, &str); 4] = [
    (K::CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy"),
    (K::CUPTI_ACTIVITY_KIND_MEMSET, "memset"),
    (K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel"),
    (K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "sync"),
];

/// Registers the buffer callbacks and enables the record kinds.
pub fn enable() -> Result<(), (Failure, String)> {
    // SAFETY: both are `extern "C"` functions with CUPTI's signatures, alive as long as the process.
    let code = unsafe { sys::cuptiActivityRegisterCallbacks(Some(requested), Some(completed)) };
    check(code, "cuptiActivityRegisterCallbacks")?;
    for (kind, word) in KINDS {
        // Each kind may be left off, for measuring what it costs (`switches::KINDS_VAR`).
        if !crate::switches::listed(crate::switches::KINDS_VAR, word) {
            continue;
        }
        // SAFETY: enabling a record kind has no pointer arguments.
        check(unsafe { sys::cuptiActivityEnable(kind) }, "cuptiActivityEnable")?;
    }
    // Optional: a CUPTI without event records (before CUDA 12.8) still traces; its event waits then name no
    // stream. `ASYNC_LAB_TRACE_EVENTS=0` leaves them off, for measuring what they cost.
    if std::env::var_os("ASYNC_LAB_TRACE_EVENTS").is_none_or(|v| v != "0")
        && crate::switches::listed(crate::switches::KINDS_VAR, "event")
    {
        // SAFETY: as above.
        let _ = unsafe { sys::cuptiActivityEnable(K::CUPTI_ACTIVITY_KIND_CUDA_EVENT) };
    }
    // GPU records reach the trace at least every second, not only when a buffer fills: a long program that
    // is killed keeps its records up to then.
    // SAFETY: no pointer arguments; the period is in ms.
    check(unsafe { sys::cuptiActivityFlushPeriod(FLUSH_PERIOD_MS) }, "cuptiActivityFlushPeriod")?;
    Ok(())
}

/// Hands every record CUPTI still holds to `completed` (at exit).
pub fn flush_all() {
    // SAFETY: no pointer arguments; 1 is CUPTI_ACTIVITY_FLAG_FLUSH_FORCED (also incomplete buffers).
    unsafe { sys::cuptiActivityFlushAll(1) };
}

unsafe extern "C" fn requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    // SAFETY: BUFFER's size is not zero.
    let p = unsafe { std::alloc::alloc(BUFFER) };
    // SAFETY: CUPTI passes valid places for the three answers; a null buffer tells it to drop records.
    unsafe {
        *buffer = p;
        *size = if p.is_null() { 0 } else { BUFFER.size() };
        *max_records = 0;
    }
}

unsafe extern "C" fn completed(
    ctx: cudarc::driver::sys::CUcontext,
    stream_id: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    let mut dropped = 0usize;
    // SAFETY: `ctx` and `stream_id` are the ones CUPTI passed; `dropped` is a valid place for the count.
    unsafe { sys::cuptiActivityGetNumDroppedRecords(ctx, stream_id, &mut dropped) };
    // Read on the library's thread, not on the one CUPTI calls this from (it may be the program's).
    writer::completed(Completed { buffer, valid, dropped });
}

/// A buffer CUPTI is done with, its records not yet read; freed when dropped.
pub struct Completed {
    buffer: *mut u8,
    valid: usize,
    dropped: usize,
}

// SAFETY: once CUPTI completed it, the buffer is ours alone (CUPTI never touches it again): whichever thread
// holds the `Completed` may read and free it.
unsafe impl Send for Completed {}

impl Completed {
    /// The lines of its records, and CUPTI's count of dropped ones.
    pub fn lines(&self) -> Vec<Line> {
        let mut lines = Vec::new();
        let mut record: *mut sys::CUpti_Activity = std::ptr::null_mut();
        // SAFETY: `buffer` is one `requested` made, holding `valid` bytes of records that CUPTI wrote; each
        // record pointer it hands back points inside it.
        while unsafe { sys::cuptiActivityGetNextRecord(self.buffer, self.valid, &mut record) }
            == sys::CUptiResult::CUPTI_SUCCESS
        {
            // SAFETY: as above.
            if let Some(line) = unsafe { line_of(record) } {
                lines.push(line);
            }
        }
        if self.dropped > 0 {
            lines.push(Line::Dropped { records: self.dropped as u64 });
        }
        lines
    }
}

impl Drop for Completed {
    fn drop(&mut self) {
        // SAFETY: `buffer` was allocated by `requested` with BUFFER, and CUPTI is done with it; freed once.
        unsafe { std::alloc::dealloc(self.buffer, BUFFER) };
    }
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
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_lab_core::trace::format::Line;

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
}

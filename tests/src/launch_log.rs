//! Synthetic traces of format 5's default mode, built line by line as the injection library writes them: no
//! kernel record outside the trace's windows, no synchronization record, and for each held call an `ahead` line
//! (the work enqueued last before it began, from the launch log); beside each, the same program as
//! `--all-kernels` records it (every kernel and synchronization record, the same `ahead` lines), so that a
//! test can hold the two answers side by side.
//!
//! Times as in `trace_synthetic`: ns from its origin, stream 13 for the program's work, thread 100.

use crate::trace_synthetic::{call, kernel, trace, MS, T0, US};
use async_lab_core::trace::format::cupti_kinds::{copy, memory};
use async_lab_core::trace::format::{EnqueueKind, Enqueued, KernelRecords, Line, WindowWhy};

/// The record kinds of the default mode: copies, memsets, overheads, kernels in windows.
pub fn default_kinds() -> Line {
    Line::RecordKinds {
        kinds: vec!["memcpy".into(), "memset".into(), "overhead".into()],
        kernels: KernelRecords::Windows,
    }
}

/// A kernel launch in the log: `corr` its call's correlation id, launched in `stream` at `at`.
pub fn launched(name: &str, stream: u32, corr: u32, at: u64) -> Enqueued {
    Enqueued {
        corr,
        tid: 100,
        start: T0 + at,
        end: T0 + at + 4 * US,
        kind: EnqueueKind::Kernel,
        stream: Some(stream),
        kernel: Some(name.into()),
    }
}

/// The `ahead` line of held call `corr` on thread 100.
pub fn ahead(corr: u32, stream: Option<u32>, device: bool, work: Vec<Enqueued>) -> Line {
    Line::Ahead { tid: 100, corr, stream, event: None, device, work }
}

/// A stream synchronization's record (what `--all-kernels` records).
pub fn stream_sync_record(stream: u32, corr: u32, start: u64, end: u64) -> Line {
    Line::Sync { sync_type: 3, start: T0 + start, end: T0 + end, stream: Some(stream), corr, event: None }
}

/// A 4-byte device → host copy into pageable memory (`loss.item()`).
pub fn dtoh(stream: u32, corr: u32, start: u64, end: u64) -> Line {
    Line::Memcpy {
        copy_kind: copy::DTOH,
        src_kind: memory::DEVICE,
        dst_kind: memory::PAGEABLE,
        bytes: 4,
        start: T0 + start,
        end: T0 + end,
        stream,
        corr,
    }
}

/// `cudaStreamSynchronize` held 50 ms behind the kernel `spin` launched just before it; `all_kernels`: with
/// the kernel's and the synchronization's records, as `--all-kernels` records them.
pub fn sync_behind_a_kernel(all_kernels: bool) -> String {
    let mut lines = vec![call("cudaLaunchKernel", 10, 0, 5 * US), call("cudaStreamSynchronize", 20, 10 * US, 50 * MS)];
    lines.push(ahead(20, Some(13), false, vec![launched("_Z4spinv", 13, 10, 0)]));
    if all_kernels {
        lines.push(kernel("_Z4spinv", 13, 10, 3 * US, 50 * MS - 4 * US));
        lines.push(stream_sync_record(13, 20, 10 * US, 50 * MS));
    } else {
        lines.insert(0, default_kinds());
    }
    trace(lines)
}

/// `loss.item()`: a device → host copy held 40 ms behind the step's kernel, its own copy's record at the end.
pub fn copy_behind_a_kernel(all_kernels: bool) -> String {
    let mut lines = vec![
        call("cudaLaunchKernel", 10, 0, 5 * US),
        call("cudaMemcpyAsync", 30, 10 * US, 40 * MS + 30 * US),
        dtoh(13, 30, 40 * MS, 40 * MS + 3 * US),
        ahead(30, Some(13), false, vec![launched("_Z4gemmv", 13, 10, 0)]),
    ];
    if all_kernels {
        lines.push(kernel("_Z4gemmv", 13, 10, 3 * US, 40 * MS - 2 * US));
    } else {
        lines.insert(0, default_kinds());
    }
    trace(lines)
}

/// `cudaFree` held 20 ms while a kernel launched on another stream ran: with every record, the free drained
/// the device; without the kernel's record, nothing bounds the wait.
pub fn free_behind_another_streams_kernel(all_kernels: bool) -> String {
    let mut lines = vec![
        call("cudaLaunchKernel", 10, 0, 5 * US),
        call("cudaFree", 40, 10 * US, 20 * MS),
        ahead(40, None, false, vec![launched("_Z4spinv", 14, 10, 0)]),
    ];
    if all_kernels {
        lines.push(kernel("_Z4spinv", 14, 10, 3 * US, 20 * MS - 20 * US));
    } else {
        lines.insert(0, default_kinds());
    }
    trace(lines)
}

/// A loop of `steps` steps of 10 ms, each launching `gemm` (9 ms on the GPU) then `relu` (0.5 ms) and
/// synchronizing at its end; the steps in `window` were inside a window of kernel records (their kernels'
/// records are in the trace), the others are known from the launch log alone.
pub fn loop_with_a_window(steps: u32, window: std::ops::Range<u32>) -> String {
    let mut lines = vec![default_kinds()];
    for k in 0..steps {
        let t = u64::from(k) * 10 * MS;
        let (gemm, relu, sync) = (100 + 3 * k, 101 + 3 * k, 102 + 3 * k);
        lines.push(call("cudaLaunchKernel", gemm, t, t + 5 * US));
        lines.push(call("cudaLaunchKernel", relu, t + 10 * US, t + 15 * US));
        lines.push(call("cudaStreamSynchronize", sync, t + 20 * US, t + 9 * MS + 600 * US));
        lines.push(ahead(
            sync,
            Some(13),
            false,
            vec![launched("_Z4gemmv", 13, gemm, t), launched("_Z4reluv", 13, relu, t + 10 * US)],
        ));
        if window.contains(&k) {
            lines.push(kernel("_Z4gemmv", 13, gemm, t + 10 * US, t + 9 * MS));
            lines.push(kernel("_Z4reluv", 13, relu, t + 9 * MS, t + 9 * MS + 500 * US));
        }
    }
    let (start, end) = (u64::from(window.start) * 10 * MS, u64::from(window.end) * 10 * MS);
    lines.push(Line::KernelWindow { start: T0 + start, end: T0 + end, why: WindowWhy::Held });
    trace(lines)
}

/// A launch held 3 ms into a full launch queue behind the kernel `spin` launched before it: with the driver's
/// record that the queue was full (`full_queue`), room came at its end; without it, nothing bounds the wait.
pub fn launch_into_a_full_queue(full_queue: bool) -> String {
    let mut lines = vec![
        default_kinds(),
        call("cudaLaunchKernel", 10, 0, 5 * US),
        call("cudaLaunchKernel", 11, 10 * US, 3 * MS),
        ahead(11, Some(13), false, vec![launched("_Z4spinv", 13, 10, 0)]),
    ];
    if full_queue {
        lines.push(crate::trace_synthetic::overhead(
            async_lab_core::trace::format::OverheadKind::CommandBufferFull,
            11,
            20 * US,
            3 * MS - 10 * US,
        ));
    }
    trace(lines)
}

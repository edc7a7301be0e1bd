//! The trace file of this process: `<folder>/<pid>.jsonl`, the folder named by [`OUT_DIR_VAR`]. Lines go
//! through one buffered writer behind a lock; the buffer is written out when full, every 200 ms of calls,
//! after each batch of GPU records and at exit, so memory stays bounded however long the program runs, and
//! a program that crashes loses at most the last of those.

use async_lab_core::trace::format::{header, Line};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Names the folder the trace files go to; set by `async-lab trace`.
pub const OUT_DIR_VAR: &str = "ASYNC_LAB_TRACE_DIR";

/// The writer's buffer.
const BUFFER_BYTES: usize = 64 * 1024;

static OUT: Mutex<Option<BufWriter<File>>> = Mutex::new(None);
/// How often the buffer is written out while calls go on, in ns of the trace's clock.
const FLUSH_EVERY: u64 = 200_000_000;
/// The time of the last such write.
static LAST_FLUSH: AtomicU64 = AtomicU64::new(0);
/// Whether the header is written (it is written once, first).
static HEADER: AtomicBool = AtomicBool::new(false);

/// Opens this process's trace file; `false` (and no tracing) where the variable is unset or the file cannot
/// be made.
pub fn open() -> bool {
    let Some(dir) = std::env::var_os(OUT_DIR_VAR) else { return false };
    let path = std::path::Path::new(&dir).join(format!("{}.jsonl", std::process::id()));
    let Ok(file) = File::create(&path) else { return false };
    *lock() = Some(BufWriter::with_capacity(BUFFER_BYTES, file));
    true
}

fn lock() -> std::sync::MutexGuard<'static, Option<BufWriter<File>>> {
    // A thread that panicked while writing left at worst a half line, which the reader drops.
    OUT.lock().unwrap_or_else(|e| e.into_inner())
}

/// The header: this process, its command line, CUPTI's version; only the first call writes it.
pub fn write_header(cupti_version: Option<u32>) {
    if HEADER.swap(true, Ordering::SeqCst) {
        return;
    }
    let program: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
        })
        .unwrap_or_default();
    // The program's file name only: where it was on the measuring machine says nothing about the trace.
    let program = program
        .iter()
        .enumerate()
        .map(|(i, a)| if i == 0 { a.rsplit('/').next().unwrap_or(a).to_owned() } else { a.clone() })
        .collect();
    write(&header(std::process::id(), program, cupti_version));
}

/// Appends one line.
pub fn write(line: &Line) {
    write_all(std::iter::once(line));
}

/// Appends lines under one lock. The buffer goes out to the file at least every [`FLUSH_EVERY`] of the
/// lines' own time, so a program killed without running its exit handlers loses no more than that.
pub fn write_all<'a>(lines: impl Iterator<Item = &'a Line>) {
    let mut guard = lock();
    if let Some(out) = guard.as_mut() {
        let mut latest = 0;
        for line in lines {
            if let Line::Api { end, .. } = line {
                latest = *end;
            }
            // A full disk or a closed file: the trace ends there, the program goes on.
            if serde_json::to_writer(&mut *out, line).is_ok() {
                let _ = out.write_all(b"\n");
            }
        }
        if latest > LAST_FLUSH.load(Ordering::Relaxed) + FLUSH_EVERY {
            LAST_FLUSH.store(latest, Ordering::Relaxed);
            let _ = out.flush();
        }
    }
}

/// Writes the buffer out to the file.
pub fn flush() {
    if let Some(out) = lock().as_mut() {
        let _ = out.flush();
    }
}

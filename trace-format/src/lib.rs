//! The trace's format: what the injection library (`trace-inject/`) writes into a traced program's trace and
//! what the core (`async_lab_core::trace`) reads back, and the decisions both sides must make alike.
//!
//! - [`ahead`]: the launch log's pieces: the work enqueued ahead of a held call, the kernels recorded;
//! - [`lines`]: the trace's lines, one JSON object each, and a trace read back (re-exported at the root);
//! - [`cupti_kinds`]: CUPTI's numbered kinds of copies and memory, by name;
//! - [`functions`]: the one table of CUDA functions and what each does (enqueues, waits, loads, allocates...);
//! - [`stored`]: a trace file read as it is stored, plain or gzip-compressed (the `gz` feature);
//! - [`subscribed`]: the calls the tracer subscribes to by default;
//! - [`bounded`]: the bounded trace, decided online while the program runs;
//! - [`units`]: a duration as the trace's tables print it (the bounded trace groups durations by it).
//!
//! Pure: no CUDA, no `unsafe`; the core re-exports it as `async_lab_core::trace::{format, bounded}`.

#![forbid(unsafe_code)]

pub mod ahead;
pub mod bounded;
pub mod cupti_kinds;
pub mod functions;
pub mod lines;
pub mod stored;
pub mod subscribed;
pub mod units;

pub use lines::*;

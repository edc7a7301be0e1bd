//! The analysis of a trace: a program that `async-lab trace` recorded through CUPTI (its lines are the
//! `async-lab-trace-format` crate's, here as `format`), each of its calls put through the same `attribution`
//! and `class` as the lab's experiments, and what is read off them: where each call was made, what the program
//! pays once, the findings grouped by place and cause with their remedies, each thread's account and the
//! verdict, `--fail-on-held`'s gate, the JSON report. `analysis::Analysis` is one process read once; every
//! view takes it.
//!
//! Its place (`docs/crates.md`):
//! - it may use the trace's format, serde, serde_json, anyhow and the demanglers; schemars only behind the
//!   `schema` feature (the JSON report's schema);
//! - it must not use the core or any view's crate (tables, text wrapping, plots, CSV, HTML), nor the lab's
//!   catalogue or recordings: the lab's numbers it reads (`capabilities.json`, `remedies.json`) are derived
//!   from them in the core;
//! - the injection library's in-process gate links it, the core builds on it (the lab's model shares its
//!   `attribution`, `class` and `units`; the views take its `Analysis`);
//! - no file over 500 lines, no function over 120, no module cycle, no `unsafe` (`cargo xtask test`).

#![forbid(unsafe_code)]

pub mod ahead;
pub mod analysis;
pub mod attribution;
pub mod by_location;
pub mod call_view;
pub mod call_words;
pub mod calls;
pub mod capability;
pub mod cause;
pub mod claims;
pub mod class;
pub mod counts;
pub mod demangle;
pub mod driver_work;
pub mod findings;
pub mod framework;
pub mod gate;
pub mod headline;
pub mod held_message;
pub mod helpers;
pub mod json;
pub mod lazy;
pub mod library_paths;
pub mod location;
pub mod made;
pub mod once;
pub mod records;
pub mod remedies;
pub mod remedy;
pub mod scene;
pub mod sites;
pub mod startup;
pub mod threads;
pub mod units;
pub mod waiting;
pub mod warmup;
pub mod what_held;
pub mod words;

/// The trace's format and the table of CUDA functions, at the paths the analysis's modules use.
pub use async_lab_trace_format::{self as format, functions};

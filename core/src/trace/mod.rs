//! The views of a traced program, each a function of the analysis (`async-lab-trace-analysis`, whose modules
//! are re-exported below at the paths the views use): the terminal's tables and one call explained (`text`,
//! `headline_text`, `by_location_table`, `findings_text`, fitted by `layout`), the HTML page (`page`), the
//! Chrome trace-event export (`perfetto`), a program's own step timings beside the trace (`steps`), a traced
//! run of async-lab beside its own recording (`against_recording`) and of the C++ reference beside its own
//! classes (`against_reference`), each repetition's timed call found in the trace (`timed_calls`), a trace
//! cut down to what some calls need (`trim`); and the lab's tables the analysis reads, derived here from the
//! recordings (`from_recordings`).

pub mod against_recording;
pub mod against_reference;
pub mod by_location_table;
pub mod findings_text;
pub mod from_recordings;
pub mod headline_text;
pub mod layout;
pub mod page;
pub mod perfetto;
pub mod steps;
pub mod text;
pub mod timed_calls;
pub mod trim;

/// The trace's format, the bounded trace and the calls subscribed to live in a crate of their own, which the
/// injection library uses alone; here at the paths the views use.
pub use async_lab_trace_format::{self as format, bounded, functions, subscribed};

/// The trace's analysis lives in a crate of its own (`async-lab-trace-analysis`), which the injection
/// library's gate uses without the views; here at the paths the views use.
pub use async_lab_trace_analysis::{
    ahead, analysis, by_location, call_view, call_words, calls, capability, cause, claims, counts, demangle,
    driver_work, findings, framework, gate, headline, held_message, helpers, json, lazy, library_paths, location, made,
    once, records, remedies, remedy, scene, sites, startup, threads, waiting, warmup, what_held, words,
};

//! A trace of another program: what `async-lab trace` recorded through CUPTI (its format, in `format`), and
//! the same attribution and classes as the lab's own experiments for each of its calls (`scene`, `calls`);
//! its views: the terminal's tables and one call explained (`text`), the HTML page (`page`), and a traced
//! run of async-lab beside its own recording (`against_recording`) and of the C++ reference beside its own
//! classes (`against_reference`), each repetition's timed call found in the trace by its name and its start
//! (`timed_calls`).
//!
//! The trace's times are all on CUPTI's one clock (API callbacks and GPU records alike), so a call's
//! interval and the GPU work around it go straight into an `attribution::Scene`.

pub mod against_recording;
pub mod against_reference;
pub mod ahead;
pub mod analysis;
pub mod by_location;
pub mod by_location_table;
pub mod call_view;
pub mod calls;
pub mod capability;
pub mod cause;
pub mod counts;
pub mod demangle;
pub mod driver_work;
pub mod findings;
pub mod findings_text;
pub mod framework;
pub mod from_recordings;
pub mod gate;
pub mod headline;
pub mod headline_text;
pub mod held_message;
pub mod helpers;
pub mod json;
pub mod layout;
pub mod lazy;
pub mod location;
pub mod once;
pub mod page;
pub mod perfetto;
pub mod remedies;
pub mod remedy;
pub mod scene;
pub mod sites;
pub mod startup;
pub mod steps;
pub mod text;
pub mod threads;
pub mod timed_calls;
pub mod trim;
pub mod waiting;
pub mod warmup;
pub mod what_held;
pub mod words;

/// The trace's format, the bounded trace and the calls subscribed to live in a crate of their own, which the
/// injection library uses alone; here at the paths the views use.
pub use async_lab_trace_format::{self as format, bounded, functions, subscribed};

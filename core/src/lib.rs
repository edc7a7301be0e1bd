//! async-lab's core, with no FFI and no `unsafe`: the lab's model, and every view.
//!
//! The lab's model of a measurement, and its views. A case is typed facts (`catalogue`, `setup`) kept in a
//! recording with each repetition's readings and extra numbers (`record`, `metrics`); `timing` turns one
//! repetition's readings into intervals, `attribution` into what held the thread and for how long, `classify`
//! into a class; `rules` says what NVIDIA's documentation predicts, `report` draws the verdicts and findings
//! of a whole recording, and `output`, `html`, `explain` and `compare` show them. Replaying a recording
//! needs nothing else: the `async-lab` binary's replay, report, compare and explain commands run on this
//! crate alone, on any machine. Measuring is the `async-lab` crate's job (`host/`); see `docs/crates.md`.
//!
//! The views of a traced program (`trace/`): the terminal's tables and the answer read first, the HTML page,
//! the Perfetto export, a traced run beside the lab's recordings, each a function of one `Analysis` per
//! process. The analysis itself is the `async-lab-trace-analysis` crate, below this one (its modules
//! re-exported at `trace::scene`, `trace::calls`, ...); the lab's model shares its `attribution`, `class` and
//! `units` (re-exported here), and derives the lab's numbers it reads from the recordings
//! (`trace::from_recordings`). The analysis names nothing of the core, and the injection library links it
//! without the core: cargo holds that layering (`docs/crates.md`).
//!
//! The modules are layers (`docs/crates.md`, "The core's layers"): `metrics`, `rules`, `record`, `classify`,
//! `result`, `explain`, `report`, then the views; none imports one above it (`cargo xtask test` checks).

#![forbid(unsafe_code)]

/// What the lab's model and the trace's analysis share lives in the analysis's crate, below the core: the
/// attribution, the class vocabulary, the units; here at the paths the model uses.
pub use async_lab_trace_analysis::{attribution, class, units};

pub mod api;
pub mod async_ref;
pub mod catalogue;
pub mod classify;
pub mod clock;
pub mod compare;
pub mod explain;
pub mod html;
pub mod machine;
pub mod metrics;
pub mod output;
pub mod record;
pub mod report;
pub mod result;
pub mod rules;
pub mod setup;
pub mod stability;
pub mod stats;
pub mod timing;
pub mod trace;

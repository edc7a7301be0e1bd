//! async-lab's core: the model of a measurement and every view of it, with no FFI and no `unsafe`.
//!
//! A case's setup is typed data (`setup`, `record::CaseSetup`); `classify` turns one repetition's signals
//! into a class, `rules` says what NVIDIA's documentation predicts, `report` draws the verdicts and findings
//! of a whole recording, and `output`, `html`, `explain` and `compare` show them. Replaying a recording
//! needs nothing else: the `async-lab` binary's replay, report, compare and explain commands run on this
//! crate alone, on any machine. Measuring is the `async-lab` crate's job (`host/`); see `docs/crates.md`.
//!
//! The modules are layers (`docs/crates.md`, "The core's layers"): `class`, `rules`, `record`, `classify`,
//! `result`, `explain`, `report`, then the views; none imports one above it (`cargo xtask test` checks).

#![forbid(unsafe_code)]

pub mod api;
pub mod async_ref;
pub mod attribution;
pub mod catalogue;
pub mod class;
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
pub mod units;

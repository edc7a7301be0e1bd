//! async-lab: measures, on a real NVIDIA GPU, which CUDA calls that people expect to be asynchronous make
//! the host thread wait, classifies each into one word, and compares it with NVIDIA's documented rules.
//!
//! Where to start reading:
//! - `experiments/method.rs`: how one "did this call wait?" measurement works.
//! - `classify.rs`: how the measured signals become a class.
//! - `rules.rs`: what the documentation predicts.
//! - `driver/`: the thin, safe layer over the CUDA driver API.

pub mod api;
pub mod classify;
pub mod cli;
pub mod clock;
pub mod compare;
pub mod driver;
pub mod experiments;
pub mod explain;
pub mod html;
pub mod info;
pub mod measure;
pub mod output;
pub mod pattern;
pub mod ptx;
pub mod record;
pub mod report;
pub mod rules;
pub mod runtime;
pub mod selftest;
pub mod stability;
pub mod stats;
pub mod timing;
pub mod units;

/// The commit this binary was built from ("-dirty" when the tree had changes).
pub const GIT_COMMIT: &str = env!("ASYNC_LAB_GIT_COMMIT");

/// The folder holding the link-time `libcuda.so` stub (used by the no-driver tests).
pub const STUB_DIR: &str = env!("ASYNC_LAB_STUB_DIR");

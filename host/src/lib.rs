//! async-lab: measures, on a real NVIDIA GPU, which CUDA calls that people expect to be asynchronous make
//! the host thread wait, classifies each into one word, and compares it with NVIDIA's documented rules.
//!
//! This crate measures; what a measurement means (classes, rules, reports, the HTML page) is the
//! `async-lab-core` crate (`core/`), which needs no GPU. The map of the crates is `docs/crates.md`.
//!
//! Where to start reading:
//! - `experiments/method.rs`: how one "did this call wait?" measurement works.
//! - `async_lab_core::classify`: how the measured signals become a class.
//! - `async_lab_core::rules`: what the documentation predicts.
//! - `async_lab_driver` (`driver/`): the thin, safe layer over the CUDA driver API.

pub mod calibrate;
pub mod cli;
pub mod embedded_ptx;
pub mod experiments;
pub mod info;
pub mod measured_api;
pub mod pattern;
pub mod selftest;
pub mod stdout;
pub mod trace;

/// The commit this binary was built from ("-dirty" when the tree had changes).
pub const GIT_COMMIT: &str = env!("ASYNC_LAB_GIT_COMMIT");

//! The kernels' ABI as async-lab relies on it, in one place for every crate that needs it.
//!
//! `kernels` is the one list of the kernels that `gpu-kernels/kernels/src/lib.rs` defines and the host
//! launches by name, with the parameter types the host passes; `module` is the one PTX parser. The host checks
//! a PTX module against the list before loading it, `cargo xtask build-ptx` checks the module it built, and a
//! test in `xtask/src/tidy.rs` checks the list against the kernels' source.

#![forbid(unsafe_code)]

pub mod kernels;
pub mod module;

pub use kernels::{Kernel, KERNELS};
pub use module::{Entry, Module};

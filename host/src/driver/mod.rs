//! The CUDA driver, in three small layers (as cudarc does): `sys` declares the entry points, `error`
//! turns result codes into `Result`s with names, and the rest are safe owners of driver objects.
//!
//! `cust` provides the context and the module loading; everything the experiments time goes through `sys`
//! directly, so that exactly one driver call happens between the two clock readings.

pub mod batch;
pub mod error;
pub mod gpu;
pub mod graph;
pub mod library;
pub mod limits;
pub mod memory;
pub mod peer;
pub mod probe;
pub mod resolve;
pub mod stream;
pub mod streammem;
pub mod sys;
pub mod unified;
pub mod vmm;

pub use error::{check, DriverError, DriverResult};
pub use gpu::{Gpu, Kernels};
pub use memory::{DeviceBuffer, HostBuffer, HostKind, PageableBuffer};
pub use peer::PeerLink;
pub use probe::{device_handle, NoGpu};
pub use stream::{Event, Stream, StreamHandle, StreamKind};

//! async-lab's way to the GPU: the CUDA driver, in three small layers (as cudarc does): `sys` declares the
//! entry points, `error` turns result codes into `Result`s with names, and the rest are safe owners of
//! driver objects; `runtime`, the CUDA runtime loaded at run time; `ptx`, the kernels' module checked before
//! use; `measure`, the host clock the experiments time calls with.
//!
//! `cust` provides the context and the module loading; everything the experiments time goes through one small
//! `#[inline]` function per driver call (cudarc's `result` layer is the model), which makes no context current,
//! so that exactly one driver call happens between the two clock readings. Nothing here decides
//! what a measurement means: that is `async-lab-core`, which this crate uses only for the typed setup data
//! (the API, host memory and stream kinds, what a recording says about the machine). See `docs/crates.md`.

pub mod batch;
pub mod device;
pub mod error;
pub mod error_text;
pub mod gpu;
pub mod graph;
pub mod library;
pub mod limits;
pub mod measure;
pub mod memory;
pub mod peer;
pub mod probe;
pub mod ptx;
pub mod resolve;
pub mod runtime;
pub mod stream;
pub mod stream_handle;
pub mod streammem;
pub mod sys;
pub mod unified;
pub mod vmm;

/// The folder holding the link-time `libcuda.so` stub (used by the no-driver tests).
pub const STUB_DIR: &str = env!("ASYNC_LAB_STUB_DIR");

pub use error::{check, CudaError, CudaResult};
pub use gpu::{ContextRef, Gpu, Kernels};
pub use memory::{DeviceBuffer, HostBuffer, HostKind, PageableBuffer};
pub use peer::PeerLink;
pub use probe::{device_handle, NoGpu};
pub use stream::{Event, EventRef, Stream, StreamKind};
pub use stream_handle::StreamHandle;

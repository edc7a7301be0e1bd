//! Device-side helpers for Rust kernels compiled by rustc's built-in `nvptx64-nvidia-cuda` backend.
//!
//! They play the role that `cuda_std` plays for rust-cuda's NVVM backend, which cannot be used here (it needs
//! LLVM 7, and `cuda_std` itself does not build with the LLVM PTX backend). Where `cuda_std` has an equivalent,
//! the module and the name are the same (`thread::thread_idx_x`, `thread::index_1d`, `thread::nanosleep`,
//! `misc::clock`, ...), so a kernel ports to rust-cuda by changing `nvptx_helpers` to `cuda_std` in its imports.
//! `misc::{clock64, globaltimer, trap}` have no `cuda_std` twin.
//!
//! With the default `panic-handler` feature the crate also provides the `#[panic_handler]`, which traps.

#![no_std]
#![feature(asm_experimental_arch, stdarch_nvptx)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod misc;
pub mod thread;

/// Aborts the kernel with a trap: the host sees the launch fail. Panic messages cannot be printed from here.
#[cfg(feature = "panic-handler")]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    misc::trap()
}

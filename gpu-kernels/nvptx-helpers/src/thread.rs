//! Where the running thread is: thread and block indices, launch dimensions, and sleeping.
//!
//! Names and types (`u32`) follow `cuda_std::thread`.

use core::arch::{asm, nvptx};

/// Defines a safe getter for one special register read by a `core::arch::nvptx` intrinsic.
macro_rules! special_register {
    ($($(#[$doc:meta])* $name:ident => $intrinsic:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            // SAFETY: the intrinsic only reads a read-only special register (`%tid`, `%ctaid`, `%ntid` or
            // `%nctaid`) that every kernel thread has. It has no preconditions; core declares all of its nvptx
            // intrinsics `unsafe` regardless.
            unsafe { nvptx::$intrinsic() }
        }
    )*};
}

special_register! {
    /// The thread's x index within its block (`threadIdx.x`).
    thread_idx_x => _thread_idx_x;
    /// The thread's y index within its block (`threadIdx.y`).
    thread_idx_y => _thread_idx_y;
    /// The thread's z index within its block (`threadIdx.z`).
    thread_idx_z => _thread_idx_z;
    /// The block's x index within the grid (`blockIdx.x`).
    block_idx_x => _block_idx_x;
    /// The block's y index within the grid (`blockIdx.y`).
    block_idx_y => _block_idx_y;
    /// The block's z index within the grid (`blockIdx.z`).
    block_idx_z => _block_idx_z;
    /// The number of threads per block in x (`blockDim.x`).
    block_dim_x => _block_dim_x;
    /// The number of threads per block in y (`blockDim.y`).
    block_dim_y => _block_dim_y;
    /// The number of threads per block in z (`blockDim.z`).
    block_dim_z => _block_dim_z;
    /// The number of blocks in the grid in x (`gridDim.x`).
    grid_dim_x => _grid_dim_x;
    /// The number of blocks in the grid in y (`gridDim.y`).
    grid_dim_y => _grid_dim_y;
    /// The number of blocks in the grid in z (`gridDim.z`).
    grid_dim_z => _grid_dim_z;
}

/// The thread's global index in a 1-D launch: `blockIdx.x * blockDim.x + threadIdx.x`.
#[inline(always)]
pub fn index_1d() -> u32 {
    block_idx_x() * block_dim_x() + thread_idx_x()
}

/// Suspends the thread for about `ns` nanoseconds (the hardware may wake it earlier or later); needs sm_70.
#[inline(always)]
pub fn nanosleep(ns: u32) {
    // SAFETY: `nanosleep.u32` only delays this thread; it reads the input register and touches no memory or
    // stack. It needs sm_70, which `cargo xtask build-ptx` targets (`-C target-cpu=sm_70`).
    unsafe { asm!("nanosleep.u32 {};", in(reg32) ns, options(nomem, nostack)) };
}

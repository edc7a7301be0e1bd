//! The kernels of `gpu-kernels/kernels/src/lib.rs`, in its order, with their PTX parameter types.

use std::ffi::CStr;

/// A kernel the host launches by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub name: &'static str,
    /// The same name for calls that take a C string (`cuLibraryGetKernel`, `cuModuleGetFunction`).
    pub c_name: &'static CStr,
    /// The PTX types of its parameters (`.u64` for pointers and `u64`s, `.u32` for `u32`s).
    pub params: &'static [&'static str],
}

impl Kernel {
    /// `name(.u64, .u32)`: as `Entry::signature` writes a parsed kernel.
    pub fn signature(&self) -> String {
        format!("{}({})", self.name, self.params.join(", "))
    }
}

/// `spin_sleep(cycles: u64, out: *mut u64)`: spins for `cycles` SM clock cycles (the blocker).
pub const SPIN_SLEEP: Kernel = Kernel { name: "spin_sleep", c_name: c"spin_sleep", params: &[".u64", ".u64"] };
/// `spin_wait_ns(ns: u64, stamps: *mut u64)`: spins for `ns` of `%globaltimer` and notes its start and end.
pub const SPIN_WAIT_NS: Kernel = Kernel { name: "spin_wait_ns", c_name: c"spin_wait_ns", params: &[".u64", ".u64"] };
/// `empty()`: does nothing (launch overhead).
pub const EMPTY: Kernel = Kernel { name: "empty", c_name: c"empty", params: &[] };
/// `fill(dst: *mut u8, len: u64, seed: u32)`: writes the test pattern.
pub const FILL: Kernel = Kernel { name: "fill", c_name: c"fill", params: &[".u64", ".u64", ".u32"] };
/// `checksum(src: *const u8, len: u64, out: *mut u64)`: sums the pattern's terms.
pub const CHECKSUM: Kernel = Kernel { name: "checksum", c_name: c"checksum", params: &[".u64", ".u64", ".u64"] };
/// `write_globaltimer(out: *mut u64)`: writes `%globaltimer` once (clock calibration).
pub const WRITE_GLOBALTIMER: Kernel =
    Kernel { name: "write_globaltimer", c_name: c"write_globaltimer", params: &[".u64"] };

/// Every kernel, in the order of `gpu-kernels/kernels/src/lib.rs`.
pub const KERNELS: [Kernel; 6] = [SPIN_SLEEP, SPIN_WAIT_NS, EMPTY, FILL, CHECKSUM, WRITE_GLOBALTIMER];

/// The kernel of this name.
pub fn kernel(name: &str) -> Option<&'static Kernel> {
    KERNELS.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kernel_is_named_once_and_alike_in_both_forms() {
        for (i, k) in KERNELS.iter().enumerate() {
            assert_eq!(k.c_name.to_str(), Ok(k.name));
            assert_eq!(kernel(k.name), Some(k));
            assert!(!KERNELS[..i].iter().any(|other| other.name == k.name), "{} is listed twice", k.name);
        }
    }
}

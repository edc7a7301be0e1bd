//! Driver entry points looked up at run time, for calls newer than the oldest driver this project supports.
//!
//! A function the binary links against must exist in every driver it runs on, or the binary does not start.
//! Calls added in CUDA 12.x (`cuGraphInstantiateWithParams`, the `_v2` forms of `cuMemPrefetchAsync` and
//! `cuMemAdvise` that take a `CUmemLocation`, the signature CUDA 13 gives the plain names) are looked up by
//! their exported name in the already loaded driver instead; where the driver lacks one, the experiment that
//! needs it is *not run*, with the name as the reason.

use std::ffi::{c_void, CStr};

/// The address of the driver's exported function `name`, or `None` where the loaded driver has none.
pub fn entry_point(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: `name` is NUL-terminated; RTLD_DEFAULT searches the objects already loaded into the process (the
    // driver is one: the binary links libcuda.so.1); dlsym only reads the symbol tables.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// Looks up `$name` and casts it to the function pointer type `$ty`: `resolve!(cuMemAdvise_v2: AdviseV2)`.
/// The caller's type must be the C signature the driver's header gives that exact versioned name.
#[macro_export]
macro_rules! resolve {
    ($name:ident : $ty:ty) => {
        $crate::resolve::entry_point(
            std::ffi::CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes())
                .expect("a function name has no NUL"),
        )
        .map(|p| {
            // SAFETY: `p` is the address of the exported function `$name`, whose C signature `$ty` spells (the
            // caller's promise); data and function pointers have the same size on the platforms CUDA supports.
            unsafe { std::mem::transmute::<*mut std::ffi::c_void, $ty>(p) }
        })
        .ok_or(concat!("the driver has no ", stringify!($name)))
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_name_is_none_and_a_libc_name_is_found() {
        assert!(super::entry_point(c"cuNoSuchFunctionAnywhere_v9").is_none());
        // libc is always loaded: the lookup itself works.
        assert!(super::entry_point(c"malloc").is_some());
    }
}

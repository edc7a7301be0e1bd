//! The CUDA runtime API (libcudart), loaded at run time.
//!
//! Most programs that ask "why does this block?" call the runtime, not the driver: nvcc-built C++,
//! PyTorch, JAX, CuPy. async-lab measures its calls too. The library is not linked: a user may have a
//! driver and no toolkit, and then every runtime experiment is *not run*, with the reason, instead of the
//! binary failing to start. `locate` finds the file; the declarations are cudarc's (`cudarc::runtime::sys`,
//! dynamic loading), which resolve their symbols in the library this module loaded first (see `load`).
//!
//! The runtime shares the device's primary context with the driver-side objects of an experiment (cust's
//! `Context` retains that same primary context), so streams, events and buffers made through the driver are
//! valid arguments to runtime calls, and only the call under test changes API.

pub mod batch;
pub mod graph;
pub mod library;
pub mod limits;
pub mod locate;
pub mod memory;
pub mod stream;
pub mod unified;

use crate::CudaError;
use async_lab_core::api::Api;
pub use cudarc::runtime::sys;
use std::ffi::{c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Every runtime function async-lab calls through cudarc's declarations. Each is looked up when the library
/// loads, so a runtime that lacks one is reported as unusable up front (cudarc's lazy lookup would panic at the
/// first call instead). Calls newer than CUDA 12.0, or whose signature changed between major versions
/// (`cudaMemPrefetchAsync`, `cudaMemAdvise`, `cudaMemcpyBatchAsync`), are not here: they are looked up by name
/// when an experiment needs them (`rt_resolve!`), in the form the loaded runtime's version gives them, and a
/// runtime without them leaves only those experiments *not run*.
pub const REQUIRED: &[&str] = &[
    "cudaRuntimeGetVersion",
    "cudaDriverGetVersion",
    "cudaGetErrorName",
    "cudaGetErrorString",
    "cudaSetDevice",
    "cudaSetDeviceFlags",
    "cudaGetDeviceFlags",
    "cudaDeviceSynchronize",
    "cudaFree",
    "cudaMalloc",
    "cudaMallocHost",
    "cudaFreeHost",
    "cudaHostRegister",
    "cudaHostUnregister",
    "cudaMallocManaged",
    "cudaMallocAsync",
    "cudaFreeAsync",
    "cudaMemcpy",
    "cudaMemcpyAsync",
    "cudaMemset",
    "cudaMemsetAsync",
    "cudaLaunchKernel",
    "cudaLaunchHostFunc",
    "cudaStreamAddCallback",
    "cudaStreamCreateWithFlags",
    "cudaStreamDestroy",
    "cudaStreamSynchronize",
    "cudaEventRecord",
    "cudaEventSynchronize",
    "cudaLibraryLoadData",
    "cudaLibraryUnload",
    "cudaLibraryGetKernel",
    "cudaGraphInstantiateWithFlags",
    "cudaGraphUpload",
    "cudaGraphLaunch",
    "cudaFuncSetAttribute",
    "cudaFuncGetAttributes",
    "cudaDeviceSetLimit",
    "cudaDeviceGetLimit",
    "cudaMemGetInfo",
    "cudaDeviceGetAttribute",
];

/// The loaded runtime.
pub struct Runtime {
    /// Keeps the library mapped for the life of the process (cudarc's handle refers to the same mapping); also
    /// the handle `symbol` looks names up in.
    lib: libloading::os::unix::Library,
    pub path: PathBuf,
    pub source: &'static str,
    /// `cudaRuntimeGetVersion`, e.g. 13000.
    pub version: i32,
    /// `cudaDriverGetVersion`: the newest runtime the installed driver supports.
    pub driver_version: i32,
}

pub use async_lab_core::machine::RuntimeInfo;

impl Runtime {
    /// The address of this library's exported function `name`, or `None` where it has none. For the calls
    /// `REQUIRED` leaves out (see there); `rt_resolve!` gives it a type.
    pub fn symbol(&self, name: &CStr) -> Option<*mut c_void> {
        // SAFETY: only the symbol's address is read; it is not called here. `name` is NUL-terminated.
        let found = unsafe { self.lib.get::<*mut c_void>(name.to_bytes_with_nul()) };
        found.ok().map(|s| *s).filter(|p| !p.is_null())
    }
}

/// Looks up the runtime's exported function `$name` in the loaded libcudart and casts it to the function
/// pointer type `$ty`: `rt_resolve!(cudaMemPrefetchAsync_v2: PrefetchLocated)`. The caller's type must be the
/// C signature that exact name has in the loaded runtime's version (check `get()?.version` first where the
/// signature changed between versions). Errs with a sentence naming the function when it is missing.
#[macro_export]
macro_rules! rt_resolve {
    ($name:ident : $ty:ty) => {
        $crate::runtime::get()
            .ok()
            .and_then(|rt| {
                rt.symbol(
                    std::ffi::CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes())
                        .expect("a function name has no NUL"),
                )
            })
            .map(|p| {
                // SAFETY: `p` is the address of the runtime's exported function `$name`, whose C signature `$ty`
                // spells (the caller's promise); data and function pointers have the same size on the platforms
                // CUDA supports.
                unsafe { std::mem::transmute::<*mut std::ffi::c_void, $ty>(p) }
            })
            .ok_or(concat!("the CUDA runtime library has no ", stringify!($name)))
    };
}

/// Turns the raw result of a runtime function called through `rt_resolve!` (declared to return a C `int`, so
/// that a code the bindings' enum lacks is still a plain number) into `Ok(())` or an error naming `call`.
pub fn check_code(code: c_int, call: &'static str) -> Result<(), CudaError> {
    match code {
        0 => Ok(()),
        c => Err(CudaError { code: c as u32, call, api: Api::Runtime }),
    }
}

static EXPLICIT: OnceLock<Option<PathBuf>> = OnceLock::new();
static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// Remembers `--cudart` (call once, before the first runtime call; later calls are ignored).
pub fn configure(explicit: Option<&Path>) {
    let _ = EXPLICIT.set(explicit.map(Path::to_path_buf));
}

/// The runtime, loaded on first use; or why it cannot be used (the same answer for the whole run).
pub fn get() -> Result<&'static Runtime, &'static str> {
    RUNTIME
        .get_or_init(|| {
            let explicit = EXPLICIT.get_or_init(|| None).as_deref();
            let found = locate::find(&locate::Env::current(explicit)).map_err(|e| match e {
                locate::NotFound::Explicit(why) => format!("no usable CUDA runtime library: {why}"),
                locate::NotFound::Searched(looked) => format!(
                    "no CUDA runtime library (libcudart.so) found; looked in {}. Install the CUDA toolkit or a \
                     runtime wheel (pip install nvidia-cuda-runtime), or name the file with --cudart PATH or {}",
                    looked.join(", "),
                    locate::ENV_VAR
                ),
            })?;
            load(found)
        })
        .as_ref()
        .map_err(String::as_str)
}

/// What to store about the runtime in a recording.
pub fn info() -> RuntimeInfo {
    match get() {
        Ok(rt) => RuntimeInfo {
            file: rt.path.file_name().map(|f| f.to_string_lossy().into_owned()),
            source: Some(rt.source.to_owned()),
            version: Some(version_string(rt.version)),
            unusable: None,
        },
        Err(why) => RuntimeInfo { file: None, source: None, version: None, unusable: Some(why.to_owned()) },
    }
}

/// 13000 → "13.0".
pub fn version_string(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

fn load(found: locate::Found) -> Result<Runtime, String> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    let shown = found.path.display();
    // SAFETY: loading libcudart runs its initializers, which only set up its own state; the file was chosen
    // by name (libcudart.so*) or by the user.
    let lib = unsafe { Library::open(Some(&found.path), RTLD_NOW | RTLD_GLOBAL) }
        .map_err(|e| format!("the CUDA runtime library {shown} could not be loaded: {e}"))?;
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        // SAFETY: only the symbol's presence is checked; the pointer is not used.
        .filter(|name| unsafe { lib.get::<*const c_void>(name.as_bytes()) }.is_err())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the CUDA runtime library {shown} lacks {} (async-lab needs CUDA 12.0 or newer)",
            missing.join(", ")
        ));
    }
    // cudarc resolves its symbols through its own handle, opened by soname. With ours loaded first, the
    // dynamic loader hands it the same library, unless another libcudart.so shadows it on the search path:
    // check that both handles give the same function.
    // SAFETY: the symbol exists (checked above); only its address is compared.
    let ours = unsafe { lib.get::<*const c_void>(b"cudaRuntimeGetVersion") }.map(|s| *s).ok();
    // cudarc panics when its search finds nothing; that answer is ours to give, so the panic stays quiet.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let theirs = std::panic::catch_unwind(|| {
        // SAFETY: as above; `culib` only opens the library by name.
        unsafe { sys::culib().get::<*const c_void>(b"cudaRuntimeGetVersion").map(|s| *s).ok() }
    })
    .ok()
    .flatten();
    std::panic::set_hook(hook);
    if ours.is_none() || ours != theirs {
        return Err(format!(
            "the CUDA runtime library {shown} was loaded, but another libcudart on the library search path \
             shadows it; name the same file with --cudart, or remove the other from LD_LIBRARY_PATH"
        ));
    }
    let (mut version, mut driver_version): (c_int, c_int) = (0, 0);
    // SAFETY: valid out-pointers; neither call needs a GPU.
    unsafe {
        check(sys::cudaRuntimeGetVersion(&mut version), "cudaRuntimeGetVersion").map_err(|e| e.to_string())?;
        check(sys::cudaDriverGetVersion(&mut driver_version), "cudaDriverGetVersion").map_err(|e| e.to_string())?;
    }
    // Minor-version compatibility: a runtime runs on any driver of its major version (CUDA 11.1 on).
    if driver_version != 0 && version / 1000 > driver_version / 1000 {
        return Err(format!(
            "the CUDA runtime {} ({shown}) needs a driver for CUDA {}.0 or newer; this driver supports CUDA {}",
            version_string(version),
            version / 1000,
            version_string(driver_version)
        ));
    }
    Ok(Runtime { lib, path: found.path, source: found.source, version, driver_version })
}

/// Turns a runtime result into `Ok(())` or an error that names `call` and reads the runtime's own codes.
pub fn check(code: sys::cudaError_t, call: &'static str) -> Result<(), CudaError> {
    match code {
        sys::cudaError_t::cudaSuccess => Ok(()),
        c => Err(CudaError { code: c as u32, call, api: Api::Runtime }),
    }
}

/// The runtime's name for an error code (`cudaErrorInvalidValue`), or the number.
pub fn error_name(code: u32) -> String {
    lookup(code, |c| {
        // SAFETY: the runtime is loaded (`get` succeeded) and returns a static string for any code.
        unsafe { sys::cudaGetErrorName(c) }
    })
    .unwrap_or_else(|| format!("cudaError {code}"))
}

/// The runtime's sentence for an error code.
pub fn error_text(code: u32) -> Option<String> {
    lookup(code, |c| {
        // SAFETY: as in `error_name`.
        unsafe { sys::cudaGetErrorString(c) }
    })
}

fn lookup(code: u32, f: impl Fn(sys::cudaError_t) -> *const std::ffi::c_char) -> Option<String> {
    get().ok()?;
    // Only codes the bindings know are turned back into their enum (an unknown value would be undefined).
    let known = ERROR_CODES.iter().find(|&&c| c as u32 == code)?;
    let text = f(*known);
    // SAFETY: the runtime returns a pointer to a static NUL-terminated string, or null.
    (!text.is_null()).then(|| unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

/// The error codes a runtime call made here can plausibly return, for naming them.
const ERROR_CODES: &[sys::cudaError_t] = {
    use sys::cudaError_t::*;
    &[
        cudaErrorInvalidValue,
        cudaErrorMemoryAllocation,
        cudaErrorInitializationError,
        cudaErrorInvalidConfiguration,
        cudaErrorInvalidDevicePointer,
        cudaErrorInvalidMemcpyDirection,
        cudaErrorInsufficientDriver,
        cudaErrorNoDevice,
        cudaErrorInvalidDevice,
        cudaErrorInvalidKernelImage,
        cudaErrorNoKernelImageForDevice,
        cudaErrorInvalidPtx,
        cudaErrorUnsupportedPtxVersion,
        cudaErrorInvalidResourceHandle,
        cudaErrorSymbolNotFound,
        cudaErrorNotReady,
        cudaErrorIllegalAddress,
        cudaErrorLaunchFailure,
        cudaErrorLaunchTimeout,
        cudaErrorHostMemoryAlreadyRegistered,
        cudaErrorHostMemoryNotRegistered,
        cudaErrorSetOnActiveProcess,
        cudaErrorNotSupported,
        cudaErrorNotPermitted,
        cudaErrorStubLibrary,
        cudaErrorDevicesUnavailable,
        cudaErrorUnknown,
    ]
};

/// Calls a runtime function and checks its result: `rt!(cudaDeviceSynchronize())`. Every function named
/// here must be in `REQUIRED` (a test checks the sources).
#[macro_export]
macro_rules! rt {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        $crate::runtime::check($crate::runtime::sys::$f($($arg),*), stringify!($f))
    };
}

/// A stream callback that reads the status as a raw code. The bindings declare `cudaStreamCallback_t`'s status
/// as their enum, and a code the enum lacks (a newer runtime's) would be undefined behaviour in a Rust enum.
pub type RawStreamCallback = unsafe extern "C" fn(sys::cudaStream_t, u32, *mut c_void);

/// `f` as the bindings' `cudaStreamCallback_t`, for `cudaStreamAddCallback`.
pub fn stream_callback(f: RawStreamCallback) -> sys::cudaStreamCallback_t {
    type Declared = unsafe extern "C" fn(sys::cudaStream_t, sys::cudaError_t, *mut c_void);
    // SAFETY: Rust never calls the pointer this returns; only the C runtime does, passing the status as C's
    // `cudaError_t`, an `int`-sized enum: the same register and size as `f`'s `u32` under the C calling
    // convention, so `f` receives the code as a plain integer, whatever its value.
    Some(unsafe { std::mem::transmute::<RawStreamCallback, Declared>(f) })
}

/// Makes GPU `ordinal` the runtime's current device (its primary context, the one the driver-side objects
/// live in).
pub fn set_device(ordinal: i32) -> Result<(), CudaError> {
    get().map_err(|_| CudaError {
        code: sys::cudaError_t::cudaErrorInitializationError as u32,
        call: "cudaSetDevice (the runtime library could not be loaded)",
        api: Api::Runtime,
    })?;
    // SAFETY: plain call with an ordinal; the runtime answers an error for a bad one.
    unsafe { rt!(cudaSetDevice(ordinal)) }
}

/// `cudaGetDeviceFlags`: the flags of the runtime's current device (set by `set_device` first).
pub fn device_flags() -> Result<u32, CudaError> {
    let mut flags = 0u32;
    // SAFETY: `flags` is a valid out-pointer.
    unsafe { rt!(cudaGetDeviceFlags(&mut flags))? };
    Ok(flags)
}

/// `cudaSetDeviceFlags`: sets the current device's flags (its primary context's scheduling flags among them).
pub fn set_device_flags(flags: u32) -> Result<(), CudaError> {
    // SAFETY: plain call with a flags word; the runtime answers an error for one it refuses.
    unsafe { rt!(cudaSetDeviceFlags(flags)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every runtime function the sources name as a call (its name, then an opening parenthesis: through
    /// `rt!`, `sys::` or an alias) is
    /// looked up at load, so a runtime that lacks one is refused up front instead of panicking mid-run; and
    /// every function looked up is called somewhere, so the list says what async-lab needs.
    #[test]
    fn required_is_exactly_what_the_sources_call() {
        // The calls are made here and by the experiments (`host/src`), which use this crate.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let mut files = vec![root.join("driver/src"), root.join("host/src")];
        let mut called = std::collections::BTreeSet::new();
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if p.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            for (i, _) in text.match_indices("cuda") {
                let name: String = text[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                let is_call = name.len() > 4
                    && name.as_bytes()[4].is_ascii_uppercase()
                    && text[i + name.len()..].starts_with('(')
                    && !text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
                if is_call {
                    called.insert(name);
                }
            }
        }
        assert!(called.contains("cudaMemcpyAsync"), "the scan found no runtime calls: {called:?}");
        let missing: Vec<_> = called.iter().filter(|n| !REQUIRED.contains(&n.as_str())).collect();
        assert!(missing.is_empty(), "runtime functions called but not in REQUIRED: {missing:?}");
        let unused: Vec<_> = REQUIRED.iter().filter(|n| !called.contains(**n)).collect();
        assert!(unused.is_empty(), "in REQUIRED but never called: {unused:?}");
    }

    #[test]
    fn a_file_that_is_not_a_library_is_refused_with_its_name() {
        let dir = std::env::temp_dir().join(format!("async-lab-rt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("libcudart.so.13");
        std::fs::write(&fake, b"not an ELF file").unwrap();
        let err = load(locate::Found { path: fake.clone(), source: "--cudart" }).err().expect("refused");
        assert!(err.contains("could not be loaded") && err.contains(&fake.display().to_string()), "{err}");
    }

    #[test]
    fn a_runtime_that_lacks_a_function_is_refused_and_named() {
        // A stand-in libcudart with one function of the many async-lab calls, built with the C compiler the
        // build needs anyway (for the driver stub).
        let dir = std::env::temp_dir().join(format!("async-lab-rt-lacks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = dir.join("stand_in.c");
        std::fs::write(&c, "int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }\n").unwrap();
        let lib = dir.join("libcudart.so.99");
        let status = std::process::Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-shared", "-fPIC", "-o"])
            .arg(&lib)
            .arg(&c)
            .status()
            .expect("run the C compiler");
        assert!(status.success(), "cc failed");
        let err = load(locate::Found { path: lib, source: "--cudart" }).err().expect("refused");
        assert!(err.contains("lacks") && err.contains("cudaMemcpyAsync") && err.contains("CUDA 12.0"), "{err}");
        assert!(!err.contains("cudaRuntimeGetVersion,"), "the function it has is not listed: {err}");
    }

    #[test]
    fn versions_read_as_major_dot_minor() {
        assert_eq!(version_string(13000), "13.0");
        assert_eq!(version_string(12080), "12.8");
    }
}

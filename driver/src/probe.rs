//! Starting the driver, with a diagnosis a person can act on when there is no usable GPU.

use super::error::{check, CudaError, CudaResult};
use super::sys;
use std::fmt;

/// Why no GPU work can be done on this machine.
#[derive(Debug)]
pub enum NoGpu {
    /// `libcuda.so.1` is the link-time stub, not a driver.
    StubLibrary,
    /// The driver loaded but sees no CUDA device.
    NoDevice,
    /// The driver is too old for this program, or does not match the kernel module.
    DriverMismatch(CudaError),
    /// Anything else `cuInit` or the device query reported.
    Other(CudaError),
}

impl fmt::Display for NoGpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoGpu::StubLibrary => write!(
                f,
                "no NVIDIA driver: the libcuda.so.1 found is the build's stub library. Run on a machine with an \
                 NVIDIA GPU and its driver (or `cargo xtask bundle` and copy the bundle there)"
            ),
            NoGpu::NoDevice => write!(
                f,
                "no CUDA GPU: the NVIDIA driver is installed but reports no device (check `nvidia-smi` and \
                 CUDA_VISIBLE_DEVICES)"
            ),
            NoGpu::DriverMismatch(e) => write!(f, "the NVIDIA driver cannot be used: {e}"),
            NoGpu::Other(e) => write!(f, "the CUDA driver could not start: {e}"),
        }
    }
}

impl std::error::Error for NoGpu {}

/// The driver's handle of GPU `ordinal` (after `init_driver`; `ordinal` below the count it returned).
pub fn device_handle(ordinal: i32) -> CudaResult<sys::CUdevice> {
    let mut device = 0;
    // SAFETY: valid out-pointer; the driver accepts any ordinal and answers an error for one out of range.
    unsafe { check(sys::cuDeviceGet(&mut device, ordinal), "cuDeviceGet")? };
    Ok(device)
}

/// Runs `cuInit` and checks that at least one device exists.
pub fn init_driver() -> Result<i32, NoGpu> {
    // SAFETY: cuInit takes a flags word (0 is the only valid value) and may be called any number of times.
    let rc = unsafe { sys::cuInit(0) };
    match rc {
        sys::CUDA_SUCCESS => {}
        sys::CUDA_ERROR_STUB_LIBRARY => return Err(NoGpu::StubLibrary),
        sys::CUDA_ERROR_NO_DEVICE => return Err(NoGpu::NoDevice),
        sys::CUDA_ERROR_INSUFFICIENT_DRIVER
        | sys::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
        | sys::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE => {
            return Err(NoGpu::DriverMismatch(crate::CudaError::driver(rc, "cuInit")))
        }
        _ => return Err(NoGpu::Other(crate::CudaError::driver(rc, "cuInit"))),
    }
    let mut count = 0;
    // SAFETY: `count` is a valid out-pointer for one int; the driver was initialised above.
    let rc = unsafe { sys::cuDeviceGetCount(&mut count) };
    if rc != sys::CUDA_SUCCESS {
        return Err(NoGpu::Other(crate::CudaError::driver(rc, "cuDeviceGetCount")));
    }
    if count == 0 {
        return Err(NoGpu::NoDevice);
    }
    Ok(count)
}

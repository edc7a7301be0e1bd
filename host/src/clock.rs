//! Aligning the host's clock with the GPU's: how far `%globaltimer` is ahead of `CLOCK_MONOTONIC`.
//!
//! A one-thread kernel writes `%globaltimer` while the host notes its monotonic clock just before the launch
//! and just after the synchronization. The GPU's reading lies between the two host readings, so
//! `offset = gpu - (before + after) / 2` is off by at most half the round trip. Of many tries, the one with
//! the shortest round trip is kept: its half round trip is the stated uncertainty.

use crate::driver::{DeviceBuffer, Gpu, StreamHandle};
use crate::drv;
use crate::measure::monotonic_ns;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// `%globaltimer` minus host `CLOCK_MONOTONIC`, in ns.
    pub gpu_minus_host_ns: i64,
    /// Half the shortest round trip: the offset is right to within this many ns.
    pub uncertainty_ns: u64,
    pub samples: usize,
}

impl ClockOffset {
    /// A GPU timestamp on the host's clock.
    pub fn to_host(&self, gpu_ns: u64) -> i64 {
        gpu_ns as i64 - self.gpu_minus_host_ns
    }
}

pub fn calibrate(gpu: &Gpu, samples: usize) -> anyhow::Result<ClockOffset> {
    let out = DeviceBuffer::new(gpu, 8)?;
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..samples.max(1) {
        let before = monotonic_ns();
        gpu.launch_write_globaltimer(StreamHandle::LEGACY, out.ptr)?;
        gpu.synchronize()?;
        let after = monotonic_ns();
        let mut stamp = 0u64;
        // SAFETY: 8 bytes into a u64; the device is synchronized.
        unsafe { drv!(cuMemcpyDtoH_v2((&mut stamp as *mut u64).cast(), out.ptr, 8))? };
        let half = (after - before) / 2;
        let offset = stamp as i64 - (before + half) as i64;
        if best.is_none_or(|(h, _)| half < h) {
            best = Some((half, offset));
        }
    }
    let (uncertainty_ns, gpu_minus_host_ns) = best.expect("at least one sample");
    Ok(ClockOffset { gpu_minus_host_ns, uncertainty_ns, samples: samples.max(1) })
}

//! Measuring how far the GPU's `%globaltimer` is ahead of the host's `CLOCK_MONOTONIC` (the method, and the
//! fit of a run's calibrations, are described in `async_lab_core::clock`).

use async_lab_core::clock::ClockOffset;
use async_lab_driver::measure::monotonic_ns;
use async_lab_driver::{DeviceBuffer, Gpu, StreamHandle};

/// Calibrates `samples` times and keeps the try with the shortest round trip.
pub fn calibrate(gpu: &Gpu, samples: usize) -> anyhow::Result<ClockOffset> {
    let out = DeviceBuffer::new(gpu, 8)?;
    let mut best: Option<(u64, i64, i64)> = None;
    for _ in 0..samples.max(1) {
        let before = monotonic_ns();
        gpu.launch_write_globaltimer(StreamHandle::LEGACY, out.ptr)?;
        gpu.synchronize()?;
        let after = monotonic_ns();
        let stamp = out.read_u64s(1)?[0];
        let half = (after - before) / 2;
        let offset = stamp as i64 - (before + half) as i64;
        if best.is_none_or(|(h, _, _)| half < h) {
            best = Some((half, offset, (before + half) as i64));
        }
    }
    let (uncertainty_ns, gpu_minus_host_ns, at) = best.expect("at least one sample");
    Ok(ClockOffset { gpu_minus_host_ns, uncertainty_ns, samples: samples.max(1), at_host_ns: Some(at) })
}

//! `async-lab selftest`: proves the toolchain end to end on a GPU. The Rust kernels load, `spin_sleep` waits
//! as long as asked on every thread, and a copied buffer arrives intact (checked on the GPU and the host).

use crate::driver::{DeviceBuffer, Event, Gpu, HostBuffer, HostKind, Stream, StreamKind};
use crate::{drv, pattern};
use anyhow::{ensure, Context as _};

/// What the self-test measured.
#[derive(Debug)]
pub struct SelftestReport {
    pub requested_cycles: u64,
    pub threads: usize,
    pub min_cycles: u64,
    pub max_cycles: u64,
    pub spin_us: f64,
    pub copy_bytes: usize,
}

pub fn run(gpu: &Gpu, cycles: u64) -> anyhow::Result<SelftestReport> {
    ensure!(cycles > 0, "--cycles must be at least 1");
    let (grid, block) = (128u32, 128u32);
    let threads = (grid * block) as usize;
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let out = DeviceBuffer::new(gpu, threads * 8)?;
    let (start, end) = (Event::new(gpu)?, Event::new(gpu)?);

    // Warm-up launch, so the timed one measures the spin and not the module's first use.
    gpu.launch_spin_sleep(stream.handle(), grid, block, 1000, out.ptr)?;
    start.record(stream.handle())?;
    gpu.launch_spin_sleep(stream.handle(), grid, block, cycles, out.ptr)?;
    end.record(stream.handle())?;
    stream.synchronize().context("spin_sleep failed on the GPU")?;
    let spin_us = end.ns_since(&start)? as f64 / 1e3;

    let mut waited = vec![0u64; threads];
    // SAFETY: `waited` has room for `threads` u64s, `out` holds as many, and the stream is synchronized.
    unsafe { drv!(cuMemcpyDtoH_v2(waited.as_mut_ptr().cast(), out.ptr, threads * 8))? };
    let (min_cycles, max_cycles) = (*waited.iter().min().unwrap(), *waited.iter().max().unwrap());
    ensure!(min_cycles >= cycles, "a thread of spin_sleep waited only {min_cycles} cycles of the {cycles} requested");
    let limit = cycles + cycles.div_ceil(100);
    ensure!(
        max_cycles <= limit,
        "a thread of spin_sleep waited {max_cycles} cycles, more than 1% over the {cycles} requested"
    );

    let copy_bytes = check_copies(gpu, &stream)?;
    Ok(SelftestReport { requested_cycles: cycles, threads, min_cycles, max_cycles, spin_us, copy_bytes })
}

/// Host → device → (checksum on the GPU), then GPU fill → host (compare on the host).
fn check_copies(gpu: &Gpu, stream: &Stream) -> anyhow::Result<usize> {
    const LEN: usize = 3 << 20; // 3 MiB plus a ragged tail, to catch grid-stride mistakes
    let len = LEN + 123;
    let mut host = HostBuffer::new(gpu, HostKind::Pinned, len)?;
    let dev = DeviceBuffer::new(gpu, len)?;
    let sum = DeviceBuffer::new(gpu, 8)?;
    // SAFETY: nothing is pending on the GPU for `host` yet.
    pattern::fill(unsafe { host.bytes_mut() }, 0, 7);
    // SAFETY: both ranges are `len` bytes and live; the copy is synchronous.
    unsafe { drv!(cuMemcpyHtoD_v2(dev.ptr, host.as_ptr().cast(), len))? };
    // SAFETY: `sum` holds 8 bytes.
    unsafe { drv!(cuMemsetD8_v2(sum.ptr, 0, 8))? };
    gpu.launch_checksum(stream.handle(), dev.ptr, len as u64, sum.ptr)?;
    let mut got = 0u64;
    stream.synchronize()?;
    // SAFETY: 8 bytes into a u64; the stream is synchronized.
    unsafe { drv!(cuMemcpyDtoH_v2((&mut got as *mut u64).cast(), sum.ptr, 8))? };
    // SAFETY: the copies that read `host` have finished (synchronous copy, synchronized stream).
    let want = pattern::checksum(unsafe { host.bytes_mut() });
    ensure!(got == want, "the GPU's checksum of the copied buffer is {got:#x}, the host's {want:#x}");

    gpu.launch_fill(stream.handle(), dev.ptr, len as u64, 11)?;
    stream.synchronize()?;
    // SAFETY: as above; `host` is not in use by the GPU.
    unsafe { drv!(cuMemcpyDtoH_v2(host.as_ptr().cast(), dev.ptr, len))? };
    // SAFETY: the synchronous copy has finished.
    let bytes = unsafe { host.bytes_mut() };
    if let Some(i) = (0..len).find(|&i| bytes[i] != pattern::pattern_byte(i as u64, 11)) {
        anyhow::bail!(
            "byte {i} of the buffer filled on the GPU arrived as {:#04x}, expected {:#04x}",
            bytes[i],
            pattern::pattern_byte(i as u64, 11)
        );
    }
    Ok(len)
}

//! `async-lab selftest`: proves the toolchain end to end on a GPU. The Rust kernels load, `spin_sleep` waits
//! as long as asked on every thread, and a copied buffer arrives intact (checked on the GPU and the host).

use crate::pattern;
use anyhow::{ensure, Context as _};
use async_lab_driver::{DeviceBuffer, Event, Gpu, HostBuffer, HostKind, Stream, StreamKind};

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

    let waited = out.read_u64s(threads)?;
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
    // SAFETY: the GPU reaches `host` only through the synchronous copies below, each finished when it returns
    // (rules S2, S3), so no GPU work uses it while the host reads or writes it.
    let bytes = unsafe { host.bytes_mut() };
    pattern::fill(bytes, 0, 7);
    dev.copy_from_host(bytes)?;
    sum.set_bytes(0)?;
    // The memset may still be running (rule M1), and `stream` is not ordered after the legacy stream.
    gpu.synchronize()?;
    gpu.launch_checksum(stream.handle(), dev.ptr, len as u64, sum.ptr)?;
    stream.synchronize()?;
    let got = sum.read_u64s(1)?[0];
    let want = pattern::checksum(bytes);
    ensure!(got == want, "the GPU's checksum of the copied buffer is {got:#x}, the host's {want:#x}");

    gpu.launch_fill(stream.handle(), dev.ptr, len as u64, 11)?;
    stream.synchronize()?;
    dev.copy_to_host(bytes)?;
    if let Some(i) = (0..len).find(|&i| bytes[i] != pattern::pattern_byte(i as u64, 11)) {
        anyhow::bail!(
            "byte {i} of the buffer filled on the GPU arrived as {:#04x}, expected {:#04x}",
            bytes[i],
            pattern::pattern_byte(i as u64, 11)
        );
    }
    Ok(len)
}

//! Source and destination buffers for the copy and memset experiments, and how each kind is filled,
//! poisoned and verified without the checking itself dominating the run time.
//!
//! The test pattern comes from `pattern`. Host buffers are filled by copying a reference buffer made once
//! per experiment; device buffers by the `fill` kernel. Results are verified by the `checksum` kernel where
//! the GPU can read the destination (device, pinned, write-combined and managed memory; host reads of
//! write-combined memory are very slow), and by comparing with the reference on the host otherwise.
//!
//! The staging probe of the copy families (copies, batched copies) is here too: `Checker::probe_source`
//! overwrites a page of the source where the family's rule (`Probeable`) allows it, and
//! `Checker::verify_probe` says what arrived.

use crate::pattern::{self, checksum_term, pattern_byte};
use anyhow::{bail, ensure};
use async_lab_driver::memory::memset_d8;
use async_lab_driver::{DeviceBuffer, Gpu, HostBuffer, HostKind};

/// Seed of the data a copy should deliver, and of what the source is overwritten with after the return.
pub const SEED_ORIGINAL: u32 = 0xA11CE;
pub const SEED_OVERWRITE: u32 = 0xB0B;
/// How much of the source the staging probe overwrites: one page, so it is instant.
pub const PROBE_BYTES: u64 = 4096;

/// Which page of the source the staging probe overwrites: the first, where the copy has not started (the
/// blocker ahead of it still runs), or the last, where the copy is in flight (nothing ahead of it) and only the
/// end of the source can still be unread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Page {
    Head,
    Tail,
}

impl Page {
    /// The page's byte range in a buffer of `len` bytes.
    pub fn range(self, len: u64) -> std::ops::Range<usize> {
        let n = len.min(PROBE_BYTES) as usize;
        match self {
            Page::Head => 0..n,
            Page::Tail => len as usize - n..len as usize,
        }
    }
}

/// Which pages of a copy's source the staging probe may overwrite while the copy is pending: each copy
/// family's own rule, which `Checker::probe_source` applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probeable {
    /// Neither: the source is not host memory, or the copy may be reading it at any moment.
    Neither,
    /// The first page only, while the blocker ahead of the copy holds its work back.
    Head,
    /// Either page: a source the GPU cannot read itself, so the last page may be overwritten with the copy in
    /// flight too.
    Either,
}

impl Probeable {
    /// Whether the rule lets the probe overwrite `page`.
    pub fn allows(self, page: Page) -> bool {
        match self {
            Probeable::Neither => false,
            Probeable::Head => page == Page::Head,
            Probeable::Either => true,
        }
    }
}

/// One end of a copy.
pub enum Side<'g> {
    Device(DeviceBuffer<'g>),
    Host(HostBuffer<'g>),
}

impl<'g> Side<'g> {
    pub fn new(gpu: &'g Gpu, host: Option<HostKind>, len: usize) -> anyhow::Result<Side<'g>> {
        Ok(match host {
            None => Side::Device(DeviceBuffer::new(gpu, len)?),
            Some(kind) => Side::Host(HostBuffer::new(gpu, kind, len)?),
        })
    }

    /// The address in the unified address space (valid for `cuMemcpy`).
    pub fn addr(&self) -> u64 {
        match self {
            Side::Device(d) => d.ptr,
            Side::Host(h) => h.addr(),
        }
    }

    /// Whether the GPU can read it directly (so the `checksum` kernel can verify it).
    pub fn gpu_readable(&self) -> bool {
        match self {
            Side::Device(_) => true,
            Side::Host(h) => matches!(h.kind, HostKind::Pinned | HostKind::WriteCombined | HostKind::Managed),
        }
    }
}

/// Per-experiment verification state: the reference bytes and the checksums of what may arrive.
pub struct Checker<'g> {
    /// The GPU that verifies (the destination's, for copies between GPUs).
    gpu: &'g Gpu,
    pub len: u64,
    reference: Vec<u8>,
    sum: DeviceBuffer<'g>,
    /// Checksum of the original pattern.
    pub original: u64,
    /// Checksums of the pattern with its first, and with its last, page overwritten by the probe.
    probed: [u64; 2],
}

impl<'g> Checker<'g> {
    pub fn new(gpu: &'g Gpu, len: u64) -> anyhow::Result<Checker<'g>> {
        let mut reference = vec![0u8; len as usize];
        pattern::fill(&mut reference, 0, SEED_ORIGINAL);
        let sum = DeviceBuffer::new(gpu, 8)?;
        // The original checksum, computed on the GPU over a freshly filled scratch buffer (fast at any size).
        let scratch = DeviceBuffer::new(gpu, len as usize)?;
        gpu.launch_fill(async_lab_driver::StreamHandle::LEGACY, scratch.ptr, len, SEED_ORIGINAL)?;
        let original = gpu_checksum(gpu, &sum, scratch.ptr, len)?;
        drop(scratch);
        let probed = [Page::Head, Page::Tail].map(|page| {
            page.range(len).fold(original, |sum, i| {
                let i = i as u64;
                sum.wrapping_sub(checksum_term(i, pattern_byte(i, SEED_ORIGINAL)))
                    .wrapping_add(checksum_term(i, pattern_byte(i, SEED_OVERWRITE)))
            })
        });
        if len <= 1 << 20 {
            // Small enough to cross-check the GPU's checksum on the host every time.
            ensure!(
                pattern::checksum(&reference) == original,
                "the GPU's checksum of the pattern disagrees with the host's"
            );
        }
        Ok(Checker { gpu, len, reference, sum, original, probed })
    }

    /// Makes `side` hold the original pattern.
    pub fn fill(&self, gpu: &Gpu, side: &mut Side) -> anyhow::Result<()> {
        match side {
            Side::Device(d) => {
                gpu.launch_fill(async_lab_driver::StreamHandle::LEGACY, d.ptr, self.len, SEED_ORIGINAL)?;
                gpu.synchronize()?;
            }
            // SAFETY: callers fill only between repetitions, after synchronizing: nothing on the GPU uses it.
            Side::Host(h) => unsafe { h.bytes_mut() }.copy_from_slice(&self.reference),
        }
        Ok(())
    }

    /// Makes `side` hold the original pattern, written by a kernel (managed memory: its pages then sit on
    /// the GPU).
    pub fn fill_on_gpu(&self, gpu: &Gpu, side: &Side) -> anyhow::Result<()> {
        gpu.launch_fill(async_lab_driver::StreamHandle::LEGACY, side.addr(), self.len, SEED_ORIGINAL)?;
        gpu.synchronize()?;
        Ok(())
    }

    /// Poisons `side` on the GPU (a device memset; managed pages then sit on the GPU).
    pub fn poison_on_gpu(&self, gpu: &Gpu, side: &Side) -> anyhow::Result<()> {
        gpu.bind()?;
        // SAFETY: `side` holds `len` device-accessible bytes (device or managed memory); the device is
        // synchronized after `prepare`, before the call under test.
        unsafe { memset_d8(side.addr(), 0x5A, self.len as usize)? };
        Ok(())
    }

    /// Restores the pages of a host source the probe may have overwritten.
    pub fn restore(&self, side: &mut Side) {
        if let Side::Host(h) = side {
            // SAFETY: as in `fill`.
            let bytes = unsafe { h.bytes_mut() };
            for page in [Page::Head, Page::Tail] {
                let r = page.range(self.len);
                bytes[r.clone()].copy_from_slice(&self.reference[r]);
            }
        }
    }

    /// Overwrites one page of a host source with the other seed (the staging probe).
    ///
    /// # Safety
    /// No DMA may be reading `side` now: the copy has not started (the blocker ahead of it is still running),
    /// or the GPU cannot read `side` at all (pageable memory, which only the driver's host code reads, into
    /// its staging buffer). A driver thread reading it at the same time is what the probe looks for: its bytes
    /// are plain bytes, and what arrives then is checked by `verify`.
    pub unsafe fn overwrite(&self, side: &mut Side, page: Page) {
        if let Side::Host(h) = side {
            // SAFETY: the caller promises that no DMA reads `side` now (see `# Safety`).
            let bytes = unsafe { h.bytes_mut() };
            for i in page.range(self.len) {
                bytes[i] = pattern_byte(i as u64, SEED_OVERWRITE);
            }
        }
    }

    /// The staging probe of a copy's source (`Probe::probe_source`): overwrites `page` of `src` if `rule`
    /// allows it, and says whether it did.
    ///
    /// # Safety
    /// As for `overwrite`, for every page that `rule` allows: the caller is `Probe::probe_source` as `run_rep`
    /// calls it (the first page only while the blocker ahead of the copy still runs and the copy's work is
    /// unfinished, the last page only with the copy in flight), and `rule` allows a page only where no DMA can
    /// be reading it then.
    pub unsafe fn probe_source(&self, src: &mut Side, page: Page, rule: Probeable) -> bool {
        if !rule.allows(page) {
            return false;
        }
        // SAFETY: the caller promises that no DMA reads the pages `rule` allows at this moment (see `# Safety`).
        unsafe { self.overwrite(src, page) };
        true
    }

    /// `Probe::verify` of a copy: after synchronization, whether `dst` holds the original pattern (`Some(true)`)
    /// or the one with the `probed` page overwritten (`Some(false)`); `None` where no page was probed, as then
    /// the arrival says nothing of staging. An error for anything else.
    pub fn verify_probe(&self, gpu: &Gpu, dst: &mut Side, probed: Option<Page>) -> anyhow::Result<Option<bool>> {
        let original = self.verify(gpu, dst, probed)?;
        Ok(probed.map(|_| original))
    }

    /// Fills a destination with bytes that are neither pattern.
    pub fn poison(&self, side: &mut Side) -> anyhow::Result<()> {
        match side {
            Side::Device(d) => {
                // `d` holds `len` bytes (both are the case's size); the memset is done once followed by the
                // device synchronization that every repetition does after `prepare`.
                self.gpu.bind()?;
                d.set_bytes(0x5A)?;
            }
            // SAFETY: between repetitions, nothing on the GPU uses the buffer.
            Side::Host(h) => unsafe { h.bytes_mut() }.fill(0x5A),
        }
        Ok(())
    }

    /// After synchronization: `true` if `dst` holds the original pattern, `false` if it holds the one with
    /// the `probed` page overwritten; an error for anything else.
    pub fn verify(&self, gpu: &Gpu, dst: &mut Side, probed: Option<Page>) -> anyhow::Result<bool> {
        let original = if dst.gpu_readable() {
            let got = gpu_checksum(gpu, &self.sum, dst.addr(), self.len)?;
            if got == self.original {
                true
            } else if probed.is_some_and(|p| got == self.probed[p as usize]) {
                false
            } else {
                bail!("the copy delivered wrong bytes (checksum {got:#x}; original {:#x})", self.original);
            }
        } else {
            let Side::Host(h) = dst else { unreachable!("device buffers are GPU-readable") };
            // SAFETY: the device is synchronized; nothing is using the buffer.
            let bytes = unsafe { h.bytes_mut() };
            let page = probed.unwrap_or(Page::Head).range(self.len);
            let rest_ok =
                bytes[..page.start] == self.reference[..page.start] && bytes[page.end..] == self.reference[page.end..];
            if rest_ok && bytes[page.clone()] == self.reference[page.clone()] {
                true
            } else if rest_ok
                && probed.is_some()
                && page.clone().all(|i| bytes[i] == pattern_byte(i as u64, SEED_OVERWRITE))
            {
                false
            } else {
                let i = (0..bytes.len()).find(|&i| bytes[i] != self.reference[i]).unwrap_or(0);
                bail!("the copy delivered wrong bytes (first difference at byte {i})");
            }
        };
        Ok(original)
    }
}

/// The `checksum` kernel over `len` bytes at `addr`, waited for.
pub fn gpu_checksum(gpu: &Gpu, sum: &DeviceBuffer, addr: u64, len: u64) -> anyhow::Result<u64> {
    let legacy = async_lab_driver::StreamHandle::LEGACY;
    gpu.bind()?;
    // The memset and the kernel are both on the legacy stream: in order.
    sum.set_bytes(0)?;
    gpu.launch_checksum(legacy, addr, len, sum.ptr)?;
    gpu.synchronize()?;
    Ok(sum.read_u64s(1)?[0])
}

//! Two GPUs at once: whether one can reach the other's memory directly, what the driver says about the
//! link between them, and switching that direct ("peer") access on and off.
//!
//! Peer access is a property of a pair of contexts and one direction: `cuCtxEnablePeerAccess` called with
//! A's context current lets A's work read and write B's memory. The peer experiments want a copy between A
//! and B either to go straight across the link (access on, both directions) or to be staged by the driver
//! through host memory (access off, both directions), so `set_peer_access` sets both directions at once.
//! The copies between them (`memcpy_peer`, `memcpy_peer_async`) are here too.

use super::error::{check, CudaError, CudaResult};
use super::gpu::Gpu;
use super::probe::device_handle;
use super::stream_handle::StreamHandle;
use super::sys::{self, CUdeviceptr};
pub use async_lab_core::machine::PeerLink;

/// Whether `from` can map `to`'s memory directly.
pub fn can_access_peer(from: &Gpu, to: &Gpu) -> CudaResult<bool> {
    device_can_access(from.device, to.device)
}

fn device_can_access(from: sys::CUdevice, to: sys::CUdevice) -> CudaResult<bool> {
    let mut can = 0;
    // SAFETY: valid out-pointer; both are live device handles from `cuDeviceGet`.
    unsafe { check(sys::cuDeviceCanAccessPeer(&mut can, from, to), "cuDeviceCanAccessPeer")? };
    Ok(can == 1)
}

/// What the driver says about every ordered pair of the machine's `count` GPUs (no context needed).
pub fn links(count: i32) -> CudaResult<Vec<PeerLink>> {
    let mut out = Vec::new();
    for (a, b) in ordered_pairs(count.max(0) as usize) {
        let (src, dst) = (device_handle(a as i32)?, device_handle(b as i32)?);
        let attr = |a: i32| -> CudaResult<i32> {
            let mut v = 0;
            // SAFETY: valid out-pointer; `a` is one of the P2P attribute values and both are live device handles.
            unsafe { check(sys::cuDeviceGetP2PAttribute(&mut v, a, src, dst), "cuDeviceGetP2PAttribute")? };
            Ok(v)
        };
        out.push(PeerLink {
            src: a as i32,
            dst: b as i32,
            can_access: device_can_access(src, dst)?,
            performance_rank: attr(sys::CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK)?,
            native_atomics: attr(sys::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED)? == 1,
        });
    }
    Ok(out)
}

/// Turns direct access between `a` and `b` on or off, in both directions. Setting the state it already has
/// is not an error (the driver reports "already enabled" / "not enabled"; both are accepted here).
pub fn set_peer_access(a: &Gpu, b: &Gpu, on: bool) -> CudaResult<()> {
    for (from, to) in [(a, b), (b, a)] {
        from.bind()?;
        // SAFETY: `from`'s context is current (just bound) and `to.context()` is a live primary context; both
        // are owned by `Gpu`s that outlive this call.
        let rc = unsafe {
            if on {
                sys::cuCtxEnablePeerAccess(to.context(), 0)
            } else {
                sys::cuCtxDisablePeerAccess(to.context())
            }
        };
        match rc {
            sys::CUDA_SUCCESS => {}
            sys::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED if on => {}
            sys::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED if !on => {}
            code => {
                return Err(CudaError::driver(
                    code,
                    if on { "cuCtxEnablePeerAccess" } else { "cuCtxDisablePeerAccess" },
                ))
            }
        }
    }
    a.bind()
}

/// Every ordered pair of distinct indices below `n`: (0,1), (0,2), ..., (1,0), ... (the peer experiments
/// measure both directions of every pair).
pub fn ordered_pairs(n: usize) -> Vec<(usize, usize)> {
    (0..n).flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b))).collect()
}

/// `cuMemcpyPeer`: `n` bytes from `src` on `src_gpu` to `dst` on `dst_gpu` (through the peer link when access
/// is on, staged through the host otherwise). It makes no context current (the caller has).
///
/// # Safety
/// `src..src+n` must be live device memory of `src_gpu` and `dst..dst+n` of `dst_gpu`, until the copy has
/// finished.
#[inline]
pub unsafe fn memcpy_peer(
    dst: CUdeviceptr,
    dst_gpu: &Gpu,
    src: CUdeviceptr,
    src_gpu: &Gpu,
    n: usize,
) -> CudaResult<()> {
    // SAFETY: both contexts are alive (their `Gpu`s are borrowed); the caller promises both ranges.
    unsafe { check(sys::cuMemcpyPeer(dst, dst_gpu.context(), src, src_gpu.context(), n), "cuMemcpyPeer") }
}

/// `cuMemcpyPeerAsync`: as `memcpy_peer`, ordered on `stream`.
///
/// # Safety
/// As for `memcpy_peer`, live until `stream` has run the copy.
#[inline]
pub unsafe fn memcpy_peer_async(
    dst: CUdeviceptr,
    dst_gpu: &Gpu,
    src: CUdeviceptr,
    src_gpu: &Gpu,
    n: usize,
    stream: StreamHandle<'_>,
) -> CudaResult<()> {
    // SAFETY: both contexts are alive (their `Gpu`s are borrowed), the stream too (its lifetime); the caller
    // promises both ranges.
    unsafe {
        check(
            sys::cuMemcpyPeerAsync(dst, dst_gpu.context(), src, src_gpu.context(), n, stream.raw()),
            "cuMemcpyPeerAsync",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_pairs_cover_both_directions_and_skip_self() {
        assert!(ordered_pairs(1).is_empty());
        assert_eq!(ordered_pairs(2), vec![(0, 1), (1, 0)]);
        let p = ordered_pairs(4);
        assert_eq!(p.len(), 12);
        assert!(p.iter().all(|(a, b)| a != b));
        assert!(p.contains(&(3, 2)) && p.contains(&(2, 3)));
    }
}

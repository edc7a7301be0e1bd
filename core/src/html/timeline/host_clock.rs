//! Moving a repetition's GPU times onto the host's clock, and saying when that cannot be trusted.

use crate::clock::{ClockFit, ClockOffset};
use crate::record::Rep;

/// How GPU times are moved onto the host's clock: the run's fit of `%globaltimer − CLOCK_MONOTONIC` (with
/// drift, where the run measured it), or an estimate.
#[derive(Clone, Copy, Debug)]
pub(super) struct Offset {
    pub(super) fit: ClockFit,
    pub(super) approx: bool,
}

impl Offset {
    pub(super) fn measured(clock: Option<&ClockFit>) -> Option<Offset> {
        clock.map(|c| Offset { fit: *c, approx: false })
    }

    /// Without a measured offset: assume that a GPU instant `gpu` happened at host time `host`.
    pub(super) fn assumed(gpu: u64, host: u64) -> Offset {
        let at = ClockOffset {
            gpu_minus_host_ns: gpu as i64 - host as i64,
            uncertainty_ns: 0,
            samples: 0,
            at_host_ns: Some(host as i64),
        };
        Offset { fit: ClockFit::constant(&at), approx: true }
    }

    pub(super) fn to_host(self, gpu: i64) -> i64 {
        self.fit.to_host(gpu)
    }
}

/// Where the call's own work sat on the GPU clock (`%globaltimer` ns): its start and end events placed after
/// the blocker's start, or after the stamped reference event.
pub(super) fn work_on_gpu(rep: &Rep) -> Option<[i64; 2]> {
    if let (Some(b), Some(w)) = (rep.blocker_gpu_ns, rep.op_gpu_ns_from_blocker) {
        return Some([b[0] as i64 + w[0], b[0] as i64 + w[1]]);
    }
    if let (Some(o), Some(w)) = (rep.gpu_origin_ns, rep.op_gpu_ns_from_origin) {
        return Some([o as i64 + w[0], o as i64 + w[1]]);
    }
    None
}

/// Whether a GPU instant, moved onto the host's clock, lies within a minute of a host instant of the same
/// repetition. An offset that does not fit (a clock from another boot, a corrupt stamp) would draw the lanes
/// hours apart; such GPU times are left out and the timeline says so.
pub(super) fn plausible(o: Offset, gpu: i64, host: u64) -> bool {
    host == 0 || (o.to_host(gpu) - host as i64).abs() < 60_000_000_000
}

pub(super) const MISFIT: &str =
    "The GPU times, moved onto the host's clock, lie more than a minute away from the call: the clock \
                      offset does not fit this repetition, so the GPU lanes are left empty.";

pub(super) const NO_OFFSET: &str =
    "This recording has no host/GPU clock offset (it was made before async-lab measured one)";

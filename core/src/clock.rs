//! Aligning the host's clock with the GPU's: how far `%globaltimer` is ahead of `CLOCK_MONOTONIC`.
//!
//! The measuring is `host/src/calibrate.rs`: a one-thread kernel writes `%globaltimer` while the host notes
//! its monotonic clock just before the launch and just after the synchronization. The GPU's reading lies between the two host readings, so
//! `offset = gpu - (before + after) / 2` is off by at most half the round trip. Of many tries, the one with
//! the shortest round trip is kept: its half round trip is the stated uncertainty.
//!
//! The two clocks drift apart (8.5 ppm on an H200: half a millisecond over a minute), so a run calibrates
//! again between families and at its end, and [`ClockFit`] fits a straight line through those points: the
//! offset at any moment of the run, with an uncertainty that includes how far the points sit off the line.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// `%globaltimer` minus host `CLOCK_MONOTONIC`, in ns.
    pub gpu_minus_host_ns: i64,
    /// Half the shortest round trip: the offset is right to within this many ns.
    pub uncertainty_ns: u64,
    pub samples: usize,
    /// The host time the offset was measured at (absent in recordings made before drift was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_host_ns: Option<i64>,
}

impl ClockOffset {
    /// A GPU timestamp on the host's clock.
    pub fn to_host(&self, gpu_ns: u64) -> i64 {
        gpu_ns as i64 - self.gpu_minus_host_ns
    }
}

/// The offset between the clocks over a whole run: a straight line through the calibrations.
///
/// The offset itself is about 1.8e18 ns (the GPU counts from another epoch), where an `f64` holds only
/// multiples of 256 ns: so the offset at the anchor is kept as an integer, and only the small corrections (the
/// drift times the distance from the anchor) are computed in floating point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockFit {
    /// The host time the line is anchored at, and the offset there.
    t0_host_ns: i64,
    offset0_ns: i64,
    /// How much the offset grows per host ns (drift; 1e-6 is 1 ppm).
    slope: f64,
    /// The worst calibration's half round trip plus the largest distance of a calibration from the line.
    pub uncertainty_ns: u64,
    /// How many calibrations the line goes through (1: no drift measured; the offset is taken as constant).
    pub points: usize,
}

impl ClockFit {
    /// A constant offset: one calibration, drift unknown (recordings made before drift was measured).
    pub fn constant(o: &ClockOffset) -> ClockFit {
        ClockFit {
            t0_host_ns: o.at_host_ns.unwrap_or(0),
            offset0_ns: o.gpu_minus_host_ns,
            slope: 0.0,
            uncertainty_ns: o.uncertainty_ns,
            points: 1,
        }
    }

    /// The least-squares line through calibrations that say when they were made; `None` for fewer than two.
    pub fn through(points: &[ClockOffset]) -> Option<ClockFit> {
        let pts: Vec<(i64, i64, u64)> =
            points.iter().filter_map(|p| p.at_host_ns.map(|t| (t, p.gpu_minus_host_ns, p.uncertainty_ns))).collect();
        if pts.len() < 2 {
            return None;
        }
        // Everything relative to the first point, so the numbers are small enough for f64 to hold exactly.
        let (t0, o0) = (pts[0].0, pts[0].1);
        let rel: Vec<(f64, f64)> =
            pts.iter().map(|p| (p.0.saturating_sub(t0) as f64, p.1.saturating_sub(o0) as f64)).collect();
        let n = rel.len() as f64;
        let mean_t = rel.iter().map(|p| p.0).sum::<f64>() / n;
        let mean_o = rel.iter().map(|p| p.1).sum::<f64>() / n;
        let var_t = rel.iter().map(|p| (p.0 - mean_t).powi(2)).sum::<f64>();
        let slope =
            if var_t > 0.0 { rel.iter().map(|p| (p.0 - mean_t) * (p.1 - mean_o)).sum::<f64>() / var_t } else { 0.0 };
        let intercept = mean_o - slope * mean_t; // the line's offset at t0, relative to o0
        let residual = rel.iter().map(|p| (p.1 - (intercept + slope * p.0)).abs()).fold(0.0, f64::max);
        let worst = pts.iter().map(|p| p.2).max().unwrap_or(0);
        let slope = if slope.is_finite() { slope } else { 0.0 };
        Some(ClockFit {
            t0_host_ns: t0,
            offset0_ns: o0.saturating_add(intercept.round() as i64),
            slope,
            uncertainty_ns: worst.saturating_add(residual.ceil() as u64),
            points: pts.len(),
        })
    }

    /// Whether drift was measured (two calibrations or more), so that times late in a run are placed right.
    pub fn measures_drift(&self) -> bool {
        self.points >= 2
    }

    /// Drift in parts per million.
    pub fn drift_ppm(&self) -> f64 {
        self.slope * 1e6
    }

    /// The offset (`%globaltimer` minus host) at host time `host_ns`.
    pub fn offset_at(&self, host_ns: i64) -> i64 {
        self.offset0_ns.saturating_add((self.slope * host_ns.saturating_sub(self.t0_host_ns) as f64).round() as i64)
    }

    /// A GPU timestamp on the host's clock: solves `gpu = host + offset0 + slope (host - t0)` for `host`, in
    /// integers but for the drift's correction.
    pub fn to_host(&self, gpu_ns: i64) -> i64 {
        // host - t0 = (gpu - t0 - offset0) / (1 + slope)
        let d = gpu_ns.saturating_sub(self.t0_host_ns).saturating_sub(self.offset0_ns);
        self.t0_host_ns.saturating_add((d as f64 / (1.0 + self.slope)).round() as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(at: i64, offset: i64, u: u64) -> ClockOffset {
        ClockOffset { gpu_minus_host_ns: offset, uncertainty_ns: u, samples: 50, at_host_ns: Some(at) }
    }

    #[test]
    fn a_line_through_drifting_calibrations_places_late_times_right() {
        // The offset grows 6 µs per second (6 ppm): over 60 s, 360 µs, the size seen on an H200.
        let pts: Vec<ClockOffset> = (0..=6).map(|k| point(k * 10_000_000_000, 1_000_000 + k * 60_000, 2_000)).collect();
        let fit = ClockFit::through(&pts).unwrap();
        assert!((fit.drift_ppm() - 6.0).abs() < 1e-9, "{}", fit.drift_ppm());
        assert_eq!(fit.uncertainty_ns, 2_000, "points on the line add nothing");
        // A GPU stamp taken at host time 55 s maps back to 55 s, where a constant offset is 330 µs off.
        let host = 55_000_000_000i64;
        let gpu = host + (1_000_000 + 330_000);
        assert!((fit.to_host(gpu) - host).abs() <= 1, "{}", fit.to_host(gpu) - host);
        let constant = ClockFit::constant(&pts[0]);
        assert_eq!(constant.to_host(gpu) - host, 330_000);
        assert!(!constant.measures_drift() && fit.measures_drift());
    }

    #[test]
    fn gpu_times_keep_their_nanoseconds_at_the_real_offsets_size() {
        // The offset on the H200 is about 1.8e18 ns, where an f64 holds only multiples of 256 ns.
        let big = 1_796_248_639_561_121_141i64;
        let pts = [point(1_000_000_000, big, 3_000), point(61_000_000_000, big + 510_000, 3_000)];
        let fit = ClockFit::through(&pts).unwrap();
        let host = 31_000_000_123i64;
        let gpu = host + big + 255_000; // the offset halfway through
        assert_eq!(fit.to_host(gpu), host);
        assert_eq!(fit.to_host(gpu + 100) - fit.to_host(gpu), 100, "a 100 ns span stays 100 ns");
        let constant = ClockFit::constant(&point(0, big, 1));
        assert_eq!(constant.to_host(big + 7), 7);
    }

    #[test]
    fn scatter_off_the_line_widens_the_uncertainty_and_one_point_is_no_fit() {
        let pts = [point(0, 1_000, 500), point(1_000_000_000, 5_000, 800), point(2_000_000_000, 3_000, 500)];
        let fit = ClockFit::through(&pts).unwrap();
        // The line runs 1667 → 3000 → 4333 (ns at 0, 1, 2 s); the middle point sits 2000 off it.
        assert_eq!(fit.uncertainty_ns, 800 + 2_000);
        assert!(ClockFit::through(&pts[..1]).is_none());
        let legacy = ClockOffset { at_host_ns: None, ..pts[0] };
        assert!(ClockFit::through(&[legacy, legacy]).is_none(), "calibrations without a time give no line");
    }
}

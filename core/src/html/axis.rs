//! Axis ticks and the numbers written on them: round steps for a time axis (1, 2 or 5 times a power of ten,
//! in ns, µs, ms or s to suit the span shown), decades for logarithmic axes, powers of two for byte sizes.

/// A time axis' unit: how many ns one unit is, and its symbol.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeUnit {
    pub ns: f64,
    pub symbol: &'static str,
}

/// The unit in which a span of `range_ns` reads best (a few to a few thousand units).
pub fn time_unit(range_ns: f64) -> TimeUnit {
    if range_ns >= 2e9 {
        TimeUnit { ns: 1e9, symbol: "s" }
    } else if range_ns >= 2e6 {
        TimeUnit { ns: 1e6, symbol: "ms" }
    } else if range_ns >= 2e3 {
        TimeUnit { ns: 1e3, symbol: "µs" }
    } else {
        TimeUnit { ns: 1.0, symbol: "ns" }
    }
}

/// The round step (1, 2 or 5 times a power of ten) that cuts `range` into at most about `target` parts.
pub fn nice_step(range: f64, target: usize) -> f64 {
    if !(range.is_finite() && range > 0.0) {
        return 1.0;
    }
    let raw = range / target.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * magnitude).find(|&s| s >= raw * 0.999_999);
    step.unwrap_or(10.0 * magnitude)
}

/// The multiples of a round step that lie in `[lo, hi]`.
pub fn linear_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite() && hi > lo) {
        return vec![];
    }
    let step = nice_step(hi - lo, target);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// A number of a time axis in `unit`, with no more decimals than the step needs.
pub fn tick_label(value_ns: f64, step_ns: f64, unit: TimeUnit) -> String {
    let step = step_ns / unit.ns;
    let decimals = if step >= 1.0 { 0 } else { (-step.log10()).ceil() as usize };
    let v = value_ns / unit.ns;
    // No "-0".
    let v = if v.abs() < step * 1e-6 { 0.0 } else { v };
    format!("{v:.decimals$}")
}

pub use crate::units::duration;

/// Ticks for a logarithmic axis over `[lo, hi]` (both > 0): every decade, and 2× and 5× within each decade
/// when the axis spans few decades.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return vec![];
    }
    let decades = (hi / lo).log10();
    let mantissas: &[f64] = if decades <= 2.5 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let every = (decades / 8.0).ceil().max(1.0) as i32;
    let mut out = Vec::new();
    let mut e = lo.log10().floor() as i32;
    while 10f64.powi(e) <= hi {
        if e.rem_euclid(every) == 0 {
            for m in mantissas {
                let v = m * 10f64.powi(e);
                if v >= lo * 0.999_999 && v <= hi * 1.000_001 {
                    out.push(v);
                }
            }
        }
        e += 1;
    }
    out
}

/// Powers of two in `[lo, hi]`, every one or every 2nd, 3rd, ... so that at most `max` remain.
pub fn pow2_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    if !(lo > 0.0 && hi >= lo && hi.is_finite()) {
        return vec![];
    }
    let first = lo.log2().ceil() as i32;
    let last = hi.log2().floor() as i32;
    if last < first {
        return vec![];
    }
    let count = (last - first + 1) as usize;
    let every = count.div_ceil(max.max(1)) as i32;
    (first..=last).filter(|e| (e - first) % every == 0).map(|e| 2f64.powi(e)).collect()
}

/// A number for a logarithmic axis: "0.5", "20", "1000", "2e+06".
pub fn log_label(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        format!("{v:.0e}")
    } else if a >= 1.0 {
        format!("{v:.0}")
    } else {
        let decimals = (-a.log10()).ceil() as usize;
        format!("{v:.decimals$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(10.0, 5), 2.0);
        assert_eq!(nice_step(23_000_000.0, 8), 5_000_000.0);
        assert_eq!(nice_step(0.7, 7), 0.1);
        assert_eq!(nice_step(0.0, 7), 1.0);
        assert_eq!(linear_ticks(-0.3, 1.05, 5), vec![0.0, 0.5, 1.0]);
    }

    #[test]
    fn units_and_labels() {
        assert_eq!(time_unit(25e6).symbol, "ms");
        assert_eq!(time_unit(900e3).symbol, "µs");
        assert_eq!(tick_label(2.5e6, 0.5e6, time_unit(25e6)), "2.5");
        assert_eq!(tick_label(20e6, 5e6, time_unit(25e6)), "20");
        assert_eq!(tick_label(-1e-9, 5e6, time_unit(25e6)), "0");
        assert_eq!(duration(5_100.0), "5.1 µs");
        assert_eq!(duration(20_300_000.0), "20.3 ms");
        assert_eq!(duration(312_000.0), "312 µs");
        assert_eq!(duration(850.0), "850 ns");
    }

    #[test]
    fn logarithmic_and_binary_ticks() {
        assert_eq!(log_ticks(3.0, 300.0), vec![5.0, 10.0, 20.0, 50.0, 100.0, 200.0]);
        assert_eq!(log_ticks(1.0, 1e4), vec![1.0, 10.0, 100.0, 1000.0, 1e4]);
        assert!(log_ticks(0.0, 10.0).is_empty());
        assert_eq!(pow2_ticks(4096.0, 65536.0, 10), vec![4096.0, 8192.0, 16384.0, 32768.0, 65536.0]);
        assert_eq!(pow2_ticks(4096.0, 65536.0, 3), vec![4096.0, 16384.0, 65536.0]);
        assert_eq!(log_label(0.05), "0.05");
        assert_eq!(log_label(200.0), "200");
    }
}

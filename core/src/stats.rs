//! Median and spread of repeated measurements.

use serde::{Deserialize, Serialize};

/// Median, minimum, maximum and count of a set of measurements (in µs where used for times).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        let median = median(&mut v)?;
        Some(Spread { median, min: v[0], max: v[v.len() - 1], n: v.len() })
    }
}

/// The index of the item whose `key` is the median (the lower middle one for an even count): the repetition
/// that timelines draw and `CaseResult::held_for` describes.
pub fn median_index<T, K: Ord>(items: &[T], key: impl Fn(&T) -> K) -> Option<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| (key(&items[i]), i));
    order.get(order.len().saturating_sub(1) / 2).copied()
}

/// The median (mean of the middle two for an even count); sorts `v`. `None` when empty.
pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        let s = Spread::of(&[5.0, 1.0, 9.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (5.0, 1.0, 9.0, 3));
    }
}

//! What the lab measured of the remedies a trace's findings propose, for the words of each remedy: how soon a
//! pinned copy of each size returned (the size sweep and the seed's programs), a first launch and a load
//! under lazy and under eager loading (the loading preset), and a warm kernel launch beside a warm graph
//! launch (the default and `next` presets: what a thread busy launching saves per launch with CUDA graphs), each with its
//! experiment and its recording.
//!
//! Like the capability table (`capability`), it is derived from committed recordings (a replay of each
//! through today's rules: `from_recordings::remedies` beside the catalogue), never written by hand:
//! `remedies.json` beside this file is what that derivation makes of the recordings it names, and a test in
//! `tests/` derives it again and fails on any difference. Here: the table as the analysis reads it.

use crate::class::Class;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Remedies {
    /// The recordings it was derived from.
    pub recordings: Vec<String>,
    /// The GPU they were made on.
    pub gpu: String,
    /// Copies from or to pinned memory, by API, direction and size.
    pub pinned_copies: Vec<PinnedCopy>,
    /// First launches and loads, under lazy and eager loading.
    pub loading: Vec<Load>,
    /// Warm launches of a kernel and of a one-kernel graph, by API.
    #[serde(default)]
    pub launches: Vec<Launch>,
}

/// A warm launch the lab measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    /// `driver` or `runtime`.
    pub api: String,
    /// `kernel` or `graph`.
    pub what: String,
    /// The function the case called.
    pub call: String,
    /// How soon it returned: the median of its repetitions, and their least and most (ns).
    pub returned_ns: i64,
    pub min_ns: i64,
    pub max_ns: i64,
    pub repetitions: usize,
    pub case: String,
    pub recording: String,
}

/// One pinned copy the lab measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PinnedCopy {
    /// `driver` or `runtime`.
    pub api: String,
    /// `htod` or `dtoh`.
    pub direction: String,
    pub bytes: u64,
    /// The function the case called.
    pub call: String,
    /// How soon it returned: the median of its repetitions, and their least and most (ns).
    pub returned_ns: i64,
    pub min_ns: i64,
    pub max_ns: i64,
    pub repetitions: usize,
    /// Its transfer's time on the GPU (median, ns), where measured.
    pub gpu_ns: Option<i64>,
    pub class: Class,
    pub case: String,
    pub recording: String,
}

/// One loading experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Load {
    pub api: String,
    /// `first-launch`, `library-load-data`, `module-load-data`...
    pub call: String,
    /// `lazy` or `eager`.
    pub loading: String,
    /// What kept the GPU busy: `same` (a kernel ahead in its stream), `other` (a kernel on another stream),
    /// `copy` (copies on another stream).
    pub situation: String,
    pub class: Class,
    /// The call's host time (median, ns).
    pub returned_ns: i64,
    /// Of it, waiting for the GPU's work (its stream or the device), in the median repetition.
    pub waited_ns: i64,
    pub case: String,
    pub recording: String,
}

/// The committed table (`remedies.json`).
pub fn lab() -> &'static Remedies {
    static TABLE: OnceLock<Remedies> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str(include_str!("remedies.json")).expect("remedies.json is the derivation's own output")
    })
}

impl Remedies {
    /// The pinned copy the lab measured nearest in size to `bytes` (in powers of two; the larger where two
    /// are as near), through `api` in `direction`, or through the other API where this one has none.
    pub fn pinned_copy(&self, api: &str, direction: &str, bytes: u64) -> Option<&PinnedCopy> {
        let log = |b: u64| (b.max(1) as f64).log2();
        let nearest = |api: &str| {
            self.pinned_copies.iter().filter(|c| c.api == api && c.direction == direction).min_by(|a, b| {
                let (da, db) = ((log(a.bytes) - log(bytes)).abs(), (log(b.bytes) - log(bytes)).abs());
                da.total_cmp(&db).then(b.bytes.cmp(&a.bytes))
            })
        };
        nearest(api).or_else(|| nearest(if api == "runtime" { "driver" } else { "runtime" }))
    }

    /// The loading experiment of `call` under `loading` in `situation` through `api` (or the other API).
    pub fn load(&self, api: &str, call: &str, loading: &str, situation: &str) -> Option<&Load> {
        let find = |api: &str| {
            self.loading
                .iter()
                .find(|l| l.api == api && l.call == call && l.loading == loading && l.situation == situation)
        };
        find(api).or_else(|| find(if api == "runtime" { "driver" } else { "runtime" }))
    }

    /// The warm launch of `what` (`kernel` or `graph`) through `api` (or the other API).
    pub fn launch(&self, api: &str, what: &str) -> Option<&Launch> {
        let find = |api: &str| self.launches.iter().find(|l| l.api == api && l.what == what);
        find(api).or_else(|| find(if api == "runtime" { "driver" } else { "runtime" }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(api: &str, bytes: u64) -> PinnedCopy {
        PinnedCopy {
            api: api.into(),
            direction: "htod".into(),
            bytes,
            call: "c".into(),
            returned_ns: 5_000,
            min_ns: 4_000,
            max_ns: 6_000,
            repetitions: 5,
            gpu_ns: None,
            class: Class::Async,
            case: format!("{api}/{bytes}"),
            recording: "r".into(),
        }
    }

    #[test]
    fn the_nearest_size_is_found_in_powers_of_two_and_the_other_api_stands_in() {
        let t = Remedies {
            recordings: vec![],
            gpu: "G".into(),
            pinned_copies: vec![copy("driver", 1 << 20), copy("driver", 1 << 26), copy("driver", 1 << 28)],
            loading: vec![],
            launches: vec![],
        };
        assert_eq!(t.pinned_copy("driver", "htod", 128 << 20).unwrap().bytes, 1 << 28);
        assert_eq!(t.pinned_copy("driver", "htod", 70 << 20).unwrap().bytes, 1 << 26);
        assert_eq!(t.pinned_copy("runtime", "htod", 4 << 10).unwrap().bytes, 1 << 20);
        assert!(t.pinned_copy("driver", "dtoh", 1 << 20).is_none());
    }
}

//! The extra numbers some experiments measure beside a repetition's signals, one named field each.
//!
//! A repetition keeps them (`record::Rep::metrics`) and a result keeps their medians over the repetitions
//! (`result::CaseResult::metrics`). In a recording they are one JSON object keyed by the field names below, a
//! flag written as `1.0` or `0.0` as recordings have always had it, so every recording reads and writes back
//! the same keys. A key no field names is refused when a recording is read: it would be a measurement no code
//! reads, or a misspelt one.

use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};

/// Declares `Metrics` from one list of its numbers and one of its flags, with what goes over every field:
/// the names in key order and the medians over repetitions. Written by hand so that a new metric is one line.
macro_rules! metrics {
    (
        numbers { $( $(#[$nmeta:meta])* $number:ident, )* }
        flags { $( $(#[$fmeta:meta])* $flag:ident, )* }
    ) => {
        /// The extra numbers of one repetition (or, in a result, their medians): `None` where not measured.
        #[derive(Clone, Debug, Default, PartialEq, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Metrics {
            $(
                $(#[$nmeta])*
                #[serde(default)]
                pub $number: Option<f64>,
            )*
            $(
                $(#[$fmeta])*
                #[serde(default, deserialize_with = "flag")]
                pub $flag: Option<bool>,
            )*
        }

        impl Metrics {
            /// Nothing measured (`Default`, usable in a `const`).
            pub const EMPTY: Metrics = Metrics { $( $number: None, )* $( $flag: None, )* };

            /// Each measured metric under its recorded name, as a number (a flag as 1 or 0), in name order.
            pub fn entries(&self) -> Vec<(&'static str, f64)> {
                let mut out: Vec<(&'static str, f64)> = Vec::new();
                $( if let Some(v) = self.$number { out.push((stringify!($number), v)); } )*
                $( if let Some(v) = self.$flag { out.push((stringify!($flag), if v { 1.0 } else { 0.0 })); } )*
                out.sort_by(|a, b| a.0.cmp(b.0));
                out
            }

            /// Each metric over `reps`: a number's median, a flag's majority (a tie counting as set), over the
            /// repetitions that measured it; `None` where none did.
            pub fn medians<'a>(reps: impl Iterator<Item = &'a Metrics> + Clone) -> Metrics {
                Metrics {
                    $( $number: {
                        let mut v: Vec<f64> = reps.clone().filter_map(|m| m.$number).collect();
                        crate::stats::median(&mut v)
                    }, )*
                    $( $flag: majority(reps.clone().filter_map(|m| m.$flag)), )*
                }
            }
        }
    };
}

metrics! {
    numbers {
        /// A host callback's delay after its stream reached it (callback family).
        callback_delay_us,
        /// The waiting thread's CPU time over its wall time (wait family).
        cpu_fraction,
        /// How long after the kernel ended the wait returned (wait family).
        wake_latency_us,
        /// Pending launches the queue held when a launch first waited (launch and graph families).
        queue_depth,
        /// Launches that all returned at once, the queue never full (launch and graph families).
        queue_depth_at_least,
        /// A launch's median time before the queue was full, the full queue's wait, and after (µs).
        launch_us_before_full,
        launch_us_blocked,
        launch_us_after_full,
        /// Copies in flight behind the call, where the background was copies (loading family).
        copies_in_flight,
        /// Repetitions thrown away before this one was kept (the staging probe's unusable ones).
        discarded_before,
        /// The per-call times' 10th percentile, median and 90th percentile, in µs (overhead family).
        p10_us,
        median_us,
        p90_us,
        /// The other thread's slow call: its start and end on the host clock, its length, its length when made
        /// alone (threads family).
        other_start_ns,
        other_end_ns,
        other_call_us,
        other_alone_us,
        /// How far into the other thread's call this one started, and how long after it ended this one returned
        /// (negative: before), in µs (threads family).
        started_into_other_us,
        returned_after_other_end_us,
    }
    flags {
        /// Whether the stream had concluded when the last call returned, and after synchronizing it (seed family).
        concluded_after_enqueue,
        concluded_after_sync,
        /// Whether the release of the waited-for value was written by the GPU rather than the host (stream memory
        /// family), and whether the call returned only after the host wrote it.
        gpu_release,
        returned_after_host_write,
        /// Whether the prefetch or advice was given a location rather than a device (unified family).
        location_form,
        /// Whether the unmapping call returned while queued work still had to use the memory (virtual memory
        /// family).
        returned_while_in_use,
        /// Whether the other thread's slow call overlapped this one, and whether this one returned only after
        /// it ended (threads family).
        overlapped,
        waited_for_other_thread,
        /// Recordings of the threads family's older order: whether this thread's launch waited for the other's
        /// call.
        launch_waited_for_other_thread,
        /// Whether the call's start event was still pending after the wait allowed for it.
        start_event_pending,
        /// Whether the staging probe overwrote the source's last page rather than its first.
        probed_last_page,
        /// Whether the blocker was still running when the last enqueued call returned (overhead family).
        blocker_running_at_end,
    }
}

/// Whether most of `values` are true (a tie counts as true); `None` without any.
fn majority(values: impl Iterator<Item = bool>) -> Option<bool> {
    let (mut yes, mut n) = (0usize, 0usize);
    for v in values {
        n += 1;
        yes += usize::from(v);
    }
    (n > 0).then_some(yes * 2 >= n)
}

impl Metrics {
    /// Whether nothing was measured.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }
}

/// Written as recordings have always had it: one object of the measured metrics in name order, a flag as `1.0`
/// or `0.0` (`entries`).
impl Serialize for Metrics {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.entries())
    }
}

/// A flag as recordings write it: the number `1.0` or `0.0`.
fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        None => Ok(None),
        Some(1.0) => Ok(Some(true)),
        Some(0.0) => Ok(Some(false)),
        Some(v) => Err(D::Error::custom(format!("a flag is 1 or 0, not {v}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_flags_read_and_write_back_as_recordings_have_them() {
        // In name order, as recordings have them (the fields are declared in another).
        let json = r#"{"cpu_fraction":0.25,"other_end_ns":5.0,"overlapped":1.0,"waited_for_other_thread":0.0}"#;
        let m: Metrics = serde_json::from_str(json).unwrap();
        assert_eq!((m.cpu_fraction, m.overlapped, m.waited_for_other_thread), (Some(0.25), Some(true), Some(false)));
        assert_eq!((m.other_end_ns, m.queue_depth), (Some(5.0), None));
        assert!(!m.is_empty() && Metrics::default().is_empty());
        assert_eq!(serde_json::to_string(&m).unwrap(), json);
    }

    #[test]
    fn an_unknown_key_or_a_flag_other_than_one_or_zero_is_refused() {
        let e = serde_json::from_str::<Metrics>(r#"{"cpu_fractoin":0.25}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `cpu_fractoin`"), "{e}");
        let e = serde_json::from_str::<Metrics>(r#"{"overlapped":0.5}"#).unwrap_err();
        assert!(e.to_string().contains("a flag is 1 or 0"), "{e}");
    }

    #[test]
    fn entries_are_in_name_order_with_flags_as_numbers() {
        let m = Metrics {
            wake_latency_us: Some(30.0),
            cpu_fraction: Some(1.0),
            overlapped: Some(false),
            ..Default::default()
        };
        assert_eq!(m.entries(), [("cpu_fraction", 1.0), ("overlapped", 0.0), ("wake_latency_us", 30.0)]);
    }

    #[test]
    fn medians_take_each_metric_over_the_repetitions_that_measured_it() {
        let reps = [
            Metrics { queue_depth: Some(10.0), overlapped: Some(true), ..Default::default() },
            Metrics { queue_depth: Some(30.0), overlapped: Some(false), ..Default::default() },
            Metrics { queue_depth: Some(20.0), ..Default::default() },
        ];
        let m = Metrics::medians(reps.iter());
        assert_eq!(m.queue_depth, Some(20.0));
        // One of two: a tie counts as set, as the median of 1 and 0 (0.5) always did.
        assert_eq!(m.overlapped, Some(true));
        assert_eq!(m.cpu_fraction, None);
        assert_eq!(Metrics::medians(reps[1..].iter()).overlapped, Some(false));
    }
}

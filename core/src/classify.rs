//! From measured signals to one word: the class of a call, decided per repetition and then by majority.
//!
//! The classes and what each means are `class::Class` (re-exported here as `classify::Class`).
//!
//! Each signal is a [`Reading`] of when an end fell relative to the return, put together from the queries
//! right after it, the GPU's own times and causality (`timing::RepTimes`). Only the signals decide; the
//! documented expectation plays no part here (see `rules` and `verdict`).

pub use crate::class::Class;
use crate::clock::ClockFit;
use crate::record::Rep;
use crate::timing::{Reading, RepTimes};

/// The class of one repetition. `blocker_ahead` says whether the blocker was ordered before the call (same
/// stream, or the legacy stream's implicit ordering): waiting for a blocker that was *not* ahead means the
/// call drained the device. `fit` places the GPU's times on the host clock (`None`: queries and causality only).
pub fn classify_rep(rep: &Rep, blocker_ahead: bool, fit: Option<&ClockFit>) -> Class {
    let t = RepTimes::of(rep, fit);
    classify_readings(t.blocker(rep), t.op(rep), rep.data_captured_at_return, blocker_ahead)
}

/// The class from the two readings (`None`: no blocker, or no device work) and the staging probe.
pub fn classify_readings(
    blocker: Option<Reading>,
    op: Option<Reading>,
    captured: Option<bool>,
    blocker_ahead: bool,
) -> Class {
    use Reading::{After, Before, Unresolved};
    match blocker {
        Some(Unresolved(_)) => Class::Indeterminate,
        Some(Before) if !blocker_ahead => Class::DeviceSync,
        Some(Before) => match op {
            Some(After) => Class::WaitedThenStaged,
            Some(Unresolved(_)) => Class::Indeterminate,
            Some(Before) | None => Class::Blocking,
        },
        // The blocker was still running (or there was none): the call did not wait for it.
        Some(After) | None => match (op, captured) {
            (Some(Before), _) => Class::Blocking,
            (Some(Unresolved(_)), _) => Class::Indeterminate,
            (_, Some(true)) => Class::Staged,
            _ => Class::Async,
        },
    }
}

/// The most frequent class over the repetitions the readings decided, with the fraction of all repetitions
/// that agree with it. On a tie the class that blocks more wins: a call that blocked even half the time is not
/// one to rely on. Where fewer than half the repetitions were decided, the class is `indeterminate`.
pub fn majority(classes: &[Class]) -> Option<(Class, f64)> {
    let undecided = classes.iter().filter(|&&c| c == Class::Indeterminate).count();
    if !classes.is_empty() && 2 * undecided > classes.len() {
        return Some((Class::Indeterminate, undecided as f64 / classes.len() as f64));
    }
    let mut best: Option<(Class, usize)> = None;
    for c in Class::ALL.into_iter().filter(|&c| c != Class::Indeterminate) {
        let n = classes.iter().filter(|&&x| x == c).count();
        if n > 0 && best.is_none_or(|(_, m)| n >= m) {
            best = Some((c, n));
        }
    }
    best.map(|(c, n)| (c, n as f64 / classes.len() as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(blocker: Option<bool>, op: Option<bool>, captured: Option<bool>) -> Rep {
        Rep {
            blocker_done_at_return: blocker,
            op_done_at_return: op,
            data_captured_at_return: captured,
            ..Rep::default()
        }
    }

    #[test]
    fn each_class_from_its_signals() {
        assert_eq!(classify_rep(&rep(Some(false), Some(false), None), true, None), Class::Async);
        assert_eq!(classify_rep(&rep(Some(false), Some(false), Some(false)), true, None), Class::Async);
        assert_eq!(classify_rep(&rep(Some(false), Some(false), Some(true)), true, None), Class::Staged);
        assert_eq!(classify_rep(&rep(Some(true), Some(false), None), true, None), Class::WaitedThenStaged);
        assert_eq!(classify_rep(&rep(Some(true), Some(true), None), true, None), Class::Blocking);
        assert_eq!(classify_rep(&rep(Some(true), Some(true), None), false, None), Class::DeviceSync);
        assert_eq!(classify_rep(&rep(Some(true), None, None), false, None), Class::DeviceSync);
    }

    #[test]
    fn a_call_without_device_work_that_did_not_wait_is_async() {
        assert_eq!(classify_rep(&rep(Some(false), None, None), false, None), Class::Async);
    }

    #[test]
    fn finishing_its_own_work_without_waiting_is_blocking() {
        // e.g. a host-to-host copy next to a blocker on another stream.
        assert_eq!(classify_rep(&rep(Some(false), Some(true), None), false, None), Class::Blocking);
        assert_eq!(classify_rep(&rep(None, Some(true), None), false, None), Class::Blocking);
    }

    #[test]
    fn an_unresolved_reading_makes_the_repetition_indeterminate() {
        use crate::timing::Unresolved::{Contradiction, LateAnswer};
        use Reading::*;
        let c = |b, o| classify_readings(b, o, None, true);
        assert_eq!(c(Some(Unresolved(Contradiction)), Some(Before)), Class::Indeterminate);
        assert_eq!(c(Some(Before), Some(Unresolved(LateAnswer))), Class::Indeterminate);
        assert_eq!(c(Some(After), Some(Unresolved(LateAnswer))), Class::Indeterminate);
        // An unresolved reading of the call's own work does not matter once the call drained the device.
        assert_eq!(classify_readings(Some(Before), Some(Unresolved(LateAnswer)), None, false), Class::DeviceSync);
    }

    #[test]
    fn a_late_done_answer_is_indeterminate_unless_the_gpu_dates_the_end() {
        // Blocker ahead and done; the call's stream answered "done" 6 µs after the return: with a 4 µs clock
        // tolerance that says nothing about the return.
        use crate::clock::{ClockFit, ClockOffset};
        let fit = ClockFit::constant(&ClockOffset {
            gpu_minus_host_ns: 0,
            uncertainty_ns: 4_000,
            samples: 1,
            at_host_ns: Some(0),
        });
        let late = Rep {
            host_call_ns: 20_010_000,
            blocker_done_at_return: Some(true),
            op_done_at_return: Some(true),
            op_query_ns: Some([20_015_000, 20_016_000]),
            blocker_query_ns: Some([20_010_200, 20_010_500]),
            ..Rep::default()
        };
        assert_eq!(classify_rep(&late, true, Some(&fit)), Class::Indeterminate);
        // Just inside the tolerance: done at the return.
        let in_time = Rep { op_query_ns: Some([20_013_000, 20_014_000]), ..late.clone() };
        assert_eq!(classify_rep(&in_time, true, Some(&fit)), Class::Blocking);
        // Late, but the GPU's times put the work's end event (20.002 ms after the blocker's start event, which
        // came before the kernel's first clock reading at 1 µs) within the tolerance of the return.
        let dated = Rep {
            host_blocker_launch_ns: Some(0),
            blocker_gpu_ns: Some([1_000, 20_001_000]),
            blocker_device_ns: Some(20_000_500),
            op_gpu_ns_from_blocker: Some([20_001_000, 20_002_000]),
            ..late.clone()
        };
        assert_eq!(classify_rep(&dated, true, Some(&fit)), Class::Blocking);
        // Without the clock fit the end event has no upper bound: the late answer stays undecided.
        assert_eq!(classify_rep(&dated, true, None), Class::Indeterminate);
    }

    #[test]
    fn majority_and_ties() {
        use Class::*;
        assert_eq!(majority(&[Async, Async, Staged]), Some((Async, 2.0 / 3.0)));
        assert_eq!(majority(&[Async, Blocking]).unwrap().0, Blocking);
        assert_eq!(majority(&[]), None);
        // One noisy repetition out of five does not change the class.
        assert_eq!(majority(&[Staged, Staged, WaitedThenStaged, Staged, Staged]).unwrap().0, Staged);
        // Undecided repetitions are left out of the vote, unless they are most of them.
        assert_eq!(majority(&[Indeterminate, Indeterminate, Async]), Some((Indeterminate, 2.0 / 3.0)));
        assert_eq!(majority(&[Indeterminate, Async, Async, Blocking]), Some((Async, 0.5)));
        assert_eq!(majority(&[Indeterminate, Async]).unwrap().0, Async, "half decided is enough");
    }
}

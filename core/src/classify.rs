//! From measured signals to one word: the class of a call, decided per repetition and then by majority.
//!
//! The classes and what each means are `class::Class` (re-exported here as `classify::Class`).
//!
//! A repetition's readings (`timing::RepTimes`: the queries right after the return, the GPU's own times,
//! causality) become a scene of intervals, `attribution` splits the call's time by what held the thread,
//! and `class::class_of_held` names the result: what held the thread, no more than the readings resolve. The
//! staging probe and readings that contradict each other are the lab's own additions ([`decide`]). Only the
//! signals decide; the documented expectation plays no part here (see `rules` and `verdict`).

use crate::attribution::{attribute, Held};
pub use crate::class::{class_of_held, Class};
use crate::clock::ClockFit;
use crate::record::Rep;
use crate::timing::{Reading, RepTimes, Unresolved};

/// One repetition decided: its class and the attribution it rests on. `blocker_ahead` says whether the
/// blocker was ordered before the call (same stream, or the legacy stream's implicit ordering): waiting for
/// a blocker that was *not* ahead means the call drained the device. `what` names the blocker in words.
pub fn decide(times: &RepTimes, rep: &Rep, blocker_ahead: bool, what: &str) -> (Class, Held) {
    let (mut blocker, op) = (times.blocker(rep), times.op(rep));
    if matches!(blocker, Some(Reading::Unresolved(Unresolved::LateAnswer))) {
        // Stream order: work behind the blocker that had finished at the return means the blocker had too,
        // however late its own event was asked about. And a "done" asked within the repetition's resolution of
        // the return is as good as at the return: nothing finer is claimed anywhere else.
        // A call with work of its own has its resolution from the query of its stream. One without (a wait, a
        // free) has nothing asked sooner than the blocker's event: that question's lateness *is* its
        // resolution, so its "done" counts as at the return (with the wait's length in the held-for words).
        let asked_in_time = rep.op_query_ns.is_none() || times.blocker_query[0] <= times.ret + times.resolution(rep);
        if (blocker_ahead && op == Some(Reading::Before)) || asked_in_time {
            blocker = Some(Reading::Before);
        }
    }
    let held = attribute(&times.scene(rep, blocker_ahead, blocker, op, what));
    (class_of(blocker, op, rep.data_captured_at_return, &held), held)
}

/// The class from the readings and the attribution made of them. Indeterminate where the readings truly
/// contradict each other, or where whether the call waited for the blocker cannot be told; a late answer
/// about the call's own work matters only through the attribution (its own work's end is then bounded by
/// the GPU's times alone).
pub fn class_of(blocker: Option<Reading>, op: Option<Reading>, captured: Option<bool>, held: &Held) -> Class {
    if matches!(blocker, Some(Reading::Unresolved(_))) || op == Some(Reading::Unresolved(Unresolved::Contradiction)) {
        return Class::Indeterminate;
    }
    match class_of_held(held) {
        Class::Async if captured == Some(true) => Class::Staged,
        c => c,
    }
}

/// The class of one repetition (see [`decide`]); `fit` places the GPU's times on the host clock (`None`:
/// queries and causality only).
pub fn classify_rep(rep: &Rep, blocker_ahead: bool, fit: Option<&ClockFit>) -> Class {
    decide(&RepTimes::of(rep, fit), rep, blocker_ahead, "the blocker").0
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
    use crate::clock::{ClockFit, ClockOffset};

    /// A clock fit with no offset and a 4 µs uncertainty: GPU times are host times.
    fn fit() -> ClockFit {
        ClockFit::constant(&ClockOffset {
            gpu_minus_host_ns: 0,
            uncertainty_ns: 4_000,
            samples: 1,
            at_host_ns: Some(0),
        })
    }

    /// A repetition whose call starts at host time 1 s, behind a 20 ms blocker launched 10 µs before, with
    /// its queries asked 1 µs after the return; `ret_us` and the own work's end (from the call's start) in µs.
    fn rep(ret_us: u64, blocker_done: bool, own: Option<(i64, i64, bool)>) -> Rep {
        let start = 1_000_000_000u64;
        let launch = start - 10_000;
        let g0 = launch + 5_000;
        let ret = ret_us * 1_000;
        Rep {
            host_call_ns: ret,
            host_call_start_ns: start,
            host_blocker_launch_ns: Some(launch),
            blocker_gpu_ns: Some([g0, g0 + 20_000_000]),
            blocker_device_ns: Some(20_000_000),
            blocker_done_at_return: Some(blocker_done),
            blocker_query_ns: Some([ret + 2_000, ret + 2_500]),
            op_done_at_return: own.map(|o| o.2),
            op_query_ns: own.map(|_| [ret + 1_000, ret + 1_500]),
            // Own work placed from the blocker's start event (which is at g0).
            op_gpu_ns_from_blocker: own.map(|(a, b, _)| {
                let from = |us: i64| us * 1_000 + start as i64 - g0 as i64;
                [from(a), from(b)]
            }),
            ..Rep::default()
        }
    }

    fn class(r: &Rep, ahead: bool) -> Class {
        classify_rep(r, ahead, Some(&fit()))
    }

    #[test]
    fn each_class_from_what_held_the_thread() {
        // Returned in 7 µs, the blocker still running, its 1 ms copy not started: async.
        assert_eq!(class(&rep(7, false, Some((19_995, 20_995, false))), true), Class::Async);
        // The same, and the probe found the data staged.
        let staged = Rep { data_captured_at_return: Some(true), ..rep(7, false, Some((19_995, 20_995, false))) };
        assert_eq!(class(&staged, true), Class::Staged);
        // Returned 20 µs after the blocker ahead ended, its 1 ms copy still running: waited for its stream.
        assert_eq!(class(&rep(20_015, true, Some((19_995, 20_995, false))), true), Class::WaitedForStream);
        // Held through its 1 ms copy after the blocker: blocking.
        assert_eq!(class(&rep(21_000, true, Some((19_995, 20_995, true))), true), Class::Blocking);
        // Waited for a blocker on another stream: device-sync, with or without work of its own.
        assert_eq!(class(&rep(20_015, true, None), false), Class::DeviceSync);
        assert_eq!(class(&rep(20_040, true, Some((0, 20_030, true))), false), Class::DeviceSync);
    }

    #[test]
    fn a_call_held_through_its_own_transfer_with_nothing_ahead_is_blocking_not_async() {
        // The seed's pageable copy: 1.44 ms call, its 1.45 ms transfer still finishing at the return.
        let r = Rep { blocker_done_at_return: None, ..rep(1_440, false, Some((5, 1_450, false))) };
        assert_eq!(class(&r, true), Class::Blocking);
    }

    #[test]
    fn a_short_copy_behind_the_blocker_is_waited_for_stream_whichever_side_its_end_falls() {
        // 64 KiB: the copy's 5 µs of transfer ends just before or just after the 20 µs-late return.
        for (end, done) in [(20_010, true), (20_016, false)] {
            let r = rep(20_013, true, Some((19_995, end, done)));
            assert_eq!(class(&r, true), Class::WaitedForStream, "end {end}");
        }
    }

    #[test]
    fn waiting_for_another_threads_call() {
        // The blocker ahead ended at 20 ms, inside the other thread's call; the launch returned when that call ended.
        let mut r = rep(90_000, true, Some((89_995, 90_001, false)));
        r.metrics.other_start_ns = Some((1_000_000_000u64 - 50_000) as f64);
        r.metrics.other_end_ns = Some((1_000_000_000u64 + 89_990_000) as f64);
        let (c, h) = decide(&RepTimes::of(&r, Some(&fit())), &r, true, "b");
        assert_eq!(c, Class::WaitedForThread, "{h:#?}");
    }

    #[test]
    fn contradicting_readings_are_indeterminate_and_a_late_answer_about_own_work_is_not() {
        // "Not done" asked 1 µs after the return, but the GPU's clock put the blocker's end 5 ms earlier.
        let r = Rep {
            host_call_ns: 25_000_000,
            blocker_query_ns: Some([25_001_000, 25_001_500]),
            ..rep(25_000, false, None)
        };
        assert_eq!(class(&r, true), Class::Indeterminate);
        // Own work "done", asked 50 µs after the return: the GPU's times still date its end (4 KiB, 3 µs).
        let mut late = rep(20_020, true, Some((19_995, 20_010, true)));
        late.op_query_ns = Some([20_070_000, 20_071_000]);
        assert_eq!(class(&late, true), Class::WaitedForStream);
    }

    #[test]
    fn a_late_done_about_the_blocker_is_decided_by_stream_order_or_not_at_all() {
        // Without a clock fit nothing dates the blocker's end; its "done" came 50 µs after the return.
        let late = |own: Option<(i64, i64, bool)>| {
            let mut r = rep(20_015, true, own);
            r.blocker_query_ns = Some([20_065_000, 20_066_000]);
            r
        };
        // Its own work, behind the blocker in the stream, was done at the return: so was the blocker.
        assert_eq!(classify_rep(&late(Some((19_995, 20_010, true))), true, None), Class::WaitedForStream);
        // Its own work still running says nothing of the blocker: undecided.
        assert_eq!(classify_rep(&late(Some((19_995, 21_000, false))), true, None), Class::Indeterminate);
        // A call with no work of its own has nothing asked sooner: that question's lateness is its resolution.
        assert_eq!(classify_rep(&late(None), true, None), Class::WaitedForStream);
    }

    #[test]
    fn without_a_clock_fit_the_queries_and_causality_still_decide_the_waits() {
        let r = rep(20_015, true, Some((19_995, 20_995, false)));
        assert_eq!(classify_rep(&r, true, None), Class::WaitedForStream);
        assert_eq!(classify_rep(&rep(7, false, None), true, None), Class::Async);
    }

    #[test]
    fn majority_and_ties() {
        use Class::*;
        assert_eq!(majority(&[Async, Async, Staged]), Some((Async, 2.0 / 3.0)));
        assert_eq!(majority(&[Async, Blocking]).unwrap().0, Blocking);
        assert_eq!(majority(&[]), None);
        // One noisy repetition out of five does not change the class.
        assert_eq!(majority(&[Staged, Staged, WaitedForStream, Staged, Staged]).unwrap().0, Staged);
        // Undecided repetitions are left out of the vote, unless they are most of them.
        assert_eq!(majority(&[Indeterminate, Indeterminate, Async]), Some((Indeterminate, 2.0 / 3.0)));
        assert_eq!(majority(&[Indeterminate, Async, Async, Blocking]), Some((Async, 0.5)));
        assert_eq!(majority(&[Indeterminate, Async]).unwrap().0, Async, "half decided is enough");
    }
}

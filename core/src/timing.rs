//! When things happened in one repetition, on the host's clock, and what those times can and cannot tell.
//!
//! A class rests on two questions: had the blocker ended when the call returned, and had the call's own work
//! ended? Each end is known only as an interval, put together from every reading of the repetition:
//! - **stream and event queries** made right after the return, at host times `[q0, q1]`: "done" says the end
//!   came before `q1`, "not done" says it came after `q0` (and `q0` is after the return);
//! - **GPU times**: the blocker's `%globaltimer` stamps, mapped onto the host clock by the run's clock fit
//!   (to within its uncertainty `u`), and CUDA events placed relative to the blocker's start event;
//! - **causality**: an event cannot be reached on the GPU before the host recorded it, so an event `d` ns
//!   after the blocker's start event is at least `d` ns after the blocker's launch on the host clock.
//!
//! [`reading`] turns an interval into `Before` / `After` the return, or `Unresolved` where the readings
//! contradict each other or where the "done" answer came too long after the return to say anything about it.
//! The tolerance is the clock fit's uncertainty (about 4 µs on the H200): a query answered within it of the
//! return counts as "at the return".

use crate::attribution::{Cause, Holder, Scene, Span};
use crate::clock::ClockFit;
use crate::record::Rep;
use serde::Serialize;

/// The tolerance where a run has no clock measurement: about what a clock fit gives on the H200.
pub const NO_CLOCK_TOLERANCE_NS: i64 = 4_000;

/// An interval of host time, in ns after the call's start. `i64::MIN` / `i64::MAX` mean unbounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Interval {
    pub lo: i64,
    pub hi: i64,
}

impl Interval {
    pub const ANY: Interval = Interval { lo: i64::MIN, hi: i64::MAX };

    pub fn new(lo: i64, hi: i64) -> Interval {
        Interval { lo, hi }
    }

    /// Both constraints at once (may come out empty: `lo > hi`, which [`reading`] reports as a contradiction).
    pub fn and(self, other: Interval) -> Interval {
        Interval { lo: self.lo.max(other.lo), hi: self.hi.min(other.hi) }
    }
}

/// Where an end fell relative to the call's return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Reading {
    /// Ended before the return (or within the tolerance after it, before the tool could ask).
    Before,
    /// Still running at the return.
    After,
    /// The readings do not decide it (see the reason).
    Unresolved(Unresolved),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Unresolved {
    /// The query's answer and the GPU's times disagree by more than the tolerance.
    Contradiction,
    /// "Done" was asked for so long after the return that the end may have come after the return.
    LateAnswer,
}

impl Unresolved {
    pub fn as_str(self) -> &'static str {
        match self {
            Unresolved::Contradiction => "the stream query and the GPU's clock disagree",
            Unresolved::LateAnswer => "the query saying \"done\" was asked too long after the return to date the end",
        }
    }
}

/// Where an end fell, from a query's answer (`done` at `query = [q0, q1]`, both after the return) and the other
/// readings' interval `bounds`, with `ret` the return and `tol` the tolerance (all ns after the call's start).
/// Without a query, the interval alone decides, or nothing does.
pub fn reading(done: Option<bool>, query: [i64; 2], bounds: Interval, ret: i64, tol: i64) -> Option<Reading> {
    let [q0, q1] = query;
    Some(match done {
        Some(true) => {
            if bounds.lo > q1.saturating_add(tol) {
                Reading::Unresolved(Unresolved::Contradiction)
            } else if bounds.lo > ret {
                // Done by the query, but it could not have ended before the return: it ended in between.
                Reading::After
            } else if bounds.hi <= ret.saturating_add(tol) || q0 <= ret.saturating_add(tol) {
                // The GPU's times put the end at the return, or the question was asked within the tolerance
                // of it (the answer is the state at some moment of the query: `q0` is when it was put).
                Reading::Before
            } else {
                Reading::Unresolved(Unresolved::LateAnswer)
            }
        }
        Some(false) => {
            if bounds.hi < q0.saturating_sub(tol) {
                Reading::Unresolved(Unresolved::Contradiction)
            } else {
                Reading::After
            }
        }
        None if bounds.hi <= ret => Reading::Before,
        None if bounds.lo > ret => Reading::After,
        None => return None,
    })
}

/// The times of one repetition, on the host clock, in ns after the call's start.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RepTimes {
    /// The call's return.
    pub ret: i64,
    /// When the blocker's end event was reached on the GPU.
    pub blocker_end: Interval,
    /// When the call's stream reached its own work (the event recorded just before the call).
    pub op_start: Interval,
    /// An upper bound of the end of the call's own work (its end event, recorded after the return).
    pub op_end: Interval,
    /// The queries right after the return: of the call's stream, and of the blocker's end event.
    pub op_query: [i64; 2],
    pub blocker_query: [i64; 2],
    /// The tolerance: the clock fit's uncertainty ([`NO_CLOCK_TOLERANCE_NS`] where the run has none).
    pub tol: i64,
    /// The other thread's call (the threads family), on the same clock.
    pub other_thread: Option<Interval>,
}

impl RepTimes {
    /// Everything `rep` says about when things happened. Recordings made before the queries were timed
    /// place them at the return.
    pub fn of(rep: &Rep, fit: Option<&ClockFit>) -> RepTimes {
        let start = rep.host_call_start_ns as i64;
        let ret = rep.host_call_ns as i64;
        let tol = fit.map_or(NO_CLOCK_TOLERANCE_NS, |f| f.uncertainty_ns as i64);
        let rel = |q: Option<[u64; 2]>| q.map_or([ret, ret], |[a, b]| [a as i64, b as i64]);
        // The blocker's start event: reached no earlier than its launch on the host, and no later than the
        // kernel's first clock reading (it precedes the kernel in its stream). A launch time later than that
        // reading is no bound at all (seed recordings before d4d6d2c noted the call after the event's record).
        let stamps = rep
            .blocker_gpu_ns
            .zip(fit)
            .map(|([g0, g1], f)| (f.to_host(g0 as i64) - start, f.to_host(g1 as i64) - start));
        let launch = rep
            .host_blocker_launch_ns
            .map(|t| t as i64 - start)
            .filter(|&l| stamps.is_none_or(|(g0, _)| l <= g0.saturating_add(tol)));
        let start_event =
            Interval::new(launch.unwrap_or(i64::MIN), stamps.map_or(i64::MAX, |(g0, _)| g0.saturating_add(tol)));
        let shift = |iv: Interval, d: i64| Interval {
            lo: if iv.lo == i64::MIN { i64::MIN } else { iv.lo.saturating_add(d) },
            hi: if iv.hi == i64::MAX { i64::MAX } else { iv.hi.saturating_add(d) },
        };
        let mut blocker_end = match rep.blocker_device_ns {
            Some(d) => shift(start_event, d as i64),
            None => Interval::ANY,
        };
        if let Some((_, g1)) = stamps {
            // The kernel's last clock reading comes before its end event.
            blocker_end = blocker_end.and(Interval::new(g1.saturating_sub(tol), i64::MAX));
        }
        // The call's own work: placed from the blocker's start event, or (the seed's first step, which has
        // nothing ahead) from a stamped reference event whose GPU time is known.
        let origin = rep.gpu_origin_ns.zip(fit).map(|(g, f)| f.to_host(g as i64) - start);
        // The stamped reference event places the work to within the clock fit's uncertainty: preferred where a
        // repetition has both.
        let (op_start, op_end) = match (rep.op_gpu_ns_from_origin, origin, rep.op_gpu_ns_from_blocker) {
            (Some([a, b]), Some(o), _) => {
                let at = |d: i64| Interval::new(o + d - tol, o + d + tol);
                (at(a), at(b))
            }
            (_, _, Some([a, b])) => (shift(start_event, a), shift(start_event, b)),
            _ => (Interval::ANY, Interval::ANY),
        };
        let other_thread = match (rep.metrics.other_start_ns, rep.metrics.other_end_ns) {
            (Some(a), Some(b)) => Some(Interval::new(a as i64 - start, b as i64 - start)),
            _ => None,
        };
        RepTimes {
            ret,
            blocker_end,
            op_start,
            op_end,
            op_query: rel(rep.op_query_ns),
            blocker_query: rel(rep.blocker_query_ns),
            tol,
            other_thread,
        }
    }

    /// The repetition's resolution: the clock fit's uncertainty plus how long after the return the call's
    /// state was known (the end of the query of its stream, or of the blocker's event for a call without
    /// one).
    pub fn resolution(&self, rep: &Rep) -> i64 {
        let asked = match (rep.op_query_ns, rep.blocker_query_ns) {
            (Some(_), _) => self.op_query[1],
            (None, Some(_)) => self.blocker_query[1],
            (None, None) => self.ret,
        };
        self.tol + (asked - self.ret).max(0)
    }

    /// The repetition as a [`Scene`] for `attribution`: the call's host interval, its own work on the GPU,
    /// and what may have held it: the blocker (`what`; ahead of the call in its stream or not) and another
    /// thread's call. `blocker` and `op` are this repetition's readings, which place the ends where the GPU's
    /// times alone do not: a blocker done at the return ended inside the call, one still running did not; a
    /// call that waited for a blocker on another stream began its own work only after it.
    pub fn scene(
        &self,
        rep: &Rep,
        blocker_ahead: bool,
        blocker: Option<Reading>,
        op: Option<Reading>,
        what: &str,
    ) -> Scene {
        let ret = self.ret;
        let resolution_ns = self.resolution(rep);
        let mut holders = Vec::new();
        let mut waited_until = None;
        if let Some(reading) = blocker {
            let e = self.blocker_end;
            let estimate = point(e);
            // Where the GPU's times do not date it, a blocker ahead ended no later than the call's own work
            // began in its stream (recordings without a clock fit).
            let own_began = point(self.op_start).filter(|&s| blocker_ahead && s > 0 && s < ret);
            let end = match reading {
                // Done at the return: it ended no later than the return (within the tolerance).
                Reading::Before => estimate.map_or(own_began.unwrap_or(ret), |x| x.min(ret)),
                // Still running: it ended after the question was asked.
                Reading::After => {
                    estimate.unwrap_or(i64::MAX / 2).max(self.blocker_query[0]).max(ret + resolution_ns + 1)
                }
                Reading::Unresolved(_) => estimate.unwrap_or(ret),
            };
            if reading == Reading::Before {
                waited_until = Some(end);
            }
            let start = rep.host_blocker_launch_ns.map_or(i64::MIN / 2, |t| t as i64 - rep.host_call_start_ns as i64);
            let cause = if blocker_ahead { Cause::Stream } else { Cause::Device };
            holders.push(Holder::worded(cause, Span::new(start.min(end), end), what));
        }
        // Another thread's call that was under way when the call started and ended inside it: the call could
        // submit its own work only once that call had let it go.
        let mut thread_until = None;
        // Only a call already under way when this one started can have held it.
        if let Some(o) = self.other_thread.filter(|o| o.lo <= 0) {
            if o.hi > resolution_ns && o.hi <= ret + resolution_ns {
                thread_until = Some(o.hi);
            }
            holders.push(Holder::worded(Cause::Thread, Span::new(o.lo, o.hi), "the other thread's call"));
        }
        let own = op.and_then(|reading| {
            let started = point(self.op_start).unwrap_or(0).max(0);
            // A call that waited for work it does not depend on submitted its own work only afterwards.
            let started = match (blocker_ahead, waited_until) {
                (false, Some(w)) => started.max(w),
                _ => started,
            };
            let started = thread_until.map_or(started, |t| started.max(t));
            let event = (self.op_end.hi != i64::MAX).then(|| self.op_end.hi - self.tol);
            let [q0, q1] = self.op_query;
            let (end, bounds) = match reading {
                // Done when asked: it ended before the answer, and no later than its end event.
                Reading::Before => {
                    let latest = event.map_or(q1, |e| e.min(q1)).max(started);
                    (latest, Span::new(started, latest))
                }
                // Still running when asked: it ended after the question, and where its end event says.
                Reading::After => {
                    let e = event?.max(q0);
                    (e, Span::new(self.op_end.lo.max(q0), self.op_end.hi.max(q0)))
                }
                Reading::Unresolved(_) => {
                    let e = event?;
                    (e, Span::new(e - resolution_ns, e + resolution_ns))
                }
            };
            Some((Span::new(started, end.max(started)), bounds))
        });
        Scene {
            call: Span::new(0, ret),
            own: own.map(|o| o.0),
            own_end: own.map(|o| o.1),
            holders,
            release: crate::attribution::Release::Designed,
            resolution_ns,
            clock_error_ns: self.tol,
        }
    }

    /// Had the blocker ended at the return? `None` without a blocker.
    pub fn blocker(&self, rep: &Rep) -> Option<Reading> {
        rep.blocker_done_at_return?;
        reading(rep.blocker_done_at_return, self.blocker_query, self.blocker_end, self.ret, self.tol)
    }

    /// Had the call's own work ended at the return? `None` for calls without device work. Its end lies after
    /// its stream reached it and no later than its end event.
    pub fn op(&self, rep: &Rep) -> Option<Reading> {
        rep.op_done_at_return?;
        let bounds = Interval::new(self.op_start.lo, self.op_end.hi);
        reading(rep.op_done_at_return, self.op_query, bounds, self.ret, self.tol)
    }
}

/// A point for an interval: its middle where both ends are known, else the known end.
fn point(iv: Interval) -> Option<i64> {
    match (iv.lo != i64::MIN, iv.hi != i64::MAX) {
        (true, true) => Some(iv.lo + (iv.hi - iv.lo) / 2),
        (true, false) => Some(iv.lo),
        (false, true) => Some(iv.hi),
        (false, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RET: i64 = 20_000_000;
    const TOL: i64 = 4_000;

    /// A query asked `after_return` ns after the return, answered 3 µs later.
    fn q(after_return: i64) -> [i64; 2] {
        [RET + after_return, RET + after_return + 3_000]
    }

    #[test]
    fn not_done_when_asked_after_the_return_is_after() {
        assert_eq!(reading(Some(false), q(800), Interval::ANY, RET, TOL), Some(Reading::After));
        // Still after if the GPU's clock puts the end anywhere up to the tolerance before the question.
        let just_inside = Interval::new(i64::MIN, RET + 800 - TOL);
        assert_eq!(reading(Some(false), q(800), just_inside, RET, TOL), Some(Reading::After));
    }

    #[test]
    fn not_done_but_ended_well_before_the_question_is_a_contradiction() {
        let outside = Interval::new(i64::MIN, RET + 800 - TOL - 1);
        assert_eq!(
            reading(Some(false), q(800), outside, RET, TOL),
            Some(Reading::Unresolved(Unresolved::Contradiction))
        );
    }

    #[test]
    fn done_when_asked_at_within_and_beyond_the_tolerance() {
        assert_eq!(reading(Some(true), q(800), Interval::ANY, RET, TOL), Some(Reading::Before));
        assert_eq!(reading(Some(true), q(TOL), Interval::ANY, RET, TOL), Some(Reading::Before), "at the edge");
        assert_eq!(
            reading(Some(true), q(TOL + 1), Interval::ANY, RET, TOL),
            Some(Reading::Unresolved(Unresolved::LateAnswer)),
            "just outside: a late answer says nothing about the return"
        );
        // A late answer is still decided when the GPU's times place the end before the return.
        let early_end = Interval::new(i64::MIN, RET - 10_000);
        assert_eq!(reading(Some(true), q(50_000), early_end, RET, TOL), Some(Reading::Before));
    }

    #[test]
    fn done_but_unable_to_end_before_the_return_is_after() {
        // The work's stream reached it only after the return: done by the question, yet not at the return.
        let started_late = Interval::new(RET + 100, i64::MAX);
        assert_eq!(reading(Some(true), q(800), started_late, RET, TOL), Some(Reading::After));
        // Starting later than the answer by more than the tolerance contradicts the answer.
        let impossible = Interval::new(RET + 3_800 + TOL + 1, i64::MAX);
        assert_eq!(
            reading(Some(true), q(800), impossible, RET, TOL),
            Some(Reading::Unresolved(Unresolved::Contradiction))
        );
    }

    #[test]
    fn without_a_query_only_the_interval_decides() {
        assert_eq!(reading(None, q(0), Interval::new(0, RET), RET, TOL), Some(Reading::Before));
        assert_eq!(reading(None, q(0), Interval::new(RET + 1, RET + 9), RET, TOL), Some(Reading::After));
        assert_eq!(reading(None, q(0), Interval::new(RET - 1, RET + 1), RET, TOL), None);
    }

    #[test]
    fn times_of_a_repetition_use_causality_and_the_clock_fit() {
        use crate::clock::ClockOffset;
        let offset = 1_000_000_000i64;
        let fit = ClockFit::constant(&ClockOffset {
            gpu_minus_host_ns: offset,
            uncertainty_ns: TOL as u64,
            samples: 1,
            at_host_ns: Some(0),
        });
        let start = 5_000_000u64;
        // Blocker launched 10 µs before the call, its kernel started 8 µs after the launch and ran 20 ms.
        let g0 = (start as i64 - 10_000 + 8_000 + offset) as u64;
        let rep = Rep {
            host_call_ns: 3_000,
            host_call_start_ns: start,
            host_blocker_launch_ns: Some(start - 10_000),
            blocker_gpu_ns: Some([g0, g0 + 20_000_000]),
            blocker_device_ns: Some(20_001_000),
            blocker_done_at_return: Some(false),
            op_done_at_return: Some(false),
            op_gpu_ns_from_blocker: Some([20_002_000, 20_004_000]),
            op_query_ns: Some([3_200, 3_700]),
            blocker_query_ns: Some([3_800, 4_100]),
            ..Rep::default()
        };
        let t = RepTimes::of(&rep, Some(&fit));
        assert_eq!(t.ret, 3_000);
        // The start event lies in [launch, g0 + tol] = [-10 µs, -2 µs + 4 µs].
        assert_eq!(t.op_start, Interval::new(-10_000 + 20_002_000, 2_000 + 20_002_000));
        assert_eq!(t.blocker_end.lo, (-2_000 + 20_000_000 - TOL).max(-10_000 + 20_001_000));
        assert_eq!(t.blocker(&rep), Some(Reading::After));
        assert_eq!(t.op(&rep), Some(Reading::After));
        // Without a clock fit the bounds are causal only, and an old recording's queries sit at the return.
        let old = Rep { op_query_ns: None, blocker_query_ns: None, ..rep.clone() };
        let t = RepTimes::of(&old, None);
        assert_eq!(t.op_query, [3_000, 3_000]);
        assert_eq!(t.op_end.hi, i64::MAX);
    }

    /// A repetition behind a 20 ms blocker ahead (launched 10 µs before the call, its kernel starting 5 µs
    /// after), on a clock fit with no offset and a 4 µs uncertainty.
    fn rep_behind_blocker(ret_us: u64, blocker_done: bool) -> (Rep, ClockFit) {
        use crate::clock::ClockOffset;
        let start = 1_000_000_000u64;
        let g0 = start - 5_000;
        let fit = ClockFit::constant(&ClockOffset {
            gpu_minus_host_ns: 0,
            uncertainty_ns: 4_000,
            samples: 1,
            at_host_ns: Some(0),
        });
        let ret = ret_us * 1_000;
        let rep = Rep {
            host_call_ns: ret,
            host_call_start_ns: start,
            host_blocker_launch_ns: Some(start - 10_000),
            blocker_gpu_ns: Some([g0, g0 + 20_000_000]),
            blocker_device_ns: Some(20_000_000),
            blocker_done_at_return: Some(blocker_done),
            blocker_query_ns: Some([ret + 1_000, ret + 1_500]),
            ..Rep::default()
        };
        (rep, fit)
    }

    #[test]
    fn a_scene_credits_a_blocker_done_at_the_return_and_not_one_still_running() {
        let (rep, fit) = rep_behind_blocker(20_020, true);
        let t = RepTimes::of(&rep, Some(&fit));
        let scene = t.scene(&rep, true, t.blocker(&rep), t.op(&rep), "b");
        let h = crate::attribution::attribute(&scene);
        assert_eq!(h.released_by().map(|s| s.cause), Some(Cause::Stream), "{h:?}");
        let (rep, fit) = rep_behind_blocker(7, false);
        let t = RepTimes::of(&rep, Some(&fit));
        let h = crate::attribution::attribute(&t.scene(&rep, true, t.blocker(&rep), t.op(&rep), "b"));
        assert!(h.released_by().is_none(), "{h:?}");
    }

    #[test]
    fn a_launch_time_after_the_blockers_first_stamp_is_no_bound() {
        // The seed's recordings before d4d6d2c noted as "launch" a host time after the event's record.
        let (mut rep, fit) = rep_behind_blocker(20_020, true);
        rep.host_blocker_launch_ns = Some(rep.host_call_start_ns + 1_000);
        let t = RepTimes::of(&rep, Some(&fit));
        assert!(t.blocker_end.lo <= t.blocker_end.hi, "{:?}", t.blocker_end);
    }

    #[test]
    fn another_threads_call_counts_only_if_it_was_under_way_at_the_start() {
        let (mut rep, fit) = rep_behind_blocker(90_000, true);
        rep.metrics.other_start_ns = Some((rep.host_call_start_ns + 20_000) as f64);
        rep.metrics.other_end_ns = Some((rep.host_call_start_ns + 89_000_000) as f64);
        let t = RepTimes::of(&rep, Some(&fit));
        let scene = t.scene(&rep, true, t.blocker(&rep), t.op(&rep), "b");
        assert!(scene.holders.iter().all(|h| h.cause != Cause::Thread), "{scene:?}");
    }
}

//! What taking locations may cost a thread, bounded by what its calls held rather than by the wall clock:
//! each call that held past the threshold earns the thread [`SHARE_PERCENT`] of its held time, each location
//! taken spends what it cost, and a location is taken while the thread's credit is positive. A call held
//! [`ALWAYS_NS`] or more is always located: its location costs it a few % at most, and a budget that left
//! the longest holds without one would hide what matters most.

use std::cell::Cell;

/// The share of a held call's time its thread may spend on locations, on average.
pub const SHARE_PERCENT: u64 = 5;
/// Calls held this long or longer are always located.
pub const ALWAYS_NS: u64 = 10_000_000;
/// The most credit a thread keeps (ns): a quiet stretch does not buy a burst of locations later.
const MOST_NS: i64 = 20_000_000;
/// The most debt a thread keeps (ns): an expensive first location (the unwinder learning the process's
/// files) is paid back, then forgotten.
const LEAST_NS: i64 = -(ALWAYS_NS as i64);

/// One thread's credit, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Credit(i64);

impl Credit {
    /// A call held `held_ns` past the threshold: whether to take its location (its share earned first).
    pub fn may_locate(&mut self, held_ns: u64) -> bool {
        let earned = (held_ns.saturating_mul(SHARE_PERCENT) / 100).min(MOST_NS as u64) as i64;
        self.0 = (self.0 + earned).min(MOST_NS);
        held_ns >= ALWAYS_NS || self.0 > 0
    }

    /// A location taken that cost `ns`.
    pub fn spent(&mut self, ns: u64) {
        self.0 = (self.0 - ns.min(i64::MAX as u64) as i64).max(LEAST_NS);
    }
}

thread_local! {
    static CREDIT: Cell<Credit> = const { Cell::new(Credit(0)) };
}

/// Whether this thread may take the location of a call that held `held_ns`.
pub fn may_locate(held_ns: u64) -> bool {
    CREDIT.with(|c| {
        let mut credit = c.get();
        let yes = credit.may_locate(held_ns);
        c.set(credit);
        yes
    })
}

/// This thread took a location that cost `ns`.
pub fn spent(ns: u64) {
    CREDIT.with(|c| {
        let mut credit = c.get();
        credit.spent(ns);
        c.set(credit);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `calls` calls held `held` each, whose locations cost `cost` each: how many were located, and what
    /// they cost in all.
    fn run(calls: u64, held: u64, cost: u64) -> (u64, u64) {
        let mut c = Credit::default();
        let mut located = 0;
        for _ in 0..calls {
            if c.may_locate(held) {
                c.spent(cost);
                located += 1;
            }
        }
        (located, located * cost)
    }

    #[test]
    fn locations_cost_at_most_their_share_of_the_time_held() {
        // Cheap locations (20 µs) of 1 ms calls: every one.
        assert_eq!(run(1000, 1_000_000, 20_000).0, 1000);
        // Expensive ones (2 ms, libgcc's unwinder in a CUDA process) of 1 ms calls: about 5% of the time held.
        let (located, cost) = run(1000, 1_000_000, 2_000_000);
        assert!((20..=30).contains(&located), "{located}");
        assert!(cost <= 1000 * 1_000_000 * SHARE_PERCENT / 100 + 2_000_000, "{cost}");
    }

    #[test]
    fn a_call_held_10_ms_or_more_is_always_located() {
        let mut c = Credit::default();
        // Debt from many expensive locations of short calls...
        for _ in 0..100 {
            c.spent(5_000_000);
        }
        assert!(!c.may_locate(50_000));
        // ...never leaves a long hold without its location.
        for held in [ALWAYS_NS, 106_000_000, 3_000_000_000] {
            assert!(c.may_locate(held));
            c.spent(2_000_000);
        }
        // A thread of only long holds with costly locations: every one.
        assert_eq!(run(100, 10_000_000, 3_000_000).0, 100);
    }
}

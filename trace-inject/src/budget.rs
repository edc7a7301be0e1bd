//! What taking locations may cost a thread, bounded by what each call held rather than by the wall clock: a
//! call is located where the thread's usual cost of a location (the median of its last [`KEPT`]) is at most
//! [`SHARE_PERCENT`] of the call's held time, and a call held [`ALWAYS_NS`] or more is always located: its
//! location costs it a few % at most, and a budget that left the longest holds without one would hide what
//! matters most. A median, not a running account: one expensive location (the unwinder first reading a large
//! library's tables, 13 ms in a cuBLAS process on the H200) says nothing of the next, and an account in debt
//! from it had left that process's later 1-6 ms holds without a location.

use std::cell::Cell;

/// The most a location may usually cost, as a share of the call's held time.
pub const SHARE_PERCENT: u64 = 5;
/// Calls held this long or longer are always located.
pub const ALWAYS_NS: u64 = 10_000_000;
/// How many of the thread's last locations' costs the median is taken over.
const KEPT: usize = 8;
/// Until this many locations were taken, every held call is located (nothing known of their cost yet).
const LEARNING: usize = 3;

/// One thread's last locations' costs, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Credit {
    costs: [u64; KEPT],
    taken: usize,
}

impl Credit {
    /// A call held `held_ns` past the threshold: whether to take its location.
    pub fn may_locate(&mut self, held_ns: u64) -> bool {
        held_ns >= ALWAYS_NS
            || self.taken < LEARNING
            || self.usual().saturating_mul(100) <= held_ns.saturating_mul(SHARE_PERCENT)
    }

    /// A location taken that cost `ns`.
    pub fn spent(&mut self, ns: u64) {
        self.costs[self.taken % KEPT] = ns;
        self.taken += 1;
    }

    /// The median of the costs kept.
    fn usual(&self) -> u64 {
        let n = self.taken.min(KEPT);
        let mut kept = self.costs;
        let kept = &mut kept[..n];
        kept.sort_unstable();
        kept.get(n / 2).copied().unwrap_or(0)
    }
}

thread_local! {
    static CREDIT: Cell<Credit> = const { Cell::new(Credit { costs: [0; KEPT], taken: 0 }) };
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
        // Expensive ones (2 ms, libgcc's unwinder in a CUDA process) of 1 ms calls: the first few, to learn
        // what they cost, then none.
        let (located, _) = run(1000, 1_000_000, 2_000_000);
        assert_eq!(located, LEARNING as u64);
        // 50 µs locations of 1 ms calls cost 5% of each: every one.
        assert_eq!(run(100, 1_000_000, 50_000).0, 100);
    }

    #[test]
    fn one_expensive_location_does_not_leave_the_next_holds_without_theirs() {
        let mut c = Credit::default();
        // The first location read a large library's tables: 13 ms.
        assert!(c.may_locate(63_000_000));
        c.spent(13_000_000);
        for _ in 0..3 {
            assert!(c.may_locate(1_300_000));
            c.spent(50_000);
        }
        // The usual cost is now 50 µs: a 1.3 ms hold can afford it.
        assert!(c.may_locate(1_300_000));
        assert!(!c.may_locate(500_000));
    }

    #[test]
    fn a_call_held_10_ms_or_more_is_always_located() {
        let mut c = Credit::default();
        for _ in 0..100 {
            c.spent(5_000_000);
        }
        assert!(!c.may_locate(50_000));
        for held in [ALWAYS_NS, 106_000_000, 3_000_000_000] {
            assert!(c.may_locate(held));
            c.spent(2_000_000);
        }
        assert_eq!(run(100, 10_000_000, 3_000_000).0, 100);
    }
}

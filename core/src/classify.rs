//! From measured signals to one word: the class of a call, decided per repetition and then by majority.
//!
//! The vocabulary (used in every output):
//! - `async`: returned while the work ahead of it was still running, without waiting for it, and before its
//!   own work ran.
//! - `staged`: like `async`, but the call had already copied its data away: changing the source buffer after
//!   the call returned did not change what arrived (the driver staged it).
//! - `waited-then-staged`: waited for the work ahead of it in its stream, then returned before its own work
//!   finished.
//! - `blocking`: returned only after its own work had finished.
//! - `device-sync`: waited for work it does not depend on (a blocker on another stream): the device drained.
//!
//! Only the signals decide; the documented expectation plays no part here (see `rules` and `verdict`).

use crate::record::Rep;
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    Async,
    Staged,
    WaitedThenStaged,
    Blocking,
    DeviceSync,
}

impl Class {
    pub const ALL: [Class; 5] =
        [Class::Async, Class::Staged, Class::WaitedThenStaged, Class::Blocking, Class::DeviceSync];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::Async => "async",
            Class::Staged => "staged",
            Class::WaitedThenStaged => "waited-then-staged",
            Class::Blocking => "blocking",
            Class::DeviceSync => "device-sync",
        }
    }

    /// Whether the host thread got control back before the call's own work was done.
    pub fn returns_early(self) -> bool {
        matches!(self, Class::Async | Class::Staged | Class::WaitedThenStaged)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The class of one repetition. `blocker_ahead` says whether the blocker was ordered before the call (same
/// stream, or the legacy stream's implicit ordering): waiting for a blocker that was *not* ahead means the
/// call drained the device.
pub fn classify_rep(rep: &Rep, blocker_ahead: bool) -> Class {
    match rep.blocker_done_at_return {
        Some(true) if !blocker_ahead => Class::DeviceSync,
        Some(true) => match rep.op_done_at_return {
            Some(false) => Class::WaitedThenStaged,
            _ => Class::Blocking,
        },
        // The blocker was still running (or there was none): the call did not wait for it.
        Some(false) | None => match (rep.op_done_at_return, rep.data_captured_at_return) {
            (Some(true), _) => Class::Blocking,
            (_, Some(true)) => Class::Staged,
            _ => Class::Async,
        },
    }
}

/// The most frequent class over the repetitions, with the fraction of repetitions that agree with it. On a
/// tie the class that blocks more wins: a call that blocked even half the time is not one to rely on.
pub fn majority(classes: &[Class]) -> Option<(Class, f64)> {
    let mut best: Option<(Class, usize)> = None;
    for c in Class::ALL {
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
        assert_eq!(classify_rep(&rep(Some(false), Some(false), None), true), Class::Async);
        assert_eq!(classify_rep(&rep(Some(false), Some(false), Some(false)), true), Class::Async);
        assert_eq!(classify_rep(&rep(Some(false), Some(false), Some(true)), true), Class::Staged);
        assert_eq!(classify_rep(&rep(Some(true), Some(false), None), true), Class::WaitedThenStaged);
        assert_eq!(classify_rep(&rep(Some(true), Some(true), None), true), Class::Blocking);
        assert_eq!(classify_rep(&rep(Some(true), Some(true), None), false), Class::DeviceSync);
        assert_eq!(classify_rep(&rep(Some(true), None, None), false), Class::DeviceSync);
    }

    #[test]
    fn a_call_without_device_work_that_did_not_wait_is_async() {
        assert_eq!(classify_rep(&rep(Some(false), None, None), false), Class::Async);
    }

    #[test]
    fn finishing_its_own_work_without_waiting_is_blocking() {
        // e.g. a host-to-host copy next to a blocker on another stream.
        assert_eq!(classify_rep(&rep(Some(false), Some(true), None), false), Class::Blocking);
        assert_eq!(classify_rep(&rep(None, Some(true), None), false), Class::Blocking);
    }

    #[test]
    fn majority_and_ties() {
        use Class::*;
        assert_eq!(majority(&[Async, Async, Staged]), Some((Async, 2.0 / 3.0)));
        assert_eq!(majority(&[Async, Blocking]).unwrap().0, Blocking);
        assert_eq!(majority(&[]), None);
        // One noisy repetition out of five does not change the class.
        assert_eq!(majority(&[Staged, Staged, WaitedThenStaged, Staged, Staged]).unwrap().0, Staged);
    }
}

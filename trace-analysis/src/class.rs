//! The class vocabulary: the one word each call gets, used in every output, and [`class_of_held`], the class
//! an attribution names (what held the thread, no more). At the bottom of the core's layers beside
//! `attribution` (`docs/crates.md`): `rules` predicts classes, `classify` decides them from a repetition's
//! readings through [`class_of_held`], a trace's calls get theirs the same way, the report and every view print
//! them.
//!
//! A class names what held the calling thread, and says no more than the readings resolve:
//! - `async`: nothing held it: it returned without waiting for earlier work or another thread, and before most
//!   of its own work ran (or its own work was too short for the readings to tell).
//! - `staged`: like `async`, and the call had copied its data away before returning: changing the source
//!   right after the return did not change what arrived (the driver staged it).
//! - `waited-for-stream`: held until the work ahead of it in its own stream had finished; then it returned
//!   before most of its own work ran, or its own work was too short for the readings to tell.
//! - `waited-for-thread`: held until another thread's call ended.
//! - `blocking`: held through its own work (at least 90% of its transfer or kernel), after any waiting.
//! - `device-sync`: held until work on other streams, which it does not depend on, had finished: the device
//!   drained.
//! - `indeterminate`: the readings contradict each other (the stream query and the GPU's clock disagree), or
//!   whether the call waited for the work ahead was asked too long after the return (see `timing`). Said
//!   rather than guessed.
//! - `driver-work` (a traced program's calls only): nothing else held it, the driver's own work on the calling
//!   thread did: creating a context, loading a module or a library, or a millisecond or more of the call's
//!   host-side work (pinning or unpinning memory, allocating). The lab's experiments time such calls on
//!   purpose and call them `async`, with their time in "held for"; in a trace, `async` on a 111 ms context
//!   creation would read "returned at once".
//! - `unknown` (a traced program only): the records the class would rest on are missing from the trace (the
//!   program was killed before CUPTI handed them back, or CUPTI dropped them). Said rather than guessed.

use crate::attribution::{Cause, Held};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    Async,
    Staged,
    /// Named `waited-then-staged` before the classes named what held the thread.
    #[serde(alias = "waited-then-staged")]
    WaitedForStream,
    WaitedForThread,
    Blocking,
    DeviceSync,
    Indeterminate,
    DriverWork,
    /// A traced call whose GPU records are missing (`trace::calls`).
    Unknown,
}

impl Class {
    pub const ALL: [Class; 9] = [
        Class::Async,
        Class::Staged,
        Class::WaitedForStream,
        Class::WaitedForThread,
        Class::Blocking,
        Class::DeviceSync,
        Class::Indeterminate,
        Class::DriverWork,
        Class::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::Async => "async",
            Class::Staged => "staged",
            Class::WaitedForStream => "waited-for-stream",
            Class::WaitedForThread => "waited-for-thread",
            Class::Blocking => "blocking",
            Class::DeviceSync => "device-sync",
            Class::Indeterminate => "indeterminate",
            Class::DriverWork => "driver-work",
            Class::Unknown => "unknown",
        }
    }

    /// Whether nothing held the host thread (it got control back at once).
    pub fn returns_at_once(self) -> bool {
        matches!(self, Class::Async | Class::Staged)
    }

    /// The class a word of an earlier vocabulary stands for, where it was renamed (the C++ reference's
    /// output, and this tool's before the classes named what held the thread).
    pub fn from_legacy_word(word: &str) -> Option<Class> {
        match word {
            "waited-then-staged" => Some(Class::WaitedForStream),
            w => Class::ALL.into_iter().find(|c| c.as_str() == w),
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The class of a call's attribution. A wait for something the call does not depend on comes first (the
/// device draining, another thread's call): it is what a learner needs to know even when the call then also
/// held its own work. Then held through its own work (`blocking`), then the wait for its stream, else `async`.
pub fn class_of_held(held: &Held) -> Class {
    match held.released_by().map(|s| s.cause) {
        Some(Cause::Device) => Class::DeviceSync,
        Some(Cause::Thread) => Class::WaitedForThread,
        _ if held.held_through_own_work() == Some(true) => Class::Blocking,
        Some(Cause::Stream) => Class::WaitedForStream,
        _ => Class::Async,
    }
}

//! The class vocabulary: the one word each call gets, used in every output. Plain data at the bottom of the
//! core's layers (`docs/crates.md`): `rules` predicts classes, `classify` decides them, the report and every
//! view print them.
//!
//! - `async`: returned while the work ahead of it was still running, without waiting for it, and before its
//!   own work ran.
//! - `staged`: like `async`, but the call had already copied its data away: changing the source buffer after
//!   the call returned did not change what arrived (the driver staged it).
//! - `waited-then-staged`: waited for the work ahead of it in its stream, then returned before its own work
//!   finished.
//! - `blocking`: returned only after its own work had finished.
//! - `device-sync`: waited for work it does not depend on (a blocker on another stream): the device drained.
//! - `indeterminate`: the readings do not decide it: the stream query and the GPU's clock disagree, or the
//!   "done" answer came too long after the return (see `timing`). Said rather than guessed.

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
    Indeterminate,
}

impl Class {
    pub const ALL: [Class; 6] = [
        Class::Async,
        Class::Staged,
        Class::WaitedThenStaged,
        Class::Blocking,
        Class::DeviceSync,
        Class::Indeterminate,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::Async => "async",
            Class::Staged => "staged",
            Class::WaitedThenStaged => "waited-then-staged",
            Class::Blocking => "blocking",
            Class::DeviceSync => "device-sync",
            Class::Indeterminate => "indeterminate",
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

//! Plain-words explanations: why the measured signals give the class they give.
//!
//! Explain reads a case's setup and its result (`result::CaseResult`) and never calls the report: the report
//! calls `why` for each result it fills, and `long`'s caller passes in the result it got from the report.
//!
//! `why` is the dispatcher: a case that was not measured says why; one that was is told by its family's
//! opening (`waiting.rs`, `overhead.rs`, or `returned.rs` for the call that returned behind a blocker, with
//! what the seed, peer, stream memory, threads and virtual memory families measured beside it in their own
//! files), then what held the thread (`held.rs`) and the class against the rule (`verdict.rs`). What follows
//! from a family's facts alone is worded in its catalogue file (`catalogue/<family>.rs`).

mod held;
mod long;
mod overhead;
mod peer;
mod returned;
mod seed;
mod streammem;
mod threads;
mod verdict;
mod vmm;
mod waiting;

pub use held::held_sentence;
pub use long::{long, source_file};

use crate::record::CaseSetup;
use crate::result::CaseResult;
use crate::setup::Family;

/// A duration given in µs, in words (`units::duration`).
fn ms(us: f64) -> String {
    crate::units::duration(us * 1e3)
}

/// Why `r` got its class, in a few sentences a learner can follow.
pub fn why(s: &CaseSetup, r: &CaseResult) -> String {
    if let Some(e) = &r.error {
        return format!("Not measured: {e}");
    }
    if let Some(reason) = &r.not_run {
        return format!("Not run: {reason}.");
    }
    let Some(class) = r.class else { return "Not measured.".into() };
    let call = r.host_call_us.map_or(String::new(), |c| ms(c.median));
    let mut text = match s.family {
        Family::Wait => waiting::measured(s, r, &call),
        Family::Overhead => overhead::measured(s, r, &call),
        _ => returned::measured(s, r, &call),
    };
    if let Some(held) = held_sentence(r) {
        text.push(' ');
        text.push_str(&held);
    }
    text.push_str(&verdict::class_and_rule(class, r));
    text
}

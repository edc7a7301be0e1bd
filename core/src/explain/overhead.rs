//! The overhead family in words: the spread of the per-call times, measured by the host clocks alone.

use crate::record::CaseSetup;
use crate::result::CaseResult;

/// What the timed calls measured; `call` is their median time in words.
pub(super) fn measured(s: &CaseSetup, r: &CaseResult, call: &str) -> String {
    let m = &r.metrics;
    format!(
        "{} took {call} (median of {} calls, p10–p90 {:.2}–{:.2} µs), each enqueued behind a kernel still \
         running. Only the host clocks were read between the calls, so the class below rests on no signal.",
        s.call,
        r.host_call_us.map_or(0, |c| c.n),
        m.p10_us.unwrap_or(f64::NAN),
        m.p90_us.unwrap_or(f64::NAN)
    )
}

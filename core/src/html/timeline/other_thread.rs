//! The threads family's other thread: its slow call as a second host lane, under the measuring thread's.
//!
//! A repetition of the family keeps the slow call's span as the metrics `other_start_ns`/`other_end_ns`,
//! read on the same host clock as the call's own start (`host_call_start_ns`), so the span is drawn where its
//! times say, with no offset. What the slow call was is in the setup's description, which the span's tooltip
//! quotes whole (no fact is read back out of words).

use super::{Kind, Lane, Span};
use crate::html::axis::duration;
use crate::record::{CaseSetup, Rep};

/// The other thread's call in one repetition.
pub(super) struct OtherCall {
    /// Its span on the host clock, where both times were recorded and are in order.
    span: Option<(i64, i64)>,
    /// What the experiment does, in the setup's words (which name the slow call).
    what: String,
    /// How long it took made alone, before the repetitions (µs).
    alone_us: Option<f64>,
    /// The measuring thread's call, where its start was recorded: [start, end].
    call: Option<(i64, i64)>,
}

/// Whether `rep` recorded another thread's call (either of its two times): only the threads family does.
pub fn has_other_thread(rep: &Rep) -> bool {
    rep.metrics.other_start_ns.is_some() || rep.metrics.other_end_ns.is_some()
}

/// The other thread's call in `rep`, where the repetition recorded one: `None` for every other family, which
/// then draws exactly as before.
pub(super) fn of(setup: &CaseSetup, rep: &Rep) -> Option<OtherCall> {
    if !has_other_thread(rep) {
        return None;
    }
    let span = match (rep.metrics.other_start_ns, rep.metrics.other_end_ns) {
        (Some(s), Some(e)) if s.is_finite() && e.is_finite() && s > 0.0 && e >= s => Some((s as i64, e as i64)),
        _ => None,
    };
    let call = (rep.host_call_start_ns != 0)
        .then(|| (rep.host_call_start_ns as i64, (rep.host_call_start_ns + rep.host_call_ns) as i64));
    Some(OtherCall { span, what: setup.what.clone(), alone_us: rep.metrics.other_alone_us, call })
}

impl OtherCall {
    /// Whether there is a span to draw.
    pub(super) fn drawn(&self) -> bool {
        self.span.is_some()
    }

    /// Its lane: "other thread".
    pub(super) fn lane(&self) -> Lane {
        Lane::new("other thread", String::new(), "its call's times were not recorded")
    }

    /// Its span on `lane`, where both times were recorded.
    pub(super) fn span(&self, lane: usize) -> Option<Span> {
        let (start, end) = self.span?;
        let len = duration((end - start) as f64);
        let mut title = format!("the other thread was inside its slow call for {len} (its own host times, same clock)");
        if let Some(alone) = self.alone_us {
            title += &format!("; made alone, before the repetitions, it took {}", duration(alone * 1e3));
        }
        if let Some((call_start, call_end)) = self.call {
            let into = call_start - start;
            let after = call_end - end;
            title += &format!(
                "; the call under test started {} {} its start and returned {} {} its end",
                duration(into.unsigned_abs() as f64),
                if into >= 0 { "after" } else { "before" },
                duration(after.unsigned_abs() as f64),
                if after >= 0 { "after" } else { "before" },
            );
        }
        if !self.what.is_empty() {
            title += &format!("; the experiment: {}", self.what);
        }
        Some(Span {
            lane,
            start,
            end,
            kind: Kind::Other,
            label: format!("other thread's call {len}"),
            short: len,
            title,
            approx: false,
            group: None,
        })
    }
}

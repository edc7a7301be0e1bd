//! The threads family's other thread: its slow call as a second host lane, under the measuring thread's.
//!
//! A repetition of the family keeps the slow call's span as the metrics `other_start_ns`/`other_end_ns`,
//! read on the same host clock as the call's own start (`host_call_start_ns`), so the span is drawn where its
//! times say, with no offset. What the slow call was comes from the setup's description ("... while another
//! thread is inside <the slow call>"); a description without it gives the lane a plain name.

use super::{Kind, Lane, Span};
use crate::html::axis::duration;
use crate::record::{CaseSetup, Rep};

/// The other thread's call in one repetition.
pub(super) struct OtherCall {
    /// Its span on the host clock, where both times were recorded and are in order.
    span: Option<(i64, i64)>,
    /// A short name (`cuMemAllocHost`, `host function`), or empty.
    name: String,
    /// The setup's words for it (`a 256 MiB cuMemAllocHost`), or empty.
    words: String,
    /// How long it took made alone, before the repetitions (µs).
    alone_us: Option<f64>,
    /// The measuring thread's call, where its start was recorded: [start, end].
    call: Option<(i64, i64)>,
}

const START: &str = "other_start_ns";
const END: &str = "other_end_ns";

/// Whether `rep` recorded another thread's call (either of its two times): only the threads family does.
pub fn has_other_thread(rep: &Rep) -> bool {
    rep.metrics.contains_key(START) || rep.metrics.contains_key(END)
}

/// The other thread's call in `rep`, where the repetition recorded one: `None` for every other family, which
/// then draws exactly as before.
pub(super) fn of(setup: &CaseSetup, rep: &Rep) -> Option<OtherCall> {
    if !has_other_thread(rep) {
        return None;
    }
    let (start, end) = (rep.metrics.get(START), rep.metrics.get(END));
    let span = match (start, end) {
        (Some(&s), Some(&e)) if s.is_finite() && e.is_finite() && s > 0.0 && e >= s => Some((s as i64, e as i64)),
        _ => None,
    };
    let (words, name) = described(&setup.what).unwrap_or_default();
    let call = (rep.host_call_start_ns != 0)
        .then(|| (rep.host_call_start_ns as i64, (rep.host_call_start_ns + rep.host_call_ns) as i64));
    Some(OtherCall { span, name, words, alone_us: rep.metrics.get("other_alone_us").copied(), call })
}

/// What the other thread's call was, from a threads setup's description: its words, and a short name (the
/// first `cu...` name before any parenthesis, else the words without their article and their number).
fn described(what: &str) -> Option<(String, String)> {
    let words = what.split_once("another thread is inside ")?.1;
    let words = words.strip_suffix(", through the runtime API").unwrap_or(words).trim();
    if words.is_empty() {
        return None;
    }
    let head = words.split(" (").next().unwrap_or(words);
    let name = head
        .split_whitespace()
        .find(|w| w.starts_with("cu") && w[2..].starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()).to_owned())
        .unwrap_or_else(|| {
            // "a 30 ms host function": the noun, without its article and its size or length (the span has that).
            let mut w: Vec<&str> = head.split_whitespace().collect();
            if matches!(w.first(), Some(&"a" | &"an")) {
                w.remove(0);
            }
            if w.len() > 2 && w[0].parse::<f64>().is_ok() {
                w.drain(..2);
            }
            w.join(" ")
        });
    Some((words.to_owned(), name))
}

impl OtherCall {
    /// Whether there is a span to draw.
    pub(super) fn drawn(&self) -> bool {
        self.span.is_some()
    }

    /// Its lane: "other thread", with the slow call's short name under it.
    pub(super) fn lane(&self) -> Lane {
        Lane::new("other thread", self.name.clone(), "its call's times were not recorded")
    }

    /// Its span on `lane`, where both times were recorded.
    pub(super) fn span(&self, lane: usize) -> Option<Span> {
        let (start, end) = self.span?;
        let len = duration((end - start) as f64);
        let what = if self.words.is_empty() { "its slow call".to_owned() } else { self.words.clone() };
        let mut title = format!("the other thread was inside {what} for {len} (its own host times, same clock)");
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
        let name = if self.name.is_empty() { "other thread's call" } else { self.name.as_str() };
        Some(Span {
            lane,
            start,
            end,
            kind: Kind::Other,
            label: format!("{name} {len}"),
            short: len,
            title,
            approx: false,
            group: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::described;

    #[test]
    fn the_slow_call_is_named_from_the_description() {
        let d = |what: &str| described(what).map(|(_, name)| name);
        let copy = "cuLaunchKernel behind a blocker in its own stream, made while another thread is inside a 256 MiB \
                    pageable host → device cuMemcpyHtoD";
        assert_eq!(d(copy).as_deref(), Some("cuMemcpyHtoD"));
        assert_eq!(
            described(&format!("{copy}, through the runtime API")).unwrap().0,
            "a 256 MiB pageable host → device cuMemcpyHtoD"
        );
        let load =
            "cuEventRecord behind a blocker while another thread is inside a cuModuleLoadData of the kernels' PTX";
        assert_eq!(d(load).as_deref(), Some("cuModuleLoadData"));
        let func =
            "cuLaunchKernel behind a blocker in its own stream, made while another thread is inside a 30 ms host \
                    function (cuLaunchHostFunc on a stream of its own, running on the driver's callback thread)";
        assert_eq!(d(func).as_deref(), Some("host function"));
        assert_eq!(d("x while another thread is inside an odd call").as_deref(), Some("odd call"));
        assert_eq!(d("a pinned copy"), None);
    }
}

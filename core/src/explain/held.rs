//! What held the thread in a case's median repetition, in one sentence (the attribution's causes in words).

use crate::result::CaseResult;

/// What held the thread in the median repetition, in one sentence: how long, and by what ("The thread was
/// held 1.44 ms: 1.43 ms while its own work ran on the GPU (99% of that work), 8.0 µs in the call itself.").
pub fn held_sentence(r: &CaseResult) -> Option<String> {
    use crate::attribution::{Cause, OwnReading};
    let h = r.median_held()?;
    let us = |ns: i64| crate::units::duration(ns as f64);
    let mut parts = Vec::new();
    for cause in [Cause::Stream, Cause::Device, Cause::Thread, Cause::Own, Cause::Call] {
        let ns = h.ns(cause);
        if ns <= 0 {
            continue;
        }
        let what = |c: Cause| h.segments.iter().find(|s| s.cause == c).map_or(String::new(), |s| s.what.clone());
        parts.push(match cause {
            Cause::Stream => format!("{} waiting for {} in its stream", us(ns), what(cause)),
            Cause::Device => format!("{} waiting for {} on another stream (the device drained)", us(ns), what(cause)),
            Cause::Thread => format!("{} waiting for {}", us(ns), what(cause)),
            // The own work is counted from when its stream reached it (the call may have submitted it later).
            Cause::Own => match h.own_reading() {
                Some(OwnReading::Decided(share)) => {
                    format!("{} with its own work under way on the GPU ({:.0}% of that work)", us(ns), share * 100.0)
                }
                Some(OwnReading::NearTheLine(share)) => format!(
                    "{} with its own work under way on the GPU (about {:.0}% of that work)",
                    us(ns),
                    share * 100.0
                ),
                _ => format!("{} with its own work under way on the GPU", us(ns)),
            },
            Cause::Call => format!("{} in the call itself", us(ns)),
        });
    }
    let mut text = format!("The thread was held {}: {}.", us(h.total_ns), parts.join(", "));
    match h.own_reading() {
        Some(OwnReading::TooShort) => text.push_str(&format!(
            " Whether it was held through most of its own work ({}) the readings cannot tell: they decide that \
             only for work of {} or more here.",
            us(h.own_work_ns.unwrap_or(0)),
            us(h.resolved_length_ns())
        )),
        Some(OwnReading::NearTheLine(_)) => text.push_str(&format!(
            " Whether it was held through {:.0}% of its own work the readings cannot tell: the part of it left \
             after the return may lie on either side of that line.",
            crate::attribution::HELD_THROUGH * 100.0
        )),
        _ => {}
    }
    Some(text)
}

//! The wait family in words: how long the call waited for the kernel, the CPU it used meanwhile, and how soon
//! after the kernel it returned.

use crate::record::CaseSetup;
use crate::result::CaseResult;

/// What the waiting call measured; `call` is its median time in words.
pub(super) fn measured(s: &CaseSetup, r: &CaseResult, call: &str) -> String {
    let cpu = r.metrics.cpu_fraction.unwrap_or(0.0) * 100.0;
    let lat = r.metrics.wake_latency_us.unwrap_or(f64::NAN);
    format!(
        "{} waited {call} for a 100 ms kernel and used {cpu:.0}% of a CPU core meanwhile ({}); it returned about {lat:.0} µs after the kernel ended.",
        s.call,
        r.wait_style.map_or("?".into(), |w| w.to_string())
    )
}

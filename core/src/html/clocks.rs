//! The paragraph that says how a recording's host and GPU clocks were aligned (the method of
//! `crate::clock`), the offset it found and how far that offset can be trusted.

use super::axis::duration;
use super::escape;
use crate::record::Recording;

/// HTML: one `<p>` about the clocks of `rec`.
pub fn paragraph(rec: &Recording) -> String {
    let method = "Host times are the calling thread's <code>CLOCK_MONOTONIC</code>; GPU times are the \
        GPU's <code>%globaltimer</code> and CUDA events measured from a <code>%globaltimer</code> stamp. To put \
        both on one axis, async-lab launched a one-thread kernel that writes <code>%globaltimer</code>, noting \
        the host clock just before the launch and just after synchronizing. The GPU's reading lies between the \
        two host readings, so <code>offset = gpu − (before + after) / 2</code> is off by at most half that round \
        trip; of all tries, the one with the shortest round trip is kept and its half round trip is the stated \
        uncertainty.";
    let fit = rec.clock_fit().filter(|f| f.measures_drift());
    match (&rec.clock, fit) {
        (Some(c), Some(fit)) => format!(
            "<p class=\"clocks\">{method} This run measured the offset {} times (at its start, between families \
             of experiments and at its end): it started at <code>%globaltimer − CLOCK_MONOTONIC = {} ns</code> and \
             drifted by {:+.2} ppm. The timelines below use the straight line through those points, right to \
             within ±{} (the worst half round trip plus the farthest point's distance from the line): every GPU \
             span may sit that much earlier or later relative to the host spans (their lengths are exact to the \
             GPU's clock).</p>",
            fit.points,
            c.gpu_minus_host_ns,
            fit.drift_ppm(),
            escape(&duration(fit.uncertainty_ns as f64))
        ),
        (Some(c), None) => format!(
            "<p class=\"clocks\">{method} In this run, {} tries gave <code>%globaltimer − CLOCK_MONOTONIC = {} ns</code>, \
             right to within ±{}: every GPU span on the timelines below may sit that much earlier or later \
             relative to the host spans (their lengths are exact to the GPU's clock).</p>",
            c.samples,
            c.gpu_minus_host_ns,
            escape(&duration(c.uncertainty_ns as f64))
        ),
        (None, _) => format!(
            "<p class=\"clocks\">{method} <span class=\"missing\"><strong>This recording has no clock offset</strong> \
             (it was made before async-lab measured one). Where a timeline can, it assumes that the blocker started \
             the moment it was launched, which is early by the launch latency (microseconds); such GPU spans are \
             drawn dashed.</span></p>"
        ),
    }
}

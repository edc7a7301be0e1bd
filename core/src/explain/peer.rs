//! The peer family in words: a blocker on the destination GPU, whether the device ordered the copy after it,
//! and the copy's own time and bandwidth on the GPU.

use super::ms;
use crate::record::CaseSetup;
use crate::result::CaseResult;
use crate::setup::{BlockerPlacement, Family, PeerSetup};

/// Whether the case's blocker ran on the destination GPU (a peer copy's blocker on "another" stream).
pub(super) fn on_dst_gpu(s: &CaseSetup) -> bool {
    s.family == Family::Peer && s.layout.blocker == BlockerPlacement::Other
}

/// The blocker on the destination GPU, `us` long.
pub(super) fn blocker_on_dst_gpu(us: f64) -> String {
    format!("the {} blocker on the destination GPU", ms(us))
}

/// A copy that returned after `blocker` on the destination GPU had finished.
pub(super) fn waited_for_dst_gpu(blocker: &str) -> String {
    format!(", after {blocker} had finished, work on another GPU that it does not depend on: it waited for that GPU")
}

/// The pair's access (from its setup), whether the device ordered the copy after the destination GPU's
/// blocker, and the copy's time and bandwidth on the GPU.
pub(super) fn measured(p: &PeerSetup, r: &CaseResult, on_dst_gpu: bool) -> String {
    let mut text = crate::catalogue::peer::access_words(p).to_owned();
    if on_dst_gpu {
        text.push_str(match crate::result::ordered_after_blocker(r) {
            Some(true) => {
                " On the GPU the copy ran only after the destination GPU's blocker had ended (its own GPU time spans the blocker): the device ordered it after that work."
            }
            Some(false) => {
                " On the GPU the copy did not wait for the destination GPU's blocker (its own GPU time is far shorter)."
            }
            None => "",
        });
    }
    if let Some(bw) = r.bandwidth_gb_s {
        text.push_str(&format!(" On the GPU the copy took {} ({bw:.1} GB/s).", r.device_us.map_or("?".into(), ms)));
    }
    text
}

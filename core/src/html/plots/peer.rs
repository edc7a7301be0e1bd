//! The peer copies: call time and bandwidth against size, one line per call, peer access setting and pair of GPUs.

use super::super::axis::log_label;
use super::chart::{size_chart, us_label, Series, YAxis};
use super::Figure;
use crate::report::CaseResult;
use crate::setup::{BlockerPlacement, Family};
use plotters::prelude::*;

/// Colours of the three peer calls; peer access off is drawn dashed with triangles in the same colour.
const PEER_COLORS: [(&str, RGBColor); 3] = [
    ("cuMemcpyPeer", RGBColor(0x7c, 0x3a, 0xed)),
    ("cuMemcpyPeerAsync", RGBColor(0x05, 0x96, 0x69)),
    ("cuMemcpyDtoDAsync", RGBColor(0xdb, 0x27, 0x77)),
];

/// The peer copies with the blocker ahead in their stream, where there are some with a class.
pub fn peer(results: &[CaseResult]) -> Option<Figure> {
    let measured: Vec<&CaseResult> = results
        .iter()
        .filter(|r| {
            r.family == Family::Peer && r.class.is_some() && r.bytes > 0 && r.blocker != BlockerPlacement::Other
        })
        .filter(|r| r.peer.is_some_and(|p| p.src_gpu.is_some() && p.dst_gpu.is_some()))
        .collect();
    if measured.is_empty() {
        return None;
    }
    let mut pairs: Vec<(i32, i32)> =
        measured.iter().filter_map(|r| r.peer.and_then(|p| Some((p.src_gpu?, p.dst_gpu?)))).collect();
    pairs.sort();
    pairs.dedup();
    let loopback = pairs.iter().any(|(a, b)| a == b);
    let mut times = Vec::new();
    let mut bandwidths = Vec::new();
    for (call, color) in PEER_COLORS {
        for access in [true, false] {
            for &(a, b) in &pairs {
                let mut rs: Vec<&CaseResult> = measured
                    .iter()
                    .copied()
                    .filter(|r| r.call == call)
                    .filter(|r| {
                        r.peer.is_some_and(|p| p.access == access && p.src_gpu == Some(a) && p.dst_gpu == Some(b))
                    })
                    .collect();
                if rs.is_empty() {
                    continue;
                }
                rs.sort_by_key(|r| r.bytes);
                let name = format!(
                    "{call}, access {}{}",
                    if access { "on" } else { "off" },
                    if pairs.len() > 1 { format!(", {a}→{b}") } else { String::new() }
                );
                let t = rs.iter().filter_map(|r| Some((r.bytes as f64, r.host_call_us?.median))).collect();
                let bw = rs.iter().filter_map(|r| Some((r.bytes as f64, r.bandwidth_gb_s?))).collect();
                times.push(Series { name: name.clone(), color, alt: !access, points: t });
                bandwidths.push(Series { name, color, alt: !access, points: bw });
            }
        }
    }
    let pair_words: Vec<String> = pairs.iter().map(|(a, b)| format!("GPU {a} → GPU {b}")).collect();
    let caption = format!(
        "Copies from one GPU's memory to another's ({}), on the source GPU's stream behind a blocker, median of the \
         repetitions; solid: peer access on (the copy can cross the link directly), dashed: off (by the Programming \
         Guide, the copy then goes through host memory). Left: how long the call held the host thread; a line that climbs with size is a call \
         that waits for its copy. Right: bytes divided by the copy's own GPU time (CUDA events), in GB/s.{}",
        pair_words.join(", "),
        if loopback {
            " LOOPBACK pairs copy within one GPU: they check the code on a one-GPU machine and measure no link."
        } else {
            ""
        }
    );
    Some(Figure {
        svgs: vec![
            size_chart(
                "Peer copies: call time against size",
                YAxis { desc: "time in the call", label: us_label, legend: SeriesLabelPosition::UpperLeft },
                &times,
                &[],
            ),
            size_chart(
                "Peer copies: bandwidth against size",
                YAxis { desc: "bandwidth (GB/s)", label: log_label, legend: SeriesLabelPosition::LowerRight },
                &bandwidths,
                &[],
            ),
        ],
        caption,
    })
}

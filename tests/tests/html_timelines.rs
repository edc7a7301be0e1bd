//! `async-lab report`: the timelines: the seed's steps on one timeline per memory kind, and what is missing
//! (a failed experiment, no clock offset, no blocker stamps) said rather than drawn.

use async_lab_core::html::render;
use async_lab_tests::synthetic::synthetic;

#[test]
fn the_seed_steps_of_one_memory_kind_share_a_timeline() {
    let html = render(&synthetic());
    for seed in ["timeline-seed-pageable", "timeline-seed-pinned"] {
        let at = html.find(&format!("<svg class=\"tl\" id=\"{seed}\"")).unwrap_or_else(|| panic!("no {seed}"));
        let svg = &html[at..at + html[at..].find("</svg>").unwrap()];
        assert_eq!(svg.matches("<g id=\"timeline-seed-").count(), 4, "the seed's four steps on one timeline");
    }
}

#[test]
fn missing_data_is_said_not_drawn() {
    let html = render(&synthetic());
    // The failed experiment: a box with its timeline's id that says why.
    assert!(html.contains(
        "<div class=\"timeline-missing\" id=\"timeline-copy-async-htod-wc-nonblocking-same-4KiB\">Nothing to draw: \
         the experiment failed"
    ));
    // No clock offset: an estimate, drawn dashed and said so; no blocker stamps: said so.
    assert!(html.contains("This recording has no host/GPU clock offset"));
    assert!(html.contains("span blocker approx"));
    assert!(html.contains("The blocker&#39;s GPU times were not recorded"));
    assert!(html.contains("Partial recording"));
}

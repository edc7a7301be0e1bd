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

/// The `<svg>` of the timeline with `id`.
fn timeline<'a>(html: &'a str, id: &str) -> &'a str {
    let at = html.find(&format!("<svg class=\"tl\" id=\"{id}\"")).unwrap_or_else(|| panic!("no {id}"));
    &html[at..at + html[at..].find("</svg>").unwrap()]
}

/// The x and width of the first `<rect>` of `class` in `svg`.
fn rect(svg: &str, class: &str) -> (f64, f64) {
    let at = svg.find(&format!("<rect class=\"{class}\"")).unwrap_or_else(|| panic!("no {class} in {svg}"));
    let attr = |name: &str| -> f64 {
        let from = at + svg[at..].find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        svg[from..from + svg[from..].find('"').unwrap()].parse().unwrap()
    };
    (attr("x"), attr("width"))
}

#[test]
fn the_other_thread_has_a_host_lane_where_its_times_say() {
    let html = render(&synthetic());
    // The launch waited for the other thread's cuMemAllocHost: that call started before it and ended after it
    // started, just before it returned.
    let svg = timeline(&html, "timeline-threads-in-alloc-host-launch-nonblocking-same");
    assert!(svg.contains(">other thread</text>"), "{svg}");
    assert!(svg.contains(">the measuring thread</text>"), "{svg}");
    assert_eq!(svg.matches("class=\"span other\"").count(), 1, "{svg}");
    let (host_x, host_w) = rect(svg, "span host");
    let (other_x, other_w) = rect(svg, "span other");
    assert!(other_x < host_x, "the other call starts first: {other_x} vs {host_x}");
    assert!(other_x + other_w > host_x, "and is still running when the call starts");
    assert!((other_x + other_w - (host_x + host_w)).abs() < 1.0, "the launch returned just after it ended");
    assert!(svg.contains("the other thread was inside its slow call for 145.0 ms"), "{svg}");
    assert!(
        svg.contains("the experiment: ") && svg.contains("cuMemAllocHost"),
        "the tooltip quotes what the case does"
    );
    // The host function: the quick call returned long before it ended.
    let svg = timeline(&html, "timeline-threads-in-host-func-event-record-nonblocking-same");
    assert!(svg.contains(">other thread&#39;s call 30.0 ms</text>"), "{svg}");
    let (host_x, host_w) = rect(svg, "span host");
    let (other_x, other_w) = rect(svg, "span other");
    assert!(other_x < host_x && host_x + host_w < other_x + other_w, "the call lies inside the host function");
    assert!(html.contains("The other thread&#39;s call is on the lane under the host thread&#39;s"));
    assert!(html.contains("<span class=\"swatch other\"></span>other thread"), "the legend has it");
}

#[test]
fn without_the_other_thread_nothing_changes() {
    let sources = synthetic();
    let html = render(&sources);
    let svg = timeline(&html, "timeline-copy-async-htod-pageable-nonblocking-same-1MiB");
    assert!(!svg.contains("span other") && !svg.contains("other thread") && !svg.contains("measuring thread"));
    // A page with no threads record has no legend row for it.
    let html = render(&sources[1..]);
    assert!(!html.contains("other thread"), "a page without the threads family mentions no other thread");
}

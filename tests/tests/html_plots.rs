//! `async-lab report`: the plots (size sweep, launch queue, scheduling flags, peer copies), drawn where the
//! recording has their data and only there.

use async_lab_core::html::render;
use async_lab_tests::page::check_page;
use async_lab_tests::synthetic::synthetic;

#[test]
fn every_plot_is_drawn_from_its_data() {
    let html = render(&synthetic());
    let ids = check_page(&html);
    for plot in ["plot-sweep", "plot-queue", "plot-wait", "plot-peer"] {
        assert!(ids.iter().any(|id| id == plot), "no {plot}");
        let at = html.find(&format!("id=\"{plot}\"")).unwrap();
        let figure = &html[at..at + html[at..].find("</figure>").unwrap()];
        assert!(figure.matches("<svg").count() >= 1 && figure.contains("<polyline"), "{plot} has no drawing");
        assert!(!figure.contains("could not be drawn"), "{plot}: {figure}");
    }
    // The crossover of the made-up sweep.
    assert!(html.contains("H→D crossover 256KiB") && html.contains("D→H crossover 4KiB"));
}

#[test]
fn plots_appear_only_with_their_data() {
    let mut sources = synthetic();
    sources.truncate(1);
    sources[0].recording.cases.retain(|c| c.setup.id.starts_with("copy/"));
    let html = render(&sources);
    check_page(&html);
    for plot in ["plot-sweep", "plot-queue", "plot-wait", "plot-peer"] {
        assert!(!html.contains(&format!("id=\"{plot}\"")), "{plot} without its data");
    }
}

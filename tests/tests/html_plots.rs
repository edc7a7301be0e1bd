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

/// The graph family's launch into a full queue gets its own chart in the queue figure, beside the kernel
/// launches' where both are there (from the committed H200 recording of `--preset next`, which has the graph
/// case and not the launch family's).
#[test]
fn graph_launches_into_a_full_queue_are_drawn_too() {
    use async_lab_core::html::Source;
    use async_lab_core::record::Recording;
    let path = async_lab_tests::project_root()
        .join("recordings/async-lab-next-both-apis-h200-driver580.159.04-2026-12-03-daa644a.json");
    let recording = Recording::load(&path).unwrap();
    let html = render(&[Source { label: "next".into(), recording }]);
    check_page(&html);
    let at = html.find("id=\"plot-queue\"").expect("a queue figure for the graph launches");
    let figure = &html[at..at + html[at..].find("</figure>").unwrap()];
    assert_eq!(figure.matches("<svg").count(), 1, "the graph launches' chart only");
    assert!(figure.contains("cuGraphLaunch into the queue"), "{figure}");
    assert!(figure.contains("graph/launch-full-queue/nonblocking/same") && figure.contains("found the queue full"));
    // Beside the synthetic recording's kernel launches, in one recording: two charts.
    let mut sources = synthetic();
    let graph = Recording::load(&path).unwrap().cases.into_iter().find(|c| c.setup.id.starts_with("graph/launch-full"));
    sources[0].recording.cases.push(graph.unwrap());
    let html = render(&sources);
    let at = html.find("id=\"plot-queue\"").unwrap();
    let figure = &html[at..at + html[at..].find("</figure>").unwrap()];
    assert!(figure.contains("cuLaunchKernel into the queue") && figure.contains("cuGraphLaunch into the queue"));
}

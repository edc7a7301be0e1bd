//! CUDA graphs (rules GR1–GR3): instantiating a one-node graph (plain, and with the upload flag), uploading
//! it, launching it the first time, once it is warm, with a host-function node, and into a full launch
//! queue, next to a blocker in the call's stream or on another stream. Every call has a runtime twin
//! (`cudaGraphInstantiateWithFlags`, ...).

use super::{api_words, Case, Experiment, Facts, Layout, Placement};
use crate::api::Api;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, StreamKind};
use serde::{Deserialize, Serialize};

/// The graph call a case measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GraphCall {
    /// `cuGraphInstantiateWithFlags(.., 0)`: no stream.
    Instantiate,
    /// `cuGraphInstantiateWithParams` with `CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD`: uploads into the call's stream.
    InstantiateUpload,
    /// `cuGraphUpload` of a graph instantiated (not uploaded, never launched) just before.
    Upload,
    /// `cuGraphLaunch` of a graph instantiated just before and never uploaded: the upload happens in the launch.
    LaunchFirst,
    /// `cuGraphLaunch` of a graph launched before (uploaded, warm).
    LaunchSteady,
    /// `cuGraphLaunch` of a warm graph whose one node is a host function.
    LaunchHostNode,
    /// `cuGraphLaunch` of a warm graph, again and again behind a long blocker until a launch waits: the launch
    /// into a full queue.
    LaunchFullQueue,
}

impl GraphCall {
    fn slug(self) -> &'static str {
        match self {
            GraphCall::Instantiate => "instantiate",
            GraphCall::InstantiateUpload => "instantiate-upload",
            GraphCall::Upload => "upload",
            GraphCall::LaunchFirst => "launch-first",
            GraphCall::LaunchSteady => "launch-steady",
            GraphCall::LaunchHostNode => "launch-host-node",
            GraphCall::LaunchFullQueue => "launch-full-queue",
        }
    }

    /// The function the call goes through, in `api`.
    pub fn name(self, api: Api) -> &'static str {
        use GraphCall::*;
        match (self, api) {
            (Instantiate, Api::Driver) => "cuGraphInstantiateWithFlags",
            (Instantiate, Api::Runtime) => "cudaGraphInstantiateWithFlags",
            (InstantiateUpload, Api::Driver) => "cuGraphInstantiateWithParams",
            (InstantiateUpload, Api::Runtime) => "cudaGraphInstantiateWithParams",
            (Upload, Api::Driver) => "cuGraphUpload",
            (Upload, Api::Runtime) => "cudaGraphUpload",
            (LaunchFirst | LaunchSteady | LaunchHostNode | LaunchFullQueue, Api::Driver) => "cuGraphLaunch",
            (LaunchFirst | LaunchSteady | LaunchHostNode | LaunchFullQueue, Api::Runtime) => "cudaGraphLaunch",
        }
    }

    /// Whether the call takes a stream (everything but the plain instantiation).
    pub fn has_stream(self) -> bool {
        self != GraphCall::Instantiate
    }

    /// Whether the call launches the graph (so its node runs).
    pub fn launches(self) -> bool {
        matches!(
            self,
            GraphCall::LaunchFirst | GraphCall::LaunchSteady | GraphCall::LaunchHostNode | GraphCall::LaunchFullQueue
        )
    }

    fn words(self) -> &'static str {
        match self {
            GraphCall::Instantiate => "instantiating a one-kernel graph (flags 0)",
            GraphCall::InstantiateUpload => {
                "instantiating a one-kernel graph with the upload flag, uploading into the stream"
            }
            GraphCall::Upload => "uploading a one-kernel graph instantiated just before",
            GraphCall::LaunchFirst => "the first launch of a one-kernel graph instantiated just before, never uploaded",
            GraphCall::LaunchSteady => "launching a one-kernel graph that was launched before",
            GraphCall::LaunchHostNode => "launching a graph whose one node is a host function, launched before",
            GraphCall::LaunchFullQueue => {
                "launching a warm one-kernel graph again and again behind a 300 ms blocker until a launch has to \
                 wait; the call measured is that launch"
            }
        }
    }
}

/// One graph experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphFacts {
    pub call: GraphCall,
    /// For calls with a stream: the blocker in the call's stream (ahead) or on another one. Without a stream
    /// the blocker is on `blocker_stream`, never ahead.
    pub blocker: BlockerPlacement,
    pub blocker_stream: StreamKind,
}

impl GraphFacts {
    pub fn placement(&self) -> Placement {
        Placement { has_stream: self.call.has_stream(), blocker: self.blocker, blocker_stream: self.blocker_stream }
    }
}

impl Experiment for GraphFacts {
    fn family(&self) -> Family {
        Family::Graph
    }

    fn id(&self) -> String {
        format!("graph/{}/{}", self.call.slug(), self.placement().id_part())
    }

    fn call(&self, api: Api) -> &'static str {
        self.call.name(api)
    }

    fn runtime_twin(&self) -> bool {
        true
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        // NVIDIA documents no host behaviour for any graph call (see rules GR1–GR3): every case is
        // `undocumented`. What a reader might assume (a launch behaves like a kernel launch) is for the docs page.
        let rule = match self.call {
            GraphCall::Instantiate => "GR1",
            GraphCall::InstantiateUpload | GraphCall::Upload => "GR2",
            GraphCall::LaunchFirst
            | GraphCall::LaunchSteady
            | GraphCall::LaunchHostNode
            | GraphCall::LaunchFullQueue => "GR3",
        };
        (rule, Expected::undocumented())
    }

    fn what(&self, api: Api) -> String {
        format!(
            "{} ({}), with a blocker {}{}",
            self.call.words(),
            self.call(api),
            self.placement().words(),
            api_words(api)
        )
    }

    fn layout(&self) -> Layout {
        self.placement().layout()
    }
}

impl From<GraphFacts> for Facts {
    fn from(f: GraphFacts) -> Facts {
        Facts::Graph(f)
    }
}

/// The plain instantiation next to a blocker on the legacy and on a non-blocking stream, every call with a
/// stream both ways, and the launch into a full queue.
pub fn cases() -> Vec<Case> {
    let graph = |call, blocker, blocker_stream| Case::driver(GraphFacts { call, blocker, blocker_stream });
    let mut v = Vec::new();
    for blocker_stream in [StreamKind::Legacy, StreamKind::NonBlocking] {
        v.push(graph(GraphCall::Instantiate, BlockerPlacement::Other, blocker_stream));
    }
    for call in [
        GraphCall::InstantiateUpload,
        GraphCall::Upload,
        GraphCall::LaunchFirst,
        GraphCall::LaunchSteady,
        GraphCall::LaunchHostNode,
    ] {
        for blocker in [BlockerPlacement::Same, BlockerPlacement::Other] {
            v.push(graph(call, blocker, StreamKind::NonBlocking));
        }
    }
    // The queue fills only behind a blocker in the launches' own stream.
    v.push(graph(GraphCall::LaunchFullQueue, BlockerPlacement::Same, StreamKind::NonBlocking));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(c: &Case) -> GraphFacts {
        let Facts::Graph(f) = c.facts else { panic!("{} is not a graph case", c.id()) };
        f
    }

    #[test]
    fn every_call_is_measured_and_stream_calls_both_ways() {
        let cases = cases();
        for call in [GraphCall::InstantiateUpload, GraphCall::Upload, GraphCall::LaunchFirst, GraphCall::LaunchSteady] {
            let of: Vec<&Case> = cases.iter().filter(|c| facts(c).call == call).collect();
            assert_eq!(of.len(), 2, "{call:?}");
            assert!(
                of.iter().any(|c| c.facts.layout().blocker_ahead) && of.iter().any(|c| !c.facts.layout().blocker_ahead)
            );
        }
        let plain: Vec<&Case> = cases.iter().filter(|c| c.call() == "cuGraphInstantiateWithFlags").collect();
        assert_eq!(plain.len(), 2);
        assert!(plain.iter().all(|c| c.facts.layout().stream.is_none() && !c.facts.layout().blocker_ahead));
        assert!(cases.iter().all(|c| c.facts.family() == Family::Graph && c.id().starts_with("graph/")));
    }

    #[test]
    fn the_full_queue_launch_is_one_undocumented_case_behind_a_blocker_in_its_stream() {
        let full: Vec<Case> = cases().into_iter().filter(|c| facts(c).call == GraphCall::LaunchFullQueue).collect();
        assert_eq!(full.len(), 1);
        let c = &full[0];
        assert_eq!(c.id(), "graph/launch-full-queue/nonblocking/same");
        assert_eq!((c.call(), c.rule()), ("cuGraphLaunch", ("GR3", Expected::undocumented())));
        let l = c.facts.layout();
        assert!(l.blocker_ahead && l.stream == Some(StreamKind::NonBlocking));
        let twin = c.runtime_twin().expect("a runtime twin");
        assert_eq!(twin.id(), "runtime/graph/launch-full-queue/nonblocking/same");
        assert_eq!(twin.call(), "cudaGraphLaunch");
    }

    #[test]
    fn every_graph_case_has_a_runtime_twin_naming_the_runtime_call() {
        for c in cases() {
            let twin = c.runtime_twin().unwrap_or_else(|| panic!("{} has no twin", c.id()));
            assert_eq!(twin.call(), c.call().replacen("cu", "cuda", 1), "{}", c.id());
            assert_eq!(twin.api, Api::Runtime);
            assert_eq!(
                twin.facts.what(Api::Runtime),
                format!("{}, through the runtime API", c.facts.what(Api::Driver).replacen(c.call(), twin.call(), 1))
            );
        }
    }
}

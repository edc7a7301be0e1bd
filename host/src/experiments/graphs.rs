//! CUDA graphs (rules GR1–GR3): instantiating a graph (plain, and with the upload flag), uploading it, and
//! launching it the first time and once it is warm, next to a blocker in the call's stream or on another
//! stream; a graph whose one node is a host function; and a warm graph launched into a full launch queue
//! (launched again and again behind a long blocker until a launch waits for room, as the launch family's
//! queue-depth case does with kernels: `queue.rs`). Each graph has one node, so that what is timed is the graph
//! machinery, not the work in it.
//!
//! The kernel node writes the GPU's timer to a buffer that `prepare` zeroes: a launch that did not run its node
//! is an error, not a class. The host node bumps a counter that `verify` checks the same way.
//!
//! The runtime twins (`runtime/graph/...`) build the same graph through the driver and make the call under
//! test through the runtime (`cudaGraphInstantiateWithFlags`, `cudaGraphInstantiateWithParams`,
//! `cudaGraphUpload`, `cudaGraphLaunch`): a `cudaGraph_t` is a `CUgraph`, and both APIs share the context. The
//! graphs a runtime case instantiates or launches in `prepare` are made through the runtime too.

use super::method::{measure, BlockerPlan, Probe};
use super::{case_record, queue, Case, Op, Placement};
use anyhow::ensure;
use async_lab_core::api::Api;
use async_lab_core::record::{CaseRecord, CaseSetup};
use async_lab_core::rules::Expected;
use async_lab_core::setup::CallTiming;
use async_lab_core::setup::{BlockerPlacement, Family};
use async_lab_driver::graph::{Graph, GraphExec, InstantiateWithParams, Node};
use async_lab_driver::runtime::graph as rtgraph;
use async_lab_driver::{DeviceBuffer, DriverResult, Gpu, Stream, StreamHandle, StreamKind};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

    fn name(self) -> &'static str {
        match self {
            GraphCall::Instantiate => "cuGraphInstantiateWithFlags",
            GraphCall::InstantiateUpload => "cuGraphInstantiateWithParams",
            GraphCall::Upload => "cuGraphUpload",
            GraphCall::LaunchFirst
            | GraphCall::LaunchSteady
            | GraphCall::LaunchHostNode
            | GraphCall::LaunchFullQueue => "cuGraphLaunch",
        }
    }

    /// Whether the call takes a stream (everything but the plain instantiation).
    fn has_stream(self) -> bool {
        self != GraphCall::Instantiate
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

#[derive(Clone, Copy, Debug)]
pub struct GraphOp {
    pub call: GraphCall,
    /// For calls with a stream: the blocker in the call's stream (ahead) or on another one. Without a stream
    /// the blocker is on `blocker_stream`, never ahead.
    pub blocker: BlockerPlacement,
    pub blocker_stream: StreamKind,
}

impl GraphOp {
    fn case(self) -> Case {
        let c = self.call;
        // NVIDIA documents no host behaviour for any graph call (see rules GR1–GR3): every case is
        // `undocumented`. What a reader might assume (a launch behaves like a kernel launch) is for the docs page.
        let rule = match c {
            GraphCall::Instantiate => "GR1",
            GraphCall::InstantiateUpload | GraphCall::Upload => "GR2",
            GraphCall::LaunchFirst
            | GraphCall::LaunchSteady
            | GraphCall::LaunchHostNode
            | GraphCall::LaunchFullQueue => "GR3",
        };
        let expected = Expected::undocumented();
        let p = Placement::of(c.has_stream(), self.blocker, self.blocker_stream);
        Case {
            setup: CaseSetup {
                id: format!("graph/{}/{}", c.slug(), p.id_part),
                family: Family::Graph,
                call: c.name().into(),
                rule: rule.into(),
                expected,
                stream: p.stream,
                blocker: self.blocker,
                blocker_stream: Some(self.blocker_stream),
                blocker_ahead: p.ahead,
                host_memory: None,
                direction: None,
                bytes: 0,
                what: format!("{} ({}), with a blocker {}", c.words(), c.name(), p.words),
                api: async_lab_core::api::Api::Driver,
                peer: None,
                timing: CallTiming::Stopwatch,
                case: None,
            },
            op: Op::Graph(self),
        }
    }
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for blocker_stream in [StreamKind::Legacy, StreamKind::NonBlocking] {
        v.push(GraphOp { call: GraphCall::Instantiate, blocker: BlockerPlacement::Other, blocker_stream }.case());
    }
    for call in [
        GraphCall::InstantiateUpload,
        GraphCall::Upload,
        GraphCall::LaunchFirst,
        GraphCall::LaunchSteady,
        GraphCall::LaunchHostNode,
    ] {
        for blocker in [BlockerPlacement::Same, BlockerPlacement::Other] {
            v.push(GraphOp { call, blocker, blocker_stream: StreamKind::NonBlocking }.case());
        }
    }
    // The queue fills only behind a blocker in the launches' own stream.
    v.push(
        GraphOp {
            call: GraphCall::LaunchFullQueue,
            blocker: BlockerPlacement::Same,
            blocker_stream: StreamKind::NonBlocking,
        }
        .case(),
    );
    v
}

/// The host node's function: counts its runs.
///
/// # Safety
/// `user` points to an `AtomicU64` that outlives every launch of the graph.
unsafe extern "C" fn count_run(user: *mut c_void) {
    // SAFETY: the caller's promise above; an atomic may be bumped from the driver's callback thread.
    unsafe { (*user.cast::<AtomicU64>()).fetch_add(1, Ordering::SeqCst) };
}

struct GraphProbe<'a, 'g> {
    op: GraphOp,
    api: Api,
    stream: &'a Stream<'g>,
    graph: Graph<'g>,
    exec: Option<GraphExec<'g>>,
    /// Where the kernel node writes the GPU's timer (zeroed by `prepare`).
    out: &'a DeviceBuffer<'g>,
    /// The host node's run count, and its value before the call.
    runs: &'a AtomicU64,
    runs_before: u64,
    with_params: Option<InstantiateWithParams>,
    /// The runtime's `cudaGraphInstantiateWithParams`, for its upload case.
    rt_with_params: Option<rtgraph::InstantiateWithParams>,
}

impl<'g> GraphProbe<'_, 'g> {
    fn launches(&self) -> bool {
        matches!(
            self.op.call,
            GraphCall::LaunchFirst | GraphCall::LaunchSteady | GraphCall::LaunchHostNode | GraphCall::LaunchFullQueue
        )
    }

    /// An executable graph of `self.graph`, instantiated through the API under test (flags 0).
    fn instantiate(&self) -> DriverResult<GraphExec<'g>> {
        match self.api {
            Api::Driver => self.graph.instantiate(),
            Api::Runtime => rtgraph::instantiate(&self.graph),
        }
    }

    /// A launch of `exec` through the API under test.
    fn launch(&self, exec: &GraphExec<'_>, s: StreamHandle<'_>) -> DriverResult<()> {
        match self.api {
            Api::Driver => exec.launch(s),
            Api::Runtime => rtgraph::launch(exec, s),
        }
    }
}

impl Probe for GraphProbe<'_, '_> {
    fn prepare(&mut self, gpu: &Gpu) -> anyhow::Result<()> {
        match self.op.call {
            // The call makes the executable graph; the last one goes (its drop waits for the device).
            GraphCall::Instantiate | GraphCall::InstantiateUpload => self.exec = None,
            // A fresh executable graph, never uploaded nor launched.
            GraphCall::Upload | GraphCall::LaunchFirst => {
                self.exec = None;
                self.exec = Some(self.instantiate()?);
            }
            // A warm graph: instantiated once, launched here before every repetition.
            GraphCall::LaunchSteady | GraphCall::LaunchHostNode => {
                if self.exec.is_none() {
                    self.exec = Some(self.instantiate()?);
                }
                self.launch(self.exec.as_ref().expect("just made"), self.stream.handle())?;
                self.stream.synchronize()?;
            }
            GraphCall::LaunchFullQueue => anyhow::bail!("the full-queue launch is measured by `queue.rs`"),
        }
        gpu.bind()?;
        // Nothing on the GPU uses `out` between repetitions.
        self.out.set_bytes(0)?;
        self.runs_before = self.runs.load(Ordering::SeqCst);
        Ok(())
    }

    fn call(&mut self, _gpu: &Gpu) -> DriverResult<()> {
        let s = self.stream.handle();
        match (self.op.call, self.api) {
            (GraphCall::Instantiate, _) => self.exec = Some(self.instantiate()?),
            (GraphCall::InstantiateUpload, Api::Driver) => {
                let f = self.with_params.expect("checked in run");
                self.exec = Some(self.graph.instantiate_uploading(f, s)?);
            }
            (GraphCall::InstantiateUpload, Api::Runtime) => {
                let f = self.rt_with_params.expect("checked in run");
                self.exec = Some(rtgraph::instantiate_uploading(&self.graph, f, s)?);
            }
            (GraphCall::Upload, Api::Driver) => self.exec.as_ref().expect("made in prepare").upload(s)?,
            (GraphCall::Upload, Api::Runtime) => rtgraph::upload(self.exec.as_ref().expect("made in prepare"), s)?,
            (GraphCall::LaunchFirst | GraphCall::LaunchSteady | GraphCall::LaunchHostNode, _) => {
                self.launch(self.exec.as_ref().expect("made in prepare"), s)?
            }
            // Never measured through this probe (`run` hands it to `queue.rs`).
            (GraphCall::LaunchFullQueue, _) => {
                return Err(async_lab_driver::DriverError {
                    code: async_lab_driver::sys::CUDA_ERROR_INVALID_VALUE,
                    call: "cuGraphLaunch (the full-queue case is measured by queue.rs)",
                    api: self.api,
                })
            }
        }
        Ok(())
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        self.op.call.has_stream().then(|| self.stream.handle())
    }

    fn verify(&mut self, gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
        ensure!(self.exec.is_some(), "{} left no executable graph", self.op.call.name());
        let runs = self.runs.load(Ordering::SeqCst) - self.runs_before;
        gpu.bind()?;
        // The device is synchronized before `verify`.
        let stamp = self.out.read_u64s(1)?[0];
        let ran = match self.op.call {
            GraphCall::LaunchHostNode => runs,
            _ => u64::from(stamp != 0),
        };
        let want = u64::from(self.launches());
        ensure!(
            ran == want,
            "{}: the graph's node ran {ran} time(s) where {want} run(s) were expected",
            self.op.call.name()
        );
        Ok(None)
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: GraphOp, reps: usize) -> anyhow::Result<CaseRecord> {
    let api = case.setup.api;
    let with_params = async_lab_driver::resolve!(cuGraphInstantiateWithParams: InstantiateWithParams);
    let rt_with_params = match api {
        Api::Runtime => rtgraph::resolve_instantiate_with_params(),
        Api::Driver => Err("not looked up for a driver case"),
    };
    if op.call == GraphCall::InstantiateUpload {
        let missing = match api {
            Api::Driver => with_params.err(),
            Api::Runtime => rt_with_params.err(),
        };
        if let Some(why) = missing {
            return Ok(super::not_run(case, why));
        }
    }
    if op.call == GraphCall::LaunchFullQueue {
        return full_queue(gpu, case, api, reps);
    }
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let other = Stream::new(gpu, op.blocker_stream)?;
    let out = DeviceBuffer::new(gpu, 8)?;
    // Boxed: the host node keeps its address for the graph's whole life.
    let runs = Box::new(AtomicU64::new(0));
    let node = match op.call {
        // SAFETY of the node's contract: `count_run` calls no CUDA; `runs` outlives the graph (declared before
        // the probe, dropped after it, and every launch is waited for in `prepare` or by the protocol's settle).
        GraphCall::LaunchHostNode => Node::Host(count_run, (&*runs as *const AtomicU64).cast_mut().cast()),
        _ => Node::WriteTimer(out.ptr),
    };
    let graph = Graph::one_node(gpu, node)?;
    let plan = BlockerPlan {
        stream: if op.call.has_stream() && op.blocker == BlockerPlacement::Same {
            stream.handle()
        } else {
            other.handle()
        },
        ahead: case.setup.blocker_ahead,
    };
    let mut probe = GraphProbe {
        op,
        api,
        stream: &stream,
        graph,
        exec: None,
        out: &out,
        runs: &runs,
        runs_before: 0,
        with_params: with_params.ok(),
        rt_with_params: rt_with_params.ok(),
    };
    let (warmup, blocker_ns, reps) = measure(gpu, &mut probe, plan, reps)?;
    drop(probe);
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}

/// A warm one-kernel graph launched into a full launch queue (`queue::fill_until_a_launch_waits`), through
/// the API under test; afterwards, its node must have run.
fn full_queue(gpu: &Gpu, case: &Case, api: Api, reps: usize) -> anyhow::Result<CaseRecord> {
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let out = DeviceBuffer::new(gpu, 8)?;
    out.set_bytes(0)?;
    // Declared after `out` and `stream`: the executable graph and the graph go first (the exec's drop waits
    // for the device), while what the node writes to is still allocated.
    let graph = Graph::one_node(gpu, Node::WriteTimer(out.ptr))?;
    let exec = match api {
        Api::Driver => graph.instantiate()?,
        Api::Runtime => rtgraph::instantiate(&graph)?,
    };
    let launch = || match api {
        Api::Driver => exec.launch(stream.handle()),
        Api::Runtime => rtgraph::launch(&exec, stream.handle()),
    };
    let record = queue::fill_until_a_launch_waits(gpu, case, &stream, reps, launch)?;
    gpu.synchronize()?;
    gpu.bind()?;
    let stamp = out.read_u64s(1)?[0];
    ensure!(stamp != 0, "{}: the graph's node never ran in the full-queue launches", case.setup.call);
    drop(exec);
    drop(graph);
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_is_measured_and_stream_calls_both_ways() {
        let cases = cases();
        for call in [GraphCall::InstantiateUpload, GraphCall::Upload, GraphCall::LaunchFirst, GraphCall::LaunchSteady] {
            let of: Vec<&Case> = cases.iter().filter(|c| matches!(c.op, Op::Graph(o) if o.call == call)).collect();
            assert_eq!(of.len(), 2, "{call:?}");
            assert!(of.iter().any(|c| c.setup.blocker_ahead) && of.iter().any(|c| !c.setup.blocker_ahead));
        }
        let plain: Vec<&Case> = cases.iter().filter(|c| c.setup.call == "cuGraphInstantiateWithFlags").collect();
        assert_eq!(plain.len(), 2);
        assert!(plain.iter().all(|c| c.setup.stream.is_none() && !c.setup.blocker_ahead));
        assert!(cases.iter().all(|c| c.setup.family == Family::Graph && c.setup.id.starts_with("graph/")));
    }

    #[test]
    fn the_full_queue_launch_is_one_undocumented_case_behind_a_blocker_in_its_stream() {
        let full: Vec<Case> = cases()
            .into_iter()
            .filter(|c| matches!(c.op, Op::Graph(o) if o.call == GraphCall::LaunchFullQueue))
            .collect();
        assert_eq!(full.len(), 1);
        let s = &full[0].setup;
        assert_eq!(s.id, "graph/launch-full-queue/nonblocking/same");
        assert_eq!((s.call.as_str(), s.rule.as_str()), ("cuGraphLaunch", "GR3"));
        assert_eq!(s.expected, Expected::undocumented());
        assert!(s.blocker_ahead && s.stream == Some(StreamKind::NonBlocking));
        let twin = super::super::runtime_twin(&full[0]).expect("a runtime twin");
        assert_eq!(twin.setup.id, "runtime/graph/launch-full-queue/nonblocking/same");
        assert_eq!(twin.setup.call, "cudaGraphLaunch");
    }

    #[test]
    fn every_graph_case_has_a_runtime_twin_naming_the_runtime_call() {
        for c in cases() {
            let twin = super::super::runtime_twin(&c).unwrap_or_else(|| panic!("{} has no twin", c.setup.id));
            let want = c.setup.call.replacen("cu", "cuda", 1);
            assert_eq!(twin.setup.call, want, "{}", c.setup.id);
            assert_eq!(twin.setup.api, Api::Runtime);
        }
    }
}

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
use super::{case_record, queue, Case};
use anyhow::ensure;
use async_lab_core::api::Api;
use async_lab_core::catalogue::graphs::{GraphCall, GraphFacts};
use async_lab_core::record::CaseRecord;
use async_lab_core::setup::BlockerPlacement;
use async_lab_driver::graph::{Graph, GraphExec, InstantiateWithParams, Node};
use async_lab_driver::runtime::graph as rtgraph;
use async_lab_driver::{CudaResult, DeviceBuffer, Gpu, Stream, StreamHandle, StreamKind};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

/// The host node's function: counts its runs.
///
/// # Safety
/// `user` points to an `AtomicU64` that outlives every launch of the graph.
unsafe extern "C" fn count_run(user: *mut c_void) {
    // SAFETY: the caller's promise above; an atomic may be bumped from the driver's callback thread.
    unsafe { (*user.cast::<AtomicU64>()).fetch_add(1, Ordering::SeqCst) };
}

struct GraphProbe<'a, 'g> {
    op: GraphFacts,
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
    rt_with_params: Option<rtgraph::RtInstantiateWithParams>,
}

impl<'g> GraphProbe<'_, 'g> {
    /// An executable graph of `self.graph`, instantiated through the API under test (flags 0).
    fn instantiate(&self) -> CudaResult<GraphExec<'g>> {
        match self.api {
            Api::Driver => self.graph.instantiate(),
            Api::Runtime => rtgraph::instantiate(&self.graph),
        }
    }

    /// A launch of `exec` through the API under test.
    fn launch(&self, exec: &GraphExec<'_>, s: StreamHandle<'_>) -> CudaResult<()> {
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

    fn call(&mut self, _gpu: &Gpu) -> CudaResult<()> {
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
                return Err(async_lab_driver::CudaError {
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
        ensure!(self.exec.is_some(), "{} left no executable graph", self.op.call.name(self.api));
        let runs = self.runs.load(Ordering::SeqCst) - self.runs_before;
        gpu.bind()?;
        // The device is synchronized before `verify`.
        let stamp = self.out.read_u64s(1)?[0];
        let ran = match self.op.call {
            GraphCall::LaunchHostNode => runs,
            _ => u64::from(stamp != 0),
        };
        let want = u64::from(self.op.call.launches());
        ensure!(
            ran == want,
            "{}: the graph's node ran {ran} time(s) where {want} run(s) were expected",
            self.op.call.name(self.api)
        );
        Ok(None)
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: GraphFacts, reps: usize) -> anyhow::Result<CaseRecord> {
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
        ahead: case.setup.layout.blocker_ahead,
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

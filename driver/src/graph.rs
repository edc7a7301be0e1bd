//! CUDA graphs: a graph built node by node, its executable form, and the calls the graph experiments time
//! (`cuGraphInstantiateWithFlags`, `cuGraphInstantiateWithParams` with the upload flag, `cuGraphUpload`,
//! `cuGraphLaunch`). Each owner destroys its object on drop, after waiting for the device.
#![allow(non_snake_case)]

use super::error::{check, CudaResult};
use super::gpu::Gpu;
use super::stream_handle::StreamHandle;
use super::sys::{CUstream, CuResult};
use cust::sys::{CUgraph, CUgraphExec, CUgraphNode, CUDA_HOST_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS};
use std::ffi::c_void;
use std::ptr::null_mut;

/// `CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD` (CUDA 12.0): upload the graph into `hUploadStream` while instantiating.
pub const CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD: u64 = 2;

/// `CUDA_GRAPH_INSTANTIATE_PARAMS` (CUDA 12.0; not in cust_raw's headers). `result_out` is the C enum
/// `CUgraphInstantiateResult`, int-sized.
#[repr(C)]
pub struct GraphInstantiateParams {
    pub flags: u64,
    pub upload_stream: CUstream,
    pub err_node_out: CUgraphNode,
    pub result_out: u32,
}

impl GraphInstantiateParams {
    /// Instantiate and upload into `stream` (`CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD`), the outputs cleared.
    pub fn uploading_into(stream: StreamHandle<'_>) -> GraphInstantiateParams {
        GraphInstantiateParams {
            flags: CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
            upload_stream: stream.raw(),
            err_node_out: null_mut(),
            result_out: 0,
        }
    }
}

/// `cuGraphInstantiateWithParams`, looked up at run time (see `resolve`).
pub type InstantiateWithParams =
    unsafe extern "C" fn(exec: *mut CUgraphExec, graph: CUgraph, params: *mut GraphInstantiateParams) -> CuResult;

// In every driver since CUDA 11.4 (cust_raw's headers declare them, so the link-time stub has them too).
#[link(name = "cuda")]
extern "C" {
    fn cuGraphCreate(graph: *mut CUgraph, flags: u32) -> CuResult;
    fn cuGraphDestroy(graph: CUgraph) -> CuResult;
    fn cuGraphAddKernelNode(
        node: *mut CUgraphNode,
        graph: CUgraph,
        deps: *const CUgraphNode,
        num_deps: usize,
        params: *const CUDA_KERNEL_NODE_PARAMS,
    ) -> CuResult;
    fn cuGraphAddHostNode(
        node: *mut CUgraphNode,
        graph: CUgraph,
        deps: *const CUgraphNode,
        num_deps: usize,
        params: *const CUDA_HOST_NODE_PARAMS,
    ) -> CuResult;
    fn cuGraphInstantiateWithFlags(exec: *mut CUgraphExec, graph: CUgraph, flags: u64) -> CuResult;
    fn cuGraphUpload(exec: CUgraphExec, stream: CUstream) -> CuResult;
    fn cuGraphLaunch(exec: CUgraphExec, stream: CUstream) -> CuResult;
    fn cuGraphExecDestroy(exec: CUgraphExec) -> CuResult;
}

/// What a graph's one node does.
pub enum Node {
    /// The `write_globaltimer` kernel, writing the GPU's timer to the device address (8 bytes).
    WriteTimer(u64),
    /// A host function with its argument: it must not call CUDA, and the argument must outlive every launch.
    Host(unsafe extern "C" fn(*mut c_void), *mut c_void),
}

/// A graph of one node; destroyed on drop.
pub struct Graph<'g> {
    raw: CUgraph,
    gpu: &'g Gpu,
}

impl<'g> Graph<'g> {
    /// An empty graph with `node` added.
    pub fn one_node(gpu: &'g Gpu, node: Node) -> CudaResult<Graph<'g>> {
        gpu.bind()?;
        let mut raw = null_mut();
        // SAFETY: `raw` is a valid out-pointer; flags must be 0; the context is current and alive for 'g.
        check(unsafe { cuGraphCreate(&mut raw, 0) }, "cuGraphCreate")?;
        let graph = Graph { raw, gpu };
        let mut added = null_mut();
        match node {
            Node::WriteTimer(out) => {
                let mut out = out;
                let mut args = [(&mut out as *mut u64).cast::<c_void>()];
                let params = CUDA_KERNEL_NODE_PARAMS {
                    func: gpu.kernels.write_globaltimer,
                    gridDimX: 1,
                    gridDimY: 1,
                    gridDimZ: 1,
                    blockDimX: 1,
                    blockDimY: 1,
                    blockDimZ: 1,
                    sharedMemBytes: 0,
                    kernelParams: args.as_mut_ptr(),
                    extra: null_mut(),
                };
                // SAFETY: `write_globaltimer(*mut u64)` takes one parameter, to which `args` points; the driver
                // copies the parameter values into the node during the call; no dependencies (null, 0).
                let rc = unsafe { cuGraphAddKernelNode(&mut added, graph.raw, std::ptr::null(), 0, &params) };
                check(rc, "cuGraphAddKernelNode")?;
            }
            Node::Host(f, user) => {
                let params = CUDA_HOST_NODE_PARAMS { fn_: Some(f), userData: user };
                // SAFETY: `f` does not call CUDA and `user` outlives the graph's launches (`Node::Host`'s
                // contract, upheld by the caller); no dependencies.
                let rc = unsafe { cuGraphAddHostNode(&mut added, graph.raw, std::ptr::null(), 0, &params) };
                check(rc, "cuGraphAddHostNode")?;
            }
        }
        Ok(graph)
    }

    /// `cuGraphInstantiateWithFlags(.., 0)` and nothing else (the call of the plain instantiation cases).
    pub fn instantiate(&self) -> CudaResult<GraphExec<'g>> {
        let mut raw = null_mut();
        // SAFETY: `self.raw` is a live graph; `raw` is a valid out-pointer; flags 0.
        check(unsafe { cuGraphInstantiateWithFlags(&mut raw, self.raw, 0) }, "cuGraphInstantiateWithFlags")?;
        Ok(GraphExec { raw, gpu: self.gpu })
    }

    /// `cuGraphInstantiateWithParams` with the upload flag, uploading into `stream`, and nothing else but the
    /// call through `f` (looked up beforehand, outside the timed span).
    pub fn instantiate_uploading(
        &self,
        f: InstantiateWithParams,
        stream: StreamHandle<'_>,
    ) -> CudaResult<GraphExec<'g>> {
        let mut raw = null_mut();
        let mut params = GraphInstantiateParams::uploading_into(stream);
        // SAFETY: `f` is the driver's cuGraphInstantiateWithParams (resolved by name, type as its header gives
        // it); `self.raw` is a live graph, `stream` a live stream (its lifetime), both out-pointers valid.
        check(unsafe { f(&mut raw, self.raw, &mut params) }, "cuGraphInstantiateWithParams")?;
        Ok(GraphExec { raw, gpu: self.gpu })
    }
}

impl<'g> Graph<'g> {
    /// The raw graph, for the runtime's calls on it (a `cudaGraph_t` is a `CUgraph`).
    pub(crate) fn raw(&self) -> CUgraph {
        self.raw
    }

    /// Owns an executable graph the runtime instantiated from this graph (`runtime::graph`).
    ///
    /// # Safety
    /// `raw` is a live executable graph of this graph's context, owned by nothing else.
    pub(crate) unsafe fn adopt(&self, raw: CUgraphExec) -> GraphExec<'g> {
        GraphExec { raw, gpu: self.gpu }
    }
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        let _ = self.gpu.bind();
        // SAFETY: created in `one_node`, destroyed once, here; executable graphs made from it are independent.
        unsafe { cuGraphDestroy(self.raw) };
    }
}

/// An executable graph; destroyed on drop once the device is idle.
pub struct GraphExec<'g> {
    raw: CUgraphExec,
    gpu: &'g Gpu,
}

impl GraphExec<'_> {
    /// The raw executable graph, for the runtime's calls on it (a `cudaGraphExec_t` is a `CUgraphExec`).
    pub(crate) fn raw(&self) -> CUgraphExec {
        self.raw
    }

    /// `cuGraphUpload` and nothing else.
    pub fn upload(&self, stream: StreamHandle<'_>) -> CudaResult<()> {
        // SAFETY: a live executable graph and a live stream (its lifetime) of the current context.
        check(unsafe { cuGraphUpload(self.raw, stream.raw()) }, "cuGraphUpload")
    }

    /// `cuGraphLaunch` and nothing else.
    pub fn launch(&self, stream: StreamHandle<'_>) -> CudaResult<()> {
        // SAFETY: as in `upload`; what the graph's nodes touch is kept alive by their owners (`Node`'s contract).
        check(unsafe { cuGraphLaunch(self.raw, stream.raw()) }, "cuGraphLaunch")
    }
}

impl Drop for GraphExec<'_> {
    fn drop(&mut self) {
        // A launch of it may still be queued after an error: wait for the device first.
        let _ = self.gpu.synchronize();
        // SAFETY: instantiated by `Graph`, destroyed once, here, with nothing of it running (the device is idle).
        unsafe { cuGraphExecDestroy(self.raw) };
    }
}

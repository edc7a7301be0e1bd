//! The runtime's graph calls the graph experiments time (`cudaGraphInstantiateWithFlags`,
//! `cudaGraphInstantiateWithParams` with the upload flag, `cudaGraphUpload`, `cudaGraphLaunch`), one function
//! per call, on graphs built through the driver (`crate::graph`): the runtime's headers declare `cudaGraph_t`
//! and `cudaGraphExec_t` as the driver's `CUgraph` and `CUgraphExec`, and both APIs share the primary context.
//! An executable graph the runtime makes is owned, and destroyed, by the driver's `GraphExec`.
//!
//! `cudaGraphInstantiateWithParams` (CUDA 12.0) is looked up by name when an experiment needs it, typed with
//! the driver's `GraphInstantiateParams` (`cudaGraphInstantiateParams` has the same fields, and
//! `cudaGraphInstantiateFlagUpload` the driver flag's value, 2), and its result read as a plain `int`.

use super::check_code;
use crate::graph::{Graph, GraphExec, GraphInstantiateParams};
use crate::stream_handle::StreamHandle;
use crate::CudaResult;
use cust::sys::{CUgraph, CUgraphExec};
use std::ffi::c_int;
use std::ptr::null_mut;

/// `cudaGraphInstantiateWithParams` as CUDA 12.0 to 13.x declare it.
pub type RtInstantiateWithParams =
    unsafe extern "C" fn(exec: *mut CUgraphExec, graph: CUgraph, params: *mut GraphInstantiateParams) -> c_int;

/// Looks `cudaGraphInstantiateWithParams` up in the loaded runtime (outside any timed span).
pub fn resolve_instantiate_with_params() -> Result<RtInstantiateWithParams, &'static str> {
    crate::rt_resolve!(cudaGraphInstantiateWithParams: RtInstantiateWithParams)
}

/// `cudaGraphInstantiateWithFlags(.., 0)` of `graph`, and nothing else.
pub fn instantiate<'g>(graph: &Graph<'g>) -> CudaResult<GraphExec<'g>> {
    let mut raw: super::sys::cudaGraphExec_t = null_mut();
    // SAFETY: `graph` is a live graph (borrowed) of the shared primary context; `raw` is a valid out-pointer;
    // flags 0.
    unsafe { crate::rt!(cudaGraphInstantiateWithFlags(&mut raw, graph.raw().cast(), 0))? };
    // SAFETY: the runtime just made `raw` from `graph`, in its context; nothing else owns it.
    Ok(unsafe { graph.adopt(raw.cast()) })
}

/// `cudaGraphInstantiateWithParams` with the upload flag, uploading into `stream`, through `f` (looked up
/// beforehand by `resolve_instantiate_with_params`), and nothing else.
pub fn instantiate_uploading<'g>(
    graph: &Graph<'g>,
    f: RtInstantiateWithParams,
    stream: StreamHandle<'_>,
) -> CudaResult<GraphExec<'g>> {
    let mut raw = null_mut();
    let mut params = GraphInstantiateParams::uploading_into(stream);
    // SAFETY: `f` is the runtime's cudaGraphInstantiateWithParams (resolved by name, typed as its header gives
    // it); `graph` is live (borrowed), `stream` a live stream of the shared context (its lifetime); both
    // out-pointers are valid for the call.
    check_code(unsafe { f(&mut raw, graph.raw(), &mut params) }, "cudaGraphInstantiateWithParams")?;
    // SAFETY: the runtime just made `raw` from `graph`, in its context; nothing else owns it.
    Ok(unsafe { graph.adopt(raw) })
}

/// `cudaGraphUpload` of `exec` into `stream`, and nothing else.
pub fn upload(exec: &GraphExec<'_>, stream: StreamHandle<'_>) -> CudaResult<()> {
    // SAFETY: a live executable graph (borrowed) and a live stream (its lifetime) of the shared context.
    unsafe { crate::rt!(cudaGraphUpload(exec.raw().cast(), stream.raw().cast())) }
}

/// `cudaGraphLaunch` of `exec` into `stream`, and nothing else.
pub fn launch(exec: &GraphExec<'_>, stream: StreamHandle<'_>) -> CudaResult<()> {
    // SAFETY: as in `upload`; what the graph's nodes touch is kept alive by their owners (the contract of the
    // driver's `graph::Node`, under which the graph was built).
    unsafe { crate::rt!(cudaGraphLaunch(exec.raw().cast(), stream.raw().cast())) }
}

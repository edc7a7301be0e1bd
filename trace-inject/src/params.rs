//! What a call's parameters say about the work it enqueues or waits for: the stream it enqueues into, the event
//! it records or waits for, whether it waits for a stream, an event or the whole device. CUPTI hands each
//! callback the call's parameter block (`CUpti_CallbackData::functionParams`, valid during the callback); its
//! layout is the function's `*_params` struct (CUPTI's `generated_cuda_runtime_api_meta.h` and
//! `generated_cuda_meta.h`, bound by cudarc). [`decode`] reads the two fields a row names, at their offsets
//! in that struct: a handful of loads, no call.
//!
//! The rows: every runtime and driver function whose parameter block names a stream (launches, copies,
//! memsets, graph launches, host functions, event records, stream waits and synchronizations, stream
//! destruction) or an event (records, synchronizations, waits, destruction), and the copies and memsets that
//! take none (they go to the default stream); one row per callback id, listed from the binding's structs
//! (each row names its struct and its callback id, so a row the binding does not have fails to compile).
//! The device-wide synchronizations have no parameter to read.

use async_lab_trace_format::EnqueueKind;
use cudarc::cupti::sys::{self, CUpti_driver_api_trace_cbid as DR, CUpti_runtime_api_trace_cbid as RT};
use std::ffi::c_void;
use std::mem::offset_of;
use std::sync::OnceLock;

/// What a call does to the GPU's queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Does {
    /// Enqueues this kind of work into a stream.
    Enqueue(EnqueueKind),
    /// Records an event in a stream.
    Record,
    /// Waits for a stream's work.
    SyncStream,
    /// Waits for an event's work.
    SyncEvent,
    /// Waits for the whole device (a context synchronization).
    SyncDevice,
    /// Destroys a stream (its handle may come back for another).
    StreamGone,
    /// Destroys an event.
    EventGone,
    /// A stream begins capturing a graph: its work is recorded into the graph, not run, until it ends.
    CaptureBegin,
    CaptureEnd,
}

/// Where a handle is in a parameter block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Where {
    /// The function takes none.
    Nowhere,
    /// At this offset.
    At(usize),
    /// In the struct a pointer at the first offset points to, at the second (a launch's configuration).
    Via(usize, usize),
}

/// One row: a function by its callback id, and where its stream and event are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub runtime: bool,
    pub cbid: u32,
    pub does: Does,
    pub stream: Where,
    pub event: Where,
    /// A per-thread-default-stream variant (`_ptsz`, `_ptds`): a null stream is the calling thread's own.
    pub per_thread: bool,
}

/// What one call's parameters said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub does: Does,
    /// The stream handle (0: the default stream, or none named).
    pub stream: u64,
    pub per_thread: bool,
    /// The event handle (0: none).
    pub event: u64,
}

const R: bool = true;
const D: bool = false;

const fn d(runtime: bool, cbid: u32, does: Does, stream: Where, event: Where, per_thread: bool) -> Row {
    Row { runtime, cbid, does, stream, event, per_thread }
}

/// The rows, as the binding's structs give them.
#[rustfmt::skip]
pub const ROWS: &[Row] = &[
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuEventDestroy as u32, Does::EventGone, Where::Nowhere, Where::At(offset_of!(sys::cuEventDestroy_params, hEvent)), false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2 as u32, Does::EventGone, Where::Nowhere, Where::At(offset_of!(sys::cuEventDestroy_v2_params, hEvent)), false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags as u32, Does::Record, Where::At(offset_of!(sys::cuEventRecordWithFlags_params, hStream)), Where::At(offset_of!(sys::cuEventRecordWithFlags_params, hEvent)), false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz as u32, Does::Record, Where::At(offset_of!(sys::cuEventRecordWithFlags_ptsz_params, hStream)), Where::At(offset_of!(sys::cuEventRecordWithFlags_ptsz_params, hEvent)), true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuEventRecord as u32, Does::Record, Where::At(offset_of!(sys::cuEventRecord_params, hStream)), Where::At(offset_of!(sys::cuEventRecord_params, hEvent)), false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz as u32, Does::Record, Where::At(offset_of!(sys::cuEventRecord_ptsz_params, hStream)), Where::At(offset_of!(sys::cuEventRecord_ptsz_params, hEvent)), true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize as u32, Does::SyncEvent, Where::Nowhere, Where::At(offset_of!(sys::cuEventSynchronize_params, hEvent)), false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch as u32, Does::Enqueue(EnqueueKind::Graph), Where::At(offset_of!(sys::cuGraphLaunch_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz as u32, Does::Enqueue(EnqueueKind::Graph), Where::At(offset_of!(sys::cuGraphLaunch_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel as u32, Does::Enqueue(EnqueueKind::Kernel), Where::At(offset_of!(sys::cuLaunchCooperativeKernel_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz as u32, Does::Enqueue(EnqueueKind::Kernel), Where::At(offset_of!(sys::cuLaunchCooperativeKernel_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc as u32, Does::Enqueue(EnqueueKind::HostFunction), Where::At(offset_of!(sys::cuLaunchHostFunc_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz as u32, Does::Enqueue(EnqueueKind::HostFunction), Where::At(offset_of!(sys::cuLaunchHostFunc_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_v2 as u32, Does::Enqueue(EnqueueKind::HostFunction), Where::At(offset_of!(sys::cuLaunchHostFunc_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_v2_ptsz as u32, Does::Enqueue(EnqueueKind::HostFunction), Where::At(offset_of!(sys::cuLaunchHostFunc_v2_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx as u32, Does::Enqueue(EnqueueKind::Kernel), Where::Via(offset_of!(sys::cuLaunchKernelEx_params, config), offset_of!(cudarc::driver::sys::CUlaunchConfig_st, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz as u32, Does::Enqueue(EnqueueKind::Kernel), Where::Via(offset_of!(sys::cuLaunchKernelEx_ptsz_params, config), offset_of!(cudarc::driver::sys::CUlaunchConfig_st, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel as u32, Does::Enqueue(EnqueueKind::Kernel), Where::At(offset_of!(sys::cuLaunchKernel_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz as u32, Does::Enqueue(EnqueueKind::Kernel), Where::At(offset_of!(sys::cuLaunchKernel_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy2DAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy2DAsync_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy2DAsync_v2_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy3DAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy3DAsync_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy3DAsync_v2_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy3DBatchAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy3DBatchAsync_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy3DBatchAsync_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy3DBatchAsync_v2_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy3DPeerAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy3DPeerAsync_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeer as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeer_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DWithAttributesAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy3DWithAttributesAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DWithAttributesAsync_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpy3DWithAttributesAsync_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyAsync_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoA as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoA_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoA_v2_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoD as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoD_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoD_v2_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyAtoHAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyAtoHAsync_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyAtoHAsync_v2_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH_v2_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyBatchAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyBatchAsync_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyBatchAsync_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyBatchAsync_v2_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoA as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoA_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoA_v2_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyDtoDAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyDtoDAsync_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyDtoDAsync_v2_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyDtoHAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyDtoHAsync_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyDtoHAsync_v2_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyHtoAAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyHtoAAsync_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync_v2_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyHtoAAsync_v2_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoA as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoA_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoA_v2_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyHtoDAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyHtoDAsync_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyHtoDAsync_v2_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyPeerAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyPeerAsync_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyWithAttributesAsync as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyWithAttributesAsync_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpyWithAttributesAsync_ptsz as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cuMemcpyWithAttributesAsync_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD16Async_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD16Async_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD16 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD2D16Async_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD2D16Async_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2_ptds as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD2D32Async_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async_ptsz as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD2D32Async_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2_ptds as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD2D8Async_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async_ptsz as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD2D8Async_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2_ptds as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD32Async_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD32Async_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD32 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD8Async_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cuMemsetD8Async_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD8 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy as u32, Does::StreamGone, Where::At(offset_of!(sys::cuStreamDestroy_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2 as u32, Does::StreamGone, Where::At(offset_of!(sys::cuStreamDestroy_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize as u32, Does::SyncStream, Where::At(offset_of!(sys::cuStreamSynchronize_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz as u32, Does::SyncStream, Where::At(offset_of!(sys::cuStreamSynchronize_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent as u32, Does::Enqueue(EnqueueKind::EventWait), Where::At(offset_of!(sys::cuStreamWaitEvent_params, hStream)), Where::At(offset_of!(sys::cuStreamWaitEvent_params, hEvent)), false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz as u32, Does::Enqueue(EnqueueKind::EventWait), Where::At(offset_of!(sys::cuStreamWaitEvent_ptsz_params, hStream)), Where::At(offset_of!(sys::cuStreamWaitEvent_ptsz_params, hEvent)), true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020 as u32, Does::EventGone, Where::Nowhere, Where::At(offset_of!(sys::cudaEventDestroy_v3020_params, event)), false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010 as u32, Does::Record, Where::At(offset_of!(sys::cudaEventRecordWithFlags_ptsz_v11010_params, stream)), Where::At(offset_of!(sys::cudaEventRecordWithFlags_ptsz_v11010_params, event)), true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010 as u32, Does::Record, Where::At(offset_of!(sys::cudaEventRecordWithFlags_v11010_params, stream)), Where::At(offset_of!(sys::cudaEventRecordWithFlags_v11010_params, event)), false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000 as u32, Does::Record, Where::At(offset_of!(sys::cudaEventRecord_ptsz_v7000_params, stream)), Where::At(offset_of!(sys::cudaEventRecord_ptsz_v7000_params, event)), true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020 as u32, Does::Record, Where::At(offset_of!(sys::cudaEventRecord_v3020_params, stream)), Where::At(offset_of!(sys::cudaEventRecord_v3020_params, event)), false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020 as u32, Does::SyncEvent, Where::Nowhere, Where::At(offset_of!(sys::cudaEventSynchronize_v3020_params, event)), false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000 as u32, Does::Enqueue(EnqueueKind::Graph), Where::At(offset_of!(sys::cudaGraphLaunch_ptsz_v10000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 as u32, Does::Enqueue(EnqueueKind::Graph), Where::At(offset_of!(sys::cudaGraphLaunch_v10000_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000 as u32, Does::Enqueue(EnqueueKind::Kernel), Where::At(offset_of!(sys::cudaLaunchCooperativeKernel_ptsz_v9000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000 as u32, Does::Enqueue(EnqueueKind::Kernel), Where::At(offset_of!(sys::cudaLaunchCooperativeKernel_v9000_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_ptsz_v10000 as u32, Does::Enqueue(EnqueueKind::HostFunction), Where::At(offset_of!(sys::cudaLaunchHostFunc_ptsz_v10000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000 as u32, Does::Enqueue(EnqueueKind::HostFunction), Where::At(offset_of!(sys::cudaLaunchHostFunc_v10000_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v2_ptsz_v13020 as u32, Does::Enqueue(EnqueueKind::HostFunction), Where::At(offset_of!(sys::cudaLaunchHostFunc_v2_ptsz_v13020_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v2_v13020 as u32, Does::Enqueue(EnqueueKind::HostFunction), Where::At(offset_of!(sys::cudaLaunchHostFunc_v2_v13020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060 as u32, Does::Enqueue(EnqueueKind::Kernel), Where::Via(offset_of!(sys::cudaLaunchKernelExC_ptsz_v11060_params, config), offset_of!(cudarc::runtime::sys::cudaLaunchConfig_st, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 as u32, Does::Enqueue(EnqueueKind::Kernel), Where::Via(offset_of!(sys::cudaLaunchKernelExC_v11060_params, config), offset_of!(cudarc::runtime::sys::cudaLaunchConfig_st, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Kernel), Where::At(offset_of!(sys::cudaLaunchKernel_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 as u32, Does::Enqueue(EnqueueKind::Kernel), Where::At(offset_of!(sys::cudaLaunchKernel_v7000_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DArrayToArray_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DArrayToArray_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy2DAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy2DAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy2DFromArrayAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy2DFromArrayAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArray_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArray_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy2DToArrayAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy2DToArrayAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArray_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArray_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy3DAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy3DAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_ptsz_v13000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy3DBatchAsync_ptsz_v13000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_v13000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy3DBatchAsync_v13000_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy3DPeerAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_v4000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy3DPeerAsync_v4000_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeer_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeer_v4000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DWithAttributesAsync_ptsz_v13020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy3DWithAttributesAsync_ptsz_v13020_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DWithAttributesAsync_v13020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpy3DWithAttributesAsync_v13020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyArrayToArray_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyArrayToArray_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyBatchAsync_ptsz_v13000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyBatchAsync_v13000_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArrayAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyFromArrayAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArrayAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyFromArrayAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArray_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArray_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyFromSymbolAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyFromSymbolAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyPeerAsync_v4000_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArrayAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyToArrayAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArrayAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyToArrayAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArray_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArray_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyToSymbolAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyToSymbolAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyWithAttributesAsync_ptsz_v13020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyWithAttributesAsync_ptsz_v13020_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyWithAttributesAsync_v13020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::At(offset_of!(sys::cudaMemcpyWithAttributesAsync_v13020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020 as u32, Does::Enqueue(EnqueueKind::Copy), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cudaMemset2DAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cudaMemset2DAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cudaMemset3DAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cudaMemset3DAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cudaMemsetAsync_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020 as u32, Does::Enqueue(EnqueueKind::Memset), Where::At(offset_of!(sys::cudaMemsetAsync_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020 as u32, Does::Enqueue(EnqueueKind::Memset), Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050 as u32, Does::StreamGone, Where::At(offset_of!(sys::cudaStreamDestroy_v5050_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000 as u32, Does::SyncStream, Where::At(offset_of!(sys::cudaStreamSynchronize_ptsz_v7000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020 as u32, Does::SyncStream, Where::At(offset_of!(sys::cudaStreamSynchronize_v3020_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000 as u32, Does::Enqueue(EnqueueKind::EventWait), Where::At(offset_of!(sys::cudaStreamWaitEvent_ptsz_v7000_params, stream)), Where::At(offset_of!(sys::cudaStreamWaitEvent_ptsz_v7000_params, event)), true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020 as u32, Does::Enqueue(EnqueueKind::EventWait), Where::At(offset_of!(sys::cudaStreamWaitEvent_v3020_params, stream)), Where::At(offset_of!(sys::cudaStreamWaitEvent_v3020_params, event)), false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 as u32, Does::SyncDevice, Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020 as u32, Does::SyncDevice, Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize as u32, Does::SyncDevice, Where::Nowhere, Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2 as u32, Does::SyncDevice, Where::Nowhere, Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000 as u32, Does::CaptureBegin, Where::At(offset_of!(sys::cudaStreamBeginCapture_v10000_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000 as u32, Does::CaptureBegin, Where::At(offset_of!(sys::cudaStreamBeginCapture_ptsz_v10000_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030 as u32, Does::CaptureBegin, Where::At(offset_of!(sys::cudaStreamBeginCaptureToGraph_v12030_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030 as u32, Does::CaptureBegin, Where::At(offset_of!(sys::cudaStreamBeginCaptureToGraph_ptsz_v12030_params, stream)), Where::Nowhere, true),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000 as u32, Does::CaptureEnd, Where::At(offset_of!(sys::cudaStreamEndCapture_v10000_params, stream)), Where::Nowhere, false),
    d(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000 as u32, Does::CaptureEnd, Where::At(offset_of!(sys::cudaStreamEndCapture_ptsz_v10000_params, stream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture as u32, Does::CaptureBegin, Where::At(offset_of!(sys::cuStreamBeginCapture_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz as u32, Does::CaptureBegin, Where::At(offset_of!(sys::cuStreamBeginCapture_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2 as u32, Does::CaptureBegin, Where::At(offset_of!(sys::cuStreamBeginCapture_v2_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz as u32, Does::CaptureBegin, Where::At(offset_of!(sys::cuStreamBeginCapture_v2_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph as u32, Does::CaptureBegin, Where::At(offset_of!(sys::cuStreamBeginCaptureToGraph_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz as u32, Does::CaptureBegin, Where::At(offset_of!(sys::cuStreamBeginCaptureToGraph_ptsz_params, hStream)), Where::Nowhere, true),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture as u32, Does::CaptureEnd, Where::At(offset_of!(sys::cuStreamEndCapture_params, hStream)), Where::Nowhere, false),
    d(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz as u32, Does::CaptureEnd, Where::At(offset_of!(sys::cuStreamEndCapture_ptsz_params, hStream)), Where::Nowhere, true),
];

/// The rows by callback id, one table per API.
struct Table {
    runtime: Vec<Option<Row>>,
    driver: Vec<Option<Row>>,
}

static TABLE: OnceLock<Table> = OnceLock::new();

fn table() -> &'static Table {
    TABLE.get_or_init(|| {
        let size = |runtime: bool| ROWS.iter().filter(|r| r.runtime == runtime).map(|r| r.cbid as usize + 1).max();
        let mut t = Table { runtime: vec![None; size(R).unwrap_or(0)], driver: vec![None; size(D).unwrap_or(0)] };
        for row in ROWS {
            let list = if row.runtime { &mut t.runtime } else { &mut t.driver };
            list[row.cbid as usize] = Some(*row);
        }
        t
    })
}

/// Builds the table (at subscription, so that the first call does not).
pub fn init() {
    let _ = table();
}

/// The row of callback id `cbid` of the runtime (`runtime`) or the driver API, where there is one.
#[inline]
pub fn row(runtime: bool, cbid: u32) -> Option<Row> {
    let t = table();
    let list = if runtime { &t.runtime } else { &t.driver };
    list.get(cbid as usize).copied().flatten()
}

/// What the call's parameter block says, for a function the table has.
///
/// # Safety
/// `params` is null or the parameter block CUPTI passed to the callback of `row`'s function, valid during the
/// call: the struct the row was made from.
#[inline]
pub unsafe fn decode(row: Row, params: *const c_void) -> Decoded {
    // SAFETY: the caller's promise; `handle` reads only offsets the row took from that struct.
    let (stream, event) = unsafe { (handle(params, row.stream), handle(params, row.event)) };
    Decoded { does: row.does, stream, per_thread: row.per_thread, event }
}

/// The pointer-sized handle at `at` in `params` (0 where there is none).
///
/// # Safety
/// As [`decode`]: `at` is an offset (or a pointer's offset and one in the struct it points to) of a handle
/// in the struct `params` points to.
unsafe fn handle(params: *const c_void, at: Where) -> u64 {
    if params.is_null() {
        return 0;
    }
    let base = params.cast::<u8>();
    // SAFETY: each offset is `offset_of!` a pointer-sized field of the struct CUPTI passed (the caller's
    // promise), read unaligned as a plain integer; a configuration pointer is checked for null first and
    // points to the caller's `CUlaunchConfig` / `cudaLaunchConfig_t`, alive during the call.
    unsafe {
        match at {
            Where::Nowhere => 0,
            Where::At(off) => base.add(off).cast::<u64>().read_unaligned(),
            Where::Via(ptr, off) => {
                let config = base.add(ptr).cast::<*const u8>().read_unaligned();
                if config.is_null() {
                    0
                } else {
                    config.add(off).cast::<u64>().read_unaligned()
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_callback_id_has_one_row_and_the_common_ones_are_there() {
        let mut seen = std::collections::HashSet::new();
        for r in ROWS {
            assert!(seen.insert((r.runtime, r.cbid)), "two rows for {r:?}");
        }
        let launch = row(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 as u32).unwrap();
        assert_eq!(launch.does, Does::Enqueue(EnqueueKind::Kernel));
        assert_eq!(launch.stream, Where::At(offset_of!(sys::cudaLaunchKernel_v7000_params, stream)));
        let sync = row(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize as u32).unwrap();
        assert_eq!(sync.does, Does::SyncStream);
        let wait = row(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020 as u32).unwrap();
        assert!(matches!((wait.stream, wait.event), (Where::At(_), Where::At(_))));
        assert_eq!(
            row(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 as u32).unwrap().does,
            Does::SyncDevice
        );
        // The synchronous copies take no stream: the default one.
        assert_eq!(row(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020 as u32).unwrap().stream, Where::Nowhere);
        assert!(row(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000 as u32).unwrap().per_thread);
        assert!(row(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020 as u32).is_none());
    }

    #[test]
    fn a_launch_names_its_stream_and_a_wait_its_event() {
        // A runtime launch's parameter block as the runtime fills it.
        // SAFETY: a plain C struct of integers and pointers: all zero is a valid value.
        let mut launch: sys::cudaLaunchKernel_v7000_params = unsafe { std::mem::zeroed() };
        launch.stream = 0x5000 as _;
        let r = row(R, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 as u32).unwrap();
        // SAFETY: the block is the row's struct, alive during the call.
        let got = unsafe { decode(r, (&raw const launch).cast()) };
        assert_eq!(
            got,
            Decoded { does: Does::Enqueue(EnqueueKind::Kernel), stream: 0x5000, per_thread: false, event: 0 }
        );
        // A driver launch with a configuration: the stream is in the struct it points to.
        // SAFETY: a plain C struct of integers and pointers: all zero is a valid value.
        let mut config: cudarc::driver::sys::CUlaunchConfig_st = unsafe { std::mem::zeroed() };
        config.hStream = 0x6000 as _;
        // SAFETY: a plain C struct of integers and pointers: all zero is a valid value.
        let mut ex: sys::cuLaunchKernelEx_params = unsafe { std::mem::zeroed() };
        ex.config = &raw const config;
        let r = row(D, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx as u32).unwrap();
        // SAFETY: as above; `config` outlives the call.
        assert_eq!(unsafe { decode(r, (&raw const ex).cast()) }.stream, 0x6000);
        // SAFETY: a plain C struct of integers and pointers: all zero is a valid value.
        let mut wait: sys::cuStreamWaitEvent_params = unsafe { std::mem::zeroed() };
        wait.hStream = 0x7000 as _;
        wait.hEvent = 0x8000 as _;
        let r = row(D, DR::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent as u32).unwrap();
        // SAFETY: as above.
        let got = unsafe { decode(r, (&raw const wait).cast()) };
        assert_eq!((got.does, got.stream, got.event), (Does::Enqueue(EnqueueKind::EventWait), 0x7000, 0x8000));
        // A null block (the benchmark's) reads as no handle.
        // SAFETY: null is allowed.
        assert_eq!(unsafe { decode(r, std::ptr::null()) }.stream, 0);
    }
}

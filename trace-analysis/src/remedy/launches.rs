//! Fewer, larger launches, the remedy of launches the driver's work made slow and of a thread busy
//! launching, with what the lab measured of a warm kernel launch beside a warm graph launch.

use super::{Group, LabEvidence};
use crate::framework::Framework;
use crate::remedies;
use crate::words::duration;

/// The remedy of launches the driver's work made slow, and of a thread busy launching: fewer launches.
pub(super) fn launch_work(g: &mut Group, median: &str) -> String {
    let mut words = format!(
        "Each launch took {median} at the median here, in the driver's work on this thread: {}",
        fewer_launches(g.framework)
    );
    launch_costs(g.api, &mut words, &mut g.lab);
    words
}

/// How a framework makes fewer, larger launches.
pub(super) fn fewer_launches(f: Framework) -> &'static str {
    match f {
        Framework::Torch => "launch fewer, larger kernels: torch.compile(model) fuses them, and \
                             torch.compile(model, mode=\"reduce-overhead\") or CUDA graphs (torch.cuda.CUDAGraph) replay a \
                             whole step in one launch; larger batches do more per launch.",
        Framework::Jax => "launch fewer, larger computations: jax.jit the whole training step (or several steps with \
                           jax.lax.scan), so that one dispatch runs many fused kernels.",
        Framework::CuPy => "launch fewer, larger kernels: fuse elementwise operations (cupy.fuse, an ElementwiseKernel), \
                            or capture the loop body in a CUDA graph (stream.begin_capture()).",
        Framework::Numba => "launch fewer, larger kernels: do more work per launch (a loop inside the kernel, larger \
                             grids).",
        Framework::Native => "launch fewer, larger kernels, or capture the loop body once in a CUDA graph \
                              (cudaStreamBeginCapture ... cudaGraphInstantiate) and launch it each step \
                              (cudaGraphLaunch).",
    }
}

/// What the lab measured of a warm kernel launch and a warm graph launch, through `api`.
pub(super) fn launch_costs(api: &str, words: &mut String, lab_evidence: &mut Vec<LabEvidence>) {
    let lab = remedies::lab();
    if let (Some(kernel), Some(graph)) = (lab.launch(api, "kernel"), lab.launch(api, "graph")) {
        words.push_str(&format!(
            " On the lab's {} a warm {} returned in {} and a warm one-kernel {} in {} (medians of {}): a graph \
             launches all its kernels for about one launch's cost.",
            lab.gpu,
            kernel.call,
            duration(kernel.returned_ns),
            graph.call,
            duration(graph.returned_ns),
            kernel.repetitions
        ));
        for l in [kernel, graph] {
            lab_evidence.push(LabEvidence {
                case: l.case.clone(),
                recording: l.recording.clone(),
                words: format!("a warm {} returned in {}", l.call, duration(l.returned_ns)),
            });
        }
    }
}

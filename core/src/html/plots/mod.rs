//! The plots, drawn with plotters' SVG backend and embedded in the page as SVG text:
//! - the size sweep (`sweep/{htod,dtoh}/{pageable,pinned}/SIZE`): call time and bandwidth against copy size,
//!   log-log, pageable against pinned, with the crossover marked (the first pageable size whose class is
//!   neither `async` nor `staged`, as in the report's findings);
//! - the launch queue (`launch/queue-depth/*`): the time of each launch against its index, with the launch that
//!   found the queue full marked;
//! - the scheduling flags (`wait/*`): the waiting thread's CPU use and its wake-up latency for each flag;
//! - the peer copies (`peer/*/same/SIZE/gpuA-to-gpuB`): call time and bandwidth against size, one line per call,
//!   peer access setting and pair of GPUs.
//!
//! One file per plot (`sweep.rs`, `queue.rs`, `wait.rs`, `peer.rs`), what they share in `chart.rs`. Each
//! returns `None` when the recording has no data for it. A plot that cannot be drawn becomes a message,
//! never a failure of the page.

mod chart;
mod peer;
mod queue;
mod sweep;
mod wait;

pub use peer::peer;
pub use queue::queue;
pub use sweep::sweep;
pub use wait::wait;

/// One figure: its SVGs side by side (or why one could not be drawn) and a caption in plain words.
pub struct Figure {
    pub svgs: Vec<Result<String, String>>,
    pub caption: String,
}

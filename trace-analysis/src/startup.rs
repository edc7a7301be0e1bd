//! A program's start-up: the calls that created its context and loaded its modules and libraries before it
//! first enqueued GPU work. A user cannot make them shorter by changing a line of their loop, so the
//! by-location table puts them on one line of their own and `--after-startup` leaves them out.
//!
//! A call is start-up when it began before the first call that enqueued GPU work (the first with a kernel,
//! copy or memset of its own correlation id) and it loaded or created something: a `context-created` or
//! `module-loaded` resource event on its thread while it ran (the first call that creates the context, such
//! as `cudaFree(0)`), or a loading function among it and the driver calls inside it (`cuModuleLoad*`,
//! `cuLibraryLoad*`, `cuInit`, `cuCtxCreate*`, `cuDevicePrimaryCtxRetain`: the function table's (`functions`)).

use super::format::{Line, ProcessTrace};
use super::functions::loads_or_creates;
use super::scene::Program;

/// Which of the program's calls are start-up, by index into `Program::calls`.
pub fn startup_calls(p: &ProcessTrace, program: &Program) -> Vec<bool> {
    let first_enqueue = (0..program.calls.len())
        .filter(|&i| !program.own_work(i).is_empty())
        .map(|i| program.calls[i].span.start)
        .min()
        .unwrap_or(i64::MAX);
    // Every resource event, context creation and module loads alike: (thread, time).
    let mut resources: Vec<(i64, u64)> = p
        .lines
        .iter()
        .filter_map(|l| match l {
            Line::Resource { t, tid, .. } => Some((*t as i64, *tid)),
            _ => None,
        })
        .collect();
    resources.sort_unstable();
    program
        .calls
        .iter()
        .map(|c| {
            if c.span.start >= first_enqueue {
                return false;
            }
            let from = resources.partition_point(|&(t, _)| t < c.span.start);
            let created = resources[from..].iter().take_while(|&&(t, _)| t <= c.span.end).any(|&(_, tid)| tid == c.tid);
            created || loads_or_creates(&c.name) || c.inner.iter().any(|n| loads_or_creates(n))
        })
        .collect()
}

//! How many programs (`scene::Program::of`) and analyses (`analysis::Analysis::of`) this thread has made: a
//! run of `async-lab trace` makes one of each per process and hands it to every view, and its test reads these
//! counts to fail where a view makes its own again.

use std::cell::Cell;

thread_local! {
    static PROGRAMS: Cell<usize> = const { Cell::new(0) };
    static ANALYSES: Cell<usize> = const { Cell::new(0) };
}

/// The counts so far on this thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Made {
    pub programs: usize,
    pub analyses: usize,
}

/// What this thread has made so far.
pub fn so_far() -> Made {
    Made { programs: PROGRAMS.with(Cell::get), analyses: ANALYSES.with(Cell::get) }
}

/// What this thread made since `before`.
pub fn since(before: Made) -> Made {
    let now = so_far();
    Made { programs: now.programs - before.programs, analyses: now.analyses - before.analyses }
}

/// Counts a program read (`Program::of`).
pub(crate) fn program() {
    PROGRAMS.with(|n| n.set(n.get() + 1));
}

/// Counts an analysis made (`Analysis::of`).
pub(crate) fn analysis() {
    ANALYSES.with(|n| n.set(n.get() + 1));
}

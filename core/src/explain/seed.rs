//! The seed family in words: its blocker is the work the step before left in the stream.

/// The seed's blocker: the work of the step before.
pub(super) const BLOCKER: &str = "the work ahead of it in the stream";

/// A step that found nothing of the step before still to run.
pub(super) const NOTHING_AHEAD: &str = ", with nothing unfinished ahead of it in the stream";

/// A step that returned after `blocker` (`BLOCKER`) had finished.
pub(super) fn waited(blocker: &str) -> String {
    format!(", after {blocker} had finished: it waited for it")
}

//! The virtual memory family in words: an unmapping call that returned while queued work still used the memory.

use crate::result::CaseResult;

/// What the `returned_while_in_use` flag says, where it is set.
pub(super) fn in_use(r: &CaseResult) -> &'static str {
    if r.metrics.returned_while_in_use == Some(true) {
        " It returned while a kernel queued before it was still to write into the memory it unmapped: the GPU still used the memory when the call gave it up (async-lab mapped it again at once, so the kernel ran)."
    } else {
        ""
    }
}

//! The stream memory family in words: whether the call returned only after the host wrote the value a waiting
//! stream needed.

use crate::result::CaseResult;

/// Whether the call waited for the watchdog's write (its `returned_after_host_write` flag).
pub(super) fn host_write(r: &CaseResult) -> &'static str {
    match r.metrics.returned_after_host_write {
        Some(true) => {
            " It returned only after the watchdog thread had written the value the waiting stream needed: a program that makes this call before writing that value itself hangs here."
        }
        Some(false) => {
            " It returned before the watchdog wrote the value the waiting stream needed: a program can make this call first and write the value afterwards."
        }
        None => "",
    }
}

//! The threads family in words: whether another thread's slow call overlapped this one, and whether this one
//! waited for it.

use crate::result::CaseResult;

/// What the other thread's call did to this one (its `overlapped` and `waited_for_other_thread` flags).
pub(super) fn other_thread(r: &CaseResult) -> String {
    let m = &r.metrics;
    let other_ms = m.other_call_us.unwrap_or(f64::NAN) / 1e3;
    // Recordings since the quick call is made inside the slow call say how far in it started.
    let into = m.started_into_other_us.map_or(String::new(), |us| format!(" for {us:.0} µs"));
    match (m.overlapped, m.waited_for_other_thread) {
        // Recordings of the older order: the other thread went in before the blocker's launch.
        (Some(false), _) if m.launch_waited_for_other_thread == Some(true) => format!(
            " The other thread's slow call ({other_ms:.1} ms) had ended before this call started: the calls this thread made while it ran (the blocker's event records and launch, on its own stream) finished only after it ended. This thread's driver calls waited for the other thread.",
        ),
        (Some(false), _) => {
            " The other thread's slow call did not overlap it in most repetitions: this measured nothing about threads."
                .to_owned()
        }
        (_, Some(true)) => {
            let after = match m.returned_after_other_end_us {
                Some(us) => format!(" ({us:.0} µs after): it waited for the other thread."),
                None => ": it waited for the other thread.".to_owned(),
            };
            format!(
                " Another thread had been inside the slow call named above ({other_ms:.1} ms){into} when it started, and it returned only after that call had ended{after}"
            )
        }
        (_, Some(false)) => format!(
            " Another thread had been inside the slow call named above ({other_ms:.1} ms){into} when it started, and it returned before that call ended: it did not wait for the other thread."
        ),
        _ => String::new(),
    }
}

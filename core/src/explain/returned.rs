//! A call that returned behind a blocker, in words: whether it waited for the blocker, whether its own work was
//! done, whether the driver had staged its data; then what its family measured beside that (the seed, peer,
//! stream memory, threads and virtual memory families, each in its own file).

use super::{ms, peer, seed, streammem, threads, vmm};
use crate::record::CaseSetup;
use crate::result::CaseResult;
use crate::setup::Family;

/// What the call measured; `call` is its median time in words.
pub(super) fn measured(s: &CaseSetup, r: &CaseResult, call: &str) -> String {
    let mut text = format!("{} returned after {call}", s.call);
    let on_dst_gpu = peer::on_dst_gpu(s);
    let blocker = match (s.family, r.blocker_us) {
        (Family::Seed, _) => seed::BLOCKER.to_owned(),
        (_, Some(b)) if on_dst_gpu => peer::blocker_on_dst_gpu(b),
        (_, Some(b)) => format!("the {} blocker", ms(b)),
        (_, None) => "the blocker".to_owned(),
    };
    text.push_str(&prior_work(s, r, &blocker, on_dst_gpu));
    text.push_str(own_work(r));
    text.push_str(staging(r));
    match s.family {
        Family::StreamMem => text.push_str(streammem::host_write(r)),
        Family::Threads => text.push_str(&threads::other_thread(r)),
        _ => {}
    }
    text.push_str(vmm::in_use(r));
    if let Some(p) = &s.layout.peer {
        text.push_str(&peer::measured(p, r, on_dst_gpu));
    }
    text
}

/// Whether the call returned after `blocker` (the work before it) had finished, and what that says it waited for.
fn prior_work(s: &CaseSetup, r: &CaseResult, blocker: &str, on_dst_gpu: bool) -> String {
    let seed = s.family == Family::Seed;
    match (r.waited_for_prior_work, s.layout.blocker_ahead) {
        (None, _) if seed => seed::NOTHING_AHEAD.to_owned(),
        (None, _) => String::new(),
        // What released the call was another thread's call (the blocker ended inside it).
        (Some(true), _)
            if r.median_held()
                .and_then(|h| h.released_by())
                .is_some_and(|s| s.cause == crate::attribution::Cause::Thread) =>
        {
            format!(", after {blocker} had finished, inside another thread's call that it waited for (below)")
        }
        // Done by the return, but not measurably waited for: it ended within the resolution of the call's start.
        (Some(true), _) if r.median_held().is_some_and(|h| h.released_by().is_none()) => format!(
            ", after {blocker} had finished, but it ended within the resolution of the call's start: nothing \
             measurable held the call for it"
        ),
        (Some(true), true) if seed => seed::waited(blocker),
        (Some(true), true) => format!(", after {blocker} ahead of it had finished: it waited for the work ahead"),
        (Some(true), false) if on_dst_gpu => peer::waited_for_dst_gpu(blocker),
        (Some(true), false) => format!(
            ", after {blocker} on another stream had finished, work it does not depend on: it waited for the whole device"
        ),
        (Some(false), _) => format!(", before {blocker} had finished: it did not wait for it"),
    }
}

/// Whether the call's own work was done when it returned.
fn own_work(r: &CaseResult) -> &'static str {
    match r.complete_at_return {
        Some(true) => "; its own work was already done.",
        Some(false) => "; its own work had not finished yet.",
        None if r.has_device_work => "; whether its own work was done at the return, the readings do not decide.",
        None => "; it puts no work on the GPU.",
    }
}

/// Whether the driver had copied the call's source before it returned.
fn staging(r: &CaseResult) -> &'static str {
    match r.data_captured_at_return {
        Some(true) => {
            " Overwriting the source right after the return did not change what arrived: the driver had already copied the data into its own staging buffer."
        }
        Some(false) => {
            " Overwriting the source right after the return changed what arrived: the GPU reads the caller's buffer itself, later."
        }
        None => "",
    }
}

//! What a traced call may be said to have waited for: each wait the attribution finds checked against what
//! the lab has measured of the call's function (`capability`), under the conditions the trace shows
//! ([`shown`]); and why a call's class would rest on GPU records the trace lacks ([`missing_words`],
//! [`unrecorded_words`]: its class is then `unknown`).

use super::call_view::CallView;
use super::capability::{self, Allowed, Entry, Shown, Way};
use super::format::cupti_kinds::copy;
use super::records::{Lost, WorkKind};
use super::scene::Program;
use crate::attribution::{Cause, Held};
use crate::class::Class;

/// Why call `i`'s class would rest on GPU records the trace lacks, where it would (`None`: it does not):
/// it enqueued GPU work and none of it is in the trace (`Program::missing_records`); or it has no work of its
/// own, the attribution found nothing that held it (`async`), the lab has seen its function wait, and work
/// whose records are missing may have been under way while it ran: enqueued before it returned, and, in a
/// section cut short, the call returned after the last record the trace holds ended (in one whose CUPTI
/// dropped records, it began before that work could have ended, as long as the longest work the trace holds).
pub(crate) fn missing_words(p: &Program, v: &CallView, class: Class, functions: &[&str]) -> Option<String> {
    let lost = p.lost.as_ref()?;
    let missing = p.missing_records();
    if missing.binary_search(&v.index).is_ok() {
        return Some(match lost {
            Lost::Dropped(_) => format!("its GPU records are missing: {}", lost.words()),
            Lost::Cut { .. } => format!("its GPU records were lost: {}", lost.words()),
        });
    }
    if class != Class::Async || !v.own_work.is_empty() {
        return None;
    }
    let c = v.call;
    // The missing calls enqueued before this one returned (they are in the order they began).
    let before = &missing[..missing.partition_point(|&k| p.calls[k].span.start < c.span.end)];
    let may_have_held = match lost {
        Lost::Cut { .. } => !before.is_empty() && c.span.end > p.records_end,
        Lost::Dropped(_) => {
            let (work, call) = (p.longest_work_ns(), p.longest_call_ns());
            before
                .iter()
                .rev()
                .map(|&k| &p.calls[k])
                .take_while(|u| u.span.start + call + work > c.span.start)
                .any(|u| c.span.start < u.span.end + work)
        }
    };
    let table = capability::lab();
    let waits = [Way::Stream, Way::Device]
        .iter()
        .any(|&w| matches!(table.allows(functions, w, Shown::default()), Allowed::Yes(_)));
    (may_have_held && waits)
        .then(|| format!("what it waited for may be among the GPU records missing: {}", lost.words()))
}

/// Why the call `v` views would be classed on records the trace does not hold, where it would: it waited for
/// nothing the trace shows, the lab saw its function wait for its stream or the device, and its launch log
/// names work the trace holds no record of (kernel records off then) whose end nothing bounds (`ahead`).
pub(crate) fn unrecorded_words(
    p: &Program,
    v: &CallView,
    held: &Held,
    functions: &[&str],
    shown: Shown,
) -> Option<String> {
    let table = capability::lab();
    let may_wait =
        [Way::Stream, Way::Device].iter().any(|&w| matches!(table.allows(functions, w, shown), Allowed::Yes(_)));
    p.log.unknown_words(&v.call.corrs, held.released_by().is_some(), may_wait, &|k| p.record_start(k).is_some())
}

/// What the lab's table says of one way a call waited.
pub(crate) enum Check {
    /// The lab saw its function wait that way: this entry.
    Claimed(&'static Entry),
    /// A wait for "other streams" of a call whose stream the trace does not name (an event wait without the
    /// event's record), where the lab saw the function wait for its own stream: the other streams may be its.
    ItsStream,
    /// Not claimed, and why.
    Refused(String),
}

/// How the scene changes before the call is attributed again.
pub(crate) enum Redo {
    /// Its other streams' work is taken for its own stream's (`Check::ItsStream`).
    DeviceAsStream,
    /// Without the holders of this cause.
    Without(Cause),
}

/// Whether a call of `functions` may be said to have waited for `cause`, under what the trace `shown`.
pub(crate) fn check(functions: &[&str], cause: Cause, shown: Shown, stream_known: bool) -> Check {
    let table = capability::lab();
    let way = match cause {
        Cause::Stream => Way::Stream,
        Cause::Device => Way::Device,
        _ => Way::Thread,
    };
    match table.allows(functions, way, shown) {
        Allowed::Yes(e) => Check::Claimed(e),
        Allowed::NeverSeen(_)
            if cause == Cause::Device
                && !stream_known
                && matches!(table.allows(functions, Way::Stream, shown), Allowed::Yes(_)) =>
        {
            Check::ItsStream
        }
        Allowed::NeverSeen(entries) => Check::Refused(format!(
            "the lab never saw {} {}{} ({})",
            entries[0].function,
            way.words(),
            shown_words(shown),
            entries.iter().map(|e| e.case.as_str()).take(3).collect::<Vec<_>>().join(", ")
        )),
        Allowed::NotMeasured => {
            Check::Refused(format!("not known to wait: the lab has never measured {}", functions_words(functions)))
        }
    }
}

/// What the trace shows about the call `v` views (`loads_by_name`: its function or one it called loads a
/// module), for the lab's conditions.
pub(crate) fn shown(v: &CallView, loads_by_name: bool) -> Shown {
    let own = &v.own_work;
    // The driver's overhead records say it too: a load at a first use, a launch queue full.
    let queue_depth = capability::lab().queue_depth.unwrap_or(f64::INFINITY) as usize;
    Shown {
        pageable: own.iter().any(|w| w.pageable()),
        managed: own.iter().any(|w| w.managed()),
        module_load: v.loading() || loads_by_name,
        full_queue: v.queue_full() || v.queued_before >= queue_depth,
        host_to_host: own.iter().any(|w| matches!(w.kind, WorkKind::Copy { copy_kind: copy::HTOH, .. })),
    }
}

/// "with pageable host memory", ...: the conditions the trace shows, for a sentence.
fn shown_words(s: Shown) -> String {
    let mut parts = Vec::new();
    if s.pageable {
        parts.push("with pageable memory");
    }
    if s.managed {
        parts.push("with managed memory");
    }
    if s.module_load {
        parts.push("loading a module");
    }
    if s.full_queue {
        parts.push("with a full launch queue");
    }
    if s.host_to_host {
        parts.push("copying host to host");
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" {}", parts.join(", "))
    }
}

/// "cudaHostAlloc or cuMemHostAlloc".
fn functions_words(functions: &[&str]) -> String {
    let mut names: Vec<&str> = functions.iter().map(|f| capability::function_of(f)).collect();
    names.sort_unstable();
    names.dedup();
    names.join(" or ")
}

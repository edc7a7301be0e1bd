//! Plain-words explanations: why the measured signals give the class they give.
//!
//! Explain reads a case's setup and its result (`result::CaseResult`) and never calls the report: the report
//! calls `why` for each result it fills, and `long`'s caller passes in the result it got from the report.

use crate::record::{CaseRecord, CaseSetup};
use crate::result::CaseResult;
use crate::rules::Verdict;
use crate::setup::Family;

/// A duration given in µs, in words (`units::duration`).
fn ms(us: f64) -> String {
    crate::units::duration(us * 1e3)
}

/// What held the thread in the median repetition, in one sentence: how long, and by what ("The thread was
/// held 1.44 ms: 1.43 ms while its own work ran on the GPU (99% of that work), 8.0 µs in the call itself.").
pub fn held_sentence(r: &CaseResult) -> Option<String> {
    use crate::attribution::{Cause, OwnReading};
    let h = r.median_held()?;
    let us = |ns: i64| crate::units::duration(ns as f64);
    let mut parts = Vec::new();
    for cause in [Cause::Stream, Cause::Device, Cause::Thread, Cause::Own, Cause::Call] {
        let ns = h.ns(cause);
        if ns <= 0 {
            continue;
        }
        let what = |c: Cause| h.segments.iter().find(|s| s.cause == c).map_or(String::new(), |s| s.what.clone());
        parts.push(match cause {
            Cause::Stream => format!("{} waiting for {} in its stream", us(ns), what(cause)),
            Cause::Device => format!("{} waiting for {} on another stream (the device drained)", us(ns), what(cause)),
            Cause::Thread => format!("{} waiting for {}", us(ns), what(cause)),
            // The own work is counted from when its stream reached it (the call may have submitted it later).
            Cause::Own => match h.own_reading() {
                Some(OwnReading::Decided(share)) => {
                    format!("{} with its own work under way on the GPU ({:.0}% of that work)", us(ns), share * 100.0)
                }
                Some(OwnReading::NearTheLine(share)) => format!(
                    "{} with its own work under way on the GPU (about {:.0}% of that work)",
                    us(ns),
                    share * 100.0
                ),
                _ => format!("{} with its own work under way on the GPU", us(ns)),
            },
            Cause::Call => format!("{} in the call itself", us(ns)),
        });
    }
    let mut text = format!("The thread was held {}: {}.", us(h.total_ns), parts.join(", "));
    match h.own_reading() {
        Some(OwnReading::TooShort) => text.push_str(&format!(
            " Whether it was held through most of its own work ({}) the readings cannot tell: they decide that \
             only for work of {} or more here.",
            us(h.own_work_ns.unwrap_or(0)),
            us(h.resolved_length_ns())
        )),
        Some(OwnReading::NearTheLine(_)) => text.push_str(&format!(
            " Whether it was held through {:.0}% of its own work the readings cannot tell: the part of it left \
             after the return may lie on either side of that line.",
            crate::attribution::HELD_THROUGH * 100.0
        )),
        _ => {}
    }
    Some(text)
}

/// Why `r` got its class, in a few sentences a learner can follow.
pub fn why(s: &CaseSetup, r: &CaseResult) -> String {
    if let Some(e) = &r.error {
        return format!("Not measured: {e}");
    }
    if let Some(reason) = &r.not_run {
        return format!("Not run: {reason}.");
    }
    let Some(class) = r.class else { return "Not measured.".into() };
    let call = r.host_call_us.map_or(String::new(), |c| ms(c.median));
    let mut text = String::new();
    if s.family == Family::Wait {
        let cpu = r.metrics.cpu_fraction.unwrap_or(0.0) * 100.0;
        let lat = r.metrics.wake_latency_us.unwrap_or(f64::NAN);
        text.push_str(&format!(
            "{} waited {call} for a 100 ms kernel and used {cpu:.0}% of a CPU core meanwhile ({}); it returned about {lat:.0} µs after the kernel ended.",
            s.call,
            r.wait_style.map_or("?".into(), |w| w.to_string())
        ));
    } else if s.family == Family::Overhead {
        let m = &r.metrics;
        text.push_str(&format!(
            "{} took {call} (median of {} calls, p10–p90 {:.2}–{:.2} µs), each enqueued behind a kernel still \
             running. Only the host clocks were read between the calls, so the class below rests on no signal.",
            s.call,
            r.host_call_us.map_or(0, |c| c.n),
            m.p10_us.unwrap_or(f64::NAN),
            m.p90_us.unwrap_or(f64::NAN)
        ));
    } else {
        text.push_str(&format!("{} returned after {call}", s.call));
        let on_dst_gpu = s.family == Family::Peer && s.layout.blocker == crate::setup::BlockerPlacement::Other;
        let blocker = match (s.family, r.blocker_us) {
            (Family::Seed, _) => "the work ahead of it in the stream".to_owned(),
            (_, Some(b)) if on_dst_gpu => format!("the {} blocker on the destination GPU", ms(b)),
            (_, Some(b)) => format!("the {} blocker", ms(b)),
            (_, None) => "the blocker".to_owned(),
        };
        text.push_str(&match (r.waited_for_prior_work, s.layout.blocker_ahead) {
            (None, _) if s.family == Family::Seed => ", with nothing unfinished ahead of it in the stream".to_owned(),
            (None, _) => String::new(),
            // What released the call was another thread's call (the blocker ended inside it).
            (Some(true), _)
                if r.median_held().and_then(|h| h.released_by()).is_some_and(|s| {
                    s.cause == crate::attribution::Cause::Thread
                }) =>
            {
                format!(", after {blocker} had finished, inside another thread's call that it waited for (below)")
            }
            // Done by the return, but not measurably waited for: it ended within the resolution of the call's start.
            (Some(true), _) if r.median_held().is_some_and(|h| h.released_by().is_none()) => format!(
                ", after {blocker} had finished, but it ended within the resolution of the call's start: nothing \
                 measurable held the call for it"
            ),
            (Some(true), true) if s.family == Family::Seed => format!(", after {blocker} had finished: it waited for it"),
            (Some(true), true) => format!(", after {blocker} ahead of it had finished: it waited for the work ahead"),
            (Some(true), false) if on_dst_gpu => format!(
                ", after {blocker} had finished, work on another GPU that it does not depend on: it waited for that GPU"
            ),
            (Some(true), false) => format!(
                ", after {blocker} on another stream had finished, work it does not depend on: it waited for the whole device"
            ),
            (Some(false), _) => format!(", before {blocker} had finished: it did not wait for it"),
        });
        text.push_str(match r.complete_at_return {
            Some(true) => "; its own work was already done.",
            Some(false) => "; its own work had not finished yet.",
            None if r.has_device_work => "; whether its own work was done at the return, the readings do not decide.",
            None => "; it puts no work on the GPU.",
        });
        match r.data_captured_at_return {
            Some(true) => text.push_str(
                " Overwriting the source right after the return did not change what arrived: the driver had already copied the data into its own staging buffer.",
            ),
            Some(false) => text.push_str(
                " Overwriting the source right after the return changed what arrived: the GPU reads the caller's buffer itself, later.",
            ),
            None => {}
        }
        if s.family == Family::StreamMem {
            match r.metrics.returned_after_host_write {
                Some(true) => text.push_str(
                    " It returned only after the watchdog thread had written the value the waiting stream needed: a program that makes this call before writing that value itself hangs here.",
                ),
                Some(false) => text.push_str(
                    " It returned before the watchdog wrote the value the waiting stream needed: a program can make this call first and write the value afterwards.",
                ),
                None => {}
            }
        }
        if s.family == Family::Threads {
            let m = &r.metrics;
            let other_ms = m.other_call_us.unwrap_or(f64::NAN) / 1e3;
            // Recordings since the quick call is made inside the slow call say how far in it started.
            let into = m.started_into_other_us.map_or(String::new(), |us| format!(" for {us:.0} µs"));
            match (m.overlapped, m.waited_for_other_thread) {
                // Recordings of the older order: the other thread went in before the blocker's launch.
                (Some(false), _) if m.launch_waited_for_other_thread == Some(true) => {
                    text.push_str(&format!(
                        " The other thread's slow call ({other_ms:.1} ms) had ended before this call started: the calls this thread made while it ran (the blocker's event records and launch, on its own stream) finished only after it ended. This thread's driver calls waited for the other thread.",
                    ))
                }
                (Some(false), _) => text.push_str(
                    " The other thread's slow call did not overlap it in most repetitions: this measured nothing about threads.",
                ),
                (_, Some(true)) => {
                    text.push_str(&format!(
                        " Another thread had been inside the slow call named above ({other_ms:.1} ms){into} when it started, and it returned only after that call had ended"
                    ));
                    match m.returned_after_other_end_us {
                        Some(us) => text.push_str(&format!(" ({us:.0} µs after): it waited for the other thread.")),
                        None => text.push_str(": it waited for the other thread."),
                    }
                }
                (_, Some(false)) => text.push_str(&format!(
                    " Another thread had been inside the slow call named above ({other_ms:.1} ms){into} when it started, and it returned before that call ended: it did not wait for the other thread."
                )),
                _ => {}
            }
        }
        if r.metrics.returned_while_in_use == Some(true) {
            text.push_str(
                " It returned while a kernel queued before it was still to write into the memory it unmapped: the GPU still used the memory when the call gave it up (async-lab mapped it again at once, so the kernel ran).",
            );
        }
        if let Some(p) = &s.layout.peer {
            if p.is_loopback() {
                text.push_str(" Source and destination were on the same GPU (loopback): a check of the code, not a peer measurement.");
            } else if p.access {
                text.push_str(" Peer access was on: the copy engines can move the data across the link between the GPUs directly.");
            } else {
                text.push_str(" Peer access was off: by the Programming Guide, the data then goes through host memory (GPU → host → GPU).");
            }
            if on_dst_gpu {
                match crate::result::ordered_after_blocker(r) {
                    Some(true) => text.push_str(
                        " On the GPU the copy ran only after the destination GPU's blocker had ended (its own GPU time spans the blocker): the device ordered it after that work.",
                    ),
                    Some(false) => text.push_str(
                        " On the GPU the copy did not wait for the destination GPU's blocker (its own GPU time is far shorter).",
                    ),
                    None => {}
                }
            }
            if let Some(bw) = r.bandwidth_gb_s {
                text.push_str(&format!(
                    " On the GPU the copy took {} ({bw:.1} GB/s).",
                    r.device_us.map_or("?".into(), ms)
                ));
            }
        }
    }
    if let Some(held) = held_sentence(r) {
        text.push(' ');
        text.push_str(&held);
    }
    text.push_str(&format!(" Class: {class}."));
    match r.verdict {
        Some(Verdict::Matches) => text.push_str(&format!(" Rule {} predicts {}: it matches.", r.rule, r.expected)),
        Some(Verdict::Deviates) => text.push_str(&format!(" Rule {} predicts {}: this deviates.", r.rule, r.expected)),
        Some(Verdict::Undocumented) => {
            text.push_str(&format!(" No current rule ({}) says what to expect {}.", r.rule, r.expected))
        }
        Some(Verdict::Inconclusive) if class != crate::class::Class::Indeterminate => text.push_str(&format!(
            " Rule {} predicts {}; whether the call held the thread through its own work is below the \
             resolution, so the measurement decides nothing to hold against it.",
            r.rule, r.expected
        )),
        Some(Verdict::Inconclusive) => text.push_str(&format!(
            " Rule {} predicts {}; the measurement decides nothing to hold against it.",
            r.rule, r.expected
        )),
        None => {}
    }
    if !r.unresolved.is_empty() {
        let n = r.classes.iter().filter(|&&c| c == crate::class::Class::Indeterminate).count();
        text.push_str(&format!(
            " In {n} of {} repetitions the readings decided nothing: {}.",
            r.classes.len(),
            r.unresolved.join("; ")
        ));
    }
    if r.agreement < 1.0 && !r.classes.is_empty() {
        let n = r.classes.iter().filter(|&&c| c == class).count();
        text.push_str(&format!(" ({n} of {} repetitions agree.)", r.classes.len()));
    }
    text
}

/// The source file that holds an experiment family.
pub fn source_file(family: Family) -> &'static str {
    match family {
        Family::Copy | Family::Sweep => "host/src/experiments/copies.rs",
        Family::Memset => "host/src/experiments/memset.rs",
        Family::Launch => "host/src/experiments/launches.rs",
        Family::Load => "host/src/experiments/loading.rs",
        Family::Alloc => "host/src/experiments/alloc.rs",
        Family::Callback => "host/src/experiments/callbacks.rs",
        Family::Wait => "host/src/experiments/waiting.rs",
        Family::Seed => "host/src/experiments/seed.rs",
        Family::Peer => "host/src/experiments/peer.rs",
        Family::Overhead => "host/src/experiments/overhead.rs",
        Family::Graph => "host/src/experiments/graphs.rs",
        Family::Unified => "host/src/experiments/unified.rs",
        Family::Limits => "host/src/experiments/limits.rs",
        Family::StreamMem => "host/src/experiments/streammem.rs",
        Family::Vmm => "host/src/experiments/vmm.rs",
        Family::Batch => "host/src/experiments/batched.rs",
        Family::Threads => "host/src/experiments/threads.rs",
    }
}

/// `async-lab explain`: everything about one experiment, for a learner. `r`: the experiment's result
/// (`report::result` of the same record and fit); `fit`: the run's clock fit, which places the GPU's times on
/// the host clock.
pub fn long(record: &CaseRecord, r: &CaseResult, fit: Option<&crate::clock::ClockFit>) -> String {
    let s = &record.setup;
    let mut t = format!("{}\n\n", s.id);
    t.push_str(&format!("What it does: {}.\n", s.what));
    let twin = s
        .case
        .as_ref()
        .and_then(crate::catalogue::presets::through_other_api)
        .map(|t| format!(" The same case through the {} API: {}.", t.api, t.id()));
    t.push_str(&format!("API: {} ({}).{}\n", s.api, s.call, twin.unwrap_or_default()));
    match crate::rules::rule(&r.rule) {
        Some(rule) => t.push_str(&format!("Rule {} ({}): {}.\n", rule.id, rule.case, rule.documented)),
        None => t.push_str(&format!("Rule {}.\n", r.rule)),
    }
    if let Some(reason) = &record.skipped {
        t.push_str(&format!("Expected: {}.\n\nNot run on this machine: {reason}.\n", r.expected));
        t.push_str(&format!("\nThe code: {} (the call).\n", source_file(s.family)));
        return t;
    }
    t.push_str(&format!("Expected: {}.\n\nMeasured ({} repetitions):\n", r.expected, record.reps.len()));
    for (i, (rep, class)) in record.reps.iter().zip(&r.classes).enumerate() {
        let b = |v: Option<bool>| v.map_or("-", |x| if x { "yes" } else { "no" });
        // When each query was asked, after the return: what dates its answer (see `timing`).
        let asked = |q: Option<[u64; 2]>| {
            q.map_or(String::new(), |[q0, _]| {
                format!(" (asked +{:.1} µs)", (q0 as f64 - rep.host_call_ns as f64) / 1e3)
            })
        };
        t.push_str(&format!(
            "  #{:<2} call {:>10.1} µs, cpu {:>10.1} µs, blocker done at return: {:<3}{}, own work done: {:<3}{}, data staged: {:<3} -> {class} (held for: {})\n",
            i + 1,
            rep.host_call_ns as f64 / 1e3,
            rep.host_cpu_ns as f64 / 1e3,
            b(rep.blocker_done_at_return),
            asked(rep.blocker_query_ns.filter(|_| rep.blocker_done_at_return.is_some())),
            b(rep.op_done_at_return),
            asked(rep.op_query_ns.filter(|_| rep.op_done_at_return.is_some())),
            b(rep.data_captured_at_return),
            r.held.get(i).map_or("-".to_owned(), |h| h.summary()),
        ));
        // Where the GPU's times put the ends, relative to the return (only where bounded on both sides).
        let times = crate::timing::RepTimes::of(rep, fit);
        let span = |name: &str, iv: crate::timing::Interval| {
            (iv.lo != i64::MIN && iv.hi != i64::MAX).then(|| {
                let us = |ns: i64| (ns - times.ret) as f64 / 1e3;
                format!("{name} {:+.1}…{:+.1} µs", us(iv.lo), us(iv.hi))
            })
        };
        let placed: Vec<String> = [
            span("blocker ended", times.blocker_end),
            span("the end event after its work (no earlier than the work ended)", times.op_end),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !placed.is_empty() {
            t.push_str(&format!("      on the GPU's clock, from the return: {}\n", placed.join(", ")));
        }
    }
    if let Some(fit) = fit.filter(|_| record.reps.iter().any(|r| r.op_query_ns.is_some())) {
        t.push_str(&format!(
            "  A query asked within {:.1} µs of the return (the clock fit's uncertainty) counts as asked at the return.\n",
            fit.uncertainty_ns as f64 / 1e3
        ));
    }
    t.push_str(&format!("\nWhy: {}\n", why(s, r)));
    t.push_str(&format!(
        "\nThe code: {} (the call), host/src/experiments/method.rs (the protocol), core/src/classify.rs (the class).\n",
        source_file(s.family)
    ));
    t
}

//! `async-lab explain`: everything about one experiment for a learner (its rule, each repetition's readings,
//! why it got its class), and the source file that measures each family.

use super::why;
use crate::record::CaseRecord;
use crate::result::CaseResult;
use crate::setup::Family;

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

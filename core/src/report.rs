//! From a recording to results: the class, verdict, statistics and a plain-words explanation of each
//! experiment. Live runs and `--replay` both come through here.
//!
//! The layering (`docs/crates.md`): a result is plain data (`result::CaseResult`, re-exported here); the
//! report fills it and asks `explain` for its words. `explain` reads results and never calls the report.

use crate::attribution::Held;
use crate::classify::{decide, majority, Class};
use crate::clock::ClockFit;
use crate::machine::MachineInfo;
use crate::record::{CaseRecord, CaseSetup, Recording, Rep, SCHEMA_VERSION};
use crate::rules::{verdict, Expected, Verdict, WaitStyle};
use crate::setup::{BlockerPlacement, Family};
use crate::setup::{CallTiming, Direction, HostKind};
use crate::stats::Spread;
use crate::timing::{Reading, RepTimes};
use crate::units::format_size;

pub use crate::result::{ordered_after_blocker, CaseResult};
use serde::Serialize;
use std::collections::BTreeMap;

/// A run's results and where they were measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub tool: &'static str,
    pub preset: String,
    pub created: String,
    pub partial: bool,
    pub reps_per_case: usize,
    pub machine: MachineInfo,
    pub results: Vec<CaseResult>,
    pub summary: Summary,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub matches: usize,
    pub deviates: usize,
    pub undocumented: usize,
    /// Experiments whose readings decide nothing to hold against their rule: no class (`indeterminate`), or a
    /// rule that predicts `blocking` where the hold of the call's own work is too short to measure.
    pub inconclusive: usize,
    pub errors: usize,
    /// Experiments this machine could not run (with the reasons, each once).
    pub not_run: usize,
    pub not_run_reasons: Vec<String>,
    /// Facts drawn from several experiments (sweep crossover, queue depth, ...), in plain words.
    pub findings: Vec<String>,
}

pub fn build(rec: &Recording) -> Report {
    let fit = rec.clock_fit();
    let results: Vec<CaseResult> = rec.cases.iter().map(|c| result(c, fit.as_ref())).collect();
    let mut summary = Summary::default();
    for r in &results {
        if let Some(reason) = &r.not_run {
            summary.not_run += 1;
            if !summary.not_run_reasons.contains(reason) {
                summary.not_run_reasons.push(reason.clone());
            }
            continue;
        }
        match (r.verdict, &r.error) {
            (_, Some(_)) => summary.errors += 1,
            (Some(Verdict::Matches), _) => summary.matches += 1,
            (Some(Verdict::Deviates), _) => summary.deviates += 1,
            (Some(Verdict::Undocumented), _) => summary.undocumented += 1,
            (Some(Verdict::Inconclusive), _) => summary.inconclusive += 1,
            (None, None) => {}
        }
    }
    summary.findings = findings(&results);
    Report {
        schema_version: SCHEMA_VERSION,
        tool: "async-lab",
        preset: rec.preset.clone(),
        created: rec.created.clone(),
        partial: rec.partial,
        reps_per_case: rec.reps_per_case,
        machine: rec.machine.clone(),
        results,
        summary,
    }
}

fn median_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.collect();
    crate::stats::median(&mut v)
}

fn majority_bool(values: impl Iterator<Item = Option<bool>>) -> Option<bool> {
    let v: Vec<bool> = values.flatten().collect();
    if v.is_empty() {
        return None;
    }
    let yes = v.iter().filter(|&&b| b).count();
    Some(yes * 2 >= v.len())
}

/// The clock fit that places a case's GPU times: the run's, except for a blocker on another GPU, which keeps
/// another clock (the run's fit is of the call's GPU).
fn case_fit<'f>(s: &CaseSetup, fit: Option<&'f ClockFit>) -> Option<&'f ClockFit> {
    fit.filter(|_| s.family != Family::Peer)
}

/// What the blocker is called in a case's words: the seed's is the work of the step before.
fn blocker_words(s: &CaseSetup) -> &'static str {
    if s.family == Family::Seed {
        "the work ahead"
    } else {
        "the blocker"
    }
}

/// One repetition of a case decided as the report decides it: its class and what held the thread (for the
/// timelines, which draw one repetition).
pub fn decided(case: &CaseRecord, rep: &Rep, fit: Option<&ClockFit>) -> (Class, Held) {
    let s = &case.setup;
    decide(&RepTimes::of(rep, case_fit(s, fit)), rep, s.layout.blocker_ahead, blocker_words(s))
}

/// One experiment's outcome; `fit` (the run's clock fit) places the GPU's times on the host clock.
pub fn result(case: &CaseRecord, fit: Option<&ClockFit>) -> CaseResult {
    let setup = with_todays_rule(&case.setup);
    let s = &setup;
    let reps = &case.reps;
    let fit = case_fit(s, fit);
    let times: Vec<RepTimes> = reps.iter().map(|r| RepTimes::of(r, fit)).collect();
    let readings = |f: fn(&RepTimes, &Rep) -> Option<Reading>| {
        reps.iter().zip(&times).map(move |(r, t)| f(t, r)).collect::<Vec<_>>()
    };
    let (blocker_readings, op_readings) = (readings(RepTimes::blocker), readings(RepTimes::op));
    // Each repetition's class and the attribution it rests on (what held the thread, and for how long).
    let (classes, held): (Vec<Class>, Vec<Held>) =
        reps.iter().zip(&times).map(|(r, t)| decide(t, r, s.layout.blocker_ahead, blocker_words(s))).unzip();
    let unresolved = unresolved(&blocker_readings, &op_readings, &classes);
    let before = |v: &[Option<Reading>]| {
        majority_bool(v.iter().map(|r| match r {
            Some(Reading::Before) => Some(true),
            Some(Reading::After) => Some(false),
            _ => None,
        }))
    };
    let (class, agreement) = match majority(&classes) {
        Some((c, a)) => (Some(c), a),
        None => (None, 0.0),
    };
    let wait_style = (s.family == Family::Wait && !reps.is_empty()).then(|| {
        let cpu = median_of(reps.iter().map(|r| r.host_cpu_ns as f64)).unwrap_or(0.0);
        let wall = median_of(reps.iter().map(|r| r.host_call_ns as f64)).unwrap_or(0.0);
        WaitStyle::from_times(cpu, wall)
    });
    let mut r = CaseResult {
        api: s.api,
        id: s.id.clone(),
        family: s.family,
        call: s.call.clone(),
        rule: s.rule.clone(),
        class,
        expected: s.expected.clone(),
        verdict: class.map(|c| verdict_of(s, c, wait_style, &held)),
        classes,
        agreement,
        held_for: crate::stats::median_index(reps, |r| r.host_call_ns).map_or(String::new(), |i| held[i].summary()),
        resolution_us: median_of(held.iter().map(|h| h.resolution_ns as f64 / 1e3)),
        held,
        host_call_us: Spread::of(&reps.iter().map(|r| r.host_call_ns as f64 / 1e3).collect::<Vec<_>>()),
        host_cpu_us: median_of(reps.iter().map(|r| r.host_cpu_ns as f64 / 1e3)),
        waited_for_prior_work: before(&blocker_readings),
        complete_at_return: before(&op_readings),
        has_device_work: reps.iter().any(|r| r.op_done_at_return.is_some()),
        unresolved,
        data_captured_at_return: majority_bool(reps.iter().map(|r| r.data_captured_at_return)),
        device_us: median_of(reps.iter().filter_map(|r| r.op_device_ns).map(|n| n as f64 / 1e3)),
        blocker_us: median_of(reps.iter().filter_map(|r| r.blocker_device_ns).map(|n| n as f64 / 1e3)),
        bytes: s.layout.bytes,
        wait_style,
        metrics: crate::metrics::Metrics::medians(reps.iter().map(|r| &r.metrics)),
        what: s.what.clone(),
        explanation: String::new(),
        error: case.error.clone(),
        not_run: case.skipped.clone(),
        bandwidth_gb_s: None,
        peer: s.layout.peer,
        blocker: s.layout.blocker,
        host_memory: s.layout.host_memory,
        direction: s.layout.direction,
        timing: s.layout.timing,
    };
    r.bandwidth_gb_s = bandwidth_gb_s(s, r.device_us);
    if case.error.is_none() && case.skipped.is_none() && reps.is_empty() {
        r.error = Some("no repetitions were measured".into());
    }
    r.explanation = crate::explain::why(s, &r);
    r
}

/// `setup` with what today's rules predict for its facts (a recording keeps its facts; one made before it did
/// gets them when read, where the catalogue still knows the case).
fn with_todays_rule(setup: &CaseSetup) -> CaseSetup {
    let mut setup = setup.clone();
    if let Some(case) = &setup.case {
        let (rule, expected) = case.rule();
        setup.rule = rule.to_owned();
        setup.expected = expected;
    }
    setup
}

/// What left repetitions undecided, each said once: the blocker's and the own work's unresolved readings of
/// the repetitions whose class is `indeterminate`.
fn unresolved(blocker: &[Option<Reading>], op: &[Option<Reading>], classes: &[Class]) -> Vec<String> {
    let mut unresolved: Vec<String> = blocker
        .iter()
        .chain(op)
        .zip(classes.iter().chain(classes))
        .filter_map(|(r, &c)| match r {
            // Only what left a repetition undecided.
            Some(Reading::Unresolved(u)) if c == Class::Indeterminate => Some(u.as_str().to_string()),
            _ => None,
        })
        .collect();
    unresolved.sort();
    unresolved.dedup();
    unresolved
}

/// The rule's verdict on `class`, which `held` (each repetition's attribution) may leave inconclusive.
fn verdict_of(s: &CaseSetup, class: Class, wait_style: Option<WaitStyle>, held: &[Held]) -> Verdict {
    let v = verdict(&s.expected, class, wait_style);
    // Whether, in most repetitions, the call had work of its own whose hold the readings could not resolve.
    let own_unresolved =
        2 * held.iter().filter(|h| h.own_work_ns.is_some() && h.held_through_own_work().is_none()).count() > held.len();
    // A rule that predicts `blocking` cannot be held against a call whose hold of its own work the
    // readings could not resolve (its work too short for the clocks): that part decides nothing.
    let blocking_expected = matches!(&s.expected, Expected::Classes { classes } if classes.contains(&Class::Blocking));
    if v == Verdict::Deviates && blocking_expected && own_unresolved && class.returns_at_once() {
        Verdict::Inconclusive
    } else {
        v
    }
}

/// The copy's bandwidth on the GPU, from its own GPU time `device_us`. Bytes per nanosecond are GB/s. Only
/// where the copy's events bracket a DMA transfer alone: between GPUs, between device buffers, or with
/// page-locked host memory. Pageable copies' events also span the driver's staging, managed copies page
/// migration, host-to-host copies no GPU work at all.
fn bandwidth_gb_s(s: &CaseSetup, device_us: Option<f64>) -> Option<f64> {
    let dma = match s.family {
        Family::Peer => true,
        Family::Copy | Family::Sweep => {
            s.layout.direction != Some(Direction::HtoH)
                && matches!(
                    s.layout.host_memory,
                    None | Some(HostKind::Pinned | HostKind::Registered | HostKind::WriteCombined)
                )
        }
        _ => false,
    };
    if dma && s.layout.blocker == BlockerPlacement::Same && s.layout.bytes > 0 {
        device_us.filter(|&us| us > 0.0).map(|us| s.layout.bytes as f64 / (us * 1e3))
    } else {
        None
    }
}

/// Facts across experiments: where pageable copies stop returning at once, how deep the launch queue is.
fn findings(results: &[CaseResult]) -> Vec<String> {
    let mut out = Vec::new();
    for api in crate::api::Api::ALL {
        // Findings per API; the runtime's say so.
        let of_api: Vec<&CaseResult> = results.iter().filter(|r| r.api == api).collect();
        let tag = if api == crate::api::Api::Runtime { "through the runtime: " } else { "" };
        for line in api_findings(&of_api) {
            out.push(format!("{tag}{line}"));
        }
    }
    let differ: Vec<String> = crate::result::between_apis_results(results)
        .into_iter()
        .filter(|r| r.both_classified && !r.same_class())
        .map(|r| format!("{} ({} {} / {} {})", r.id, r.driver_call, r.driver, r.runtime_call, r.runtime))
        .collect();
    if !differ.is_empty() {
        out.push(format!(
            "{} case(s) fall in a different class through the runtime than through the driver: {}",
            differ.len(),
            differ.join("; ")
        ));
    }
    out.extend(peer_findings(results));
    // A call that gave memory up while the GPU still had to use it (the virtual memory family).
    for r in results.iter().filter(|r| r.metrics.returned_while_in_use == Some(true)) {
        out.push(format!(
            "{} ({}) returned while queued GPU work still had to use the memory it unmapped: the call does not wait \
             for that work",
            r.id, r.call
        ));
    }
    out
}

/// The sweep and launch-queue findings among the results of one API.
fn api_findings(results: &[&CaseResult]) -> Vec<String> {
    let mut out = Vec::new();
    for dir in [Direction::HtoD, Direction::DtoH] {
        let mut sweep: Vec<&CaseResult> = results
            .iter()
            .copied()
            .filter(|r| r.family == Family::Sweep && r.direction == Some(dir))
            .filter(|r| r.host_memory == Some(HostKind::Pageable) && r.class.is_some())
            .collect();
        sweep.sort_by_key(|r| r.bytes);
        if sweep.is_empty() {
            continue;
        }
        let dir_words = if dir == Direction::HtoD { "host → device" } else { "device → host" };
        match sweep.iter().find(|r| !matches!(r.class, Some(Class::Async | Class::Staged))) {
            Some(first) => out.push(format!(
                "pageable {dir_words} copies stop returning at once from {} (class {} there; {})",
                format_size(first.bytes),
                first.class.unwrap(),
                match sweep.iter().take_while(|r| r.bytes < first.bytes).last() {
                    Some(r) => format!("{} and below returned before the work ahead finished", format_size(r.bytes)),
                    None => "already at the smallest size measured".to_owned(),
                }
            )),
            None => out.push(format!(
                "pageable {dir_words} copies returned at once at every size measured (up to {})",
                format_size(sweep.last().unwrap().bytes)
            )),
        }
    }
    // The cases that filled the launch queue (their metrics say so): the kernel launches' (launch family), and a
    // graph launch's (graph family).
    let measured_queue = |r: &&&CaseResult| r.metrics.queue_depth.is_some() || r.metrics.queue_depth_at_least.is_some();
    for (family, what) in [(Family::Launch, "launch"), (Family::Graph, "graph launch")] {
        let Some(q) = results.iter().filter(|r| r.family == family).find(measured_queue) else { continue };
        let m = &q.metrics;
        if let Some(d) = m.queue_depth {
            out.push(format!(
                "{} held {d:.0} pending launches; the next {what} waited {:.0} µs (until the blocker ended); {what}es took {:.1} µs before the queue was full and {:.1} µs after",
                if family == Family::Launch { "the launch queue".to_owned() } else { format!("with {}, the launch queue", q.call) },
                m.launch_us_blocked.unwrap_or(f64::NAN),
                m.launch_us_before_full.unwrap_or(f64::NAN),
                m.launch_us_after_full.unwrap_or(f64::NAN)
            ));
        } else if let Some(d) = m.queue_depth_at_least {
            out.push(format!("the launch queue held at least {d:.0} pending {what}es without blocking"));
        }
    }
    // async-lab's own overhead (`--preset overhead`), to set beside the C++ reference's `--overhead`.
    let overhead: Vec<String> = results
        .iter()
        .filter(|r| r.family == Family::Overhead && r.error.is_none())
        .filter_map(|r| {
            let m = &r.metrics;
            let what = if r.bytes > 0 { format_size(r.bytes) } else { "empty".to_owned() };
            Some(format!(
                "{} {what}{} median {:.2} µs (p10–p90 {:.2}–{:.2})",
                r.call,
                if r.timing == CallTiming::WallClockOnly { " (wall clock alone)" } else { "" },
                m.median_us?,
                m.p10_us?,
                m.p90_us?
            ))
        })
        .collect();
    if !overhead.is_empty() {
        out.push(format!("enqueue overhead: {}", overhead.join(", ")));
    }
    out
}

/// One line per peer call and access setting: the classes over every pair and size, the bandwidth at the
/// largest size per pair, and whether the call waited for work on the destination GPU.
fn peer_findings(results: &[CaseResult]) -> Vec<String> {
    let measured: Vec<&CaseResult> = results
        .iter()
        .filter(|r| r.family == Family::Peer && r.class.is_some())
        .filter(|r| r.peer.is_some_and(|p| p.src_gpu.is_some() && !p.is_loopback()))
        .collect();
    let mut out = Vec::new();
    let mut calls: Vec<&str> = measured.iter().map(|r| r.call.as_str()).collect();
    calls.dedup();
    calls.sort();
    calls.dedup();
    for call in calls {
        for access in [true, false] {
            let group: Vec<&&CaseResult> =
                measured.iter().filter(|r| r.call == call && r.peer.is_some_and(|p| p.access == access)).collect();
            let (dst, same): (Vec<&&CaseResult>, Vec<&&CaseResult>) =
                group.iter().partition(|r| r.blocker == BlockerPlacement::Other);
            if same.is_empty() && dst.is_empty() {
                continue;
            }
            let mut parts = Vec::new();
            if !same.is_empty() {
                let mut counts: BTreeMap<Class, usize> = BTreeMap::new();
                for r in &same {
                    *counts.entry(r.class.unwrap()).or_default() += 1;
                }
                let classes: Vec<String> = counts.iter().map(|(c, n)| format!("{c} in {n}")).collect();
                parts.push(format!("{} of {} experiments (pairs × sizes)", classes.join(", "), same.len()));
                let largest = same.iter().map(|r| r.bytes).max().unwrap_or(0);
                let bandwidth: Vec<String> = same
                    .iter()
                    .filter(|r| r.bytes == largest)
                    .filter_map(|r| {
                        let p = r.peer?;
                        Some(format!("GPU {} → {} {:.1} GB/s", p.src_gpu?, p.dst_gpu?, r.bandwidth_gb_s?))
                    })
                    .collect();
                if !bandwidth.is_empty() {
                    parts.push(format!("at {}: {}", format_size(largest), bandwidth.join(", ")));
                }
            }
            if !dst.is_empty() {
                let waited = dst.iter().filter(|r| r.waited_for_prior_work == Some(true)).count();
                let ordered = dst.iter().filter(|r| ordered_after_blocker(r) == Some(true)).count();
                parts.push(format!(
                    "with a blocker on the destination GPU, the host waited for it in {waited} of {n} experiments, \
                     and the GPU ran the copy after it in {ordered} of {n}",
                    n = dst.len()
                ));
            }
            let line = format!("{call} with peer access {}: {}", if access { "on" } else { "off" }, parts.join("; "));
            out.push(line);
        }
    }
    out
}

/// The reason none of `results` was run, when they all share one (outputs then say it once for the group).
pub fn common_not_run<'r>(results: impl IntoIterator<Item = &'r CaseResult>) -> Option<&'r str> {
    let mut results = results.into_iter();
    let first = results.next()?.not_run.as_deref()?;
    results.all(|r| r.not_run.as_deref() == Some(first)).then_some(first)
}

/// The setup of the experiment with this id in a recording.
pub fn find_setup<'a>(rec: &'a Recording, id: &str) -> Option<&'a CaseSetup> {
    rec.cases.iter().map(|c| &c.setup).find(|s| s.id == id)
}

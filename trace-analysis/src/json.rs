//! `async-lab trace --format json`: every held call with its class, its time segment by segment, what the
//! class rests on, where it was made, its stream and bytes, and the summaries (the by-location table,
//! totals), for a CI job or a script to read. The schema is versioned ([`SCHEMA`], [`VERSION`]) and
//! documented by a JSON Schema generated from these types (`schema`, behind the `schema` feature), committed as
//! `docs/trace-report.schema.json`.
//!
//! Times are ns on the trace's clock (CUPTI's); a call's `start_ns` is the same number as in the trace.

use super::analysis::Analysis;
use super::by_location::ByLocation;
use super::calls::Traced;
use super::capability::{Condition, Way};
use super::cause::{self, Kind};
use super::findings::Finding;
use super::format::Domain;
use super::framework::Framework;
use super::gate::Gate;
use super::headline::Headline;
use super::location::Place;
use super::once::Once;
use super::records::{Work, WorkKind};
use super::remedy::{self, Remedy};
use serde::{Deserialize, Serialize};

/// The report's `schema` field.
pub const SCHEMA: &str = "async-lab-trace-report";
/// The report's version: a field's meaning never changes within one; a reader checks it. Version 2 added
/// each process's `headline` and `findings`, the classes `driver-work` and `unknown`, a place's `own`,
/// `text`, `chain`, `via` and `nvtx`, and the place's largest cause's `what_ns` (its `what` is now the work
/// that held that cause most, no longer its longest segment's). Version 3: `driver-work` is any call that
/// waited for nothing and took longer than 20 µs (it was 1 ms: such calls read `async`); what is paid once is
/// recognised by its cause (`once`) wherever it happens, and kept out of the by-location rows (their
/// `paid_once`); each held call says what held it as a finding names it (`kind`), whether it is paid once
/// (`once`) or warm-up, its framework and its remedy; findings have new kinds and a `framework`; the verdict
/// has a `remedy`; the report carries `--fail-on-held`'s outcome (`gate`). Also in version 3: a place's `via`
/// may have no `corr` (`how: waiting`, a Python thread waiting outside any CUDA call) and says `none_waiting`; a
/// place may be `inferred` (the same call site's); threads carry their `name`, the headline's threads whether
/// each is a `helper` (and of which thread) and each part's time `waiting_for_helpers`; a finding's and a
/// by-location row's `inferred_calls`.
pub const VERSION: u32 = 3;

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Report {
    /// Always `async-lab-trace-report`.
    pub schema: String,
    /// The schema's version (3).
    pub version: u32,
    /// Calls that held their thread longer than this are listed (`--min-held`).
    pub min_held_ns: i64,
    /// Whether start-up calls were left out of the lists (`--after-startup`).
    pub after_startup: bool,
    /// The program's first steps counted as warm-up (`--skip-first`).
    pub skip_first: usize,
    /// One per traced process, in the trace's order.
    pub processes: Vec<Process>,
    /// `--fail-on-held`'s outcome (`None`: no limit was given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
}

/// One process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Process {
    pub pid: u32,
    /// Its command line.
    pub program: Vec<String>,
    /// Its trace was cut short (no `end` line): it holds what was written before.
    pub partial: bool,
    /// GPU records CUPTI dropped (its buffers were full).
    pub dropped_records: u64,
    /// Each thread's time: held by CUDA (by cause), inside calls that returned at once, outside CUDA calls;
    /// warm-up apart; and the verdict.
    pub headline: Headline,
    /// The calls held by CUDA grouped by place and cause, each with a remedy, the steady state's first.
    pub findings: Vec<Finding>,
    /// The calls held longer than `min_held_ns`, longest first.
    pub held_calls: Vec<HeldCall>,
    pub by_location: ByLocation,
    pub totals: Totals,
}

/// A process's numbers in all.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Totals {
    /// Its API calls (driver calls inside runtime calls folded in).
    pub calls: usize,
    /// Of them, held longer than `min_held_ns` (start-up left out with `after_startup`).
    pub held_calls: usize,
    /// Their time held in all.
    pub held_ns: i64,
    pub startup_calls: usize,
    /// The start-up calls' host time in all.
    pub startup_ns: i64,
}

/// One held call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HeldCall {
    /// Its correlation id (what `--explain` takes).
    pub corr: u32,
    /// The API function.
    pub name: String,
    /// `runtime` or `driver`.
    pub domain: String,
    pub thread: u64,
    /// The thread's name as the system gives it, where the trace says (format 5: `pt_autograd_0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_name: Option<String>,
    pub start_ns: i64,
    pub end_ns: i64,
    /// How long it held its thread.
    pub held_ns: i64,
    /// Its class, as the lab's experiments name them.
    pub class: String,
    /// What held it, in words.
    pub what_held_it: String,
    /// A start-up call (context creation, module loading before the first enqueue).
    pub startup: bool,
    /// Why it is paid once, where it is (`trace::once`: context creation, loading code, compiling, a library's
    /// setup, the allocator's growth, the upload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub once: Option<Once>,
    /// Warm-up: paid once, or made in the steps `--skip-first` counts as warm-up.
    pub warm_up: bool,
    /// What held it, as its finding names it.
    pub kind: Kind,
    /// The framework it was made through, in whose API the remedy is worded.
    pub framework: Framework,
    /// What to change, and what the lab measured of it.
    pub remedy: Remedy,
    /// Its innermost user frame.
    pub location: Place,
    /// The stream it worked in or synchronized, where it has one.
    pub stream: Option<u32>,
    /// The bytes its own copies and memsets moved.
    pub bytes: u64,
    /// Its time, split by what held the thread, in time order.
    pub segments: Vec<Segment>,
    pub evidence: Evidence,
}

/// One stretch of a call's time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Segment {
    /// `stream`, `device`, `thread`, `own` or `call`.
    pub cause: String,
    pub start_ns: i64,
    pub end_ns: i64,
    /// What it waited for, in words (empty for `own` and `call`).
    pub what: String,
}

/// What a call's class rests on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Evidence {
    /// Its own GPU work (the records with its correlation ids).
    pub own_work: Vec<GpuWork>,
    /// The driver calls made inside it.
    pub driver_calls: Vec<String>,
    /// Module loads on its thread while it ran (lazy loading).
    pub module_loads: usize,
    /// What released it: the last thing it waited for, in words.
    pub released_by: Option<String>,
    /// The share of its own GPU work during which its thread was held, where the readings resolve it.
    pub own_share: Option<f64>,
    /// What held the thread, in a few words ("38.0 ms for its stream · own work below resolution").
    pub summary: String,
    /// The lab's experiment that shows the call's function waits the way it waited (`None`: it waited for
    /// nothing): its case id, the recording it is in, and the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab_experiment: Option<LabExperiment>,
    /// Work that ran during the call and was not waited for (no sign of release after it, or a wait the lab
    /// never saw its function make), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlapped: Vec<String>,
    /// Waits found and not claimed, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_claimed: Vec<String>,
}

/// The experiment behind a claimed wait (`trace::capability`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LabExperiment {
    pub case: String,
    pub recording: String,
    pub rule: String,
    /// How it waited: `stream`, `device`, `thread`.
    pub way: Way,
    /// Under what condition the lab saw it: `always`, `pageable-memory`, `module-load`, ...
    pub condition: Condition,
}

/// One GPU record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuWork {
    /// `kernel`, `copy` or `memset`.
    pub kind: String,
    /// In words ("the 2GiB host → device copy (pinned → device)").
    pub what: String,
    pub stream: u32,
    pub corr: u32,
    pub start_ns: i64,
    pub end_ns: i64,
    pub bytes: u64,
}

impl GpuWork {
    pub fn of(w: &Work) -> GpuWork {
        let kind = match w.kind {
            WorkKind::Kernel { .. } => "kernel",
            WorkKind::Copy { .. } => "copy",
            WorkKind::Memset => "memset",
        };
        GpuWork {
            kind: kind.into(),
            what: w.words(),
            stream: w.stream,
            corr: w.corr,
            start_ns: w.span.start,
            end_ns: w.span.end,
            bytes: w.bytes,
        }
    }
}

/// The report of a trace's processes, each analysed (`Analysis::all`): calls held longer than `min_held_ns`,
/// start-up left out with `after_startup`, the first `skip_first` steps counted as warm-up.
pub fn report(analyses: &[Analysis], min_held_ns: i64, after_startup: bool, skip_first: usize) -> Report {
    let processes = analyses.iter().map(|a| process(a, min_held_ns, after_startup, skip_first)).collect();
    Report { schema: SCHEMA.into(), version: VERSION, min_held_ns, after_startup, skip_first, processes, gate: None }
}

/// One process's part of the report.
pub fn process(a: &Analysis, min_held_ns: i64, after_startup: bool, skip_first: usize) -> Process {
    let warm = super::warmup::warm_up(a, skip_first);
    let held: Vec<HeldCall> = a
        .held(min_held_ns, after_startup)
        .into_iter()
        .map(|t| HeldCall { warm_up: warm.calls[t.index], ..held_call(a, t) })
        .collect();
    let up: Vec<&Traced> = a.traced.iter().filter(|t| a.startup[t.index]).collect();
    let totals = Totals {
        calls: a.program.calls_made(0),
        held_calls: held.len(),
        held_ns: held.iter().map(|h| h.held_ns).sum(),
        startup_calls: up.len(),
        startup_ns: up.iter().map(|t| a.program.calls[t.index].span.len()).sum(),
    };
    Process {
        pid: a.process.pid,
        program: a.process.program.clone(),
        partial: a.process.partial,
        dropped_records: a.program.dropped,
        headline: super::headline::headline(a, &warm, &super::headline::totals(&a.program)),
        findings: super::findings::findings(a, &warm, after_startup),
        held_calls: held,
        by_location: a.by_location(min_held_ns, after_startup),
        totals,
    }
}

/// One call's entry (warm-up where it is paid once).
pub fn held_call(a: &Analysis, t: &Traced) -> HeldCall {
    let c = &a.program.calls[t.index];
    let own = a.program.own_work(t.index);
    let kind = cause::kind(a, t.index);
    let framework = a.framework_of(t.index);
    HeldCall {
        corr: c.corr,
        name: c.name.clone(),
        domain: match c.domain {
            Domain::Runtime => "runtime".into(),
            Domain::Driver => "driver".into(),
        },
        thread: c.tid,
        thread_name: a.program.threads.name(c.tid).map(str::to_owned),
        start_ns: c.span.start,
        end_ns: c.span.end,
        held_ns: t.held.total_ns,
        class: t.class.as_str().into(),
        what_held_it: t.cause.clone(),
        startup: a.startup[t.index],
        once: a.once[t.index],
        warm_up: a.paid_once(t.index),
        kind,
        framework,
        remedy: remedy::remedy(a, kind, &[t.index], framework),
        location: a.places[t.index].clone(),
        stream: a.program.stream_of(t.index),
        bytes: own.iter().map(|w| w.bytes).sum(),
        segments: t
            .held
            .segments
            .iter()
            .map(|s| Segment {
                cause: s.cause.slug().into(),
                start_ns: s.span.start,
                end_ns: s.span.end,
                what: s.what.clone(),
            })
            .collect(),
        evidence: Evidence {
            own_work: own.iter().map(|w| GpuWork::of(w)).collect(),
            driver_calls: c.inner.clone(),
            module_loads: t.module_loads,
            released_by: t.held.released_by().map(|s| s.what.clone()),
            own_share: t.held.own_share(),
            summary: t.held.summary(),
            lab_experiment: t.basis.as_ref().map(|e| LabExperiment {
                case: e.case.clone(),
                recording: e.recording.clone(),
                rule: e.rule.clone(),
                way: e.way,
                condition: e.condition,
            }),
            overlapped: t.held.overlapped.iter().map(|o| o.what.clone()).collect(),
            not_claimed: t.not_claimed.iter().map(|n| format!("{}: {}", super::words::cause(n.cause), n.why)).collect(),
        },
    }
}

/// The JSON Schema of [`Report`], as committed in `docs/trace-report.schema.json` (the `schema` feature, which
/// the core turns on: the injection library's gate makes reports, never their schema).
#[cfg(feature = "schema")]
pub fn schema() -> String {
    let schema = schemars::schema_for!(Report);
    serde_json::to_string_pretty(&schema).expect("a schema serializes") + "\n"
}

//! One experiment's outcome as plain data, and what can be read off outcomes alone.
//!
//! `report` fills a `CaseResult` from a recording; `explain` puts it into words and `compare`, `output`,
//! `html` and `stability` show it. Keeping the type below all of them is what lets the report call
//! `explain` without `explain` calling the report (`docs/crates.md`).

use crate::class::Class;
use crate::rules::{Expected, Verdict, WaitStyle};
use crate::setup::{BlockerPlacement, Family, PeerSetup};
use crate::setup::{CallTiming, Direction, HostKind};
use crate::stats::Spread;
use serde::Serialize;

/// One experiment's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub family: Family,
    /// The API the call went through.
    pub api: crate::api::Api,
    pub call: String,
    pub rule: String,
    pub class: Option<Class>,
    pub expected: Expected,
    pub verdict: Option<Verdict>,
    /// Each repetition's class, in order.
    pub classes: Vec<Class>,
    /// Fraction of repetitions that agree with `class`.
    pub agreement: f64,
    /// What held the thread in the repetition whose call time is the median, in a few words ("20.0 ms for
    /// its stream · own work 3%"); empty without repetitions.
    pub held_for: String,
    /// Each repetition's attribution: the call's time split by what held the thread (`attribution`).
    pub held: Vec<crate::attribution::Held>,
    /// The median resolution of the repetitions (clock fit and query latency), in µs.
    pub resolution_us: Option<f64>,
    pub host_call_us: Option<Spread>,
    /// Median CPU time of the calling thread inside the call.
    pub host_cpu_us: Option<f64>,
    /// Whether the call waited for the blocker (majority of the repetitions whose reading decided it); `None`
    /// without a blocker.
    pub waited_for_prior_work: Option<bool>,
    pub complete_at_return: Option<bool>,
    /// Whether the call put work on a stream (its stream was queried after the return).
    pub has_device_work: bool,
    /// Why some repetitions' readings decided nothing (each reason once); empty when all were decided.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<String>,
    pub data_captured_at_return: Option<bool>,
    /// Median device time of the call's own work (CUDA events).
    pub device_us: Option<f64>,
    pub blocker_us: Option<f64>,
    pub bytes: u64,
    pub wait_style: Option<WaitStyle>,
    /// Medians of the experiment's extra metrics.
    pub metrics: crate::metrics::Metrics,
    pub what: String,
    pub explanation: String,
    pub error: Option<String>,
    /// Why the experiment was not run on this machine (e.g. "needs 2 GPUs"); not an error, not a result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
    /// Bytes over the median device time of the copy, where that time is the copy alone (blocker ahead in
    /// its stream, so the copy's start event fires when the copy can start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth_gb_s: Option<f64>,
    /// For copies between GPUs: source and destination GPU, and whether peer access was on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerSetup>,
    /// Where the blocker ran (for peer copies, `Other` is the destination GPU).
    pub blocker: BlockerPlacement,
    /// The host memory the call used, where it used some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_memory: Option<HostKind>,
    /// Which way a copy moved its bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// How the call's host time was taken (the setup's).
    #[serde(skip_serializing_if = "CallTiming::is_stopwatch")]
    pub timing: CallTiming,
}

impl CaseResult {
    /// The attribution of the repetition whose call time is the median (the one `held_for` describes).
    pub fn median_held(&self) -> Option<&crate::attribution::Held> {
        crate::stats::median_index(&self.held, |h| h.total_ns).map(|i| &self.held[i])
    }
}

/// Whether the device ran the call's work only after the blocker ended: the work's GPU time (from the event
/// before the call, enqueued while the blocker ran) spans at least 90% of the blocker. `None` without both.
pub fn ordered_after_blocker(r: &CaseResult) -> Option<bool> {
    Some(r.device_us? >= 0.9 * r.blocker_us?)
}

/// One case measured through both APIs in the same recording.
pub struct ApiRow {
    /// The driver case's id (the runtime's is `runtime/` + this).
    pub id: String,
    pub driver_call: String,
    pub runtime_call: String,
    pub driver: String,
    pub runtime: String,
    pub driver_us: Option<f64>,
    pub runtime_us: Option<f64>,
    /// What held the thread in each side's median repetition.
    pub driver_held: String,
    pub runtime_held: String,
    /// Both have a class (neither failed nor was not run).
    pub both_classified: bool,
}

impl ApiRow {
    pub fn same_class(&self) -> bool {
        self.driver == self.runtime
    }
}

/// The driver and runtime classes of every case measured through both APIs, from results already
/// classified (`compare::between_apis` from a recording; the report's findings name the differences).
pub fn between_apis_results(results: &[CaseResult]) -> Vec<ApiRow> {
    let class = |r: &CaseResult| match (&r.class, &r.not_run, &r.error) {
        (Some(c), _, _) => c.to_string(),
        (None, Some(why), _) => format!("not run: {why}"),
        (None, None, e) => format!("error: {}", e.clone().unwrap_or_default()),
    };
    let mut rows = Vec::new();
    for d in results.iter().filter(|r| r.api == crate::api::Api::Driver) {
        let runtime_id = format!("{}{}", crate::api::Api::Runtime.id_prefix(), d.id);
        let Some(r) = results.iter().find(|r| r.id == runtime_id) else { continue };
        rows.push(ApiRow {
            id: d.id.clone(),
            driver_call: d.call.clone(),
            runtime_call: r.call.clone(),
            driver: class(d),
            runtime: class(r),
            driver_us: d.host_call_us.map(|s| s.median),
            runtime_us: r.host_call_us.map(|s| s.median),
            driver_held: d.held_for.clone(),
            runtime_held: r.held_for.clone(),
            both_classified: d.class.is_some() && r.class.is_some(),
        });
    }
    rows
}

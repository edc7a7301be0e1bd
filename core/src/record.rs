//! Recordings: every raw repetition of a run plus the machine it ran on, as JSON.
//!
//! `--record FILE` writes one; `--replay FILE` reads it back and goes through the same classification and
//! reporting code as a live run, on any machine, without a GPU. Nothing in a recording is derived: classes,
//! verdicts and explanations are recomputed on every replay.

use crate::catalogue::{Case, Experiment as _, Layout};
use crate::machine::MachineInfo;
use crate::metrics::Metrics;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family};
use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Bumped whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;
pub const RECORDING_KIND: &str = "async-lab-recording";

/// The signals of one repetition of one experiment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rep {
    /// Wall time of the call under test.
    pub host_call_ns: u64,
    /// CPU time the calling thread spent inside the call.
    pub host_cpu_ns: u64,
    /// Whether the blocker had finished when the call returned; `None` where there was no blocker.
    pub blocker_done_at_return: Option<bool>,
    /// Whether the call's own device work had finished when it returned; `None` for calls with none.
    pub op_done_at_return: Option<bool>,
    /// For copies from host memory that returned before running: whether overwriting the source right after
    /// the return left the delivered data unchanged (the data had been staged). `None` where not probed.
    pub data_captured_at_return: Option<bool>,
    /// Device time of the blocker (CUDA events).
    pub blocker_device_ns: Option<u64>,
    /// Device time from the point the call's work could start to its end (CUDA events).
    pub op_device_ns: Option<u64>,
    /// Host monotonic clock at the call's start, and at the blocker's launch (for timelines).
    pub host_call_start_ns: u64,
    pub host_blocker_launch_ns: Option<u64>,
    /// The blocker's `%globaltimer` at its start and end.
    pub blocker_gpu_ns: Option<[u64; 2]>,
    /// The start and end events of the call's own work, in ns after the blocker's start event (GPU clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op_gpu_ns_from_blocker: Option<[i64; 2]>,
    /// For experiments without a blocker (the seed): the start and end events of the call's work, in ns after
    /// a reference event whose `%globaltimer` value is `gpu_origin_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op_gpu_ns_from_origin: Option<[i64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_origin_ns: Option<u64>,
    /// When the query of the call's stream right after the return began and ended, in ns after the call's
    /// start (absent in recordings made before the queries were timed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op_query_ns: Option<[u64; 2]>,
    /// The same for the query of the blocker's end event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocker_query_ns: Option<[u64; 2]>,
    /// Extra numbers some experiments measure (e.g. a callback's delay).
    #[serde(default, skip_serializing_if = "Metrics::is_empty")]
    pub metrics: Metrics,
}

/// How an experiment was set up: everything needed to classify and explain it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseSetup {
    pub id: String,
    pub family: Family,
    /// The driver call under test.
    pub call: String,
    pub rule: String,
    pub expected: Expected,
    /// Where the call and its blocker ran, and what memory it touched (its fields are written among these).
    #[serde(flatten)]
    pub layout: Layout,
    /// A sentence on what this experiment does.
    pub what: String,
    /// Which API the call under test went through (absent in recordings made before the runtime was
    /// measured: those are driver recordings).
    #[serde(default)]
    pub api: crate::api::Api,
    /// The case's typed facts, everything above is derived from (absent in recordings made before setups
    /// kept them: `catalogue::presets::by_id` finds those by id when the recording is read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<Case>,
}

impl CaseSetup {
    /// The setup a recording keeps of `case`: its facts, and what is derived from them. The one place a
    /// setup is made.
    pub fn of(case: &Case) -> CaseSetup {
        let (rule, expected) = case.rule();
        CaseSetup {
            id: case.id(),
            family: case.facts.family(),
            call: case.call().to_owned(),
            rule: rule.to_owned(),
            expected,
            layout: case.facts.layout(),
            what: case.facts.what(case.api),
            api: case.api,
            case: Some(case.clone()),
        }
    }
}

/// One experiment's raw measurements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseRecord {
    pub setup: CaseSetup,
    /// The blocker's length in this run (scaled from the warm-up).
    pub blocker_ns: Option<u64>,
    pub warmup: Option<Rep>,
    pub reps: Vec<Rep>,
    /// A per-step series some experiments record (e.g. the launch queue's per-launch times, in µs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Vec<f64>>,
    /// Set when the experiment could not be measured; its reps are then empty or incomplete.
    pub error: Option<String>,
    /// Set when the experiment was not run because this machine cannot run it (e.g. "needs 2 GPUs"): not a
    /// failure, and not a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    pub kind: String,
    pub schema_version: u32,
    /// UTC, RFC 3339.
    pub created: String,
    pub preset: String,
    pub args: Vec<String>,
    pub reps_per_case: usize,
    /// True when the run was interrupted: what was measured is kept, the rest is missing.
    pub partial: bool,
    pub machine: MachineInfo,
    /// How the host's monotonic clock maps onto the GPU's `%globaltimer`, measured at the start of the run.
    #[serde(default)]
    pub clock: Option<crate::clock::ClockOffset>,
    /// The same, measured again between families and at the end of the run (with `clock`, the points of the
    /// drift fit; absent in recordings made before drift was measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clock_later: Vec<crate::clock::ClockOffset>,
    pub cases: Vec<CaseRecord>,
}

impl Recording {
    /// The host/GPU clock relation over the run: a line through every calibration where the run made more
    /// than one, else the single start offset (drift unknown), else none.
    pub fn clock_fit(&self) -> Option<crate::clock::ClockFit> {
        let points: Vec<crate::clock::ClockOffset> = self.clock.iter().chain(&self.clock_later).copied().collect();
        crate::clock::ClockFit::through(&points).or_else(|| self.clock.as_ref().map(crate::clock::ClockFit::constant))
    }

    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        // Write beside, then rename: an interrupted write never leaves half a recording under the real name.
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))?;
        Ok(())
    }

    pub fn load(path: &Path) -> anyhow::Result<Recording> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read the recording {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("{} is not a usable async-lab recording", path.display()))
    }

    pub fn parse(text: &str) -> anyhow::Result<Recording> {
        let value: serde_json::Value =
            serde_json::from_str(text).context("it is not complete, valid JSON (truncated or corrupt?)")?;
        match value.get("kind").and_then(|k| k.as_str()) {
            Some(RECORDING_KIND) => {}
            Some(other) => bail!("its kind is {other:?}, not {RECORDING_KIND:?}"),
            None => bail!("it has no \"kind\" field: not an async-lab recording"),
        }
        match value.get("schema_version").and_then(|v| v.as_u64()) {
            Some(v) if v == SCHEMA_VERSION as u64 => {}
            Some(v) => bail!("its schema_version is {v}; this async-lab reads version {SCHEMA_VERSION}"),
            None => bail!("it has no schema_version"),
        }
        let mut rec: Recording =
            serde_json::from_value(value).context("its fields do not match the recording format")?;
        for case in &mut rec.cases {
            let s = &mut case.setup;
            if s.family == Family::Wait && s.layout.blocker == BlockerPlacement::None {
                // Made before the waits were read like every other call: the kernel a wait waits for is its
                // blocker, ahead of it in its stream, and the "done" those recordings noted (a wait returns
                // only once its kernel is done) was about that kernel, not about work of the wait's own.
                s.layout.blocker = BlockerPlacement::Same;
                s.layout.blocker_ahead = true;
                s.layout.blocker_stream = s.layout.stream;
                for rep in &mut case.reps {
                    if rep.blocker_done_at_return.is_none() {
                        rep.blocker_done_at_return = rep.op_done_at_return.take();
                        rep.blocker_device_ns = rep.op_device_ns.take();
                    }
                }
            }
            if s.case.is_none() {
                // Made before setups kept their facts: today's catalogue knows the case by its id (a peer pair
                // or a seed step among the records its template yields), where it was set up the same way (same call, blocker ahead or not). The
                // facts give what older setups lacked (a copy's direction, how the call was timed), and the rules
                // what today's documentation predicts for them.
                let found = crate::catalogue::presets::by_id(&s.id)
                    .filter(|c| c.call() == s.call && c.facts.layout().blocker_ahead == s.layout.blocker_ahead);
                if let Some(c) = found {
                    let layout = c.facts.layout();
                    s.layout.direction = s.layout.direction.or(layout.direction);
                    if s.layout.timing.is_stopwatch() {
                        s.layout.timing = layout.timing;
                    }
                    s.case = Some(c);
                }
            }
            if case.error.is_none() && case.skipped.is_none() && case.reps.is_empty() {
                bail!("experiment {} has neither repetitions nor an error nor a reason it was not run", case.setup.id);
            }
        }
        Ok(rec)
    }
}

#[cfg(test)]
mod facts_tests {
    use super::*;

    #[test]
    fn a_setup_made_before_setups_kept_their_facts_finds_them_by_id_where_the_catalogue_knows_the_case() {
        let (id, case) = crate::catalogue::presets::known()
            .iter()
            .find(|(_, c)| c.facts.family() == Family::Copy)
            .expect("the catalogue has copies");
        let mut old = CaseSetup::of(case);
        old.case = None;
        old.layout.direction = None;
        old.rule = "X".into();
        let parse = |s: &CaseSetup| {
            let rec = serde_json::json!({
                "kind": RECORDING_KIND, "schema_version": SCHEMA_VERSION, "created": "", "preset": "default",
                "args": [], "reps_per_case": 0, "partial": false, "machine": serde_json::from_str::<serde_json::Value>(include_str!("../../recordings/async-lab-seed-both-apis-h200-driver580.159.04-2026-12-03-d4d6d2c.json")).expect("a recording")["machine"].clone(),
                "cases": [{"setup": s, "blocker_ns": null, "warmup": null, "reps": [], "error": "x"}],
            });
            Recording::parse(&rec.to_string())
        };
        let rec = parse(&old).expect("the recording parses");
        let s = &rec.cases[0].setup;
        assert_eq!(s.case.as_ref(), Some(case), "{id}");
        assert_eq!(s.layout.direction, case.facts.layout().direction);
        let mut other_call = old.clone();
        other_call.call = "cuSomethingElse".into();
        let rec = parse(&other_call).expect("the recording parses");
        assert!(rec.cases[0].setup.case.is_none(), "a case set up differently keeps its recorded rule");
    }

    #[test]
    fn the_layout_is_written_among_the_setups_own_fields_as_recordings_always_had_it() {
        let case = crate::catalogue::presets::known().values().find(|c| c.facts.family() == Family::Copy).unwrap();
        let setup = CaseSetup::of(case);
        let json = serde_json::to_value(&setup).unwrap();
        let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        for key in ["id", "stream", "blocker", "blocker_stream", "blocker_ahead", "host_memory", "bytes", "direction"] {
            assert!(keys.contains(&key), "{key} in {keys:?}");
        }
        assert!(!keys.contains(&"layout"), "{keys:?}");
        assert_eq!(serde_json::from_value::<CaseSetup>(json).unwrap(), setup);
        // A setup of a committed recording, made before the layout had a type of its own, reads the same.
        let text = include_str!("../../recordings/async-lab-seed-both-apis-h200-driver580.159.04-2026-12-02.json");
        let old = &serde_json::from_str::<serde_json::Value>(text).unwrap()["cases"][0]["setup"];
        let read: CaseSetup = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(read.layout.bytes, old["bytes"].as_u64().unwrap());
        assert_eq!(serde_json::to_value(&read).unwrap(), *old, "written back field for field");
    }
}

//! The experiments: what each one does (the catalogue), which run in a preset, and the runner that measures
//! them one by one, with a progress bar, Ctrl-C handling and child processes where an environment variable
//! must be set before the driver starts.
//!
//! Start reading at `method.rs` (the protocol every "did it wait?" experiment follows), then `copies.rs`.

pub mod alloc;
pub mod batched;
pub mod buffers;
pub mod callbacks;
pub mod copies;
pub mod graphs;
pub mod interrupt;
pub mod launches;
pub mod limits;
pub mod loading;
pub mod memset;
pub mod method;
pub mod overhead;
pub mod peer;
pub mod queue;
pub mod runner;
pub mod seed;
pub mod seed_runtime;
pub mod streammem;
pub mod threads;
pub mod unified;
pub mod vmm;
pub mod waiting;

use crate::measured_api::ApiChoice;
use anyhow::bail;
use async_lab_core::catalogue::presets::{self, Preset};
use async_lab_core::catalogue::{self, Experiment as _, Facts};
use async_lab_core::record::{CaseRecord, CaseSetup, Rep};

/// One experiment: the catalogue's case (its typed facts, what to run) and the setup a record keeps of it.
#[derive(Clone, Debug)]
pub struct Case {
    pub setup: CaseSetup,
    pub facts: Facts,
}

impl Case {
    /// The catalogue's case, with its setup.
    pub fn of(case: catalogue::Case) -> Case {
        Case { setup: CaseSetup::of(&case), facts: case.facts }
    }

    fn all(cases: Vec<catalogue::Case>) -> Vec<Case> {
        cases.into_iter().map(Case::of).collect()
    }

    /// The environment variable a case needs set before the driver starts (it then runs in a child process).
    pub fn child_env(&self) -> Option<(&'static str, &'static str)> {
        self.facts.child_env()
    }
}

/// A record from a case's setup and measurements.
pub fn case_record(case: &Case, warmup: Option<Rep>, blocker_ns: Option<u64>, reps: Vec<Rep>) -> CaseRecord {
    CaseRecord { setup: case.setup.clone(), blocker_ns, warmup, reps, series: None, error: None, skipped: None }
}

/// The record of a case this machine cannot run, with the reason.
pub fn not_run(case: &Case, why: &str) -> CaseRecord {
    let mut r = case_record(case, None, None, vec![]);
    r.skipped = Some(why.to_owned());
    r
}

/// The cases of `cases` measured through the APIs `--api` chose.
pub fn select_api(cases: Vec<Case>, api: ApiChoice) -> Vec<Case> {
    cases.into_iter().filter(|c| api.includes(c.setup.api)).collect()
}

/// Every case of a preset, through both APIs (see `select_api`). `sizes` overrides the copy sizes of the
/// default, full, sweep and peer presets.
pub fn catalogue(preset: Preset, sizes: Option<&[u64]>) -> Vec<Case> {
    catalogue_with(preset, sizes, catalogue::seed_runtime::ANSWER_BYTES)
}

/// `catalogue`, with the accepted answer's buffer of `seed_bytes` in the seed preset (`--seed-bytes`).
pub fn catalogue_with(preset: Preset, sizes: Option<&[u64]>, seed_bytes: u64) -> Vec<Case> {
    let choices = presets::Choices {
        sizes: sizes.map(<[u64]>::to_vec),
        seed_bytes,
        module_loading: seed_runtime::module_loading(),
    };
    Case::all(presets::cases(preset, &choices))
}

/// The cases whose id matches `pattern`: a glob (`copy/async/*`, `*pinned*`) or, without glob characters, a
/// substring. A pattern that matches nothing is an error that lists what exists.
pub fn select(cases: Vec<Case>, pattern: Option<&str>) -> anyhow::Result<Vec<Case>> {
    let Some(pattern) = pattern else { return Ok(cases) };
    let matcher: Box<dyn Fn(&str) -> bool> = if pattern.contains(['*', '?', '[']) {
        let glob = globset::Glob::new(pattern)?.compile_matcher();
        Box::new(move |id| glob.is_match(id))
    } else {
        let p = pattern.to_owned();
        Box::new(move |id: &str| id.contains(&p))
    };
    let total = cases.len();
    let ids: Vec<String> = cases.iter().map(|c| c.setup.id.clone()).collect();
    let chosen: Vec<Case> = cases.into_iter().filter(|c| matcher(&c.setup.id)).collect();
    if chosen.is_empty() {
        let mut prefixes: Vec<String> = Vec::new();
        for id in &ids {
            let p = id.split('/').take(2).collect::<Vec<_>>().join("/");
            if !prefixes.contains(&p) {
                prefixes.push(p);
            }
        }
        let mut listing = String::new();
        for p in &prefixes {
            let n = ids.iter().filter(|id| id.starts_with(p.as_str())).count();
            listing.push_str(&format!("\n  {p}/... ({n})"));
        }
        bail!(
            "no experiment matches {pattern:?}. This preset has {total} experiments; their ids start with:{listing}\n\
             (`async-lab list` prints every id)"
        );
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_lab_core::api::Api;

    #[test]
    fn a_twin_s_setup_differs_from_its_driver_case_s_only_in_api_id_call_and_words() {
        let all = catalogue(Preset::Full, None);
        let mut twins = 0;
        for c in all.iter().filter(|c| c.setup.api == Api::Driver) {
            let Some(twin) = c.setup.case.as_ref().and_then(catalogue::Case::runtime_twin) else { continue };
            let twin = Case::of(twin);
            let mut same = twin.setup.clone();
            same.api = c.setup.api;
            same.id = c.setup.id.clone();
            same.call = c.setup.call.clone();
            same.what = c.setup.what.clone();
            same.case = c.setup.case.clone();
            assert_eq!(same, c.setup, "{}", twin.setup.id);
            assert_ne!(twin.setup.what, c.setup.what, "{} says nothing of the runtime", twin.setup.id);
            assert!(all.iter().any(|a| a.setup.id == twin.setup.id), "{} is not in the preset", twin.setup.id);
            twins += 1;
        }
        assert!(twins > 100, "only {twins} runtime twins in the full preset");
    }

    #[test]
    fn select_by_glob_and_substring() {
        let all = catalogue(Preset::Default, None);
        let n = all.len();
        let pinned = select(all.clone(), Some("copy/async/htod/pinned/*")).unwrap();
        assert!(!pinned.is_empty() && pinned.len() < n);
        assert!(pinned.iter().all(|c| c.setup.id.starts_with("copy/async/htod/pinned/")));
        let mem = select(all.clone(), Some("memset")).unwrap();
        assert!(mem.iter().all(|c| c.setup.id.contains("memset")));
        let err = select(all, Some("nothing-like-this")).unwrap_err().to_string();
        assert!(err.contains("copy/async/...") && err.contains("no experiment matches"), "{err}");
    }
}

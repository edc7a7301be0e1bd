//! The experiments: what each one does (the catalogue), which run in a preset, and the runner that measures
//! them one by one, with a progress bar, Ctrl-C handling and child processes where an environment variable
//! must be set before the driver starts.
//!
//! Start reading at `method.rs` (the protocol every "did it wait?" experiment follows), then `copies.rs`.

pub mod alloc;
pub mod buffers;
pub mod callbacks;
pub mod copies;
pub mod launches;
pub mod memset;
pub mod method;
pub mod peer;
pub mod runner;
pub mod seed;
pub mod waiting;

use crate::driver::HostKind;
use crate::record::{CaseRecord, CaseSetup, Rep};
use crate::units::parse_size;
use anyhow::bail;

/// One experiment: how it is set up (recorded) and what to run (not recorded).
#[derive(Clone, Debug)]
pub struct Case {
    pub setup: CaseSetup,
    pub op: Op,
}

#[derive(Clone, Debug)]
pub enum Op {
    Copy(copies::CopyOp),
    Memset(memset::MemsetOp),
    Launch(launches::LaunchOp),
    Alloc(alloc::AllocOp),
    Callback(callbacks::CallbackOp),
    Wait(waiting::WaitOp),
    /// The seed program's sequence; one run yields several records.
    Seed(HostKind),
    /// A copy between two GPUs; one run yields a record per ordered pair of GPUs.
    Peer(peer::PeerOp),
}

impl Case {
    /// The environment variable a case needs set before the driver starts (it then runs in a child process).
    pub fn child_env(&self) -> Option<(&'static str, &'static str)> {
        match &self.op {
            Op::Launch(l) => l.child_env(),
            _ => None,
        }
    }
}

/// A record from a case's setup and measurements.
pub fn case_record(case: &Case, warmup: Option<Rep>, blocker_ns: Option<u64>, reps: Vec<Rep>) -> CaseRecord {
    CaseRecord { setup: case.setup.clone(), blocker_ns, warmup, reps, series: None, error: None, skipped: None }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Preset {
    /// Every family, with the copies at the default sizes (under a minute on an H200).
    Default,
    /// The whole copy matrix (every stream kind and blocker placement) plus the other families.
    Full,
    /// The seed question's program, reproduced step by step.
    Seed,
    /// Async copies from 4 KiB to 1 GiB, pageable against pinned.
    Sweep,
    /// Copies between GPUs from 4 KiB to 1 GiB, every ordered pair, peer access on and off (needs 2 GPUs). The
    /// default and full presets hold the peer family too; the default pairs only with the `--device` GPU.
    Peer,
}

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::Default => "default",
            Preset::Full => "full",
            Preset::Seed => "seed",
            Preset::Sweep => "sweep",
            Preset::Peer => "peer",
        }
    }
}

pub const DEFAULT_SIZES: [&str; 4] = ["4KiB", "64KiB", "1MiB", "256MiB"];
/// The size for experiments that vary something other than size.
pub const MID_SIZE: u64 = 1 << 20;

/// Sizes of the sweep: 4 KiB to 1 GiB in powers of 4.
pub fn sweep_sizes() -> Vec<u64> {
    (0..10).map(|k| 4096u64 << (2 * k)).collect()
}

/// Every case of a preset. `sizes` overrides the copy sizes of the default, full and sweep presets.
pub fn catalogue(preset: Preset, sizes: Option<&[u64]>) -> Vec<Case> {
    let default_sizes: Vec<u64> = DEFAULT_SIZES.iter().map(|s| parse_size(s).expect("valid default size")).collect();
    let copy_sizes = sizes.unwrap_or(&default_sizes);
    let others = || {
        let mut v = memset::cases(MID_SIZE);
        v.extend(launches::cases());
        v.extend(alloc::cases(MID_SIZE));
        v.extend(callbacks::cases());
        v.extend(waiting::cases());
        v
    };
    match preset {
        Preset::Default => {
            let mut v = copies::default_cases(copy_sizes, MID_SIZE);
            v.extend(others());
            v.extend(peer::cases(copy_sizes, false, false));
            v
        }
        Preset::Full => {
            let mut v = copies::full_cases(copy_sizes);
            v.extend(others());
            v.extend(peer::cases(copy_sizes, true, true));
            v
        }
        Preset::Seed => seed::cases(),
        Preset::Sweep => copies::sweep_cases(sizes.unwrap_or(&sweep_sizes())),
        Preset::Peer => peer::cases(sizes.unwrap_or(&sweep_sizes()), false, true),
    }
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

    #[test]
    fn ids_are_unique_in_every_preset() {
        for preset in [Preset::Default, Preset::Full, Preset::Seed, Preset::Sweep, Preset::Peer] {
            let cases = catalogue(preset, None);
            let mut ids: Vec<&str> = cases.iter().map(|c| c.setup.id.as_str()).collect();
            ids.sort();
            let n = ids.len();
            ids.dedup();
            assert_eq!(ids.len(), n, "duplicate ids in {preset:?}");
        }
    }

    #[test]
    fn every_case_names_a_known_rule() {
        for c in catalogue(Preset::Full, None) {
            assert!(crate::rules::rule(&c.setup.rule).is_some(), "{} names unknown rule {}", c.setup.id, c.setup.rule);
        }
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

    #[test]
    fn sweep_sizes_span_4k_to_1g() {
        let s = sweep_sizes();
        assert_eq!(s.first(), Some(&4096));
        assert_eq!(s.last(), Some(&(1 << 30)));
    }
}

//! The presets: which of the catalogue's cases a run measures (`--preset`), each driver case followed by its
//! runtime twin where it has one. Every list here is made of the families' own lists; nothing is restated.

use super::seed_runtime::ModuleLoading;
use super::{copies, overhead, peer, seed, seed_runtime, with_twins, Case, Experiment as _};
use crate::api::Api;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// `--preset`: which experiments a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Preset {
    /// Every family, with the copies at the default sizes (under a minute on an H200). The newer families
    /// (graphs, unified-memory hints, attributes and limits, stream memory operations, virtual memory, batched
    /// copies, threads) are left out to keep it fast: see `next` and `full`.
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
    /// Loading code while the GPU works (driver and runtime, lazy and eager loading); also in default and full.
    Loading,
    /// The tool's own overhead: 500 enqueues of the cheapest calls behind a 200 ms kernel, to compare with the
    /// C++ reference's `--overhead`.
    Overhead,
    /// The newer families together: CUDA graphs, unified-memory hints, attributes and limits, stream memory
    /// operations, virtual memory management, batched copies, threads (also in full).
    Next,
}

impl Preset {
    pub const ALL: [Preset; 8] = [
        Preset::Default,
        Preset::Full,
        Preset::Seed,
        Preset::Sweep,
        Preset::Peer,
        Preset::Loading,
        Preset::Overhead,
        Preset::Next,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Default => "default",
            Preset::Full => "full",
            Preset::Seed => "seed",
            Preset::Sweep => "sweep",
            Preset::Peer => "peer",
            Preset::Loading => "loading",
            Preset::Overhead => "overhead",
            Preset::Next => "next",
        }
    }
}

/// The copy sizes of the default and full presets.
pub const DEFAULT_SIZES: [u64; 4] = [4 << 10, 64 << 10, 1 << 20, 256 << 20];
/// The size for experiments that vary something other than size.
pub const MID_SIZE: u64 = 1 << 20;

/// Sizes of the sweep and the peer preset: 4 KiB to 1 GiB in powers of 4.
pub fn sweep_sizes() -> Vec<u64> {
    (0..10).map(|k| 4096u64 << (2 * k)).collect()
}

/// What a preset measures beyond its families: copy sizes (`--sizes`), the accepted answer's buffer
/// (`--seed-bytes`), and how modules load in this process (the seed's runtime words say so).
#[derive(Clone, Debug)]
pub struct Choices {
    pub sizes: Option<Vec<u64>>,
    pub seed_bytes: u64,
    pub module_loading: ModuleLoading,
}

impl Default for Choices {
    fn default() -> Choices {
        Choices { sizes: None, seed_bytes: seed_runtime::ANSWER_BYTES, module_loading: ModuleLoading::Unset }
    }
}

/// Every case of a preset, through both APIs.
pub fn cases(preset: Preset, choices: &Choices) -> Vec<Case> {
    with_twins(driver_cases(preset, choices))
}

fn driver_cases(preset: Preset, choices: &Choices) -> Vec<Case> {
    let copy_sizes = choices.sizes.clone().unwrap_or_else(|| DEFAULT_SIZES.to_vec());
    let others = || {
        let mut v = super::memset::cases(MID_SIZE);
        v.extend(super::launches::cases());
        v.extend(super::alloc::cases(MID_SIZE));
        v.extend(super::callbacks::cases());
        v.extend(super::waiting::cases());
        // The loading family makes its runtime cases itself (its facts have no runtime twin).
        v.extend(super::loading::cases());
        v
    };
    match preset {
        Preset::Default => {
            let mut v = copies::default_cases(&copy_sizes, MID_SIZE);
            v.extend(others());
            v.extend(peer::cases(&copy_sizes, false, false));
            v
        }
        Preset::Full => {
            let mut v = copies::full_cases(&copy_sizes);
            v.extend(others());
            v.extend(peer::cases(&copy_sizes, true, true));
            v.extend(next_cases());
            v
        }
        Preset::Seed => {
            // The runtime's programs are cases of their own, not twins of the driver's.
            let mut v = seed::cases();
            v.extend(seed_runtime::cases(choices.seed_bytes, choices.module_loading));
            v
        }
        Preset::Sweep => copies::sweep_cases(&choices.sizes.clone().unwrap_or_else(sweep_sizes)),
        Preset::Peer => peer::cases(&choices.sizes.clone().unwrap_or_else(sweep_sizes), false, true),
        Preset::Loading => super::loading::cases(),
        // Driver and runtime cases both, made by the family (its facts have no runtime twin).
        Preset::Overhead => overhead::cases(),
        Preset::Next => next_cases(),
    }
}

/// The newer families (the `next` preset; also in `full`, not in `default`).
fn next_cases() -> Vec<Case> {
    let mut v = super::graphs::cases();
    v.extend(super::unified::cases());
    v.extend(super::limits::cases());
    v.extend(super::streammem::cases());
    v.extend(super::vmm::cases());
    v.extend(super::batched::cases());
    v.extend(super::threads::cases());
    v
}

/// Every case of every preset at its defaults, by id: where a recording made before setups kept their facts
/// finds them (`record::Recording::parse`), and what says whether a driver case has a runtime twin.
pub fn known() -> &'static BTreeMap<String, Case> {
    static KNOWN: OnceLock<BTreeMap<String, Case>> = OnceLock::new();
    KNOWN.get_or_init(|| {
        Preset::ALL.into_iter().flat_map(|p| cases(p, &Choices::default())).map(|c| (c.id(), c)).collect()
    })
}

/// The most GPUs whose pairs [`by_id`] knows the ids of: GPUs 0 to 15.
pub const PAIR_GPUS: i32 = 16;

/// The case with this id in any preset, or among the records one of them yields (a seed program's steps, a
/// peer template's pairs of GPUs under [`PAIR_GPUS`]). Ids are made from the facts and compared, never taken
/// apart.
pub fn by_id(id: &str) -> Option<Case> {
    if let Some(c) = known().get(id) {
        return Some(c.clone());
    }
    // Only a case whose id the record's begins with can have yielded it.
    known().values().filter(|c| id.starts_with(&c.id())).flat_map(|c| c.records(PAIR_GPUS)).find(|r| r.id() == id)
}

/// The same case through the other API, where some preset measures it there too: the case whose id is this
/// one's facts' id through that API (a runtime twin; a runtime case a family makes itself, such as a step of
/// the seed's program, and its driver counterpart), as `compare` pairs them.
pub fn through_other_api(case: &Case) -> Option<Case> {
    let other = match case.api {
        Api::Driver => Api::Runtime,
        Api::Runtime => Api::Driver,
    };
    by_id(&format!("{}{}", other.id_prefix(), case.facts.id())).filter(|c| c.api == other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Facts;

    #[test]
    fn a_peer_records_id_finds_its_template_with_the_pair_set() {
        let template = known().values().find(|c| matches!(c.facts, Facts::Peer(_))).unwrap().clone();
        let Facts::Peer(p) = template.facts else { unreachable!() };
        let record = Case { api: template.api, facts: Facts::Peer(p.on(3, 1)) };
        let found = by_id(&record.id()).unwrap();
        assert_eq!(found, record);
        assert_eq!(found.pair().map(|g| (g.src, g.dst)), Some((3, 1)));
        assert_eq!(found.template(), template);
        assert_eq!(by_id(&template.id()), Some(template.clone()));
        // A seed program's step, through either API.
        let step = by_id("runtime/seed-answer/pinned/0-cudafree").unwrap();
        assert_eq!(step.step_slug(), Some("0-cudafree"));
        assert_eq!(step.template().id(), "runtime/seed-answer/pinned");
        assert!(step.template().records(PAIR_GPUS).contains(&step), "a template's records hold its step");
        assert_eq!(by_id("seed/pageable/3-dtoh").unwrap().step_slug(), Some("3-dtoh"));
        // Beyond the GPUs it knows, or not an id at all: none.
        assert_eq!(by_id(&Case { api: template.api, facts: Facts::Peer(p.on(PAIR_GPUS, 0)) }.id()), None);
        assert_eq!(by_id("copy/async/htod/pinned/nonblocking/same/3KiB"), None);
        // Every other family's case is its own template.
        let copy = known().values().find(|c| matches!(c.facts, Facts::Copy(_))).unwrap();
        assert_eq!(copy.template(), *copy);
        assert_eq!(copy.pair(), None);
    }

    #[test]
    fn ids_are_unique_in_every_preset() {
        for preset in Preset::ALL {
            let cases = cases(preset, &Choices::default());
            let mut ids: Vec<String> = cases.iter().map(|c| c.id()).collect();
            ids.sort();
            let n = ids.len();
            ids.dedup();
            assert_eq!(ids.len(), n, "duplicate ids in {preset:?}");
        }
    }

    #[test]
    fn every_case_names_a_known_rule() {
        for c in known().values() {
            let (rule, _) = c.rule();
            assert!(crate::rules::rule(rule).is_some(), "{} names unknown rule {rule}", c.id());
        }
    }

    #[test]
    fn a_twin_is_its_driver_case_through_the_runtime() {
        let mut twins = 0;
        for c in known().values().filter(|c| c.api == Api::Driver) {
            if let Some(t) = c.runtime_twin() {
                twins += 1;
                assert_eq!(t.id(), format!("runtime/{}", c.id()));
                assert!(t.call().starts_with("cuda"), "{}", t.call());
                assert_eq!(through_other_api(c).as_ref(), Some(&t));
                assert_eq!(through_other_api(&t).as_ref(), Some(c));
            }
        }
        assert!(twins > 100, "only {twins} runtime twins");
        // A runtime case its family makes itself is paired by id as `compare` pairs it: a seed step through both.
        let step = by_id("runtime/seed/pinned/2-launch").unwrap();
        assert_eq!(through_other_api(&step).map(|c| c.id()).as_deref(), Some("seed/pinned/2-launch"));
        assert_eq!(through_other_api(&by_id("seed/pinned/2-launch").unwrap()), Some(step));
        assert_eq!(through_other_api(&by_id("runtime/seed-eager/pinned/2-launch").unwrap()), None);
    }
}

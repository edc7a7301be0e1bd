//! What a run measures, as the command line chooses it: the preset (which families, at which sizes) and the
//! API (`--api`: the driver's calls, the runtime's, or both). The command line parses these and the catalogue
//! in `experiments/` reads them; neither owns them.

use async_lab_core::api::Api;

/// `--preset`: which experiments a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
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

/// `--api`: which API's cases to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ApiChoice {
    Driver,
    Runtime,
    /// Each case through both APIs, side by side.
    #[default]
    Both,
}

impl ApiChoice {
    pub fn includes(self, api: Api) -> bool {
        matches!(
            (self, api),
            (ApiChoice::Both, _) | (ApiChoice::Driver, Api::Driver) | (ApiChoice::Runtime, Api::Runtime)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_choices_include_their_apis() {
        assert!(ApiChoice::Both.includes(Api::Runtime) && ApiChoice::Both.includes(Api::Driver));
        assert!(!ApiChoice::Driver.includes(Api::Runtime) && !ApiChoice::Runtime.includes(Api::Driver));
    }
}

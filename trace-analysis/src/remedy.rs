//! The remedies' words: for each cause a finding names (`cause::Kind`) and for each verdict (`headline`), what
//! to change, in the API of the framework the program's calls were made through (`framework`: PyTorch, JAX,
//! CuPy, Numba, or the CUDA API itself), fitted to the call it is about (an allocation is not a free, a
//! one-time upload is not a data loader's batch, a result read is not a stream of batches), with what the lab
//! measured of it on the H200 beside it (`remedies`, `capability`).
//!
//! A new remedy goes where its cause is: one function per cause, each worded per framework, in `paid_once`
//! (what a program pays once), `holds` (the steady state's holds) or `verdict` (a thread's verdict), with
//! `launches` for fewer, larger launches; [`remedy`] picks it.

use super::analysis::Analysis;
use super::capability;
use super::cause::Kind;
use super::format::Domain;
use super::framework::Framework;
use super::words::duration;
use serde::{Deserialize, Serialize};

mod holds;
mod launches;
mod paid_once;
pub mod verdict;

/// What to change, and what the lab measured of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Remedy {
    /// In words.
    pub words: String,
    /// The lab's experiments behind the numbers in it.
    pub lab: Vec<LabEvidence>,
}

/// One experiment of the lab's that a remedy quotes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LabEvidence {
    /// The case id (`async-lab explain CASE --replay recordings/RECORDING`).
    pub case: String,
    pub recording: String,
    /// What it measured, in words.
    pub words: String,
}

/// What a remedy is about: a group of calls of one cause, its longest first, and the framework they were
/// made through.
struct Group<'a> {
    a: &'a Analysis<'a>,
    calls: &'a [usize],
    framework: Framework,
    /// `runtime` or `driver`: the API of the longest call, for the lab's measurement of the same API.
    api: &'static str,
    lab: Vec<LabEvidence>,
}

impl Group<'_> {
    fn longest(&self) -> usize {
        self.calls[0]
    }

    fn name(&self) -> &str {
        &self.a.program.calls[self.longest()].name
    }

    fn median(&self) -> String {
        let mut times: Vec<i64> = self.calls.iter().map(|&i| self.a.traced[i].held.total_ns).collect();
        times.sort_unstable();
        duration(times[times.len() / 2])
    }

    /// The lab's experiment that shows the longest call's function can wait the way it did.
    fn basis(&mut self) {
        let Some(e) = self.a.traced[self.longest()].basis.as_ref() else { return };
        let condition = if e.condition == capability::Condition::Always {
            String::new()
        } else {
            format!(" {}", e.condition.words())
        };
        self.lab.push(LabEvidence {
            case: e.case.clone(),
            recording: e.recording.clone(),
            words: format!("{} can {}{condition}", e.function, e.way.words()),
        });
    }
}

/// The remedy of a group of calls held by `kind`, made through `framework` (`calls`: longest first).
pub fn remedy(a: &Analysis, kind: Kind, calls: &[usize], framework: Framework) -> Remedy {
    let api = match a.program.calls[calls[0]].domain {
        Domain::Runtime => "runtime",
        Domain::Driver => "driver",
    };
    let mut g = Group { a, calls, framework, api, lab: Vec::new() };
    let words = match kind {
        Kind::ContextCreation => paid_once::context_creation(framework),
        Kind::LoadingCode => paid_once::loading_code(&mut g),
        Kind::Compiling => paid_once::compiling(framework),
        Kind::LibrarySetup => paid_once::library_setup(framework),
        Kind::AllocatorGrowth => paid_once::allocator_growth(&g),
        Kind::Upload => paid_once::upload(framework),
        Kind::PageableCopy => holds::pageable_copy(&mut g),
        Kind::Synchronization => holds::synchronization(&mut g),
        Kind::FreeDrainsDevice => holds::free_drains_device(&mut g),
        Kind::DeviceWait => holds::device_wait(&mut g),
        Kind::FullQueue => holds::full_queue(&mut g),
        Kind::OtherThread => holds::other_thread(&mut g),
        Kind::StreamWait => holds::stream_wait(&mut g),
        Kind::DriverWork => holds::driver_work(&mut g),
        Kind::Other => format!("See --explain {}.", a.program.calls[calls[0]].corr),
    };
    Remedy { words, lab: g.lab }
}

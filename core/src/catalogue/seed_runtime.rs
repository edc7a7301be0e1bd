//! The seed program through the runtime API, in three programs (rules A1, A2, K1, K4, CB1, AL1): the question's
//! in the measuring process, the question's in a child process started with `CUDA_MODULE_LOADING=EAGER`, and
//! the accepted answer's variant (`cudaFree(0)` first, a larger buffer). They are runtime cases of their own,
//! not runtime twins: one run of a program yields a record per step, and each step's facts say which step it
//! is (`SeedRuntimeFacts::step`).

use super::seed::{Step, BUFFER_BYTES};
use super::{Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::Async;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, HostKind};
use crate::units::format_size;
use serde::{Deserialize, Serialize};

/// The accepted answer's buffer: 2 GiB, "to ensure a measurable copy time" (`--seed-bytes` changes it).
pub const ANSWER_BYTES: u64 = 2 << 30;

/// Which program a case runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Program {
    /// The question's, in the measuring process.
    Question,
    /// The question's, in a child process with `CUDA_MODULE_LOADING=EAGER`.
    QuestionEager,
    /// The accepted answer's: `cudaFree(0)` first, a larger buffer.
    Answer,
}

impl Program {
    pub const ALL: [Program; 3] = [Program::Question, Program::QuestionEager, Program::Answer];

    /// The part of its ids after `runtime/`.
    pub fn slug(self) -> &'static str {
        match self {
            Program::Question => "seed",
            Program::QuestionEager => "seed-eager",
            Program::Answer => "seed-answer",
        }
    }

    /// Its measured calls, in order.
    pub fn steps(self) -> Vec<ProgramStep> {
        let free = (self == Program::Answer).then_some(ProgramStep::Free);
        free.into_iter().chain(Step::ALL.map(ProgramStep::Seed)).collect()
    }
}

/// A measured call of a runtime seed program: the answer's `cudaFree(0)`, or one of the question's four.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgramStep {
    Free,
    Seed(Step),
}

impl ProgramStep {
    /// The last part of the step's experiment id.
    pub fn slug(self) -> &'static str {
        match self {
            ProgramStep::Free => "0-cudafree",
            ProgramStep::Seed(s) => s.slug(),
        }
    }
}

/// How the process a program runs in was started: `CUDA_MODULE_LOADING` as the driver read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModuleLoading {
    /// Unset (or empty): lazy loading, the default since CUDA 12.2.
    Unset,
    Lazy,
    Eager,
    /// Set to a value other than `LAZY` and `EAGER`.
    Other,
}

impl ModuleLoading {
    /// The setting a process with `CUDA_MODULE_LOADING` = `value` (`None`: unset) runs with.
    pub fn of_env(value: Option<&str>) -> ModuleLoading {
        match value {
            None | Some("") => ModuleLoading::Unset,
            Some("LAZY") => ModuleLoading::Lazy,
            Some("EAGER") => ModuleLoading::Eager,
            Some(_) => ModuleLoading::Other,
        }
    }
}

/// One runtime seed program with one kind of host memory and its buffer size: the whole program (`step:
/// None`, recorded as its first copy), or one of its steps (the records a run of it yields).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedRuntimeFacts {
    pub program: Program,
    pub memory: HostKind,
    pub bytes: u64,
    /// How the process the program runs in loads code (`EAGER` for `Program::QuestionEager`'s child).
    pub loading: ModuleLoading,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<ProgramStep>,
}

impl SeedRuntimeFacts {
    /// The facts of the program's step `step`.
    pub fn at(self, step: ProgramStep) -> SeedRuntimeFacts {
        SeedRuntimeFacts { step: Some(step), ..self }
    }

    /// The facts of each of the program's steps, in order.
    pub fn steps(self) -> Vec<SeedRuntimeFacts> {
        self.program.steps().into_iter().map(|s| self.at(s)).collect()
    }

    /// The step these facts describe: the question's first copy for the whole program.
    fn step_or_first(self) -> ProgramStep {
        self.step.unwrap_or(ProgramStep::Seed(Step::HtoD))
    }

    /// The words of the launch's loading: where the kernel is loaded into the context.
    fn loading_words(self) -> &'static str {
        if self.program == Program::QuestionEager {
            return "in a child process started with CUDA_MODULE_LOADING=EAGER: cudaLibraryLoadData loaded the \
                    kernel into the context, so this launch loads nothing";
        }
        match self.loading {
            ModuleLoading::Unset => {
                "in this process, CUDA_MODULE_LOADING unset (lazy loading, the default since CUDA 12.2: this \
                 launch loads the kernel into the context)"
            }
            ModuleLoading::Lazy => "in this process, started with CUDA_MODULE_LOADING=LAZY",
            ModuleLoading::Eager => "in this process, started with CUDA_MODULE_LOADING=EAGER",
            ModuleLoading::Other => "in this process, started with CUDA_MODULE_LOADING set to neither LAZY nor EAGER",
        }
    }
}

impl Experiment for SeedRuntimeFacts {
    fn family(&self) -> Family {
        Family::Seed
    }

    fn id(&self) -> String {
        match self.step {
            None => format!("{}/{}", self.program.slug(), self.memory.slug()),
            Some(s) => format!("{}/{}/{}", self.program.slug(), self.memory.slug(), s.slug()),
        }
    }

    /// The programs are runtime programs (`cases` makes them through the runtime only); the answer's
    /// `cudaFree(0)` has no driver counterpart here.
    fn call(&self, api: Api) -> &'static str {
        match self.step_or_first() {
            ProgramStep::Free => "cudaFree(0)",
            ProgramStep::Seed(s) => s.call(api),
        }
    }

    fn runtime_twin(&self) -> bool {
        false
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        match self.step_or_first() {
            // cudaFree(NULL) frees nothing, and no rule covers it: AL1 (cuMemFree, the call it wraps) is the
            // nearest, and what the host did is reported as undocumented.
            ProgramStep::Free => ("AL1", Expected::undocumented()),
            // Loaded with its library: the launch is an ordinary one, as in `launches`' eager first launch.
            ProgramStep::Seed(Step::Launch) if self.program == Program::QuestionEager => {
                ("K1", Expected::classes(&[Async]))
            }
            ProgramStep::Seed(s) => s.rule(self.memory),
        }
    }

    /// The programs' words name the runtime's calls themselves, whatever `api`.
    fn what(&self, _api: Api) -> String {
        let kind = self.memory.slug();
        let size = match self.program {
            Program::Answer => format_size(self.bytes),
            Program::Question | Program::QuestionEager => "10 MB".to_owned(),
        };
        let source = match (self.program, self.memory) {
            (Program::Answer, HostKind::Pageable) => "pageable host memory (malloc)",
            (_, HostKind::Pinned) => "pinned host memory (cudaMallocHost)",
            _ => "pageable host memory (new char[])",
        };
        let whose = if self.program == Program::Answer { "the accepted answer's" } else { "the seed's" };
        match self.step_or_first() {
            ProgramStep::Free => "the accepted answer's first call, cudaFree(0): it frees nothing (a null pointer \
                is documented as no operation); in the answer's program it is the process's first CUDA call and \
                starts the runtime and the device's primary context. Here that context is already active \
                (async-lab's driver side made it, and cudaSetDevice bound the runtime to it before this \
                experiment), so this measures cudaFree(0) on a started runtime, with nothing in flight"
                .to_owned(),
            ProgramStep::Seed(Step::HtoD) => format!(
                "{whose} first copy, through the runtime: cudaMemcpyAsync(cudaMemcpyDefault) of {size} of {source} \
                 to the device, on a cudaStreamNonBlocking stream"
            ),
            ProgramStep::Seed(Step::Launch) => format!(
                "{whose} kernel (1e6 cycles on 128×128 threads) launched with cudaLaunchKernel, the first launch of \
                 a library loaded with cudaLibraryLoadData just before, {}; the work ahead is the {size} copy",
                self.loading_words()
            ),
            ProgramStep::Seed(Step::DtoH) => format!(
                "copy the {size} back into the {kind} host buffer with cudaMemcpyAsync(cudaMemcpyDefault); the \
                 work ahead is the kernel"
            ),
            ProgramStep::Seed(Step::Callback) => "cudaStreamAddCallback of the callback that sets the \"stream \
                concluded\" flag; the work ahead is the copy back"
                .to_owned(),
        }
    }

    fn layout(&self) -> Layout {
        match self.step_or_first() {
            // It takes no stream: nothing is ahead.
            ProgramStep::Free => Layout {
                stream: None,
                blocker: BlockerPlacement::None,
                blocker_stream: None,
                blocker_ahead: false,
                ..Layout::NOTHING
            },
            ProgramStep::Seed(s) => s.layout(self.memory, self.bytes),
        }
    }

    /// `CUDA_MODULE_LOADING` is read once, when the driver starts: the eager program runs in a child process.
    fn child_env(&self) -> Option<(&'static str, &'static str)> {
        (self.program == Program::QuestionEager).then_some(("CUDA_MODULE_LOADING", "EAGER"))
    }
}

impl From<SeedRuntimeFacts> for Facts {
    fn from(f: SeedRuntimeFacts) -> Facts {
        Facts::SeedRuntime(f)
    }
}

/// The seed preset's runtime cases: each program with pageable and with pinned memory; the answer's with
/// buffers of `answer_bytes`. `loading` is how the measuring process loads code (the programs it runs itself
/// say so).
pub fn cases(answer_bytes: u64, loading: ModuleLoading) -> Vec<Case> {
    let mut v = Vec::new();
    for program in Program::ALL {
        for memory in [HostKind::Pageable, HostKind::Pinned] {
            let bytes = if program == Program::Answer { answer_bytes } else { BUFFER_BYTES };
            let loading = if program == Program::QuestionEager { ModuleLoading::Eager } else { loading };
            v.push(Case::runtime(SeedRuntimeFacts { program, memory, bytes, loading, step: None }));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(answer_bytes: u64) -> Vec<SeedRuntimeFacts> {
        cases(answer_bytes, ModuleLoading::Unset)
            .into_iter()
            .map(|c| match c.facts {
                Facts::SeedRuntime(f) => f,
                _ => panic!("{} is not a runtime seed program", c.id()),
            })
            .collect()
    }

    /// Every step of every program, as a runtime case.
    fn steps(answer_bytes: u64) -> Vec<Case> {
        programs(answer_bytes).into_iter().flat_map(SeedRuntimeFacts::steps).map(Case::runtime).collect()
    }

    #[test]
    fn ids_are_unique_prefixed_and_runtime() {
        let all: Vec<Case> = cases(ANSWER_BYTES, ModuleLoading::Unset).into_iter().chain(steps(ANSWER_BYTES)).collect();
        let mut ids: Vec<String> = all.iter().map(Case::id).collect();
        let n = ids.len();
        assert_eq!(n, 6 + 2 * 4 + 2 * 4 + 2 * 5);
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "duplicate ids");
        for c in &all {
            assert!(c.id().starts_with("runtime/"), "{}", c.id());
            assert_eq!(c.api, Api::Runtime, "{}", c.id());
            assert_eq!(c.facts.family(), Family::Seed);
            assert!(c.runtime_twin().is_none(), "{} has a twin", c.id());
            assert!(c.call().starts_with("cuda"), "{}: {}", c.id(), c.call());
            let (rule, _) = c.rule();
            assert!(crate::rules::rule(rule).is_some(), "{} names unknown rule {rule}", c.id());
        }
    }

    #[test]
    fn steps_carry_bytes_memory_and_rules() {
        for c in steps(ANSWER_BYTES) {
            let Facts::SeedRuntime(f) = c.facts else { unreachable!() };
            let pageable = f.memory == HostKind::Pageable;
            let (rule, bytes, memory) = match f.step.unwrap() {
                ProgramStep::Free => ("AL1", 0, None),
                ProgramStep::Seed(Step::HtoD | Step::DtoH) => {
                    (if pageable { "A2" } else { "A1" }, f.bytes, Some(f.memory))
                }
                ProgramStep::Seed(Step::Launch) if f.program == Program::QuestionEager => ("K1", 0, None),
                ProgramStep::Seed(Step::Launch) => ("K4", 0, None),
                ProgramStep::Seed(Step::Callback) => ("CB1", 0, None),
            };
            let l = f.layout();
            assert_eq!((c.rule().0, l.bytes, l.host_memory), (rule, bytes, memory), "{}", c.id());
            assert_eq!(c.id().starts_with("runtime/seed-answer/"), f.program == Program::Answer);
            let expect_bytes = if f.program == Program::Answer { ANSWER_BYTES } else { BUFFER_BYTES };
            assert_eq!(f.bytes, expect_bytes, "{}", c.id());
            // The first stream step has nothing ahead of it; every later one has the step before it.
            let first = matches!(f.step, Some(ProgramStep::Free | ProgramStep::Seed(Step::HtoD)));
            assert_eq!(l.blocker_ahead, !first, "{}", c.id());
            if f.step == Some(ProgramStep::Free) {
                assert_eq!((l.stream, c.rule().1), (None, Expected::undocumented()));
                assert!(f.what(c.api).contains("already active"), "{}", f.what(c.api));
                assert!(c.id().starts_with("runtime/seed-answer/"), "{}", c.id());
            }
        }
        assert!(steps(ANSWER_BYTES).iter().any(|c| c.id() == "runtime/seed-answer/pinned/0-cudafree"));
    }

    #[test]
    fn a_program_is_recorded_as_its_first_copy_with_its_buffer() {
        for f in programs(64 << 20) {
            let first = f.at(ProgramStep::Seed(Step::HtoD));
            assert_eq!((f.layout(), f.rule(Api::Runtime)), (first.layout(), first.rule(Api::Runtime)));
            assert_eq!(f.layout().bytes, f.bytes, "{}", f.id());
        }
        let answer = programs(64 << 20).into_iter().find(|f| f.program == Program::Answer).unwrap();
        assert!(answer.at(ProgramStep::Seed(Step::DtoH)).what(Api::Runtime).contains("64MiB"));
    }

    #[test]
    fn only_the_eager_program_runs_in_a_child_and_says_how_this_process_loads() {
        for f in programs(ANSWER_BYTES) {
            let eager = f.program == Program::QuestionEager;
            assert_eq!(f.child_env(), eager.then_some(("CUDA_MODULE_LOADING", "EAGER")), "{}", f.id());
            assert_eq!(f.loading == ModuleLoading::Eager, eager, "{}", f.id());
        }
        let launch = |loading| {
            let f = SeedRuntimeFacts {
                program: Program::Question,
                memory: HostKind::Pinned,
                bytes: BUFFER_BYTES,
                loading,
                step: Some(ProgramStep::Seed(Step::Launch)),
            };
            f.what(Api::Runtime)
        };
        assert!(launch(ModuleLoading::Unset).contains("CUDA_MODULE_LOADING unset"));
        assert!(launch(ModuleLoading::Lazy).contains("started with CUDA_MODULE_LOADING=LAZY"));
        assert_eq!(ModuleLoading::of_env(Some("")), ModuleLoading::Unset);
        assert_eq!(ModuleLoading::of_env(Some("EAGER")), ModuleLoading::Eager);
        assert_eq!(ModuleLoading::of_env(Some("eager?")), ModuleLoading::Other);
    }
}

//! Runs a list of experiments: one at a time, with a progress bar, stopping cleanly on Ctrl-C, and in a
//! child process for those that need an environment variable set before the driver starts. The peer
//! experiments need every GPU of the machine; the others are opened the first time one of those runs.

use super::interrupt::STOP;
use super::{not_run, Case};
use anyhow::{bail, Context as _};
use async_lab_core::api::Api;
use async_lab_core::catalogue::Facts;
use async_lab_core::record::CaseRecord;
use async_lab_driver::Gpu;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::Ordering;

pub struct RunOptions {
    pub reps: usize,
    pub quiet: bool,
    /// `--ptx`, passed on to child processes.
    pub ptx: Option<PathBuf>,
    pub device: i32,
    /// True inside a child process: run everything here.
    pub in_child: bool,
    /// Also measure each GPU's peer copies against itself (checks the peer code on a one-GPU machine).
    pub peer_loopback: bool,
    /// `--cudart`, passed on to child processes.
    pub cudart: Option<PathBuf>,
}

/// The GPU a run was started on, and the machine's other GPUs once a peer experiment asks for them. They
/// are opened once per run: opening a GPU creates its context, which takes far longer than an experiment.
pub struct Gpus<'m> {
    main: &'m Gpu,
    others: OnceCell<Result<Vec<Gpu>, String>>,
}

impl<'m> Gpus<'m> {
    pub fn new(main: &'m Gpu) -> Gpus<'m> {
        Gpus { main, others: OnceCell::new() }
    }

    /// Every GPU of the machine, in ordinal order.
    pub fn all(&self) -> anyhow::Result<Vec<&Gpu>> {
        let others = self.others.get_or_init(|| {
            let opened: anyhow::Result<Vec<Gpu>> = (0..self.main.device_count)
                .filter(|&i| i != self.main.ordinal)
                .map(|i| Gpu::open(i, self.main.ptx.clone()).with_context(|| format!("opening GPU {i}")))
                .collect();
            // Opening made each new context current in turn; the rest of the run expects the main one.
            let rebound = self.main.bind().map_err(anyhow::Error::from);
            opened.and_then(|v| rebound.map(|()| v)).map_err(|e| format!("{e:#}"))
        });
        let others = others.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut all: Vec<&Gpu> = others.iter().chain(std::iter::once(self.main)).collect();
        all.sort_by_key(|g| g.ordinal);
        Ok(all)
    }
}

/// What a run produced, and whether it was cut short.
pub struct RunOutcome {
    pub records: Vec<CaseRecord>,
    pub partial: bool,
    /// The host/GPU clock offset measured again between families and at the end (for the drift fit).
    pub clock_later: Vec<async_lab_core::clock::ClockOffset>,
}

pub fn run_cases(gpu: &Gpu, cases: &[Case], opts: &RunOptions) -> RunOutcome {
    let gpus = Gpus::new(gpu);
    let bar = if opts.quiet || !std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(cases.len() as u64), ProgressDrawTarget::hidden())
    } else {
        let b = ProgressBar::new(cases.len() as u64);
        b.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} [{elapsed}] {wide_msg}").expect("valid template"),
        );
        b
    };

    // Experiments that need their own process are run first, one child per environment.
    let mut records = ChildRecords::new();
    if !opts.in_child {
        let mut by_env: BTreeMap<(&str, &str), Vec<&Case>> = BTreeMap::new();
        for c in cases.iter().filter(|c| c.child_env().is_some()) {
            by_env.entry(c.child_env().unwrap()).or_default().push(c);
        }
        for ((var, value), group) in by_env {
            if STOP.load(Ordering::SeqCst) {
                break;
            }
            bar.set_message(format!("child process with {var}={value}"));
            match run_child(var, value, &group, opts) {
                Ok(by_case) => records.extend(by_case),
                Err(e) => {
                    for c in &group {
                        records.insert(c.setup.id.clone(), vec![failed(c, &e)]);
                    }
                }
            }
            bar.inc(group.len() as u64);
        }
    }

    let mut partial = false;
    let mut out = Vec::new();
    let mut clock_later = Vec::new();
    let mut last_family = None;
    for case in cases {
        // Between families, measure the clock offset again: the drift fit needs points through the run.
        if !opts.in_child && last_family.is_some_and(|f| f != case.setup.family) {
            clock_later.extend(recalibrate(gpu));
        }
        last_family = Some(case.setup.family);
        if let Some(recs) = records.remove(&case.setup.id) {
            out.extend(recs);
            continue;
        }
        if case.child_env().is_some() && !opts.in_child {
            partial = true; // stopped before its child ran
            continue;
        }
        if STOP.load(Ordering::SeqCst) {
            partial = true;
            break;
        }
        bar.set_message(case.setup.id.clone());
        // Only a runtime case loads the runtime library: a driver-only run never touches it.
        let runtime =
            || if case.setup.api == Api::Runtime { async_lab_driver::runtime::get().map(|_| ()) } else { Ok(()) };
        if let Some(record) = runtime_gate(case, runtime()) {
            out.push(record);
            bar.inc(1);
            continue;
        }
        match run_case(&gpus, case, opts, &|id| bar.set_message(id.to_owned())) {
            Ok(recs) => out.extend(recs),
            Err(e) => out.push(failed(case, &e)),
        }
        bar.inc(1);
    }
    if !opts.in_child {
        clock_later.extend(recalibrate(gpu));
    }
    bar.finish_and_clear();
    RunOutcome { records: out, partial: partial || STOP.load(Ordering::SeqCst), clock_later }
}

impl RunOutcome {
    /// The clock fit through the calibrations this run made (between families and at the end).
    pub fn clock_fit(&self) -> Option<async_lab_core::clock::ClockFit> {
        async_lab_core::clock::ClockFit::through(&self.clock_later)
            .or_else(|| self.clock_later.last().map(async_lab_core::clock::ClockFit::constant))
    }
}

/// The clock offset now, on the main GPU; `None` if the GPU fails (the experiments report that themselves).
fn recalibrate(gpu: &Gpu) -> Option<async_lab_core::clock::ClockOffset> {
    gpu.bind().ok()?;
    crate::calibrate::calibrate(gpu, 50).ok()
}

/// What a child process returns: each case it was given, by id, with the records measuring it made (one, or
/// one per part: a seed program's steps, a peer template's pairs of GPUs).
pub type ChildRecords = BTreeMap<String, Vec<CaseRecord>>;

/// Runs `cases` in this process (a child's work), keeping each case's records apart.
pub fn run_in_child(gpu: &Gpu, cases: &[Case], opts: &RunOptions) -> ChildRecords {
    let mut out = ChildRecords::new();
    for case in cases {
        let outcome = run_cases(gpu, std::slice::from_ref(case), opts);
        out.insert(case.setup.id.clone(), outcome.records);
    }
    out
}

/// A runtime-API case when the runtime cannot be used (no libcudart, or an unusable one): its *not run*
/// record, with the reason. `None` for every case that can run.
pub fn runtime_gate(case: &Case, runtime: Result<(), &str>) -> Option<CaseRecord> {
    match (case.setup.api, runtime) {
        (Api::Runtime, Err(why)) => Some(not_run(case, why)),
        _ => None,
    }
}

fn failed(case: &Case, e: &anyhow::Error) -> CaseRecord {
    let mut r = super::case_record(case, None, None, vec![]);
    r.error = Some(format!("{e:#}"));
    r
}

/// Measures one experiment in this process. `progress` hears the id of each part of an experiment that has
/// several (the pairs of GPUs of a peer experiment).
pub fn run_case(
    gpus: &Gpus,
    case: &Case,
    opts: &RunOptions,
    progress: &dyn Fn(&str),
) -> anyhow::Result<Vec<CaseRecord>> {
    let (gpu, reps) = (gpus.main, opts.reps);
    // A peer experiment leaves another GPU's context current; everything else runs on the main one.
    gpu.bind()?;
    if case.setup.api == Api::Runtime {
        // The runtime's current device is the one whose primary context the driver-side objects live in.
        async_lab_driver::runtime::set_device(gpu.ordinal)?;
    }
    let recs = match &case.facts {
        Facts::Copy(op) | Facts::Sweep(async_lab_core::catalogue::copies::SweepFacts(op)) => {
            vec![super::copies::run(gpu, case, *op, reps)?]
        }
        Facts::Memset(op) => vec![super::memset::run(gpu, case, *op, reps)?],
        Facts::Graph(op) => vec![super::graphs::run(gpu, case, *op, reps)?],
        Facts::Unified(op) => vec![super::unified::run(gpu, case, *op, reps)?],
        Facts::Limits(op) => vec![super::limits::run(gpu, case, *op, reps)?],
        Facts::StreamMem(op) => vec![super::streammem::run(gpu, case, *op, reps)?],
        Facts::Vmm(op) => vec![super::vmm::run(gpu, case, *op, reps)?],
        Facts::Batch(op) => vec![super::batched::run(gpu, case, *op, reps)?],
        Facts::Threads(op) => vec![super::threads::run(gpu, case, *op, reps)?],
        Facts::Launch(op) => vec![super::launches::run(gpu, case, *op, reps)?],
        Facts::Load(op) => vec![super::loading::run(gpu, case, *op, reps)?],
        Facts::Alloc(op) => vec![super::alloc::run(gpu, case, *op, reps)?],
        Facts::Callback(op) => vec![super::callbacks::run(gpu, case, *op, reps)?],
        Facts::Wait(op) => vec![super::waiting::run(gpu, case, *op, reps)?],
        Facts::Seed(kind) => super::seed::run(gpu, *kind, reps)?,
        Facts::SeedRuntime(op) => super::seed_runtime::run(gpu, *op, reps)?,
        // A fixed number of calls (the C++ reference's), whatever `--reps` says.
        Facts::Overhead(op) => vec![super::overhead::run(gpu, case, *op)?],
        Facts::Peer(op) => {
            let all = gpus.all()?;
            let main = all.iter().position(|g| g.ordinal == gpu.ordinal).unwrap_or(0);
            let mut recs = super::peer::run(&all, main, case, *op, reps, opts.peer_loopback, progress);
            // An error a GPU reports now taints what was just measured on it: keep the data, say so.
            for g in &all {
                if let Err(e) = g.synchronize() {
                    for r in recs.iter_mut().filter(|r| r.error.is_none()) {
                        r.error = Some(format!("GPU {} reported an error after this experiment: {e}", g.ordinal));
                    }
                }
            }
            recs
        }
    };
    // Leave nothing in flight for the next experiment, and surface an asynchronous error here (the peer arm
    // has done this for every GPU, keeping its records).
    if !matches!(case.facts, Facts::Peer(_)) {
        gpu.synchronize().context("the GPU reported an error after this experiment")?;
    }
    Ok(recs)
}

/// Runs `group` in `async-lab __child` with `var=value` set, and reads its records from its stdout.
fn run_child(var: &str, value: &str, group: &[&Case], opts: &RunOptions) -> anyhow::Result<ChildRecords> {
    let exe = std::env::current_exe().context("cannot find the async-lab executable to start a child process")?;
    let ids: Vec<&str> = group.iter().map(|c| c.setup.id.as_str()).collect();
    let mut cmd = Command::new(exe);
    cmd.env(var, value)
        .arg("__child")
        .arg("--reps")
        .arg(opts.reps.to_string())
        .arg("--device")
        .arg(opts.device.to_string());
    if let Some(p) = &opts.ptx {
        cmd.arg("--ptx").arg(p);
    }
    if let Some(p) = &opts.cudart {
        cmd.arg("--cudart").arg(p);
    }
    cmd.arg("--ids").arg(ids.join(","));
    let output = cmd.output().context("cannot start the child process")?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        bail!("the child process with {var}={value} failed ({}): {}", output.status, stderr.trim());
    }
    serde_json::from_slice(&output.stdout).context("the child process printed no valid records")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::catalogue;
    use async_lab_core::catalogue::presets::Preset;

    #[test]
    fn without_a_runtime_its_cases_are_not_run_and_the_driver_cases_run() {
        let cases = catalogue(Preset::Default, None);
        let why = "no CUDA runtime library (libcudart.so) found";
        let runtime = cases.iter().find(|c| c.setup.api == Api::Runtime).expect("the default preset has runtime cases");
        let driver = cases.iter().find(|c| c.setup.api == Api::Driver).expect("and driver cases");
        let record = runtime_gate(runtime, Err(why)).expect("a runtime case is gated");
        assert_eq!(record.skipped.as_deref(), Some(why));
        assert!(record.error.is_none() && record.reps.is_empty());
        assert!(runtime_gate(driver, Err(why)).is_none());
        assert!(runtime_gate(runtime, Ok(())).is_none());
    }
}

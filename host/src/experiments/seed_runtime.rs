//! The seed program as its author ran it: through the CUDA runtime API (libcudart), not the driver API that
//! `seed.rs` uses. The question's program calls `cudaMemcpyAsync(..., cudaMemcpyDefault, stream)`, launches
//! with `<<<...>>>` (`cudaLaunchKernel`) and enqueues its flag with `cudaStreamAddCallback`; the runtime is a
//! layer over the driver (it starts the context, loads the program's kernels), and that layer could add a
//! wait the driver's calls do not have. So the same sequence is measured here, call for call, through the
//! runtime, in three programs:
//!
//! - `runtime/seed/<pageable|pinned>/<step>`: the question's program. A 10 MB (1e7 bytes) host → device copy,
//!   the 1e6-cycle kernel on 128×128 threads, the copy back, the callback, on one `cudaStreamNonBlocking`
//!   stream. It runs in this process, with `CUDA_MODULE_LOADING` as the process was started: the author set
//!   nothing, and unset means lazy loading (the default since CUDA 12.2), so this is the program as its author
//!   would run it today, measured beside the driver's seed under the same conditions. Forcing `LAZY` would
//!   measure a setting rather than the program (and would override a user who set the variable on purpose).
//! - `runtime/seed-eager/<pageable|pinned>/<step>`: the same program in a child process started with
//!   `CUDA_MODULE_LOADING=EAGER` (the variable is read once, when the driver starts): the kernel is loaded
//!   into the context when its library is loaded, as every kernel was before CUDA 11.7.
//! - `runtime/seed-answer/<pageable|pinned>/<step>`: the accepted answer's variant: `cudaFree(0)` first (a
//!   step of its own), a 2 GiB buffer (`--seed-bytes`), pageable memory from `malloc` or pinned memory from
//!   `cudaMallocHost`, then the question's four calls.
//!
//! Pageable memory is a plain Rust allocation (what `new char[]` and `malloc` give); pinned memory comes
//! from `cudaMallocHost`, device memory from `cudaMalloc`, the stream from `cudaStreamCreateWithFlags`. The
//! kernel is `spin_sleep` from the project's PTX, loaded with `cudaLibraryLoadData` before each repetition,
//! so that every measured launch is a first launch, as the seed program's only launch is.
//!
//! The signals are the driver seed's, from the same code (`seed::Sequence`): each call's time; whether the
//! work ahead of it ended during the call, read off the GPU's timeline (events between the steps, moved onto
//! the host's clock); whether its own work was done at the return (a stream query); and the callback's flag
//! right after the last enqueue and after `cudaStreamSynchronize`. Events, the stamp kernel and the stream
//! query go through the driver: the runtime and the driver share the primary context, and a `cudaStream_t` is
//! a `CUstream`.
//!
//! Where the first launch's cost shows: under lazy loading `cudaLaunchKernel` loads the kernel into the
//! context itself, so the cost is in step `2-launch`'s call time, and if loading needs a context
//! synchronization (rule K4) the launch also waits for the copy ahead of it (class `waited-then-staged`).
//! Under `EAGER` that cost is paid by `cudaLibraryLoadData`, before the repetition and not measured (in an
//! nvcc-built program it is paid when the context starts: in the answer's `cudaFree(0)`), and the launch is
//! an ordinary one (rule K1).
//!
//! The programs, their steps, ids, calls and rules are the catalogue's (`async_lab_core::catalogue::
//! seed_runtime`); each step's record is set up from its facts (`SeedRuntimeFacts::steps`).

use super::seed::{
    push_reps, set_flag, step_record, time_call, Flag, SeedStream, Sequence, TailProbe, BLOCK, GRID, KERNEL_CYCLES,
};
use crate::pattern;
use async_lab_core::catalogue::seed::Step;
use async_lab_core::catalogue::seed_runtime::{ModuleLoading, Program, SeedRuntimeFacts};
use async_lab_core::catalogue::Case;
use async_lab_core::record::{CaseRecord, CaseSetup, Rep};
use async_lab_driver::runtime::library::RtLibrary;
use async_lab_driver::runtime::memory::{self as rtmem, RtDeviceBuffer, RtHostBuffer};
use async_lab_driver::runtime::stream::{self as rtstream, RtStream};
use async_lab_driver::runtime::sys as rs;
use async_lab_driver::{Gpu, StreamHandle};
use async_lab_ptx::kernels;
use std::ffi::c_void;

/// How this process loads code, as its runtime programs' facts say it (`CUDA_MODULE_LOADING` as the process
/// was started; the driver reads it once, when it starts).
pub fn module_loading() -> ModuleLoading {
    ModuleLoading::of_env(std::env::var("CUDA_MODULE_LOADING").ok().as_deref())
}

impl SeedStream for RtStream<'_> {
    fn stream(&self) -> StreamHandle<'_> {
        self.handle()
    }
}

/// The runtime's callback (`cudaStreamCallback_t`, the question's `callback(cudaStream_t, cudaError_t, void*)`):
/// sets the flag. The stream and status are not read; the status is a raw code (see
/// `runtime::stream_callback`).
unsafe extern "C" fn set_flag_runtime(_stream: rs::cudaStream_t, _status: u32, user: *mut c_void) {
    // SAFETY: `user` is the `Flag::user` pointer passed to cudaStreamAddCallback below.
    unsafe { set_flag(user) }
}

/// Runs the program `reps` times (plus a warm-up, not kept) and returns one record per step.
pub fn run(gpu: &Gpu, op: SeedRuntimeFacts, reps: usize) -> anyhow::Result<Vec<CaseRecord>> {
    let bytes = usize::try_from(op.bytes)?;
    // The program's objects, made once (the programs make them before the calls they time).
    let stream = RtStream::new_non_blocking(gpu)?;
    let mut host = RtHostBuffer::new(gpu, op.memory, bytes)?;
    let device = RtDeviceBuffer::new(gpu, bytes)?;
    let out = RtDeviceBuffer::new(gpu, (GRID * BLOCK) as usize * 8)?;
    let mut reference = vec![0u8; bytes];
    pattern::fill(&mut reference, 0, 0x5EED);
    let flag = Flag::new();
    let mut probe = TailProbe::new(bytes, async_lab_driver::device::reads_pageable_memory(gpu.device)?);
    // Declared before `seq`, whose drop waits for the GPU: a library is never unloaded under a running kernel.
    let mut library: Option<RtLibrary> = None;
    let mut seq = Sequence::new(gpu, &stream, Step::ALL.len())?;
    let mut records: Vec<CaseRecord> =
        op.steps().into_iter().map(|s| step_record(CaseSetup::of(&Case::runtime(s)))).collect();
    let s = stream.handle();
    let copy = rs::cudaMemcpyKind::cudaMemcpyDefault;

    for rep in 0..=reps {
        // 1. The data and a fresh kernel, with nothing in flight afterwards.
        // SAFETY: the device is idle between repetitions (synchronized at the end of the last one).
        unsafe { host.bytes_mut() }.copy_from_slice(&reference);
        // SAFETY: `device` holds `bytes` bytes. (On the legacy stream: the synchronization below waits for it.)
        unsafe { rtmem::memset(device.addr(), 0, bytes)? };
        flag.reset();
        let kernel = library.insert(RtLibrary::load(gpu.ptx.text())?).kernel(kernels::SPIN_SLEEP.name)?;
        gpu.synchronize()?;

        // 2. The answer's cudaFree(0), with nothing in flight.
        let free = if op.program == Program::Answer {
            let (start, timed, result) = time_call(rtmem::free_null);
            result?;
            Some(Rep {
                host_call_ns: timed.wall_ns,
                host_cpu_ns: timed.cpu_ns,
                host_call_start_ns: start,
                ..Rep::default()
            })
        } else {
            None
        };

        // 3. The question's four calls, one after the other, each timed and queried at its return.
        seq.start()?;
        for (k, step) in Step::ALL.into_iter().enumerate() {
            // SAFETY: `device` and `host` are live and `bytes` long, `out` holds one u64 per thread of the
            // launch; none is touched by the host until the stream is synchronized below, and none is freed
            // before the GPU is idle (`seq`, dropped before them, waits for it on every path). spin_sleep takes
            // (u64 cycles, *mut u64 out): `params` points at one value of each type, alive during the call. Its
            // library is unloaded only after a synchronization. `set_flag_runtime` gets a `Flag::user` pointer.
            // The stream is the runtime's, in the primary context the driver-side objects share.
            seq.step(k, || unsafe {
                match step {
                    Step::HtoD => rtmem::rt_memcpy_async(device.addr(), host.addr(), bytes, copy, s),
                    Step::Launch => {
                        let (mut cycles, mut out_ptr) = (KERNEL_CYCLES, out.addr());
                        let mut params =
                            [(&mut cycles as *mut u64).cast::<c_void>(), (&mut out_ptr as *mut u64).cast::<c_void>()];
                        kernel.launch(GRID, BLOCK, s, &mut params)
                    }
                    Step::DtoH => rtmem::rt_memcpy_async(host.addr(), device.addr(), bytes, copy, s),
                    Step::Callback => rtstream::rt_stream_add_callback(s, set_flag_runtime, flag.user()),
                }
            })?;
            if step == Step::HtoD {
                // SAFETY: `host` is the live source of the copy just made; pageable memory only (the probe
                // checks), which no DMA reads.
                unsafe { probe.after_first_call(seq.own_done(k), op.memory, host.bytes_mut()) };
            }
        }

        // 4. What the question prints, and the data's round trip.
        let conclusion = flag.around(|| stream.synchronize())?;
        // SAFETY: the stream is synchronized: the copy back has finished.
        let captured = probe.verify(unsafe { host.bytes_mut() }, &reference)?;
        library = None;
        if rep == 0 {
            continue; // warm-up: buffers touched, staging buffers made, the runtime's entry points resolved
        }

        // 5. One repetition per step, on the GPU's timeline.
        let mut reps = seq.reps_of_the_question(captured, conclusion)?;
        if let Some(mut r) = free {
            // No GPU work to place; the reference stamp is the repetition's, for the timeline.
            r.gpu_origin_ns = reps[0].gpu_origin_ns;
            reps.insert(0, r);
        }
        push_reps(&mut records, reps);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::{catalogue, catalogue_with};
    use async_lab_core::api::Api;
    use async_lab_core::catalogue::presets::Preset;
    use async_lab_core::catalogue::seed_runtime::ANSWER_BYTES;
    use async_lab_core::catalogue::Facts;

    type HostCase = crate::experiments::Case;

    fn runtime_seed_cases(seed_bytes: u64) -> Vec<HostCase> {
        catalogue_with(Preset::Seed, None, seed_bytes)
            .into_iter()
            .filter(|c| matches!(c.facts, Facts::SeedRuntime(_)))
            .collect()
    }

    fn op(c: &HostCase) -> SeedRuntimeFacts {
        match c.facts {
            Facts::SeedRuntime(op) => op,
            _ => panic!("{} is not a runtime seed case", c.setup.id),
        }
    }

    #[test]
    fn the_seed_preset_holds_the_driver_seed_and_three_runtime_programs() {
        let ids: Vec<String> = catalogue(Preset::Seed, None).into_iter().map(|c| c.setup.id).collect();
        assert_eq!(
            ids,
            [
                "seed/pageable",
                "seed/pinned",
                "runtime/seed/pageable",
                "runtime/seed/pinned",
                "runtime/seed-eager/pageable",
                "runtime/seed-eager/pinned",
                "runtime/seed-answer/pageable",
                "runtime/seed-answer/pinned",
            ]
        );
    }

    #[test]
    fn runtime_programs_have_no_twin_and_their_steps_are_set_up_from_their_facts() {
        for c in runtime_seed_cases(ANSWER_BYTES) {
            assert_eq!(c.setup.api, Api::Runtime, "{}", c.setup.id);
            assert!(
                c.setup.case.as_ref().and_then(async_lab_core::catalogue::Case::runtime_twin).is_none(),
                "{} has a twin",
                c.setup.id
            );
            for step in op(&c).steps() {
                let setup = CaseSetup::of(&Case::runtime(step));
                assert!(setup.id.starts_with(&format!("{}/", c.setup.id)), "{}", setup.id);
                assert_eq!(setup.case.map(|k| k.facts), Some(step.into()), "{}", setup.id);
            }
        }
    }

    #[test]
    fn group_cases_carry_the_buffer_size_for_the_preflight() {
        for c in runtime_seed_cases(ANSWER_BYTES) {
            assert_eq!(c.setup.layout.bytes, op(&c).bytes, "{}", c.setup.id);
        }
        let largest = catalogue(Preset::Seed, None).iter().map(|c| c.setup.layout.bytes).max();
        assert_eq!(largest, Some(ANSWER_BYTES));
    }

    #[test]
    fn only_the_eager_cases_run_in_a_child_with_eager_loading() {
        for c in runtime_seed_cases(ANSWER_BYTES) {
            let eager = c.setup.id.starts_with("runtime/seed-eager/");
            assert_eq!(c.child_env(), eager.then_some(("CUDA_MODULE_LOADING", "EAGER")), "{}", c.setup.id);
            assert_eq!(op(&c).program == Program::QuestionEager, eager, "{}", c.setup.id);
        }
    }

    #[test]
    fn seed_bytes_reaches_the_answer_cases() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(["async-lab", "--preset", "seed", "--seed-bytes", "64MiB"]).unwrap();
        assert_eq!(cli.run.seed_bytes, 64 << 20);
        let cases = catalogue_with(cli.run.preset, cli.run.sizes.as_deref(), cli.run.seed_bytes);
        for c in cases.iter().filter(|c| c.setup.id.starts_with("runtime/seed-answer/")) {
            assert_eq!((c.setup.layout.bytes, op(c).bytes), (64 << 20, 64 << 20), "{}", c.setup.id);
        }
        let answer = runtime_seed_cases(64 << 20)
            .iter()
            .flat_map(|c| op(c).steps())
            .map(|s| CaseSetup::of(&Case::runtime(s)))
            .find(|s| s.id == "runtime/seed-answer/pinned/3-dtoh");
        let dtoh = answer.unwrap();
        assert_eq!(dtoh.layout.bytes, 64 << 20);
        assert!(dtoh.what.contains("64MiB"), "{}", dtoh.what);
        // The question's own program keeps its 10 MB.
        assert!(cases
            .iter()
            .filter(|c| c.setup.id.starts_with("runtime/seed/"))
            .all(|c| c.setup.layout.bytes == 10_000_000));
        let default = crate::cli::Cli::try_parse_from(["async-lab", "--preset", "seed"]).unwrap();
        assert_eq!(default.run.seed_bytes, ANSWER_BYTES);
        assert!(crate::cli::Cli::try_parse_from(["async-lab", "--seed-bytes", "lots"]).is_err());
    }
}

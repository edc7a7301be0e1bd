//! The answer fits the program, over the committed traces: what a program pays once is recognised by its cause
//! wherever it happens (`trace::once`) and kept out of the steady state, the by-place rows and
//! `--fail-on-held` unless asked; each remedy is worded in the program's framework (`trace::framework`), so
//! that no JAX, CuPy or native trace is told PyTorch's API; and every verdict has its remedy.

use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::findings::{self, Kind};
use async_lab_core::trace::format::Trace;
use async_lab_core::trace::framework::Framework;
use async_lab_core::trace::gate::{self, Asked};
use async_lab_core::trace::headline;
use async_lab_core::trace::once::Once;
use async_lab_core::trace::warmup;
use std::path::PathBuf;

fn committed(name: &str) -> PathBuf {
    async_lab_tests::trace_files()
        .into_iter()
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(name))
        .unwrap_or_else(|| panic!("no committed trace {name}*"))
}

/// The ResNet-18 training loop: its context, its libraries and lazy loads, its caching allocator's growth and
/// the model's upload (`resnet18(...).cuda()`, through `torch.nn.Module`) are paid once, wherever in the run
/// they happened; the gate of a CI job over it lists none of them, and passes where the steady state does.
#[test]
fn a_training_loops_one_time_work_is_kept_apart_wherever_it_happens() {
    let trace = Trace::load(&committed("trace-torch_resnet_train-")).unwrap();
    let a = Analysis::of(&trace.processes[0]);
    assert_eq!(a.framework, Framework::Torch);
    let count = |o: Once| a.once.iter().filter(|&&x| x == Some(o)).count();
    assert!(count(Once::ContextCreation) >= 1 && count(Once::LoadingCode) > 50, "{:?}", a.once);
    assert!(count(Once::AllocatorGrowth) > 10, "the caching allocator's cudaMalloc calls");
    assert!(count(Once::Upload) >= 3, "the model's weights copied through Module.cuda()");
    // Loads after the first enqueue too: start-up alone would have missed them.
    let late = (0..a.program.calls.len()).filter(|&i| a.once[i] == Some(Once::LoadingCode) && !a.startup[i]).count();
    assert!(late > 20, "{late}");
    // The model's line leads no steady-state finding as pageable copies, and no by-place row holds a load.
    let f = findings::findings(&a, &warmup::warm_up(&a, 0), false);
    for s in f.iter().filter(|f| !f.warm_up) {
        assert!(!s.kind.paid_once(), "{s:?}");
        assert!(!(s.kind == Kind::PageableCopy && s.where_words.contains("resnet18")), "{}", s.where_words);
    }
    assert!(f.iter().any(|f| f.warm_up && f.kind == Kind::Upload && f.remedy.words.contains("torch.device")));
    let rows = a.by_location(20_000, false).rows;
    // `outputs = model(images)` held 545 ms, all of it loads: its steady state is a few ms.
    let model = rows.iter().find(|r| r.place.words == "torch_resnet_train.py:69 main");
    assert!(model.is_none_or(|r| r.total_ns < 10_000_000), "{model:?}");
    assert!(rows.iter().all(|r| r.classes.iter().all(|c| c.class != "async")), "{rows:?}");
    // The gate the issue ran: --after-startup --skip-first 3 --fail-on-held 5ms.
    let analyses = [a];
    let asked = Asked { limit_ns: 5_000_000, warm_up: false, after_startup: true, skip_first: 3 };
    let g = gate::gate(&analyses, asked);
    assert!(g.passed && g.calls.is_empty() && g.warm_up_left_out > 40, "{g:?}");
    // --skip-first changes the gate: the first steps' pageable batch copy, past 5 ms, is warm-up with it.
    let without = gate::gate(&analyses, Asked { skip_first: 0, ..asked });
    assert!(!without.passed && without.warm_up_left_out < g.warm_up_left_out, "{without:?}");
    let g = gate::gate(&analyses, Asked { warm_up: true, ..asked });
    assert!(!g.passed && g.calls.iter().any(|c| c.name == "cuModuleLoadData" && c.warm_up), "{g:?}");
}

/// No committed trace's `--fail-on-held` lists one-time work unless asked, and each call it lists is in the
/// steady state.
#[test]
fn no_gate_lists_one_time_work_unless_asked() {
    for path in async_lab_tests::trace_files() {
        let trace = Trace::load(&path).unwrap();
        let analyses: Vec<Analysis> = trace.processes.iter().map(Analysis::of).collect();
        let asked = Asked { limit_ns: 1_000_000, warm_up: false, after_startup: false, skip_first: 0 };
        let g = gate::gate(&analyses, asked);
        for c in &g.calls {
            let a = analyses.iter().find(|a| a.process.pid == c.pid).unwrap();
            let i = a.program.calls.iter().position(|x| x.corr == c.corr).unwrap();
            assert!(!a.paid_once(i) && !c.warm_up && !c.kind.paid_once(), "{}: {c:?}", path.display());
        }
        let all = gate::gate(&analyses, Asked { warm_up: true, ..asked });
        assert_eq!(all.calls.len(), g.calls.len() + g.warm_up_left_out, "{}", path.display());
    }
}

/// Words of one framework's API that another's remedy must not carry.
fn api_words(f: Framework) -> &'static [&'static str] {
    match f {
        Framework::Torch => &["torch.", "DataLoader", ".item()", "pin_memory", "non_blocking"],
        Framework::Jax => &["jax.", "XLA_PYTHON"],
        Framework::CuPy => &["cupy", "cupyx"],
        Framework::Numba => &["cuda.pinned_array", "@cuda.jit", "cuda.to_device"],
        Framework::Native => &["cudaMallocHost", "cudaStreamBeginCapture"],
    }
}

/// Every committed trace's remedies and verdict are worded in its own framework's API: a JAX program is
/// never told `.item()` or `pin_memory=True`, a C++ program never a DataLoader; and every verdict has one.
#[test]
fn remedies_are_worded_in_the_programs_framework_and_every_verdict_has_one() {
    let mut seen = std::collections::BTreeSet::new();
    for path in async_lab_tests::trace_files() {
        let trace = Trace::load(&path).unwrap();
        for p in &trace.processes {
            let a = Analysis::of(p);
            let warm = warmup::warm_up(&a, 0);
            let h = headline::headline(&a, &warm, &headline::totals(&a.program));
            if !h.threads.is_empty() {
                assert!(!h.verdict.remedy.words.is_empty(), "{}: {:?}", path.display(), h.verdict);
            }
            let mut texts: Vec<(Framework, String)> = vec![(a.framework, h.verdict.remedy.words.clone())];
            texts.extend(findings::findings(&a, &warm, false).into_iter().map(|f| (f.framework, f.remedy.words)));
            for (framework, words) in texts {
                seen.insert(framework);
                for other in [Framework::Torch, Framework::Jax, Framework::CuPy, Framework::Numba] {
                    if other == framework {
                        continue;
                    }
                    for w in api_words(other) {
                        assert!(!words.contains(w), "{}: a {framework:?} remedy says {w:?}: {words}", path.display());
                    }
                }
            }
        }
    }
    // The committed traces hold programs of PyTorch, JAX, CuPy and the CUDA API itself.
    for f in [Framework::Torch, Framework::Jax, Framework::CuPy, Framework::Native] {
        assert!(seen.contains(&f), "no committed trace of {f:?}: {seen:?}");
    }
}

/// The processes' frameworks, as their traces show them.
#[test]
fn each_programs_framework_is_read_from_its_trace() {
    for (name, framework) in [
        ("trace-torch_train-h200", Framework::Torch),
        ("trace-hf_generate-", Framework::Torch),
        ("trace-jax_program-", Framework::Jax),
        ("trace-cupy_program-", Framework::CuPy),
        ("trace-native_program-", Framework::Native),
        ("trace-cublas_program-", Framework::Native),
    ] {
        let trace = Trace::load(&committed(name)).unwrap();
        assert_eq!(Analysis::of(&trace.processes[0]).framework, framework, "{name}");
    }
}

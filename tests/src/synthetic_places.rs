//! Synthetic traces of programs as users write them, placed by their own lines (format 4): a Python training
//! loop whose frames were read without the GIL, with a thread that runs no Python (PyTorch's autograd
//! thread) working while the main thread waits in `loss.backward()`, and the text of the script's lines; a
//! C++ program whose frames carry source lines, with its text. Built line by line as the injection library
//! and `async-lab trace` write them (`trace_synthetic`'s clock and helpers).

use crate::trace_synthetic::{call_on, kernel, MS, T0, US};
use async_lab_core::trace::format::{header, Gil, Line, NativeFrame, PyFrame, ThreadFrames};

/// The Python program's process id, which is its main thread's.
pub const PYTHON_PID: u32 = 4242;
/// Its autograd thread, which runs no Python.
pub const AUTOGRAD_TID: u64 = 4300;
/// The script, as Python names it (an absolute path).
pub const SCRIPT: &str = "/home/me/train.py";
/// The C++ program's source file.
pub const SOURCE: &str = "/home/me/app/main.cu";

fn py(file: &str, line: u32, function: &str) -> PyFrame {
    PyFrame { file: file.into(), line, function: function.into() }
}

fn site(path: &str) -> String {
    format!("/usr/local/lib/python3.12/dist-packages/{path}")
}

fn native(module: &str, function: &str, source: Option<(&str, u32)>) -> NativeFrame {
    NativeFrame {
        module: module.into(),
        offset: 0x1000,
        function: Some(function.into()),
        file: source.map(|(f, _)| f.to_owned()),
        line: source.map(|(_, l)| l),
    }
}

fn location(tid: u64, corr: u32, python: Vec<PyFrame>, native: Vec<NativeFrame>) -> Line {
    let gil = Gil::NotHeld;
    Line::Location { tid, corr, gil, python, native, took_ns: Some(25 * US), others: Vec::new() }
}

fn source(file: &str, line: u32, text: &str) -> Line {
    Line::Source { file: file.into(), line, text: text.into() }
}

/// The lines of one process's section: a header, the lines, an end line.
fn section(pid: u32, program: &str, lines: Vec<Line>) -> String {
    let mut all = vec![header(pid, vec![program.into()], Some(130001))];
    all.extend(lines);
    all.push(Line::End { t: T0 + 10_000 * MS });
    all.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect()
}

/// A PyTorch-like training step on the main thread (4242) and the autograd thread (4300), stream 13:
/// - corr 11, `cudaStreamSynchronize` at `train.py:32` (`loss.backward()`, under torch's `backward`), held
///   29 ms waiting for the kernel `spin` (corr 10);
/// - corr 20, the autograd thread's 4 ms `cudaMemcpyAsync` from pageable memory, made while corr 11 was
///   under way, located with native frames only;
/// - corr 21, the autograd thread's 1.5 ms launch after corr 11 returned, with no location;
/// - corr 30, a 12 ms `cudaMemcpyAsync` device → host at `train.py:35` (`value = loss.item()`), five Python
///   frames deep below the script;
/// - corr 40, a 30 µs `cudaMalloc` with no location.
pub fn python_training_step() -> String {
    let main = u64::from(PYTHON_PID);
    let torch = |path: &str| site(&format!("torch/{path}"));
    let libtorch = "/usr/local/lib/python3.12/dist-packages/torch/lib/libtorch_cuda.so";
    let lines = vec![
        source(SCRIPT, 32, "loss.backward()"),
        source(SCRIPT, 35, "value = loss.item()"),
        call_on(main, "cudaLaunchKernel", 10, 0, 5 * US),
        kernel("spin", 13, 10, 10 * US, 30 * MS),
        call_on(main, "cudaStreamSynchronize", 11, MS, 30 * MS + 10 * US),
        location(
            main,
            11,
            vec![
                py(&torch("autograd/graph.py"), 825, "_engine_run_backward"),
                py(&torch("_tensor.py"), 626, "backward"),
                py(SCRIPT, 32, "main"),
                py("<frozen runpy>", 88, "_run_code"),
            ],
            vec![native(libtorch, "c10::cuda::stream_synchronize(CUstream_st*)", None)],
        ),
        Line::Sync { sync_type: 3, start: T0 + MS, end: T0 + 30 * MS, stream: Some(13), corr: 11, event: None },
        call_on(AUTOGRAD_TID, "cudaMemcpyAsync", 20, 2 * MS, 6 * MS),
        location(
            AUTOGRAD_TID,
            20,
            vec![],
            vec![
                native(libtorch, "at::native::copy_(at::Tensor&, at::Tensor const&, bool)", None),
                native("/usr/lib/x86_64-linux-gnu/libc.so.6", "start_thread", None),
            ],
        ),
        Line::Memcpy {
            copy_kind: 1,
            src_kind: 1,
            dst_kind: 3,
            bytes: 64 << 20,
            start: T0 + 2 * MS + 100 * US,
            end: T0 + 6 * MS - 10 * US,
            stream: 14,
            corr: 20,
        },
        call_on(AUTOGRAD_TID, "cudaLaunchKernel", 21, 40 * MS, 41 * MS + 500 * US),
        call_on(main, "cudaMemcpyAsync", 30, 50 * MS, 62 * MS),
        location(
            main,
            30,
            vec![
                py(&site("transformers/generation/utils.py"), 2677, "_sample"),
                py(&site("transformers/generation/utils.py"), 2390, "generate"),
                py(&torch("nn/modules/module.py"), 1750, "_call_impl"),
                py(&torch("utils/_contextlib.py"), 116, "decorate_context"),
                py(SCRIPT, 35, "main"),
                py("<frozen runpy>", 88, "_run_code"),
            ],
            vec![],
        ),
        call_on(main, "cudaLaunchKernel", 29, 44 * MS, 44 * MS + 5 * US),
        kernel("loss", 13, 29, 45 * MS, 61 * MS),
        Line::Memcpy {
            copy_kind: 2,
            src_kind: 3,
            dst_kind: 1,
            bytes: 4,
            start: T0 + 61 * MS + 10 * US,
            end: T0 + 61 * MS + 20 * US,
            stream: 13,
            corr: 30,
        },
        call_on(main, "cudaMalloc", 40, 70 * MS, 70 * MS + 30 * US),
    ];
    section(PYTHON_PID, "python3", lines)
}

/// A C++ program built with `-g`: its 80 ms pageable `cudaMemcpyAsync` (corr 10) made at `main.cu:59` in
/// `copy_pageable`, through libcudart, with the line's text.
pub fn native_program_with_source() -> String {
    let app = "/home/me/app/prog";
    let lines = vec![
        source(SOURCE, 59, "cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s);"),
        call_on(5000, "cudaMemcpyAsync", 10, 0, 80 * MS),
        Line::Location {
            tid: 5000,
            corr: 10,
            gil: Gil::NoPython,
            python: vec![],
            native: vec![
                native("/usr/local/cuda/lib64/libcudart.so.13", "cudaMemcpyAsync", None),
                native(app, "copy_pageable(float*, float*, unsigned long, CUstream_st*)", Some((SOURCE, 59))),
                native(app, "main", Some((SOURCE, 96))),
                native("/usr/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_main", None),
            ],
            took_ns: Some(40 * US),
            others: Vec::new(),
        },
        Line::Memcpy {
            copy_kind: 1,
            src_kind: 1,
            dst_kind: 3,
            bytes: 256 << 20,
            start: T0 + MS,
            end: T0 + 80 * MS - 10 * US,
            stream: 13,
            corr: 10,
        },
    ];
    section(5000, "/home/me/app/prog", lines)
}

/// XLA's runtime threads in the JAX program, which run no Python (the first two share a name).
pub const XLA_TIDS: [u64; 2] = [4751, 4752];
/// A Python thread of the program that sits idle in `threading`'s `wait` (a thread pool's worker).
pub const IDLE_TID: u64 = 4800;
/// The JAX script.
pub const JAX_SCRIPT: &str = "/home/me/jax_train.py";

/// The standard library's file `name` (`threading.py`).
fn stdlib(name: &str) -> String {
    format!("/usr/lib/python3.12/{name}")
}

/// What the Python threads were doing when a call of XLA's threads returned: the main thread at `line` of the
/// script (under `jax`'s frame `jax_file`, without the GIL: waiting), or holding the GIL where `line` is
/// `None` (running Python); the idle thread in `threading`'s `wait`.
fn jax_others(line: Option<(u32, &str)>) -> Vec<ThreadFrames> {
    let main = match line {
        Some((line, jax_file)) => ThreadFrames {
            tid: u64::from(PYTHON_PID),
            gil: false,
            python: vec![
                py(&site(&format!("jax/_src/{jax_file}")), 700, "wait"),
                py(JAX_SCRIPT, line, "main"),
                py("<frozen runpy>", 88, "_run_code"),
            ],
        },
        None => ThreadFrames {
            tid: u64::from(PYTHON_PID),
            gil: true,
            python: vec![py(JAX_SCRIPT, 27, "main"), py("<frozen runpy>", 88, "_run_code")],
        },
    };
    let idle = ThreadFrames {
        tid: IDLE_TID,
        gil: false,
        python: vec![
            py(&stdlib("threading.py"), 359, "wait"),
            py(&stdlib("concurrent/futures/thread.py"), 89, "_worker"),
        ],
    };
    vec![main, idle]
}

/// A location of XLA's thread `tid` for call `corr`: native frames only, with what the Python threads were
/// doing then (`others`, format 5).
fn xla_location(tid: u64, corr: u32, others: Vec<ThreadFrames>) -> Line {
    let native = vec![native(
        "/usr/local/lib/python3.12/dist-packages/jaxlib/xla_extension.so",
        "xla::gpu::GpuExecutable::ExecuteThunks",
        None,
    )];
    Line::Location { tid, corr, gil: Gil::NotHeld, python: vec![], native, took_ns: Some(8 * US), others }
}

/// A JAX training loop traced with format 5 (threads named, the Python threads' frames read when a call of
/// XLA's threads returned), stream 13, six steps 40 ms apart, step `k` from `40k` ms:
/// - XLA's thread 4751 (`tf_XLAEigen`) copies the batch from pageable memory while the main thread (4242,
///   `python3`) waits at `jax_train.py:24` (`x = jnp.asarray(np_batch)`): a 1.2 ms `cuMemcpyHtoDAsync_v2`
///   (corr `100k + 10`), located;
/// - the main thread dispatches the jitted step at `jax_train.py:25` (`w, l = train_step(w, x, y)`): a 1.5 ms
///   `cuEventRecord` of its own, located (corr `100k + 1`);
/// - XLA's thread synchronizes its stream behind the kernel `gemm_fusion` (corr `100k + 2`) while the main
///   thread waits at `jax_train.py:26` (`v = float(loss)`): 30 ms, located (corr `100k + 20`); but in step 5
///   the main thread holds the GIL then (it runs Python): no Python thread was waiting; and in step 2 the
///   synchronization held 0.6 ms, under the location threshold: no location (corr 220);
/// - XLA's thread 4752 (also `tf_XLAEigen`) makes a 1.3 ms `cuMemFree_v2` (corr 150) with no location while
///   the main thread is inside its `cuEventRecord` of step 1.
///
/// Thread 4800 (`python3`) waits in `threading`'s `wait` all along (a thread pool's idle worker).
pub fn jax_training_loop() -> String {
    let main = u64::from(PYTHON_PID);
    let [xla, xla2] = XLA_TIDS;
    let mut lines = vec![
        source(JAX_SCRIPT, 24, "x = jnp.asarray(np_batch)"),
        source(JAX_SCRIPT, 25, "w, l = train_step(w, x, y)"),
        source(JAX_SCRIPT, 26, "v = float(loss)"),
        Line::Thread { tid: main, name: "python3".into() },
        Line::Thread { tid: xla, name: "tf_XLAEigen".into() },
        Line::Thread { tid: xla2, name: "tf_XLAEigen".into() },
        Line::Thread { tid: IDLE_TID, name: "python3".into() },
    ];
    for k in 0..6u32 {
        let t = u64::from(k) * 40 * MS;
        let c = 100 * k;
        // The batch's copy, while the main thread waits at line 24.
        lines.push(call_on(xla, "cuMemcpyHtoDAsync_v2", c + 10, t, t + 1_200 * US));
        lines.push(xla_location(xla, c + 10, jax_others(Some((24, "api.py")))));
        lines.push(Line::Memcpy {
            copy_kind: 1,
            src_kind: 1,
            dst_kind: 3,
            bytes: 8 << 20,
            start: T0 + t + 100 * US,
            end: T0 + t + 1_190 * US,
            stream: 13,
            corr: c + 10,
        });
        // The dispatch of the step, on the main thread.
        lines.push(call_on(main, "cuEventRecord", c + 1, t + 2 * MS, t + 3_500 * US));
        lines.push(location(
            main,
            c + 1,
            vec![py(&site("jax/_src/pjit.py"), 1300, "cache_miss"), py(JAX_SCRIPT, 25, "main")],
            vec![],
        ));
        lines.push(call_on(xla, "cuLaunchKernel", c + 2, t + 3_600 * US, t + 3_610 * US));
        let sync = if k == 2 { 600 * US } else { 30 * MS };
        lines.push(kernel("gemm_fusion", 13, c + 2, t + 3_620 * US, t + 3_700 * US + sync));
        lines.push(call_on(xla, "cuStreamSynchronize", c + 20, t + 3_700 * US, t + 3_710 * US + sync));
        lines.push(Line::Sync {
            sync_type: 3,
            start: T0 + t + 3_700 * US,
            end: T0 + t + 3_705 * US + sync,
            stream: Some(13),
            corr: c + 20,
            event: None,
        });
        if k != 2 {
            let line = if k == 5 { None } else { Some((26, "array.py")) };
            lines.push(xla_location(xla, c + 20, jax_others(line)));
        }
    }
    // Thread 4752's call, under way inside the main thread's dispatch of step 1.
    lines.push(call_on(xla2, "cuMemFree_v2", 150, 40 * MS + 2_100 * US, 40 * MS + 3_400 * US));
    section(PYTHON_PID, "python3", lines)
}

/// PyTorch's backward with format 5: the main thread (4242, `python3`) calls `loss.backward()` at
/// `train.py:32` and waits in the autograd engine outside any CUDA call, without the GIL, while the autograd
/// thread (4300, `pt_autograd_0`) launches and synchronizes: its 3 ms `cudaMemcpyAsync` (corr 20) and 5 ms
/// `cudaStreamSynchronize` (corr 22), located, with the main thread's frames then; a 300 µs
/// `cudaStreamSynchronize` (corr 24) with no location. Before, the main thread's forward pass made a 2 ms
/// launch at `train.py:30` (corr 10).
pub fn backward_while_the_main_thread_waits() -> String {
    let main = u64::from(PYTHON_PID);
    let torch = |path: &str| site(&format!("torch/{path}"));
    let waiting = || {
        vec![ThreadFrames {
            tid: main,
            gil: false,
            python: vec![
                py(&torch("autograd/graph.py"), 825, "_engine_run_backward"),
                py(&torch("_tensor.py"), 626, "backward"),
                py(SCRIPT, 32, "main"),
            ],
        }]
    };
    let autograd_location = |corr: u32| Line::Location {
        tid: AUTOGRAD_TID,
        corr,
        gil: Gil::NotHeld,
        python: vec![],
        native: vec![native(
            "/usr/local/lib/python3.12/dist-packages/torch/lib/libtorch_cpu.so",
            "torch::autograd::Engine::thread_main",
            None,
        )],
        took_ns: Some(9 * US),
        others: waiting(),
    };
    let lines = vec![
        source(SCRIPT, 30, "loss = model(x).sum()"),
        source(SCRIPT, 32, "loss.backward()"),
        Line::Thread { tid: main, name: "python3".into() },
        Line::Thread { tid: AUTOGRAD_TID, name: "pt_autograd_0".into() },
        call_on(main, "cudaLaunchKernel", 10, 0, 2 * MS),
        location(
            main,
            10,
            vec![py(&torch("nn/modules/module.py"), 1750, "_call_impl"), py(SCRIPT, 30, "main")],
            vec![],
        ),
        kernel("forward", 13, 10, 2 * MS, 10 * MS),
        call_on(AUTOGRAD_TID, "cudaMemcpyAsync", 20, 11 * MS, 14 * MS),
        autograd_location(20),
        Line::Memcpy {
            copy_kind: 1,
            src_kind: 1,
            dst_kind: 3,
            bytes: 32 << 20,
            start: T0 + 11 * MS + 100 * US,
            end: T0 + 14 * MS - 10 * US,
            stream: 13,
            corr: 20,
        },
        call_on(AUTOGRAD_TID, "cudaLaunchKernel", 21, 14 * MS + 10 * US, 14 * MS + 20 * US),
        kernel("backward", 13, 21, 14 * MS + 30 * US, 19 * MS),
        call_on(AUTOGRAD_TID, "cudaStreamSynchronize", 22, 14 * MS + 30 * US, 19 * MS + 20 * US),
        autograd_location(22),
        Line::Sync {
            sync_type: 3,
            start: T0 + 14 * MS + 30 * US,
            end: T0 + 19 * MS + 10 * US,
            stream: Some(13),
            corr: 22,
            event: None,
        },
        call_on(AUTOGRAD_TID, "cudaLaunchKernel", 23, 19 * MS + 30 * US, 19 * MS + 40 * US),
        kernel("backward", 13, 23, 19 * MS + 50 * US, 19 * MS + 340 * US),
        call_on(AUTOGRAD_TID, "cudaStreamSynchronize", 24, 19 * MS + 50 * US, 19 * MS + 350 * US),
        Line::Sync {
            sync_type: 3,
            start: T0 + 19 * MS + 50 * US,
            end: T0 + 19 * MS + 345 * US,
            stream: Some(13),
            corr: 24,
            event: None,
        },
    ];
    section(PYTHON_PID, "python3", lines)
}

//! Synthetic traces of programs as users write them, placed by their own lines (format 4): a Python training
//! loop whose frames were read without the GIL, with a thread that runs no Python (PyTorch's autograd
//! thread) working while the main thread waits in `loss.backward()`, and the text of the script's lines; a
//! C++ program whose frames carry source lines, with its text. Built line by line as the injection library
//! and `async-lab trace` write them (`trace_synthetic`'s clock and helpers).

use crate::trace_synthetic::{call_on, kernel, MS, T0, US};
use async_lab_core::trace::format::{header, Gil, Line, NativeFrame, PyFrame};

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

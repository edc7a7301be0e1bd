//! The place a user recognises (`trace::location`, `trace::waiting`), on synthetic traces of programs as users
//! write them (`synthetic_places`): the script's own line below the packages' frames, with the chain to the
//! library line that made the call and the line's text; a thread that runs no Python placed at the Python
//! line that was waiting for it, saying so; a C++ program's own source line with its text; and the same in
//! the by-location table, `--explain`, the JSON report and the Perfetto export, through `--keep-held` too.

use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::format::{Line, Trace};
use async_lab_core::trace::json;
use async_lab_core::trace::location::{Inferred, Kind, Place, ViaHow};
use async_lab_tests::run_with_stub as run;
use async_lab_tests::synthetic_places as syn;
use serde_json::Value;

fn file(name: &str, text: &str) -> std::path::PathBuf {
    async_lab_tests::temp_file("trace-places", name, text)
}

fn places(text: &str) -> Vec<(u32, Place)> {
    let trace = Trace::parse(text).unwrap();
    let a = Analysis::of(&trace.processes[0]);
    a.program.calls.iter().zip(&a.places).map(|(c, p)| (c.corr, p.clone())).collect()
}

fn place(all: &[(u32, Place)], corr: u32) -> Place {
    all.iter().find(|(c, _)| *c == corr).map(|(_, p)| p.clone()).unwrap_or_else(|| panic!("no call {corr}"))
}

#[test]
fn a_python_call_is_placed_at_the_scripts_line_with_its_chain_and_text() {
    let all = places(&syn::python_training_step());
    let p = place(&all, 11);
    assert_eq!(p.kind, Kind::Python);
    assert_eq!(p.words, "train.py:32 main");
    assert_eq!(p.text.as_deref(), Some("loss.backward()"));
    assert_eq!(p.chain, ["train.py:32", "torch/_tensor.py:626", "torch/autograd/graph.py:825"]);
    assert_eq!(p.via, None);
    assert!(p.own);
    // Five frames below the script: shortened to the first two, `…` and the library line that made the call.
    let p = place(&all, 30);
    assert_eq!(p.words, "train.py:35 main");
    assert_eq!(p.text.as_deref(), Some("value = loss.item()"));
    assert_eq!(
        p.chain,
        ["train.py:35", "torch/utils/_contextlib.py:116", "…", "transformers/generation/utils.py:2677"]
    );
    assert_eq!(p.shown(), "train.py:35 main: value = loss.item()");
    // A short call of the main thread without a location stays at its API function.
    assert_eq!(place(&all, 40).words, "cudaMalloc");
}

#[test]
fn a_thread_without_python_is_placed_at_the_line_that_waited_for_it_and_says_so() {
    let all = places(&syn::python_training_step());
    // Made while the main thread was inside loss.backward()'s synchronize.
    let p = place(&all, 20);
    assert_eq!(p.kind, Kind::Python);
    assert_eq!(p.words, "while the main thread waited at train.py:32 main");
    assert_eq!(p.text.as_deref(), Some("loss.backward()"));
    let via = p.via.unwrap();
    assert_eq!((via.thread, via.corr, via.how), (u64::from(syn::PYTHON_PID), Some(11), ViaHow::Containing));
    // Made after it returned: the main thread's latest located call before it, said as such; the trace (format
    // 4) did not read the Python threads' frames then, so it does not say none was waiting.
    let p = place(&all, 21);
    assert_eq!(p.words, "after the latest call of the main thread, at train.py:32 main");
    let via = p.via.unwrap();
    assert_eq!((via.how, via.none_waiting), (ViaHow::Before, false));
}

#[test]
fn a_native_call_is_placed_at_the_programs_own_source_line_with_its_text() {
    let all = places(&syn::native_program_with_source());
    let p = place(&all, 10);
    assert_eq!(p.kind, Kind::Native);
    assert_eq!(p.words, "main.cu:59 copy_pageable(float*, float*, unsigned long, CUstream_st*)");
    assert_eq!(p.text.as_deref(), Some("cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s);"));
    assert_eq!(p.chain, ["main.cu:59", "cudaMemcpyAsync (libcudart.so.13)"]);
}

/// Without `Line::Source` (a trace written before format 4, or whose files were gone), the places are the
/// same, without text; a trace whose frames were read only under the GIL says nothing of which threads run
/// Python, and no call is placed through another thread.
#[test]
fn places_need_neither_source_lines_nor_the_gil_free_reader() {
    let text = syn::python_training_step();
    let without: String =
        text.lines().filter(|l| !l.starts_with(r#"{"type":"source""#)).map(|l| format!("{l}\n")).collect();
    let all = places(&without);
    assert_eq!(place(&all, 30).words, "train.py:35 main");
    assert_eq!(place(&all, 30).text, None);
    let held_gil = without.replace(r#""gil":"not-held""#, r#""gil":"held""#);
    let all = places(&held_gil);
    assert_eq!(place(&all, 20).via, None);
    assert_eq!(place(&all, 20).words, "cudaMemcpyAsync");
}

#[test]
fn the_table_json_explain_and_perfetto_show_the_place_with_its_text() {
    let f = file("python.jsonl", &syn::python_training_step());
    let path = f.to_str().unwrap();
    // Whole rows, one line each (the table's width is tested on its own).
    let o = run(&["trace", "--replay", path, "--wide"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let table = text.split("By place in the program:").nth(1).unwrap();
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("│ ") && !l.contains("where")).collect();
    assert!(rows[0].contains("train.py:32 main: loss.backward()"), "{table}");
    assert!(rows[1].contains("train.py:35 main: value = loss.item()"), "{table}");
    assert!(rows[2].contains("while the main thread waited at train.py:32 main: loss.backward()"), "{table}");

    let o = run(&["trace", "--replay", path, "--format", "json"]);
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let held = report["processes"][0]["held_calls"].as_array().unwrap();
    let of = |corr: u64| held.iter().find(|h| h["corr"] == corr).unwrap()["location"].clone();
    assert_eq!(of(30)["text"], "value = loss.item()");
    assert_eq!(of(30)["chain"][3], "transformers/generation/utils.py:2677");
    assert_eq!(of(20)["via"]["how"], "containing");
    assert_eq!(of(20)["via"]["corr"], 11);
    let rows = &report["processes"][0]["by_location"]["rows"];
    assert_eq!(rows[0]["place"]["words"], "train.py:32 main");
    assert_eq!(rows[0]["place"]["text"], "loss.backward()");
    let parsed: json::Report = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(parsed.processes[0].by_location.rows[1].place.text.as_deref(), Some("value = loss.item()"));

    let o = run(&["trace", "--replay", path, "--explain", "20"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("where: while the main thread waited at train.py:32 main: loss.backward()\n"), "{s}");
    assert!(s.contains("taking its location cost the thread 25.0 µs"), "{s}");

    let out = file("python.perfetto.json", "");
    let o = run(&["trace", "--replay", path, "--perfetto", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let export: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let slice = export["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["cat"] == "api" && e["args"]["--explain id"] == 30)
        .unwrap()
        .clone();
    assert_eq!(slice["args"]["location"], "train.py:35 main: value = loss.item()");
    assert!(slice["args"]["chain"].as_str().unwrap().starts_with("train.py:35 → "));
}

/// `--keep-held` keeps the source lines: the cut trace replays to the same table, text and all.
#[test]
fn keep_held_keeps_the_source_lines() {
    let f = file("keep.jsonl", &syn::python_training_step());
    let cut = file("keep-cut.jsonl", "");
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--keep-held", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let table = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stdout).split("By place in the program:").nth(1).unwrap().to_owned()
    };
    let kept = Trace::load(&cut).unwrap();
    let sources = kept.processes[0].lines.iter().filter(|l| matches!(l, Line::Source { .. })).count();
    assert_eq!(sources, 2);
    let again = run(&["trace", "--replay", cut.to_str().unwrap()]);
    assert_eq!(table(&again), table(&o));
    let wide = run(&["trace", "--replay", cut.to_str().unwrap(), "--wide"]);
    assert!(table(&wide).contains("value = loss.item()"));
}

/// XLA's threads run no Python: each of their calls is placed at the line the main thread was waiting at when
/// it returned (format 5's frames of every Python thread), never at the thread pool's idle wait; a call of a
/// step where the main thread ran Python is placed at its latest call, saying no Python thread was waiting; a
/// call without a location, as the same call site was; another XLA thread's call inside the main thread's own
/// call, at that call's line. The threads go by their names.
#[test]
fn xla_threads_calls_are_placed_at_the_line_the_main_thread_waited_at() {
    let all = places(&syn::jax_training_loop());
    let main = u64::from(syn::PYTHON_PID);
    for k in 0..6u32 {
        let p = place(&all, 100 * k + 10);
        assert_eq!(p.words, "while the main thread (python3) waited at jax_train.py:24 main", "{k}");
        assert_eq!(p.text.as_deref(), Some("x = jnp.asarray(np_batch)"));
        let via = p.via.unwrap();
        assert_eq!((via.thread, via.corr, via.how), (main, None, ViaHow::Waiting));
        assert_eq!(p.chain, ["jax_train.py:24", "jax/_src/api.py:700"]);
    }
    for k in [0u32, 1, 3, 4] {
        let p = place(&all, 100 * k + 20);
        assert_eq!(p.words, "while the main thread (python3) waited at jax_train.py:26 main", "{k}");
        assert_eq!(p.text.as_deref(), Some("v = float(loss)"));
        assert_eq!(p.inferred, None);
    }
    // The short synchronization of step 2 had no location: placed as step 1's.
    let p = place(&all, 220);
    assert_eq!(p.words, "while the main thread (python3) waited at jax_train.py:26 main");
    assert_eq!(p.inferred, Some(Inferred { corr: 120, earlier: true }));
    // Step 5: the main thread held the GIL (running Python) and the other Python thread was idle.
    let p = place(&all, 520);
    assert_eq!(
        p.words,
        "after the latest call of the main thread (python3), at jax_train.py:25 main (no Python thread was waiting)"
    );
    let via = p.via.unwrap();
    assert_eq!((via.how, via.none_waiting, via.corr), (ViaHow::Before, true, Some(501)));
    // The other XLA thread's call, inside the main thread's dispatch of step 1.
    let p = place(&all, 150);
    assert_eq!(p.words, "while the main thread (python3) waited at jax_train.py:25 main");
    assert_eq!(p.via.unwrap().how, ViaHow::Containing);
    // No place is the idle thread's.
    assert!(all.iter().all(|(_, p)| p.via.as_ref().is_none_or(|v| v.thread != syn::IDLE_TID)));
    // Without a located call of the main thread's own, the frames read when XLA's calls returned still place
    // them; with none to be the latest before, a call where no Python thread waited keeps its own place.
    let main_located = format!(r#"{{"type":"location","tid":{main},"#);
    let text: String =
        syn::jax_training_loop().lines().filter(|l| !l.starts_with(&main_located)).map(|l| format!("{l}\n")).collect();
    let all = places(&text);
    assert_eq!(place(&all, 20).words, "while the main thread (python3) waited at jax_train.py:26 main");
    assert_eq!(place(&all, 220).inferred, Some(Inferred { corr: 120, earlier: true }));
    assert_eq!(place(&all, 520).words, "cuStreamSynchronize");
}

/// The autograd thread's holds during `loss.backward()` are placed there, the main thread waiting in the
/// engine outside any CUDA call; its short synchronization without a location, as its located one was.
#[test]
fn backward_holds_are_placed_at_loss_backward() {
    let all = places(&syn::backward_while_the_main_thread_waits());
    for corr in [20, 22] {
        let p = place(&all, corr);
        assert_eq!(p.words, "while the main thread (python3) waited at train.py:32 main", "{corr}");
        assert_eq!(p.text.as_deref(), Some("loss.backward()"));
        assert_eq!(p.via.unwrap().how, ViaHow::Waiting);
    }
    let p = place(&all, 24);
    assert_eq!(p.words, "while the main thread (python3) waited at train.py:32 main");
    assert_eq!(p.inferred, Some(Inferred { corr: 22, earlier: true }));
    // The text says the place was inferred, in the finding and in --explain.
    let f = file("backward.jsonl", &syn::backward_while_the_main_thread_waits());
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--wide"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "synchronizations while the main thread (python3) waited at train.py:32 main: loss.backward(): 2 calls (1 \
             placed as the same call: no location of its own)"
        ),
        "{text}"
    );
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--explain", "24"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("(placed as the same call earlier, --explain 22: this call has no location of its own)"), "{s}");
    assert!(s.starts_with("cudaStreamSynchronize (pt_autograd_0, --explain 24)"), "{s}");
}

/// A short call of a Python thread without a location is placed where the same call site was placed: the same
/// thread, function, stream and cause; never a call of another site (another copy size, another class).
#[test]
fn a_call_without_a_location_is_placed_as_the_same_call_site_was() {
    let text = syn::python_training_step();
    let extra = |corr: u32, start: u64, len: u64, bytes: u64| {
        let call = async_lab_tests::trace_synthetic::call_on(
            u64::from(syn::PYTHON_PID),
            "cudaMemcpyAsync",
            corr,
            start,
            start + len,
        );
        let copy = Line::Memcpy {
            copy_kind: 2,
            src_kind: 3,
            dst_kind: 1,
            bytes,
            start: async_lab_tests::trace_synthetic::T0 + start + len - 20_000,
            end: async_lab_tests::trace_synthetic::T0 + start + len - 10_000,
            stream: 13,
            corr,
        };
        let launch = async_lab_tests::trace_synthetic::call_on(
            u64::from(syn::PYTHON_PID),
            "cudaLaunchKernel",
            corr - 1,
            start - 1_000_000,
            start - 999_000,
        );
        let kernel =
            async_lab_tests::trace_synthetic::kernel("loss", 13, corr - 1, start - 990_000, start + len - 30_000);
        [launch, kernel, call, copy].iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect::<String>()
    };
    // The 4-byte read of the loss again, 0.7 ms (no location), and one of 64 bytes.
    let more = extra(51, 80_000_000, 700_000, 4) + &extra(61, 90_000_000, 700_000, 64);
    let at = text.find(r#"{"type":"end""#).unwrap();
    let all = places(&format!("{}{more}{}", &text[..at], &text[at..]));
    let p = place(&all, 51);
    assert_eq!(p.words, "train.py:35 main");
    assert_eq!(p.inferred, Some(Inferred { corr: 30, earlier: true }));
    assert_eq!(place(&all, 61).words, "cudaMemcpyAsync");
    assert_eq!(place(&all, 61).inferred, None);
}

/// Threads by name: the headline's verdict is about the main thread (python3), its helpers' time counted where
/// it waited for them; the tables and the JSON name the threads.
#[test]
fn threads_go_by_their_names_and_the_verdict_is_the_programs_own_threads() {
    let f = file("jax.jsonl", &syn::jax_training_loop());
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--format", "json"]);
    let report: json::Report = serde_json::from_slice(&o.stdout).unwrap();
    let h = &report.processes[0].headline;
    assert_eq!(h.verdict.thread, u64::from(syn::PYTHON_PID));
    assert!(h.verdict.words.contains("main thread (python3)"), "{}", h.verdict.words);
    assert!(
        h.verdict.words.contains("waiting for its helper threads (thread 4751 (tf_XLAEigen)"),
        "{}",
        h.verdict.words
    );
    let main = &h.threads[0];
    assert_eq!((main.thread, main.name.as_deref(), main.helper), (u64::from(syn::PYTHON_PID), Some("python3"), false));
    // Its waits for XLA's thread: the three located synchronizations and the inferred one, the copies.
    assert!(main.steady.helpers_ns > 60_000_000, "{:?}", main.steady);
    assert_eq!(main.steady.held_ns + main.steady.at_once_ns + main.steady.outside_ns, main.steady.wall_ns);
    let xla = h.threads.iter().find(|t| t.thread == syn::XLA_TIDS[0]).unwrap();
    assert_eq!(
        (xla.helper, xla.helper_of, xla.words.as_str()),
        (true, Some(u64::from(syn::PYTHON_PID)), "thread 4751 (tf_XLAEigen)")
    );
    let held = &report.processes[0].held_calls;
    assert!(held.iter().any(|c| c.thread_name.as_deref() == Some("tf_XLAEigen")));
    let o = run(&["trace", "--replay", f.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("Verdict: held by CUDA: main thread (python3) was held"), "{text}");
    assert!(text.contains("\nmain thread (python3): "), "{text}");
    assert!(
        text.contains("thread 4751 (tf_XLAEigen), a helper of the main thread (python3) that runs no Python: "),
        "{text}"
    );
    assert!(text.contains("4751 tf_XLAEigen"), "{text}");
    // A place that says when reads without "at" in the findings, the CI gate's lines and the page.
    assert!(
        text.contains(
            "synchronizations while the main thread (python3) waited at jax_train.py:26 main: v = float(loss)"
        ),
        "{text}"
    );
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--fail-on-held", "10ms"]);
    let gate = String::from_utf8_lossy(&o.stderr);
    assert!(
        gate.contains(
            "waited-for-stream: cuStreamSynchronize while the main thread (python3) waited at jax_train.py:26 main: \
             v = float(loss) (--explain 20)"
        ),
        "{gate}"
    );
    let trace = Trace::parse(&syn::jax_training_loop()).unwrap();
    let html = async_lab_core::trace::page::render("jax.jsonl", &Analysis::all(&trace), 20_000, 20);
    assert!(html.contains("<strong>synchronizations</strong> <code>while the main thread (python3) waited at"), "page");
}

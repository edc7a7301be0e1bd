//! The place a user recognises (`trace::location`, `trace::waiting`), on synthetic traces of programs as users
//! write them (`synthetic_places`): the script's own line below the packages' frames, with the chain to the
//! library line that made the call and the line's text; a thread that runs no Python placed at the Python
//! line that was waiting for it, saying so; a C++ program's own source line with its text; and the same in
//! the by-location table, `--explain`, the JSON report and the Perfetto export, through `--keep-held` too.

use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::format::{Line, Trace};
use async_lab_core::trace::json;
use async_lab_core::trace::location::{Kind, Place, ViaHow};
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
    assert_eq!(p.words, "via main thread's train.py:32 main");
    assert_eq!(p.text.as_deref(), Some("loss.backward()"));
    let via = p.via.unwrap();
    assert_eq!((via.thread, via.corr, via.how), (u64::from(syn::PYTHON_PID), 11, ViaHow::Containing));
    // Made after it returned: the main thread's latest located call before it, said as such.
    let p = place(&all, 21);
    assert_eq!(p.words, "via main thread's train.py:32 main (its latest before)");
    assert_eq!(p.via.unwrap().how, ViaHow::Before);
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
    assert!(rows[2].contains("via main thread's train.py:32 main: loss.backward()"), "{table}");

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
    assert!(s.contains("where: via main thread's train.py:32 main: loss.backward()\n"), "{s}");
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

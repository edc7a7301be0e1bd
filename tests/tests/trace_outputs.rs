//! The trace's outputs for users: each call's place in the program and the by-location table (on a
//! synthetic training loop with code locations and NVTX ranges), the JSON report against its committed
//! schema (`docs/trace-report.schema.json`), the Perfetto export (Chrome trace-event JSON) of the committed
//! traces checked against the format's documented fields, and `--format json` and `--fail-on-held` as a
//! process.

use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::format::Trace;
use async_lab_core::trace::location::Kind;
use async_lab_core::trace::{json, perfetto};
use async_lab_tests::project_root;
use async_lab_tests::run_with_stub as run;
use async_lab_tests::trace_synthetic as syn;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

const MIN_HELD: i64 = 20_000;

fn committed_traces() -> Vec<PathBuf> {
    async_lab_tests::trace_files()
}

fn seed_pinned_lazy() -> PathBuf {
    project_root()
        .join("recordings/traces/trace-seed_program-pinned-lazy-h200-driver580.159.04-2026-12-03-761b4dc.jsonl.gz")
}

#[test]
fn each_call_is_placed_at_its_innermost_user_frame() {
    let trace = Trace::parse(&syn::located_training_loop()).unwrap();
    let a = Analysis::of(&trace.processes[0]);
    let place = |corr: u32| {
        let i = a.program.calls.iter().position(|c| c.corr == corr).unwrap();
        a.places[i].clone()
    };
    // The package's frame is skipped for the script's own line.
    assert_eq!(place(11).kind, Kind::Python);
    assert_eq!(place(11).words, "train.py:41 train_step");
    assert_eq!(place(50).kind, Kind::Native);
    assert_eq!(place(50).words, "main.cu:12 step");
    // The innermost of the two NVTX ranges around it.
    assert_eq!(place(60).words, "nvtx: optimizer step");
    assert_eq!(place(1).kind, Kind::Api);
    assert_eq!(place(1).words, "cudaFree");
}

#[test]
fn the_by_location_table_leads_with_the_users_line_and_puts_start_up_on_its_own() {
    let trace = Trace::parse(&syn::located_training_loop()).unwrap();
    let a = Analysis::of(&trace.processes[0]);
    let t = a.by_location(MIN_HELD, false);
    let startup = t.startup.as_ref().expect("the context's creation is start-up");
    assert_eq!(startup.calls, 1);
    assert_eq!(startup.total_ns, 120_000_000);
    // What is paid once is one line of its own: the context's creation, and the 2 ms cudaMalloc (PyTorch's
    // caching allocator growing: the program's frames are PyTorch's).
    let once = t.paid_once.as_ref().expect("paid once");
    assert_eq!((once.calls, once.total_ns), (2, 122_000_000));
    assert_eq!(once.what, "context creation, 1 allocation (the allocator's growth)");
    let words: Vec<&str> = t.rows.iter().map(|r| r.place.words.as_str()).collect();
    assert_eq!(words, ["train.py:41 train_step", "main.cu:12 step"]);
    let first = &t.rows[0];
    assert_eq!(first.calls, 3);
    assert_eq!(first.classes.len(), 1);
    assert_eq!(first.classes[0].class, "waited-for-stream");
    let cause = first.largest_cause.as_ref().unwrap();
    assert_eq!(cause.cause, "stream");
    assert!(cause.what.starts_with("the kernel backward ahead in its stream") && !cause.what.contains("correlation"));
    assert!(first.median_ns > 7_900_000 && first.median_ns < 8_100_000, "{}", first.median_ns);
    let text = async_lab_core::trace::by_location_table::table(&t, MIN_HELD, 20, Some(120));
    assert!(text.starts_with("paid once: 122.0 ms (2 calls: context creation, 1 allocation"), "{text}");
    // Start-up calls leave the held list with --after-startup, and stay counted on their own line.
    assert!(a.held(MIN_HELD, false).iter().any(|t| a.startup[t.index]));
    assert!(a.held(MIN_HELD, true).iter().all(|t| !a.startup[t.index]));
    assert_eq!(a.held(MIN_HELD, true).len(), a.held(MIN_HELD, false).len() - 1);
}

#[test]
fn explain_names_the_frames_and_ranges_of_a_call() {
    let trace = Trace::parse(&syn::located_training_loop()).unwrap();
    let a = Analysis::of(&trace.processes[0]);
    let at = |corr: u32| a.program.calls.iter().position(|c| c.corr == corr).unwrap();
    let explain = |corr: u32| {
        async_lab_core::trace::text::explain_location(&a.locations, &a.program.calls[at(corr)], &a.places[at(corr)])
    };
    let s = explain(11);
    // The place with the NVTX range beside it, then the chain from the script's line to the package's.
    assert!(
        s.starts_with(
            "where: train.py:41 train_step [nvtx: epoch 1]\nfrom there to the call: train.py:41 → torch/_tensor.py:1000\n\
             Python frames, innermost first:\n"
        ),
        "{s}"
    );
    assert!(s.contains("site-packages/torch/_tensor.py:1000 item") && s.contains("epoch 1"), "{s}");
    let s = explain(50);
    assert!(s.contains("step (app+0x2000) at /home/me/app/main.cu:12"), "{s}");
}

/// The committed schema is the one the types generate: a change of the report shows as a change of the file.
#[test]
fn the_committed_schema_is_the_generated_one() {
    let path = project_root().join("docs/trace-report.schema.json");
    let generated = json::schema();
    if std::env::var_os("ASYNC_LAB_WRITE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/trace-report.schema.json differs from the report's types: after a deliberate change of the report \
         (and of json::VERSION where a field's meaning changed), write it with \
         `ASYNC_LAB_WRITE_SCHEMA=1 cargo test -p async-lab-tests --test trace_outputs` and commit it"
    );
}

/// Every committed trace's report, and the synthetic loop's, validates against the committed schema and reads
/// back into the same report.
#[test]
fn the_json_report_validates_against_the_schema_and_round_trips() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(project_root().join("docs/trace-report.schema.json")).unwrap())
            .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is a JSON Schema");
    let mut texts: Vec<(String, String)> = vec![("synthetic loop".into(), syn::located_training_loop())];
    texts.extend(committed_traces().into_iter().map(|p| (p.display().to_string(), async_lab_tests::trace_text(&p))));
    for (name, text) in texts {
        let trace = Trace::parse(&text).unwrap();
        for after_startup in [false, true] {
            let report = json::report(&Analysis::all(&trace), MIN_HELD, after_startup, 0);
            assert_eq!(report.schema, "async-lab-trace-report");
            assert_eq!(report.version, json::VERSION);
            let value = serde_json::to_value(&report).unwrap();
            let errors: Vec<String> =
                validator.iter_errors(&value).map(|e| format!("{e} at {}", e.instance_path())).collect();
            assert!(errors.is_empty(), "{name}: {errors:?}");
            let back: json::Report = serde_json::from_value(value).unwrap();
            assert_eq!(back, report, "{name}");
        }
    }
    // The schema says something: a report without its calls' class does not validate.
    let trace = Trace::parse(&syn::located_training_loop()).unwrap();
    let mut value = serde_json::to_value(json::report(&Analysis::all(&trace), MIN_HELD, false, 0)).unwrap();
    value["processes"][0]["held_calls"][0].as_object_mut().unwrap().remove("class");
    assert!(!validator.is_valid(&value));
}

/// The checks of the Trace Event Format's documented fields: every event has a name, a phase, a pid and a
/// tid; complete slices a `ts` and a non-negative `dur`; metadata events a name in `args`; each flow one
/// start and one end, each inside a slice of its track (the end bound to its enclosing slice). Returns the
/// slices by track and the flows (id → (start, end)).
type Track = (u64, u64);
type Flows = BTreeMap<u64, (Value, Value)>;
fn check_export(text: &str) -> (HashMap<Track, Vec<Value>>, Flows) {
    let v: Value = serde_json::from_str(text).expect("the export parses as JSON");
    let events = v["traceEvents"].as_array().expect("a traceEvents array");
    assert!(v["displayTimeUnit"].is_string());
    let mut slices: HashMap<Track, Vec<Value>> = HashMap::new();
    let mut starts: BTreeMap<u64, Value> = BTreeMap::new();
    let mut ends: BTreeMap<u64, Value> = BTreeMap::new();
    for e in events {
        assert!(e["name"].is_string() && e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
        match e["ph"].as_str().unwrap() {
            "X" => {
                assert!(e["ts"].is_f64() || e["ts"].is_u64(), "{e}");
                assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
                slices.entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())).or_default().push(e.clone());
            }
            "M" => {
                assert!(["process_name", "thread_name"].contains(&e["name"].as_str().unwrap()), "{e}");
                assert!(e["args"]["name"].is_string(), "{e}");
            }
            "s" => assert!(starts.insert(e["id"].as_u64().unwrap(), e.clone()).is_none(), "two starts: {e}"),
            "f" => {
                assert_eq!(e["bp"], "e", "{e}");
                assert!(ends.insert(e["id"].as_u64().unwrap(), e.clone()).is_none(), "two ends: {e}");
            }
            other => panic!("phase {other} is not one the export writes: {e}"),
        }
    }
    // Slices nest on each track: sorted by start (the longer first), each lies inside the open one or after it.
    let ts = |e: &Value| e["ts"].as_f64().unwrap();
    let end = |e: &Value| ts(e) + e["dur"].as_f64().unwrap();
    const EPS: f64 = 1e-6;
    for (track, list) in &mut slices {
        list.sort_by(|a, b| ts(a).total_cmp(&ts(b)).then(end(b).total_cmp(&end(a))));
        let mut open: Vec<f64> = Vec::new();
        for e in list.iter() {
            while open.last().is_some_and(|&o| o <= ts(e) + EPS) {
                open.pop();
            }
            if let Some(&o) = open.last() {
                assert!(
                    end(e) <= o + EPS,
                    "on track {track:?}, {e} overlaps the slice it begins in (which ends at {o})"
                );
            }
            open.push(end(e));
        }
    }
    assert_eq!(starts.keys().collect::<Vec<_>>(), ends.keys().collect::<Vec<_>>(), "flows without both ends");
    let inside = |e: &Value| {
        let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        slices.get(&track).is_some_and(|l| l.iter().any(|s| ts(s) <= ts(e) + EPS && ts(e) <= end(s) + EPS))
    };
    let mut flows = BTreeMap::new();
    for (id, s) in starts {
        let f = ends.remove(&id).unwrap();
        assert!(inside(&s) && inside(&f), "a flow outside the slices of its tracks: {s} → {f}");
        assert!(ts(&s) <= ts(&f) + EPS, "a flow back in time: {s} → {f}");
        flows.insert(id, (s, f));
    }
    (slices, flows)
}

/// The slice of `track` that holds time `t` most tightly.
fn slice_at<'a>(slices: &'a HashMap<Track, Vec<Value>>, e: &Value) -> &'a Value {
    let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
    let t = e["ts"].as_f64().unwrap();
    slices[&track]
        .iter()
        .filter(|s| s["ts"].as_f64().unwrap() <= t && t <= s["ts"].as_f64().unwrap() + s["dur"].as_f64().unwrap())
        .min_by(|a, b| a["dur"].as_f64().unwrap().total_cmp(&b["dur"].as_f64().unwrap()))
        .unwrap()
}

#[test]
fn the_perfetto_export_of_the_seed_program_has_the_flow_from_the_copy_to_the_first_launch() {
    let trace = Trace::load(&seed_pinned_lazy()).unwrap();
    let (slices, flows) = check_export(&perfetto::to_text(&perfetto::export(&Analysis::all(&trace), MIN_HELD)));
    let launch = slices
        .values()
        .flatten()
        .find(|s| s["name"] == "cudaLaunchKernel" && s["cat"] == "api")
        .expect("the launch's slice");
    assert_eq!(launch["args"]["class"], "waited-for-stream");
    assert!(launch["args"]["what held it"].as_str().unwrap().contains("2 GiB host → device copy"), "{launch}");
    let corr = &launch["args"]["--explain id"];
    let (from, to) = flows
        .values()
        .find(|(_, f)| slice_at(&slices, f)["args"]["--explain id"] == *corr)
        .expect("a flow into the launch");
    let copy = slice_at(&slices, from);
    assert_eq!(copy["cat"], "gpu");
    assert!(copy["name"].as_str().unwrap().starts_with("the 2 GiB host → device copy"), "{copy}");
    assert!(from["pid"].as_u64().unwrap() >= perfetto::GPU_PID, "{from}");
    let held = slice_at(&slices, to);
    assert_eq!((held["cat"].as_str(), held["name"].as_str()), (Some("held"), Some("its stream")));
    assert_eq!(held["cname"], "terrible");
}

/// The kernel that another thread's call waited for too is a holder whose words go on past its correlation id;
/// its flow is drawn all the same.
#[test]
fn the_perfetto_export_draws_the_flow_from_a_kernel_two_threads_waited_for() {
    let trace = Trace::parse(&syn::lazy_load_beside_another_threads_wait()).unwrap();
    let (slices, flows) = check_export(&perfetto::to_text(&perfetto::export(&Analysis::all(&trace), MIN_HELD)));
    let (from, _) = flows
        .values()
        .find(|(_, f)| slice_at(&slices, f)["args"]["--explain id"] == 12)
        .expect("a flow into the launch that waited for the kernel");
    let kernel = slice_at(&slices, from);
    assert_eq!(kernel["cat"], "gpu");
    assert!(kernel["name"].as_str().unwrap().contains("spin"), "{kernel}");
}

#[test]
fn every_committed_traces_export_and_the_synthetic_loops_follow_the_format() {
    let (slices, flows) = check_export(&perfetto::to_text(&perfetto::export(
        &Analysis::all(&Trace::parse(&syn::located_training_loop()).unwrap()),
        MIN_HELD,
    )));
    assert_eq!(flows.len(), 4, "three copies and a synchronization waited for a kernel");
    let nvtx: Vec<&str> =
        slices.values().flatten().filter(|s| s["cat"] == "nvtx").map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(nvtx.len(), 2, "{nvtx:?}");
    for path in committed_traces() {
        let (slices, _) =
            check_export(&perfetto::to_text(&perfetto::export(&Analysis::all(&Trace::load(&path).unwrap()), MIN_HELD)));
        assert!(slices.values().flatten().any(|s| s["cat"] == "api"), "{}", path.display());
    }
}

fn file(name: &str, text: &str) -> PathBuf {
    async_lab_tests::temp_file("trace-outputs", name, text)
}

#[test]
fn format_json_prints_one_report_and_fail_on_held_names_each_call() {
    let f = file("loop.jsonl", &syn::located_training_loop());
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let report: json::Report = serde_json::from_slice(&o.stdout).expect("stdout is one JSON report");
    assert_eq!(report.processes[0].by_location.rows[0].place.words, "train.py:41 train_step");

    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--fail-on-held", "4ms", "--after-startup"]);
    assert_eq!(o.status.code(), Some(4));
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines[0], "async-lab: 4 calls held their thread longer than --fail-on-held 4.0 ms:", "{err}");
    assert_eq!(lines.len(), 5, "{err}");
    // Time held and class first, the --explain id last.
    assert_eq!(
        lines[1..]
            .iter()
            .filter(|l| l.contains(", waited-for-stream: cudaMemcpy at train.py:41 train_step")
                && l.contains("(--explain "))
            .count(),
        3,
        "{err}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("  held ")
            && l.contains(": cudaStreamSynchronize at main.cu:12 step [nvtx: epoch 1]")
            && l.ends_with("(--explain 50)")),
        "{err}"
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("left out of every table (--after-startup)") && !text.contains("cudaFree"), "{text}");

    let out = file("loop.perfetto.json", "");
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--perfetto", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    check_export(&std::fs::read_to_string(&out).unwrap());
}

#[test]
fn the_trace_page_has_the_by_location_table_and_a_zoomable_whole_program_lane() {
    let trace = Trace::parse(&syn::located_training_loop()).unwrap();
    let html = async_lab_core::trace::page::render("loop.jsonl", &Analysis::all(&trace), MIN_HELD, 20);
    let table = &html[html.find("<table id=\"p0-by-location\">").expect("the by-location table")..];
    let table = &table[..table.find("</table>").unwrap()];
    let first_row = table.split("<tr>").nth(2).unwrap();
    assert!(first_row.contains("train.py:41 train_step") && first_row.contains("waited-for-stream"), "{first_row}");
    assert!(html.contains("<p>start-up: 120.0 ms (1 call: "), "start-up on its own line");
    // The whole program's lane holds its data in the inner SVG that the script zooms; a call's own does not.
    let all = &html[html.find("<svg id=\"p0-all\" class=\"zoomable\" data-view=\"0 ").expect("a zoomable lane")..];
    assert!(all[..all.find("</svg>").unwrap()].contains("<svg class=\"lane\""));
    assert_eq!(html.matches("class=\"zoomable\"").count(), 1);
    // One inline script, loading nothing.
    assert_eq!(html.matches("<script").count(), 1);
    assert!(html.contains("<script>\n") && !html.contains("<script src"));
}

/// With `--against`, the JSON report is still the whole of stdout: the comparison goes to stderr.
#[test]
fn format_json_with_against_keeps_stdout_one_document() {
    let root = project_root();
    let trace = root.join("recordings/traces/trace-async-lab-seed-h200-driver580.159.04-2026-12-03-761b4dc.jsonl.gz");
    let rec = root.join("recordings/async-lab-seed-both-apis-traced-h200-driver580.159.04-2026-12-03-761b4dc.json");
    let o =
        run(&["trace", "--replay", trace.to_str().unwrap(), "--against", rec.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let report: json::Report = serde_json::from_slice(&o.stdout).expect("stdout is one JSON report");
    assert!(!report.processes.is_empty());
    assert!(String::from_utf8_lossy(&o.stderr).contains("The lab's classes beside the tracer's"));
}

//! `async-lab trace` as a process, without a GPU: replaying trace files (the table, `--explain`,
//! `--fail-on-held`), the HTML page of a trace, and one clear line with the right exit code for a bad trace
//! file, a missing CUPTI and a missing program.

use async_lab_tests::bin_path;
use async_lab_tests::run_with_stub as run;
use async_lab_tests::trace_synthetic as syn;
use std::path::PathBuf;
use std::process::{Command, Output};

fn file(name: &str, text: &str) -> PathBuf {
    async_lab_tests::temp_file("trace-cli", name, text)
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn one_clear_line(o: &Output, code: i32, says: &str) {
    let e = err(o);
    assert_eq!(o.status.code(), Some(code), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert_eq!(e.lines().count(), 1, "one line, got:\n{e}");
    assert!(e.starts_with("async-lab: ") && e.contains(says), "{e}");
}

#[test]
fn a_replayed_trace_prints_the_held_calls_longest_first_and_a_summary() {
    let f = file("lazy.jsonl", &syn::lazy_launch_waits_for_the_copy());
    let o = run(&["trace", "--replay", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let s = out(&o);
    // The verdict first, then the findings with their remedies, then the tables.
    assert!(s.starts_with("Verdict: "), "{s}");
    let (finding, table) = (s.find("loading code").unwrap(), s.find("Per API function").unwrap());
    assert!(finding < table && s[finding..table].contains("CUDA_MODULE_LOADING=EAGER"), "{s}");
    // The first launch's lazy load is paid once: a warm-up finding, not a row of the tables of held calls.
    assert!(s[..finding].contains("1 finding in warm-up (paid once)"), "{s}");
    assert!(
        s.contains(
            "No call of the steady state held its thread longer than 20.0 µs (and 1 call paid once, in the \
                    warm-up findings above)."
        ),
        "{s}"
    );
}

#[test]
fn the_calls_that_enqueued_work_have_the_first_table_even_when_others_held_longer() {
    // The launch (its kernel has its correlation id) held about as long as the other thread's
    // `cudaMallocHost`, which has no GPU work of its own and held a little longer.
    let f = file("enqueue-first.jsonl", &syn::launch_waits_for_another_thread());
    let o = run(&["trace", "--replay", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let s = out(&o);
    let lines: Vec<&str> = s.lines().collect();
    let at = |says: &str| lines.iter().position(|l| l.contains(says)).unwrap_or_else(|| panic!("{says}:\n{s}"));
    let row = |call: &str| {
        lines
            .iter()
            .position(|l| l.starts_with("│ 133.0 ms") && l.contains(call))
            .unwrap_or_else(|| panic!("{call}:\n{s}"))
    };
    let (launch, alloc) = (row("cudaLaunchKernel"), row("cudaMallocHost"));
    let (enqueued, other) = (at("1 call that enqueued GPU work"), at("1 call without GPU work of its own"));
    assert!(enqueued < launch && launch < other && other < alloc, "{s}");

    // `--top` cuts each table.
    let train = async_lab_tests::trace_files().into_iter().find(|p| p.to_string_lossy().contains("torch_train-h200"));
    let s = out(&run(&["trace", "--replay", train.unwrap().to_str().unwrap(), "--top", "1"]));
    let held = s.split("Per API function").next().unwrap();
    let enqueued = &held[held.find("that enqueued GPU work").unwrap()..held.find("without GPU work").unwrap()];
    assert!(enqueued.contains("(the 1 longest shown)"), "{s}");
    // A row begins with its time held in the first column (a row's further lines are blank there).
    let row = |l: &&str| {
        l.strip_prefix('│').is_some_and(|r| r.get(..12).is_some_and(|c| c.trim().starts_with(char::is_numeric)))
    };
    assert_eq!(enqueued.lines().filter(row).count(), 1, "{s}");

    // A trace whose only held call enqueued nothing says so above the other table.
    let f = file("enqueue-none.jsonl", &syn::free_drains_the_device());
    let s = out(&run(&["trace", "--replay", f.to_str().unwrap()]));
    assert!(s.contains("No call that enqueued GPU work"), "{s}");
    assert!(s.contains("cudaFree"), "{s}");
}

#[test]
fn explain_tells_one_call_segment_by_segment() {
    let f = file("explain.jsonl", &syn::lazy_launch_waits_for_the_copy());
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--explain", "11"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let s = out(&o);
    assert!(s.starts_with("cudaLaunchKernel (thread 100, --explain 11)"), "{s}");
    // Its finding and the remedy, with the lab's experiments behind the numbers.
    assert!(s.contains("finding: loading code") && s.contains("fix: Load the code before the loop"), "{s}");
    assert!(s.contains("the lab: a first launch under lazy loading"), "{s}");
    assert!(s.contains("driver calls inside it: cuLibraryLoadData") && s.contains("its stream:"), "{s}");
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--explain", "999"]);
    // An id the trace lacks is a bad argument: exit 2, as clap's own.
    one_clear_line(&o, 2, "--explain 999: the trace has no call with correlation id 999");
}

#[test]
fn fail_on_held_exits_4_when_a_call_held_longer() {
    let f = file("gate.jsonl", &syn::pageable_copy_staged());
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--fail-on-held", "1ms"]);
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert!(err(&o).contains("longer than --fail-on-held 1.0 ms"), "{}", err(&o));
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--fail-on-held", "1s"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // The JSON report carries the gate's outcome.
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--fail-on-held", "1ms", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let gate = &report["gate"];
    assert_eq!((gate["limit_ns"].as_i64(), gate["passed"].as_bool()), (Some(1_000_000), Some(false)), "{gate}");
    assert_eq!(gate["calls"][0]["kind"], "pageable-copy", "{gate}");
}

/// What the program pays once (a kernel's first launch loading its module lazily) is warm-up: left out of
/// `--fail-on-held` unless `--fail-on-warm-up`, and said so on stderr.
#[test]
fn fail_on_held_leaves_warm_up_out_unless_asked() {
    let f = file("gate-warm.jsonl", &syn::lazy_launch_waits_for_the_copy());
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--fail-on-held", "1ms"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("1 warm-up call (paid once, or in the steps --skip-first counts)"), "{}", err(&o));
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--fail-on-held", "1ms", "--fail-on-warm-up"]);
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert!(err(&o).contains("cudaLaunchKernel") && err(&o).contains("[warm-up]"), "{}", err(&o));
    let o = run(&["trace", "--replay", f.to_str().unwrap(), "--fail-on-warm-up"]);
    assert_eq!(o.status.code(), Some(2), "--fail-on-warm-up alone is an argument error: {}", err(&o));
}

#[test]
fn bad_trace_files_get_one_clear_line() {
    for (name, text, says) in [
        ("empty.jsonl", "", "no trace header"),
        ("junk.jsonl", "not json\n", "line 1"),
        ("headless.jsonl", "{\"type\":\"end\",\"t\":1}\n", "first line must be a trace header"),
    ] {
        let f = file(name, text);
        one_clear_line(&run(&["trace", "--replay", f.to_str().unwrap()]), 1, says);
        one_clear_line(&run(&["report", "--replay", f.to_str().unwrap()]), 1, "");
    }
    one_clear_line(&run(&["trace", "--replay", "/nonexistent/t.jsonl"]), 1, "/nonexistent/t.jsonl");
}

#[test]
fn a_missing_cupti_is_exit_3_and_bad_arguments_exit_2() {
    one_clear_line(&run(&["trace", "--cupti", "/nonexistent/libcupti.so", "--", "true"]), 3, "CUPTI");
    let o = Command::new(bin_path())
        .args(["trace", "--", "true"])
        .env("LD_LIBRARY_PATH", async_lab_driver::STUB_DIR)
        .env("CUDA_INJECTION64_PATH", "/opt/other-tool/libinject.so")
        .env("ASYNC_LAB_CUPTI", async_lab_tests::inject_path())
        .env("ASYNC_LAB_INJECT", async_lab_tests::inject_path())
        .output()
        .unwrap();
    one_clear_line(&o, 3, "another tool's injection library is set");
    let o = run(&["trace"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = run(&["trace", "--min-held", "fast", "--replay", "x"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
}

#[test]
fn a_traced_reference_run_is_compared_with_the_reference_s_classes() {
    let traced = syn::reference_run(3);
    let t = file("reference.jsonl", &traced.trace);
    let j = file("reference.json", &traced.json);
    let o = run(&["trace", "--replay", t.to_str().unwrap(), "--against", j.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let refs = async_lab_core::async_ref::RefOutput::parse(&traced.json).unwrap();
    let trace = async_lab_core::trace::format::Trace::parse(&traced.trace).unwrap();
    let md = async_lab_core::trace::against_reference::markdown(
        &async_lab_core::trace::against_reference::compare(
            &refs,
            &async_lab_core::trace::analysis::Analysis::all(&trace),
        ),
        async_lab_core::trace::against_reference::left_out(&refs),
    );
    let s = out(&o);
    assert!(s.contains("The reference's classes beside the tracer's") && s.contains(&md), "{s}");
}

#[test]
fn keep_matched_writes_a_smaller_trace_that_gives_the_same_comparison() {
    let traced = syn::reference_run(3);
    let t = file("keep.jsonl", &traced.trace);
    let j = file("keep.json", &traced.json);
    let cut = t.with_file_name("keep-matched.jsonl");
    let (t, j, c) = (t.to_str().unwrap(), j.to_str().unwrap(), cut.to_str().unwrap());
    let whole = run(&["trace", "--replay", t, "--against", j, "--keep-matched", c]);
    assert_eq!(whole.status.code(), Some(0), "{}", err(&whole));
    assert!(err(&whole).contains("calls --against matched") && err(&whole).contains(c), "{}", err(&whole));
    let again = run(&["trace", "--replay", c, "--against", j]);
    assert_eq!(again.status.code(), Some(0), "{}", err(&again));
    let comparison = |o: &Output| {
        let s = out(o);
        s[s.find("The reference's classes beside the tracer's").expect("the comparison is printed")..].to_owned()
    };
    assert_eq!(comparison(&whole), comparison(&again));
    let lines = |text: &str| text.lines().count();
    let kept = std::fs::read_to_string(&cut).unwrap();
    assert!(lines(&kept) < lines(&traced.trace), "the blockers' launches are left out: {kept}");
    // Only with --against; a file that cannot be written is one line and exit 1.
    assert_eq!(run(&["trace", "--replay", t, "--keep-matched", c]).status.code(), Some(2));
    let o = run(&["trace", "--replay", t, "--against", j, "--keep-matched", "/nonexistent/dir/cut.jsonl"]);
    one_clear_line(&o, 1, "/nonexistent/dir/cut.jsonl");
}

/// A cut written to a `.gz` name is stored compressed, as `--out` stores one, and replays to the same comparison.
#[test]
fn keep_matched_to_a_gz_name_is_stored_compressed() {
    let traced = syn::reference_run(3);
    let t = file("keep-gz.jsonl", &traced.trace);
    let j = file("keep-gz.json", &traced.json);
    let cut = t.with_file_name("keep-matched.jsonl.gz");
    let (t, j, c) = (t.to_str().unwrap(), j.to_str().unwrap(), cut.to_str().unwrap());
    let whole = run(&["trace", "--replay", t, "--against", j, "--keep-matched", c]);
    assert_eq!(whole.status.code(), Some(0), "{}", err(&whole));
    assert_eq!(&std::fs::read(&cut).unwrap()[..2], [0x1f, 0x8b], "a gzip stream begins with its magic bytes");
    let again = run(&["trace", "--replay", c, "--against", j]);
    assert_eq!(again.status.code(), Some(0), "{}", err(&again));
    let comparison = |o: &Output| {
        let s = out(o);
        s[s.find("The reference's classes beside the tracer's").expect("the comparison is printed")..].to_owned()
    };
    assert_eq!(comparison(&whole), comparison(&again));
}

#[test]
fn an_against_file_that_cannot_be_compared_gets_one_clear_line_before_anything_else() {
    let t = file("against.jsonl", &syn::lazy_launch_waits_for_the_copy());
    let old_reference = r#"{"tool":"async_ref","cases":[{"id":"a","class":"async","error":null}]}"#;
    for (name, text, says) in [
        ("junk.json", "not json", "is not a usable async-lab recording, nor async_ref's JSON output"),
        (
            "other.json",
            r#"{"tool":"nsys","cases":[]}"#,
            "is not a usable async-lab recording, nor async_ref's JSON output",
        ),
        (
            "overhead.json",
            r#"{"tool":"async_ref","mode":"overhead","cases":[]}"#,
            "cannot be compared with a trace: it is async_ref's --overhead output",
        ),
        ("old-reference.json", old_reference, "no host_call_start_ns"),
        (
            "bad-reference.json",
            r#"{"tool":"async_ref","cases":3}"#,
            "(async_ref's output) cannot be compared with a trace",
        ),
    ] {
        let f = file(name, text);
        let o = run(&["trace", "--replay", t.to_str().unwrap(), "--against", f.to_str().unwrap()]);
        one_clear_line(&o, 1, says);
        assert_eq!(out(&o), "", "{name}: nothing printed before the error");
    }
    let o = run(&["trace", "--replay", t.to_str().unwrap(), "--against", "/nonexistent/ref.json"]);
    one_clear_line(&o, 1, "/nonexistent/ref.json");
}

#[test]
fn the_report_of_a_trace_draws_its_lanes() {
    let f = file("page.jsonl", &syn::lazy_launch_waits_for_the_copy());
    let page = f.with_extension("html");
    let o = run(&["report", "--replay", f.to_str().unwrap(), "--out", page.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("thread 100") && html.contains("stream 13"), "lanes");
    assert!(html.contains("lazy module load waited for"), "the cause");
    // The launch's wait is drawn in the stream cause's colour.
    assert!(html.contains("fill=\"#dc2626\""), "held spans coloured by cause");
}

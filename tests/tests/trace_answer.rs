//! The answer a user reads first, on the committed training-loop traces (`recordings/trace-torch_train*`):
//! the headline (each thread's time: held by CUDA by cause, inside calls that returned at once, outside CUDA
//! calls; warm-up apart; a verdict), the findings grouped by place and cause with the lab's remedies, in the
//! text and in the JSON report, no call held a millisecond or more that reads `async`; and every committed
//! trace's text fits 120 columns.

use async_lab_core::classify::Class;
use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::findings::{self, Kind};
use async_lab_core::trace::format::Trace;
use async_lab_core::trace::headline::{self, VerdictKind};
use async_lab_core::trace::location::Kind as PlaceKind;
use async_lab_core::trace::remedies;
use async_lab_core::trace::text::duration;
use async_lab_core::trace::{json, page, warmup};
use async_lab_tests::run_with_stub;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The training loop traced with the default selection of calls.
fn training_loop() -> PathBuf {
    training_loops().into_iter().find(|p| !p.to_string_lossy().contains("all-calls")).unwrap()
}

fn training_loops() -> Vec<PathBuf> {
    let traces: Vec<PathBuf> = async_lab_tests::trace_files()
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("trace-torch_train"))
        .collect();
    assert_eq!(traces.len(), 2, "{traces:?}");
    traces
}

/// Every committed trace: the recordings' and the framework programs' crash and profiler traces.
fn every_trace() -> Vec<PathBuf> {
    let all = async_lab_tests::trace_files();
    assert!(all.len() > 20, "{all:?}");
    all
}

fn replay(path: &Path, columns: Option<&str>, more: &[&str]) -> String {
    let mut cmd = Command::new(async_lab_tests::bin_path());
    cmd.args(["trace", "--replay", path.to_str().unwrap()]).args(more);
    cmd.env("LD_LIBRARY_PATH", async_lab_driver::STUB_DIR).env_remove("COLUMNS");
    if let Some(c) = columns {
        cmd.env("COLUMNS", c);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}: {}", path.display(), String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The thread of a trace that spent the most time in CUDA calls.
fn main_thread(path: &Path) -> u64 {
    let trace = Trace::load(path).unwrap();
    let a = Analysis::of(&trace.processes[0]);
    let mut by: std::collections::BTreeMap<u64, i64> = std::collections::BTreeMap::new();
    for c in &a.program.calls {
        *by.entry(c.tid).or_default() += c.span.len();
    }
    by.into_iter().max_by_key(|(_, ns)| *ns).unwrap().0
}

fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn every_committed_trace_fits_120_columns_and_wide_prints_it_whole() {
    for path in every_trace() {
        let text = replay(&path, Some("120"), &[]);
        assert!(widest(&text) <= 120, "{}: a line of {} columns", path.display(), widest(&text));
        // Not a terminal, no COLUMNS: 120 columns too.
        let text = replay(&path, None, &[]);
        assert!(widest(&text) <= 120, "{}: a line of {} columns", path.display(), widest(&text));
    }
    let train = &training_loop();
    let narrow = replay(train, Some("80"), &[]);
    assert!(widest(&narrow) <= 80, "COLUMNS=80: {}", widest(&narrow));
    let wide = replay(train, Some("80"), &["--wide"]);
    assert!(widest(&wide) > 200, "--wide prints names and causes whole: {}", widest(&wide));
    // Names are cut with … in the tables (--wide prints them whole).
    let text = replay(train, Some("120"), &[]);
    assert!(text.contains("cudaOccupancyMaxActiveBlocksPer…") && !text.contains("WithFlags"), "{text}");
    assert!(wide.contains("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags"));
}

#[test]
fn the_training_loop_reads_headline_first_then_grouped_findings_with_the_labs_remedies() {
    let lab = remedies::lab();
    let pinned = lab.pinned_copy("runtime", "htod", 128 << 20).unwrap();
    for path in training_loops() {
        let text = replay(&path, Some("120"), &[]);
        let name = path.display();
        // The verdict, then each thread's account, then the findings, then the tables.
        // The main thread: the one with the most time in CUDA calls.
        let tid = main_thread(&path);
        assert!(text.starts_with(&format!("Verdict: mostly outside CUDA calls: thread {tid} ")), "{name}:\n{text}");
        let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{name}: no {s:?}:\n{text}"));
        let (account, steady, findings, table) =
            (at(&format!("thread {tid}: ")), at("  steady state: "), at("findings in the steady state"), at("│ held"));
        assert!(account < steady && steady < findings && findings < table, "{name}:\n{text}");
        assert!(text[account..findings].contains("warm-up: ") && text[account..findings].contains("context creation"));
        let findings = &text[findings..table];
        // The eight pageable batches and their labels are one finding, its remedy pinned memory in PyTorch's
        // words with the lab's number.
        let pageable = &findings[findings.find("pageable copies at nvtx: batch-to-gpu-0…7: 16 calls").expect(&text)..];
        let pageable = &pageable[..pageable.find("--explain").unwrap()];
        assert!(pageable.contains("pin_memory=True") && pageable.contains("non_blocking=True"), "{pageable}");
        assert!(!pageable.contains("cudaHostRegister") && !pageable.contains("cupy"), "{pageable}");
        let measured =
            format!("a pinned 256 MiB host → device cudaMemcpyAsync returned in {}", duration(pinned.returned_ns));
        let flowing = pageable.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flowing.contains(&measured), "{pageable}");
        assert!(findings.contains("synchronizations at nvtx: loss-item-1…7: 7 calls"), "{findings}");
        assert!(findings.contains("every N steps") && findings.contains("The GPU was simply busy"), "{findings}");
        // The lazy loads are one warm-up finding, with the lab's first launches.
        assert!(
            text.contains("loading code (lazy module loads, libraries)") && text.contains("CUDA_MODULE_LOADING=EAGER")
        );
    }
}

#[test]
fn the_training_loops_json_report_has_the_headline_and_the_findings_with_remedies() {
    for path in training_loops() {
        let trace = Trace::load(&path).unwrap();
        let report = json::report(&Analysis::all(&trace), 20_000, false, 0);
        let p = &report.processes[0];
        assert_eq!(p.headline.verdict.kind, VerdictKind::MostlyOutsideCuda, "{}", path.display());
        assert_eq!(p.headline.verdict.thread, main_thread(&path));
        for t in &p.headline.threads {
            for part in [&t.warm_up, &t.steady] {
                // The account adds up: held, inside calls that returned at once, outside the calls.
                assert_eq!(part.held_ns + part.at_once_ns + part.outside_ns, part.wall_ns, "{t:?}");
                assert_eq!(part.held_by.iter().map(|c| c.ns).sum::<i64>(), part.held_ns, "{t:?}");
            }
            assert_eq!(t.warm_up.wall_ns + t.steady.wall_ns, t.wall_ns, "{t:?}");
        }
        let main = &p.headline.threads[0];
        assert!(main.first_use.contexts == 1 && main.first_use.libraries > 0 && main.first_use.module_loads > 0);
        assert!(
            main.steady.held_by.iter().any(|c| c.cause == "stream")
                && main.steady.held_by.iter().any(|c| c.cause == "own")
        );
        let pageable = p.findings.iter().find(|f| f.kind == Kind::PageableCopy && !f.warm_up && f.calls == 16).unwrap();
        assert_eq!(pageable.where_words, "nvtx: batch-to-gpu-0…7");
        assert_eq!(pageable.framework, async_lab_core::trace::framework::Framework::Torch);
        assert!(pageable.remedy.lab.iter().any(|e| e.case == "runtime/sweep/htod/pinned/256MiB"), "{pageable:?}");
        assert_eq!(pageable.calls_explain.len(), 16);
        let sync = p.findings.iter().find(|f| f.kind == Kind::Synchronization).unwrap();
        assert!(sync.remedy.lab.iter().any(|e| e.case.starts_with("wait/stream-sync")), "{sync:?}");
        let loading = p.findings.iter().find(|f| f.kind == Kind::LoadingCode).unwrap();
        assert!(loading.warm_up && loading.remedy.words.contains("CUDA_MODULE_LOADING=EAGER"));
        assert!(loading.remedy.lab.iter().any(|e| e.case.contains("first-launch/eager")), "{loading:?}");
        // Steady-state findings first, each part the most time first.
        let steady: Vec<i64> = p.findings.iter().take_while(|f| !f.warm_up).map(|f| f.total_ns).collect();
        assert!(steady.windows(2).all(|w| w[0] >= w[1]) && !steady.is_empty(), "{steady:?}");
    }
}

#[test]
fn no_call_held_a_millisecond_or_more_reads_async() {
    let mut driver_work = 0;
    for path in every_trace() {
        let trace = Trace::load(&path).unwrap();
        for process in &trace.processes {
            let a = Analysis::of(process);
            for t in &a.traced {
                if t.held.total_ns >= 1_000_000 {
                    let c = &a.program.calls[t.index];
                    assert_ne!(
                        t.class,
                        Class::Async,
                        "{}: {} ({}) held {}",
                        path.display(),
                        c.name,
                        c.corr,
                        t.held.total_ns
                    );
                }
                driver_work += usize::from(t.class == Class::DriverWork);
            }
        }
    }
    assert!(driver_work > 50, "{driver_work}");
    // The context's creation in the training loop is what the issue saw read `async`.
    let trace = Trace::load(&training_loop()).unwrap();
    let a = Analysis::of(&trace.processes[0]);
    let ctx = a.traced.iter().find(|t| a.program.calls[t.index].name == "cuDevicePrimaryCtxRetain").unwrap();
    assert_eq!((ctx.class, ctx.cause.as_str()), (Class::DriverWork, "context creation"));
}

#[test]
fn skip_first_counts_the_first_steps_as_warm_up() {
    let path = &training_loop();
    let trace = Trace::load(path).unwrap();
    let a = Analysis::of(&trace.processes[0]);
    let warm = warmup::warm_up(&a, 1);
    let skipped = warm.skipped.unwrap();
    assert_eq!(skipped.tid, Some(695));
    // The first step ends where its loss.item() synchronization returned.
    let first_sync = a.program.calls.iter().filter(|c| c.name == "cudaStreamSynchronize").map(|c| c.span.end).min();
    assert_eq!(skipped.until_ns, first_sync);
    let f = findings::findings(&a, &warm, false);
    let steady =
        f.iter().find(|f| f.kind == Kind::PageableCopy && !f.warm_up && f.where_words.starts_with("nvtx")).unwrap();
    assert_eq!((steady.calls, steady.where_words.as_str()), (14, "nvtx: batch-to-gpu-1…7"));
    let h = headline::headline(&a, &warm, &headline::totals(&a.program));
    let none = headline::headline(&a, &warmup::warm_up(&a, 0), &headline::totals(&a.program));
    assert!(h.threads[0].warm_up.wall_ns > none.threads[0].warm_up.wall_ns);
    // More steps than the program made: all of it is warm-up.
    let all = warmup::warm_up(&a, 1000);
    assert!(all.calls.iter().all(|&w| w) && all.skipped.unwrap().until_ns.is_none());
    let text = replay(path, Some("120"), &["--skip-first", "1"]);
    assert!(
        text.contains("--skip-first 1: the first step (a step ends at each synchronization of thread 695)"),
        "{text}"
    );
}

#[test]
fn explain_gives_the_calls_finding_and_remedy_and_the_page_leads_with_them() {
    let path = &training_loop();
    let o = run_with_stub(&["trace", "--replay", path.to_str().unwrap(), "--explain", "4711"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.starts_with("cudaMemcpyAsync (thread 695, --explain 4711) held its thread"), "{s}");
    assert!(s.contains("finding: pageable copies at nvtx: batch-to-gpu-0…7: 16 calls"), "{s}");
    assert!(
        s.contains("the lab: a pinned 256 MiB copy returned in") && s.contains("runtime/sweep/htod/pinned/256MiB"),
        "{s}"
    );
    let trace = Trace::load(path).unwrap();
    let html = page::render("train.jsonl", &Analysis::all(&trace), 20_000, 20);
    let verdict = html.find("<p id=\"p0-verdict\"><strong>Verdict: mostly outside CUDA calls").expect("the verdict");
    let findings = html.find("<ol id=\"p0-findings\">").expect("the findings");
    let calls = html.find("calls held their thread longer than").unwrap();
    assert!(verdict < findings && findings < calls);
    assert!(html[findings..calls].contains("pin_memory=True"));
}

/// The verdict on synthetic loops of one thread: a loop of launches 12 µs apart is busy launching; one that
/// waits 30 ms for its kernels each step is held by CUDA; one whose launches are 50 ms apart is mostly
/// outside CUDA calls. The account adds up in each.
#[test]
fn the_verdict_tells_a_launch_bound_loop_from_a_held_one_and_from_one_busy_elsewhere() {
    use async_lab_core::trace::format::Line;
    use async_lab_tests::trace_synthetic::{self as syn, MS, T0, US};
    let verdict = |lines: Vec<Line>| {
        let trace = Trace::parse(&syn::trace(lines)).unwrap();
        let a = Analysis::of(&trace.processes[0]);
        let h = headline::headline(&a, &warmup::warm_up(&a, 0), &headline::totals(&a.program));
        let s = &h.threads[0].steady;
        assert_eq!(s.held_ns + s.at_once_ns + s.outside_ns, s.wall_ns, "{s:?}");
        (h.verdict.kind, h.verdict.words)
    };
    let launches = |n: u32, every: u64| -> Vec<Line> {
        (0..n)
            .flat_map(|i| {
                let t = u64::from(i) * every;
                [
                    syn::call("cudaLaunchKernel", i + 1, t, t + 5 * US),
                    syn::kernel("k", 13, i + 1, t + 6 * US, t + 9 * US),
                ]
            })
            .collect()
    };
    let (kind, words) = verdict(launches(4000, 12 * US));
    assert_eq!(kind, VerdictKind::BusyLaunching, "{words}");
    assert!(words.starts_with("busy launching: thread 100 made a CUDA call every 12.0 µs"), "{words}");

    let mut held = Vec::new();
    for step in 0..10u32 {
        let t = u64::from(step) * 31 * MS;
        let corr = step * 10 + 1;
        held.push(syn::call("cudaLaunchKernel", corr, t, t + 5 * US));
        held.push(syn::kernel("gemm", 13, corr, t + 10 * US, t + 30 * MS));
        held.push(syn::call("cudaStreamSynchronize", corr + 1, t + 20 * US, t + 30 * MS + 10 * US));
        held.push(Line::Sync {
            sync_type: 3,
            start: T0 + t + 20 * US,
            end: T0 + t + 30 * MS + 10 * US,
            stream: Some(13),
            corr: corr + 1,
            event: None,
        });
    }
    let (kind, words) = verdict(held);
    assert_eq!(kind, VerdictKind::HeldByCuda, "{words}");
    assert!(words.contains("most by its stream"), "{words}");

    let (kind, words) = verdict(launches(20, 50 * MS));
    assert_eq!(kind, VerdictKind::MostlyOutsideCuda, "{words}");
}

/// No place loses its `:line` at 80 or 120 columns, on every committed trace: a source place too long for
/// its table's column or a sentence is cut in its path's middle (`reference/…/native_program.cu:96`), never at
/// its end; so no word that is a path ends with `…`, and each place the findings and the by-location table
/// name with a line shows that line.
#[test]
fn no_place_loses_its_line_at_80_or_120_columns() {
    let source = |w: &str| {
        let w = w.trim_end_matches([':', ',', ';', ')', '│']);
        w.contains('/')
            || [".py", ".cu", ".cc", ".cpp", ".c", ".h", ".cuh"].iter().any(|x| w.contains(&format!("{x}:")))
    };
    for path in every_trace() {
        let trace = Trace::load(&path).unwrap();
        let report = json::report(&Analysis::all(&trace), 20_000, false, 0);
        // Each place shown with a line: `file:line`, its line's digits.
        let mut lines: Vec<String> = Vec::new();
        for p in &report.processes {
            let places = p.findings.iter().map(|f| &f.place).chain(p.by_location.rows.iter().map(|r| &r.place));
            for place in places.filter(|p| matches!(p.kind, PlaceKind::Python | PlaceKind::Native)) {
                let word =
                    place.words.split(' ').find(|w| w.rsplit_once(':').is_some_and(|(_, l)| l.parse::<u32>().is_ok()));
                if let Some((_, line)) = word.and_then(|w| w.rsplit_once(':')) {
                    lines.push(format!(":{line}"));
                }
            }
        }
        for columns in ["80", "120"] {
            let text = replay(&path, Some(columns), &["--top", "100000"]);
            for word in text.split_whitespace() {
                let cut = word.trim_end_matches(['│', ':', ',']).ends_with('…');
                assert!(
                    !(cut && source(word)),
                    "{} at {columns} columns: a place cut at its end: {word}",
                    path.display()
                );
            }
            for line in &lines {
                assert!(text.contains(line.as_str()), "{} at {columns} columns: no {line}", path.display());
            }
        }
    }
}

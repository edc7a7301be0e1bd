//! Words that never contradict, over every committed trace: a call's class agrees with what released it and
//! with its time (no call held longer than the tables' default limit reads `async`, "returned at once"); the
//! words of what held it name the largest part first and the others on the side of it they happened, as
//! `--explain` lists them; a finding's kind agrees with what its calls waited for, and its remedy does not
//! deny the GPU work its words name; and nothing held no longer than a limit is listed past it (the tables,
//! the JSON report, `--fail-on-held`).

use async_lab_core::attribution::{Cause, Held};
use async_lab_core::classify::Class;
use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::driver_work::AT_ONCE_NS;
use async_lab_core::trace::findings::Kind;
use async_lab_core::trace::format::Trace;
use async_lab_core::trace::{cause, findings, json, text, warmup};
use std::path::Path;

/// The tables' default `--min-held` (`async-lab trace --help`): 20 µs.
const MIN_HELD_NS: i64 = 20_000;

fn analyses(path: &Path, mut check: impl FnMut(&Analysis)) {
    let trace = Trace::load(path).unwrap();
    for p in &trace.processes {
        check(&Analysis::of(p));
    }
}

/// Each cause's first moment and its time in all.
fn causes(held: &Held) -> Vec<(Cause, i64, i64)> {
    let mut out: Vec<(Cause, i64, i64)> = Vec::new();
    for s in &held.segments {
        match out.iter_mut().find(|c| c.0 == s.cause) {
            Some(c) => c.2 += s.span.len(),
            None => out.push((s.cause, s.span.start, s.span.len())),
        }
    }
    out
}

#[test]
fn every_calls_class_agrees_with_what_released_it_and_with_its_time() {
    for path in async_lab_tests::trace_files() {
        analyses(&path, |a| {
            for t in &a.traced {
                let c = &a.program.calls[t.index];
                let released = t.held.released_by().map(|s| s.cause);
                let waits = [Cause::Stream, Cause::Device, Cause::Thread];
                let ok = match t.class {
                    Class::Async => t.held.total_ns <= AT_ONCE_NS && !released.is_some_and(|r| waits.contains(&r)),
                    Class::DriverWork => !released.is_some_and(|r| waits.contains(&r)),
                    Class::WaitedForStream => released == Some(Cause::Stream),
                    Class::DeviceSync => released == Some(Cause::Device),
                    Class::WaitedForThread => released == Some(Cause::Thread),
                    Class::Blocking => t.held.held_through_own_work() == Some(true),
                    _ => true,
                };
                assert!(
                    ok,
                    "{}: {} (--explain {}) reads {} but held {} ns, released by {released:?}: {}",
                    path.display(),
                    c.name,
                    c.corr,
                    t.class,
                    t.held.total_ns,
                    t.cause
                );
            }
        });
    }
}

#[test]
fn what_held_a_call_names_the_largest_part_first_and_the_others_on_their_side_of_it() {
    let mut checked = 0;
    for path in async_lab_tests::trace_files() {
        analyses(&path, |a| {
            for t in a.traced.iter().filter(|t| t.class != Class::Unknown) {
                let c = &a.program.calls[t.index];
                assert!(!t.cause.contains("; then "), "{}: {}: {}", path.display(), c.corr, t.cause);
                let parts = causes(&t.held);
                let Some(&(_, first, ns)) = parts.iter().max_by_key(|p| p.2) else { continue };
                let (before, after) = (t.cause.contains("; before it, "), t.cause.contains("; after it, "));
                if before || after {
                    assert!(t.cause.starts_with(&text::duration(ns)), "{}: {}: {}", path.display(), c.corr, t.cause);
                }
                assert!(!before || parts.iter().any(|p| p.1 < first), "{}: {}: {}", path.display(), c.corr, t.cause);
                assert!(!after || parts.iter().any(|p| p.1 > first), "{}: {}: {}", path.display(), c.corr, t.cause);
            }
            checked += 1;
        });
    }
    assert!(checked > 20);
}

/// A finding's kind names what held its calls: each kind's calls waited that way, or were held by that.
#[test]
fn every_findings_kind_agrees_with_its_calls_and_its_remedy_with_its_words() {
    for path in async_lab_tests::trace_files() {
        analyses(&path, |a| {
            let warm = warmup::warm_up(a, 0);
            for f in findings::findings(a, &warm, false) {
                let calls: Vec<_> = f
                    .calls_explain
                    .iter()
                    .map(|corr| a.traced.iter().find(|t| a.program.calls[t.index].corr == *corr).unwrap())
                    .collect();
                let longest = calls[0];
                let where_ =
                    format!("{}: finding {:?} at {} (--explain {})", path.display(), f.kind, f.where_words, f.explain);
                assert!(!f.remedy.words.is_empty(), "{where_}: no remedy");
                let waited = |cause| calls.iter().all(|t| t.held.ns(cause) > 0);
                match f.kind {
                    Kind::PageableCopy => {
                        let own = longest.held.ns(Cause::Own);
                        let waits = [Cause::Stream, Cause::Device, Cause::Thread]
                            .map(|c| longest.held.ns(c))
                            .iter()
                            .sum::<i64>();
                        // Held by its staging at least as long as by any wait, or, a copy to the device, held
                        // through its staging after the wait (from pinned memory it would not have waited).
                        let upload = longest.class == Class::Blocking && !cause::to_host(&a.program, longest.index);
                        assert!(
                            own >= waits || upload,
                            "{where_}: its longest call waited {waits} ns and staged {own} ns"
                        );
                    }
                    Kind::Synchronization | Kind::StreamWait | Kind::FullQueue => {
                        assert!(waited(Cause::Stream), "{where_}: a call did not wait for its stream")
                    }
                    Kind::DeviceWait | Kind::FreeDrainsDevice => {
                        assert!(waited(Cause::Device), "{where_}: a call did not wait for the device")
                    }
                    Kind::OtherThread => assert!(waited(Cause::Thread), "{where_}: a call did not wait for a thread"),
                    Kind::DriverWork => {
                        let waits = [Class::WaitedForStream, Class::DeviceSync, Class::WaitedForThread];
                        assert!(calls.iter().all(|t| !waits.contains(&t.class)), "{where_}: a call's class is a wait");
                        if longest.class == Class::Blocking {
                            assert!(!f.remedy.words.contains("nothing on the GPU"), "{where_}: {}", f.remedy.words);
                        }
                    }
                    _ => {}
                }
            }
        });
    }
}

/// Nothing held no longer than a limit is listed past it: the held tables and the by-place table at the
/// default limit (where no listed call reads `async` either), the JSON report, and `--fail-on-held`.
#[test]
fn nothing_under_a_limit_is_listed_past_it() {
    for path in async_lab_tests::trace_files() {
        let trace = Trace::load(&path).unwrap();
        for (n, p) in trace.processes.iter().enumerate() {
            let a = Analysis::of(p);
            for t in a.held(MIN_HELD_NS, false) {
                assert!(t.held.total_ns > MIN_HELD_NS);
                assert_ne!(t.class, Class::Async, "{}: --explain {}", path.display(), a.program.calls[t.index].corr);
            }
            for row in a.by_location(MIN_HELD_NS, false).rows {
                assert!(row.classes.iter().all(|c| c.class != "async"), "{}: {:?}", path.display(), row.place.words);
            }
            let report = json::report(&Analysis::all(&trace), MIN_HELD_NS, false, 0);
            assert!(report.processes[n].held_calls.iter().all(|h| h.held_ns > MIN_HELD_NS));
        }
        // The gate's lines, as a CI log shows them.
        let out = async_lab_tests::run_with_stub(&[
            "trace",
            "--replay",
            path.to_str().unwrap(),
            "--fail-on-held",
            "2ms",
            "--format",
            "json",
        ]);
        for line in String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.trim_start().starts_with("held ")) {
            let held = line.trim_start().trim_start_matches("held ").split(',').next().unwrap();
            let (number, unit) = held.split_once(' ').unwrap();
            let ns = number.parse::<f64>().unwrap()
                * match unit {
                    "s" => 1e9,
                    "ms" => 1e6,
                    "µs" => 1e3,
                    _ => 1.0,
                };
            // Printed to three figures: a call held 2.04 ms reads "2.0 ms".
            assert!(ns >= 2e6, "{}: {line}", path.display());
        }
    }
}

/// `async`'s bound is the tables' default limit: at `--min-held`'s default no listed call can read `async`.
#[test]
fn the_tables_default_limit_is_asyncs_bound() {
    let help = String::from_utf8_lossy(&async_lab_tests::run_with_stub(&["trace", "--help"]).stdout).into_owned();
    let line = help.lines().find(|l| l.trim_start().starts_with("--min-held")).unwrap();
    let default = line.split("[default: ").nth(1).and_then(|d| d.split(']').next()).unwrap();
    let ns = async_lab::trace::parse_duration(default).unwrap().as_nanos() as i64;
    assert_eq!(ns, AT_ONCE_NS, "{line}");
    assert_eq!(MIN_HELD_NS, AT_ONCE_NS);
}

//! What `async-lab trace` says of another CUPTI subscriber (`Line::Conflict`): which library tried, and
//! whether CUPTI took it beside the tracer (a CUPTI of 13.2 or later, which takes several subscribers), or
//! refused it so that its CUDA activity went unrecorded (the default with a CUPTI that takes one), or the
//! tracer stepped aside (`--yield-cupti`).

use async_lab_core::trace::format::{Line, Trace};

/// The library, in words a user knows it by.
fn library_words(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    if file.contains("kineto") || file.starts_with("libtorch") {
        format!("torch's profiler (libkineto / {file})")
    } else if file.is_empty() {
        "a library of the program".into()
    } else {
        file.to_owned()
    }
}

/// One line per library that tried, per process.
pub fn words(trace: &Trace) -> Vec<String> {
    let mut out = Vec::new();
    for p in &trace.processes {
        let start = p.lines.iter().find_map(|l| match l {
            Line::Setup { clock, .. } => Some(clock.cupti_ns),
            _ => None,
        });
        let mut seen: Vec<&str> = Vec::new();
        for l in &p.lines {
            let Line::Conflict { t, library, call, yielded, accepted, .. } = l else { continue };
            if seen.contains(&library.as_str()) {
                continue;
            }
            seen.push(library);
            let at = start.map_or(String::new(), |s| format!(" at {:.3} s", t.saturating_sub(s) as f64 / 1e9));
            out.push(if *accepted == Some(true) && !*yielded {
                format!(
                    "{} subscribed to CUPTI ({call}){at} beside the tracer: CUPTI took both subscribers",
                    library_words(library)
                )
            } else if *yielded {
                format!(
                    "{} asked CUPTI for a subscriber ({call}){at}; the tracer stepped aside (--yield-cupti): the trace \
                     ends there",
                    library_words(library)
                )
            } else {
                format!(
                    "{} tried to subscribe to CUPTI ({call}){at}; its CUDA activity was not recorded; use --yield-cupti",
                    library_words(library)
                )
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_lab_core::trace::format::{header, ApiCalls, ClockPair};

    #[test]
    fn each_library_that_tried_is_one_line() {
        let conflict = |library: &str, yielded, accepted| Line::Conflict {
            t: 2_500_000_000,
            tid: 1,
            library: library.into(),
            call: "cuptiSubscribe".into(),
            yielded,
            accepted,
        };
        let lines = [
            header(1, vec![], None),
            Line::Setup {
                clock: ClockPair { cupti_ns: 1_000_000_000, monotonic_ns: 0 },
                api_calls: ApiCalls::MayHold,
                locate_over_ns: 0,
                python: None,
                several_subscribers: None,
            },
            conflict("/v/torch/lib/libtorch_cuda.so", false, None),
            conflict("/v/torch/lib/libtorch_cuda.so", false, Some(false)),
            conflict("/x/libother.so", true, Some(true)),
            conflict("/v/torch/lib/libtorch_cpu.so", false, Some(true)),
        ];
        let text: String = lines.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect();
        let got = words(&Trace::parse(&text).unwrap());
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].starts_with("torch's profiler (libkineto / libtorch_cuda.so) tried to subscribe"), "{}", got[0]);
        assert!(got[0].contains("at 1.500 s") && got[0].contains("use --yield-cupti"), "{}", got[0]);
        assert!(got[1].contains("libother.so") && got[1].contains("stepped aside"), "{}", got[1]);
        // A CUPTI that takes several subscribers took the profiler beside the tracer.
        assert!(got[2].starts_with("torch's profiler (libkineto / libtorch_cpu.so) subscribed"), "{}", got[2]);
        assert!(got[2].ends_with("beside the tracer: CUPTI took both subscribers"), "{}", got[2]);
    }
}

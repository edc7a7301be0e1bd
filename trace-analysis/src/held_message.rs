//! A held call in the words of the in-process gate (`no_blocking`'s `HeldError`, `watch`, the pytest
//! plugin's failure), made here so that the Python package words nothing the trace's report does not: where
//! the call was made, the call, how long it held its thread past the block's limit, its class, what held it,
//! whether it is paid once, and the remedy in the program's framework.

use super::format::PyFrame;
use super::json::HeldCall;
use super::library_paths::short_path;
use super::location::user_python;
use super::words::duration;

/// The message of a held call the trace holds (`over_ns`: the block's limit it held past): the first line
/// says where, the call, how long and its class; then what held it and the remedy.
pub fn message(h: &HeldCall, over_ns: i64) -> String {
    let mut out = format!(
        "{}: {} held this thread {} (over {}), class {}\n  what held it: {}",
        h.location.words,
        h.name,
        duration(h.held_ns),
        duration(over_ns),
        h.class,
        h.what_held_it
    );
    if let Some(once) = h.once {
        out.push_str(&format!("\n  paid once: {} (warm-up)", once.words()));
    }
    if !h.remedy.words.is_empty() {
        out.push_str(&format!("\n  remedy: {}", h.remedy.words));
    }
    out
}

/// The message of a held call whose lines the trace does not hold yet, from what the callback saw and the
/// Python frames read for it (innermost first).
pub fn missing(name: &str, held_ns: i64, over_ns: i64, python: &[PyFrame]) -> String {
    let place = user_python(python).map_or_else(
        || name.to_owned(),
        |at| format!("{}:{} {}", short_path(&python[at].file), python[at].line, python[at].function),
    );
    format!(
        "{place}: {name} held this thread {} (over {}), class unknown\n  what held it: not known: its line was not \
         found in the trace",
        duration(held_ns),
        duration(over_ns)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_the_trace_lacks_is_placed_at_the_users_frame() {
        let python = vec![
            PyFrame {
                file: "/venv/lib/python3.12/site-packages/torch/_tensor.py".into(),
                line: 5,
                function: "f".into(),
            },
            PyFrame { file: "/home/me/test_copy.py".into(), line: 12, function: "test_copy".into() },
        ];
        let m = missing("cudaMemcpyAsync", 3_000_000, 1_000_000, &python);
        assert!(
            m.starts_with(
                "test_copy.py:12 test_copy: cudaMemcpyAsync held this thread 3.0 ms (over 1.0 ms), class unknown"
            ),
            "{m}"
        );
        assert!(missing("cudaFree", 2_000_000, 1_000_000, &[]).starts_with("cudaFree: cudaFree held"));
    }
}

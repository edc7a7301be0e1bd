//! A duration in the words the trace's tables print: three significant figures at most, in the largest unit
//! under which it is at least one. The bounded trace groups the durations of the calls it counts by these
//! words, so its counts print exactly as the tables would have printed the calls.

/// `ns` nanoseconds as the tables print them (`12.3 µs`, `1.5 ms`, `2.00 s`; `?` for a value that is not a
/// number).
pub fn duration(ns: f64) -> String {
    let a = ns.abs();
    if !a.is_finite() {
        "?".to_owned()
    } else if a >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if a >= 1e6 {
        format!("{:.1} ms", ns / 1e6)
    } else if a >= 1e5 {
        format!("{:.0} µs", ns / 1e3)
    } else if a >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

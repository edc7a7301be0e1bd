//! Small pieces of the trace's words shared by its views: durations and shares, each cause's name, and long names (C++ kernels, CUDA's longest API functions)
//! shortened with `…` for tables (`--explain` and the JSON report keep them whole). Every view may use it: it
//! uses none of them.

use crate::attribution::Cause;

/// A duration for people, from integer ns (`units::duration`).
pub fn duration(ns: i64) -> String {
    crate::units::duration(ns as f64)
}

/// A share in whole percent ("17%"), "<1%" for a small one that is not nothing.
pub fn percent(ns: i64, of: i64) -> String {
    if of <= 0 {
        return "0%".into();
    }
    let p = ns as f64 * 100.0 / of as f64;
    if p > 0.0 && p < 1.0 {
        "<1%".into()
    } else {
        format!("{p:.0}%")
    }
}

/// A cause in the trace's words: what held the thread during a segment.
pub fn cause(c: Cause) -> &'static str {
    match c {
        Cause::Stream => "its stream",
        Cause::Device => "other streams",
        Cause::Thread => "another thread",
        Cause::Own => "its own GPU work",
        Cause::Call => "driver work",
    }
}

/// `name` cut to at most `max` characters, its end replaced by `…` where it was longer.
pub fn shorten(name: &str, max: usize) -> String {
    if name.chars().count() <= max || max == 0 {
        return name.to_owned();
    }
    let mut out: String = name.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Every word of `text` (a run without spaces) longer than `max` characters shortened with `…`: a kernel's
/// mangled or templated name inside a sentence.
pub fn shorten_words(text: &str, max: usize) -> String {
    text.split(' ').map(|w| shorten(w, max)).collect::<Vec<_>>().join(" ")
}

/// Each run of digits as one `#`: names made once per step (`batch-to-gpu-0`, `batch-to-gpu-1`) read as one
/// (`batch-to-gpu-#`).
pub fn fold(name: &str) -> String {
    let mut out = String::new();
    let mut in_digits = false;
    for ch in name.chars() {
        if ch.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            out.push(ch);
            in_digits = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_with_an_ellipsis_and_short_ones_kept() {
        assert_eq!(shorten("cudaLaunchKernel", 20), "cudaLaunchKernel");
        let long = "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags";
        let cut = shorten(long, 24);
        assert_eq!(cut.chars().count(), 24);
        assert!(cut.starts_with("cudaOccupancyMaxActiveB") && cut.ends_with('…'), "{cut}");
        assert_eq!(
            shorten_words("the kernel sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize256x64x8 ahead", 16),
            "the kernel sm80_xmma_gemm_… ahead"
        );
    }
}

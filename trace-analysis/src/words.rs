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
/// mangled or templated name inside a sentence; a source place keeps its `:line` ([`shorten_place`]).
pub fn shorten_words(text: &str, max: usize) -> String {
    text.split(' ').map(|w| shorten_place(w, max).unwrap_or_else(|| shorten(w, max))).collect::<Vec<_>>().join(" ")
}

/// A source place (`reference/frameworks/native_program.cu:96`, `train.py:41`, with any `:` or `,` after it)
/// cut to at most `max` characters without losing its `:line`: the middle of its path goes
/// (`reference/…/native_program.cu:96`), and where its file's name with the line is too long still, the
/// name's start (`…_program.cu:96`). `None` for a word that is no source place.
pub fn shorten_place(word: &str, max: usize) -> Option<String> {
    if word.chars().count() <= max || max == 0 {
        return None;
    }
    let body = word.trim_end_matches([':', ',', ';', ')']);
    let after = &word[body.len()..];
    let (path, line) = body.rsplit_once(':')?;
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) || path.is_empty() || path.contains(':') {
        return None;
    }
    let (dirs, file) = path.rsplit_once('/').unwrap_or(("", path));
    let tail = format!("{file}:{line}{after}");
    let tail_len = tail.chars().count();
    if dirs.is_empty() || tail_len + 2 > max {
        // The file's name alone is too long: its start goes.
        let keep: String = tail.chars().skip(tail_len.saturating_sub(max.saturating_sub(1))).collect();
        return Some(format!("…{keep}"));
    }
    // The path's leading folders that fit, then `…/`.
    let room = max - tail_len - 2;
    let mut head = String::new();
    for dir in dirs.split('/') {
        if head.chars().count() + dir.chars().count() + 1 > room {
            break;
        }
        head.push_str(dir);
        head.push('/');
    }
    Some(format!("{head}…/{tail}"))
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

    /// A source place is cut in its path's middle, never at its `:line`.
    #[test]
    fn a_place_keeps_its_line() {
        let place = "reference/frameworks/native_program.cu:96";
        assert_eq!(
            shorten_words(&format!("driver work at {place} main"), 32),
            "driver work at reference/…/native_program.cu:96 main"
        );
        assert_eq!(shorten_place(place, 24).unwrap(), "…/native_program.cu:96");
        assert_eq!(shorten_place(place, 12).unwrap(), "…ogram.cu:96");
        assert_eq!(shorten_place(&format!("{place}:"), 33).unwrap(), "reference/…/native_program.cu:96:");
        assert_eq!(shorten_place("a_very_long_file_name_of_the_program.py:1234", 20).unwrap(), "…the_program.py:1234");
        for max in 8..60 {
            let cut = shorten_words(place, max);
            assert!(cut.ends_with(":96") && cut.chars().count() <= max.max(3), "{max}: {cut}");
        }
        // Not places: left to `shorten`.
        assert_eq!(shorten_place("std::vector<int>::operator[]:12x", 8), None);
        assert_eq!(shorten_place("cudaOccupancyMaxActiveBlocksPerMultiprocessor", 8), None);
        assert_eq!(shorten_place("train.py:41", 32), None);
    }
}

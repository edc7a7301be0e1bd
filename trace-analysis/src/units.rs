//! Byte sizes as people write them ("4KiB", "256MiB", "1GiB") and back, and durations as people read them
//! (the one formatter of durations: tables, sentences, timelines and traces).

use anyhow::{bail, Context as _};

/// Parses "4096", "4KiB", "64K", "1MiB", "1M", "1GiB", "1G" (binary units).
pub fn parse_size(text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        bail!("{text:?} is not a size (examples: 4096, 64KiB, 1MiB, 1GiB)");
    }
    let n: u64 = digits.parse().with_context(|| format!("{text:?} is not a size"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" | "kb" => 10,
        "m" | "mib" | "mb" => 20,
        "g" | "gib" | "gb" => 30,
        other => bail!("unknown size unit {other:?} in {text:?} (use KiB, MiB or GiB)"),
    };
    let bytes = n.checked_shl(shift).filter(|b| b >> shift == n).with_context(|| format!("{text:?} is too large"))?;
    if bytes == 0 {
        bail!("a size must be at least 1 byte, got {text:?}");
    }
    Ok(bytes)
}

/// "4KiB", "256MiB", "1GiB"; sizes that are not a whole number of units are written in bytes.
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

/// A size for people, in one wording everywhere a traced program's sizes are said: a whole number of the largest
/// binary unit where it is one ("256 MiB", "4 KiB", "8 B"), else three significant figures of the largest unit
/// under it ("18.8 MiB" for 19,660,800 bytes, "9.54 MiB" for 10,000,000). Case ids keep [`format_size`].
pub fn size_words(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift {
            if bytes % (1 << shift) == 0 {
                return format!("{} {unit}", bytes >> shift);
            }
            let v = bytes as f64 / (1u64 << shift) as f64;
            return match v {
                v if v >= 100.0 => format!("{v:.0} {unit}"),
                v if v >= 10.0 => format!("{v:.1} {unit}"),
                v => format!("{v:.2} {unit}"),
            };
        }
    }
    format!("{bytes} B")
}

/// A duration for people: "850 ns", "5.1 µs", "312 µs", "20.3 ms", "1.20 s" (the trace format's own words for
/// it, which the bounded trace groups durations by).
pub use async_lab_trace_format::units::duration;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_one_wording() {
        assert_eq!(size_words(19_660_800), "18.8 MiB");
        assert_eq!(size_words(100_514 << 10), "98.2 MiB");
        assert_eq!(size_words(10_000_000), "9.54 MiB");
        assert_eq!(size_words(256 << 20), "256 MiB");
        assert_eq!(size_words(2 << 30), "2 GiB");
        assert_eq!(size_words(4096), "4 KiB");
        assert_eq!(size_words(8), "8 B");
    }

    #[test]
    fn round_trip() {
        for s in ["4KiB", "64KiB", "1MiB", "256MiB", "1GiB", "1000B"] {
            assert_eq!(format_size(parse_size(s).unwrap()), s);
        }
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
    }

    #[test]
    fn bad_sizes() {
        for s in ["", "KiB", "12XB", "0", "99999999999999GiB", "-4KiB"] {
            assert!(parse_size(s).is_err(), "{s} should be refused");
        }
    }
}

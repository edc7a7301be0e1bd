//! The trace's text fitted to a width: tables through comfy-table's dynamic arrangement (a column too wide
//! for the rest wraps), sentences through textwrap. The width is the terminal's, 120 columns where the output
//! is not a terminal, or none at all (`--wide`); the binary decides it, the views take it.

use comfy_table::{presets::UTF8_BORDERS_ONLY, ContentArrangement, Table};

/// The width where the output is not a terminal (a file, a pipe, a CI log) and `COLUMNS` says nothing.
pub const NOT_A_TERMINAL: u16 = 120;

/// The longest a name (an API function, a kernel) is shown in a table or a sentence before it is cut with
/// `…`: `cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags` and a 110-character GEMM kernel would
/// otherwise widen every row. `--explain` and the JSON report keep them whole.
pub const NAME: usize = 32;

/// The terminal's width where stdout is a terminal (comfy-table asks it), else `None`.
pub fn terminal_width() -> Option<u16> {
    Table::new().width()
}

/// The longest a name is shown at `width`: [`NAME`], or whole with no width (`--wide`).
pub fn name_limit(width: Option<u16>) -> usize {
    if width.is_some() {
        NAME
    } else {
        usize::MAX
    }
}

/// A table with the trace's look, fitted to `width` columns (`None`: as wide as its content).
pub fn table(width: Option<u16>) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    match width {
        Some(w) => {
            t.set_content_arrangement(ContentArrangement::Dynamic);
            t.set_width(w);
        }
        // Laid out for its content alone, whatever the terminal is.
        None => {
            t.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    t
}

/// `text` wrapped to `width` (`None`: one line), its first line after `first`, the others after `rest`; it
/// ends with a newline.
pub fn wrap(text: &str, width: Option<u16>, first: &str, rest: &str) -> String {
    let Some(w) = width else {
        return format!("{first}{text}\n");
    };
    // Hyphenated words stay whole: a class reads `waited-for-stream`, never `waited-for-` and `stream`.
    let options = textwrap::Options::new(usize::from(w))
        .initial_indent(first)
        .subsequent_indent(rest)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    let mut out = textwrap::fill(text, options);
    out.push('\n');
    out
}

/// Each line of `text` wrapped to `width`, its continuation lines indented four more than it.
pub fn wrap_lines(text: &str, width: Option<u16>) -> String {
    text.lines()
        .map(|line| {
            let indent = &line[..line.len() - line.trim_start().len()];
            wrap(line.trim_start(), width, indent, &format!("{indent}    "))
        })
        .collect()
}

/// The width of the widest line of `text`, in characters.
pub fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_table_and_a_long_sentence_fit_the_width() {
        let long = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize256x64x8_stage3_warpsize2x2x1_ffma_aligna4_aligncb4";
        let mut t = table(Some(60));
        t.set_header(["held", "what held it"]);
        t.add_row(["24.8 ms", &format!("waited for its stream: the kernel {long} ahead in its stream")]);
        let text = t.to_string();
        assert!(widest(&text) <= 60, "{text}");
        let mut wide = table(None);
        wide.set_header(["held", "what held it"]);
        wide.add_row(["24.8 ms", long]);
        assert!(widest(&wide.to_string()) > 100);
        let s = wrap(&format!("a sentence with {long} in it, and more words after it"), Some(40), "1. ", "   ");
        assert!(widest(&s) <= 40, "{s}");
        assert!(s.starts_with("1. ") && s.lines().skip(1).all(|l| l.starts_with("   ")), "{s}");
    }
}

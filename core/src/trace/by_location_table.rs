//! The by-location table (`by_location`) for the terminal: start-up and what is paid once in a line each,
//! then the places with the most time held, fitted to the width.

use super::by_location::{cause_words, class_words, ByLocation};
use super::layout;
use super::words::{duration, shorten_words};
use comfy_table::{Cell, CellAlignment};

/// The table for the terminal, at most `top` places.
pub fn table(t: &ByLocation, min_held_ns: i64, top: usize, width: Option<u16>) -> String {
    let mut out = String::new();
    if let (Some(s), true) = (&t.startup, t.after_startup) {
        out.push_str(&layout::wrap(
            &format!(
                "start-up: {} ({}), left out of every table (--after-startup)",
                duration(s.total_ns),
                calls_word(s.calls)
            ),
            width,
            "",
            "",
        ));
    }
    if let Some(o) = &t.paid_once {
        out.push_str(&layout::wrap(
            &format!(
                "paid once: {} ({}: {}), the warm-up findings above, not in the rows",
                duration(o.total_ns),
                calls_word(o.calls),
                o.what
            ),
            width,
            "",
            "  ",
        ));
    }
    if t.rows.is_empty() {
        out.push_str(&layout::wrap(
            &format!("No call of the steady state held its thread longer than {}.", duration(min_held_ns)),
            width,
            "",
            "",
        ));
        return out;
    }
    let mut table = layout::table(width);
    table.set_header(["where", "calls", "total held", "median", "class", "largest cause"]);
    // The place is what a reader looks for: it keeps a third of the width before the others wrap.
    if let (Some(w), Some(column)) = (width, table.column_mut(0)) {
        column.set_constraint(comfy_table::ColumnConstraint::LowerBoundary(comfy_table::Width::Fixed(w / 3)));
    }
    for r in t.rows.iter().take(top) {
        let inferred = match r.inferred_calls {
            0 => String::new(),
            n => format!(" ({n} placed as the same call)"),
        };
        // A place's words fit its column, so that a source place is cut in its path's middle rather than wrapped
        // across the cell's lines.
        let limit = width.map_or(usize::MAX, |w| layout::NAME.min(usize::from(w / 3).saturating_sub(2)));
        table.add_row([
            Cell::new(shorten_words(&r.place.shown(), limit) + &inferred),
            Cell::new(r.calls).set_alignment(CellAlignment::Right),
            Cell::new(duration(r.total_ns)).set_alignment(CellAlignment::Right),
            Cell::new(duration(r.median_ns)).set_alignment(CellAlignment::Right),
            Cell::new(class_words(r)),
            Cell::new(shorten_words(&cause_words(r), layout::name_limit(width))),
        ]);
    }
    let shown = if t.rows.len() > top { format!(" (the {top} with most time shown)") } else { String::new() };
    out.push_str(&layout::wrap(
        &format!(
            "{} place{} in the program held their thread longer than {}{shown}:",
            t.rows.len(),
            if t.rows.len() == 1 { "" } else { "s" },
            duration(min_held_ns)
        ),
        width,
        "",
        "",
    ));
    out.push_str(&format!("{table}\n"));
    out
}

/// "1 call", "3 calls".
fn calls_word(n: usize) -> String {
    format!("{n} call{}", if n == 1 { "" } else { "s" })
}

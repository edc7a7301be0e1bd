//! The findings in the terminal (`findings`): the steady state's, then what is paid once, each with where,
//! how many calls and how long, what held them, the remedy and the `--explain` id of the longest.

use super::findings::Finding;
use super::words::duration;

/// The findings for the terminal, `width` columns wide (`None`: unwrapped), at most `top` of each part.
pub fn text(findings: &[Finding], width: Option<u16>, top: usize) -> String {
    use super::layout::{name_limit, wrap};
    use super::words::shorten_words;
    let mut out = String::new();
    let (steady, warm): (Vec<&Finding>, Vec<&Finding>) = findings.iter().partition(|f| !f.warm_up);
    for (part, list) in [("in the steady state", steady), ("in warm-up (paid once)", warm)] {
        if list.is_empty() {
            continue;
        }
        let shown = if list.len() > top { format!(" (the {top} with most time shown)") } else { String::new() };
        out.push_str(&wrap(
            &format!(
                "{} finding{} {part}, most time first{shown}:",
                list.len(),
                if list.len() == 1 { "" } else { "s" }
            ),
            width,
            "",
            "  ",
        ));
        for (n, f) in list.iter().take(top).enumerate() {
            let classes = match f.classes.as_slice() {
                [one] => one.class.clone(),
                many => many.iter().map(|c| format!("{} ×{}", c.class, c.calls)).collect::<Vec<_>>().join(", "),
            };
            let head = format!(
                "{} {}: {} call{}{}, median {}, total {} ({classes})",
                f.title,
                super::location::at(&f.where_words),
                f.calls,
                if f.calls == 1 { "" } else { "s" },
                super::findings::inferred_words(f),
                duration(f.median_ns),
                duration(f.total_ns)
            );
            let number = format!("{}. ", n + 1);
            let indent = " ".repeat(number.len());
            out.push_str(&wrap(&shorten_words(&head, name_limit(width)), width, &number, &indent));
            out.push_str(&wrap(
                &shorten_words(&format!("What held them: {}", f.what), name_limit(width)),
                width,
                &indent,
                &indent,
            ));
            out.push_str(&wrap(
                &shorten_words(&format!("Fix: {}", f.remedy.words), name_limit(width)),
                width,
                &indent,
                &indent,
            ));
            out.push_str(&wrap(&format!("--explain {}", f.explain), width, &indent, &indent));
        }
        out.push('\n');
    }
    out
}

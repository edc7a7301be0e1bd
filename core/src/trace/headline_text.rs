//! The headline (`headline`) for the terminal: the verdict and its fix, `--skip-first`'s steps, and each
//! thread's account (its warm-up and its steady state), wrapped to the width.

use super::headline::{Headline, Part, ThreadAccount};
use super::layout::wrap;
use super::words::{duration, percent};

/// How many threads the text shows, the most time in CUDA calls first (the JSON report has them all).
const THREADS_SHOWN: usize = 4;

/// The headline for the terminal, `width` columns wide (`None`: unwrapped).
pub fn text(h: &Headline, width: Option<u16>) -> String {
    let mut out = wrap(&format!("Verdict: {}.", h.verdict.words), width, "", "  ");
    if !h.verdict.remedy.words.is_empty() {
        out.push_str(&wrap(&format!("Fix: {}", h.verdict.remedy.words), width, "  ", "  "));
    }
    if let Some(s) = &h.skipped_steps {
        let words = match s.until_ns {
            Some(_) => format!(
                "--skip-first {}: the first {} (a step ends at each synchronization of thread {}) count{} as warm-up.",
                s.steps,
                if s.steps == 1 { "step".to_owned() } else { format!("{} steps", s.steps) },
                s.thread.map_or("?".into(), |t| t.to_string()),
                if s.steps == 1 { "s" } else { "" }
            ),
            None => format!(
                "--skip-first {}: the program made fewer synchronizations than that: all of it counts as warm-up.",
                s.steps
            ),
        };
        out.push_str(&wrap(&words, width, "", "  "));
    }
    out.push('\n');
    let top = h.threads.iter().map(|t| t.in_calls_ns).max().unwrap_or(0);
    let shown: Vec<&ThreadAccount> =
        h.threads.iter().filter(|t| t.in_calls_ns * 100 >= top).take(THREADS_SHOWN).collect();
    for t in &shown {
        let helper = match (t.helper, t.helper_of.and_then(|of| h.threads.iter().find(|x| x.thread == of))) {
            (true, Some(of)) => {
                let the = if of.words.starts_with("main thread") { "the " } else { "" };
                format!(", a helper of {the}{} that runs no Python", of.words)
            }
            (true, None) => ", a helper thread that runs no Python".into(),
            _ => String::new(),
        };
        out.push_str(&wrap(
            &format!(
                "{}{helper}: {} from its first CUDA call to its last; {} of it inside {} call{}.",
                t.words,
                duration(t.wall_ns),
                duration(t.in_calls_ns),
                t.calls,
                if t.calls == 1 { "" } else { "s" }
            ),
            width,
            "",
            "  ",
        ));
        let first = t.first_use.counts();
        if t.warm_up.wall_ns > 0 || t.warm_up.calls > 0 {
            let what =
                [first.words(), if h.skipped_steps.is_some() { "the steps skipped".into() } else { String::new() }]
                    .into_iter()
                    .filter(|w| !w.is_empty())
                    .collect::<Vec<_>>()
                    .join("; ");
            out.push_str(&wrap(
                &format!("warm-up: {} ({}), {}", duration(t.warm_up.wall_ns), what, part_words(&t.warm_up)),
                width,
                "  ",
                "    ",
            ));
        }
        out.push_str(&wrap(
            &format!("steady state: {}, {}", duration(t.steady.wall_ns), part_words(&t.steady)),
            width,
            "  ",
            "    ",
        ));
    }
    let more = h.threads.len() - shown.len();
    if more > 0 {
        out.push_str(&wrap(
            &format!(
                "{more} more thread{} with less time in CUDA calls (--format json lists every thread).",
                if more == 1 { "" } else { "s" }
            ),
            width,
            "",
            "  ",
        ));
    }
    out
}

/// "held by CUDA 281.3 ms (17%: its stream 171.0 ms, ...), calls that returned at once 12.0 ms (<1%),
/// outside CUDA calls 1.28 s (79%)".
fn part_words(p: &Part) -> String {
    let causes: Vec<String> = p.held_by.iter().map(|c| format!("{} {}", c.words, duration(c.ns))).collect();
    let causes = if causes.is_empty() { String::new() } else { format!(": {}", causes.join(", ")) };
    let mut parts = vec![format!("held by CUDA {} ({}{causes})", duration(p.held_ns), percent(p.held_ns, p.wall_ns))];
    // The parts that are nothing are left out.
    if p.at_once_ns > 0 {
        parts.push(format!(
            "inside calls that returned at once {} ({})",
            duration(p.at_once_ns),
            percent(p.at_once_ns, p.wall_ns)
        ));
    }
    if p.outside_ns > 0 {
        let helpers = if p.helpers_ns > 0 {
            let causes: Vec<String> =
                p.waiting_for_helpers.iter().map(|c| format!("{} {}", c.words, duration(c.ns))).collect();
            format!(
                ", of it waiting for its helper threads held by CUDA {} ({}: {})",
                duration(p.helpers_ns),
                percent(p.helpers_ns, p.wall_ns),
                causes.join(", ")
            )
        } else {
            String::new()
        };
        parts.push(format!(
            "outside CUDA calls {} ({}){helpers}",
            duration(p.outside_ns),
            percent(p.outside_ns, p.wall_ns)
        ));
    }
    parts.join("; ")
}

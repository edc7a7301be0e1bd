//! `async-lab stability RUN...`: did each experiment fall in the same class in every run? Runs of one preset
//! from one commit, replayed side by side: the experiments whose class changed, each run's class with how
//! many repetitions agreed, and what left repetitions undecided.

use crate::record::Recording;
use crate::report::{self, CaseResult};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One experiment across the runs.
pub struct Row {
    pub id: String,
    /// Per run: the class (with its agreement) or `None` where the run lacks the experiment or classified
    /// nothing (an error, not run).
    pub runs: Vec<Option<(String, f64)>>,
    /// Per run: what held the thread in its median repetition ("20.0 ms for its stream · own work 3%").
    pub held: Vec<String>,
    /// Each reason a repetition was undecided, in any run.
    pub unresolved: Vec<String>,
}

impl Row {
    /// Whether every run that classified the experiment gave it the same class.
    pub fn stable(&self) -> bool {
        let mut classes = self.runs.iter().flatten().map(|(c, _)| c);
        match classes.next() {
            Some(first) => classes.all(|c| c == first),
            None => true,
        }
    }

    /// Whether at least two runs classified the experiment (only then does "stable" say anything).
    pub fn compared(&self) -> bool {
        self.runs.iter().flatten().count() >= 2
    }
}

/// The experiments of `runs`, in the first run's order (then any the others add).
pub fn rows(runs: &[Recording]) -> Vec<Row> {
    let reports: Vec<Vec<CaseResult>> = runs.iter().map(|r| report::build(r).results).collect();
    let mut order: Vec<String> = Vec::new();
    let mut by_id: BTreeMap<String, Row> = BTreeMap::new();
    for (k, results) in reports.iter().enumerate() {
        for r in results {
            let row = by_id.entry(r.id.clone()).or_insert_with(|| {
                order.push(r.id.clone());
                Row {
                    id: r.id.clone(),
                    runs: vec![None; runs.len()],
                    held: vec![String::new(); runs.len()],
                    unresolved: Vec::new(),
                }
            });
            if r.error.is_none() && r.not_run.is_none() {
                row.runs[k] = r.class.map(|c| (c.to_string(), r.agreement));
                row.held[k] = r.held_for.clone();
            }
            for u in &r.unresolved {
                if !row.unresolved.contains(u) {
                    row.unresolved.push(u.clone());
                }
            }
        }
    }
    order.into_iter().filter_map(|id| by_id.remove(&id)).collect()
}

/// Column names for runs: what tells their names apart (`...-run1`, `...-run2` give `run1`, `run2`), or the
/// whole names where nothing is shared.
pub fn short_names(names: &[String]) -> Vec<String> {
    let Some(first) = names.first() else { return Vec::new() };
    let shared = names.iter().skip(1).map(|n| common_prefix(first, n)).min().unwrap_or(0);
    // Back to the start of a word, so `run1` stays whole rather than becoming `1`.
    let cut = first[..shared].rfind(['-', '_', '.']).map_or(0, |i| i + 1);
    names.iter().map(|n| if n.len() > cut { n[cut..].to_string() } else { n.clone() }).collect()
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices().zip(b.chars()).take_while(|((_, x), y)| x == y).last().map_or(0, |((i, c), _)| i + c.len_utf8())
}

/// A markdown summary: how many experiments kept their class, and a table of those that did not.
pub fn markdown(rows: &[Row], names: &[String]) -> String {
    let compared: Vec<&Row> = rows.iter().filter(|r| r.compared()).collect();
    let changed: Vec<&Row> = compared.iter().copied().filter(|r| !r.stable()).collect();
    let mut t = format!(
        "{} of {} experiments classified in two runs or more kept their class across {} runs.\n",
        compared.len() - changed.len(),
        compared.len(),
        names.len()
    );
    if changed.is_empty() {
        return t;
    }
    let _ = write!(t, "\n| experiment |");
    for n in names {
        let _ = write!(t, " {n} |");
    }
    let _ = write!(t, " undecided repetitions |\n|---|");
    for _ in names {
        t.push_str("---|");
    }
    t.push_str("---|\n");
    for r in changed {
        let _ = write!(t, "| `{}` |", r.id);
        for (run, held) in r.runs.iter().zip(&r.held) {
            match run {
                Some((c, a)) if held.is_empty() => {
                    let _ = write!(t, " {c} ({:.0}%) |", a * 100.0);
                }
                Some((c, a)) => {
                    let _ = write!(t, " {c} ({:.0}%) · {held} |", a * 100.0);
                }
                None => t.push_str(" - |"),
            }
        }
        let _ = writeln!(t, " {} |", if r.unresolved.is_empty() { "-".to_string() } else { r.unresolved.join("; ") });
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(classes: &[Option<&str>]) -> Row {
        Row {
            id: "x".into(),
            runs: classes.iter().map(|c| c.map(|c| (c.to_string(), 1.0))).collect(),
            held: vec![String::new(); classes.len()],
            unresolved: Vec::new(),
        }
    }

    #[test]
    fn a_row_is_stable_when_every_classifying_run_agrees() {
        assert!(row(&[Some("async"), Some("async"), None]).stable());
        assert!(!row(&[Some("async"), Some("blocking"), Some("async")]).stable());
        assert!(!row(&[Some("async"), None]).compared());
        assert!(row(&[Some("async"), Some("async")]).compared());
    }

    #[test]
    fn run_names_shrink_to_what_differs() {
        let names = ["rec-h200-run1".to_string(), "rec-h200-run2".to_string()];
        assert_eq!(short_names(&names), ["run1", "run2"]);
        assert_eq!(short_names(&["a".to_string(), "b".to_string()]), ["a", "b"]);
        assert_eq!(short_names(&["same".to_string(), "same".to_string()]), ["same", "same"]);
    }

    #[test]
    fn the_table_lists_only_what_changed() {
        let rows = vec![row(&[Some("async"), Some("async")]), Row { id: "y".into(), ..row(&[Some("a"), Some("b")]) }];
        let md = markdown(&rows, &["run1".into(), "run2".into()]);
        assert!(md.starts_with("1 of 2 experiments"), "{md}");
        assert!(md.contains("| `y` | a (100%) | b (100%) | - |"), "{md}");
        assert!(!md.contains("| `x` |"), "{md}");
    }
}

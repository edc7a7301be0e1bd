//! `cargo xtask class-changes --since REV`: every committed recording's classes at `REV` beside today's, from
//! the replay snapshots (`tests/tests/snapshots/recordings__replay@*.snap`), as a Markdown table of what
//! changed and why (today's "held for" words say what held the thread; a renamed class says so).
//!
//! The snapshots are YAML that this project writes in one fixed layout (`tests/tests/recordings.rs`); the few
//! lines needed are read by hand rather than adding a YAML parser to xtask's dependencies.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Context;
use xshell::{cmd, Shell};

const SNAPSHOTS: &str = "tests/tests/snapshots";
const PREFIX: &str = "recordings__replay@";

/// One experiment of one snapshot: class, and what held the thread (empty in older snapshots).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Decided {
    pub(crate) class: String,
    pub(crate) held_for: String,
}

/// The experiments of a snapshot's text, by id.
pub(crate) fn parse(text: &str) -> BTreeMap<String, Decided> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Decided)> = None;
    for line in text.lines() {
        if let Some(id) = line.strip_prefix("  - id: ") {
            if let Some((id, d)) = current.take() {
                out.insert(id, d);
            }
            current = Some((unquote(id), Decided::default()));
        } else if let Some((_, d)) = current.as_mut() {
            if let Some(c) = line.strip_prefix("    class: ") {
                d.class = unquote(c);
            } else if let Some(h) = line.strip_prefix("    held_for: ") {
                d.held_for = unquote(h);
            } else if !line.starts_with("    ") {
                if let Some((id, d)) = current.take() {
                    out.insert(id, d);
                }
            }
        }
    }
    if let Some((id, d)) = current {
        out.insert(id, d);
    }
    out
}

fn unquote(s: &str) -> String {
    s.trim().trim_matches('"').to_owned()
}

/// Why a class changed, in a few words.
pub(crate) fn reason(old: &str, new: &Decided) -> String {
    let short_own = new.held_for.contains("below resolution");
    let h = &new.held_for;
    match (old, new.class.as_str()) {
        ("indeterminate", _) => format!("the readings now decide it ({h})"),
        ("waited-then-staged", "waited-for-stream") => "renamed: the class names what held the thread".into(),
        (_, "blocking") => format!("held through its own work ({h})"),
        (_, "waited-for-stream") if short_own => {
            format!("waited for its stream; its own work too short for the readings to say more ({h})")
        }
        (_, "waited-for-stream") => format!("waited for its stream, with no work of its own ({h})"),
        (_, "waited-for-thread") => format!("held by another thread's call ({h})"),
        (_, "staged") => format!("the staging probe, now also with nothing ahead, found the data copied ({h})"),
        ("blocking", "async") if short_own => {
            format!("its own work too short for the readings to say it held the thread ({h})")
        }
        (_, "async") => format!("the readings do not place the blocker's end inside the call ({h})"),
        _ => h.clone(),
    }
}

pub(crate) fn run(sh: &Shell, since: &str) -> anyhow::Result<()> {
    let files = cmd!(sh, "git ls-files {SNAPSHOTS}").read().context("listing the snapshots")?;
    let mut table = String::from("| recording | experiment | before | now | why |\n|---|---|---|---|---|\n");
    let (mut changed, mut compared) = (0, 0);
    for path in files.lines().filter(|p| p.contains(PREFIX)) {
        let name = path.rsplit_once(PREFIX).map_or(path, |(_, n)| n).trim_end_matches(".snap");
        let spec = format!("{since}:{path}");
        let Ok(before) = cmd!(sh, "git show {spec}").quiet().ignore_stderr().read() else { continue };
        let now = sh.read_file(path).with_context(|| format!("reading {path}"))?;
        let (before, now) = (parse(&before), parse(&now));
        for (id, n) in &now {
            let Some(b) = before.get(id) else { continue };
            compared += 1;
            if b.class != n.class {
                changed += 1;
                let _ = writeln!(table, "| `{name}` | `{id}` | {} | {} | {} |", b.class, n.class, reason(&b.class, n));
            }
        }
    }
    println!(
        "{changed} of {compared} classes of the recordings replayed at {since} and now differ.\n\n{}",
        if changed > 0 { table } else { String::new() }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNAP: &str = "---\nsource: x\n---\ngpu: H200\nresults:\n  - id: a/b\n    rule: A2\n    class: waited-then-staged\n    verdict: matches\n  - id: \"c\"\n    class: blocking\n    held_for: own work 99%\nsummary:\n  matches: 1\n";

    #[test]
    fn a_snapshot_gives_each_experiments_class_and_words() {
        let p = parse(SNAP);
        assert_eq!(p.len(), 2);
        assert_eq!(p["a/b"].class, "waited-then-staged");
        assert_eq!(p["c"], Decided { class: "blocking".into(), held_for: "own work 99%".into() });
    }

    #[test]
    fn reasons_name_the_rename_and_the_hold() {
        let d = |c: &str, h: &str| Decided { class: c.into(), held_for: h.into() };
        assert!(reason("waited-then-staged", &d("waited-for-stream", "")).starts_with("renamed"));
        assert!(reason("async", &d("blocking", "own work 99%")).contains("own work 99%"));
        assert!(reason("async", &d("waited-for-thread", "90 ms for another thread")).contains("another thread"));
    }
}

//! The example outputs in README.md and docs/*.md are what the replay of a committed trace prints today, so
//! they cannot drift: each example block follows a marker naming the command that makes it,
//!
//! ```text
//! <!-- example: COLUMNS=100 async-lab trace --replay recordings/traces/FILE.jsonl.gz --after-startup | sed -n 1,30p -->
//! ```
//!
//! (environment assignments first; a `*` in an argument stands for the rest of the one file name it matches,
//! so that a page need not name a commit; `2>&1` to take stderr too, after stdout; `| sed -n A,Bp`,
//! `| head -n N` or `| tail -n N` to show some of the lines), and this test runs it from the project's root and compares the block, line by line,
//! with trailing spaces cut. `UPDATE_EXAMPLES=1` writes the blocks anew instead.

use async_lab_tests::{bin_path, project_root};
use std::path::{Path, PathBuf};

const MARKER: &str = "<!-- example: ";

/// Which lines of the output an example shows.
#[derive(Clone, Copy)]
enum Lines {
    /// From the first to the second, 1-based, inclusive.
    Range(usize, usize),
    /// The last so many.
    Last(usize),
}

/// One marked example: its command and the block after it.
struct Example {
    /// The line of the marker (1-based), for messages.
    line: usize,
    env: Vec<(String, String)>,
    args: Vec<String>,
    stderr: bool,
    /// Which lines to show.
    lines: Option<Lines>,
    /// The block's text, and where it lies in the file (byte range of its content).
    block: String,
    at: std::ops::Range<usize>,
}

fn documents() -> Vec<PathBuf> {
    let root = project_root();
    let mut docs = vec![root.join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// The examples of one document; a marker without its block after it is an error.
fn examples(path: &Path, text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = text[from..].find(MARKER) {
        let start = from + k;
        let end = start + text[start..].find("-->").unwrap_or_else(|| panic!("{}: an unclosed marker", path.display()));
        let line = text[..start].lines().count() + 1;
        let command = text[start + MARKER.len()..end].trim();
        let after = end + "-->".len();
        let fence = "\n```text\n";
        assert!(
            text[after..].starts_with(fence),
            "{}:{line}: the marker must be followed by a ```text block",
            path.display()
        );
        let body = after + fence.len();
        let close =
            body + text[body..].find("```").unwrap_or_else(|| panic!("{}:{line}: an unclosed block", path.display()));
        let (command, lines) = match command.split_once('|') {
            Some((c, pipe)) => (c.trim(), Some(selection(pipe.trim(), path, line))),
            None => (command, None),
        };
        let (command, stderr) = match command.strip_suffix("2>&1") {
            Some(c) => (c.trim(), true),
            None => (command, false),
        };
        let mut words = command.split_whitespace().peekable();
        let mut env = Vec::new();
        while let Some((k, v)) = words
            .peek()
            .and_then(|w| w.split_once('='))
            .filter(|(k, _)| k.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        {
            env.push((k.to_owned(), v.to_owned()));
            words.next();
        }
        assert_eq!(words.next(), Some("async-lab"), "{}:{line}: an example runs async-lab", path.display());
        out.push(Example {
            line,
            env,
            args: words.map(|w| if w.contains('*') { matching(w, path, line) } else { w.to_owned() }).collect(),
            stderr,
            lines,
            block: text[body..close].to_owned(),
            at: body..close,
        });
        from = close;
    }
    out
}

/// The one file under the project's root that `pattern` (a path with one `*` in its file name) names.
fn matching(pattern: &str, path: &Path, line: usize) -> String {
    let (dir, name) = pattern.rsplit_once('/').unwrap_or((".", pattern));
    let (head, tail) = name.split_once('*').unwrap();
    let mut found: Vec<String> = std::fs::read_dir(project_root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(head) && n.ends_with(tail) && n.len() >= head.len() + tail.len())
        .collect();
    found.sort();
    assert_eq!(found.len(), 1, "{}:{line}: {pattern} matches {found:?}, not one file", path.display());
    format!("{dir}/{}", found[0])
}

/// `sed -n A,Bp`, `head -n N` or `tail -n N`.
fn selection(pipe: &str, path: &Path, line: usize) -> Lines {
    let words: Vec<&str> = pipe.split_whitespace().collect();
    match words.as_slice() {
        ["sed", "-n", range] => {
            let (a, b) = range.trim_end_matches('p').split_once(',').expect("sed -n A,Bp");
            Lines::Range(a.parse().unwrap(), b.parse().unwrap())
        }
        ["head", "-n", n] => Lines::Range(1, n.parse().unwrap()),
        ["tail", "-n", n] => Lines::Last(n.parse().unwrap()),
        _ => panic!("{}:{line}: `{pipe}` is not `sed -n A,Bp`, `head -n N` or `tail -n N`", path.display()),
    }
}

/// What the command prints, its lines selected and their trailing spaces cut.
fn printed(e: &Example) -> String {
    let mut cmd = std::process::Command::new(bin_path());
    cmd.current_dir(project_root())
        .args(&e.args)
        .env_remove("COLUMNS")
        .env("LD_LIBRARY_PATH", async_lab_driver::STUB_DIR);
    for (k, v) in &e.env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    if e.stderr {
        text.push_str(&String::from_utf8_lossy(&o.stderr));
    }
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let (a, b) = match e.lines {
        None => (1, lines.len()),
        Some(Lines::Range(a, b)) => (a, b),
        Some(Lines::Last(n)) => (lines.len().saturating_sub(n) + 1, lines.len()),
    };
    let mut out = lines[(a - 1).min(lines.len())..b.min(lines.len())].join("\n");
    out.push('\n');
    out
}

#[test]
fn the_documented_examples_are_what_the_replays_print() {
    let update = std::env::var_os("UPDATE_EXAMPLES").is_some();
    let mut count = 0;
    let mut stale: Vec<String> = Vec::new();
    for path in documents() {
        let mut text = std::fs::read_to_string(&path).unwrap();
        let found = examples(&path, &text);
        count += found.len();
        // From the last, so that the byte ranges before it stay where they are.
        for e in found.iter().rev() {
            let now = printed(e);
            let block: String = e.block.lines().map(str::trim_end).collect::<Vec<_>>().join("\n") + "\n";
            if block != now {
                if update {
                    text.replace_range(e.at.clone(), &now);
                } else {
                    stale.push(format!("{}:{}: async-lab {}", path.display(), e.line, e.args.join(" ")));
                }
            }
        }
        if update {
            std::fs::write(&path, &text).unwrap();
        }
    }
    assert!(count >= 4, "only {count} marked examples in README.md and docs/");
    assert!(
        stale.is_empty(),
        "these examples differ from what their replay prints (UPDATE_EXAMPLES=1 cargo test -p async-lab-tests \
         --test examples writes them anew; read the difference first):\n{}",
        stale.join("\n")
    );
}

/// The README's first screen says how to get async-lab and run it on a script, before any result.
#[test]
fn the_readme_begins_with_how_to_run_it_on_your_script() {
    let readme = std::fs::read_to_string(project_root().join("README.md")).unwrap();
    let first_screen: String = readme.lines().take(40).collect::<Vec<_>>().join("\n");
    for says in ["cargo xtask bundle", "target/bundle/run.sh trace -- python3 train.py", "CUPTI"] {
        assert!(first_screen.contains(says), "README's first 40 lines do not say {says:?}");
    }
}

/// docs/trace.md is a user's guide: under 3,000 words, with no commit hashes and no source paths (those are
/// for docs/trace-internals.md and docs/trace-validation.md).
#[test]
fn the_trace_guide_is_a_guide() {
    let text = std::fs::read_to_string(project_root().join("docs/trace.md")).unwrap();
    let words = text.split_whitespace().count();
    assert!(words < 3000, "docs/trace.md has {words} words");
    for word in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        let hex = word.len() >= 7 && word.chars().all(|c| c.is_ascii_hexdigit());
        let hash = hex && word.chars().any(|c| c.is_ascii_digit()) && word.chars().any(|c| c.is_ascii_alphabetic());
        assert!(!hash, "docs/trace.md names a commit: {word}");
    }
    for path in text.split(|c: char| c.is_whitespace() || c == '`' || c == '(' || c == ')') {
        let source = path.ends_with(".rs")
            || ["core/", "host/", "trace-inject/", "xtask/", "driver/", "tests/"].iter().any(|d| path.starts_with(d));
        assert!(!source, "docs/trace.md names a source file: {path}");
    }
}

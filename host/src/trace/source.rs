//! The text of the source lines held calls were made at, read from their files after the program ended and
//! written into the trace (`Line::Source`), so that a replay on another machine (CI's, which has no source
//! files) shows `value = loss.item()` beside `train.py:35`. One line per file and line a location is placed
//! at (`location::place_line`: the program's own Python line, else its own native source line), and per line a
//! Python thread was waiting at when a call of a thread that runs no Python returned (the location's `others`,
//! format 5, where `waiting::waited`), right after its process's header and setup lines. Files that cannot be read (gone, `<frozen ...>`, of another machine)
//! give no line.

use async_lab_core::trace::format::Line;
use async_lab_core::trace::location::place_line;
use async_lab_core::trace::waiting::waited;
use std::collections::{BTreeSet, HashMap};

/// The most characters of a line's text kept.
const MOST_CHARS: usize = 200;
/// Files larger than this are not read (a source file is far smaller).
const MOST_BYTES: u64 = 16 << 20;

/// The trace's text with the source lines of its locations added; its other lines as they were, byte for byte.
pub fn text(trace: &str) -> String {
    // Per process's section, the lines wanted.
    let mut wanted: Vec<BTreeSet<(String, u32)>> = Vec::new();
    for raw in trace.lines() {
        if raw.starts_with(r#"{"type":"header""#) {
            wanted.push(BTreeSet::new());
        } else if raw.starts_with(r#"{"type":"location""#) {
            let (Some(set), Ok(Line::Location { python, native, others, .. })) =
                (wanted.last_mut(), serde_json::from_str(raw))
            else {
                continue;
            };
            if let Some((file, line)) = place_line(&python, &native) {
                set.insert((file.to_owned(), line));
            }
            for o in others.iter().filter(|o| waited(o)) {
                if let Some((file, line)) = place_line(&o.python, &[]) {
                    set.insert((file.to_owned(), line));
                }
            }
        }
    }
    let mut files: HashMap<String, Option<Vec<String>>> = HashMap::new();
    let mut out = String::with_capacity(trace.len());
    let mut section = 0;
    let mut pending: Option<String> = None;
    for raw in trace.split_inclusive('\n') {
        let is_setup = raw.starts_with(r#"{"type":"setup""#);
        // The sources go after the header, and after the setup line where one follows it.
        if let Some(lines) = pending.take() {
            if is_setup {
                out.push_str(raw);
                out.push_str(&lines);
                continue;
            }
            out.push_str(&lines);
        }
        out.push_str(raw);
        if raw.starts_with(r#"{"type":"header""#) && raw.ends_with('\n') {
            let lines = wanted.get(section).map(|w| source_lines(w, &mut files)).unwrap_or_default();
            section += 1;
            pending = Some(lines);
        }
    }
    if let Some(lines) = pending {
        out.push_str(&lines);
    }
    out
}

/// The `Line::Source` lines of `wanted`, as text.
fn source_lines(wanted: &BTreeSet<(String, u32)>, files: &mut HashMap<String, Option<Vec<String>>>) -> String {
    let mut out = String::new();
    for (file, line) in wanted {
        let lines = files.entry(file.clone()).or_insert_with(|| read(file));
        let Some(text) = lines.as_ref().and_then(|l| l.get((*line as usize).checked_sub(1)?)) else { continue };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let text: String = text.chars().take(MOST_CHARS).collect();
        let source = Line::Source { file: file.clone(), line: *line, text };
        if let Ok(s) = serde_json::to_string(&source) {
            out.push_str(&s);
            out.push('\n');
        }
    }
    out
}

/// A file's lines, where it is a readable file of reasonable size (a relative path from here: the program
/// ran in this folder).
fn read(file: &str) -> Option<Vec<String>> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > MOST_BYTES {
        return None;
    }
    let bytes = std::fs::read(file).ok()?;
    Some(String::from_utf8_lossy(&bytes).lines().map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_lab_core::trace::format::{header, ClockPair, Gil, NativeFrame, PyFrame, ThreadFrames, Trace};

    fn json(l: &Line) -> String {
        serde_json::to_string(l).unwrap() + "\n"
    }

    #[test]
    fn each_located_line_of_the_programs_own_gets_its_text_after_the_setup_line() {
        let dir = std::env::temp_dir().join(format!("async-lab-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("train.py");
        std::fs::write(&script, "import torch\n\nfor i in range(3):\n    value = loss.item()\n").unwrap();
        let cu = dir.join("main.cu");
        std::fs::write(&cu, "int main() {\n  cudaFree(p);\n}\n").unwrap();
        let script = script.display().to_string();
        let py = |file: &str, line| PyFrame { file: file.into(), line, function: "f".into() };
        let python = Line::Location {
            tid: 1,
            corr: 7,
            gil: Gil::NotHeld,
            python: vec![py("/venv/lib/python3.12/site-packages/torch/_tensor.py", 10), py(&script, 4)],
            native: vec![],
            took_ns: None,
            others: Vec::new(),
        };
        let native = Line::Location {
            tid: 1,
            corr: 8,
            gil: Gil::NoPython,
            python: vec![],
            native: vec![NativeFrame {
                module: "/home/me/app".into(),
                offset: 16,
                function: Some("main".into()),
                file: Some(cu.display().to_string()),
                line: Some(2),
            }],
            took_ns: None,
            // A Python thread waiting at the script's line 3, and one idle in `threading`.
            others: vec![
                ThreadFrames { tid: 2, gil: false, python: vec![py(&script, 3)] },
                ThreadFrames { tid: 3, gil: false, python: vec![py("/usr/lib/python3.12/threading.py", 5)] },
            ],
        };
        let gone = Line::Location {
            tid: 1,
            corr: 9,
            gil: Gil::NotHeld,
            python: vec![py("<frozen runpy>", 3)],
            native: vec![],
            took_ns: None,
            others: Vec::new(),
        };
        let setup = Line::Setup {
            clock: ClockPair { cupti_ns: 1, monotonic_ns: 2 },
            api_calls: async_lab_core::trace::format::ApiCalls::MayHold,
            locate_over_ns: 1000,
            python: None,
            several_subscribers: None,
        };
        let before = [json(&header(5, vec![], None)), json(&setup), json(&python), json(&native), json(&gone)].concat()
            + "{\"type\":\"end\",\"t\":3}";
        let after = text(&before);
        let lines: Vec<&str> = after.lines().collect();
        assert_eq!(lines[..2], before.lines().collect::<Vec<_>>()[..2]);
        let src = |file: &str, line, text: &str| {
            serde_json::to_string(&Line::Source { file: file.into(), line, text: text.into() }).unwrap()
        };
        let mut sources = [
            src(&script, 3, "for i in range(3):"),
            src(&script, 4, "value = loss.item()"),
            src(&cu.display().to_string(), 2, "cudaFree(p);"),
        ];
        sources.sort();
        assert_eq!(lines[2..5], sources.iter().map(String::as_str).collect::<Vec<_>>());
        // The rest as it was, the last line's missing newline too.
        assert!(after.ends_with(&before[before.find("{\"type\":\"location\"").unwrap()..]));
        // It reads as a trace: the end line without its newline was cut, as before.
        let t = Trace::parse(&after).unwrap();
        assert!(t.partial());
        assert_eq!(t.processes[0].lines.iter().filter(|l| matches!(l, Line::Source { .. })).count(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

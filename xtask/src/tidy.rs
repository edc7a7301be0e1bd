//! Hygiene tests: plain `cargo test` catches drift between xtask and the files it depends on.

use std::fs;
use std::path::{Path, PathBuf};

use crate::bundle::RUN_SH;
use crate::project_root;
use async_lab_ptx::KERNELS;

/// The one kernel list (`ptx-abi/src/kernels.rs`) names the kernels of the kernels' source, in its order.
#[test]
fn the_kernel_list_matches_the_kernels_source() {
    let lib = fs::read_to_string(project_root().join("gpu-kernels/kernels/src/lib.rs")).unwrap();
    let kernels: Vec<&str> = lib
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub unsafe extern \"ptx-kernel\" fn "))
        .map(|rest| rest.split('(').next().unwrap().trim())
        .collect();
    let listed: Vec<&str> = KERNELS.iter().map(|k| k.name).collect();
    assert_eq!(kernels, listed, "the kernels in gpu-kernels/kernels/src/lib.rs and ptx-abi/src/kernels.rs differ");
}

#[test]
fn run_sh_is_valid_and_names_the_bundled_files() {
    assert!(RUN_SH.starts_with("#!/bin/sh\n"));
    for name in ["\"$here/async-lab\"", "\"$here/async_lab_kernels.ptx\"", "$here/no-driver"] {
        assert!(RUN_SH.contains(name), "run.sh lacks {name}");
    }
    let status = std::process::Command::new("sh").args(["-n", "-c", RUN_SH]).status().expect("running `sh -n`");
    assert!(status.success(), "run.sh has a syntax error");
}

#[test]
fn every_unsafe_block_has_a_safety_comment() {
    let needle = concat!("unsafe", " {");
    let mut missing = Vec::new();
    // Every crate of both workspaces (clippy's `undocumented_unsafe_blocks` covers the stable one too; the
    // kernels are built on a nightly that clippy does not run on).
    for dir in [
        "core",
        "driver",
        "ptx-abi",
        "host",
        "trace-format",
        "trace-analysis",
        "trace-inject",
        "gpu-kernels",
        "xtask",
        "tests",
    ] {
        for file in rust_files(&project_root().join(dir)) {
            let text = fs::read_to_string(&file).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                if line.trim_start().starts_with("//") || !line.contains(needle) {
                    continue;
                }
                // The comment block right above the line must contain `SAFETY:`.
                let justified = lines[..i]
                    .iter()
                    .rev()
                    .take_while(|line| line.trim_start().starts_with("//"))
                    .any(|line| line.contains("// SAFETY:"));
                if !justified {
                    let file = file.strip_prefix(project_root()).unwrap_or(&file);
                    missing.push(format!("{}:{}", file.display(), i + 1));
                }
            }
        }
    }
    assert!(missing.is_empty(), "`unsafe` blocks without a `// SAFETY:` comment above them:\n{}", missing.join("\n"));
}

/// The crates that promise no `unsafe` at all keep the attribute that makes the compiler hold them to it: the
/// core, the kernel list, the trace's format and its analysis (the last two loaded into every traced program).
#[test]
fn the_crates_without_unsafe_code_forbid_it() {
    for lib in ["core/src/lib.rs", "ptx-abi/src/lib.rs", "trace-format/src/lib.rs", "trace-analysis/src/lib.rs"] {
        let text = fs::read_to_string(project_root().join(lib)).unwrap();
        assert!(text.lines().any(|l| l.trim() == "#![forbid(unsafe_code)]"), "{lib} lacks #![forbid(unsafe_code)]");
    }
}

/// The experiments reach the GPU through the driver crate's named functions (`docs/crates.md`, "Where `unsafe`
/// may be"): no raw declaration of `sys` called from `host/`, no raw-call macro.
#[test]
fn the_host_crate_calls_the_driver_only_through_named_functions() {
    let mut raw = Vec::new();
    for file in rust_files(&project_root().join("host/src")) {
        let text = fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let raw_call = ["sys::cu", "drv!(", "rt!("].iter().any(|needle| {
                code.match_indices(needle).any(|(at, _)| {
                    // A whole word: `assert!(` is not `rt!(`.
                    let starts_word = !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
                    // `sys::cuXxx(` calls a raw function; `sys::CUstream`, `sys::cudaStream_t` only name types.
                    let rest = &code[at + needle.len()..];
                    let name_end = rest.find(|c: char| !c.is_alphanumeric() && c != '_').unwrap_or(rest.len());
                    starts_word && (!needle.starts_with("sys::") || rest[name_end..].starts_with('('))
                })
            });
            if raw_call {
                let file = file.strip_prefix(project_root()).unwrap_or(&file);
                raw.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        raw.is_empty(),
        "raw driver or runtime calls in host/ (add a named function to the driver crate, see docs/crates.md):\n{}",
        raw.join("\n")
    );
}

/// What a CUDA function does is decided in one table (`trace-format/src/functions.rs`): no line of a crate's
/// code (the tests' and xtask's own aside, which check words printed) nor of the Python package tests a
/// function's name on its own (`function_names`).
#[test]
fn no_name_of_a_cuda_function_is_tested_outside_the_function_table() {
    let root = project_root();
    let table = root.join("trace-format/src/functions.rs");
    let mut found = Vec::new();
    for src in workspace_sources().iter().filter(|s| !s.starts_with("tests/") && !s.starts_with("xtask/")) {
        for path in rust_files(&root.join(src)).into_iter().filter(|p| *p != table) {
            let text = fs::read_to_string(&path).unwrap();
            for (n, line) in crate::function_names::name_tests(&text, false) {
                found.push(format!("{}:{n}: {line}", path.strip_prefix(&root).unwrap().display()));
            }
        }
    }
    let package = root.join("python/async_lab");
    let mut python: Vec<PathBuf> = fs::read_dir(&package)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    python.sort();
    assert!(!python.is_empty(), "{} holds no Python file", package.display());
    for path in python {
        let text = fs::read_to_string(&path).unwrap();
        for (n, line) in crate::function_names::name_tests(&text, true) {
            found.push(format!("{}:{n}: {line}", path.strip_prefix(&root).unwrap().display()));
        }
    }
    assert!(
        found.is_empty(),
        "these lines test a CUDA function's name: ask the function table (trace-format/src/functions.rs) \
         instead, or (Python) take the words from the core's report:\n{}",
        found.join("\n")
    );
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|name| name != "target") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The `src/` directory of every crate of the workspace, relative to the root (`core/src`, `tests/src`), read
/// from `cargo metadata`, so that a crate added to the workspace is checked without being named here.
fn workspace_sources() -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(project_root())
        .output()
        .expect("running `cargo metadata` (this check reads the workspace's members)");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let root = project_root().canonicalize().unwrap();
    let mut sources: Vec<String> = metadata["packages"]
        .as_array()
        .expect("cargo metadata lists packages")
        .iter()
        .filter_map(|package| {
            let manifest = Path::new(package["manifest_path"].as_str()?);
            let src = manifest.parent()?.join("src");
            let src = src.canonicalize().ok()?;
            Some(src.strip_prefix(&root).ok()?.to_string_lossy().into_owned())
        })
        .collect();
    sources.sort();
    sources
}

#[test]
fn every_crate_of_the_workspace_is_read() {
    let sources = workspace_sources();
    let expected = [
        "core/src",
        "driver/src",
        "host/src",
        "ptx-abi/src",
        "trace-format/src",
        "trace-analysis/src",
        "trace-inject/src",
        "xtask/src",
        "tests/src",
    ];
    for src in expected {
        assert!(sources.iter().any(|s| s == src), "{src} is not among the workspace's sources {sources:?}");
    }
}

/// The modules of every crate of the workspace form layers (`docs/crates.md`): no module imports one that
/// imports it back, a path through a `pub use` counting as an import of the module that defines the name.
#[test]
fn the_crates_modules_import_each_other_without_cycles() {
    // Imports some crates must have (a check that each graph was read at all, and that a re-export through
    // the crate root is followed to the module that defines the name).
    let expected = [
        ("core/src", "report", "classify"),
        ("host/src", "experiments", "measured_api"),
        ("driver/src", "stream", "sys"),
        ("driver/src", "runtime", "error"),
        ("trace-inject/src", "callbacks", "gated"),
        ("trace-analysis/src", "calls", "claims"),
    ];
    let mut found = Vec::new();
    for src in workspace_sources() {
        let graph = crate::layering::graph_of_dir(&project_root().join(&src));
        for (_, module, uses) in expected.iter().filter(|(s, _, _)| *s == src) {
            let deps = graph.get(*module);
            assert!(deps.is_some_and(|deps| deps.contains(*uses)), "the module graph of {src} is incomplete");
        }
        found.extend(crate::layering::cycles(&graph).into_iter().map(|cycle| format!("{src}: {cycle}")));
    }
    assert!(
        found.is_empty(),
        "modules import each other (move what both need into a module below them, see docs/crates.md):\n{}",
        found.join("\n")
    );
}

/// Every module file of every crate of the workspace (each `.rs` under its `src/`) starts by saying what it is
/// for, in a `//!` comment. Benches and integration tests are files of their own crates' checks, not modules.
#[test]
fn every_module_starts_with_a_doc_comment() {
    let mut missing = Vec::new();
    let sources = workspace_sources();
    for src in &sources {
        for file in rust_files(&project_root().join(src)) {
            let text = fs::read_to_string(&file).unwrap();
            let first = text.lines().map(str::trim).find(|line| !line.is_empty());
            if !first.is_some_and(|line| line.starts_with("//!")) {
                missing.push(file.strip_prefix(project_root()).unwrap_or(&file).display().to_string());
            }
        }
    }
    assert!(sources.len() >= 7, "only {} crates were read", sources.len());
    assert!(
        missing.is_empty(),
        "module files without a `//!` comment saying what they are for:\n{}",
        missing.join("\n")
    );
}

/// Words that speak of how the work on the project was organised (work periods, machines handed out for a
/// while, the kind names of the environment that handed them out) rather than of the project. Matched
/// case-insensitively as whole words; digits may follow (`session6`), letters may not (`sessional`).
const WORK_ORGANISATION_WORDS: &[&str] =
    &["session", "sessions", "lease", "leases", "leased", "lent", "loan", "loans", "nvidia-h200", "budget_left"];

/// This file names the words to find them: it is the one file not scanned.
const WORDS_LISTED_IN: &str = "xtask/src/tidy.rs";

/// Where in `text` one of `WORK_ORGANISATION_WORDS` stands as a word.
fn work_organisation_word(text: &str) -> Option<&'static str> {
    let lower = text.to_ascii_lowercase();
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    WORK_ORGANISATION_WORDS.iter().copied().find(|word| {
        lower.match_indices(word).any(|(at, _)| {
            let starts = !lower[..at].ends_with(is_word);
            let ends = !lower[at + word.len()..].starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
            starts && ends
        })
    })
}

/// A raw output of a GPU run (a recording, or the console output beside it): kept as the run wrote it, so its
/// name is checked and its content is not. A recording's `args` name the file as it was first written, which
/// may carry an old label.
fn raw_output(path: &str) -> bool {
    let Some(name) = path.strip_prefix("recordings/") else { return false };
    (name.starts_with("async-lab-") && name.ends_with(".json"))
        || (name.starts_with("device-log-") && name.ends_with(".txt"))
}

/// The files git tracks, relative to the root (`git ls-files`).
fn tracked_files() -> Vec<String> {
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(project_root())
        .output()
        .expect("running `git ls-files` (this check reads the tracked files)");
    assert!(out.status.success(), "git ls-files failed: {}", String::from_utf8_lossy(&out.stderr));
    let listing = String::from_utf8(out.stdout).expect("tracked file names are UTF-8");
    listing.split('\0').filter(|p| !p.is_empty()).map(str::to_owned).collect()
}

/// No tracked file, by name or by a line of its text, speaks of how the work was organised instead of what the
/// project is (`WORK_ORGANISATION_WORDS`): recordings and docs say which card, driver, preset, commit and date.
#[test]
fn no_tracked_file_speaks_of_how_the_work_was_organised() {
    let mut hits = Vec::new();
    let mut scanned = 0;
    for path in tracked_files().iter().map(String::as_str).filter(|p| *p != WORDS_LISTED_IN) {
        if let Some(word) = work_organisation_word(path) {
            hits.push(format!("{path}: its name has `{word}`"));
        }
        if raw_output(path) {
            continue;
        }
        // A file deleted in the working tree but not yet from the index has nothing to read.
        let Ok(bytes) = fs::read(project_root().join(path)) else { continue };
        // Binary files (images) have no lines to read.
        let Ok(text) = String::from_utf8(bytes) else { continue };
        if text.contains('\0') {
            continue;
        }
        scanned += 1;
        for (i, line) in text.lines().enumerate() {
            if let Some(word) = work_organisation_word(line) {
                hits.push(format!("{path}:{}: `{word}`: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(scanned > 100, "only {scanned} tracked text files were read");
    assert!(
        hits.is_empty(),
        "say what the project is (card, driver, preset, commit, date, run), not how the work was organised:\n{}",
        hits.join("\n")
    );
}

#[test]
fn work_organisation_words_are_found_as_words_only() {
    assert_eq!(work_organisation_word("device-log-x-2026-12-03-session6-main.txt"), Some("session"));
    assert_eq!(work_organisation_word("On a later Lease of the card"), Some("lease"));
    assert_eq!(work_organisation_word("only `nvidia-h200` was listed"), Some("nvidia-h200"));
    for clean in ["a silent lentil", "sessional", "released, unleashed", "equivalent", "NVIDIA H200"] {
        assert_eq!(work_organisation_word(clean), None, "{clean}");
    }
}

/// Where the recordings made on real GPUs are, and what was derived from them; committed traces in `traces/`.
const RECORDINGS: &str = "recordings";

/// The most `recordings/` may hold, all its files together: 15 MiB.
const RECORDINGS_BUDGET: u64 = 15 * 1024 * 1024;

/// A pattern that matches more of the recordings than this describes how names are made, not which files a
/// text speaks of (`async-lab-*.json`, `trace-*.jsonl.gz`), and cites none.
const MOST_FILES_A_PATTERN_CITES: usize = 4;

/// Every file under `recordings/` (its catalogue, `recordings/README.md`, too), relative to the root, with its
/// size, sorted.
fn recorded_files() -> Vec<(String, u64)> {
    let mut files = Vec::new();
    let mut dirs = vec![project_root().join(RECORDINGS)];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let size = fs::metadata(&path).unwrap().len();
                files.push((path.strip_prefix(project_root()).unwrap().to_string_lossy().into_owned(), size));
            }
        }
    }
    files.sort();
    files
}

/// The texts that may cite a recording: the README, the docs, the recordings' own catalogue, and the tests
/// (the test crate's, the Python package's, and the checks xtask runs), this file and the patterns' reader
/// (whose tests spell made-up names) left out.
fn citing_texts() -> Vec<PathBuf> {
    let root = project_root();
    let in_dir = |dir: &str, ext: &str| -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("cannot list {dir}: {e}"))
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == ext))
            .collect();
        files.sort();
        files
    };
    let mut texts = vec![root.join("README.md"), root.join(RECORDINGS).join("README.md")];
    texts.extend(in_dir("docs", "md"));
    texts.extend(rust_files(&root.join("tests")));
    texts.extend(in_dir("python/tests", "py"));
    let not_citing = [root.join(WORDS_LISTED_IN), root.join("xtask/src/citations.rs")];
    texts.extend(rust_files(&root.join("xtask/src")).into_iter().filter(|file| !not_citing.contains(file)));
    texts
}

/// Every file under `recordings/` is named, by its name or by a pattern of a few names, in the README, a doc,
/// `recordings/README.md` or a test: a recording nothing cites is either superseded (remove it) or unexplained
/// (say what it shows where it is used).
#[test]
fn every_recording_is_cited_by_a_doc_or_a_test() {
    let files = recorded_files();
    let name_of = |path: &str| path.rsplit('/').next().unwrap().to_owned();
    let names: Vec<String> = files.iter().map(|(path, _)| name_of(path)).collect();
    let mut patterns = std::collections::BTreeSet::new();
    let texts = citing_texts();
    for text in &texts {
        let text = fs::read_to_string(text).unwrap_or_else(|e| panic!("cannot read {}: {e}", text.display()));
        patterns.extend(crate::citations::patterns(&text));
    }
    let citing: Vec<&String> = patterns
        .iter()
        .filter(|pattern| {
            !crate::citations::has_wildcard(pattern)
                || names.iter().filter(|name| crate::citations::matches(pattern, name)).count()
                    <= MOST_FILES_A_PATTERN_CITES
        })
        .collect();
    let catalogue = format!("{RECORDINGS}/README.md");
    let uncited: Vec<&String> = files
        .iter()
        .map(|(path, _)| path)
        .filter(|path| **path != catalogue)
        .filter(|path| !citing.iter().any(|pattern| crate::citations::matches(pattern, &name_of(path))))
        .collect();
    assert!(
        files.len() > 50 && texts.len() > 30,
        "only {} recordings and {} texts were read",
        files.len(),
        texts.len()
    );
    assert!(
        uncited.is_empty(),
        "recordings that no doc or test names (by name, or by a pattern matching at most {MOST_FILES_A_PATTERN_CITES} \
         of them): say in recordings/README.md what each shows and where it is used, or remove a superseded one:\n{}",
        uncited.iter().map(|p| p.as_str()).collect::<Vec<_>>().join("\n")
    );
}

/// `recordings/` holds at most `RECORDINGS_BUDGET` (traces are stored gzip-compressed; superseded recordings
/// are removed, their history kept by git).
#[test]
fn recordings_fit_in_their_budget() {
    let mut files = recorded_files();
    let total: u64 = files.iter().map(|(_, size)| size).sum();
    files.sort_by_key(|(_, size)| std::cmp::Reverse(*size));
    let largest: Vec<String> = files.iter().take(5).map(|(path, size)| format!("{size:>10} {path}")).collect();
    assert!(
        total <= RECORDINGS_BUDGET,
        "{RECORDINGS}/ holds {total} bytes, over its budget of {RECORDINGS_BUDGET} (15 MiB); the largest files:\n{}",
        largest.join("\n")
    );
}

/// Where the committed traces are, each stored gzip-compressed (`async-lab trace --replay` reads it as it is).
const TRACES: &str = "recordings/traces";

/// Every committed trace is in one place, `recordings/traces/`, as `trace-*.jsonl.gz`: about a tenth of its
/// lines' bytes, and found by the tests that replay every committed trace (`async_lab_tests::trace_files`).
#[test]
fn committed_traces_are_stored_compressed_in_one_place() {
    let traces: Vec<String> =
        tracked_files().into_iter().filter(|path| path.ends_with(".jsonl") || path.ends_with(".jsonl.gz")).collect();
    let misplaced: Vec<&String> = traces
        .iter()
        .filter(|path| {
            let name = path.strip_prefix(TRACES).and_then(|rest| rest.strip_prefix('/'));
            !name.is_some_and(|name| !name.contains('/') && name.starts_with("trace-") && name.ends_with(".jsonl.gz"))
        })
        .collect();
    assert!(traces.len() > 20, "only {} committed traces were found", traces.len());
    assert!(
        misplaced.is_empty(),
        "committed traces go to {TRACES}/ as trace-NAME.jsonl.gz (`gzip -9n trace-NAME.jsonl`):\n{}",
        misplaced.iter().map(|p| p.as_str()).collect::<Vec<_>>().join("\n")
    );
}

/// The longest a function in the core, the host crate and the trace's analysis may be, in lines from its `fn` to
/// its closing brace.
const LONGEST_FUNCTION: usize = 120;

/// The longest a file of the trace's analysis may be, in lines: one job a file, its name saying which (a file
/// that grows past it is split by job, as `scene.rs`, `calls.rs` and `remedy.rs` were).
const LONGEST_ANALYSIS_FILE: usize = 500;

/// Each function of `text` longer than `limit` lines: its name and its length. A function runs from its `fn`
/// line to the first line after it that is its indentation and `}` (as rustfmt lays it out); a `fn` without a
/// body (a trait's declaration) or on one line is not counted.
fn long_functions(text: &str, limit: usize) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let Some(name) = fn_name(code) else { continue };
        // The signature ends at the first line ending in `{` (a body) or `;` (none).
        let Some(open) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';') || (j == i && l.ends_with('}'))
        }) else {
            continue;
        };
        if !lines[open].trim_end().ends_with('{') {
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(end) = (open + 1..lines.len()).find(|&j| lines[j] == close) {
            let len = end - i + 1;
            if len > limit {
                found.push((name.to_owned(), len));
            }
        }
    }
    found
}

/// The name of the function a line of code declares, if it declares one.
fn fn_name(code: &str) -> Option<&str> {
    let mut rest = code;
    for prefix in ["pub(crate) ", "pub(super) ", "pub ", "const ", "async ", "unsafe ", "extern \"C\" "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end]).filter(|name| !name.is_empty())
}

/// No function in the core, the host crate or the trace's analysis is longer than `LONGEST_FUNCTION` lines: a
/// longer one is split into named steps.
#[test]
fn no_function_in_the_core_the_host_or_the_analysis_crate_is_too_long() {
    let root = project_root();
    let mut too_long = Vec::new();
    for dir in ["core/src", "host/src", "trace-analysis/src"] {
        for path in rust_files(&root.join(dir)) {
            let rel = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
            for (name, len) in long_functions(&fs::read_to_string(&path).unwrap(), LONGEST_FUNCTION) {
                too_long.push(format!("{rel}: fn {name} is {len} lines"));
            }
        }
    }
    assert!(
        too_long.is_empty(),
        "functions over {LONGEST_FUNCTION} lines (split them into named steps):\n{}",
        too_long.join("\n")
    );
}

/// No file of the trace's analysis is longer than `LONGEST_ANALYSIS_FILE` lines, its tests counted.
#[test]
fn no_file_of_the_trace_analysis_is_too_long() {
    let root = project_root();
    let files = rust_files(&root.join("trace-analysis/src"));
    assert!(files.len() > 30, "the analysis's files were not found: {files:?}");
    let too_long: Vec<String> = files
        .iter()
        .map(|path| (path, fs::read_to_string(path).unwrap().lines().count()))
        .filter(|(_, lines)| *lines > LONGEST_ANALYSIS_FILE)
        .map(|(path, lines)| format!("{}: {lines} lines", path.strip_prefix(&root).unwrap().display()))
        .collect();
    assert!(
        too_long.is_empty(),
        "files of the trace's analysis over {LONGEST_ANALYSIS_FILE} lines (split them by job, named for it):\n{}",
        too_long.join("\n")
    );
}

#[test]
fn a_function_is_counted_from_its_fn_to_its_closing_brace() {
    let text = "impl X {\n    pub(crate) fn long(\n        a: u8,\n    ) -> u8 {\n        a\n    }\n    fn decl(&self);\n    fn one() {}\n}\n";
    assert_eq!(long_functions(text, 4), [("long".to_owned(), 5)]);
    assert!(long_functions(text, 5).is_empty());
}

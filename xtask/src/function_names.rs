//! Tests of a CUDA function's name outside the function table (`trace-format/src/functions.rs`), for the
//! check in `tidy.rs`: what a function does is decided in that one table, so a line elsewhere that tests a
//! name for a part of a CUDA function's (`name.contains("Memcpy")`, `starts_with("cuModuleLoad")`,
//! `any(w in name for w in ("Synchronize", ...))`) is a second answer that will drift from it.
//!
//! A line of Rust tests a name when it calls `contains`, `starts_with`, `ends_with`, `strip_prefix`,
//! `strip_suffix` or `find` and a string literal on it or on the lines of its statement before it (three at most) names a CUDA
//! function or a part of one ([`names_a_function`]). The Python package words nothing of CUDA functions (the
//! core's report does): any literal of its code that names one is a test. Tests, assertions, comments and
//! docstrings are not read: they check words printed, not what a function does.

/// Words of CUDA functions' names that a test of a name looks for.
const API_WORDS: &[&str] = &[
    "Memcpy",
    "Memset",
    "Launch",
    "LaunchKernel",
    "Synchronize",
    "Free",
    "Alloc",
    "Malloc",
    "Register",
    "Unregister",
    "HostRegister",
    "HostUnregister",
    "Load",
    "Module",
    "Library",
    "Graph",
    "HostFunc",
    "Query",
    "EventQuery",
    "Event",
    "Stream",
    "Ctx",
    "Func",
    "FuncGet",
    "GetFunction",
    "GetKernel",
    "Kernel",
    "MemRelease",
    "MemUnmap",
    "MemCreate",
    "MemAlloc",
    "HostAlloc",
    "LaunchCooperative",
];

/// Whether a string literal names a CUDA function or a part of one: `cu` or `cuda` followed by a capital
/// (`cudaMemcpyAsync`, `cuModuleLoad`), or one of the words functions' names are made of (`Memcpy`).
pub fn names_a_function(literal: &str) -> bool {
    let after = literal.strip_prefix("cuda").or_else(|| literal.strip_prefix("cu"));
    let prefixed = after.is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()));
    let word = literal.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (prefixed && word) || API_WORDS.contains(&literal)
}

/// The string literals of a line (between double quotes, escapes skipped).
fn literals(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'"' {
            let start = i + 1;
            let mut j = start;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            out.push(&line[start..j.min(bytes.len())]);
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// Whether a line of Rust tests a name.
fn tests_a_name(line: &str) -> bool {
    [".contains(", ".starts_with(", ".ends_with(", ".strip_prefix(", ".strip_suffix(", ".find("]
        .iter()
        .any(|call| line.contains(call))
}

/// The lines of code of a file: without comments, assertions and (Rust) the test module that ends a file, or
/// (Python) docstrings; each with its number (from 1).
fn code_lines(text: &str, python: bool) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut in_docstring = false;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if !python && trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if python {
            let quotes = trimmed.matches("\"\"\"").count();
            if in_docstring || quotes > 0 {
                if quotes % 2 == 1 {
                    in_docstring = !in_docstring;
                }
                continue;
            }
        }
        let comment = if python { trimmed.starts_with('#') } else { trimmed.starts_with("//") };
        if comment || trimmed.contains("assert") {
            continue;
        }
        out.push((n + 1, line));
    }
    out
}

/// The lines of `text` that test a CUDA function's name: (line number, the line).
pub fn name_tests(text: &str, python: bool) -> Vec<(usize, String)> {
    let lines = code_lines(text, python);
    let mut out = Vec::new();
    for (k, &(n, line)) in lines.iter().enumerate() {
        if python {
            if literals(line).into_iter().any(names_a_function) {
                out.push((n, line.trim().to_owned()));
            }
            continue;
        }
        if !tests_a_name(line) {
            continue;
        }
        // The statement it is part of: the lines before it up to one that ends another (at most three).
        let mut from = k;
        while from > 0 && k - from < 3 && !lines[from - 1].1.trim_end().ends_with([';', '{', '}']) {
            from -= 1;
        }
        if lines[from..=k].iter().any(|(_, l)| literals(l).into_iter().any(names_a_function)) {
            out.push((n, line.trim().to_owned()));
        }
    }
    out
}

#[test]
fn a_name_test_is_found_and_words_of_other_things_are_not() {
    let rust = r#"
fn enqueues(name: &str) -> bool {
    name.contains("Memcpy") || name.starts_with("cuModuleLoad")
}
fn other(file: &str) -> bool {
    file.contains("kineto") || file.starts_with("libtorch")
}
fn array(name: &str) -> bool {
    ["Alloc", "Free"]
        .iter()
        .any(|w| name.contains(w))
}
#[cfg(test)]
mod tests {
    fn t() { assert!(s.contains("cudaLaunchKernel")); }
}
"#;
    let found: Vec<usize> = name_tests(rust, false).into_iter().map(|(n, _)| n).collect();
    assert_eq!(found, [3, 11]);
    let python = r#"
"""Functions that wait: "Synchronize" in the name."""
_WAITS = ("Synchronize", "cudaStreamQuery")


def remedy(name):
    if any(w in name for w in _WAITS):
        return "wait less"
    if "Free" in name:
        return "free less"
    # "Malloc" in name
    return "site-packages/" in name
"#;
    let found: Vec<usize> = name_tests(python, true).into_iter().map(|(n, _)| n).collect();
    assert_eq!(found, [3, 9]);
    assert!(names_a_function("cudaMemcpyAsync") && names_a_function("cuMemAlloc_v2") && names_a_function("Launch"));
    assert!(!names_a_function("cuda") && !names_a_function("cudnn") && !names_a_function("a cudaMalloc call"));
}

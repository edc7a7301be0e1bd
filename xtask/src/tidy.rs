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
    for dir in ["core", "driver", "ptx-abi", "host", "trace-inject", "gpu-kernels", "xtask", "tests"] {
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

/// The crates that promise no `unsafe` at all keep the attribute that makes the compiler hold them to it.
#[test]
fn the_core_and_the_kernel_list_forbid_unsafe_code() {
    for lib in ["core/src/lib.rs", "ptx-abi/src/lib.rs"] {
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

/// The core's modules form layers (`docs/crates.md`): no module imports one that imports it back.
#[test]
fn the_core_modules_import_each_other_without_cycles() {
    let graph = crate::layering::graph_of_dir(&project_root().join("core/src"));
    assert!(graph.contains_key("report") && graph["report"].contains("classify"), "the module graph is incomplete");
    let cycles = crate::layering::cycles(&graph);
    assert!(
        cycles.is_empty(),
        "modules of core/src import each other (move what both need into a module below them, see docs/crates.md):\n{}",
        cycles.join("\n")
    );
}

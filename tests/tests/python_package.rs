//! What the Python package (`python/async_lab/`) keeps of the core's rules because only it can apply them where
//! it runs, compared with the core's: which files are an installed package's or Python's own (`gate.py`'s
//! `library_file`, asked at every return of the profile function; the analysis's `library_paths::library_python`), how a
//! duration is read (`duration.py`'s `parse`; `async-lab trace`'s `parse_duration`), and where CUPTI is looked
//! for (`_native.py`'s variable and folders; the binary's `locate::CUPTI`). Everything else the package says
//! comes worded from the core (`trace::held_message`). Runs on `python3`, from the source tree.

use async_lab_core::trace::library_paths::library_python;
use async_lab_driver::runtime::locate::CUPTI;
use std::process::Command;

/// Runs `code` with the package importable from the source tree; its output, read as JSON.
fn python(code: &str) -> serde_json::Value {
    let root = async_lab_tests::project_root();
    let out = Command::new("python3")
        .arg("-c")
        .arg(code)
        .env("PYTHONPATH", root.join("python"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs (the Python package's comparisons need it)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the script prints JSON")
}

#[test]
fn the_gate_tells_a_library_file_as_the_core_does() {
    let paths = [
        "/venv/lib/python3.12/site-packages/torch/_tensor.py",
        "/usr/lib/python3/dist-packages/jax/_src/array.py",
        "/usr/lib/python3.11/threading.py",
        "/usr/lib64/python3.12/runpy.py",
        "<frozen runpy>",
        "<string>",
        "/home/me/lib/train.py",
        "/home/me/python3/train.py",
        "/home/me/lib/python/train.py",
        "test_copy.py",
        "/opt/app/lib/python3.11x/site.py",
    ];
    let code = format!(
        "import json\nfrom async_lab import gate\nprint(json.dumps([gate.library_file(p) for p in {}]))",
        serde_json::to_string(&paths).unwrap()
    );
    let theirs: Vec<bool> = serde_json::from_value(python(&code)).unwrap();
    let ours: Vec<bool> = paths.iter().map(|p| library_python(p)).collect();
    assert_eq!(theirs, ours, "{paths:?}");
    assert!(ours.contains(&true) && ours.contains(&false));
}

#[test]
fn the_package_reads_a_duration_as_the_command_line_does() {
    let texts = ["1ms", "20us", "250µs", "0.5s", "100ns", "2s", "1.5ms", "soon", "", "-1ms", "1 hour"];
    let code = format!(
        "import json\nfrom async_lab import duration\nout = []\nfor t in {}:\n    try:\n        \
         out.append(duration.parse(t))\n    except ValueError:\n        out.append(None)\nprint(json.dumps(out))",
        serde_json::to_string(&texts).unwrap()
    );
    let theirs: Vec<Option<i64>> = serde_json::from_value(python(&code)).unwrap();
    let ours: Vec<Option<i64>> =
        texts.iter().map(|t| async_lab::trace::parse_duration(t).ok().map(|d| d.as_nanos() as i64)).collect();
    // Where the package reads one, the command line reads the same; both refuse what is not one.
    for ((t, theirs), ours) in texts.iter().zip(&theirs).zip(&ours) {
        if let Some(ns) = theirs {
            assert_eq!(Some(*ns), *ours, "{t:?}");
        }
    }
    assert_eq!(theirs[..7].iter().filter(|n| n.is_some()).count(), 7, "{theirs:?}");
    assert!(theirs[7..].iter().all(Option::is_none), "{theirs:?}");
}

#[test]
fn the_gate_looks_for_cupti_where_the_binary_does() {
    let v = python(
        "import json\nfrom async_lab import _native\nprint(json.dumps({'var': _native.CUPTI_VAR, \
         'wheels': list(_native._WHEEL_DIRS), 'toolkit': list(_native._TOOLKIT_DIRS)}))",
    );
    assert_eq!(v["var"], CUPTI.var);
    assert_eq!(v["wheels"], serde_json::json!(CUPTI.wheel_dirs));
    assert_eq!(v["toolkit"], serde_json::json!(CUPTI.toolkit_dirs));
}

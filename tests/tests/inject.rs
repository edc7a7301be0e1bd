//! The injection library without a GPU: loaded as the CUDA driver loads it and told to use a CUPTI that is
//! not a library, it must write a trace that says so (a header, then one error line), and never panic into
//! the program it was loaded into.

use async_lab_core::trace::format::{Failure, Line, Trace};
use async_lab_tests::inject_path;

#[test]
fn a_cupti_that_cannot_be_loaded_is_one_error_line_after_the_header() {
    let dir = std::env::temp_dir().join(format!("async-lab-inject-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let not_a_library = dir.join("libcupti.so.13");
    std::fs::write(&not_a_library, "not a library").unwrap();
    // The variables `async-lab trace` sets (trace-inject/src/lib.rs and writer.rs).
    std::env::set_var("ASYNC_LAB_TRACE_DIR", &dir);
    std::env::set_var("ASYNC_LAB_CUPTI_LIB", &not_a_library);

    // SAFETY: the library's initializers only set up Rust's runtime state; it is loaded once and kept.
    let lib = unsafe { libloading::Library::new(inject_path()) }.expect("the injection library loads");
    // SAFETY: `InitializeInjection` is the library's `extern "C" fn() -> c_int`, the driver's injection entry.
    let init = unsafe { lib.get::<unsafe extern "C" fn() -> std::ffi::c_int>(b"InitializeInjection\0") }.unwrap();
    // SAFETY: called as the driver calls it, once, from one thread.
    assert_eq!(unsafe { init() }, 1);

    let text = std::fs::read_to_string(dir.join(format!("{}.jsonl", std::process::id()))).unwrap();
    let trace = Trace::parse(&text).expect("a readable trace");
    let p = &trace.processes[0];
    assert_eq!(p.pid, std::process::id());
    let (failure, message) = p.failure.clone().expect("an error line");
    assert_eq!(failure, Failure::CuptiMissing);
    assert!(message.contains("cannot load CUPTI from") && message.contains("libcupti.so.13"), "{message}");
    assert!(matches!(p.lines.as_slice(), [Line::Error { .. }]), "{:?}", p.lines);
}

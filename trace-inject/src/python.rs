//! The calling thread's Python frames, where the process runs CPython and the thread holds the GIL: read
//! through the interpreter's stable C API (`PyEval_GetFrame`, `PyFrame_GetCode`, `PyFrame_GetLineNumber`,
//! `PyFrame_GetBack`, 3.9 and later), found in the process by name at run time, so nothing links to Python.
//! A thread that does not hold the GIL is never read: its frames may change under it.

use async_lab_core::trace::format::{Gil, PyFrame};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// The frames read per call, innermost first.
const DEPTH: usize = 8;

type Obj = *mut c_void;

/// The interpreter's functions this module calls.
struct Api {
    is_initialized: unsafe extern "C" fn() -> c_int,
    gil_check: unsafe extern "C" fn() -> c_int,
    get_frame: unsafe extern "C" fn() -> Obj,
    get_code: unsafe extern "C" fn(Obj) -> Obj,
    get_line: unsafe extern "C" fn(Obj) -> c_int,
    get_back: unsafe extern "C" fn(Obj) -> Obj,
    get_attr: unsafe extern "C" fn(Obj, *const c_char) -> Obj,
    as_utf8: unsafe extern "C" fn(Obj) -> *const c_char,
    dec_ref: unsafe extern "C" fn(Obj),
    err_clear: unsafe extern "C" fn(),
}

/// A function of the process by its name, as the function pointer type `F`.
///
/// # Safety
/// `F` is the C signature of the function of that name.
unsafe fn find<F: Copy>(name: &CStr) -> Option<F> {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
    // SAFETY: dlsym with RTLD_DEFAULT only reads the loaded objects' symbol tables.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    // SAFETY: a non-null symbol of that name is the function, of signature `F` (the caller's promise), and
    // `F` is a pointer's size (checked above).
    (!p.is_null()).then(|| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

/// The functions, looked up once; `None` in a process without Python.
fn api() -> Option<&'static Api> {
    static API: OnceLock<Option<Api>> = OnceLock::new();
    API.get_or_init(|| {
        // SAFETY: for each find, the name is CPython's function whose C signature (stable API since 3.9) is
        // the field's type.
        unsafe {
            Some(Api {
                is_initialized: find(c"Py_IsInitialized")?,
                gil_check: find(c"PyGILState_Check")?,
                get_frame: find(c"PyEval_GetFrame")?,
                get_code: find(c"PyFrame_GetCode")?,
                get_line: find(c"PyFrame_GetLineNumber")?,
                get_back: find(c"PyFrame_GetBack")?,
                get_attr: find(c"PyObject_GetAttrString")?,
                as_utf8: find(c"PyUnicode_AsUTF8")?,
                dec_ref: find(c"Py_DecRef")?,
                err_clear: find(c"PyErr_Clear")?,
            })
        }
    })
    .as_ref()
}

/// Whether the thread holds the GIL, and its frames where it does.
pub fn frames() -> (Gil, Vec<PyFrame>) {
    let Some(py) = api() else { return (Gil::NoPython, Vec::new()) };
    // SAFETY: both take no arguments and only read the interpreter's state; PyGILState_Check answers for
    // the calling thread.
    if unsafe { (py.is_initialized)() } == 0 || unsafe { (py.gil_check)() } != 1 {
        return (Gil::NotHeld, Vec::new());
    }
    let mut out = Vec::new();
    // SAFETY: this thread holds the GIL (checked above), which is what every call below requires; the
    // frame from PyEval_GetFrame is borrowed, each one from PyFrame_GetBack and each code object and
    // attribute is a new reference, released with Py_DecRef once read; the UTF-8 text belongs to its
    // string and is copied before the string is released.
    unsafe {
        let first = (py.get_frame)();
        let mut frame = first;
        while !frame.is_null() && out.len() < DEPTH {
            let code = (py.get_code)(frame);
            if !code.is_null() {
                out.push(PyFrame {
                    file: text(py, code, c"co_filename"),
                    line: (py.get_line)(frame).max(0) as u32,
                    function: text(py, code, c"co_name"),
                });
                (py.dec_ref)(code);
            }
            let back = (py.get_back)(frame);
            if frame != first {
                (py.dec_ref)(frame);
            }
            frame = back;
        }
        if !frame.is_null() && frame != first {
            (py.dec_ref)(frame);
        }
    }
    (Gil::Held, out)
}

/// A code object's string attribute.
///
/// # Safety
/// The thread holds the GIL; `code` is a live object.
unsafe fn text(py: &Api, code: Obj, name: &CStr) -> String {
    // SAFETY: the caller's promise; see `frames`.
    unsafe {
        let attr = (py.get_attr)(code, name.as_ptr());
        if attr.is_null() {
            (py.err_clear)();
            return String::new();
        }
        let utf8 = (py.as_utf8)(attr);
        let s = if utf8.is_null() {
            (py.err_clear)();
            String::new()
        } else {
            CStr::from_ptr(utf8).to_string_lossy().into_owned()
        };
        (py.dec_ref)(attr);
        s
    }
}

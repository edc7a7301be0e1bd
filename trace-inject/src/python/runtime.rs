//! The interpreter in the process, found once: its functions that need no GIL (found by name, so nothing
//! links to Python), its version, and the layout its frames are read with (`reader::Reader`), or why they are not.

use super::layout::Layout;
use super::reader::Reader;
use super::{memory, stack};
use async_lab_trace_format::{PyReader, PythonSetup};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// The interpreter's functions this module calls: none of them needs the GIL (each reads a flag, a
/// thread-specific slot or a static string).
pub struct Interp {
    /// `Py_GetVersion`'s first word (`3.12.3`).
    pub version: String,
    is_initialized: unsafe extern "C" fn() -> c_int,
    gil_check: unsafe extern "C" fn() -> c_int,
    this_thread_state: unsafe extern "C" fn() -> *mut c_void,
    /// `PyInterpreterState_Main` and `PyInterpreterState_ThreadHead` (debugger support, every 3.x): the main
    /// interpreter and its first thread state, each one field read, for checking where the reader finds them.
    main_interp: Option<unsafe extern "C" fn() -> *mut c_void>,
    thread_head: Option<unsafe extern "C" fn(*mut c_void) -> *mut c_void>,
    /// 3.10 and 3.11: `_PyThreadState_UncheckedGet`, the thread state holding the GIL (the runtime's
    /// `gilstate.tstate_current`: an atomic read, from any thread). In 3.12 and later it answers the calling
    /// thread's own state instead, and is not used.
    pub gil_holder: Option<unsafe extern "C" fn() -> *mut c_void>,
    /// How frames are read, or why they are not.
    pub reader: Result<Reader, String>,
}

impl Interp {
    /// Whether the interpreter is initialized (`Py_IsInitialized`).
    pub fn initialized(&self) -> bool {
        // SAFETY: Py_IsInitialized takes no arguments and reads one flag of the runtime.
        unsafe { (self.is_initialized)() != 0 }
    }

    /// Whether the calling thread holds the GIL (`PyGILState_Check`: compares the thread's own state with
    /// the one holding the GIL, taking nothing).
    pub fn gil_held(&self) -> bool {
        // SAFETY: PyGILState_Check takes no arguments and reads the calling thread's slot and an atomic.
        unsafe { (self.gil_check)() == 1 }
    }

    /// The calling thread's thread state, 0 where it has none (`PyGILState_GetThisThreadState`: the
    /// thread-specific slot CPython keeps for each thread that ran Python, held or not).
    pub fn this_thread_state(&self) -> usize {
        // SAFETY: PyGILState_GetThisThreadState takes no arguments and reads a thread-specific slot.
        unsafe { (self.this_thread_state)() as usize }
    }

    /// The main interpreter's state (0: none yet).
    pub fn main_interp(&self) -> usize {
        // SAFETY: PyInterpreterState_Main takes no arguments and reads one field of the runtime.
        self.main_interp.map_or(0, |f| unsafe { f() } as usize)
    }

    /// The first thread state of interpreter `interp` as the interpreter itself reads it (0: none).
    ///
    /// # Safety
    /// `interp` is a live interpreter state (`main_interp`'s, while the interpreter is initialized).
    pub unsafe fn thread_head(&self, interp: usize) -> usize {
        // SAFETY: PyInterpreterState_ThreadHead reads one field of the interpreter state, which is live (the
        // caller's promise).
        self.thread_head.map_or(0, |f| unsafe { f(interp as *mut c_void) } as usize)
    }

    /// What the trace's setup line says of it.
    pub fn setup(&self) -> PythonSetup {
        match &self.reader {
            Ok(r) => PythonSetup { version: self.version.clone(), reader: r.kind, note: None },
            Err(why) => {
                PythonSetup { version: self.version.clone(), reader: PyReader::Unknown, note: Some(why.clone()) }
            }
        }
    }
}

/// The interpreter, looked up once; `None` in a process without Python.
pub fn interp() -> Option<&'static Interp> {
    static INTERP: OnceLock<Option<Interp>> = OnceLock::new();
    INTERP.get_or_init(find).as_ref()
}

/// A function or object of the process by its name, as a pointer.
fn symbol(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with RTLD_DEFAULT only reads the loaded objects' symbol tables.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// A function of the process by its name, as the function pointer type `F`.
///
/// # Safety
/// `F` is the C signature of the function of that name.
unsafe fn function<F: Copy>(name: &CStr) -> Option<F> {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
    let p = symbol(name)?;
    // SAFETY: a symbol of that name is the function, of signature `F` (the caller's promise), and `F` is a
    // pointer's size (checked above).
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

fn find() -> Option<Interp> {
    // SAFETY: each name is CPython's function whose C signature (the stable API, 3.4 and later) is the
    // field's type.
    let (is_initialized, gil_check, this_thread_state, get_version) = unsafe {
        (
            function::<unsafe extern "C" fn() -> c_int>(c"Py_IsInitialized")?,
            function::<unsafe extern "C" fn() -> c_int>(c"PyGILState_Check")?,
            function::<unsafe extern "C" fn() -> *mut c_void>(c"PyGILState_GetThisThreadState")?,
            function::<unsafe extern "C" fn() -> *const c_char>(c"Py_GetVersion")?,
        )
    };
    // SAFETY: Py_GetVersion returns a static NUL-terminated string, formatted without the GIL.
    let full = unsafe { CStr::from_ptr(get_version()) }.to_string_lossy().into_owned();
    let version = full.split_whitespace().next().unwrap_or_default().to_string();
    // SAFETY: as above, each name is CPython's function of that C signature (`PyInterpreterState_Main` and
    // `_ThreadHead` of the debugger API, `_PyThreadState_UncheckedGet` of the unstable API up to 3.12).
    let (main_interp, thread_head, unchecked_get) = unsafe {
        (
            function::<unsafe extern "C" fn() -> *mut c_void>(c"PyInterpreterState_Main"),
            function::<unsafe extern "C" fn(*mut c_void) -> *mut c_void>(c"PyInterpreterState_ThreadHead"),
            function::<unsafe extern "C" fn() -> *mut c_void>(c"_PyThreadState_UncheckedGet"),
        )
    };
    let gil_holder = unchecked_get.filter(|_| matches!(minor_of(&version), Some(10 | 11)));
    let mut interp = Interp {
        version,
        is_initialized,
        gil_check,
        this_thread_state,
        main_interp,
        thread_head,
        gil_holder,
        reader: Err(String::new()),
    };
    interp.reader = reader(&interp);
    Some(interp)
}

/// The reader for this interpreter, checked on the calling thread's own frames where it has any.
fn reader(interp: &Interp) -> Result<Reader, String> {
    let minor = minor_of(&interp.version).ok_or_else(|| format!("a version not read: {:?}", interp.version))?;
    memory::safe_reads_work()?;
    let (layout, kind) = match minor {
        10 => (Layout::v3_10(), PyReader::Layout),
        11 => (Layout::v3_11(), PyReader::Layout),
        12 => (Layout::v3_12(), PyReader::Layout),
        13.. => (debug_offsets(minor)?, PyReader::DebugOffsets),
        _ => return Err(format!("Python 3.{minor} is older than the reader knows (3.10 and later)")),
    };
    let ty = |name: &CStr| symbol(name).map(|p| p as usize).ok_or_else(|| format!("no {name:?} in the process"));
    let reader = Reader {
        layout,
        kind,
        code_type: ty(c"PyCode_Type")?,
        unicode_type: ty(c"PyUnicode_Type")?,
        bytes_type: ty(c"PyBytes_Type")?,
    };
    stack::check(interp.this_thread_state(), &interp.version, &reader)?;
    Ok(reader)
}

/// The minor version of `3.X...`.
fn minor_of(version: &str) -> Option<u8> {
    let rest = version.strip_prefix("3.")?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// The layout from the `_Py_DebugOffsets` table at the start of `_PyRuntime` (3.13 and later).
fn debug_offsets(minor: u8) -> Result<Layout, String> {
    let runtime = symbol(c"_PyRuntime").ok_or("no _PyRuntime in the process")? as usize;
    let mut table = [0u8; 1024];
    if !memory::read(memory::pid(), runtime, &mut table) {
        return Err("_PyRuntime could not be read".into());
    }
    if &table[..8] != b"xdebugpy" {
        return Err("_PyRuntime does not begin with the debug offsets' cookie".into());
    }
    let hex = memory::word(&table, 8);
    let (major, table_minor) = (hex >> 24 & 0xff, hex >> 16 & 0xff);
    if (major, table_minor) != (3, minor as usize) {
        return Err(format!("the debug offsets table says version {major}.{table_minor}"));
    }
    if memory::word(&table, 16) != 0 {
        return Err("a free-threaded build: its objects are laid out otherwise".into());
    }
    Layout::from_debug_offsets(&table, minor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minor_version_is_read_from_the_version_string() {
        assert_eq!(minor_of("3.12.3"), Some(12));
        assert_eq!(minor_of("3.14.0rc1"), Some(14));
        assert_eq!(minor_of("3.9"), Some(9));
        assert_eq!(minor_of("2.7.18"), None);
        assert_eq!(minor_of(""), None);
    }

    #[test]
    fn a_process_without_python_has_no_interpreter() {
        // The test binary links no Python.
        assert!(interp().is_none());
    }
}

//! What a program's thread hands the library's thread for each call it returns from, through its ring
//! (`writer`): fixed-size and made without allocating or formatting. The library's thread turns each into a
//! trace line. A location travels as taken (code ids), from a pool; the rarer lines (a resource event, an NVTX
//! range, the default streams) travel whole.

use async_lab_trace_format::{Domain, Line};
use std::ffi::{c_char, CStr};

/// CUPTI's name of an API function.
#[derive(Clone, Copy, Debug)]
pub struct Name(pub *const c_char);

// SAFETY: the pointer is CUPTI's static C string (`functionName`), never written, alive for the whole run: any
// thread may read it.
unsafe impl Send for Name {}

impl Name {
    /// The name, as `to_string_lossy` reads it ("" where CUPTI gave none).
    pub fn as_cstr(&self) -> &CStr {
        if self.0.is_null() {
            c""
        } else {
            // SAFETY: a non-null name is CUPTI's static C string (see the `Send` impl).
            unsafe { CStr::from_ptr(self.0) }
        }
    }
}

/// One record of a thread's ring.
#[derive(Debug)]
pub enum Record {
    /// An API call, at its return: whether it returned outside every other traced call of its thread.
    Api { domain: Domain, name: Name, cbid: u32, corr: u32, start: u64, end: u64, outermost: bool },
    /// Any other line, made on the thread.
    Line(Box<Line>),
    /// A call's location, its line made on the library's thread (`location::into_line`).
    Location(Box<crate::location::Taken>),
}

impl Record {
    /// The trace line, made on the library's thread; `tid` is the thread the ring belongs to.
    pub fn line(self, tid: u64) -> (Line, Option<bool>) {
        match self {
            Record::Api { domain, name, cbid, corr, start, end, outermost } => {
                let name = name.as_cstr().to_string_lossy().into_owned();
                (Line::Api { domain, name, cbid, tid, corr, start, end }, Some(outermost))
            }
            Record::Line(l) => (*l, None),
            Record::Location(t) => (crate::location::into_line(t), None),
        }
    }
}

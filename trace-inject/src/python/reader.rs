//! What reading a thread's Python frames needs, once the interpreter is found (`runtime`): the version's layout
//! and the addresses of the types every object read is checked against; the frame walk (`walk`) and the code
//! objects' decoding (`code`) read with it.

use super::layout::Layout;
use async_lab_trace_format::PyReader;

/// What reading frames needs: the layout and the addresses of the types of the objects read, which every
/// object read is checked against (a stale pointer or a wrong offset then reads as no frame, not a wrong one).
pub struct Reader {
    /// Where the version keeps each field read.
    pub layout: Layout,
    /// Which way the layout was found (the setup line says it).
    pub kind: PyReader,
    /// `PyCode_Type`'s address.
    pub code_type: usize,
    /// `PyUnicode_Type`'s address.
    pub unicode_type: usize,
    /// `PyBytes_Type`'s address.
    pub bytes_type: usize,
}

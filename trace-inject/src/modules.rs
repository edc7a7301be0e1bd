//! The files the loader has mapped into the process, as `dl_iterate_phdr` shows them: each file's name, its
//! loaded segments (`PT_LOAD`), and where its unwind tables lie in memory (`PT_GNU_EH_FRAME`: the
//! `.eh_frame_hdr`, and the `.eh_frame` it points to). Read inside the loader's own callback, so a file is
//! described as the loader holds it at that moment.

use std::ffi::CStr;
use std::ops::Range;
use std::sync::Arc;

/// One loaded segment: its addresses, and its file's name and first loaded byte.
#[derive(Clone, Debug)]
pub struct Segment {
    pub start: u64,
    pub end: u64,
    /// The file's first loaded byte (page-aligned down): what `dladdr` calls its base, and what a native
    /// frame's offset is counted from.
    pub base: u64,
    pub file: Arc<str>,
}

/// A file's unwind tables, where the loader mapped them (addresses as the file states them, and the bytes).
/// The bytes are the loader's mapping: read only while the file is loaded (`unwind` reads them inside the
/// loader's lock, and forgets every file when the loader's count of removals moves).
pub struct Tables {
    pub hdr_svma: Range<u64>,
    pub hdr: &'static [u8],
    pub eh_frame_svma: Range<u64>,
    /// From the `.eh_frame`'s first byte to the end of the segment holding it: the table ends with its own
    /// terminator, and every entry is reached through the header's index.
    pub eh_frame: &'static [u8],
}

/// One loaded file.
pub struct File {
    pub name: Arc<str>,
    /// What the loader added to the file's stated addresses (`dlpi_addr`).
    pub bias: u64,
    /// From its first loaded byte to its last.
    pub range: Range<u64>,
    pub segments: Vec<Segment>,
    /// Its executable segment, as the file states it.
    pub text_svma: Option<Range<u64>>,
    pub tables: Option<Tables>,
}

/// The loader's counts of files added and removed since the process began: while both stay the same, the
/// list of files has not changed.
pub type Counters = (u64, u64);

/// The counters `info` carries, where the loader passed them (`size` says how much of it there is).
pub fn counters(info: &libc::dl_phdr_info, size: usize) -> Counters {
    let has = std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs) + std::mem::size_of::<u64>() <= size;
    if has {
        (info.dlpi_adds, info.dlpi_subs)
    } else {
        (0, 0)
    }
}

/// The file `info` describes.
///
/// # Safety
/// `info` is what the loader passed to a `dl_iterate_phdr` callback, read during that callback: its program
/// headers and name are valid, and its segments are mapped as those headers say.
pub unsafe fn file_of(info: &libc::dl_phdr_info) -> Option<File> {
    // SAFETY: the loader's program headers for this file, `dlpi_phnum` of them (the caller's promise).
    let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let loads: Vec<&libc::Elf64_Phdr> = headers.iter().filter(|h| h.p_type == libc::PT_LOAD).collect();
    let first = loads.iter().map(|h| h.p_vaddr).min()?;
    let name = if info.dlpi_name.is_null() {
        String::new()
    } else {
        // SAFETY: the loader's C string for the file's name (the caller's promise).
        unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned()
    };
    // The loader names the program itself by nothing (or by `argv[0]`); the vDSO by its soname.
    let own = name.is_empty() || (!name.starts_with('/') && !name.starts_with("linux-vdso"));
    let name: Arc<str> = if own { exe().unwrap_or(name) } else { name }.into();
    let bias = info.dlpi_addr;
    let base = bias.wrapping_add(first & !0xfff);
    let segments: Vec<Segment> = loads
        .iter()
        .map(|h| {
            let start = bias.wrapping_add(h.p_vaddr);
            Segment { start, end: start.wrapping_add(h.p_memsz), base, file: name.clone() }
        })
        .collect();
    let range = segments.iter().map(|s| s.start).min()?..segments.iter().map(|s| s.end).max()?;
    let text_svma =
        loads.iter().find(|h| h.p_flags & libc::PF_X != 0).map(|h| h.p_vaddr..h.p_vaddr.wrapping_add(h.p_memsz));
    let tables = headers.iter().find(|h| h.p_type == libc::PT_GNU_EH_FRAME).and_then(|hdr| {
        // Only bytes the file itself maps: within a segment's file-backed part.
        let mapped = |svma: u64| loads.iter().find(|h| h.p_vaddr <= svma && svma < h.p_vaddr + h.p_filesz).copied();
        let holder = mapped(hdr.p_vaddr)?;
        let hdr_len = hdr.p_memsz.min(holder.p_vaddr + holder.p_filesz - hdr.p_vaddr);
        let hdr_svma = hdr.p_vaddr..hdr.p_vaddr + hdr_len;
        let hdr_at = bias.wrapping_add(hdr.p_vaddr) as *const u8;
        // SAFETY: inside a segment the loader mapped from the file (checked above), readable as long as the
        // file stays loaded.
        let hdr_bytes: &'static [u8] = unsafe { std::slice::from_raw_parts(hdr_at, hdr_len as usize) };
        let eh_frame_svma_start = eh_frame_of(hdr_bytes, hdr_svma.start)?;
        let holder = mapped(eh_frame_svma_start)?;
        let eh_frame_svma = eh_frame_svma_start..holder.p_vaddr + holder.p_filesz;
        let (at, len) = (bias.wrapping_add(eh_frame_svma.start) as *const u8, eh_frame_svma.end - eh_frame_svma.start);
        // SAFETY: as above, for the segment that holds the `.eh_frame`.
        let eh_frame: &'static [u8] = unsafe { std::slice::from_raw_parts(at, len as usize) };
        Some(Tables { hdr_svma, hdr: hdr_bytes, eh_frame_svma, eh_frame })
    });
    Some(File { name, bias, range, segments, text_svma, tables })
}

/// Where the `.eh_frame` that an `.eh_frame_hdr` (at `hdr_svma`) points to begins, as the file states it.
fn eh_frame_of(hdr: &[u8], hdr_svma: u64) -> Option<u64> {
    let bases = gimli::BaseAddresses::default().set_eh_frame_hdr(hdr_svma);
    let parsed = gimli::EhFrameHdr::new(hdr, gimli::LittleEndian).parse(&bases, 8).ok()?;
    match parsed.eh_frame_ptr() {
        gimli::Pointer::Direct(at) => Some(at),
        gimli::Pointer::Indirect(_) => None,
    }
}

/// Every loaded file, in the loader's order, with the loader's counters at that moment.
pub fn loaded() -> (Vec<File>, Counters) {
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, size: usize, out: *mut libc::c_void) -> libc::c_int {
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: the loader passes a valid `dl_phdr_info` for one loaded file, alive during this call;
            // `out` is the pair `loaded` passed.
            unsafe {
                let out = &mut *out.cast::<(Vec<File>, Counters)>();
                out.1 = counters(&*info, size);
                out.0.extend(file_of(&*info));
            }
        }));
        // A panic must not cross the loader: stop the walk there.
        read.is_err() as libc::c_int
    }
    let mut out: (Vec<File>, Counters) = (Vec::new(), (0, 0));
    // SAFETY: `each` has the callback's signature and only reads what the loader passes; `out` outlives the
    // call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut out as *mut (Vec<File>, Counters)).cast()) };
    out
}

/// The program's own file: the loader names it by `argv[0]`, or not at all.
pub fn exe() -> Option<String> {
    static EXE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    EXE.get_or_init(|| std::fs::read_link("/proc/self/exe").ok().map(|p| p.display().to_string())).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test binary and libc are loaded with their unwind tables, and the `.eh_frame` the header points
    /// to begins as a table does (a length, then a CIE's id of zero).
    #[test]
    fn loaded_files_have_their_unwind_tables() {
        let (files, _) = loaded();
        let exe = exe().unwrap();
        let me = files.iter().find(|f| *f.name == *exe).expect("the test binary is loaded");
        let here = loaded_files_have_their_unwind_tables as *const () as u64;
        assert!(me.range.contains(&here));
        assert!(me.segments.iter().any(|s| s.start <= here && here < s.end));
        let tables = me.tables.as_ref().expect("the test binary has .eh_frame_hdr");
        assert!(tables.hdr_svma.start < tables.hdr_svma.end);
        let cie_id = u32::from_le_bytes(tables.eh_frame[4..8].try_into().unwrap());
        assert_eq!(cie_id, 0, "the first entry of .eh_frame is a CIE");
        assert!(files.iter().any(|f| f.name.contains("libc.so") && f.tables.is_some()));
    }
}

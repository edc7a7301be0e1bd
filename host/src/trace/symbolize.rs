//! Native frames symbolized after the program ended: each `Line::Location`'s frames are a file and an offset
//! from its first loaded byte (all the injection library takes, so that a held call pays for no symbol
//! lookups); here each gets its function (demangled, C++ and Rust), source file and line from the file's
//! debug info, or its function from the symbol table where the file has no debug info. Files that cannot
//! be read (gone, or of another machine) leave their frames as they were.

use async_lab_core::trace::format::{Line, NativeFrame};
use std::collections::HashMap;

/// One module: its symbols and debug info, and the address its first loaded segment starts at.
struct Module {
    loader: addr2line::Loader,
    base: u64,
}

impl Module {
    fn open(path: &str) -> Option<Module> {
        let data = std::fs::read(path).ok()?;
        let base = first_segment(&data)?;
        let loader = addr2line::Loader::new(path).ok()?;
        Some(Module { loader, base })
    }

    /// Fills in `frame`'s function, file and line where the module knows them.
    fn fill(&self, frame: &mut NativeFrame) {
        let probe = self.base + frame.offset;
        if let Ok(mut frames) = self.loader.find_frames(probe) {
            if let Ok(Some(f)) = frames.next() {
                frame.function = f.function.as_ref().and_then(|n| n.demangle().ok()).map(|n| n.into_owned());
                if let Some(location) = f.location {
                    frame.file = location.file.map(str::to_owned);
                    frame.line = location.line;
                }
            }
        }
        if frame.function.is_none() {
            frame.function =
                self.loader.find_symbol(probe).map(|name| addr2line::demangle_auto(name.into(), None).into_owned());
        }
    }
}

/// The virtual address of a file's first loaded segment (page-aligned down, as it is mapped): what
/// `dladdr` calls the file's base.
fn first_segment(data: &[u8]) -> Option<u64> {
    use object::{Object as _, ObjectSegment as _};
    let file = object::File::parse(data).ok()?;
    let first = file.segments().map(|s| s.address()).min()?;
    Some(first & !0xfff)
}

/// The trace's text with its native frames symbolized; other lines as they were, byte for byte.
pub fn text(trace: &str) -> String {
    let mut modules: HashMap<String, Option<Module>> = HashMap::new();
    let mut out = String::with_capacity(trace.len());
    for raw in trace.split_inclusive('\n') {
        if !raw.starts_with(r#"{"type":"location""#) {
            out.push_str(raw);
            continue;
        }
        let Ok(mut line) = serde_json::from_str::<Line>(raw.trim_end()) else {
            out.push_str(raw);
            continue;
        };
        if let Line::Location { native, .. } = &mut line {
            for frame in native.iter_mut().filter(|f| f.function.is_none()) {
                let module = modules.entry(frame.module.clone()).or_insert_with(|| Module::open(&frame.module));
                if let Some(module) = module {
                    module.fill(frame);
                }
            }
        }
        match serde_json::to_string(&line) {
            Ok(s) => {
                out.push_str(&s);
                if raw.ends_with('\n') {
                    out.push('\n');
                }
            }
            Err(_) => out.push_str(raw),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test's own function, symbolized from the test binary's file as the tracer would find it.
    #[inline(never)]
    fn marker() -> usize {
        marker as *const () as usize
    }

    #[test]
    fn a_frame_of_this_binary_reads_as_its_function_file_and_line() {
        let ip = marker();
        let mut info = libc::Dl_info {
            dli_fname: std::ptr::null(),
            dli_fbase: std::ptr::null_mut(),
            dli_sname: std::ptr::null(),
            dli_saddr: std::ptr::null_mut(),
        };
        // SAFETY: `info` is a valid place for dladdr's answer; dladdr only reads the loader's tables.
        assert_ne!(unsafe { libc::dladdr(ip as *const libc::c_void, &mut info) }, 0);
        let exe = std::fs::read_link("/proc/self/exe").unwrap().display().to_string();
        let offset = (ip - info.dli_fbase as usize) as u64;
        let location = Line::Location {
            tid: 1,
            corr: 2,
            gil: async_lab_core::trace::format::Gil::NoPython,
            python: vec![],
            native: vec![
                NativeFrame { module: exe, offset, function: None, file: None, line: None },
                NativeFrame { module: "/no/such/file.so".into(), offset: 16, function: None, file: None, line: None },
            ],
            took_ns: None,
            others: Vec::new(),
        };
        let other = "{\"type\":\"end\",\"t\":5}\n";
        let text = format!("{}\n{other}", serde_json::to_string(&location).unwrap());
        let done = super::text(&text);
        let mut lines = done.lines();
        let Line::Location { native, .. } = serde_json::from_str(lines.next().unwrap()).unwrap() else { panic!() };
        let function = native[0].function.clone().unwrap();
        assert!(function.contains("symbolize::tests::marker"), "{function}");
        assert!(native[0].file.as_deref().unwrap_or("").ends_with("symbolize.rs"), "{:?}", native[0]);
        assert!(native[0].line.is_some());
        assert_eq!(native[1].function, None);
        assert_eq!(format!("{}\n", lines.next().unwrap()), other);
    }
}

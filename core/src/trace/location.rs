//! Where in the program each call was made: the trace's code locations (`Line::Location`, by correlation id)
//! and NVTX ranges (`Line::Nvtx`, by thread and time) joined to its calls, and each call's *innermost user
//! frame*, the line a user would change:
//! 1. the innermost Python frame outside the installed packages and the interpreter's own library
//!    (`site-packages`, `dist-packages`, `lib/pythonX.Y`, `<frozen ...>`); where every frame is inside them,
//!    the innermost Python frame;
//! 2. else the innermost native frame with a source file outside system and library paths;
//! 3. else the innermost NVTX range on the call's thread that contains its start;
//! 4. else the API function's name.
//!
//! A location is shown as `file:line function`: the source text is not in the trace. Paths inside an
//! installed package are shown from the package's folder (`torch/nn/modules/module.py`); others as the
//! program gave them.

use super::format::{Line, NativeFrame, ProcessTrace, PyFrame};
use super::scene::Call;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Which kind of frame a location is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A Python frame.
    Python,
    /// A native frame with its source file.
    Native,
    /// An NVTX range the call was made in.
    Nvtx,
    /// Nothing better known: the API function's name.
    Api,
}

/// A call's innermost user frame.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct Place {
    pub kind: Kind,
    /// For people and for grouping: `train.py:41 forward`, `nvtx: backward`, `cudaMemcpy`.
    pub words: String,
}

/// One NVTX range.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    pub start: i64,
    pub end: i64,
    pub name: String,
    pub domain: Option<String>,
}

/// What the trace says of where one call was made.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frames<'a> {
    /// Innermost first.
    pub python: &'a [PyFrame],
    /// Innermost first.
    pub native: &'a [NativeFrame],
    /// The NVTX ranges holding its start, innermost first.
    pub nvtx: Vec<&'a Range>,
}

/// The code locations and NVTX ranges of one process's section.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Locations {
    by_corr: HashMap<u32, (Vec<PyFrame>, Vec<NativeFrame>)>,
    /// Per thread, in the order they began.
    nvtx: HashMap<u64, Vec<Range>>,
}

impl Locations {
    /// Reads them off a process's lines.
    pub fn of(p: &ProcessTrace) -> Locations {
        let mut l = Locations::default();
        for line in &p.lines {
            match line {
                Line::Location { corr, python, native, .. } => {
                    l.by_corr.insert(*corr, (python.clone(), native.clone()));
                }
                Line::Nvtx { tid, start, end, name, domain } => l.nvtx.entry(*tid).or_default().push(Range {
                    start: *start as i64,
                    end: *end as i64,
                    name: name.clone(),
                    domain: domain.clone(),
                }),
                _ => {}
            }
        }
        for ranges in l.nvtx.values_mut() {
            ranges.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
        }
        l
    }

    /// The NVTX ranges of thread `tid`, in the order they began.
    pub fn ranges(&self, tid: u64) -> &[Range] {
        self.nvtx.get(&tid).map_or(&[], Vec::as_slice)
    }

    /// Everything known of where `call` was made (its own correlation id's location, or a driver call's inside
    /// it).
    pub fn frames(&self, call: &Call) -> Frames<'_> {
        let (python, native) = call
            .corrs
            .iter()
            .find_map(|c| self.by_corr.get(c))
            .map_or((&[][..], &[][..]), |(p, n)| (p.as_slice(), n.as_slice()));
        let t = call.span.start;
        let mut nvtx: Vec<&Range> = self.ranges(call.tid).iter().filter(|r| r.start <= t && t <= r.end).collect();
        // Innermost first: the one that began last (the shortest, where two began together).
        nvtx.sort_by_key(|r| (std::cmp::Reverse(r.start), r.end));
        Frames { python, native, nvtx }
    }

    /// The call's innermost user frame (the order is in the module's doc).
    pub fn place(&self, call: &Call) -> Place {
        let f = self.frames(call);
        if let Some(py) = f.python.iter().find(|fr| !library_python(&fr.file)).or(f.python.first()) {
            return Place {
                kind: Kind::Python,
                words: format!("{}:{} {}", short_path(&py.file), py.line, py.function),
            };
        }
        let user_native = f.native.iter().filter(|fr| !library_module(&fr.module)).find_map(|fr| {
            let file = fr.file.as_deref().filter(|file| !library_native(file))?;
            let mut w = match fr.line {
                Some(line) => format!("{}:{line}", short_path(file)),
                None => short_path(file).to_owned(),
            };
            if let Some(function) = &fr.function {
                w.push(' ');
                w.push_str(function);
            }
            Some(w)
        });
        if let Some(words) = user_native {
            return Place { kind: Kind::Native, words };
        }
        // A range without a name (a library's, named by a registered string the trace does not hold) says
        // nothing of where the call was made: the innermost named one.
        if let Some(r) = f.nvtx.iter().find(|r| !r.name.is_empty()) {
            return Place { kind: Kind::Nvtx, words: format!("nvtx: {}", r.name) };
        }
        Place { kind: Kind::Api, words: call.name.clone() }
    }
}

/// Where an installed package's folder ends in a path: after `site-packages/` or `dist-packages/`.
fn package_relative(path: &str) -> Option<&str> {
    ["site-packages/", "dist-packages/"].iter().find_map(|dir| path.rfind(dir).map(|at| &path[at + dir.len()..]))
}

/// A path as shown: from its package's folder where it is in one; a program's own file by its name
/// (`train.py`: Python gives a script's absolute path, which says where the machine keeps it, not where in
/// the program it is); else as given.
pub fn short_path(path: &str) -> &str {
    package_relative(path).unwrap_or_else(|| {
        if path.starts_with('/') {
            path.rsplit('/').next().unwrap_or(path)
        } else {
            path
        }
    })
}

/// A demangled function's name without its parameter list (`at::native::empty_cuda(c10::ArrayRef<long>, ...)`
/// reads `at::native::empty_cuda`); a `(` inside the name itself (`(anonymous namespace)`) stays.
pub fn without_parameters(function: &str) -> &str {
    let body = function.strip_suffix(" const").unwrap_or(function);
    if !body.ends_with(')') {
        return function;
    }
    let mut depth = 0usize;
    for (k, ch) in body.char_indices().rev() {
        match ch {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return &body[..k];
                }
            }
            _ => {}
        }
    }
    function
}

/// A Python file of an installed package or of the interpreter's own library.
pub fn library_python(file: &str) -> bool {
    if package_relative(file).is_some() || file.starts_with('<') {
        return true;
    }
    // The standard library: `.../lib/python3.11/threading.py` (and `lib64`).
    file.split('/').collect::<Vec<_>>().windows(2).any(|w| {
        (w[0] == "lib" || w[0] == "lib64")
            && w[1].strip_prefix("python").is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// A loaded file of the system or of an installed package (a Python package's extension, CUDA's own
/// libraries) rather than the program's: its frames are not the program's own, whatever their source files
/// are called (CuPy's Cython sources are `cupy_backends/cuda/api/runtime.cpp`).
pub fn library_module(module: &str) -> bool {
    const SYSTEM: [&str; 4] = ["/usr/", "/lib/", "/lib64/", "/opt/"];
    SYSTEM.iter().any(|dir| module.starts_with(dir)) || package_relative(module).is_some()
}

/// A native source file of the system, a toolchain or a library rather than the program's own.
pub fn library_native(file: &str) -> bool {
    const SYSTEM: [&str; 6] = ["/usr/", "/lib/", "/lib64/", "/opt/", "/rustc/", "/build/"];
    SYSTEM.iter().any(|dir| file.starts_with(dir))
        || package_relative(file).is_some()
        || file.contains("/.cargo/registry/")
        || file.contains("/.rustup/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_paths_are_told_from_the_programs_own() {
        assert!(library_python("/venv/lib/python3.11/site-packages/torch/_tensor.py"));
        assert!(library_python("/usr/lib/python3.10/threading.py"));
        assert!(library_python("<frozen runpy>"));
        assert!(!library_python("train.py"));
        assert!(!library_python("/home/me/lib/train.py"));
        assert_eq!(short_path("/venv/lib/python3.11/site-packages/torch/_tensor.py"), "torch/_tensor.py");
        assert_eq!(short_path("/home/me/work/train.py"), "train.py");
        assert_eq!(
            without_parameters("at::native::empty_cuda(c10::ArrayRef<long>, std::optional<bool>)"),
            "at::native::empty_cuda"
        );
        assert_eq!(
            without_parameters("c10::cuda::(anonymous namespace)::initGlobalStreamState()"),
            "c10::cuda::(anonymous namespace)::initGlobalStreamState"
        );
        assert_eq!(without_parameters("f(int (*)(int)) const"), "f");
        assert_eq!(without_parameters("main"), "main");
        assert_eq!(short_path("models/train.py"), "models/train.py");
        assert_eq!(short_path("./train.py"), "./train.py");
        assert!(library_native("/usr/include/c++/13/bits/vector.tcc"));
        assert!(!library_native("/home/me/app/main.cu"));
        assert!(library_module("/venv/lib/python3.12/site-packages/cupy_backends/cuda/api/runtime.so"));
        assert!(library_module("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
        assert!(!library_module("/home/me/app/main"));
    }
}

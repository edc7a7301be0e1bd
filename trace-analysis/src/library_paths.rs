//! Which files are a library's and which the program's own, by their paths (the rule the analysis places calls
//! by, and the injection library's Python walker stops at), and paths and names as shown: a file inside an
//! installed package from the package's folder, a program's own by its name, a demangled function without its
//! parameters.

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
    package_relative(file).is_some() || file.starts_with('<') || in_python_lib(file)
}

/// A Python file of the interpreter's own library (`.../lib/python3.11/threading.py`), not of a package
/// installed there.
pub fn standard_library(file: &str) -> bool {
    package_relative(file).is_none() && in_python_lib(file)
}

/// A file under a `lib/pythonX.Y` (or `lib64`) folder.
fn in_python_lib(file: &str) -> bool {
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

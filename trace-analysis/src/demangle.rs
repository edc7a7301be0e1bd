//! Kernel names as people write them: a trace holds the names CUPTI gives, mangled by the compiler that
//! built the kernel (`_ZN2at6native29vectorized_elementwise_kernel...` from nvcc, `_RNv...` or
//! `_ZN...17h<hash>E` from rustc). [`kernel`] demangles them (with `cpp_demangle` and `rustc-demangle`), and
//! drops what a table cannot hold: the parameter list, the return type, long template arguments. A trace's
//! JSON keeps the mangled name.

/// How long a kernel's name may be in words before its template arguments are cut.
const LONGEST: usize = 72;

/// The kernel's name, demangled and shortened ("at::native::vectorized_elementwise_kernel<…>"); a name that
/// is not mangled comes back as it is, without a parameter list.
pub fn kernel(name: &str) -> String {
    match demangled(name) {
        // Demangled without its parameters: a `(` left is a name's own (`(anonymous namespace)`).
        Some(full) => shorten(&full),
        None => shorten(top_level(name, '(').map_or(name, |k| &name[..k])),
    }
}

/// The whole demangled name, where `name` is mangled.
pub fn demangled(name: &str) -> Option<String> {
    if name.starts_with("_R") || (name.starts_with("_ZN") && name.contains("17h") && name.ends_with('E')) {
        if let Ok(d) = rustc_demangle::try_demangle(name) {
            // `{:#}` leaves out the hash.
            return Some(format!("{d:#}"));
        }
    }
    if name.starts_with("_Z") {
        let symbol = cpp_demangle::Symbol::new(name).ok()?;
        let options = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
        return symbol.demangle_with_options(&options).ok();
    }
    None
}

/// Without a leading return type or (past [`LONGEST`]) template arguments.
fn shorten(full: &str) -> String {
    let s = full.trim();
    let s = s.strip_prefix("void ").unwrap_or(s);
    if s.chars().count() <= LONGEST {
        return s.to_owned();
    }
    // Cut each top-level template argument list to `<…>`.
    let mut out = String::new();
    let mut depth = 0usize;
    for ch in s.chars() {
        match ch {
            '<' => {
                if depth == 0 {
                    out.push_str("<…>");
                }
                depth += 1;
            }
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(ch),
            _ => {}
        }
    }
    out
}

/// Where `ch` first appears outside template brackets.
fn top_level(s: &str, ch: char) -> Option<usize> {
    let mut depth = 0usize;
    for (k, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            c if c == ch && depth == 0 => return Some(k),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pytorch_kernel_reads_as_its_cpp_name() {
        // A kernel `spin_kernel(long)` in an anonymous namespace inside `at::cuda`, as nvcc mangles it.
        let name = "_ZN2at4cuda12_GLOBAL__N_111spin_kernelEl";
        let k = kernel(name);
        assert!(k.ends_with("spin_kernel"), "{k}");
        assert!(k.starts_with("at::cuda::"), "{k}");
    }

    #[test]
    fn long_templates_are_cut_and_plain_names_kept() {
        let name = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";
        let k = kernel(name);
        assert!(k.starts_with("at::native::vectorized_elementwise_kernel<"), "{k}");
        assert!(!k.contains('('), "{k}");
        assert_eq!(kernel("spin"), "spin");
        assert_eq!(kernel("spin(long)"), "spin");
        assert_eq!(kernel("_Znot a name"), "_Znot a name");
    }

    #[test]
    fn a_rust_kernel_loses_its_hash() {
        assert_eq!(kernel("_ZN11async_lab_k4spin17h0123456789abcdefE"), "async_lab_k::spin");
    }
}

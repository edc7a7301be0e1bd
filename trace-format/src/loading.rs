//! The one list of functions that load code or create a context, by the prefixes of their names (a name's
//! versions and variants, `cuModuleLoadData`, `cuLibraryLoadFromFile`, `cuCtxCreate_v4`, share its prefix).
//!
//! Two questions read it: whether a call loaded a module at run time (its own call, not a lazy load at a first
//! use: the trace's classes), and whether a call may be start-up (it loads or creates: the start-up table and
//! the bounded trace, which keeps every such call).

/// Functions that load a module or a library (their own call: a lazy load at a first use is another matter).
const MODULE_LOADING: [&str; 4] = ["cuModuleLoad", "cuLibraryLoad", "cudaLibraryLoad", "cuLinkComplete"];

/// Functions that initialize the driver or create a context.
const CREATING: [&str; 3] = ["cuInit", "cuCtxCreate", "cuDevicePrimaryCtxRetain"];

/// Whether a function of this name loads a module or a library.
pub fn loads_module(name: &str) -> bool {
    MODULE_LOADING.iter().any(|prefix| name.starts_with(prefix))
}

/// Whether a function of this name loads or creates: a module or library loaded, the driver initialized, a
/// context created.
pub fn loads_or_creates(name: &str) -> bool {
    loads_module(name) || CREATING.iter().any(|prefix| name.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_variants_share_their_prefix() {
        assert!(loads_module("cuModuleLoadData"));
        assert!(loads_module("cuLibraryLoadFromFile"));
        assert!(loads_module("cudaLibraryLoadData"));
        assert!(!loads_module("cuModuleGetFunction"));
        assert!(!loads_module("cuCtxCreate_v4"));
        assert!(loads_or_creates("cuCtxCreate_v4"));
        assert!(loads_or_creates("cuModuleLoad"));
        assert!(!loads_or_creates("cuLaunchKernel"));
    }
}

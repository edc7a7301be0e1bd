//! The kernels' PTX embedded in the binary at build time (`build.rs` copies what `cargo xtask build-ptx` made),
//! or a file given with `--ptx`.

use async_lab_driver::ptx::Ptx;
use std::path::Path;

/// Built by `cargo xtask build-ptx`, copied in by `build.rs`.
static EMBEDDED: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// The PTX embedded in this binary.
pub fn embedded() -> anyhow::Result<Ptx> {
    Ptx::checked(EMBEDDED.to_owned(), "the PTX embedded in async-lab".into())
}

/// The embedded PTX unless `path` is given.
pub fn load(path: Option<&Path>) -> anyhow::Result<Ptx> {
    match path {
        Some(p) => Ptx::from_file(p),
        None => embedded(),
    }
}

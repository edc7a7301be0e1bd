//! The kernels' PTX, checked before use: a module that lacks a kernel the host launches, or whose kernel takes
//! other parameters, is refused up front. (The copy embedded in the binary is `async_lab::embedded_ptx`.)

use anyhow::{bail, Context as _};
use async_lab_ptx::Module;
use std::path::Path;

/// PTX text and where it came from (for error messages and recordings).
#[derive(Clone, Debug)]
pub struct Ptx {
    text: String,
    origin: String,
}

impl Ptx {
    /// PTX read from `path`.
    pub fn from_file(path: &Path) -> anyhow::Result<Ptx> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read the PTX file {}", path.display()))?;
        Self::checked(text, format!("PTX file {}", path.display()))
    }

    /// PTX `text`, checked; `origin` says where it came from.
    pub fn checked(text: String, origin: String) -> anyhow::Result<Ptx> {
        if !text.contains(".version") || !text.contains(".target") {
            bail!("{origin} is not PTX (no `.version`/`.target` directive); rebuild it with `cargo xtask build-ptx`");
        }
        // Every kernel the host launches, with the parameters it passes (`async_lab_ptx::KERNELS`): a module
        // that differs is refused up front, not at the first launch.
        let problems = Module::parse(&text).abi_problems();
        if !problems.is_empty() {
            bail!(
                "{origin} does not have the kernels async-lab launches: {}; rebuild it with `cargo xtask build-ptx`",
                problems.join("; ")
            );
        }
        Ok(Ptx { text, origin })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_text_that_is_not_ptx() {
        let err = Ptx::checked("hello".into(), "x".into()).unwrap_err().to_string();
        assert!(err.contains("is not PTX"), "{err}");
    }

    #[test]
    fn refuses_ptx_without_a_kernel() {
        let err = Ptx::checked(".version 7.0\n.target sm_70\n.visible .entry empty()\n".into(), "x".into())
            .unwrap_err()
            .to_string();
        assert!(err.contains("spin_sleep") && err.contains("checksum"), "{err}");
    }
}

//! The kernels' PTX: the copy embedded at build time, or a file given with `--ptx`, checked before use.

use anyhow::{bail, Context as _};
use std::path::Path;

/// Built by `cargo xtask build-ptx`, copied in by `build.rs`.
static EMBEDDED: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Every kernel the host launches; a PTX module missing one is refused up front.
pub const ENTRIES: [&str; 6] = ["spin_sleep", "spin_wait_ns", "empty", "fill", "checksum", "write_globaltimer"];

/// PTX text and where it came from (for error messages and recordings).
#[derive(Clone, Debug)]
pub struct Ptx {
    text: String,
    origin: String,
}

impl Ptx {
    /// The PTX embedded in this binary.
    pub fn embedded() -> anyhow::Result<Ptx> {
        Self::checked(EMBEDDED.to_owned(), "the PTX embedded in async-lab".into())
    }

    /// PTX read from `path`.
    pub fn from_file(path: &Path) -> anyhow::Result<Ptx> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read the PTX file {}", path.display()))?;
        Self::checked(text, format!("PTX file {}", path.display()))
    }

    /// The embedded PTX unless `path` is given.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Ptx> {
        match path {
            Some(p) => Self::from_file(p),
            None => Self::embedded(),
        }
    }

    fn checked(text: String, origin: String) -> anyhow::Result<Ptx> {
        if !text.contains(".version") || !text.contains(".target") {
            bail!("{origin} is not PTX (no `.version`/`.target` directive); rebuild it with `cargo xtask build-ptx`");
        }
        let found = entries(&text);
        let missing: Vec<&str> = ENTRIES.iter().copied().filter(|e| !found.iter().any(|f| f == e)).collect();
        if !missing.is_empty() {
            bail!("{origin} lacks the kernel(s) {}; rebuild it with `cargo xtask build-ptx`", missing.join(", "));
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

/// The names of the `.entry` (kernel) declarations in a PTX module.
pub fn entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix(".visible ").unwrap_or(line.trim_start());
            let rest = rest.strip_prefix(".entry")?.trim_start();
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_entries() {
        let ptx =
            ".version 7.0\n.target sm_70\n.visible .entry empty()\n{\n}\n.visible .entry fill(\n.param .u64 a\n)\n";
        assert_eq!(entries(ptx), ["empty", "fill"]);
    }

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

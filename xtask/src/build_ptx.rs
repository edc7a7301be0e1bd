//! `cargo xtask build-ptx`: compiles `gpu-kernels/` to one PTX module at `target/ptx/async_lab_kernels.ptx`.
//!
//! The kernels build on the nightly pinned in `gpu-kernels/rust-toolchain.toml`, for `nvptx64-nvidia-cuda`,
//! with `-Zbuild-std=core` (rustup cannot fetch a prebuilt `rust-std` for that target). Fat LTO merges core,
//! the helpers and the kernels, so the `.s` that rustc emits is a complete module with nothing left to link.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use xshell::{cmd, Cmd, Shell};

use async_lab_ptx::Module;

use crate::{flags, project_root, ptx_path};

/// The GPU architecture the PTX declares (`.target`); the driver JIT-compiles it for the actual GPU.
const TARGET_CPU: &str = "sm_70";

/// Variables that `cargo xtask` inherits from rustup and cargo, and that would make the nightly build use the
/// stable toolchain (`RUSTUP_TOOLCHAIN` beats `rust-toolchain.toml`), its `rustc`, or host-only flags.
const INHERITED_TOOLCHAIN_ENV: &[&str] = &[
    "RUSTUP_TOOLCHAIN",
    "RUSTUP_TOOLCHAIN_SOURCE",
    "RUST_RECURSION_COUNT",
    "CARGO",
    "RUSTC",
    "RUSTDOC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
];

impl flags::BuildPtx {
    /// Builds and checks the PTX; returns its path.
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<PathBuf> {
        let started = Instant::now();
        let channel = pinned_channel()?;
        ensure_toolchain(sh, &channel, &["rust-src"])?;

        let ptx = ptx_path();
        sh.create_dir(ptx.parent().unwrap()).context("creating target/ptx")?;
        compile(sh, &channel, &ptx)?;
        if !ptx.exists() {
            // Cargo found the kernels up to date and did not run rustc, but the PTX was deleted since: make it
            // rebuild the kernels crate (under a second; core stays built).
            clean_kernels(sh, &channel)?;
            compile(sh, &channel, &ptx)?;
        }

        let text = fs::read_to_string(&ptx).with_context(|| format!("reading {}", ptx.display()))?;
        let module = check_ptx(&text).with_context(|| format!("checking {}", ptx.display()))?;
        eprintln!(
            "built {} ({:.1} KiB, {} entries, .target {}) in {:.1} s",
            ptx.strip_prefix(project_root()).unwrap_or(&ptx).display(),
            text.len() as f64 / 1024.0,
            module.entries.len(),
            module.target,
            started.elapsed().as_secs_f64()
        );
        Ok(ptx)
    }
}

/// Runs the nightly `cargo rustc` that emits the PTX to `ptx`.
fn compile(sh: &Shell, channel: &str, ptx: &Path) -> anyhow::Result<()> {
    let _dir = sh.push_dir(project_root().join("gpu-kernels"));
    let target_dir = nvptx_target_dir();
    let emit = format!("--emit=asm={}", ptx.display());
    let target_cpu = format!("target-cpu={TARGET_CPU}");
    let build = cmd!(
        sh,
        "cargo +{channel} rustc --release --target nvptx64-nvidia-cuda -Zbuild-std=core
         --crate-type staticlib -p async-lab-kernels --target-dir {target_dir}
         -- {emit} -C {target_cpu}"
    );
    without_inherited_toolchain(build).run().context("compiling gpu-kernels to PTX")?;
    Ok(())
}

/// Removes the kernels crate's build outputs, so that the next `compile` runs rustc again.
fn clean_kernels(sh: &Shell, channel: &str) -> anyhow::Result<()> {
    let _dir = sh.push_dir(project_root().join("gpu-kernels"));
    let target_dir = nvptx_target_dir();
    let clean = cmd!(
        sh,
        "cargo +{channel} clean --release --target nvptx64-nvidia-cuda --target-dir {target_dir} -p async-lab-kernels"
    );
    without_inherited_toolchain(clean).run().context("cleaning the kernels crate to rebuild the missing PTX")?;
    Ok(())
}

/// The kernels' own target directory, so that their build never waits on the host build's lock.
fn nvptx_target_dir() -> PathBuf {
    project_root().join("target/nvptx")
}

/// Strips what rustup and cargo put into our environment, so that `cargo +{channel}` really is that toolchain.
pub(crate) fn without_inherited_toolchain(mut cmd: Cmd<'_>) -> Cmd<'_> {
    for var in INHERITED_TOOLCHAIN_ENV {
        cmd = cmd.env_remove(var);
    }
    cmd
}

/// The `channel` of `gpu-kernels/rust-toolchain.toml`.
pub(crate) fn pinned_channel() -> anyhow::Result<String> {
    let path = project_root().join("gpu-kernels/rust-toolchain.toml");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    parse_channel(&text).with_context(|| format!("no `channel = \"...\"` line in {}", path.display()))
}

fn parse_channel(toml: &str) -> Option<String> {
    toml.lines().find_map(|line| {
        let value = line.trim().strip_prefix("channel")?.trim_start().strip_prefix('=')?.trim();
        Some(value.strip_prefix('"')?.strip_suffix('"')?.to_owned())
    })
}

/// Makes sure rustup has the pinned toolchain with `components`, installing what is missing.
pub(crate) fn ensure_toolchain(sh: &Shell, channel: &str, components: &[&str]) -> anyhow::Result<()> {
    let how_to_fix = format!(
        "the kernels need the toolchain {channel} with {components}; install it with\n    \
         rustup toolchain install {channel} --profile minimal --component {components}",
        components = components.join(",")
    );
    let toolchains = cmd!(sh, "rustup toolchain list")
        .quiet()
        .read()
        .context("listing rustup's toolchains (is rustup installed?)")?;
    let installed = toolchains.lines().any(|line| {
        let name = line.split_whitespace().next().unwrap_or("");
        name == channel || name.starts_with(&format!("{channel}-"))
    });
    if !installed {
        eprintln!("the pinned toolchain {channel} is not installed; installing it");
        let components = components.join(",");
        cmd!(sh, "rustup toolchain install {channel} --profile minimal --component {components}")
            .run()
            .context(how_to_fix)?;
        return Ok(());
    }
    let have = cmd!(sh, "rustup component list --toolchain {channel} --installed")
        .quiet()
        .read()
        .with_context(|| format!("listing the components of {channel}"))?;
    let missing: Vec<&str> = components
        .iter()
        .copied()
        .filter(|component| !have.lines().any(|line| line == *component || line.starts_with(&format!("{component}-"))))
        .collect();
    if !missing.is_empty() {
        eprintln!("{channel} lacks {}; adding it", missing.join(", "));
        cmd!(sh, "rustup component add --toolchain {channel} {missing...}").run().context(how_to_fix)?;
    }
    Ok(())
}

/// What `check_ptx` found in a module.
#[derive(Debug)]
pub(crate) struct PtxModule {
    /// The `.target` directive's value, e.g. `sm_70`.
    pub(crate) target: String,
    /// `name(.u64, .u32)` for each `.entry`, in file order.
    pub(crate) entries: Vec<String>,
}

/// Checks that `text` is one complete PTX module with exactly the kernels the host expects
/// (`async_lab_ptx::KERNELS`, with the parameters the host passes).
pub(crate) fn check_ptx(text: &str) -> anyhow::Result<PtxModule> {
    let module = Module::parse(text);
    if module.versions.len() != 1 {
        bail!("expected one `.version` line (one module), found {}", module.versions.len());
    }
    let [target] = module.targets.as_slice() else {
        bail!("expected one `.target` line, found {}", module.targets.len())
    };
    if *target != TARGET_CPU {
        bail!("the module targets `{target}`, expected `{TARGET_CPU}`");
    }
    if module.address_sizes != ["64"] {
        bail!("expected `.address_size 64`");
    }
    // An `.extern .func` is a call the JIT cannot resolve: LTO did not pull everything into this module.
    if !module.externs.is_empty() {
        bail!("the module calls functions it does not define:\n    {}", module.externs.join("\n    "));
    }
    let problems = module.abi_problems();
    if !problems.is_empty() {
        bail!("the kernels differ from the list the host launches (ptx-abi/src/kernels.rs): {}", problems.join("; "));
    }
    let unknown = module.unknown_entries();
    if !unknown.is_empty() {
        bail!(
            "kernels in the PTX that the host does not know: {} (add them to ptx-abi/src/kernels.rs)",
            unknown.join(", ")
        );
    }
    Ok(PtxModule { target: target.to_string(), entries: module.entries.iter().map(|e| e.signature()).collect() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_channel() {
        let toml = "[toolchain]\n# a comment\nchannel = \"nightly-2026-05-20\"\ncomponents = [\"rust-src\"]\n";
        assert_eq!(parse_channel(toml).as_deref(), Some("nightly-2026-05-20"));
        assert_eq!(parse_channel("[toolchain]\n"), None);
    }

    #[test]
    fn rejects_a_module_that_is_not_one_whole_module() {
        let two = ".version 7.0\n.version 7.0\n.target sm_70\n.address_size 64\n";
        assert!(check_ptx(two).unwrap_err().to_string().contains("one `.version`"));
        let extern_call = ".version 7.0\n.target sm_70\n.address_size 64\n.extern .func f()\n";
        assert!(check_ptx(extern_call).unwrap_err().to_string().contains("does not define"));
    }

    #[test]
    fn rejects_a_module_without_all_kernels() {
        let ptx = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry empty()\n{\n}\n";
        let err = check_ptx(ptx).unwrap_err().to_string();
        assert!(err.contains("spin_sleep is missing") && err.contains("write_globaltimer is missing"), "{err}");
        assert!(!err.contains("empty is"), "{err}");
    }
}

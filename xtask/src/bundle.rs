//! `cargo xtask bundle [--out DIR]`: the release `async-lab`, the kernels' PTX, the trace's injection library
//! (`libasync_lab_inject.so`, found beside the binary by `async-lab trace`) and a `run.sh` in one directory
//! (default `target/bundle`), to copy to a GPU machine and run there with `./run.sh ARGS`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::Context;
use xshell::{cmd, Shell};

use crate::{flags, host_target_dir, project_root, user_path};

/// The launcher script: finds the driver library (or falls back to the bundled stand-in, so that replays work
/// anywhere) and starts async-lab with the PTX beside it.
pub(crate) const RUN_SH: &str = include_str!("bundle_run.sh");

impl flags::Bundle {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let out = match &self.out {
            Some(dir) => user_path(dir)?,
            None => project_root().join("target/bundle"),
        };
        let ptx = flags::BuildPtx.run(sh)?;
        cmd!(sh, "cargo build --release -p async-lab -p async-lab-trace-inject")
            .run()
            .context("building async-lab and its injection library (release)")?;
        let bin = host_target_dir().join("release/async-lab");

        sh.create_dir(&out).with_context(|| format!("creating {}", out.display()))?;
        let copy = |from: &Path, name: &str| -> anyhow::Result<u64> {
            let to = out.join(name);
            fs::copy(from, &to).with_context(|| format!("copying {} to {}", from.display(), to.display()))
        };
        let mut size = copy(&bin, "async-lab")?;
        size += copy(&ptx, "async_lab_kernels.ptx")?;
        size += copy(&host_target_dir().join("release/libasync_lab_inject.so"), "libasync_lab_inject.so")?;
        // The stand-in driver library the build made: run.sh starts async-lab on it where there is no driver.
        let stub = stub("release")?;
        sh.create_dir(out.join("no-driver")).context("creating no-driver/")?;
        size += copy(&stub, "no-driver/libcuda.so.1")?;
        let run_sh = out.join("run.sh");
        fs::write(&run_sh, RUN_SH).with_context(|| format!("writing {}", run_sh.display()))?;
        fs::set_permissions(&run_sh, fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", run_sh.display()))?;
        size += RUN_SH.len() as u64;

        eprintln!(
            "bundle: {} ({:.1} MiB: async-lab, async_lab_kernels.ptx, libasync_lab_inject.so, run.sh, no-driver/); run it with {}/run.sh",
            out.display(),
            size as f64 / (1024.0 * 1024.0),
            out.display()
        );
        Ok(())
    }
}

/// The stub `libcuda.so.1` of the newest `profile` (`release`, `debug`) build of async-lab (`driver/build.rs`
/// makes it in the OUT_DIR of `async-lab-driver`).
pub(crate) fn stub(profile: &str) -> anyhow::Result<std::path::PathBuf> {
    let build = host_target_dir().join(profile).join("build");
    let mut found: Vec<(std::time::SystemTime, std::path::PathBuf)> = fs::read_dir(&build)
        .with_context(|| format!("listing {}", build.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("async-lab-"))
        .map(|e| e.path().join("out/cuda-stub/libcuda.so.1"))
        .filter_map(|p| Some((fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p).with_context(|| format!("no cuda-stub/libcuda.so.1 under {}", build.display()))
}

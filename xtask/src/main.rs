//! The project's tasks, in Rust instead of shell scripts: build the kernels' PTX, run the host program, run
//! every check that CI runs, and pack a bundle for a GPU machine or a Python wheel.
//!
//! This binary is wired in through the cargo alias in `.cargo/config.toml` (`cargo xtask <task>`, see
//! `cargo xtask help`). It always works from the repository root, runs every external program through
//! `xshell::cmd!` (which echoes it), and adds a line of context to each step that can fail.

mod build_ptx;
mod bundle;
#[cfg(test)]
mod citations;
mod class_changes;
mod flags;
#[cfg(test)]
mod function_names;
#[cfg(test)]
mod layering;
mod run;
mod test;
#[cfg(test)]
mod tidy;
mod wheel;

use std::env;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use xshell::Shell;

fn main() -> ExitCode {
    match try_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // A program that we ran and that failed has already said why; pass its exit code on, in one line.
            if let Some(failed) = err.downcast_ref::<run::ChildFailed>() {
                eprintln!("xtask: {failed}");
                return ExitCode::from(failed.exit_code());
            }
            // Print the chain of contexts, without the backtrace that `RUST_BACKTRACE` would add.
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

fn try_main() -> anyhow::Result<()> {
    let task = flags::Task::from_env()?;
    let sh = Shell::new()?;
    sh.change_dir(project_root());
    match task {
        flags::Task::Help => {
            print!("{}", flags::HELP);
            Ok(())
        }
        flags::Task::BuildPtx(cmd) => cmd.run(&sh).map(drop),
        flags::Task::Run(cmd) => cmd.run(&sh),
        flags::Task::Test(cmd) => cmd.run(&sh),
        flags::Task::Bundle(cmd) => cmd.run(&sh),
        flags::Task::Wheel(cmd) => cmd.run(&sh),
        flags::Task::ClassChanges(cmd) => class_changes::run(&sh, &cmd.since),
    }
}

/// The repository root: the parent of this crate's directory.
fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The host workspace's target directory (`CARGO_TARGET_DIR` if set, as cargo itself does).
fn host_target_dir() -> PathBuf {
    match env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => project_root().join(dir),
        None => project_root().join("target"),
    }
}

/// Where `cargo xtask build-ptx` writes the kernels' PTX (the host's build script reads it from there).
fn ptx_path() -> PathBuf {
    project_root().join("target/ptx/async_lab_kernels.ptx")
}

/// Resolves a path given on the command line against the directory `cargo xtask` was started in.
fn user_path(path: &Path) -> anyhow::Result<PathBuf> {
    Ok(env::current_dir()?.join(path))
}

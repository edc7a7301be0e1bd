//! `cargo xtask run [-- ARGS]`: builds the PTX and the release host program, then runs `async-lab ARGS` with the
//! terminal's stdin, stdout and stderr, and exits with its exit code.

use std::fmt;
use std::path::Path;
use std::process::{Command, ExitStatus};

use anyhow::Context;
use xshell::{cmd, Shell};

use crate::{flags, host_target_dir};

impl flags::Run {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        flags::BuildPtx.run(sh)?;
        cmd!(sh, "cargo build --release -p async-lab").run().context("building async-lab (release)")?;

        let bin = host_target_dir().join("release/async-lab");
        // Not through xshell: its `run` gives the child an empty stdin. The working directory stays the one
        // `cargo xtask` was started in, so that relative paths in ARGS mean what the user meant.
        let mut child = Command::new(&bin);
        child.args(&self.args);
        eprintln!("$ {} {}", bin.display(), shell_words(&self.args));
        let status = child.status().with_context(|| format!("starting {}", bin.display()))?;
        if !status.success() {
            return Err(ChildFailed::new(&bin, status).into());
        }
        Ok(())
    }
}

/// A program that xtask handed the terminal to exited unsuccessfully; xtask exits with the same code.
#[derive(Debug)]
pub(crate) struct ChildFailed {
    program: String,
    status: ExitStatus,
}

impl ChildFailed {
    pub(crate) fn new(program: &Path, status: ExitStatus) -> ChildFailed {
        let program = program.file_name().unwrap_or(program.as_os_str()).to_string_lossy().into_owned();
        ChildFailed { program, status }
    }

    /// The child's exit code; `128 + signal` if a signal ended it, as shells report it.
    pub(crate) fn exit_code(&self) -> u8 {
        use std::os::unix::process::ExitStatusExt;
        let code = match (self.status.code(), self.status.signal()) {
            (Some(code), _) => code,
            (None, Some(signal)) => 128 + signal,
            (None, None) => 1,
        };
        // Exit codes are one byte; a failure must never wrap around to 0.
        u8::try_from(code).ok().filter(|&code| code != 0).unwrap_or(1)
    }
}

impl fmt::Display for ChildFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed ({})", self.program, self.status)
    }
}

impl std::error::Error for ChildFailed {}

/// The arguments as one line to echo, quoted where a shell would need it.
fn shell_words(args: &[std::ffi::OsString]) -> String {
    let words: Vec<String> = args
        .iter()
        .map(|arg| {
            let arg = arg.to_string_lossy();
            let plain = !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                arg.into_owned()
            } else {
                format!("'{}'", arg.replace('\'', r"'\''"))
            }
        })
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    #[test]
    fn passes_the_exit_code_on() {
        let exited = |raw| ChildFailed::new(Path::new("target/release/async-lab"), ExitStatus::from_raw(raw));
        assert_eq!(exited(3 << 8).exit_code(), 3);
        assert_eq!(exited(2).exit_code(), 130, "SIGINT");
        assert_eq!(exited(3 << 8).to_string(), "async-lab failed (exit status: 3)");
    }

    #[test]
    fn quotes_arguments_for_the_echo() {
        let args = ["--ptx", "a b.ptx", "it's"].map(std::ffi::OsString::from);
        assert_eq!(shell_words(&args), r"--ptx 'a b.ptx' 'it'\''s'");
    }
}

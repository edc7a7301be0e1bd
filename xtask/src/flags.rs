//! The command line: the tasks and their few options, parsed by hand to keep xtask's dependencies few.

use std::env;
use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{bail, Context};

pub(crate) const HELP: &str = "\
cargo xtask <task>

Tasks:
  build-ptx             build the kernels (gpu-kernels/) to target/ptx/async_lab_kernels.ptx
  run [-- ARGS]         build-ptx, build async-lab (release) and run it with ARGS
  test                  everything CI checks: formatting, PTX, stub symbols, clippy, build, tests,
                        and the HTML report loaded in headless Chromium
  bundle [--out DIR]    build-ptx, build async-lab (release), and put it, the PTX and run.sh in DIR
                        (default target/bundle), ready to copy to a GPU machine
  wheel [--debug] [--out DIR]
                        build-ptx, build async-lab (release; --debug: the debug build, stripped) and
                        pack the Python wheel async_lab-VERSION-py3-none-manylinux_2_N_x86_64.whl in DIR
                        (default target/wheels): `pip install` it for the async-lab command, the
                        in-program gate and the pytest plugin (docs/python.md)
  class-changes --since REV
                        the recordings' classes at git revision REV beside today's (from the replay
                        snapshots): a Markdown table of what changed and why
  help                  this text
";

pub(crate) enum Task {
    Help,
    BuildPtx(BuildPtx),
    Run(Run),
    Test(Test),
    Bundle(Bundle),
    Wheel(Wheel),
    ClassChanges(ClassChanges),
}

/// `cargo xtask class-changes --since REV`
pub(crate) struct ClassChanges {
    pub(crate) since: String,
}

/// `cargo xtask build-ptx`
pub(crate) struct BuildPtx;

/// `cargo xtask run [-- ARGS]`
pub(crate) struct Run {
    /// Passed to `async-lab` unchanged.
    pub(crate) args: Vec<OsString>,
}

/// `cargo xtask test`
pub(crate) struct Test;

/// `cargo xtask bundle [--out DIR]`
pub(crate) struct Bundle {
    /// As given on the command line: relative to the directory `cargo xtask` was started in.
    pub(crate) out: Option<PathBuf>,
}

/// `cargo xtask wheel [--debug] [--out DIR]`
pub(crate) struct Wheel {
    /// Pack the debug build (what `cargo xtask test` has built) instead of building the release one.
    pub(crate) debug: bool,
    /// As given on the command line: relative to the directory `cargo xtask` was started in.
    pub(crate) out: Option<PathBuf>,
}

impl Task {
    pub(crate) fn from_env() -> anyhow::Result<Task> {
        Task::parse(env::args_os().skip(1).collect())
    }

    fn parse(args: Vec<OsString>) -> anyhow::Result<Task> {
        let mut args = args.into_iter();
        let Some(task) = args.next() else {
            return Ok(Task::Help);
        };
        let task = task.to_str().context("the task name is not UTF-8")?.to_owned();
        let rest: Vec<OsString> = args.collect();
        let no_options = |task: Task| match rest.first() {
            None => Ok(task),
            Some(arg) => bail!("unexpected argument {arg:?} for `{}`; see `cargo xtask help`", task_name(&task)),
        };
        match task.as_str() {
            "help" | "--help" | "-h" => Ok(Task::Help),
            "build-ptx" => no_options(Task::BuildPtx(BuildPtx)),
            "test" => no_options(Task::Test(Test)),
            "run" => {
                // `cargo xtask run -- ARGS`: everything after `--` belongs to async-lab.
                let mut args = rest;
                if args.first().is_some_and(|arg| arg == "--") {
                    args.remove(0);
                }
                Ok(Task::Run(Run { args }))
            }
            "bundle" => {
                let mut out = None;
                let mut rest = rest.into_iter();
                while let Some(arg) = rest.next() {
                    if arg == "--out" {
                        out = Some(PathBuf::from(rest.next().context("`--out` needs a directory")?));
                    } else if let Some(dir) = arg.to_str().and_then(|a| a.strip_prefix("--out=")) {
                        out = Some(PathBuf::from(dir));
                    } else {
                        bail!("unexpected argument {arg:?} for `bundle`; see `cargo xtask help`");
                    }
                }
                Ok(Task::Bundle(Bundle { out }))
            }
            "wheel" => {
                let (mut debug, mut out) = (false, None);
                let mut rest = rest.into_iter();
                while let Some(arg) = rest.next() {
                    if arg == "--debug" {
                        debug = true;
                    } else if arg == "--out" {
                        out = Some(PathBuf::from(rest.next().context("`--out` needs a directory")?));
                    } else if let Some(dir) = arg.to_str().and_then(|a| a.strip_prefix("--out=")) {
                        out = Some(PathBuf::from(dir));
                    } else {
                        bail!("unexpected argument {arg:?} for `wheel`; see `cargo xtask help`");
                    }
                }
                Ok(Task::Wheel(Wheel { debug, out }))
            }
            "class-changes" => match rest.as_slice() {
                [flag, rev] if flag == "--since" => {
                    Ok(Task::ClassChanges(ClassChanges { since: rev.to_str().context("REV is not UTF-8")?.to_owned() }))
                }
                _ => bail!("`class-changes` needs `--since REV` (a git revision); see `cargo xtask help`"),
            },
            other => bail!("unknown task `{other}`; see `cargo xtask help`"),
        }
    }
}

fn task_name(task: &Task) -> &'static str {
    match task {
        Task::Help => "help",
        Task::BuildPtx(_) => "build-ptx",
        Task::Run(_) => "run",
        Task::Test(_) => "test",
        Task::Bundle(_) => "bundle",
        Task::Wheel(_) => "wheel",
        Task::ClassChanges(_) => "class-changes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<Task> {
        Task::parse(args.iter().map(OsString::from).collect())
    }

    #[test]
    fn run_passes_everything_after_the_separator() {
        let Ok(Task::Run(run)) = parse(&["run", "--", "--list", "--"]) else { panic!("not a run task") };
        assert_eq!(run.args, ["--list", "--"]);
    }

    #[test]
    fn bundle_takes_an_output_directory() {
        let Ok(Task::Bundle(bundle)) = parse(&["bundle", "--out", "/tmp/b"]) else { panic!("not a bundle task") };
        assert_eq!(bundle.out, Some(PathBuf::from("/tmp/b")));
        assert!(parse(&["bundle", "--out"]).is_err());
        assert!(parse(&["test", "--nope"]).is_err());
        assert!(parse(&["nope"]).is_err());
    }

    #[test]
    fn wheel_takes_debug_and_an_output_directory() {
        let Ok(Task::Wheel(wheel)) = parse(&["wheel", "--debug", "--out=/tmp/w"]) else { panic!("not a wheel task") };
        assert!(wheel.debug);
        assert_eq!(wheel.out, Some(PathBuf::from("/tmp/w")));
        let Ok(Task::Wheel(wheel)) = parse(&["wheel"]) else { panic!("not a wheel task") };
        assert!(!wheel.debug && wheel.out.is_none());
        assert!(parse(&["wheel", "--release"]).is_err());
    }
}

//! What the binary prints on its standard output, written so that a failed write (a full disk, `> /dev/full`)
//! is one clear error and the exit status 1, never a panic. (A reader that went away, `| head`, ends the
//! process quietly by SIGPIPE: `main`.)

use anyhow::anyhow;
use std::io::Write as _;

/// Writes `text` to stdout and flushes it.
pub fn write(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| anyhow!("cannot write the output: {e}"))
}

/// `print!` through [`write`]: evaluates to its `Result`.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::write(&format!($($arg)*))
    };
}

/// `println!` through [`write`]: evaluates to its `Result`.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::stdout::write("\n")
    };
    ($($arg:tt)*) => {
        $crate::stdout::write(&format!("{}\n", format_args!($($arg)*)))
    };
}

//! Printing the way a Unix filter does: when the reader of stdout or stderr goes away
//! (`skill-factory evaluate ... | head -1`), the process ends quietly as if killed by SIGPIPE,
//! instead of panicking as `println!` does.
//!
//! SIGPIPE's default action is not simply restored at start: the process harnesses and the
//! `command` metric write task inputs into children's stdin, and a child that exits without
//! reading it must fail its rollout (EPIPE), not end the whole run. So only a broken stdout or
//! stderr ends the process, through [`end_as_if_by_sigpipe`].

use std::fmt;
use std::io::{self, Write};

/// `print!` to stdout that ends the process quietly when stdout is closed.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` to stdout that ends the process quietly when stdout is closed.
macro_rules! outln {
    () => {
        $crate::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` to stderr that ends the process quietly when stderr is closed.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {errln, out, outln};

/// Writes to stdout; a closed pipe ends the process (see the module doc), any other error is
/// reported on stderr and ends it with exit 1, since the output it was asked for is lost.
pub fn write_stdout(args: fmt::Arguments<'_>) {
    let result = {
        let mut stdout = io::stdout().lock();
        stdout.write_fmt(args).and_then(|()| stdout.flush())
    };
    if let Err(error) = result {
        if error.kind() == io::ErrorKind::BrokenPipe {
            end_as_if_by_sigpipe();
        }
        let _ = writeln!(io::stderr(), "error: cannot write to stdout: {error}");
        std::process::exit(1);
    }
}

/// Writes to stderr; a closed pipe ends the process, other errors are ignored (there is nowhere
/// left to report them).
pub fn write_stderr(args: fmt::Arguments<'_>) {
    if let Err(error) = io::stderr().lock().write_fmt(args)
        && error.kind() == io::ErrorKind::BrokenPipe
    {
        end_as_if_by_sigpipe();
    }
}

/// Ends the process the way a program that never ignored SIGPIPE ends when its reader is gone:
/// killed by the signal, silently (a shell reports status 141 only under `pipefail`).
fn end_as_if_by_sigpipe() -> ! {
    #[cfg(unix)]
    // SAFETY: `signal` and `raise` are async-signal-safe libc calls with valid arguments; the
    // process is meant to end here, so replacing the SIGPIPE disposition affects nothing else.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Reached only where SIGPIPE is blocked or does not exist: exit with the status a shell
    // shows for a process killed by it.
    std::process::exit(141)
}

//! Printing the way a Unix filter does: when the reader of stdout or stderr goes away
//! (`skill-factory evaluate ... | head -1`), the process ends quietly as if killed by SIGPIPE,
//! instead of panicking as `println!` does.
//!
//! Everything printed goes through [`printable`]: text from a dataset, a model, a child process
//! or a config reaches the terminal with its control characters escaped, so a poisoned task
//! cannot clear the screen, retitle the window or plant a link. This is the one place that
//! escapes; the tracing log writes through it too.
//!
//! SIGPIPE's default action is not simply restored at start: the process harnesses and the
//! `command` metric write task inputs into children's stdin, and a child that exits without
//! reading it must fail its rollout (EPIPE), not end the whole run. So only a broken stdout or
//! stderr ends the process, through [`end_as_if_by_sigpipe`].

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::io::{self, Write};
use std::sync::Mutex;

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

/// Text safe to print on a terminal: every control character but the line feed and the tab
/// (C0, DEL, C1) written as `\u001b`. That is also JSON's escape, so `--json` output stays
/// JSON that decodes to the same text.
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    let escaped = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The log's writer: stderr, through [`printable`] (a log line can quote a path, a URL or a
/// provider's message). A line equal to the one before it is counted instead of printed again,
/// and the count is said when another line comes or the command ends ([`flush_log`]): a
/// failure that repeats on every call is one line, not hundreds.
pub(crate) struct LogWriter;

/// The last log line written, and how many times it came again since.
struct Repeats {
    last: String,
    count: usize,
}

static REPEATS: Mutex<Repeats> = Mutex::new(Repeats {
    last: String::new(),
    count: 0,
});

impl Repeats {
    /// The line that says how often the last one repeated, if it did; resets the count.
    fn take_summary(&mut self) -> Option<String> {
        let count = std::mem::take(&mut self.count);
        (count > 0).then(|| {
            format!(
                "  (the line above came {count} more time{})\n",
                if count == 1 { "" } else { "s" }
            )
        })
    }

    /// The summary of the last line's repeats, before other output comes between it and the
    /// next log line: a line after that output is new again, however it reads.
    fn interrupt(&mut self) -> Option<String> {
        self.last.clear();
        self.take_summary()
    }

    /// What to print for the log line `text`: nothing when it repeats the last one, else the
    /// count of the last one's repeats (if any) and `text`, escaped.
    fn next(&mut self, text: &str) -> Option<String> {
        if text == self.last {
            self.count += 1;
            return None;
        }
        let mut out = self.take_summary().unwrap_or_default();
        out.push_str(&printable(text));
        self.last = text.to_string();
        Some(out)
    }
}

fn repeats() -> std::sync::MutexGuard<'static, Repeats> {
    REPEATS.lock().unwrap_or_else(|p| p.into_inner())
}

impl Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(bytes);
        // Held while writing, so a count is never printed under another thread's line.
        let mut repeats = repeats();
        if let Some(out) = repeats.next(&text) {
            io::stderr().lock().write_all(out.as_bytes())?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// Says how often the last log line repeated, if it did; called as the command ends.
pub(crate) fn flush_log() {
    if let Some(summary) = repeats().take_summary() {
        let _ = io::stderr().lock().write_all(summary.as_bytes());
    }
}

/// Writes to stdout; a closed pipe ends the process (see the module doc), any other error is
/// reported on stderr and ends it with exit 1, since the output it was asked for is lost.
pub fn write_stdout(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    let result = {
        let mut stdout = io::stdout().lock();
        stdout
            .write_all(printable(&text).as_bytes())
            .and_then(|()| stdout.flush())
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
    let mut text = args.to_string();
    let mut repeats = repeats();
    if let Some(summary) = repeats.interrupt() {
        text.insert_str(0, &summary);
    }
    if let Err(error) = io::stderr().lock().write_all(printable(&text).as_bytes())
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

#[cfg(test)]
mod tests {
    use super::{Repeats, printable};

    #[test]
    fn a_log_line_that_repeats_is_counted_once_another_comes() {
        let mut repeats = Repeats {
            last: String::new(),
            count: 0,
        };
        let warn = "WARN cache: disk full\n";
        assert_eq!(repeats.next(warn).as_deref(), Some(warn));
        assert_eq!(repeats.next(warn), None);
        assert_eq!(repeats.next(warn), None);
        assert_eq!(
            repeats.next("WARN other\n").as_deref(),
            Some("  (the line above came 2 more times)\nWARN other\n")
        );
        assert_eq!(repeats.take_summary(), None);
        repeats.next("WARN other\n");
        assert_eq!(
            repeats.take_summary().as_deref(),
            Some("  (the line above came 1 more time)\n")
        );
        // Other output between two equal lines: the count goes under its own line, and the
        // next one is printed again.
        repeats.next(warn);
        repeats.next(warn);
        assert_eq!(
            repeats.interrupt().as_deref(),
            Some("  (the line above came 1 more time)\n")
        );
        assert_eq!(repeats.next(warn).as_deref(), Some(warn));
    }

    #[test]
    fn control_characters_are_escaped_but_lines_and_tabs_kept() {
        let poisoned = "a\tb\nc\u{1b}]0;owned\u{7}\u{1b}[2J\r\u{9b}31m\u{7f}é";
        assert_eq!(
            printable(poisoned),
            "a\tb\nc\\u001b]0;owned\\u0007\\u001b[2J\\u000d\\u009b31m\\u007fé"
        );
        assert!(matches!(
            printable("plain é\n"),
            std::borrow::Cow::Borrowed(_)
        ));
        // The escape is JSON's: an escaped JSON line reads back as the same value.
        let json = serde_json::to_string(&serde_json::json!({"id": "t\u{9b}1"})).unwrap();
        let back: serde_json::Value = serde_json::from_str(&printable(&json)).unwrap();
        assert_eq!(back["id"], "t\u{9b}1");
    }
}

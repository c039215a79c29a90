//! A child asked one line at a time (a classifier's `command:` policy): started once, fed a
//! JSON line per question, read a line per answer.
//!
//! It is a child like every other: it leads its own process group, registered so that
//! [`super::kill_running_children`] ends it when Skill Factory quits, and the group is killed
//! when the [`LineChild`] is dropped. An answer has a deadline and a size limit, so a program
//! that never answers, or answers without end, is an error rather than a hang or all memory.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::Duration;

/// Why a question got no answer.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// The program could not be started.
    #[error("cannot start: {0}")]
    Start(std::io::Error),
    /// It stopped reading its input.
    #[error("stopped reading its input ({0})")]
    Write(std::io::Error),
    /// No answer within the deadline.
    #[error("gave no answer within {} s", .0.as_secs_f64())]
    Timeout(Duration),
    /// It closed its output (exited) before answering.
    #[error("exited before answering")]
    Exited,
    /// An answer longer than the limit (its start is kept for the message).
    #[error("answered more than {limit} bytes on one line (it began {start:?})")]
    TooLong {
        /// The limit.
        limit: usize,
        /// The first bytes of the answer.
        start: String,
    },
    /// Its output could not be read.
    #[error("could not be read ({0})")]
    Read(std::io::Error),
}

/// A running program asked one line at a time.
pub struct LineChild {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<Result<String, LineError>>,
}

impl LineChild {
    /// Starts `argv` (no shell) in `cwd` with stdin and stdout piped and stderr inherited;
    /// an answer line may hold at most `max_answer` bytes.
    pub fn spawn(argv: &[String], cwd: &Path, max_answer: usize) -> Result<LineChild, LineError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(LineError::Start(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "no program given",
            )));
        };
        let mut child = std::process::Command::new(program)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .map_err(LineError::Start)?;
        super::register(Some(child.id()));
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            super::kill_group(Some(child.id()));
            super::unregister(Some(child.id()));
            let _ = child.wait();
            return Err(LineError::Start(std::io::Error::other(
                "has no standard input or output",
            )));
        };
        // One answer in flight at a time: the reader waits for the next question's turn.
        let (send, answers) = sync_channel(1);
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            loop {
                let answer = read_line(&mut stdout, max_answer);
                let end = answer.is_err();
                if send.send(answer).is_err() || end {
                    return;
                }
            }
        });
        Ok(LineChild {
            child,
            stdin,
            answers,
        })
    }

    /// Writes `question` as one line and waits at most `timeout` for the answer line
    /// (without its newline). After an error the program is out of step with its questions:
    /// drop it rather than ask again.
    pub fn ask(&mut self, question: &str, timeout: Duration) -> Result<String, LineError> {
        writeln!(self.stdin, "{question}")
            .and_then(|()| self.stdin.flush())
            .map_err(LineError::Write)?;
        match self.answers.recv_timeout(timeout) {
            Ok(answer) => answer,
            Err(RecvTimeoutError::Timeout) => Err(LineError::Timeout(timeout)),
            Err(RecvTimeoutError::Disconnected) => Err(LineError::Exited),
        }
    }
}

impl Drop for LineChild {
    fn drop(&mut self) {
        super::kill_group(Some(self.child.id()));
        super::unregister(Some(self.child.id()));
        let _ = self.child.wait();
    }
}

/// The next line of `stdout` (lossy UTF-8, without its newline), at most `limit` bytes.
fn read_line(stdout: &mut impl BufRead, limit: usize) -> Result<String, LineError> {
    let mut line = Vec::new();
    let read = stdout
        .by_ref()
        .take(limit as u64 + 1)
        .read_until(b'\n', &mut line)
        .map_err(LineError::Read)?;
    if read == 0 {
        return Err(LineError::Exited);
    }
    // A last line without its newline, before the output closed, is an answer too.
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > limit {
        line.truncate(80);
        return Err(LineError::TooLong {
            limit,
            start: String::from_utf8_lossy(&line).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        ["sh", "-c", script].map(String::from).to_vec()
    }

    #[test]
    fn a_program_is_asked_line_by_line() {
        let mut child = LineChild::spawn(
            &sh("while read q; do echo \"got $q\"; done"),
            Path::new("."),
            1024,
        )
        .unwrap();
        let second = Duration::from_secs(5);
        assert_eq!(child.ask("a", second).unwrap(), "got a");
        assert_eq!(child.ask("b", second).unwrap(), "got b");
    }

    #[test]
    fn silence_an_endless_line_and_an_exit_are_errors_not_hangs() {
        let short = Duration::from_millis(300);
        let mut silent = LineChild::spawn(&sh("sleep 60"), Path::new("."), 1024).unwrap();
        assert!(matches!(silent.ask("q", short), Err(LineError::Timeout(_))));
        let mut endless =
            LineChild::spawn(&sh("read q; yes | tr -d '\\n'"), Path::new("."), 1024).unwrap();
        let error = endless.ask("q", Duration::from_secs(5)).unwrap_err();
        assert!(
            matches!(error, LineError::TooLong { ref start, .. } if start.len() == 80),
            "{error}"
        );
        let mut gone = LineChild::spawn(&sh("read q; exit 0"), Path::new("."), 1024).unwrap();
        assert!(matches!(
            gone.ask("q", Duration::from_secs(5)),
            Err(LineError::Exited)
        ));
    }

    #[test]
    fn dropping_it_kills_the_group_grandchildren_included() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!(
            "sleep 60 & echo $! > {}; read q; echo ok; wait",
            pid_file.display()
        );
        let mut child = LineChild::spawn(&sh(&script), dir.path(), 1024).unwrap();
        assert_eq!(child.ask("q", Duration::from_secs(5)).unwrap(), "ok");
        let grandchild: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        drop(child);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while super::super::is_running(grandchild) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !super::super::is_running(grandchild),
            "the grandchild outlived its policy"
        );
    }
}

//! The one way to append whole lines to a file that several writers (threads or processes)
//! share: the answer cache, the batch journal, the run folder's logs and model recordings.
//!
//! A shared file ([`Appender::open`]) takes its exclusive lock for every append, so lines of
//! two processes never interleave, and a last line left without its newline by a writer that
//! died mid-write is cut first (one that the file's `whole` test accepts gets its newline
//! instead), so new lines never glue onto it. A file with one writer ([`Appender::owned`]: a
//! run's own logs) is repaired once when opened and then costs one write per append. Either
//! way, lines the disk had no room for are cut off again, so a full disk leaves the file as
//! it was.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Whether an unterminated last line is complete (a parsable JSON value, say).
type Whole = Box<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// A file open for appending whole lines; share it between threads.
pub struct Appender {
    path: PathBuf,
    state: Mutex<State>,
    whole: Whole,
}

/// The open file, and for a file this process alone writes, the length of its whole lines.
struct State {
    file: File,
    owned_len: Option<u64>,
}

impl std::fmt::Debug for Appender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appender")
            .field("path", &self.path)
            .finish()
    }
}

impl Appender {
    /// Opens `path` for appending by several writers (threads or processes), creating it and
    /// its folder if needed. `whole` tells whether a last line found without its newline is
    /// complete.
    pub fn open(
        path: &Path,
        whole: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
    ) -> io::Result<Appender> {
        Appender::opened(path, Box::new(whole), false)
    }

    /// Opens `path` for appending by this process alone (a run folder's logs): the tail is
    /// repaired now, and every append is one write.
    pub fn owned(
        path: &Path,
        whole: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
    ) -> io::Result<Appender> {
        Appender::opened(path, Box::new(whole), true)
    }

    fn opened(path: &Path, whole: Whole, owned: bool) -> io::Result<Appender> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        let appender = Appender {
            path: path.to_path_buf(),
            state: Mutex::new(State {
                file: file.try_clone()?,
                owned_len: None,
            }),
            whole,
        };
        if owned {
            file.lock()?;
            let repaired = appender.repair_tail(&mut file);
            let _ = file.unlock();
            let newline = repaired?;
            if newline {
                file.write_all(b"\n")?;
            }
            let len = file.seek(SeekFrom::End(0))?;
            appender
                .state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .owned_len = Some(len);
        }
        Ok(appender)
    }

    /// The file appended to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `text`, whole lines each ending in a newline, in one write.
    pub fn append(&self, text: &str) -> io::Result<()> {
        // Every append leaves the file consistent, so a poisoned lock is usable.
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(len) = state.owned_len {
            let written = state.file.write_all(text.as_bytes());
            match &written {
                Ok(()) => state.owned_len = Some(len + text.len() as u64),
                Err(_) => {
                    let _ = state.file.set_len(len);
                }
            }
            return written;
        }
        let file = &mut state.file;
        file.lock()?;
        let written = self.append_shared(file, text);
        let _ = file.unlock();
        written
    }

    fn append_shared(&self, file: &mut File, text: &str) -> io::Result<()> {
        let prefix = if self.repair_tail(file)? { "\n" } else { "" };
        let before = file.seek(SeekFrom::End(0))?;
        let written = file.write_all(format!("{prefix}{text}").as_bytes());
        if written.is_err() {
            let _ = file.set_len(before);
        }
        written
    }

    /// Cuts an unterminated last line, or says it needs only its newline (true).
    fn repair_tail(&self, file: &mut File) -> io::Result<bool> {
        let len = file.seek(SeekFrom::End(0))?;
        if len == 0 {
            return Ok(false);
        }
        let mut last = [0u8];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        if last[0] == b'\n' {
            return Ok(false);
        }
        // The tail since the last newline: at most one line, read backwards in blocks.
        let mut tail = Vec::new();
        let mut position = len;
        while position > 0 {
            let step = position.min(4096);
            position -= step;
            let mut block = vec![0; step as usize];
            file.seek(SeekFrom::Start(position))?;
            file.read_exact(&mut block)?;
            block.extend_from_slice(&tail);
            tail = block;
            if let Some(newline) = tail.iter().rposition(|b| *b == b'\n') {
                tail.drain(..=newline);
                position += newline as u64 + 1;
                break;
            }
        }
        if (self.whole)(&tail) {
            return Ok(true);
        }
        tracing::warn!(path = %self.path.display(), "dropping a half-written last line");
        file.set_len(position)?;
        Ok(false)
    }
}

/// Appends `text` to the file at `path` once: [`Appender::open`], then [`Appender::append`].
pub fn append_locked(
    path: &Path,
    text: &str,
    whole: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
) -> io::Result<()> {
    Appender::open(path, whole)?.append(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(line: &[u8]) -> bool {
        serde_json::from_slice::<serde_json::Value>(line).is_ok()
    }

    /// Asserts that the file at `path` holds `text`.
    fn assert_file(path: &Path, text: &str) {
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
    }

    /// Appends `bytes` to the file at `path` without a lock or a check: a writer that died
    /// halfway through a line.
    fn tear(path: &Path, bytes: &[u8]) {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
    }

    #[test]
    fn a_torn_last_line_is_cut_and_a_complete_one_gets_its_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/log.jsonl");
        append_locked(&path, "{\"a\":1}\n", json).unwrap();
        tear(&path, b"{\"torn\":");
        append_locked(&path, "{\"b\":2}\n", json).unwrap();
        assert_file(&path, "{\"a\":1}\n{\"b\":2}\n");
        tear(&path, b"{\"c\":3}");
        append_locked(&path, "{\"d\":4}\n", json).unwrap();
        assert_file(&path, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n");
    }

    #[test]
    fn a_file_of_one_writer_is_repaired_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, "{\"a\":1}\n{\"torn\":").unwrap();
        let log = Appender::owned(&path, json).unwrap();
        log.append("{\"b\":2}\n").unwrap();
        log.append("{\"c\":3}\n").unwrap();
        assert_file(&path, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
    }

    #[test]
    fn threads_sharing_one_appender_write_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let appender =
            std::sync::Arc::new(Appender::open(&dir.path().join("log.jsonl"), json).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let appender = appender.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        appender
                            .append(&format!("{{\"t\":{t},\"i\":{i}}}\n"))
                            .unwrap();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let text = std::fs::read_to_string(appender.path()).unwrap();
        assert_eq!(text.lines().count(), 400);
        assert!(text.lines().all(|line| json(line.as_bytes())));
    }
}

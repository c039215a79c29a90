//! One command at a time changes a workspace.
//!
//! Commands that buy answers or write workspace files (`optimize`, `lab ask`, `report`,
//! `reask`, `recalibrate`, `freeze`, `import-scanner`) hold an advisory lock (`flock`) on the
//! file `lock` in the workspace for as long as they run. A second one waits for the first,
//! saying who holds it, rather than refusing: once the first is done, the second reads the
//! answers it bought from the cache and buys only what is still missing, so two runs started
//! together pay once and write each answer line once. Commands that only read (`score`,
//! `select`, `status`, `simulate`) never wait.
//!
//! The kernel releases the lock when its holder exits, killed or not, so a stale lock cannot
//! outlive a crash. The file is removed by the holder on its way out (the Python tool's
//! workspaces hold no such file); one left by a killed holder is locked again as it is.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::LabError;

/// The lock file's name inside a workspace.
pub const LOCK_FILE: &str = "lock";

/// The longest holder description read back from a lock file.
const HOLDER_BYTES: u64 = 512;

/// The lock of one workspace, held until dropped.
#[derive(Debug)]
pub struct WorkspaceLock {
    file: File,
    path: PathBuf,
}

impl WorkspaceLock {
    /// Locks the workspace `dir` (created when missing) for `command` (`lab ask`), waiting
    /// while another command holds it; `waiting` hears once, before the wait, who that is.
    pub fn acquire(
        dir: &Path,
        command: &str,
        waiting: &dyn Fn(&str),
    ) -> Result<WorkspaceLock, LabError> {
        std::fs::create_dir_all(dir).map_err(|error| LabError::io(dir, error))?;
        let path = dir.join(LOCK_FILE);
        let io = |error| LabError::io(&path, error);
        let mut told = false;
        loop {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    if !told {
                        waiting(&format!(
                            "the workspace {} is in use by another command ({}); waiting for it \
                             to finish, so that what it buys is not bought again (Ctrl-C to \
                             stop waiting)",
                            dir.display(),
                            holder(&mut file)
                        ));
                        told = true;
                    }
                    file.lock().map_err(io)?;
                }
                Err(TryLockError::Error(error)) => return Err(io(error)),
            }
            // The holder before us removes the file on its way out: a lock on a file no longer
            // at `path` guards nothing, so lock the one that is there now.
            if is_at(&file, &path) {
                let note = format!(
                    "pid {}, `{command}`, since {}",
                    std::process::id(),
                    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ")
                );
                // Only a description for whoever waits: failing to write it changes nothing.
                let _ = file
                    .set_len(0)
                    .and_then(|()| file.write_all(note.as_bytes()));
                return Ok(WorkspaceLock { file, path });
            }
        }
    }
}

impl Drop for WorkspaceLock {
    fn drop(&mut self) {
        // Removed while still held, so nobody locks this file after us believing they hold
        // the workspace: a waiter on it finds it gone and locks the next one.
        if is_at(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether `file` is the file now at `path`.
fn is_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(there)) => open.dev() == there.dev() && open.ino() == there.ino(),
        _ => false,
    }
}

/// Who holds the lock, as its holder wrote it.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = Read::by_ref(file)
        .take(HOLDER_BYTES)
        .read_to_string(&mut text);
    match text.trim() {
        "" => "another process".to_string(),
        note => note.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_second_command_waits_for_the_first_and_hears_who_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let first =
            WorkspaceLock::acquire(dir.path(), "lab ask", &|_| panic!("nothing to wait for"))
                .unwrap();
        let note = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert!(note.contains("`lab ask`"), "{note}");
        let (sent, heard) = mpsc::channel();
        let path = dir.path().to_path_buf();
        let second = std::thread::spawn(move || {
            let told = std::sync::Mutex::new(Vec::new());
            let lock = WorkspaceLock::acquire(&path, "optimize", &|note| {
                told.lock().unwrap().push(note.to_string())
            })
            .unwrap();
            sent.send(()).unwrap();
            (lock, told.into_inner().unwrap())
        });
        assert!(
            heard.recv_timeout(Duration::from_millis(300)).is_err(),
            "the second got the lock while the first held it"
        );
        drop(first);
        heard.recv_timeout(Duration::from_secs(10)).unwrap();
        let (lock, told) = second.join().unwrap();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(
            told[0].contains("in use by another command") && told[0].contains("`lab ask`"),
            "{told:?}"
        );
        let note = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert!(note.contains("`optimize`"), "{note}");
        drop(lock);
        assert!(
            !dir.path().join(LOCK_FILE).exists(),
            "the lock file was left"
        );
    }

    #[test]
    fn a_lock_file_left_behind_is_locked_again_at_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), "pid 1, `optimize`, since then").unwrap();
        let lock = WorkspaceLock::acquire(dir.path(), "lab freeze", &|note| {
            panic!("waited for a lock nobody holds: {note}")
        })
        .unwrap();
        drop(lock);
        let fresh = dir.path().join("new");
        drop(WorkspaceLock::acquire(&fresh, "lab ask", &|_| {}).unwrap());
        assert!(fresh.is_dir());
    }
}

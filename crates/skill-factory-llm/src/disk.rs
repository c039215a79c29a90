//! What to tell a user whose file could not be written, by what the operating system said:
//! every writer of the tool (run folders, lab workspaces, answer caches) gives the same fix;
//! and the one way to append whole lines to a file that several processes share.

use std::fs::{self, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The fix for a failed write, to follow the operating system's message; callers add where
/// else to write (`-o DIR`, `workspace:`).
pub fn write_hint(error: &std::io::Error) -> &'static str {
    match error.kind() {
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
            "the disk is full: free some space on it"
        }
        std::io::ErrorKind::ReadOnlyFilesystem => "the file system is read-only: write elsewhere",
        std::io::ErrorKind::PermissionDenied => {
            "you may not write there: fix the folder's permissions"
        }
        _ => "check that the folder exists and is writable",
    }
}

/// Appends whole lines to the JSONL file at `path` under an exclusive lock, creating it and
/// its folder if needed. A last line left without its newline by a process that died
/// mid-write is cut first (one that `whole` accepts gets its newline instead), so the new
/// lines never glue onto it; and lines the disk had no room for are cut off again, so a full
/// disk leaves the file as it was. The answer cache and the batch journal append this way.
pub fn append_locked(
    path: &Path,
    text: &str,
    whole: impl Fn(&[u8]) -> bool,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    file.lock()?;
    let len = file.seek(SeekFrom::End(0))?;
    let mut prefix = "";
    if len > 0 {
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
        if !tail.is_empty() {
            if whole(&tail) {
                prefix = "\n";
            } else {
                tracing::warn!(path = %path.display(), "dropping a half-written last line");
                file.set_len(position)?;
            }
        }
    }
    let before = file.seek(SeekFrom::End(0))?;
    let written = file.write_all(format!("{prefix}{text}").as_bytes());
    if written.is_err() {
        let _ = file.set_len(before);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_failure_has_its_own_fix() {
        let hint = |kind| write_hint(&std::io::Error::from(kind));
        assert!(hint(std::io::ErrorKind::StorageFull).contains("free some space"));
        assert!(hint(std::io::ErrorKind::ReadOnlyFilesystem).contains("read-only"));
        assert!(hint(std::io::ErrorKind::PermissionDenied).contains("permissions"));
        assert!(hint(std::io::ErrorKind::NotFound).contains("exists"));
    }
}

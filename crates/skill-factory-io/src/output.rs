//! Writing a file whole: through a temporary file in the same folder, flushed to disk and
//! renamed over the target, so a reader (or a process killed mid-write) sees the old file or
//! the new one, never half of one. Run folders, gallery entries, classifier workspaces and the
//! dashboard's exports all write their files here.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `contents` to `path` atomically, creating missing parent folders. A temporary file
/// left by a failed write is removed.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    // Unique per process and per write, so concurrent writers never share a temporary.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let Some(name) = path.file_name() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file path: name the file to write",
        ));
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let written = create_new(&temporary)
        .and_then(|mut file| {
            file.write_all(contents)?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        // Litter once the write failed; it may not even exist, which changes nothing.
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Creates `path`, which must not exist: a link planted under the temporary's name is removed,
/// not written through (`O_EXCL` never follows one).
fn create_new(path: &Path) -> std::io::Result<std::fs::File> {
    let open = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
    };
    match open() {
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(path)?;
            open()
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of the entries of the folder `dir`.
    fn names_in(dir: &Path) -> Vec<std::ffi::OsString> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect()
    }

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/result.json");
        write_atomic(&path, b"first, longer").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
        assert_eq!(names_in(&dir.path().join("sub")), ["result.json"]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the file should be: the rename fails.
        let path = dir.path().join("taken");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), "kept").unwrap();
        assert!(write_atomic(&path, b"new").is_err());
        assert_eq!(names_in(dir.path()), ["taken"]);
    }

    #[test]
    fn a_link_planted_as_the_temporary_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "untouched").unwrap();
        let path = dir.path().join("result.json");
        // Every name the temporary of this process can have in this test run.
        for n in 0..1024 {
            let name = format!(".result.json.{}.{n}.tmp", std::process::id());
            std::os::unix::fs::symlink(&target, dir.path().join(name)).unwrap();
        }
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    }
}

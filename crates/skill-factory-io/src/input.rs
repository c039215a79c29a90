//! Reading a file the user named (a config, a SKILL.md, a dataset, a file of a skill folder):
//! only a regular file, only up to a size, and text only as UTF-8 with the line of the first
//! bad byte. Configs, skills, datasets and the files a skill folder carries are all opened
//! here, so `skill: /dev/zero` or a FIFO is an error naming the file instead of all memory or
//! a hang.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest file of each kind that is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// What the file is, for messages (`config`, `skill file`, `dataset`).
    pub what: &'static str,
    /// The most bytes it may hold.
    pub max_bytes: u64,
}

const MIB: u64 = 1024 * 1024;

/// The limit of a file of kind `what`: `max_bytes`.
const fn limit(what: &'static str, max_bytes: u64) -> Limit {
    Limit { what, max_bytes }
}

/// A run config: 1 MiB.
pub const CONFIG: Limit = limit("config file", MIB);
/// A SKILL.md: 1 MiB (the Agent Skills guidance is 500 lines).
pub const SKILL: Limit = limit("skill file", MIB);
/// A dataset: 256 MiB.
pub const DATASET: Limit = limit("dataset", 256 * MIB);
/// A file carried in a skill folder (`references/`, `scripts/`, ...): 16 MiB.
pub const BUNDLED_FILE: Limit = limit("skill folder file", 16 * MIB);

/// A file of a run folder the dashboard shows (`events.jsonl`, `result.json`, a candidate):
/// 64 MiB. A run folder may come from anyone, so a planted FIFO or a huge file is refused
/// instead of hanging or exhausting the server.
pub const RUN_FILE: Limit = limit("run folder file", 64 * MIB);
/// A run's `rollouts.jsonl` or `tasks.jsonl`, every rollout's whole output: 256 MiB.
pub const ROLLOUTS: Limit = limit("rollouts file", 256 * MIB);

/// Why a file the user named cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Nothing is there.
    #[error("cannot read {what} {}: no such file; check the path (a path in a config is relative to the config's folder, one on the command line to the working folder)", path.display())]
    Missing {
        /// What the file was to be.
        what: &'static str,
        /// The path.
        path: PathBuf,
    },
    /// A folder, a FIFO, a device or a socket.
    #[error("cannot read {what} {}: it is {kind}, not a regular file; give the path of a file", path.display())]
    NotAFile {
        /// What the file was to be.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// What it is instead (`a folder`, `a FIFO`, ...).
        kind: &'static str,
    },
    /// Larger than its kind's limit.
    #[error("cannot read {what} {}: it holds more than {} MiB, the most a {what} may hold; give a smaller file", path.display(), max_bytes / MIB)]
    TooLarge {
        /// What the file was to be.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The limit.
        max_bytes: u64,
    },
    /// Not UTF-8 text.
    #[error("cannot read {what} {} line {line}: the bytes there are not UTF-8 text; save the file as UTF-8", path.display())]
    NotUtf8 {
        /// What the file was to be.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The 1-based line of the first bad byte.
        line: usize,
    },
    /// The operating system refused (permissions, ...).
    #[error("cannot read {what} {}: {source}", path.display())]
    Io {
        /// What the file was to be.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
}

/// The bytes of a regular file of at most `limit.max_bytes`.
pub fn read_bytes(path: &Path, limit: Limit) -> Result<Vec<u8>, InputError> {
    let io = |source: std::io::Error| match source.kind() {
        std::io::ErrorKind::NotFound => InputError::Missing {
            what: limit.what,
            path: path.to_path_buf(),
        },
        _ => InputError::Io {
            what: limit.what,
            path: path.to_path_buf(),
            source,
        },
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if !metadata.is_file() {
        return Err(InputError::NotAFile {
            what: limit.what,
            path: path.to_path_buf(),
            kind: kind_of(&metadata),
        });
    }
    let too_large = || InputError::TooLarge {
        what: limit.what,
        path: path.to_path_buf(),
        max_bytes: limit.max_bytes,
    };
    if metadata.len() > limit.max_bytes {
        return Err(too_large());
    }
    // Read at most one byte past the limit: a file that grows while it is read is refused too.
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    File::open(path)
        .and_then(|file| file.take(limit.max_bytes + 1).read_to_end(&mut bytes))
        .map_err(io)?;
    if bytes.len() as u64 > limit.max_bytes {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The text of a regular file of at most `limit.max_bytes`, which must be UTF-8.
pub fn read_text(path: &Path, limit: Limit) -> Result<String, InputError> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|error| {
        let valid = error.utf8_error().valid_up_to();
        let line = 1 + error.as_bytes()[..valid]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        InputError::NotUtf8 {
            what: limit.what,
            path: path.to_path_buf(),
            line,
        }
    })
}

/// What a path that is not a regular file is (`a folder`, `a FIFO`, `a device`, `a
/// socket`), for a message that refuses it.
pub fn kind_of(metadata: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = metadata.file_type();
    if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_a_folder_and_a_fifo_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        for (path, kind) in [
            (Path::new("/dev/zero"), "a device"),
            (dir.path(), "a folder"),
            (fifo.as_path(), "a FIFO"),
        ] {
            let error = read_text(path, SKILL).unwrap_err();
            assert!(
                matches!(&error, InputError::NotAFile { kind: k, .. } if *k == kind),
                "{error}"
            );
            assert!(error.to_string().contains("not a regular file"), "{error}");
        }
    }

    #[test]
    fn a_file_over_its_limit_is_refused_naming_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.md");
        std::fs::write(&big, vec![b'a'; (MIB + 1) as usize]).unwrap();
        let error = read_text(&big, SKILL).unwrap_err();
        assert!(matches!(error, InputError::TooLarge { .. }), "{error}");
        assert!(error.to_string().contains("more than 1 MiB"), "{error}");
    }

    #[test]
    fn text_that_is_not_utf8_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let latin1 = dir.path().join("data.jsonl");
        std::fs::write(&latin1, b"{\"input\": \"a\"}\n{\"input\": \"caf\xe9\"}\n").unwrap();
        let error = read_text(&latin1, DATASET).unwrap_err();
        assert!(error.to_string().contains("data.jsonl line 2"), "{error}");
        assert!(
            error.to_string().contains("save the file as UTF-8"),
            "{error}"
        );
    }
}

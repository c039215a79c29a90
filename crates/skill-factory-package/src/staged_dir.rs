//! Writing a whole folder so that readers see either the old folder or the new one, never a
//! half-written mix: the files go into a hidden staging folder beside the target, which then
//! replaces the target by rename. Used by export and install.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::bundle::BundledFile;
use crate::spec;

/// A failed folder write: the path involved and what the operating system said.
#[derive(Debug)]
pub(crate) struct WriteFailure {
    pub path: PathBuf,
    pub source: std::io::Error,
}

fn failure(path: &Path) -> impl FnOnce(std::io::Error) -> WriteFailure + '_ {
    move |source| WriteFailure {
        path: path.to_path_buf(),
        source,
    }
}

/// Unique suffixes for staging folders of one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

fn sibling(target: &Path, kind: &str) -> PathBuf {
    let name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
    target.with_file_name(format!(".{name}.{kind}-{}-{unique}", std::process::id()))
}

/// Writes `files` as the folder `target`, replacing whatever is there (a folder or a link).
/// The caller decides whether replacing is allowed. Every path must already be valid
/// ([`spec::validate_file_path`]); one that is not is refused here too, so no caller can
/// write outside `target`.
pub(crate) fn write(target: &Path, files: &[BundledFile]) -> Result<(), WriteFailure> {
    for file in files {
        if file.path != "SKILL.md" && spec::validate_file_path(&file.path).is_some() {
            return Err(WriteFailure {
                path: target.join(&file.path),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "the path leaves the skill folder; refused",
                ),
            });
        }
    }
    let parent = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(failure(parent))?;
    let staging = sibling(target, "tmp");
    let result = fill(&staging, files).and_then(|()| swap(&staging, target));
    if result.is_err() {
        // Best effort: the error being returned matters more than a leftover staging folder.
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

fn fill(staging: &Path, files: &[BundledFile]) -> Result<(), WriteFailure> {
    std::fs::create_dir(staging).map_err(failure(staging))?;
    for file in files {
        let path = staging.join(&file.path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(failure(dir))?;
        }
        let mut out = std::fs::File::create(&path).map_err(failure(&path))?;
        out.write_all(&file.contents).map_err(failure(&path))?;
        if file.executable {
            make_executable(&out).map_err(failure(&path))?;
        }
        out.sync_all().map_err(failure(&path))?;
    }
    Ok(())
}

#[cfg(unix)]
fn make_executable(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn make_executable(_file: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

/// Puts `staging` in place of `target`, moving an existing target aside first and deleting
/// it only once the new folder is in place.
fn swap(staging: &Path, target: &Path) -> Result<(), WriteFailure> {
    let existing = std::fs::symlink_metadata(target).ok();
    let Some(existing) = existing else {
        return std::fs::rename(staging, target).map_err(failure(target));
    };
    let old = sibling(target, "old");
    std::fs::rename(target, &old).map_err(failure(target))?;
    if let Err(error) = std::fs::rename(staging, target) {
        // Put the old folder back so a failed replace changes nothing.
        let _ = std::fs::rename(&old, target);
        return Err(failure(target)(error));
    }
    let removed = if existing.is_dir() {
        std::fs::remove_dir_all(&old)
    } else {
        // A symbolic link (as `npx skills` installs) or a file: remove it, not what it points at.
        std::fs::remove_file(&old)
    };
    removed.map_err(failure(&old))
}

/// Whether `dir` holds exactly `files`, byte for byte. `dir` itself may be a link (as
/// `npx skills` installs); links inside it count as a difference, and are not followed.
pub(crate) fn holds_exactly(dir: &Path, files: &[BundledFile]) -> bool {
    let mut found = Vec::new();
    if !list_files(dir, "", files.len(), &mut found) || found.len() != files.len() {
        return false;
    }
    found.sort();
    let mut wanted: Vec<&BundledFile> = files.iter().collect();
    wanted.sort_by(|a, b| a.path.cmp(&b.path));
    found.iter().zip(wanted).all(|(path, file)| {
        let on_disk = dir.join(path);
        *path == file.path
            && std::fs::metadata(&on_disk)
                .is_ok_and(|metadata| crate::bundle::is_executable(&metadata) == file.executable)
            && std::fs::read(&on_disk).is_ok_and(|bytes| bytes == file.contents)
    })
}

/// The regular files below `dir`, as relative `/`-separated paths, sorted; `None` on a link, an
/// unreadable entry or more than `limit` files.
pub(crate) fn files_in(dir: &Path, limit: usize) -> Option<Vec<String>> {
    let mut found = Vec::new();
    list_files(dir, "", limit, &mut found).then(|| {
        found.sort();
        found
    })
}

/// Collects the regular files below `dir`; false on a link, an unreadable entry or more than
/// `limit` files (then they cannot match).
fn list_files(dir: &Path, prefix: &str, limit: usize, found: &mut Vec<String>) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    for entry in entries {
        let Ok(entry) = entry else { return false };
        let Ok(file_type) = entry.file_type() else {
            return false;
        };
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            return false;
        };
        let relative = format!("{prefix}{name}");
        if file_type.is_dir() {
            if !list_files(&entry.path(), &format!("{relative}/"), limit, found) {
                return false;
            }
        } else if file_type.is_file() {
            found.push(relative);
            if found.len() > limit {
                return false;
            }
        } else {
            return false;
        }
    }
    true
}

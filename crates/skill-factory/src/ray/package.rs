//! The working_dir package of one rollout's job: a zip that Ray unpacks on the node that runs
//! it, holding
//!
//! ```text
//! <the harness's cwd folder>        the project the command runs in (prompt mode, when set)
//! .skill-factory-rollout/           the rollout's temporary folder: SKILL.md, references/,
//!                                   input.txt, workspace/ (installed mode)
//!   job.py, job.json, stdin         the job's entrypoint, what it runs, the task input
//! ```
//!
//! Ray names a package by a hash of its bytes (`_ray_pkg_<hash>.zip`); every rollout's
//! package differs (its job.json names its job), so each job unpacks into a folder of its own.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;

use super::RayError;

/// Where the rollout's own files go inside the package.
pub const ROLLOUT_DIR: &str = ".skill-factory-rollout";

/// The biggest project folder shipped with every rollout.
const MAX_PROJECT_BYTES: u64 = 100 * 1024 * 1024;

/// A file to put in the package: its path inside it, its bytes and its Unix mode.
#[derive(Debug, Clone)]
pub struct Entry {
    /// `/`-separated, relative.
    pub path: String,
    /// Contents.
    pub bytes: Vec<u8>,
    /// Permission bits (Ray restores them, so scripts stay executable).
    pub mode: u32,
}

/// The files of `folder`, relative to it, leaving out `.git` and the paths in `skip` (the
/// runs folder and the cache's files, which grow with every run). A link is followed only to
/// a file: a linked folder (a virtualenv, `node_modules`, a loop) is left out.
pub fn read_project(folder: &Path, skip: &[PathBuf]) -> Result<Vec<Entry>, RayError> {
    let mut entries = Vec::new();
    let mut total = 0u64;
    let skip: Vec<PathBuf> = skip.iter().filter_map(|p| p.canonicalize().ok()).collect();
    walk(folder, folder, &skip, &mut entries, &mut total)?;
    Ok(entries)
}

fn walk(
    root: &Path,
    dir: &Path,
    skip: &[PathBuf],
    entries: &mut Vec<Entry>,
    total: &mut u64,
) -> Result<(), RayError> {
    let read = std::fs::read_dir(dir).map_err(|source| RayError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut children: Vec<_> = read.filter_map(Result::ok).collect();
    children.sort_by_key(|entry| entry.file_name());
    for child in children {
        let path = child.path();
        if child.file_name() == ".git" || path.canonicalize().is_ok_and(|real| skip.contains(&real))
        {
            continue;
        }
        let Ok(own) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if own.file_type().is_symlink() && meta.is_dir() {
            continue;
        }
        if meta.is_dir() {
            walk(root, &path, skip, entries, total)?;
        } else if meta.is_file() {
            *total += meta.len();
            if *total > MAX_PROJECT_BYTES {
                return Err(RayError::ProjectTooLarge {
                    folder: root.to_path_buf(),
                    limit_mib: MAX_PROJECT_BYTES / (1024 * 1024),
                });
            }
            let bytes = std::fs::read(&path).map_err(|source| RayError::Read {
                path: path.clone(),
                source,
            })?;
            entries.push(Entry {
                path: relative(root, &path),
                bytes,
                mode: mode_of(&meta),
            });
        }
    }
    Ok(())
}

/// The files of the rollout's temporary folder, under [`ROLLOUT_DIR`].
pub fn read_rollout(folder: &Path) -> Result<Vec<Entry>, RayError> {
    let mut entries = Vec::new();
    let mut total = 0;
    walk(folder, folder, &[], &mut entries, &mut total)?;
    for entry in &mut entries {
        entry.path = format!("{ROLLOUT_DIR}/{}", entry.path);
    }
    Ok(entries)
}

/// The zip of `entries` and its package name (`_ray_pkg_<hash>.zip`).
pub fn zip(entries: &[&Entry]) -> Result<(String, Vec<u8>), RayError> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    // A zip error as an I/O error keeps its message, so both kinds read alike.
    let fail = |e: zip::result::ZipError| RayError::Package(e.into());
    for entry in entries {
        let options = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .unix_permissions(entry.mode)
            .large_file(entry.bytes.len() as u64 >= u64::from(u32::MAX));
        writer
            .start_file(entry.path.as_str(), options)
            .map_err(fail)?;
        writer.write_all(&entry.bytes).map_err(RayError::Package)?;
    }
    let bytes = writer.finish().map_err(fail)?.into_inner();
    let digest = Sha256::digest(&bytes);
    Ok((
        format!("_ray_pkg_{}.zip", hex::encode(&digest[..16])),
        bytes,
    ))
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn mode_of(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o777
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_keeps_paths_and_modes_and_leaves_out_git_and_skipped_folders() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("agent.sh"), "echo hi\n").unwrap();
        std::fs::set_permissions(
            root.join("agent.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        for folder in [".git", "runs/x", "lib"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
            std::fs::write(root.join(folder).join("f"), "x").unwrap();
        }
        std::fs::write(root.join("cache.sqlite"), "db").unwrap();
        std::os::unix::fs::symlink(root.join("lib"), root.join("linked-folder")).unwrap();
        std::os::unix::fs::symlink(root.join("lib/f"), root.join("linked-file")).unwrap();
        let skip = [root.join("runs"), root.join("cache.sqlite")];
        let entries = read_project(root, &skip).unwrap();
        let paths: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["agent.sh", "lib/f", "linked-file"]);
        assert_eq!(entries[0].mode, 0o755);
        let (name, bytes) = zip(&entries.iter().collect::<Vec<_>>()).unwrap();
        assert!(
            name.starts_with("_ray_pkg_") && name.ends_with(".zip") && name.len() == 45,
            "{name}"
        );
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let file = archive.by_name("agent.sh").unwrap();
        assert_eq!(file.unix_mode().map(|m| m & 0o777), Some(0o755));
    }
}

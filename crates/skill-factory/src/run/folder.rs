//! The run folder: every run gets its own `<runs dir>/<UTC timestamp>/` folder, and
//! `<runs dir>/latest` (a relative symlink) points at the newest one, so a new run never
//! overwrites an older one.
//!
//! Files that are rewritten (reports, results, checkpoints) are written atomically: to a
//! temporary file in the same folder, then renamed over the old one, so a reader (or a kill)
//! never sees half a file. The append-only logs are the exception (see [`super::events`]).

use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use skill_factory_runfolder::names::LATEST;

/// A run's own folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFolder {
    /// The folder holding every run of a config.
    pub root: PathBuf,
    /// This run's folder, `<root>/<id>`.
    pub path: PathBuf,
    /// The folder's name: `YYYYMMDD-HHMMSS` in UTC, with `-2`, `-3`... when several runs
    /// start in the same second.
    pub id: String,
}

impl RunFolder {
    /// Creates a fresh folder under `root` (created too) named after `started`, and points
    /// `latest` at it.
    pub fn create(root: &Path, started: DateTime<Utc>) -> io::Result<RunFolder> {
        std::fs::create_dir_all(root)?;
        let stamp = started.format("%Y%m%d-%H%M%S").to_string();
        let mut attempt = 1;
        loop {
            let id = if attempt == 1 {
                stamp.clone()
            } else {
                format!("{stamp}-{attempt}")
            };
            let path = root.join(&id);
            // `create_dir` fails if the folder exists, so two runs starting in the same
            // second (even in two processes) never share one.
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    let folder = RunFolder {
                        root: root.to_path_buf(),
                        path,
                        id,
                    };
                    folder.point_latest()?;
                    return Ok(folder);
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => attempt += 1,
                Err(error) => return Err(error),
            }
        }
    }

    /// Points `<root>/latest` at this folder, replacing the link atomically.
    fn point_latest(&self) -> io::Result<()> {
        let link = self.root.join(LATEST);
        let temporary = self
            .root
            .join(format!(".{LATEST}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&temporary);
        #[cfg(unix)]
        std::os::unix::fs::symlink(&self.id, &temporary)?;
        #[cfg(not(unix))]
        std::fs::write(&temporary, &self.id)?;
        if let Ok(meta) = std::fs::symlink_metadata(&link)
            && !meta.file_type().is_symlink()
        {
            // A real folder named `latest` (the reference's default run folder), or a file of
            // the user's, is left alone.
            let _ = std::fs::remove_file(&temporary);
            if !meta.is_dir() {
                tracing::warn!(
                    "{} is a file, not the link to the newest run, so it was left as it is; the run is in {}",
                    link.display(),
                    self.path.display()
                );
            }
            return Ok(());
        }
        std::fs::rename(&temporary, &link)
    }

    /// A path inside the run folder.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// A path inside the run folder as a user would type it: through `<root>/latest` while
    /// that link points at this run, else [`RunFolder::file`].
    pub fn latest_file(&self, name: &str) -> PathBuf {
        let link = self.root.join(LATEST);
        match std::fs::read_link(&link) {
            Ok(target) if target == Path::new(&self.id) => link.join(name),
            _ => self.file(name),
        }
    }

    /// Writes `name` atomically.
    pub fn write(&self, name: &str, contents: &str) -> io::Result<()> {
        write_atomic(&self.file(name), contents.as_bytes())
    }
}

pub use skill_factory_io::output::write_atomic;

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn moment() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7)
            .single()
            .unwrap_or_default()
    }

    #[test]
    fn runs_in_the_same_second_get_their_own_folders_and_latest_follows() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("runs/x");
        let first = RunFolder::create(&root, moment()).unwrap();
        let second = RunFolder::create(&root, moment()).unwrap();
        assert_eq!(first.id, "20260304-050607");
        assert_eq!(second.id, "20260304-050607-2");
        assert!(first.path.is_dir() && second.path.is_dir());
        #[cfg(unix)]
        {
            let target = std::fs::read_link(root.join(LATEST)).unwrap();
            assert_eq!(target, PathBuf::from("20260304-050607-2"));
        }
        second.write("a.txt", "hello").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("latest/a.txt")).unwrap(),
            "hello"
        );
        // The newest run's files are named through `latest`, an older one's by its own folder.
        #[cfg(unix)]
        assert_eq!(second.latest_file("a.txt"), root.join("latest/a.txt"));
        assert_eq!(first.latest_file("a.txt"), first.path.join("a.txt"));
    }
}

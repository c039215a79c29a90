//! The one rule for a path that must stay inside a folder: a file a skill carries
//! (`references/a.md`), a run folder the dashboard is asked for, a file a job writes.
//!
//! [`check`] is the rule as written: not empty, not absolute, `/` separators, no `..`, `.` or
//! empty part, no control character. [`below`] joins a checked path to its folder;
//! [`resolve`] also follows symbolic links and refuses a path they lead out of the folder.

use std::fmt;
use std::path::{Path, PathBuf};

/// What is wrong with a relative path, as the end of a sentence that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// `""`.
    Empty,
    /// `/etc/passwd`, `C:\x`.
    Absolute,
    /// `a\b`.
    Backslash,
    /// `../x`, `a/../../x`.
    ClimbsOut,
    /// `a//b`, `a/./b`, `a/`.
    EmptyPart,
    /// A NUL, a newline, ...
    Control,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Problem::Empty => "is empty",
            Problem::Absolute => "is absolute",
            Problem::Backslash => "uses '\\' (a Windows separator or an escape)",
            Problem::ClimbsOut => "climbs out of its folder with '..'",
            Problem::EmptyPart => "has an empty or '.' component",
            Problem::Control => "contains a control character",
        })
    }
}

/// Checks `relative` against the rule.
pub fn check(relative: &str) -> Result<(), Problem> {
    if relative.is_empty() {
        Err(Problem::Empty)
    } else if relative.starts_with('/') || relative.as_bytes().get(1) == Some(&b':') {
        Err(Problem::Absolute)
    } else if relative.contains('\\') {
        Err(Problem::Backslash)
    } else if relative.split('/').any(|part| part == "..") {
        Err(Problem::ClimbsOut)
    } else if relative
        .split('/')
        .any(|part| part.is_empty() || part == ".")
    {
        Err(Problem::EmptyPart)
    } else if relative.chars().any(char::is_control) {
        Err(Problem::Control)
    } else {
        Ok(())
    }
}

/// `folder` joined with `relative` when it passes [`check`]; links are not looked at, for
/// paths about to be written.
pub fn below(folder: &Path, relative: &str) -> std::io::Result<PathBuf> {
    check(relative).map_err(|problem| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "the path {relative:?} {problem}: it must stay inside {}",
                folder.display()
            ),
        )
    })?;
    Ok(folder.join(relative))
}

/// Why [`resolve`] refused a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The path breaks the rule as written.
    #[error(
        "the path {path:?} {problem}: give a path relative to the folder, with '/' separators and no '..'"
    )]
    Written {
        /// The path.
        path: String,
        /// What is wrong with it.
        problem: Problem,
    },
    /// A path that leaves the folder through a symbolic link.
    #[error("the path {0:?} leads out of its folder through a symbolic link")]
    OutsideRoot(String),
    /// Nothing there.
    #[error("nothing at {0:?}")]
    Missing(String),
}

/// `relative` below `root` (which is canonical) with every symbolic link resolved, when it
/// passes [`check`], exists, and stays inside the root.
pub fn resolve(root: &Path, relative: &str) -> Result<PathBuf, Refused> {
    check(relative).map_err(|problem| Refused::Written {
        path: relative.to_string(),
        problem,
    })?;
    let resolved = root
        .join(relative)
        .canonicalize()
        .map_err(|_| Refused::Missing(relative.to_string()))?;
    if !resolved.starts_with(root) {
        return Err(Refused::OutsideRoot(relative.to_string()));
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_out_of_a_folder_is_refused_as_written() {
        assert_eq!(check("references/a.md"), Ok(()));
        for (bad, problem) in [
            ("", Problem::Empty),
            ("/etc/passwd", Problem::Absolute),
            ("C:x", Problem::Absolute),
            ("a\\..\\..", Problem::Backslash),
            ("../a.md", Problem::ClimbsOut),
            ("references/../../a.md", Problem::ClimbsOut),
            ("a/./run", Problem::EmptyPart),
            ("a//b", Problem::EmptyPart),
            ("a/", Problem::EmptyPart),
            ("a/run\0", Problem::Control),
        ] {
            assert_eq!(check(bad), Err(problem), "{bad:?}");
        }
        let error = below(Path::new("/skills/x"), "../a.md").unwrap_err();
        assert!(error.to_string().contains("climbs out"), "{error}");
    }

    #[test]
    fn a_symbolic_link_out_of_the_root_is_refused_and_one_inside_it_is_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("a/run")).unwrap();
        std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
        let root = root.canonicalize().unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("a/run"), root.join("a/latest")).unwrap();
        assert_eq!(resolve(&root, "a/run"), Ok(root.join("a/run")));
        assert_eq!(
            resolve(&root, "out"),
            Err(Refused::OutsideRoot("out".into()))
        );
        assert_eq!(resolve(&root, "a/latest"), Ok(root.join("a/run")));
        assert_eq!(
            resolve(&root, "a/none"),
            Err(Refused::Missing("a/none".into()))
        );
        // A second encoding is a name like any other: it does not climb out.
        assert_eq!(
            resolve(&root, "%2e%2e/etc"),
            Err(Refused::Missing("%2e%2e/etc".into()))
        );
    }
}

//! The one way a request names a file: a path relative to the runs root, checked before any
//! file is opened.
//!
//! Refused: an empty path, an absolute path, any `..` or `.` component, a backslash or a NUL,
//! a `%` (the router has decoded the request once, so a `%` left is a second encoding, as in
//! `%252e%252e`), and a path that leaves the root once its symbolic links are resolved.

use std::path::{Component, Path, PathBuf};

/// Why a path given by a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// No path at all.
    #[error("no path given: name a run folder relative to the runs root")]
    Empty,
    /// A path that does not stay below the root as written.
    #[error(
        "the path {0:?} is refused: give a folder relative to the runs root, without `..`, `.`, `%`, `\\` or a leading `/`"
    )]
    Traversal(String),
    /// A path that leaves the root through a symbolic link.
    #[error("the path {0:?} leads out of the runs root through a symbolic link")]
    OutsideRoot(String),
    /// Nothing there.
    #[error("nothing at {0:?} under the runs root")]
    Missing(String),
}

/// `relative` below `root` (which is canonical), with every symbolic link resolved, when it
/// stays inside the root.
pub fn resolve(root: &Path, relative: &str) -> Result<PathBuf, Refused> {
    if relative.is_empty() {
        return Err(Refused::Empty);
    }
    let traversal = || Refused::Traversal(relative.to_string());
    if relative.contains(['%', '\\', '\0']) {
        return Err(traversal());
    }
    let path = Path::new(relative);
    if !path
        .components()
        .all(|component| matches!(component, Component::Normal(_)))
        || relative.split('/').any(|part| part == ".")
    {
        return Err(traversal());
    }
    let resolved = root
        .join(path)
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
    fn only_plain_relative_paths_that_stay_in_the_root_are_accepted() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/run")).unwrap();
        assert_eq!(resolve(&root, "a/run"), Ok(root.join("a/run")));
        for bad in [
            "../etc",
            "a/../../etc",
            "/etc/passwd",
            "a/./run",
            "%2e%2e/etc",
            "%252e%252e/etc",
            "a\\..\\..",
            "a/run\0",
        ] {
            assert!(
                matches!(resolve(&root, bad), Err(Refused::Traversal(_))),
                "{bad}"
            );
        }
        assert_eq!(resolve(&root, ""), Err(Refused::Empty));
        assert_eq!(
            resolve(&root, "a/none"),
            Err(Refused::Missing("a/none".into()))
        );
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
        assert_eq!(
            resolve(&root, "out"),
            Err(Refused::OutsideRoot("out".into()))
        );
        assert_eq!(resolve(&root, "a/latest"), Ok(root.join("a/run")));
    }
}

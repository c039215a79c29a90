//! Where a command may write: a file it replaces is one of its own kind.
//!
//! A path given to `-o`/`--out` may already hold something a user cannot buy back (a dataset,
//! an answer cache, a hand-written file, a run's `result.json`). A command replaces an existing
//! file only when it recognizes it as the kind of file it writes there ([`Recognize`]), or when
//! `--force` says so. A file the command reads is never replaced, `--force` or not: the command
//! would destroy what it is computed from. A folder, a FIFO or a device is never a file to
//! write. Classifier mode's outputs and the dashboard's page export go through [`Outputs`].

use std::path::{Path, PathBuf};

use crate::input::kind_of;

/// A kind of file a command writes: how to tell one already at the path, and its name in a
/// refusal.
pub trait Recognize {
    /// Whether `bytes`, found at the path, are this kind of file.
    fn recognizes(&self, bytes: &[u8]) -> bool;
    /// What this kind is, for a refusal: "a probe set written by skill-factory".
    fn describe(&self) -> &str;
}

/// Why a command may not write where it was asked: the message names the flag, the file and
/// the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

/// The files a command reads, each with what it is ("the dataset"), and whether `--force`
/// was given: the check every output path of the command goes through.
#[derive(Debug, Clone)]
pub struct Outputs {
    inputs: Vec<(PathBuf, String)>,
    /// The command has a `--force` flag.
    has_force: bool,
    force: bool,
    /// How to get past a refusal.
    fix: String,
}

impl Outputs {
    /// The checks of a command given `force` (`--force`): an unknown file is replaced only
    /// with it.
    pub fn new(force: bool) -> Outputs {
        Outputs {
            inputs: Vec::new(),
            has_force: true,
            force,
            fix: "Give another path, or pass --force to replace it".to_string(),
        }
    }

    /// The checks of a command without `--force`, whose refusals end with `fix`.
    pub fn without_force(fix: impl Into<String>) -> Outputs {
        Outputs {
            inputs: Vec::new(),
            has_force: false,
            force: false,
            fix: fix.into(),
        }
    }

    /// Adds a file the command reads, `role` saying what it is ("the dataset").
    pub fn reads(&mut self, path: &Path, role: impl Into<String>) -> &mut Outputs {
        self.inputs.push((path.to_path_buf(), role.into()));
        self
    }

    /// Adds every file in `inputs`, each with what it is.
    pub fn reads_all(&mut self, inputs: Vec<(PathBuf, String)>) -> &mut Outputs {
        self.inputs.extend(inputs);
        self
    }

    /// Checks that the command may write `kind` at `path`, given by `flag` (`--out`, or a
    /// description such as "the workspace's report.md"): refused when it is a folder or not
    /// a regular file, one of the files the command reads, or an existing file of another
    /// kind without `--force`.
    pub fn check(&self, flag: &str, path: &Path, kind: impl Recognize) -> Result<(), Refusal> {
        let Ok(metadata) = std::fs::metadata(path) else {
            // Nothing there (or a dangling link, which the write replaces): nothing to lose.
            return Ok(());
        };
        let shown = path.display();
        if metadata.is_dir() {
            return Err(Refusal(format!(
                "{flag} {shown} is a folder: give the path of a file to write, such as {}",
                path.join("out.json").display()
            )));
        }
        if !metadata.is_file() {
            return Err(Refusal(format!(
                "{flag} {shown} is {}, not a regular file: nothing is written over it; give the \
                 path of a file",
                kind_of(&metadata)
            )));
        }
        if let Some((input, role)) = self.read_by_the_run(&metadata) {
            let fix = if self.has_force {
                "Give another path (--force does not apply to a file the command reads)"
            } else {
                &self.fix
            };
            return Err(Refusal(format!(
                "{flag} {shown} is {role} ({}), which this command reads: writing there would \
                 replace it. {fix}",
                input.display()
            )));
        }
        if self.force {
            return Ok(());
        }
        let found = crate::input::read_bytes(path, crate::input::RUN_FILE).ok();
        if found.is_some_and(|bytes| kind.recognizes(&bytes)) {
            return Ok(());
        }
        Err(Refusal(format!(
            "{flag} {shown} already exists and is not {}: it would be replaced. {}",
            kind.describe(),
            self.fix
        )))
    }

    /// Checks that `dir`, given by `flag`, can be a folder to write into: not a file.
    pub fn check_folder(&self, flag: &str, dir: &Path) -> Result<(), Refusal> {
        match std::fs::metadata(dir) {
            Ok(metadata) if !metadata.is_dir() => Err(Refusal(format!(
                "{flag} {} is {}, not a folder: give the folder to write into (it is created \
                 when missing)",
                dir.display(),
                if metadata.is_file() {
                    "a file"
                } else {
                    kind_of(&metadata)
                }
            ))),
            _ => Ok(()),
        }
    }

    /// The input that is the same file as `metadata` (the same inode: a link or another
    /// spelling of the path is caught too).
    fn read_by_the_run(&self, metadata: &std::fs::Metadata) -> Option<&(PathBuf, String)> {
        use std::os::unix::fs::MetadataExt;
        self.inputs.iter().find(|(input, _)| {
            std::fs::metadata(input)
                .is_ok_and(|m| m.dev() == metadata.dev() && m.ino() == metadata.ino())
        })
    }
}

//! Opening a classifier workspace from the command line, for every `lab` command and
//! `optimize` of a classifier config: the workspace with a note of what the splits moved, and
//! the splits a flag names.

use std::path::Path;

use anyhow::bail;
use skill_factory_lab::data::split::Split;
use skill_factory_lab::run::{self, Access, Opened};

use crate::output::errln;

/// Opens the workspace of `config` to read it, saying which examples
/// `splits.read_before_split` moved.
pub(super) fn open(config: &Path, workspace: Option<&Path>) -> anyhow::Result<Opened> {
    noted(run::open(config, workspace, Access::Read)?)
}

/// Opens the workspace of `config` (or `workspace`) for `command` to buy answers or write
/// its files: locked, after waiting for a command that holds it, as [`open`] otherwise. Keep
/// the value whole while the command runs: taking it apart releases the lock.
pub(super) fn open_to_change(
    config: &Path,
    workspace: Option<&Path>,
    command: &str,
) -> anyhow::Result<Opened> {
    let access = Access::Write {
        command,
        waiting: &waiting,
    };
    noted(run::open(config, workspace, access)?)
}

/// Says on stderr who holds the workspace a command waits for.
pub(super) fn waiting(note: &str) {
    errln!("note: {note}");
}

/// `opened`, once the note of what `splits.read_before_split` moved is printed.
fn noted(opened: Opened) -> anyhow::Result<Opened> {
    let moved = &opened.moved;
    if !moved.is_empty() {
        let shown: Vec<&str> = moved.iter().take(5).map(String::as_str).collect();
        errln!(
            "note: splits.read_before_split put {} example(s) into train over their explicit split or held-out source: {}{}",
            moved.len(),
            shown.join(", "),
            if moved.len() > 5 { ", ..." } else { "" }
        );
    }
    Ok(opened)
}

/// `train,val` (or `all`) as given to `flag` (`--splits`, `--split`, `--failures`), checked
/// against the names.
pub(super) fn parse_splits(flag: &str, text: &str) -> anyhow::Result<Vec<Split>> {
    if text.trim() == "all" {
        return Ok(Split::ALL.to_vec());
    }
    let mut splits = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(split) = Split::parse(name) else {
            bail!("unknown split '{name}' in {flag}; use train, val, test, held-out or all");
        };
        if !splits.contains(&split) {
            splits.push(split);
        }
    }
    if splits.is_empty() {
        bail!("{flag} names no split; use for example {flag} train,val");
    }
    Ok(splits)
}

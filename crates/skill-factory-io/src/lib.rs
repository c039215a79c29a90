//! The foundation every Skill Factory crate stands on for files, secrets and child processes,
//! one place each:
//!
//! * [`input`]: reading a file the user named: regular files only, bounded, UTF-8 with the
//!   line of the first bad byte;
//! * [`output`]: writing a file whole (temporary file, then rename);
//! * [`replace`]: where a command may write: never over a file it reads, and over another
//!   file only when it is of the kind the command writes there, or with `--force`;
//! * [`append`]: appending whole lines to a file several writers share;
//! * [`hint`]: what to tell a user whose file could not be written;
//! * [`path`]: the one rule for a relative path that must stay inside a folder;
//! * [`secrets`]: which names hold secrets, and hiding their values in text and JSON;
//! * [`process`]: running a child with a deadline, bounded output and its whole process group
//!   stopped when it is done or when Skill Factory quits.
//!
//! It depends on no crate of ours, so the dashboard, the packager, the model stack, the
//! engine and the lab all use it without pulling each other in.

#![warn(missing_docs)]

pub mod append;
pub mod hint;
pub mod input;
pub mod output;
pub mod path;
pub mod process;
pub mod replace;
pub mod secrets;

//! Agent Skills packaging: what makes a skill installable, and the folders that carry it.
//!
//! A skill leaves Skill Factory as an Agent Skills folder (`<name>/SKILL.md` and its files)
//! that `npx skills add` installs and Claude Code, Codex, Cursor and Gemini CLI load:
//!
//! * [`spec`]: the specification's rules as plain functions returning findings (rule,
//!   message, fix), name slugs included; the one validator every other module calls;
//! * [`bundle`]: a skill and the files of its folder, read from disk;
//! * [`export`]: a bundle written in the layout installers read (`<out>/<name>/`);
//! * [`install`]: a bundle copied into each agent's skills folder (project or global);
//! * [`validate`]: the checks run on a path, for `skill-factory validate`.
//!
//! Folders are written by staging beside the target and renaming, so no reader sees a
//! half-written skill. It depends on `skill-factory-core` and `skill-factory-io` alone
//! (files are read and written through the latter): exporting, installing and validating need
//! no model stack.

#![warn(missing_docs)]

pub mod bundle;
pub mod export;
pub mod install;
pub mod spec;
mod staged_dir;
pub mod validate;

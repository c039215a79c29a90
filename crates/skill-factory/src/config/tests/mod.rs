//! Behaviour of the config loader: defaults, every error message, path resolution, `.env`
//! and role resolution.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::load::{config_dir, load_config_in, resolve_paths};
use super::*;

mod cache;
mod defaults;
mod files;
mod key_errors;
mod process_rules;
mod roles;
mod syntax_errors;
mod value_errors;

const FILE: &str = "examples/x/config.yaml";
const BASE: &str = "skill: s.md\ndataset: d.jsonl\n";

fn parse(yaml: &str) -> Result<RunConfig, ConfigError> {
    parse_config(yaml, Path::new(FILE))
}

/// The error for `BASE` + `extra`, as the message a person reads.
fn error_of(extra: &str) -> (ConfigError, String) {
    let error = match parse(&format!("{BASE}{extra}")) {
        Ok(config) => panic!("expected an error, got {config:?}"),
        Err(error) => error,
    };
    let message = error.to_string();
    (error, message)
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(&path, text).unwrap();
    path
}

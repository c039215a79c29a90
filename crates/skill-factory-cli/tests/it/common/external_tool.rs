//! What several test files share: finding the real external programs they check us against.
//! Tests never fetch them (they never reach the network): a script run by `.ci/run` and
//! `scripts/quickstart` installs each outside the clone, below the user's cache folder.

use std::path::{Path, PathBuf};

/// An external program (or package folder) a test runs: the path in `var` when set, else `under_cache` below
/// `${XDG_CACHE_HOME:-$HOME/.cache}`; a failure saying how to install it when neither exists.
pub fn external_tool(var: &str, under_cache: &str, what: &str, install: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(var).filter(|path| !path.is_empty()) {
        let tool = PathBuf::from(path);
        assert!(
            tool.exists(),
            "{var}={} does not exist; run {install} and point the variable at the path it \
             prints, or unset it",
            tool.display()
        );
        return tool;
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")));
    let default = cache.map(|cache| cache.join(under_cache));
    match default {
        Some(tool) if tool.exists() => tool,
        _ => panic!(
            "{what} is not installed: neither {var} is set nor is it at \
             ${{XDG_CACHE_HOME:-$HOME/.cache}}/{under_cache}{}. This test runs it. Install it \
             with:\n  {install}",
            default
                .map(|path| format!(" ({})", path.display()))
                .unwrap_or_default()
        ),
    }
}

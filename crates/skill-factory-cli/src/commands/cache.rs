//! `skill-factory cache stats | clear | prune --older-than AGE`: look after the model cache.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use skill_factory::config::load_config;
use skill_factory_llm::cache::Cleared;
use skill_factory_llm::{CacheMode, CacheStats, CacheStore};

use crate::cli::{CacheAction, CacheArgs};
use crate::output::{out, outln};

/// Runs the command.
pub fn run(args: CacheArgs) -> anyhow::Result<ExitCode> {
    let path = cache_path(&args)?;
    match args.action {
        CacheAction::Stats => {
            let stats = CacheStore::open(&path, CacheMode::ReadOnly)?.stats()?;
            out!("{}", render_stats(&stats));
        }
        CacheAction::Clear => match CacheStore::clear(&path)? {
            Cleared::Emptied(entries) => {
                outln!("Cleared {}: removed {entries} entries.", path.display())
            }
            Cleared::Removed(detail) => outln!(
                "{} was unreadable ({detail}); deleted it. The next run starts a new cache.",
                path.display()
            ),
            Cleared::Missing => outln!("No cache at {}: nothing to clear.", path.display()),
        },
        CacheAction::Prune { older_than } => {
            let age = parse_age(&older_than)?;
            let store = CacheStore::open(&path, CacheMode::ReadWrite)?;
            let removed = store.prune(age)?;
            let left = store.stats()?.entries;
            outln!(
                "Pruned {}: removed {removed} entries not used in the last {older_than}; {left} remain.",
                path.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The cache file: `--path`, or the `cache.path` of the config given with `-c`.
fn cache_path(args: &CacheArgs) -> anyhow::Result<PathBuf> {
    if let Some(path) = &args.path {
        return Ok(path.clone());
    }
    let Some(config) = &args.config else {
        bail!(
            "which cache? give the run config with -c CONFIG (its cache.path, by default .skill-factory/cache.sqlite beside it) or the file with --path FILE"
        );
    };
    let loaded = load_config(config)?;
    Ok(loaded.config.cache.path)
}

/// `30d`, `12h`, `90m`, `45s`, `2w` as a duration.
fn parse_age(text: &str) -> anyhow::Result<Duration> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let unit_seconds = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 604_800,
        _ => 0,
    };
    let count: u64 = number.parse().ok().filter(|_| unit_seconds > 0).with_context(|| {
        format!("--older-than '{text}': give a whole number and a unit: s, m, h, d or w (for example 30d)")
    })?;
    Ok(Duration::from_secs(count.saturating_mul(unit_seconds)))
}

fn render_stats(stats: &CacheStats) -> String {
    let mut out = format!("Cache: {}\n", stats.path.display());
    if !stats.exists {
        out.push_str("No cache file yet: it is created when a run stores its first answer.\n");
        return out;
    }
    let when = |t: Option<i64>| {
        t.and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
            .map(|d| d.format("%Y-%m-%d %H:%M:%S UTC").to_string())
            .unwrap_or_else(|| "-".to_string())
    };
    out.push_str(&format!("Entries: {}\n", stats.entries));
    out.push_str(&format!(
        "Size on disk: {}\n",
        human_bytes(stats.bytes_on_disk)
    ));
    out.push_str(&format!("Hits recorded: {}\n", stats.hits));
    out.push_str(&format!("Misses recorded: {}\n", stats.misses));
    out.push_str(&format!("Oldest entry: {}\n", when(stats.oldest)));
    out.push_str(&format!("Newest entry: {}\n", when(stats.newest)));
    out.push_str(&format!("Last used: {}\n", when(stats.last_used)));
    out
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64;
    let mut unit = "bytes";
    for next in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_take_a_number_and_a_unit() {
        assert_eq!(parse_age("30d").unwrap(), Duration::from_secs(30 * 86_400));
        assert_eq!(parse_age(" 12h ").unwrap(), Duration::from_secs(12 * 3_600));
        assert_eq!(parse_age("2w").unwrap(), Duration::from_secs(14 * 86_400));
        assert_eq!(parse_age("0s").unwrap(), Duration::ZERO);
        for bad in ["30", "d", "30x", "-1d", "1.5d", ""] {
            let error = parse_age(bad).unwrap_err().to_string();
            assert!(error.contains("for example 30d"), "{bad}: {error}");
        }
    }

    #[test]
    fn sizes_read_like_a_person_writes_them() {
        assert_eq!(human_bytes(512), "512 bytes");
        assert_eq!(human_bytes(2048), "2.0 KiB");
        assert_eq!(human_bytes(5 * 1024 * 1024 + 1024 * 512), "5.5 MiB");
    }
}

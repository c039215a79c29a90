//! Benchmark of the model cache: fills a cache file with N answers, then times lookups of
//! stored and unknown keys one by one and prints the percentiles.
//!
//! ```text
//! cargo run --release -p skill-factory-llm --example cache_lookup -- [ENTRIES] [LOOKUPS] [FILE]
//! ```
//!
//! Defaults: 1,000,000 entries, 200,000 lookups, a cache file in a fresh temporary folder
//! (deleted afterwards). Give FILE to keep the filled cache and reuse it on the next run (the
//! fill is skipped when the file already holds ENTRIES entries). `bench/cache.sh` runs it and
//! `bench/results/cache.md` records its figures.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use skill_factory_llm::{
    CacheKey, CacheMode, CacheStore, ChatRequest, ChatResponse, StopReason, TokenUsage,
};

fn request(i: u64) -> ChatRequest {
    // A realistic request: a skill of a few hundred words as system prompt, a task as input.
    ChatRequest::single(
        Some(format!(
            "You extract invoices. {}",
            "Rules and examples. ".repeat(40)
        )),
        format!(
            "Invoice #{i}: ACME GmbH, 2026-03-{:02}, total {}.{:02} EUR",
            i % 28 + 1,
            i % 9973,
            i % 100
        ),
        0.0,
        1024,
    )
}

fn key(i: u64) -> CacheKey {
    CacheKey::new(
        "openai",
        "http://127.0.0.1:8080/v1/chat/completions",
        "gpt-bench",
        &request(i),
    )
}

fn answer(i: u64) -> ChatResponse {
    ChatResponse {
        text: format!(
            "{{\"vendor\": \"ACME GmbH\", \"invoice\": {i}, \"total\": {}.{:02}, \"currency\": \"EUR\"}}",
            i % 9973,
            i % 100
        ),
        usage: TokenUsage {
            input_tokens: 420,
            output_tokens: 38,
        },
        stop_reason: StopReason::End,
        model: "gpt-bench-2026".into(),
        latency: Duration::ZERO,
        cached: false,
        batch: false,
    }
}

/// A reproducible spread of indices (64-bit LCG), so lookups hit pages all over the file.
fn spread(n: u64, count: usize, seed: u64) -> Vec<u64> {
    let mut x = seed;
    (0..count)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 11) % n
        })
        .collect()
}

fn percentiles(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{label:<18} n={:<7} p50 {:>6.1} µs   p90 {:>6.1} µs   p99 {:>6.1} µs   p99.9 {:>7.1} µs   max {:>8.1} µs",
        samples.len(),
        micros(at(0.50)),
        micros(at(0.90)),
        micros(at(0.99)),
        micros(at(0.999)),
        micros(*samples.last().unwrap_or(&Duration::ZERO)),
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let entries: u64 = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let lookups: usize = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(200_000);
    let scratch = tempfile::tempdir()?;
    let path = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| scratch.path().join("cache.sqlite"));

    let store = CacheStore::open(&path, CacheMode::ReadWrite)?;
    let present = store.stats()?.entries;
    if present < entries {
        let started = Instant::now();
        for i in present..entries {
            store.put(&key(i), "openai", "gpt-bench", &answer(i))?;
            if (i + 1) % 100_000 == 0 {
                eprintln!(
                    "  stored {} entries ({:.0} s)",
                    i + 1,
                    started.elapsed().as_secs_f64()
                );
            }
        }
        let took = started.elapsed();
        println!(
            "fill: {} answers stored one transaction each in {:.1} s ({:.0} writes/s)",
            entries - present,
            took.as_secs_f64(),
            (entries - present) as f64 / took.as_secs_f64()
        );
    }
    drop(store);

    // A new store, as a new run would open it: cold connection, warm OS page cache.
    let store = CacheStore::open(&path, CacheMode::ReadOnly)?;
    let stats = store.stats()?;
    println!(
        "cache: {} entries, {:.0} MiB on disk",
        stats.entries,
        stats.bytes_on_disk as f64 / (1024.0 * 1024.0)
    );

    let keys: Vec<CacheKey> = spread(entries, lookups, 7).into_iter().map(key).collect();
    let mut hits = Vec::with_capacity(lookups);
    for key in &keys {
        let started = Instant::now();
        let hit = store.get(key)?;
        hits.push(started.elapsed());
        assert!(hit.is_some(), "a stored key was not found");
    }
    percentiles("lookup (hit)", hits);

    let unknown: Vec<CacheKey> = spread(u64::MAX / 2, lookups / 4, 11)
        .into_iter()
        .map(|i| key(entries + i))
        .collect();
    let mut misses = Vec::with_capacity(unknown.len());
    for key in &unknown {
        let started = Instant::now();
        let hit = store.get(key)?;
        misses.push(started.elapsed());
        assert!(hit.is_none());
    }
    percentiles("lookup (miss)", misses);

    let started = Instant::now();
    for i in 0..10_000 {
        std::hint::black_box(key(i));
    }
    println!(
        "key: {:.1} µs to hash one request (SHA-256 of its canonical form)",
        started.elapsed().as_secs_f64() * 1e6 / 10_000.0
    );
    Ok(())
}

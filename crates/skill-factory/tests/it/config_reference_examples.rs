//! The reference tool's example configs (all five, byte for byte, comments included) load
//! unchanged, with the values the reference tool reads from them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use skill_factory::config::{
    Check, Criterion, GoldenConfig, GoldenMode, HarnessType, LoadedConfig, ResolvedRoles,
    RunConfig, is_classifier_config, load_config,
};

fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reference-configs")
        .join(relative)
}

fn load(relative: &str) -> LoadedConfig {
    let path = fixture(relative);
    match load_config(&path) {
        Ok(loaded) => loaded,
        Err(error) => panic!("{relative} should load: {error}"),
    }
}

fn criterion(name: &str, description: &str, weight: f64) -> Criterion {
    Criterion {
        name: name.into(),
        description: description.into(),
        weight,
    }
}

/// Role resolution with no model variables set, so the expectations do not depend on the
/// machine's environment.
fn roles_without_env(loaded: &LoadedConfig) -> ResolvedRoles {
    let empty: HashMap<String, String> = HashMap::new();
    loaded.config.roles(&|key| empty.get(key).cloned())
}

/// `provider/model` of the target, the optimizer and the judge, in that order
/// ([`roles_without_env`]).
fn role_models(loaded: &LoadedConfig) -> Vec<String> {
    let roles = roles_without_env(loaded);
    [&roles.target, &roles.optimizer, &roles.judge]
        .map(|settings| {
            format!(
                "{}/{}",
                settings.name.clone().unwrap_or_default(),
                settings.model.clone().unwrap_or_default()
            )
        })
        .to_vec()
}

/// The optimizer's schedule: rounds, minibatch size, edits per round, patience.
fn schedule(config: &RunConfig) -> (usize, usize, usize, usize) {
    let o = &config.optimizer;
    (
        o.rounds,
        o.minibatch_size,
        o.max_edits_per_round,
        o.patience,
    )
}

/// The judge's criteria, if there is a judge.
fn judge_criteria(config: &RunConfig) -> Option<Vec<Criterion>> {
    config.metric.judge.as_ref().map(|j| j.criteria.clone())
}

/// The two criteria every reference config gives its judge: correctness (weight 3) and
/// format (weight 2), with these descriptions.
fn correctness_and_format(correctness: &str, format: &str) -> Vec<Criterion> {
    vec![
        criterion("correctness", correctness, 3.0),
        criterion("format", format, 2.0),
    ]
}

/// Asserts where the run writes its runs and emits its skill, below the example's `dir`.
fn assert_output(config: &RunConfig, dir: &Path, runs: &str, emit: &str) {
    assert_eq!(config.output.dir, Some(dir.join(runs)));
    assert_eq!(config.output.emit_skill_dir, Some(dir.join(emit)));
}

#[test]
fn invoice_extractor_config_loads_with_reference_values() {
    let loaded = load("invoice-extractor/config.yaml");
    let dir = fixture("invoice-extractor");
    let c = &loaded.config;
    assert_eq!(loaded.name, "invoice-extractor");
    assert_eq!(loaded.dir, dir);
    assert_eq!(c.skill, dir.join("seed_skill.md"));
    assert_eq!(c.dataset, dir.join("dataset.jsonl"));
    assert!(c.skill.is_file() && c.dataset.is_file());
    assert_eq!((c.val_fraction, c.seed, c.test_fraction), (0.34, 7, 0.0));

    assert_eq!(c.optimizer.name, "llm_loop");
    assert_eq!(schedule(c), (8, 4, 2, 3));
    assert_eq!(
        c.optimizer.goal,
        "Make the skill reliably output ONLY a JSON object with keys vendor, date (ISO 8601 YYYY-MM-DD), total (number), and currency (ISO 4217), correctly normalizing localized dates, decimal separators, and currency symbols.\n"
    );

    assert_eq!(
        c.metric.golden,
        Some(GoldenConfig {
            mode: GoldenMode::JsonEqual,
            weight: 2.0
        })
    );
    let programmatic = c.metric.programmatic.as_ref().expect("programmatic block");
    assert_eq!(programmatic.weight, 1.0);
    assert_eq!(
        programmatic.checks,
        vec![
            Check::IsValidJson,
            Check::JsonHasKeys(
                ["vendor", "date", "total", "currency"]
                    .map(String::from)
                    .to_vec()
            )
        ]
    );
    let judge = c.metric.judge.as_ref().expect("judge block");
    assert_eq!(judge.weight, 1.0);
    assert_eq!(
        judge.criteria,
        correctness_and_format(
            "Are vendor, date, total, currency all correct and properly normalized?",
            "Is the output strictly a single JSON object with no prose, markdown, or code fences?",
        )
    );
    assert!(c.metric.systemone.is_none());

    assert_eq!(c.harness.harness_type, HarnessType::Api);
    assert_eq!(
        (
            c.harness.temperature,
            c.harness.max_tokens,
            c.harness.max_workers
        ),
        (0.0, 1024, 4)
    );
    assert_output(c, &dir, "runs/invoice-extractor", "dist");
    assert!(!c.output.as_collection);

    assert_eq!(
        role_models(&loaded),
        [
            "anthropic/claude-sonnet-5",
            "anthropic/claude-opus-4-8",
            "anthropic/claude-sonnet-5"
        ]
    );
}

#[test]
fn invoice_extractor_lmstudio_config_loads_flow_style_blocks() {
    let loaded = load("invoice-extractor/config.lmstudio.yaml");
    let dir = fixture("invoice-extractor");
    let c = &loaded.config;
    assert_eq!(loaded.name, "invoice-extractor");
    assert_eq!(schedule(c), (3, 3, 1, 2));
    assert_eq!(
        c.optimizer.goal,
        "Make the skill output ONLY a JSON object (no markdown, no code fences, no prose) with keys vendor, date (ISO 8601 YYYY-MM-DD), total (number), currency (ISO 4217), correctly normalizing localized dates, decimal separators, and currency symbols.\n"
    );
    assert_eq!(c.metric.golden.as_ref().map(|g| g.weight), Some(2.0));
    assert_eq!(
        judge_criteria(c),
        Some(correctness_and_format(
            "Are vendor, date, total, currency all correct and normalized?",
            "Strictly one JSON object, no prose or code fences?",
        ))
    );
    assert_eq!((c.harness.max_tokens, c.harness.max_workers), (512, 1));
    assert_output(c, &dir, "runs/invoice-local", "dist-local");

    assert_eq!(role_models(&loaded), ["lmstudio/gemma-4-31b-it-mlx"; 3]);
}

#[test]
fn ticket_classifier_config_loads_with_reference_values() {
    let loaded = load("ticket-classifier/config.yaml");
    let dir = fixture("ticket-classifier");
    let c = &loaded.config;
    assert_eq!(loaded.name, "ticket-classifier");
    assert_eq!((c.val_fraction, c.seed), (0.34, 3));
    assert_eq!(schedule(c), (4, 3, 1, 2));
    assert_eq!(
        c.optimizer.goal,
        "Make the skill output EXACTLY ONE lowercase category label and nothing else, chosen from: billing, bug, feature_request, account, other. No punctuation, no explanation, no quotes. Teach the boundaries between categories (e.g. login/2FA/email-change = account; charges/invoices/plan limits = billing).\n"
    );
    assert_eq!(
        c.metric.golden,
        Some(GoldenConfig {
            mode: GoldenMode::Normalized,
            weight: 2.0
        })
    );
    assert_eq!(
        c.metric.programmatic.as_ref().map(|p| p.checks.clone()),
        Some(vec![Check::MatchesRegex {
            pattern: "(?i)^\\s*(billing|bug|feature_request|account|other)\\s*$".to_string(),
            flags: 0
        }])
    );
    assert_eq!(
        judge_criteria(c),
        Some(correctness_and_format(
            "Is the chosen category the best fit for the message?",
            "Is the output a single bare label with no extra text?",
        ))
    );
    assert_eq!((c.harness.max_tokens, c.harness.max_workers), (64, 4));
    assert_output(c, &dir, "runs/ticket-classifier", "dist");

    assert_eq!(
        role_models(&loaded),
        [
            "anthropic/claude-haiku-4-5-20251001",
            "anthropic/claude-sonnet-5",
            "anthropic/claude-sonnet-5"
        ]
    );
}

#[test]
fn reference_configs_are_not_classifier_configs() {
    for relative in [
        "invoice-extractor/config.yaml",
        "invoice-extractor/config.lmstudio.yaml",
        "invoice-extractor/config.fast.yaml",
        "ticket-classifier/config.yaml",
        "ticket-classifier/config.lmstudio.yaml",
    ] {
        assert!(!is_classifier_config(&fixture(relative)), "{relative}");
    }
}

#[test]
fn invoice_extractor_fast_config_loads_with_reference_values() {
    let loaded = load("invoice-extractor/config.fast.yaml");
    let dir = fixture("invoice-extractor");
    let c = &loaded.config;
    assert_eq!(loaded.name, "invoice-extractor");
    assert_eq!(schedule(c), (3, 3, 1, 2));
    assert_eq!(
        judge_criteria(c),
        Some(correctness_and_format(
            "Are vendor, date, total, currency all correct and normalized?",
            "Is the output strictly one JSON object, no prose or code fences?",
        ))
    );
    assert_eq!((c.harness.max_tokens, c.harness.max_workers), (1024, 4));
    assert_output(c, &dir, "runs/invoice-extractor-fast", "dist");
    // The target and the optimizer (the judge is not used by this config's metrics).
    assert_eq!(
        role_models(&loaded)[..2],
        [
            "anthropic/claude-haiku-4-5-20251001",
            "anthropic/claude-sonnet-5"
        ]
    );
}

#[test]
fn ticket_classifier_lmstudio_config_loads_flow_style_criteria() {
    let loaded = load("ticket-classifier/config.lmstudio.yaml");
    let dir = fixture("ticket-classifier");
    let c = &loaded.config;
    assert_eq!((c.val_fraction, c.seed), (0.34, 3));
    assert_eq!(schedule(c), (4, 3, 1, 2));
    assert_eq!(
        judge_criteria(c),
        Some(correctness_and_format(
            "Is the chosen category the best fit?",
            "A single bare label with no extra text?",
        ))
    );
    assert_eq!((c.harness.max_tokens, c.harness.max_workers), (32, 1));
    assert_output(c, &dir, "runs/ticket-local", "dist-local");
    assert_eq!(role_models(&loaded), ["lmstudio/gemma-4-31b-it-mlx"; 3]);
}

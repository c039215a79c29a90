//! The reference tool's example configs (all five, byte for byte, comments included) load
//! unchanged, with the values the reference tool reads from them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use skill_factory::config::{
    Check, Criterion, GoldenConfig, GoldenMode, HarnessType, LoadedConfig, ResolvedRoles,
    is_classifier_config, load_config,
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

fn name_model(settings: &skill_factory_llm::ProviderSettings) -> (String, String) {
    (
        settings.name.clone().unwrap_or_default(),
        settings.model.clone().unwrap_or_default(),
    )
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

    let o = &c.optimizer;
    assert_eq!(o.name, "llm_loop");
    assert_eq!(
        (
            o.rounds,
            o.minibatch_size,
            o.max_edits_per_round,
            o.patience
        ),
        (8, 4, 2, 3)
    );
    assert_eq!(
        o.goal,
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
        vec![
            criterion(
                "correctness",
                "Are vendor, date, total, currency all correct and properly normalized?",
                3.0
            ),
            criterion(
                "format",
                "Is the output strictly a single JSON object with no prose, markdown, or code fences?",
                2.0
            ),
        ]
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
    assert_eq!(c.output.dir, Some(dir.join("runs/invoice-extractor")));
    assert_eq!(c.output.emit_skill_dir, Some(dir.join("dist")));
    assert!(!c.output.as_collection);

    let roles = roles_without_env(&loaded);
    assert_eq!(
        name_model(&roles.target),
        ("anthropic".into(), "claude-sonnet-5".into())
    );
    assert_eq!(
        name_model(&roles.optimizer),
        ("anthropic".into(), "claude-opus-4-8".into())
    );
    assert_eq!(
        name_model(&roles.judge),
        ("anthropic".into(), "claude-sonnet-5".into())
    );
}

#[test]
fn invoice_extractor_lmstudio_config_loads_flow_style_blocks() {
    let loaded = load("invoice-extractor/config.lmstudio.yaml");
    let dir = fixture("invoice-extractor");
    let c = &loaded.config;
    assert_eq!(loaded.name, "invoice-extractor");
    assert_eq!(
        (
            c.optimizer.rounds,
            c.optimizer.minibatch_size,
            c.optimizer.max_edits_per_round,
            c.optimizer.patience
        ),
        (3, 3, 1, 2)
    );
    assert_eq!(
        c.optimizer.goal,
        "Make the skill output ONLY a JSON object (no markdown, no code fences, no prose) with keys vendor, date (ISO 8601 YYYY-MM-DD), total (number), currency (ISO 4217), correctly normalizing localized dates, decimal separators, and currency symbols.\n"
    );
    assert_eq!(c.metric.golden.as_ref().map(|g| g.weight), Some(2.0));
    assert_eq!(
        c.metric.judge.as_ref().map(|j| j.criteria.clone()),
        Some(vec![
            criterion(
                "correctness",
                "Are vendor, date, total, currency all correct and normalized?",
                3.0
            ),
            criterion(
                "format",
                "Strictly one JSON object, no prose or code fences?",
                2.0
            ),
        ])
    );
    assert_eq!((c.harness.max_tokens, c.harness.max_workers), (512, 1));
    assert_eq!(c.output.dir, Some(dir.join("runs/invoice-local")));
    assert_eq!(c.output.emit_skill_dir, Some(dir.join("dist-local")));

    let roles = roles_without_env(&loaded);
    for role in [&roles.target, &roles.optimizer, &roles.judge] {
        assert_eq!(
            name_model(role),
            ("lmstudio".into(), "gemma-4-31b-it-mlx".into())
        );
    }
}

#[test]
fn ticket_classifier_config_loads_with_reference_values() {
    let loaded = load("ticket-classifier/config.yaml");
    let dir = fixture("ticket-classifier");
    let c = &loaded.config;
    assert_eq!(loaded.name, "ticket-classifier");
    assert_eq!((c.val_fraction, c.seed), (0.34, 3));
    assert_eq!(
        (
            c.optimizer.rounds,
            c.optimizer.minibatch_size,
            c.optimizer.max_edits_per_round,
            c.optimizer.patience
        ),
        (4, 3, 1, 2)
    );
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
        c.metric.judge.as_ref().map(|j| j.criteria.clone()),
        Some(vec![
            criterion(
                "correctness",
                "Is the chosen category the best fit for the message?",
                3.0
            ),
            criterion(
                "format",
                "Is the output a single bare label with no extra text?",
                2.0
            ),
        ])
    );
    assert_eq!((c.harness.max_tokens, c.harness.max_workers), (64, 4));
    assert_eq!(c.output.dir, Some(dir.join("runs/ticket-classifier")));
    assert_eq!(c.output.emit_skill_dir, Some(dir.join("dist")));

    let roles = roles_without_env(&loaded);
    assert_eq!(
        name_model(&roles.target),
        ("anthropic".into(), "claude-haiku-4-5-20251001".into())
    );
    assert_eq!(
        name_model(&roles.optimizer),
        ("anthropic".into(), "claude-sonnet-5".into())
    );
    assert_eq!(
        name_model(&roles.judge),
        ("anthropic".into(), "claude-sonnet-5".into())
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
    let o = &c.optimizer;
    assert_eq!(
        (
            o.rounds,
            o.minibatch_size,
            o.max_edits_per_round,
            o.patience
        ),
        (3, 3, 1, 2)
    );
    assert_eq!(
        c.metric.judge.as_ref().map(|j| j.criteria.clone()),
        Some(vec![
            criterion(
                "correctness",
                "Are vendor, date, total, currency all correct and normalized?",
                3.0
            ),
            criterion(
                "format",
                "Is the output strictly one JSON object, no prose or code fences?",
                2.0
            ),
        ])
    );
    assert_eq!((c.harness.max_tokens, c.harness.max_workers), (1024, 4));
    assert_eq!(c.output.dir, Some(dir.join("runs/invoice-extractor-fast")));
    assert_eq!(c.output.emit_skill_dir, Some(dir.join("dist")));
    let roles = roles_without_env(&loaded);
    assert_eq!(
        name_model(&roles.target),
        ("anthropic".into(), "claude-haiku-4-5-20251001".into())
    );
    assert_eq!(
        name_model(&roles.optimizer),
        ("anthropic".into(), "claude-sonnet-5".into())
    );
}

#[test]
fn ticket_classifier_lmstudio_config_loads_flow_style_criteria() {
    let loaded = load("ticket-classifier/config.lmstudio.yaml");
    let dir = fixture("ticket-classifier");
    let c = &loaded.config;
    assert_eq!((c.val_fraction, c.seed), (0.34, 3));
    assert_eq!(
        (
            c.optimizer.rounds,
            c.optimizer.minibatch_size,
            c.optimizer.max_edits_per_round,
            c.optimizer.patience
        ),
        (4, 3, 1, 2)
    );
    assert_eq!(
        c.metric.judge.as_ref().map(|j| j.criteria.clone()),
        Some(vec![
            criterion("correctness", "Is the chosen category the best fit?", 3.0),
            criterion("format", "A single bare label with no extra text?", 2.0),
        ])
    );
    assert_eq!((c.harness.max_tokens, c.harness.max_workers), (32, 1));
    assert_eq!(c.output.dir, Some(dir.join("runs/ticket-local")));
    assert_eq!(c.output.emit_skill_dir, Some(dir.join("dist-local")));
    let roles = roles_without_env(&loaded);
    for role in [&roles.target, &roles.optimizer, &roles.judge] {
        assert_eq!(
            name_model(role),
            ("lmstudio".into(), "gemma-4-31b-it-mlx".into())
        );
    }
}

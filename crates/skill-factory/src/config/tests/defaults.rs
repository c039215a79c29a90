//! What a config gets when it leaves keys out, and the forms values may take.

use super::*;

#[test]
fn minimal_config_gets_every_reference_default() {
    let c = parse(BASE).unwrap();
    assert_eq!(c.skill, PathBuf::from("s.md"));
    assert_eq!(c.dataset, PathBuf::from("d.jsonl"));
    assert_eq!(c.val_fraction, 0.3);
    assert_eq!(c.test_fraction, 0.0);
    assert_eq!(c.seed, 0);
    assert_eq!(c.description, None);
    assert_eq!(c.kind, None);
    assert_eq!(c.provider, None);
    assert_eq!(c.target, None);
    let o = &c.optimizer;
    assert_eq!(o.name, "llm_loop");
    assert_eq!(
        (
            o.rounds,
            o.minibatch_size,
            o.max_edits_per_round,
            o.patience
        ),
        (6, 4, 1, 3)
    );
    assert_eq!((o.seed, o.max_workers), (0, 1));
    assert_eq!(o.params, OptimizerParams::default());
    assert_eq!(o.params.work_dir, PathBuf::from("runs/skillopt"));
    assert_eq!(o.params.output_skill, "best_skill.md");
    assert_eq!(o.params.timeout, 3600.0);
    assert_eq!((o.goal.as_str(), o.min_delta), ("", 0.0));
    assert_eq!(
        (o.lm.as_deref(), o.reflection_lm.as_deref(), o.auto.as_str()),
        (None, None, "light")
    );
    assert_eq!(
        c.metric.golden,
        Some(GoldenConfig {
            mode: GoldenMode::Normalized,
            weight: 1.0
        })
    );
    assert!(
        c.metric.programmatic.is_none() && c.metric.judge.is_none() && c.metric.systemone.is_none()
    );
    let h = &c.harness;
    assert_eq!(h.harness_type, HarnessType::Api);
    assert_eq!(
        (h.temperature, h.max_tokens, h.max_workers),
        (0.0, 2048, 16)
    );
    assert_eq!(
        (h.model.as_deref(), h.executable.as_deref(), h.executable()),
        (None, None, "claude")
    );
    assert_eq!(h.skill_mode, SkillMode::Prompt);
    assert_eq!(
        (h.timeout, h.command.as_ref(), h.input_via),
        (None, None, InputVia::Stdin)
    );
    assert!(h.extra_args.is_empty() && h.env.is_empty() && h.cwd.is_none());
    assert_eq!(
        c.output,
        OutputConfig {
            dir: None,
            emit_skill_dir: None,
            as_collection: false
        }
    );
}

#[test]
fn metric_without_golden_gets_no_default_golden() {
    let c = parse(&format!(
        "{BASE}metric:\n  programmatic: {{checks: [is_valid_json]}}\n"
    ))
    .unwrap();
    assert!(c.metric.golden.is_none());
    let p = c.metric.programmatic.unwrap();
    assert_eq!(p.weight, 1.0);
    assert_eq!(p.checks, vec![Check::IsValidJson]);
}

#[test]
fn empty_blocks_mean_defaults() {
    let c = parse(&format!(
        "{BASE}optimizer: {{}}\nmetric: {{golden: {{}}}}\nharness: {{}}\noutput: {{}}\n"
    ))
    .unwrap();
    assert_eq!(c.optimizer, OptimizerConfig::default());
    assert_eq!(c.metric.golden, Some(GoldenConfig::default()));
    assert_eq!(c.harness, HarnessConfig::default());
}

#[test]
fn harness_timeout_default_depends_on_the_type() {
    let mut h = HarnessConfig::default();
    assert_eq!(h.timeout_secs(), 120.0);
    h.harness_type = HarnessType::ClaudeCode;
    assert_eq!(h.timeout_secs(), 300.0);
    h.harness_type = HarnessType::Codex;
    assert_eq!((h.timeout_secs(), h.executable()), (300.0, "codex"));
    h.harness_type = HarnessType::GeminiCli;
    assert_eq!((h.timeout_secs(), h.executable()), (300.0, "gemini"));
    h.timeout = Some(5.0);
    assert_eq!(h.timeout_secs(), 5.0);
}

#[test]
fn command_keeps_the_list_and_the_string_form() {
    let c = parse(&format!(
        "{BASE}harness: {{type: subprocess, command: [sleep, 5, 0.5, true]}}\n"
    ))
    .unwrap();
    assert_eq!(
        c.harness.command,
        Some(Command::Argv(vec![
            "sleep".into(),
            "5".into(),
            "0.5".into(),
            "True".into()
        ]))
    );
    let c = parse(&format!(
        "{BASE}harness: {{type: subprocess, command: \"python run.py\"}}\n"
    ))
    .unwrap();
    assert_eq!(
        c.harness.command,
        Some(Command::Line("python run.py".into()))
    );
}

#[test]
fn harness_env_and_extra_args_accept_numbers_as_text() {
    let c = parse(&format!(
        "{BASE}harness:\n  env: {{PORT: 8080, DEBUG: true}}\n  extra_args: [--max-turns, 3]\n"
    ))
    .unwrap();
    assert_eq!(c.harness.env.get("PORT").map(String::as_str), Some("8080"));
    assert_eq!(c.harness.env.get("DEBUG").map(String::as_str), Some("True"));
    assert_eq!(
        c.harness.extra_args,
        vec!["--max-turns".to_owned(), "3".to_owned()]
    );
}

#[test]
fn reserved_harness_types_are_accepted() {
    assert_eq!(
        parse(&format!("{BASE}harness: {{type: codex}}\n"))
            .unwrap()
            .harness
            .harness_type,
        HarnessType::Codex
    );
    assert_eq!(
        parse(&format!("{BASE}harness: {{type: gemini_cli}}\n"))
            .unwrap()
            .harness
            .harness_type,
        HarnessType::GeminiCli
    );
}

#[test]
fn systemone_block_keeps_every_key() {
    let yaml = format!(
        "{BASE}metric:\n  systemone:\n    weight: 2\n    provider: openrouter\n    model: typesafe/jev-1.13\n    threshold: 0.5\n    include_expected: true\n    cache: answers.jsonl\n    api_key: k\n    base_url: https://x\n    account_id: 42\n    timeout: 30\n    checks:\n      - {{name: strict_json, question: Is it JSON?, true: Yes it is, false: No it is not, weight: 3}}\n      - {{name: short, question: Is it short?}}\n"
    );
    let s = parse(&yaml).unwrap().metric.systemone.unwrap();
    assert_eq!(s.weight, 2.0);
    assert_eq!(s.provider.as_deref(), Some("openrouter"));
    assert_eq!(s.model.as_deref(), Some("typesafe/jev-1.13"));
    assert_eq!(s.threshold, Some(0.5));
    assert!(s.include_expected);
    assert_eq!(s.cache, Some(PathBuf::from("answers.jsonl")));
    assert_eq!(
        (
            s.api_key.as_deref(),
            s.base_url.as_deref(),
            s.account_id.as_deref()
        ),
        (Some("k"), Some("https://x"), Some("42"))
    );
    assert_eq!(s.timeout, Some(30.0));
    assert_eq!(s.checks[0].if_true.as_deref(), Some("Yes it is"));
    assert_eq!(s.checks[0].if_false.as_deref(), Some("No it is not"));
    assert_eq!(s.checks[0].weight, 3.0);
    assert_eq!(
        (s.checks[1].if_true.as_ref(), s.checks[1].weight),
        (None, 1.0)
    );
}

#[test]
fn our_additions_parse() {
    let c = parse(&format!(
        "{BASE}test_fraction: 0.2\ndescription: extracts invoices\nkind: skill\n"
    ))
    .unwrap();
    assert_eq!(c.test_fraction, 0.2);
    assert_eq!(c.description.as_deref(), Some("extracts invoices"));
    assert_eq!(c.kind, Some(ConfigKind::Skill));
}

#[test]
fn null_provider_block_counts_as_absent() {
    let c = parse(&format!(
        "{BASE}provider:\ntarget: {{name: lmstudio, model: m}}\njudge_provider: null\n"
    ))
    .unwrap();
    assert_eq!(
        c.target_block().and_then(|b| b.name.as_deref()),
        Some("lmstudio")
    );
    assert_eq!(c.judge_provider, None);
}

#[test]
fn yaml_1_1_booleans_are_read_like_pyyaml() {
    let c = parse(&format!("{BASE}output: {{as_collection: yes}}\nmetric: {{systemone: {{include_expected: on, checks: [{{name: a, question: q}}]}}}}\n")).unwrap();
    assert!(c.output.as_collection);
    assert!(c.metric.systemone.is_some_and(|s| s.include_expected));
}

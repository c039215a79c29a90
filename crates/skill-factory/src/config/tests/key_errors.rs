//! Errors about keys: unknown, missing, empty blocks, duplicates.

use super::*;

#[test]
fn misspelt_optimizer_key_names_the_key_file_line_and_suggestion() {
    let (e, m) = error_of("optimizer:\n  rounds: 3\n  roundz: 4\n");
    assert_eq!(
        m,
        "unknown key 'roundz' in optimizer (examples/x/config.yaml line 5); did you mean 'rounds'?"
    );
    assert_eq!(e.key_path().as_deref(), Some("optimizer.roundz"));
    assert_eq!(e.line(), Some(5));
}

#[test]
fn misspelt_gepa_and_skillopt_keys_get_the_closest_valid_key() {
    for (wrong, right) in [
        ("max_metric_call", "max_metric_calls"),
        ("adaptive_gates", "adaptive_gate"),
        ("max_patch_edit", "max_patch_edits"),
        ("protect", "protected"),
    ] {
        let (_, m) = error_of(&format!("optimizer:\n  name: gepa\n  {wrong}: 1\n"));
        assert_mentions(
            &m,
            &[
                &format!("unknown key '{wrong}' in optimizer"),
                &format!("did you mean '{right}'?"),
            ],
        );
    }
}

#[test]
fn a_misspelt_component_selector_lists_the_selectors_and_suggests_one() {
    let (_, m) = error_of("optimizer: {name: gepa, component_selector: blame}\n");
    assert_mentions(
        &m,
        &[
            "Unknown value 'blame'. Supported: round_robin, blamed",
            "'optimizer.component_selector'",
            "did you mean 'blamed'?",
        ],
    );
}

#[test]
fn gepa_and_skillopt_values_out_of_range_name_the_key_and_the_fix() {
    for (block, key, fix) in [
        (
            "{name: gepa, auto: turbo}",
            "optimizer.auto",
            "use light, medium or heavy",
        ),
        ("{name: gepa, parents: 0}", "optimizer.parents", "1"),
        (
            "{max_patch_edits: 1, min_patch_edits: 3}",
            "optimizer.max_patch_edits",
            "make max the larger",
        ),
        (
            "{max_metric_calls: 0}",
            "optimizer.max_metric_calls",
            "use 1 or more",
        ),
    ] {
        let (e, m) = error_of(&format!("optimizer: {block}\n"));
        assert_eq!(e.key_path().as_deref(), Some(key), "{m}");
        assert!(m.contains(fix), "{m}");
    }
}

#[test]
fn unknown_top_level_key_lists_the_valid_keys() {
    let (_, m) = error_of("banana: 3\n");
    assert_mentions(
        &m,
        &[
            "unknown key 'banana' in the top level (examples/x/config.yaml line 3)",
            "valid keys there: skill, dataset",
        ],
    );
}

#[test]
fn misspelt_top_level_key_gets_a_suggestion() {
    let (_, m) = error_of("val_fracton: 0.3\n");
    assert_mentions(
        &m,
        &[
            "unknown key 'val_fracton' in the top level",
            "line 3",
            "did you mean 'val_fraction'?",
        ],
    );
}

#[test]
fn unknown_key_in_a_list_item_names_its_index() {
    let (e, m) = error_of(
        "metric:\n  judge:\n    criteria:\n      - {name: a}\n      - {name: b, wieght: 2}\n",
    );
    assert_mentions(
        &m,
        &[
            "unknown key 'wieght' in metric.judge.criteria[1]",
            "examples/x/config.yaml line 7",
            "did you mean 'weight'?",
        ],
    );
    assert_eq!(
        e.key_path().as_deref(),
        Some("metric.judge.criteria[1].wieght")
    );
}

#[test]
fn unknown_keys_are_caught_in_every_block() {
    let cases = [
        (
            "provider: {name: openai, modle: x}\n",
            "in provider",
            "'model'",
        ),
        ("target: {nmae: openai}\n", "in target", "'name'"),
        (
            "optimizer_provider: {base_ulr: x}\n",
            "in optimizer_provider",
            "'base_url'",
        ),
        (
            "judge_provider: {api_kye: x}\n",
            "in judge_provider",
            "'api_key'",
        ),
        (
            "provider:\n  rules:\n    - {reply: a, user_contain: b}\n",
            "in provider.rules[0]",
            "'user_contains'",
        ),
        (
            "optimizer: {params: {work_dri: x}}\n",
            "in optimizer.params",
            "'work_dir'",
        ),
        ("metric: {goldn: {}}\n", "in metric", "'golden'"),
        (
            "metric: {golden: {mdoe: exact}}\n",
            "in metric.golden",
            "'mode'",
        ),
        (
            "metric: {programmatic: {chekcs: [x]}}\n",
            "in metric.programmatic",
            "'checks'",
        ),
        (
            "metric: {judge: {criterias: []}}\n",
            "in metric.judge",
            "'criteria'",
        ),
        (
            "metric: {systemone: {treshold: 0.5}}\n",
            "in metric.systemone",
            "'threshold'",
        ),
        (
            "metric:\n  systemone:\n    checks:\n      - {name: a, question: q, falze: f}\n",
            "in metric.systemone.checks[0]",
            "'false'",
        ),
        ("harness: {temprature: 0}\n", "in harness", "'temperature'"),
        (
            "output: {emit_skill: dist}\n",
            "in output",
            "'emit_skill_dir'",
        ),
    ];
    for (extra, section, suggestion) in cases {
        let (e, m) = error_of(extra);
        assert!(matches!(e, ConfigError::UnknownKey { .. }), "{extra}: {m}");
        assert_mentions(
            &m,
            &[
                section,
                "examples/x/config.yaml line",
                &format!("did you mean {suggestion}?"),
            ],
        );
    }
}

#[test]
fn missing_skill_says_what_to_add() {
    let e = parse("dataset: d.jsonl\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "missing required key 'skill' (examples/x/config.yaml): add e.g. 'skill: seed_skill.md' (the seed SKILL.md, relative to the config file)"
    );
}

#[test]
fn missing_dataset_says_what_to_add() {
    let e = parse("skill: s.md\n").unwrap_err();
    assert_mentions(
        &e.to_string(),
        &[
            "missing required key 'dataset' (examples/x/config.yaml)",
            "dataset: dataset.jsonl",
        ],
    );
}

#[test]
fn missing_criterion_name_names_the_list_item() {
    let (e, m) =
        error_of("metric:\n  judge:\n    criteria:\n      - {name: a}\n      - {description: b}\n");
    assert_mentions(
        &m,
        &[
            "missing required key 'metric.judge.criteria[1].name'",
            "line 7",
            "add 'name: ...'",
        ],
    );
    assert_eq!(
        e.key_path().as_deref(),
        Some("metric.judge.criteria[1].name")
    );
}

#[test]
fn subprocess_harness_without_command_points_at_its_type() {
    let (e, m) = error_of("harness:\n  type: subprocess\n");
    assert!(matches!(e, ConfigError::MissingKey { .. }));
    assert_mentions(
        &m,
        &[
            "missing required key 'harness.command'",
            "examples/x/config.yaml line 4",
            "command: [python",
        ],
    );
    let (_, m) = error_of("harness:\n  type: subprocess\n  command: []\n");
    assert_mentions(&m, &["'harness.command'", "line 5"]);
}

#[test]
fn null_optimizer_block_is_an_error_not_a_crash() {
    let (e, m) = error_of("optimizer: null\n");
    assert_eq!(
        m,
        "'optimizer' is empty (examples/x/config.yaml line 3): indent its keys under it, write 'optimizer: {}' for the defaults, or remove the line"
    );
    assert!(matches!(e, ConfigError::NullBlock { .. }));
}

#[test]
fn empty_blocks_written_without_value_are_errors() {
    for (extra, key, fix) in [
        ("optimizer:\n", "'optimizer' is empty", "'optimizer: {}'"),
        ("metric:\n", "'metric' is empty", "'metric: {}'"),
        ("harness: ~\n", "'harness' is empty", "'harness: {}'"),
        ("output:\n", "'output' is empty", "'output: {}'"),
        (
            "optimizer: {params: null}\n",
            "'optimizer.params' is empty",
            "'params: {}'",
        ),
        (
            "metric:\n  golden:\n",
            "'metric.golden' is empty",
            "'golden: {}'",
        ),
    ] {
        let (_, m) = error_of(extra);
        assert_mentions(&m, &[key, fix, "examples/x/config.yaml line"]);
    }
}

#[test]
fn duplicate_key_is_named() {
    let (e, m) = error_of("optimizer:\n  rounds: 2\n  rounds: 3\n");
    assert_mentions(
        &m,
        &[
            "duplicate key 'optimizer.rounds'",
            "examples/x/config.yaml line 5",
        ],
    );
    assert!(matches!(e, ConfigError::DuplicateKey { .. }));
}

//! Errors about values: wrong types and out-of-range or inconsistent values.

use super::*;

#[test]
fn word_where_a_number_belongs_is_a_type_error() {
    let (e, m) = error_of("optimizer:\n  rounds: many\n");
    assert_eq!(
        m,
        "wrong type for 'optimizer.rounds' (examples/x/config.yaml line 4): expected a whole number (0 or more), found 'many'"
    );
    assert!(matches!(e, ConfigError::WrongType { .. }));
}

#[test]
fn negative_count_is_a_type_error() {
    let (_, m) = error_of("optimizer: {patience: -1}\n");
    assert_mentions(
        &m,
        &[
            "'optimizer.patience'",
            "a whole number (0 or more)",
            "found '-1'",
        ],
    );
}

#[test]
fn type_errors_name_what_the_key_takes() {
    let cases = [
        (
            "val_fraction: abc\n",
            "'val_fraction'",
            "expected a number, found 'abc'",
        ),
        (
            "output: {as_collection: maybe}\n",
            "'output.as_collection'",
            "expected true or false, found 'maybe'",
        ),
        (
            "optimizer: [1]\n",
            "'optimizer'",
            "expected a mapping (key: value pairs), found '[1]'",
        ),
        (
            "harness: {env: [a]}\n",
            "'harness.env'",
            "expected a mapping",
        ),
        (
            "harness: {type: subprocess, command: {a: 1}}\n",
            "'harness.command'",
            "found '{a: 1}'",
        ),
        (
            "metric: {programmatic: {checks: is_valid_json}}\n",
            "'metric.programmatic.checks'",
            "expected a list",
        ),
    ];
    for (extra, key, expected) in cases {
        let (e, m) = error_of(extra);
        assert!(matches!(e, ConfigError::WrongType { .. }), "{extra}: {m}");
        assert_mentions(&m, &[key, "examples/x/config.yaml line 3", expected]);
    }
}

#[test]
fn non_finite_number_in_a_raw_check_is_a_type_error() {
    let (e, m) = error_of("metric: {programmatic: {checks: [{max_length: .nan}]}}\n");
    assert_eq!(
        e.key_path().as_deref(),
        Some("metric.programmatic.checks[0].max_length"),
        "{m}"
    );
    assert_mentions(&m, &["expected a finite number", "found '.nan'", "line 3"]);
}

#[test]
fn list_where_a_path_belongs_is_a_type_error() {
    let e = parse("skill: [a]\ndataset: d\n").unwrap_err();
    assert_mentions(
        &e.to_string(),
        &[
            "wrong type for 'skill' (examples/x/config.yaml line 1)",
            "expected a text value",
            "found '[a]'",
        ],
    );
}

#[test]
fn empty_skill_value_says_it_is_empty() {
    let e = parse("skill:\ndataset: d\n").unwrap_err();
    assert_mentions(&e.to_string(), &["'skill'", "line 1", "it is empty"]);
}

#[test]
fn val_fraction_outside_zero_one_is_rejected() {
    let (e, m) = error_of("val_fraction: 1.5\n");
    assert_eq!(
        m,
        "invalid value for 'val_fraction' (examples/x/config.yaml line 3): 1.5 is not strictly between 0 and 1; use a fraction such as 0.3"
    );
    assert!(matches!(e, ConfigError::InvalidValue { .. }));
    let (_, m) = error_of("val_fraction: 0\n");
    assert_mentions(&m, &["'val_fraction'", "0 is not strictly between 0 and 1"]);
}

#[test]
fn test_fraction_must_leave_training_tasks() {
    let (_, m) = error_of("test_fraction: 1\n");
    assert_mentions(
        &m,
        &[
            "'test_fraction'",
            "line 3",
            "not between 0 (included) and 1",
        ],
    );
    let (_, m) = error_of("val_fraction: 0.6\ntest_fraction: 0.4\n");
    assert_mentions(
        &m,
        &["'test_fraction'", "line 4", "leaves no training tasks"],
    );
}

#[test]
fn selection_fraction_must_leave_training_tasks() {
    let (_, m) = error_of("selection_fraction: -0.1\n");
    assert_mentions(
        &m,
        &[
            "'selection_fraction'",
            "line 3",
            "use 0 for no selection split",
        ],
    );
    let (_, m) = error_of("val_fraction: 0.5\ntest_fraction: 0.2\nselection_fraction: 0.3\n");
    assert_mentions(
        &m,
        &[
            "'selection_fraction'",
            "line 5",
            "three fractions add up to less than 1",
        ],
    );
}

#[test]
fn zero_weight_names_the_weight_key_path() {
    let (e, m) = error_of(
        "metric:\n  judge:\n    criteria:\n      - {name: a}\n      - {name: b, weight: 0}\n",
    );
    assert_eq!(
        m,
        "invalid value for 'metric.judge.criteria[1].weight' (examples/x/config.yaml line 7): weight 0 is not greater than 0; use a positive number such as 1.0"
    );
    assert_eq!(
        e.key_path().as_deref(),
        Some("metric.judge.criteria[1].weight")
    );
}

#[test]
fn every_metric_weight_must_be_positive() {
    let cases = [
        ("metric: {golden: {weight: 0}}\n", "metric.golden.weight"),
        (
            "metric: {programmatic: {weight: -1, checks: [is_valid_json]}}\n",
            "metric.programmatic.weight",
        ),
        (
            "metric: {judge: {weight: 0, criteria: [{name: a}]}}\n",
            "metric.judge.weight",
        ),
        (
            "metric: {systemone: {weight: 0, checks: [{name: a, question: q}]}}\n",
            "metric.systemone.weight",
        ),
        (
            "metric: {systemone: {checks: [{name: a, question: q, weight: 0}]}}\n",
            "metric.systemone.checks[0].weight",
        ),
        ("metric: {golden: {weight: .nan}}\n", "metric.golden.weight"),
    ];
    for (extra, key) in cases {
        let (e, m) = error_of(extra);
        assert_eq!(e.key_path().as_deref(), Some(key), "{m}");
        assert_mentions(&m, &["is not greater than 0", "line 3"]);
    }
}

#[test]
fn counts_must_be_at_least_one() {
    for (extra, key) in [
        ("optimizer: {rounds: 0}\n", "optimizer.rounds"),
        (
            "optimizer: {minibatch_size: 0}\n",
            "optimizer.minibatch_size",
        ),
        ("optimizer: {max_workers: 0}\n", "optimizer.max_workers"),
        ("harness: {max_workers: 0}\n", "harness.max_workers"),
        ("harness: {max_tokens: 0}\n", "harness.max_tokens"),
    ] {
        let (e, m) = error_of(extra);
        assert_eq!(e.key_path().as_deref(), Some(key), "{m}");
        assert_mentions(&m, &["0 is not allowed", "line 3"]);
    }
}

#[test]
fn absurd_counts_of_the_optimizer_are_refused_at_their_line_with_the_bound() {
    for (key, most) in [
        ("rounds", 10_000),
        ("minibatch_size", 10_000),
        ("max_edits_per_round", 32),
        ("parents", 16),
        ("max_merges", 100),
        ("deepen", 8),
        ("max_patch_edits", 32),
    ] {
        let path = format!("optimizer.{key}");
        // Written on its own line, so the error must point at that line, not the block's.
        for value in [most + 1, 100_000, usize::MAX] {
            let (e, m) = error_of(&format!("optimizer:\n  name: gepa\n  {key}: {value}\n"));
            assert_eq!(e.key_path().as_deref(), Some(path.as_str()), "{m}");
            assert_mentions(
                &m,
                &[
                    &format!("{value} "),
                    &format!("more than {most}:"),
                    "line 5",
                ],
            );
        }
        let at_the_bound = format!("{BASE}optimizer:\n  {key}: {most}\n");
        assert!(parse(&at_the_bound).is_ok(), "{key}: {most} is allowed");
    }
    let (_, m) = error_of("optimizer: {name: gepa, parents: 100000}\n");
    assert_mentions(
        &m,
        &[
            "100000 parents a step is more than 16",
            "Pareto frontier",
            "use 1 to 4",
        ],
    );
    // Counts where 0 means "none" stay allowed.
    for zero in ["deepen: 0", "max_merges: 0"] {
        assert!(
            parse(&format!("{BASE}optimizer: {{{zero}}}\n")).is_ok(),
            "{zero}"
        );
    }
}

#[test]
fn a_protected_entry_that_names_nothing_is_refused_at_its_line() {
    for entry in ["\"\"", "\"##\"", "\"  ## \""] {
        let (e, m) = error_of(&format!(
            "optimizer:\n  protected:\n    - Safety\n    - {entry}\n"
        ));
        assert_eq!(
            e.key_path().as_deref(),
            Some("optimizer.protected[1]"),
            "{m}"
        );
        assert_mentions(
            &m,
            &["names no section", "line 6", "with or without its `## `"],
        );
    }
    for fine in ["Safety", "\"## Safety\"", "references/policy.md"] {
        assert!(
            parse(&format!("{BASE}optimizer: {{protected: [{fine}]}}\n")).is_ok(),
            "{fine}"
        );
    }
}

#[test]
fn rollouts_in_flight_have_an_upper_bound_instead_of_a_crash() {
    for (extra, key) in [
        (
            "harness: {max_workers: 18446744073709551615}\n",
            "harness.max_workers",
        ),
        (
            "optimizer: {max_workers: 2305843009213693952}\n",
            "optimizer.max_workers",
        ),
    ] {
        let (e, m) = error_of(extra);
        assert_eq!(e.key_path().as_deref(), Some(key), "{m}");
        assert_mentions(&m, &["more than 65536", "line 3"]);
    }
}

#[test]
fn other_ranges_are_checked() {
    let cases = [
        (
            "optimizer: {min_delta: -0.1}\n",
            "optimizer.min_delta",
            "is not 0 or more",
        ),
        (
            "optimizer: {params: {timeout: 0}}\n",
            "optimizer.params.timeout",
            "not a positive duration",
        ),
        (
            "harness: {temperature: -1}\n",
            "harness.temperature",
            "is not 0 or more",
        ),
        (
            "harness: {timeout: 0}\n",
            "harness.timeout",
            "not a positive duration",
        ),
        (
            "metric: {systemone: {threshold: 2, checks: [{name: a, question: q}]}}\n",
            "metric.systemone.threshold",
            "not a probability",
        ),
        (
            "metric: {systemone: {timeout: -5, checks: [{name: a, question: q}]}}\n",
            "metric.systemone.timeout",
            "not a positive duration",
        ),
    ];
    for (extra, key, problem) in cases {
        let (e, m) = error_of(extra);
        assert_eq!(e.key_path().as_deref(), Some(key), "{m}");
        assert_mentions(&m, &[problem]);
    }
}

#[test]
fn metric_lists_must_not_be_empty() {
    let (_, m) = error_of("metric:\n  programmatic: {weight: 1}\n");
    assert_mentions(
        &m,
        &[
            "'metric.programmatic.checks'",
            "line 4",
            "non-empty 'checks' list",
            "checks: [is_valid_json]",
        ],
    );
    let (_, m) = error_of("metric:\n  judge: {criteria: []}\n");
    assert_mentions(
        &m,
        &[
            "'metric.judge.criteria'",
            "line 4",
            "non-empty 'criteria' list",
        ],
    );
    let (_, m) = error_of("metric:\n  systemone: {weight: 1}\n");
    assert_mentions(
        &m,
        &[
            "'metric.systemone.checks'",
            "line 4",
            "non-empty 'checks' list",
        ],
    );
}

#[test]
fn criterion_names_must_be_unique_and_non_blank() {
    let (e, m) =
        error_of("metric:\n  judge:\n    criteria:\n      - {name: a}\n      - {name: a}\n");
    assert_eq!(
        e.key_path().as_deref(),
        Some("metric.judge.criteria[1].name")
    );
    assert_mentions(&m, &["the name 'a' is used twice", "line 7"]);
    let (e, _) = error_of("metric: {systemone: {checks: [{name: ' ', question: q}]}}\n");
    assert_eq!(
        e.key_path().as_deref(),
        Some("metric.systemone.checks[0].name")
    );
}

#[test]
fn unknown_harness_type_lists_the_supported_ones() {
    let (e, m) = error_of("harness:\n  type: x\n");
    assert_eq!(
        m,
        "Unknown harness type 'x'. Supported: api, claude_code, subprocess, codex, gemini_cli ('harness.type', examples/x/config.yaml line 4)"
    );
    assert!(matches!(e, ConfigError::UnknownChoice { .. }));
}

#[test]
fn misspelt_harness_type_gets_a_suggestion() {
    let (_, m) = error_of("harness: {type: subproces}\n");
    assert_mentions(
        &m,
        &[
            "Unknown harness type 'subproces'",
            "did you mean 'subprocess'?",
        ],
    );
}

#[test]
fn unknown_input_via_and_kind_list_their_choices() {
    let (_, m) = error_of("harness: {input_via: pipe}\n");
    assert_mentions(
        &m,
        &[
            "Unknown value 'pipe'. Supported: stdin, arg",
            "'harness.input_via'",
            "line 3",
        ],
    );
    let (_, m) = error_of("kind: clasifier\n");
    assert_mentions(
        &m,
        &[
            "Unknown value 'clasifier'. Supported: skill, classifier",
            "did you mean 'classifier'?",
        ],
    );
}

#[test]
fn a_misspelt_reflection_style_lists_the_styles_and_suggests_one() {
    let (_, m) = error_of("optimizer: {reflection: compct}\n");
    assert_mentions(
        &m,
        &[
            "Unknown value 'compct'. Supported: full, compact",
            "'optimizer.reflection'",
            "line 3",
            "did you mean 'compact'?",
        ],
    );
}

#[test]
fn every_golden_mode_reads_from_its_name() {
    for mode in GoldenMode::ALL {
        let c = parse(&format!("{BASE}metric: {{golden: {{mode: {mode}}}}}\n")).unwrap();
        assert_eq!(c.metric.golden.map(|g| g.mode), Some(mode));
    }
}

#[test]
fn unknown_golden_mode_lists_the_valid_modes_at_its_line() {
    let (e, m) = error_of("metric:\n  golden: {mode: fuzzy}\n");
    assert_eq!(e.key_path().as_deref(), Some("metric.golden.mode"), "{m}");
    assert_mentions(
        &m,
        &[
            "'fuzzy'",
            "exact, normalized, token_f1, json_equal, numeric",
            "line 4",
        ],
    );
}

#[test]
fn an_unreadable_check_names_its_entry_and_line() {
    let (e, m) = error_of(
        "metric:\n  programmatic:\n    checks:\n      - is_valid_json\n      - {is_json: true}\n",
    );
    assert!(matches!(e, ConfigError::UnreadableValue { .. }), "{m}");
    assert_eq!(
        e.key_path().as_deref(),
        Some("metric.programmatic.checks[1]"),
        "{m}"
    );
    assert_mentions(
        &m,
        &[
            "unknown programmatic check 'is_json'",
            "did you mean 'is_valid_json'?",
            "line 7",
        ],
    );
}

#[test]
fn a_regex_that_does_not_compile_is_refused_when_the_config_loads() {
    let (e, m) = error_of("metric: {programmatic: {checks: [{matches_regex: \"(unclosed\"}]}}\n");
    assert_eq!(
        e.key_path().as_deref(),
        Some("metric.programmatic.checks[0]"),
        "{m}"
    );
    assert_mentions(&m, &["invalid regular expression /(unclosed/", "line 3"]);
}

#[test]
fn a_tracking_server_is_an_http_address_and_an_experiment_has_a_name() {
    let (e, m) = error_of("tracking: {mlflow: {uri: \"file:./mlruns\"}}\n");
    assert_eq!(e.key_path().as_deref(), Some("tracking.mlflow.uri"), "{m}");
    assert_mentions(
        &m,
        &["not an http:// or https:// URL", "http://127.0.0.1:5000"],
    );
    let (e, m) = error_of("tracking: {mlflow: {uri: \"http://user:pw@exa mple:5000\"}}\n");
    assert_eq!(e.key_path().as_deref(), Some("tracking.mlflow.uri"), "{m}");
    assert_mentions(&m, &["is not a URL"]);
    assert!(!m.contains("pw@"), "credentials are not quoted: {m}");
    let (e, m) = error_of("tracking: {mlflow: {uri: \"http://h:5000\", experiment: \" \"}}\n");
    assert_eq!(
        e.key_path().as_deref(),
        Some("tracking.mlflow.experiment"),
        "{m}"
    );
    let (_, m) = error_of("tracking: {mlflow: {url: \"http://h:5000\"}}\n");
    assert_mentions(&m, &["unknown key 'url'", "did you mean 'uri'?"]);
    let config = parse(&format!(
        "{BASE}tracking: {{mlflow: {{uri: \"https://h:5000/\", experiment: e}}}}\n"
    ))
    .unwrap();
    let mlflow = config.tracking.mlflow.unwrap();
    assert_eq!(mlflow.uri.as_deref(), Some("https://h:5000/"));
    assert_eq!(mlflow.experiment.as_deref(), Some("e"));
}

//! The rules of the harnesses that run a child process and of the `command` metric: keys
//! that only some harnesses read, `input_via: arg`, `skill_mode`, and command strings.

use super::*;

#[test]
fn a_command_string_is_split_like_a_shell_would() {
    let c = parse(&format!(
        "{BASE}harness: {{type: subprocess, command: \"python3 'run skill.py' --in {{input}}\"}}\n"
    ))
    .unwrap();
    assert_eq!(
        c.harness.command.unwrap().argv().unwrap(),
        vec!["python3", "run skill.py", "--in", "{input}"]
    );
}

#[test]
fn an_unclosed_quote_in_a_command_string_is_named() {
    let (e, m) = error_of("harness:\n  type: subprocess\n  command: \"run 'oops\"\n");
    assert_eq!(e.key_path().as_deref(), Some("harness.command"));
    assert_mentions(
        &m,
        &[
            "line 5",
            "a quote is not closed",
            "write the command as a list",
        ],
    );
}

#[test]
fn arg_mode_needs_an_input_placeholder() {
    let (e, m) =
        error_of("harness: {type: subprocess, input_via: arg, command: [cat, \"{skill_file}\"]}\n");
    assert_eq!(e.key_path().as_deref(), Some("harness.input_via"));
    assert_mentions(&m, &["input_via: arg", "{input}", "{input_file}"]);
    assert!(
        parse(&format!(
            "{BASE}harness: {{type: subprocess, input_via: arg, command: [cat, \"{{input_file}}\"]}}\n"
        ))
        .is_ok()
    );
}

#[test]
fn agent_harnesses_refuse_a_command_of_their_own() {
    for kind in ["claude_code", "codex", "gemini_cli", "api"] {
        let (e, m) = error_of(&format!("harness: {{type: {kind}, command: [x]}}\n"));
        assert_eq!(e.key_path().as_deref(), Some("harness.command"), "{m}");
        assert_mentions(&m, &[kind, "type: subprocess"]);
    }
    let (e, _) = error_of("harness: {type: codex, input_via: arg}\n");
    assert_eq!(e.key_path().as_deref(), Some("harness.input_via"));
}

#[test]
fn skill_mode_installed_needs_an_agent_and_its_own_workspace() {
    let (e, m) = error_of("harness: {skill_mode: installed}\n");
    assert_eq!(e.key_path().as_deref(), Some("harness.skill_mode"));
    assert_mentions(&m, &["api harness"]);
    let (e, m) = error_of("harness: {type: claude_code, skill_mode: installed, cwd: work}\n");
    assert_eq!(e.key_path().as_deref(), Some("harness.cwd"));
    assert_mentions(&m, &["fresh temporary workspace", "skill_mode: prompt"]);
    let c = parse(&format!(
        "{BASE}harness: {{type: gemini_cli, skill_mode: installed, model: gemini-2.5-pro}}\n"
    ))
    .unwrap();
    assert_eq!(c.harness.skill_mode, SkillMode::Installed);
    assert_eq!(c.harness.executable(), "gemini");
}

#[test]
fn an_unknown_skill_mode_lists_the_choices() {
    let (e, m) = error_of("harness: {type: codex, skill_mode: copied}\n");
    assert_eq!(e.key_path().as_deref(), Some("harness.skill_mode"));
    assert_mentions(&m, &["prompt", "installed"]);
}

#[test]
fn the_command_metric_reads_its_block() {
    let c = parse(&format!(
        "{BASE}metric:\n  command: {{command: [python3, score.py], weight: 2, timeout: 5, env: {{LEVEL: 3}}}}\n"
    ))
    .unwrap();
    let m = c.metric.command.unwrap();
    assert_eq!(
        m.command.unwrap().argv().unwrap(),
        vec!["python3", "score.py"]
    );
    assert_eq!((m.weight, m.timeout), (2.0, 5.0));
    assert_eq!(m.env.get("LEVEL").map(String::as_str), Some("3"));
    assert!(
        c.metric.golden.is_none(),
        "a command metric replaces the default golden"
    );
    let defaults = parse(&format!("{BASE}metric: {{command: {{command: score}}}}\n"))
        .unwrap()
        .metric
        .command
        .unwrap();
    assert_eq!((defaults.weight, defaults.timeout), (1.0, 30.0));
}

#[test]
fn the_command_metric_needs_a_command_a_weight_and_a_timeout() {
    let (e, m) = error_of("metric:\n  command: {weight: 1}\n");
    assert_eq!(e.key_path().as_deref(), Some("metric.command.command"));
    assert_mentions(&m, &["line 4", "command: [python3, score.py]"]);
    let (e, _) = error_of("metric: {command: {command: [], weight: 1}}\n");
    assert_eq!(e.key_path().as_deref(), Some("metric.command.command"));
    let (e, _) = error_of("metric: {command: {command: [x], weight: 0}}\n");
    assert_eq!(e.key_path().as_deref(), Some("metric.command.weight"));
    let (e, _) = error_of("metric: {command: {command: [x], timeout: 0}}\n");
    assert_eq!(e.key_path().as_deref(), Some("metric.command.timeout"));
    let (e, _) = error_of("metric: {command: {command: [x], shell: true}}\n");
    assert_eq!(e.key_path().as_deref(), Some("metric.command.shell"));
}

#[test]
fn the_command_metric_cwd_resolves_against_the_config_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = format!("{BASE}metric: {{command: {{command: [x], cwd: scripts}}}}\n");
    let path = write(tmp.path(), "ex/config.yaml", &yaml);
    let loaded = load_config_in(&path, None).unwrap();
    assert_eq!(
        loaded.config.metric.command.unwrap().cwd,
        Some(tmp.path().join("ex/scripts"))
    );
}

#[test]
fn a_ray_executor_needs_a_process_harness_and_the_dashboard_address() {
    let ray = |rest: &str| {
        format!("harness: {{type: subprocess, command: [x], executor: {{type: ray{rest}}}}}\n")
    };
    let (e, m) = error_of(&ray(""));
    assert_eq!(
        e.key_path().as_deref(),
        Some("harness.executor.type"),
        "{m}"
    );
    assert_mentions(
        &m,
        &[
            "address of the cluster's dashboard",
            "http://127.0.0.1:8265",
        ],
    );
    let (e, m) = error_of(&ray(", address: 127.0.0.1:8265"));
    assert_eq!(
        e.key_path().as_deref(),
        Some("harness.executor.address"),
        "{m}"
    );
    let (e, m) = error_of(&ray(", address: \"http://user:pw@exa mple:8265\""));
    assert_eq!(
        e.key_path().as_deref(),
        Some("harness.executor.address"),
        "{m}"
    );
    assert_mentions(&m, &["is not a URL", "http://HOST:PORT"]);
    assert!(!m.contains("pw@"), "credentials are not quoted: {m}");
    let (e, m) = error_of(&ray(", address: \"http://h:8265\", num_cpus: -1"));
    assert_eq!(
        e.key_path().as_deref(),
        Some("harness.executor.num_cpus"),
        "{m}"
    );
    let (e, m) = error_of("harness: {executor: {type: ray, address: \"http://h:8265\"}}\n");
    assert_eq!(
        e.key_path().as_deref(),
        Some("harness.executor.type"),
        "{m}"
    );
    assert_mentions(&m, &["api harness", "batch: true"]);
    let (e, m) = error_of(
        "harness: {type: subprocess, command: [x], executor: {address: \"http://h:8265\"}}\n",
    );
    assert_eq!(
        e.key_path().as_deref(),
        Some("harness.executor.address"),
        "{m}"
    );
    assert_mentions(&m, &["local executor", "type: ray"]);
    let c = parse(&format!(
        "{BASE}{}",
        ray(", address: \"http://127.0.0.1:8265\", max_workers: 32, num_cpus: 0.5")
    ))
    .unwrap();
    assert_eq!(c.harness.executor.max_workers, Some(32));
    assert_eq!(c.harness.executor.num_cpus, Some(0.5));
}

//! Reading files: missing and unreadable files, path resolution, `.env`, run names.

use super::*;

#[test]
fn missing_file_is_named() {
    let e = load_config(Path::new("no/such/config.yaml")).unwrap_err();
    assert!(matches!(e, ConfigError::NotFound { .. }));
    assert_eq!(
        e.to_string(),
        "config file not found: no/such/config.yaml; check the path given to --config"
    );
}

#[test]
fn unreadable_file_is_named_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let e = load_config(tmp.path()).unwrap_err();
    assert!(matches!(e, ConfigError::Unreadable { .. }), "{e}");
    assert_mentions(
        &e.to_string(),
        &["cannot read config file", &tmp.path().display().to_string()],
    );
    let binary = tmp.path().join("bin.yaml");
    fs::write(&binary, [0xff, 0xfe, 0x00, 0x41]).unwrap();
    let e = load_config(&binary).unwrap_err();
    assert_mentions(&e.to_string(), &["cannot read config file", "bin.yaml"]);
}

#[test]
fn errors_name_the_file_as_given() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        "runs/my-run.yaml",
        "skill: s.md\ndataset: d.jsonl\noptimizer: {roundz: 1}\n",
    );
    let e = load_config(&path).unwrap_err();
    assert_mentions(&e.to_string(), &[&format!("({} line 3)", path.display())]);
}

#[test]
fn classifier_config_given_to_the_skill_loader_points_at_the_classifier_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        "config.yaml",
        "kind: classifier\nprobes: p.jsonl\n",
    );
    let e = load_config(&path).unwrap_err();
    assert!(matches!(e, ConfigError::ClassifierConfig { .. }));
    assert_mentions(
        &e.to_string(),
        &[
            "is a classifier-mode config",
            "skill-factory optimize -c",
            "skill-factory lab",
        ],
    );
    assert!(is_classifier_config(&path));
}

#[test]
fn every_relative_path_resolves_against_the_config_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = "skill: seed.md\ndataset: data/d.jsonl\nprovider: {name: fake, script: fake.yaml}\njudge_provider: {name: fake, script: judge.yaml}\noptimizer: {params: {work_dir: so, cwd: tools}}\nmetric: {systemone: {cache: cache/a.jsonl, checks: [{name: a, question: q}]}}\nharness: {type: subprocess, command: [x], cwd: work}\noutput: {dir: runs/r, emit_skill_dir: dist}\n";
    let path = write(tmp.path(), "ex/config.yaml", yaml);
    let loaded = load_config_in(&path, None).unwrap();
    let dir = tmp.path().join("ex");
    let c = &loaded.config;
    assert_eq!(loaded.dir, dir);
    assert_eq!(c.skill, dir.join("seed.md"));
    assert_eq!(c.dataset, dir.join("data/d.jsonl"));
    assert_eq!(c.output.dir, Some(dir.join("runs/r")));
    assert_eq!(c.output.emit_skill_dir, Some(dir.join("dist")));
    assert_eq!(c.harness.cwd, Some(dir.join("work")));
    assert_eq!(
        c.metric.systemone.as_ref().and_then(|s| s.cache.clone()),
        Some(dir.join("cache/a.jsonl"))
    );
    assert_eq!(c.optimizer.params.work_dir, dir.join("so"));
    assert_eq!(c.optimizer.params.cwd, Some(dir.join("tools")));
    let script = |b: &Option<skill_factory_llm::ProviderSettings>| {
        b.as_ref().and_then(|b| b.script.clone()).map(PathBuf::from)
    };
    assert_eq!(script(&c.provider), Some(dir.join("fake.yaml")));
    assert_eq!(script(&c.judge_provider), Some(dir.join("judge.yaml")));
}

#[test]
fn a_local_models_file_resolves_against_the_config_directory() {
    let tmp = tempfile::tempdir().unwrap();
    // The target is local; the optimizer block inherits it (no name); the judge is hosted,
    // so its model is an id, not a path.
    let yaml = "skill: s.md\ndataset: d.jsonl\nprovider: {name: Local, model: ../models/m.gguf}\noptimizer_provider: {model: big.gguf}\njudge_provider: {name: openai, model: gpt-x}\n";
    let path = write(tmp.path(), "ex/config.yaml", yaml);
    let c = load_config_in(&path, None).unwrap().config;
    let dir = tmp.path().join("ex");
    let model = |b: &Option<skill_factory_llm::ProviderSettings>| {
        b.as_ref().and_then(|b| b.model.clone()).map(PathBuf::from)
    };
    assert_eq!(model(&c.provider), Some(dir.join("../models/m.gguf")));
    assert_eq!(model(&c.optimizer_provider), Some(dir.join("big.gguf")));
    assert_eq!(model(&c.judge_provider), Some(PathBuf::from("gpt-x")));
}

#[test]
fn default_output_dir_resolves_against_the_config_directory_too() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), "ex/config.yaml", BASE);
    let loaded = load_config_in(&path, None).unwrap();
    assert_eq!(loaded.config.output.dir, None);
    assert_eq!(loaded.runs_dir(), tmp.path().join("ex/runs/ex"));
    assert_eq!(
        loaded.config.optimizer.params.work_dir,
        tmp.path().join("ex/runs/skillopt")
    );
}

#[test]
fn absolute_paths_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let abs = tmp.path().join("elsewhere/seed.md");
    let path = write(
        tmp.path(),
        "ex/config.yaml",
        &format!("skill: '{}'\ndataset: d.jsonl\n", abs.display()),
    );
    assert_eq!(load_config_in(&path, None).unwrap().config.skill, abs);
}

#[test]
fn config_in_the_working_directory_keeps_paths_as_written() {
    let mut c = parse(BASE).unwrap();
    resolve_paths(&mut c, Path::new(""));
    assert_eq!(c.skill, PathBuf::from("s.md"));
    assert_eq!(c.output.dir, None);
    assert_eq!(config_dir(Path::new("config.yaml")), PathBuf::from("."));
    assert_eq!(
        config_dir(Path::new("examples/x/config.yaml")),
        PathBuf::from("examples/x")
    );
}

#[test]
fn dotenv_beside_the_config_wins_over_the_working_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("cwd");
    write(&cwd, ".env", "SF_TEST_A=from-cwd\nSF_TEST_ONLY_CWD=cwd\n");
    write(
        tmp.path(),
        "ex/.env",
        "SF_TEST_A=from-config-dir\n# a comment\nexport SF_TEST_B='quoted value'\n",
    );
    let path = write(tmp.path(), "ex/config.yaml", BASE);
    let loaded = load_config_in(&path, Some(&cwd)).unwrap();
    assert_eq!(loaded.env("SF_TEST_A").as_deref(), Some("from-config-dir"));
    assert_eq!(loaded.env("SF_TEST_ONLY_CWD").as_deref(), Some("cwd"));
    assert_eq!(loaded.env("SF_TEST_B").as_deref(), Some("quoted value"));
    assert_eq!(loaded.env("SF_TEST_UNSET_ANYWHERE"), None);
    assert_eq!(loaded.dotenv_vars().len(), 3);
    // Reading .env never touches the process environment.
    assert!(std::env::var("SF_TEST_A").is_err());
}

#[test]
fn process_environment_wins_over_dotenv() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "ex/.env", "PATH=/from/dotenv\n");
    let path = write(tmp.path(), "ex/config.yaml", BASE);
    let loaded = load_config_in(&path, None).unwrap();
    assert_eq!(loaded.env("PATH"), std::env::var("PATH").ok());
}

#[test]
fn broken_dotenv_line_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "ex/.env", "GOOD=1\nthis is not a pair\n");
    let path = write(tmp.path(), "ex/config.yaml", BASE);
    let e = load_config_in(&path, None).unwrap_err();
    assert!(matches!(e, ConfigError::DotEnv { .. }));
    assert_mentions(
        &e.to_string(),
        &[
            ".env line 2",
            "cannot parse 'this is not a pair'",
            "KEY=value",
        ],
    );
}

#[test]
fn dotenv_model_variables_feed_role_resolution() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "ex/.env",
        "SKILL_FACTORY_JUDGE_MODEL=judge-from-dotenv\n",
    );
    let path = write(tmp.path(), "ex/config.yaml", BASE);
    let loaded = load_config_in(&path, None).unwrap();
    let expected = std::env::var("SKILL_FACTORY_JUDGE_MODEL")
        .ok()
        .filter(|v| !v.trim().is_empty());
    assert_eq!(
        loaded.role(Role::Judge).model,
        expected.or(Some("judge-from-dotenv".to_owned()))
    );
}

#[test]
fn config_name_drops_config_stems_and_suffixes() {
    assert_eq!(
        config_name(Path::new("examples/invoice-extractor/config.yaml")),
        "invoice-extractor"
    );
    assert_eq!(
        config_name(Path::new("examples/invoice-extractor/config.fast.yaml")),
        "invoice-extractor"
    );
    assert_eq!(
        config_name(Path::new("examples/invoice-extractor/Config.yml")),
        "invoice-extractor"
    );
    assert_eq!(config_name(Path::new("my-run.yaml")), "my-run");
    assert_eq!(config_name(Path::new("runs/my-run.config.yaml")), "my-run");
    assert_eq!(config_name(Path::new("tickets_config.yaml")), "tickets");
    assert_eq!(config_name(Path::new("configure.yaml")), "configure");
}

#[test]
fn config_name_in_the_working_directory_uses_its_folder() {
    let name = config_name(Path::new("config.yaml"));
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(
        Some(name.as_str()),
        cwd.file_name().and_then(|n| n.to_str())
    );
}

#[test]
fn debug_output_hides_secrets() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "ex/.env",
        "SF_TEST_SECRET_KEY=sk-dotenv-secret\n",
    );
    let yaml = format!(
        "{BASE}metric: {{systemone: {{api_key: sk-config-secret, checks: [{{name: a, question: q}}]}}}}\n"
    );
    let path = write(tmp.path(), "ex/config.yaml", &yaml);
    let loaded = load_config_in(&path, None).unwrap();
    let debug = format!("{loaded:?}");
    assert!(debug.contains("SF_TEST_SECRET_KEY"), "{debug}");
    assert!(
        !debug.contains("sk-dotenv-secret") && !debug.contains("sk-config-secret"),
        "{debug}"
    );
}

//! The `cache` block and the provider keys of the scheduler.

use skill_factory_llm::CacheMode;

use super::*;

#[test]
fn the_cache_is_read_write_beside_the_config_by_default() {
    let c = parse(BASE).unwrap();
    assert_eq!(c.cache.mode, CacheMode::ReadWrite);
    assert_eq!(c.cache.path, Path::new(".skill-factory/cache.sqlite"));
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), "runs/config.yaml", BASE);
    let loaded = load_config_in(&path, None).unwrap();
    assert_eq!(
        loaded.config.cache.path,
        tmp.path().join("runs/.skill-factory/cache.sqlite")
    );
}

#[test]
fn the_cache_block_sets_mode_and_path_relative_to_the_config() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = format!("{BASE}cache: {{mode: read_only, path: shared/answers.sqlite}}\n");
    let path = write(tmp.path(), "exp/config.yaml", &yaml);
    let loaded = load_config_in(&path, None).unwrap();
    assert_eq!(loaded.config.cache.mode, CacheMode::ReadOnly);
    assert_eq!(
        loaded.config.cache.path,
        tmp.path().join("exp/shared/answers.sqlite")
    );
    assert_eq!(
        parse(&format!("{BASE}cache: {{mode: off}}\n"))
            .unwrap()
            .cache
            .mode,
        CacheMode::Off
    );
}

#[test]
fn a_misspelt_cache_mode_or_key_suggests_the_right_one() {
    let (_, message) = error_of("cache: {mode: readonly}\n");
    assert_mentions(&message, &["cache.mode", "read_only"]);
    let (_, message) = error_of("cache: {pth: x.sqlite}\n");
    assert_mentions(&message, &["pth", "path"]);
    let (error, _) = error_of("cache:\n");
    assert!(matches!(error, ConfigError::NullBlock { .. }), "{error:?}");
}

#[test]
fn roles_inherit_the_targets_pace_and_call_timeout() {
    let c = parse(&format!(
        "{BASE}provider: {{name: openai, model: m, requests_per_minute: 500, call_timeout: 30}}\njudge_provider: {{model: j}}\n"
    ))
    .unwrap();
    let judge = c.roles(&|_| None).judge;
    assert_eq!(judge.requests_per_minute, Some(500));
    assert_eq!(judge.call_timeout, Some(30.0));
}

//! Which provider and model each role gets.

use super::*;

fn env_of(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn roles(yaml: &str, env: &HashMap<String, String>) -> ResolvedRoles {
    parse(&format!("{BASE}{yaml}"))
        .unwrap()
        .roles(&|k| env.get(k).cloned())
}

fn name_model(s: &skill_factory_llm::ProviderSettings) -> (&str, &str) {
    (
        s.name.as_deref().unwrap_or("-"),
        s.model.as_deref().unwrap_or("-"),
    )
}

#[test]
fn nothing_given_keeps_the_reference_defaults() {
    let r = roles("", &env_of(&[]));
    assert_eq!(name_model(&r.target), ("anthropic", "claude-sonnet-5"));
    assert_eq!(name_model(&r.optimizer), ("anthropic", "claude-opus-4-8"));
    assert_eq!(name_model(&r.judge), ("anthropic", "claude-sonnet-5"));
}

#[test]
fn role_model_variables_apply_when_no_block_names_a_model() {
    let env = env_of(&[
        ("SKILL_FACTORY_TARGET_MODEL", "t"),
        ("SKILL_FACTORY_OPTIMIZER_MODEL", "o"),
        ("SKILL_FACTORY_JUDGE_MODEL", "j"),
    ]);
    let r = roles("", &env);
    assert_eq!(
        (
            name_model(&r.target),
            name_model(&r.optimizer),
            name_model(&r.judge)
        ),
        (("anthropic", "t"), ("anthropic", "o"), ("anthropic", "j"))
    );
    let r = roles(
        "provider: {name: openai, model: gpt}\noptimizer_provider: {name: openai, model: big}\n",
        &env,
    );
    assert_eq!(name_model(&r.target), ("openai", "gpt"));
    assert_eq!(name_model(&r.optimizer), ("openai", "big"));
}

#[test]
fn absent_role_blocks_inherit_the_whole_target_block() {
    let r = roles(
        "provider: {name: LMStudio , model: gemma, base_url: 'http://h:1234/v1', api_key: k}\n",
        &env_of(&[]),
    );
    for role in [&r.target, &r.optimizer, &r.judge] {
        assert_eq!(name_model(role), ("lmstudio", "gemma"));
        assert_eq!(role.base_url.as_deref(), Some("http://h:1234/v1"));
        assert_eq!(role.api_key.as_deref(), Some("k"));
    }
}

#[test]
fn inherited_role_takes_its_own_model_variable() {
    let env = env_of(&[
        ("SKILL_FACTORY_OPTIMIZER_MODEL", "bigger"),
        ("SKILL_FACTORY_JUDGE_MODEL", "judge"),
    ]);
    let r = roles(
        "provider: {name: azure, model: m, deployment: dep, base_url: u}\n",
        &env,
    );
    assert_eq!(name_model(&r.optimizer), ("azure", "bigger"));
    assert_eq!(r.optimizer.base_url.as_deref(), Some("u"));
    assert_eq!(
        r.optimizer.deployment, None,
        "the deployment named the target's model"
    );
    assert_eq!(name_model(&r.judge), ("azure", "judge"));
    assert_eq!(r.target.deployment.as_deref(), Some("dep"));
}

#[test]
fn target_alias_is_used_when_provider_is_absent_or_empty() {
    let r = roles("target: {name: ollama, model: llama}\n", &env_of(&[]));
    assert_eq!(name_model(&r.target), ("ollama", "llama"));
    let r = roles(
        "provider: {}\ntarget: {name: ollama, model: llama}\n",
        &env_of(&[]),
    );
    assert_eq!(name_model(&r.target), ("ollama", "llama"));
    let r = roles(
        "provider: {name: groq, model: g}\ntarget: {name: ollama, model: llama}\n",
        &env_of(&[]),
    );
    assert_eq!(name_model(&r.target), ("groq", "g"));
}

#[test]
fn role_block_without_name_uses_the_target_provider_and_connection() {
    let yaml = "provider: {name: lmstudio, model: small, base_url: 'http://h/v1', timeout: 30}\noptimizer_provider: {model: large}\njudge_provider: {api_key: other}\n";
    let r = roles(yaml, &env_of(&[]));
    assert_eq!(name_model(&r.optimizer), ("lmstudio", "large"));
    assert_eq!(r.optimizer.base_url.as_deref(), Some("http://h/v1"));
    assert_eq!(r.optimizer.timeout, Some(30.0));
    assert_eq!(name_model(&r.judge), ("lmstudio", "small"));
    assert_eq!(r.judge.api_key.as_deref(), Some("other"));
    assert_eq!(r.judge.base_url.as_deref(), Some("http://h/v1"));
}

#[test]
fn named_role_block_stands_alone() {
    let yaml = "provider: {name: lmstudio, model: small, base_url: 'http://h/v1'}\noptimizer_provider: {name: anthropic}\njudge_provider: {name: openai, model: gpt}\n";
    let r = roles(yaml, &env_of(&[]));
    assert_eq!(name_model(&r.optimizer), ("anthropic", "claude-opus-4-8"));
    assert_eq!(r.optimizer.base_url, None);
    assert_eq!(name_model(&r.judge), ("openai", "gpt"));
    assert_eq!(r.judge.base_url, None);
}

#[test]
fn named_judge_without_model_uses_the_resolved_target_model() {
    let r = roles(
        "provider: {name: openai, model: gpt-x}\njudge_provider: {name: openrouter}\n",
        &env_of(&[]),
    );
    assert_eq!(name_model(&r.judge), ("openrouter", "gpt-x"));
}

#[test]
fn role_block_without_target_uses_anthropic_defaults() {
    let r = roles(
        "optimizer_provider: {model: o}\njudge_provider: {base_url: 'http://j'}\n",
        &env_of(&[]),
    );
    assert_eq!(name_model(&r.optimizer), ("anthropic", "o"));
    assert_eq!(name_model(&r.judge), ("anthropic", "claude-sonnet-5"));
    assert_eq!(r.judge.base_url.as_deref(), Some("http://j"));
}

#[test]
fn fake_target_script_is_shared_with_absent_roles() {
    let r = roles("provider: {name: fake, responses: [a, b]}\n", &env_of(&[]));
    assert_eq!(
        r.optimizer.responses,
        Some(vec!["a".to_owned(), "b".to_owned()])
    );
    assert_eq!(r.judge.name.as_deref(), Some("fake"));
}

#[test]
fn blank_model_variable_counts_as_unset() {
    let r = roles("", &env_of(&[("SKILL_FACTORY_TARGET_MODEL", "  ")]));
    assert_eq!(name_model(&r.target), ("anthropic", "claude-sonnet-5"));
}

#[test]
fn loaded_config_resolves_roles_with_its_env() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        "ex/config.yaml",
        &format!("{BASE}provider: {{name: vllm, model: q}}\n"),
    );
    let loaded = load_config_in(&path, None).unwrap();
    assert_eq!(name_model(loaded.role(Role::Target)), ("vllm", "q"));
    assert_eq!(loaded.role(Role::Optimizer).name.as_deref(), Some("vllm"));
}

//! The scripted fake built from a provider block, as a run config would build it.

use std::collections::HashMap;

use skill_factory_llm::{ChatRequest, FakeRule, LlmError, ProviderSettings, build_client};

fn no_env(_: &str) -> Option<String> {
    None
}

fn fake_block() -> ProviderSettings {
    ProviderSettings {
        name: Some("fake".into()),
        ..ProviderSettings::default()
    }
}

/// `text` as the script `name` in a new temporary folder (kept as long as the handle), and a
/// fake block that reads it.
fn scripted_block(name: &str, text: &str) -> (tempfile::TempDir, ProviderSettings) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, script_block(&path.display().to_string()))
}

/// A fake block reading the script at `path`.
fn script_block(path: &str) -> ProviderSettings {
    ProviderSettings {
        script: Some(path.to_string()),
        ..fake_block()
    }
}

/// Why a fake block with the script `path` cannot be built.
fn script_error(path: &str) -> LlmError {
    build_client(&script_block(path), "", &no_env)
        .err()
        .unwrap()
}

fn ask(system: &str, user: &str) -> ChatRequest {
    ChatRequest::single(Some(system.into()), user, 0.0, 100)
}

#[tokio::test]
async fn inline_rules_come_before_script_rules_and_inline_responses_win() {
    let (_dir, scripted) = scripted_block(
        "script.yaml",
        "rules:\n  - system_contains: judge\n    reply: '{\"scores\": {\"correctness\": 10}}'\n  - user_contains: hello\n    reply: from script\nresponses: [script response]\n",
    );
    let settings = ProviderSettings {
        responses: Some(vec!["inline response".into()]),
        rules: Some(vec![FakeRule {
            user_contains: Some("hello".into()),
            reply: "from block".into(),
            ..FakeRule::default()
        }]),
        ..scripted
    };
    let fake = build_client(&settings, "fake-model", &no_env).unwrap();
    assert_eq!(fake.model(), "fake-model");
    let replies: HashMap<&str, String> = HashMap::from([
        ("hello", fake.chat(&ask("", "hello")).await.unwrap().text),
        (
            "judge",
            fake.chat(&ask("You are a judge", "x")).await.unwrap().text,
        ),
        ("other", fake.chat(&ask("", "other")).await.unwrap().text),
    ]);
    assert_eq!(replies["hello"], "from block");
    assert_eq!(replies["judge"], "{\"scores\": {\"correctness\": 10}}");
    assert_eq!(replies["other"], "inline response");
}

#[tokio::test]
async fn a_script_alone_answers_and_unmatched_requests_are_script_errors() {
    let (_dir, settings) = scripted_block(
        "rules.yaml",
        "rules:\n  - user_matches: '^\\d+$'\n    reply: a number\n",
    );
    let fake = build_client(&settings, "", &no_env).unwrap();
    assert_eq!(fake.chat(&ask("", "123")).await.unwrap().text, "a number");
    let error = fake.chat(&ask("", "abc")).await.unwrap_err();
    assert!(matches!(error, LlmError::Script(_)), "{error:?}");
    assert!(error.to_string().contains("\"abc\""), "{error}");
}

#[test]
fn script_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml").display().to_string();
    let error = script_error(&missing);
    assert!(error.to_string().contains(&missing), "{error}");

    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "rules:\n  - user_matches: '('\n    reply: x\n").unwrap();
    let bad = bad.display().to_string();
    let text = script_error(&bad).to_string();
    assert!(
        text.contains(&format!("rule 1 of {bad}")) && text.contains("user_matches"),
        "{text}"
    );
}

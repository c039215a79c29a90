//! Both wire formats against the loopback mock, checked from the server's side: what was
//! sent (URL, headers, body) and what was read back.

use std::collections::HashMap;

use serde_json::json;
use skill_factory_llm::{
    ApiKey, ChatModel, ChatRequest, ClientOptions, Message, OpenAiClient, ProviderSettings, Role,
    StopReason, TokenUsage, build_client,
};
use skill_factory_mock::{MockConfig, MockServer};

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |var: &str| map.get(var).cloned()
}

fn block(name: &str, base_url: &str) -> ProviderSettings {
    ProviderSettings {
        name: Some(name.to_string()),
        model: Some("test-model".to_string()),
        base_url: Some(base_url.to_string()),
        ..ProviderSettings::default()
    }
}

async fn mock_with_answers(answers: &[(&str, &str)]) -> MockServer {
    let config = MockConfig {
        answers: answers
            .iter()
            .map(|(q, a)| (q.to_string(), a.to_string()))
            .collect(),
        ..MockConfig::default()
    };
    MockServer::start(config).await.expect("mock server starts")
}

#[tokio::test]
async fn openai_format_round_trips_with_system_first_and_stop_sequences() {
    let mock = mock_with_answers(&[("What is the capital of France?", "  Paris  ")]).await;
    let base = format!("{}/v1", mock.base_url());
    let client = build_client(
        &block("openai", &base),
        "",
        &env_of(&[("OPENAI_API_KEY", "sk-openai-test-key")]),
    )
    .unwrap();
    let mut request = ChatRequest::single(
        Some("Answer in one word.".into()),
        "What is the capital of France?",
        0.25,
        64,
    );
    request.stop = vec!["\n\n".into()];

    let response = client.chat(&request).await.unwrap();

    assert_eq!(response.text, "Paris");
    assert_eq!(response.stop_reason, StopReason::End);
    assert_eq!(response.model, "test-model");
    assert_eq!(
        response.usage,
        TokenUsage {
            input_tokens: 10,
            output_tokens: 1
        }
    );
    assert!(response.latency > std::time::Duration::ZERO);
    let received = mock.received();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer sk-openai-test-key")
    );
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "Answer in one word."},
                {"role": "user", "content": "What is the capital of France?"}
            ],
            "temperature": 0.25,
            "max_tokens": 64,
            "stop": ["\n\n"]
        })
    );
    assert_eq!(client.endpoint(), format!("{base}/chat/completions"));
}

#[tokio::test]
async fn openai_format_omits_an_empty_system_prompt_and_keeps_the_conversation() {
    let mock = mock_with_answers(&[]).await;
    let client = OpenAiClient::new(
        "vllm",
        &format!("{}/v1/", mock.base_url()),
        ApiKey::placeholder(),
        "m",
        ClientOptions::default(),
    )
    .unwrap();
    let mut request = ChatRequest::single(Some(String::new()), "first", 0.0, 100);
    request.messages.push(Message {
        role: Role::Assistant,
        content: "reply".into(),
    });
    request.messages.push(Message::user("second"));

    client.chat(&request).await.unwrap();

    let body = &mock.received()[0].body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "reply"},
            {"role": "user", "content": "second"}
        ])
    );
    assert!(body.get("stop").is_none());
    assert_eq!(
        mock.received()[0].header("authorization"),
        Some("Bearer not-needed")
    );
}

#[tokio::test]
async fn openai_format_reports_truncation_as_max_tokens() {
    let mock = mock_with_answers(&[("long", "one two three four five six")]).await;
    let client = build_client(
        &block("lmstudio", &format!("{}/v1", mock.base_url())),
        "",
        &env_of(&[]),
    )
    .unwrap();
    let response = client
        .chat(&ChatRequest::single(None, "long", 0.0, 3))
        .await
        .unwrap();
    assert_eq!(response.text, "one two three");
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
}

#[tokio::test]
async fn anthropic_format_round_trips_with_top_level_system() {
    let mock = mock_with_answers(&[("Name a primary colour.", "Red")]).await;
    let client = build_client(
        &block("anthropic", &mock.base_url()),
        "",
        &env_of(&[("ANTHROPIC_API_KEY", "sk-ant-test-key")]),
    )
    .unwrap();
    let mut request = ChatRequest::single(
        Some("Answer briefly.".into()),
        "Name a primary colour.",
        0.0,
        50,
    );
    request.stop = vec!["END".into()];

    let response = client.chat(&request).await.unwrap();

    assert_eq!(response.text, "Red");
    assert_eq!(response.stop_reason, StopReason::End);
    assert_eq!(
        response.usage,
        TokenUsage {
            input_tokens: 6,
            output_tokens: 1
        }
    );
    let sent = &mock.received()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test-key"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "model": "test-model",
            "max_tokens": 50,
            "messages": [{"role": "user", "content": "Name a primary colour."}],
            "temperature": 0.0,
            "system": "Answer briefly.",
            "stop_sequences": ["END"]
        })
    );
}

#[tokio::test]
async fn anthropic_format_omits_an_empty_system_prompt_and_reports_max_tokens() {
    let mock = mock_with_answers(&[("count", "a b c d e")]).await;
    let client = build_client(&block("anthropic", &mock.base_url()), "", &env_of(&[])).unwrap();
    let response = client
        .chat(&ChatRequest::single(None, "count", 0.0, 2))
        .await
        .unwrap();
    assert_eq!(response.text, "a b");
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    let sent = &mock.received()[0];
    assert!(sent.body.get("system").is_none());
    assert!(sent.body.get("stop_sequences").is_none());
    // A loopback endpoint with no key set gets the placeholder, not an error.
    assert_eq!(sent.header("x-api-key"), Some("not-needed"));
}

#[tokio::test]
async fn every_openai_style_provider_sends_its_own_key_variable() {
    let mock = mock_with_answers(&[]).await;
    let base = format!("{}/v1", mock.base_url());
    let cases = [
        ("openai", "OPENAI_API_KEY"),
        ("openai-compatible", "OPENAI_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
        ("together", "TOGETHER_API_KEY"),
        ("groq", "GROQ_API_KEY"),
        ("deepseek", "DEEPSEEK_API_KEY"),
        ("vllm", "VLLM_API_KEY"),
    ];
    let all: Vec<(String, String)> = cases
        .iter()
        .map(|(_, var)| (var.to_string(), format!("key-of-{var}")))
        .collect();
    let env = move |var: &str| all.iter().find(|(k, _)| k == var).map(|(_, v)| v.clone());
    for (name, var) in cases {
        let client = build_client(&block(name, &base), "", &env).unwrap();
        client
            .chat(&ChatRequest::single(None, "hi", 0.0, 10))
            .await
            .unwrap();
        let sent = mock.received().pop().unwrap();
        assert_eq!(
            sent.header("authorization"),
            Some(format!("Bearer key-of-{var}").as_str()),
            "provider {name}"
        );
        assert_eq!(client.provider(), name);
    }
}

#[tokio::test]
async fn azure_uses_the_deployment_url_api_version_and_api_key_header() {
    let mock = mock_with_answers(&[("hi", "hello")]).await;
    let env = env_of(&[
        ("AZURE_OPENAI_API_KEY", "azure-secret-key"),
        ("AZURE_OPENAI_ENDPOINT", &mock.base_url()),
    ]);
    let settings = ProviderSettings {
        name: Some("Azure".into()),
        model: Some("gpt-4o".into()),
        deployment: Some("prod-gpt4o".into()),
        ..ProviderSettings::default()
    };
    let client = build_client(&settings, "", &env).unwrap();

    let response = client
        .chat(&ChatRequest::single(Some("sys".into()), "hi", 0.0, 10))
        .await
        .unwrap();

    assert_eq!(response.text, "hello");
    let sent = &mock.received()[0];
    assert_eq!(sent.path, "/openai/deployments/prod-gpt4o/chat/completions");
    assert_eq!(sent.query.as_deref(), Some("api-version=2024-10-21"));
    assert_eq!(sent.header("api-key"), Some("azure-secret-key"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body["messages"][0],
        json!({"role": "system", "content": "sys"})
    );
}

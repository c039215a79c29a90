//! A `base_url` that carries credentials (`http://user:PASS@host/v1?key=KEY`): requests go to
//! it with the API path before the query, and the credentials appear nowhere the run shows or
//! writes (the terminal, `config.yaml`, `rollouts.jsonl`, a recording).

use std::path::Path;

use skill_factory_mock::MockConfig;

use crate::common::{self, bin};

const PASSWORD: &str = "pass-word-4711";
const QUERY_KEY: &str = "query-key-0815";

/// Every file under `dir`, as text.
fn every_file(dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                files.push((path.display().to_string(), text));
            }
        }
    }
    files
}

fn assert_no_credentials(what: &str, text: &str) {
    for secret in [PASSWORD, QUERY_KEY] {
        assert!(!text.contains(secret), "{what} holds {secret}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_in_a_base_url_reach_the_server_but_are_never_shown_or_written() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        common::labelled_mock(dir.path(), common::LABEL_SKILL, 4, MockConfig::default()).await;
    let host = server.base_url().replace("http://", "");
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "skill: skill.md\ndataset: data.jsonl\nval_fraction: 0.5\n\
             provider: {{name: openai-compatible, model: m, api_key: k, base_url: \"http://user:{PASSWORD}@{host}/v1?key={QUERY_KEY}\"}}\n\
             optimizer_provider: {{name: fake, responses: [\"<NEW_SKILL_BODY>Label it.</NEW_SKILL_BODY>\"]}}\n\
             optimizer: {{rounds: 1, minibatch_size: 2}}\nmetric: {{golden: {{mode: exact}}}}\n"
        ),
    )
    .unwrap();
    let recording = dir.path().join("recording.jsonl");
    let runs = dir.path().join("runs");
    let config_path = config.clone();
    let recorded = recording.clone();
    let runs_dir = runs.clone();
    let outputs = tokio::task::spawn_blocking(move || {
        let evaluate = common::with_config("evaluate", &config_path)
            .env("SKILL_FACTORY_RECORD", &recorded)
            .output()
            .unwrap();
        let optimize = common::with_config("optimize", &config_path)
            .arg("-o")
            .arg(&runs_dir)
            .output()
            .unwrap();
        [evaluate, optimize]
    })
    .await
    .unwrap();
    for out in &outputs {
        let printed = common::printed(out);
        assert!(out.status.success(), "{printed}");
        assert_no_credentials("the terminal", &printed);
    }
    let received = server.received();
    assert!(!received.is_empty());
    for request in &received {
        assert_eq!(request.path, "/v1/chat/completions", "{request:?}");
        assert_eq!(
            request.query.as_deref(),
            Some(format!("key={QUERY_KEY}").as_str())
        );
    }
    assert!(recording.is_file());
    for (path, text) in every_file(dir.path())
        .into_iter()
        .filter(|(path, _)| !path.ends_with("config.yaml") || path.contains("runs"))
    {
        assert_no_credentials(&path, &text);
    }
}

#[test]
fn credentials_of_an_unreachable_base_url_stay_out_of_the_error() {
    let dir = tempfile::tempdir().unwrap();
    common::labelled_tasks(dir.path(), "Answer with the label.", 2);
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "skill: skill.md\ndataset: data.jsonl\ncache: {{mode: off}}\n\
             provider: {{name: openai-compatible, model: m, api_key: k, max_retries: 1, base_url: \"http://user:{PASSWORD}@127.0.0.1:1/v1?key={QUERY_KEY}\"}}\n"
        ),
    )
    .unwrap();
    let out = bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(3), "{printed}");
    assert!(printed.contains("127.0.0.1:1"), "{printed}");
    assert_no_credentials("the error", &printed);
}

//! The batch routes: Anthropic's Message Batches and OpenAI's Files and Batches answer each
//! request as a direct call would, once the batch's delay has passed, with the errored and
//! expired requests the plan asks for.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use skill_factory_mock::{BatchPlan, MockConfig, MockServer};

async fn server(plan: BatchPlan) -> MockServer {
    let answers: HashMap<String, String> = (0..40)
        .map(|i| (format!("question {i}"), format!("answer {i}")))
        .collect();
    MockServer::start(MockConfig {
        answers,
        batches: plan,
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

async fn send(request: reqwest::RequestBuilder) -> Value {
    let response = request.send().await.unwrap();
    assert!(response.status().is_success(), "{:?}", response.status());
    response.json().await.unwrap()
}

#[tokio::test]
async fn an_anthropic_batch_is_in_progress_until_its_delay_then_answers_every_request() {
    let mock = server(BatchPlan {
        delay: Duration::from_millis(300),
        errored: 0.1,
        expired: 0.1,
    })
    .await;
    let client = reqwest::Client::new();
    let requests: Vec<Value> = (0..40)
        .map(|i| {
            json!({"custom_id": format!("r{i}"), "params": {"model": "m", "max_tokens": 16,
                   "messages": [{"role": "user", "content": format!("question {i}")}]}})
        })
        .collect();
    let created = send(
        client
            .post(format!("{}/v1/messages/batches", mock.base_url()))
            .json(&json!({"requests": requests})),
    )
    .await;
    assert_eq!(created["processing_status"], "in_progress");
    assert_eq!(created["request_counts"]["processing"], 40);
    let id = created["id"].as_str().unwrap().to_string();
    let status_url = format!("{}/v1/messages/batches/{id}", mock.base_url());
    let results_url = format!("{status_url}/results");
    assert_eq!(
        client.get(&results_url).send().await.unwrap().status(),
        400,
        "no results before the batch ended"
    );
    tokio::time::sleep(Duration::from_millis(350)).await;
    let ended = send(client.get(&status_url)).await;
    assert_eq!(ended["processing_status"], "ended", "{ended}");
    let counts = &ended["request_counts"];
    let (succeeded, errored, expired) = (
        counts["succeeded"].as_u64().unwrap(),
        counts["errored"].as_u64().unwrap(),
        counts["expired"].as_u64().unwrap(),
    );
    assert_eq!(succeeded + errored + expired, 40);
    assert!(errored > 0 && expired > 0 && succeeded > 25, "{counts}");
    let text = client
        .get(&results_url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 40);
    for line in &lines {
        let i: usize = line["custom_id"].as_str().unwrap()[1..].parse().unwrap();
        match line["result"]["type"].as_str().unwrap() {
            "succeeded" => assert_eq!(
                line["result"]["message"]["content"][0]["text"],
                format!("answer {i}"),
                "the same answer as a direct call"
            ),
            "errored" => assert_eq!(line["result"]["error"]["type"], "error"),
            "expired" => {}
            other => panic!("{other}"),
        }
    }
    let stats = send(client.get(format!("{}/stats", mock.base_url()))).await;
    assert_eq!(stats["batches"], json!({"created": 1, "requests": 40}));
}

#[tokio::test]
async fn an_openai_batch_reads_its_uploaded_file_and_writes_output_and_error_files() {
    let mock = server(BatchPlan {
        delay: Duration::ZERO,
        errored: 0.0,
        expired: 0.15,
    })
    .await;
    let client = reqwest::Client::new();
    let mut jsonl = String::new();
    for i in 0..40 {
        jsonl.push_str(
            &json!({"custom_id": format!("r{i}"), "method": "POST", "url": "/v1/chat/completions",
                    "body": {"model": "m", "messages": [{"role": "user", "content": format!("question {i}")}]}})
            .to_string(),
        );
        jsonl.push('\n');
    }
    let boundary = "mockboundary42";
    let form = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.jsonl\"\r\n\
         Content-Type: application/jsonl\r\n\r\n{jsonl}\r\n--{boundary}--\r\n"
    );
    let file = send(
        client
            .post(format!("{}/v1/files", mock.base_url()))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(form),
    )
    .await;
    assert_eq!(file["purpose"], "batch");
    let batch = send(client.post(format!("{}/v1/batches", mock.base_url())).json(
        &json!({"input_file_id": file["id"], "endpoint": "/v1/chat/completions",
                          "completion_window": "24h"}),
    ))
    .await;
    // No delay: the batch has ended when first looked at; some requests expired.
    assert_eq!(batch["status"], "expired", "{batch}");
    let counts = &batch["request_counts"];
    assert_eq!(counts["total"], 40);
    let completed = counts["completed"].as_u64().unwrap();
    assert!(completed > 25 && completed < 40, "{counts}");
    let content = |id: &Value| {
        let url = format!(
            "{}/v1/files/{}/content",
            mock.base_url(),
            id.as_str().unwrap()
        );
        let client = client.clone();
        async move { client.get(url).send().await.unwrap().text().await.unwrap() }
    };
    let output = content(&batch["output_file_id"]).await;
    let errors = content(&batch["error_file_id"]).await;
    assert_eq!(output.lines().count() as u64, completed);
    assert_eq!(errors.lines().count() as u64, 40 - completed);
    for line in output.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        let i: usize = line["custom_id"].as_str().unwrap()[1..].parse().unwrap();
        assert_eq!(line["response"]["status_code"], 200);
        assert_eq!(
            line["response"]["body"]["choices"][0]["message"]["content"],
            format!("answer {i}")
        );
    }
    for line in errors.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        assert_eq!(line["error"]["code"], "batch_expired");
    }
}

//! The System One stub's counters, the hashed responder, and `sf-mock-server --systemone`.

use std::process::Command;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use skill_factory_mock::{StubOptions, SystemOneStub, hashed_probability};

fn question(instructions: &str) -> Value {
    json!({"type": "choice", "instructions": instructions,
           "criteria": {"true": "Yes.", "false": "No."}})
}

async fn ask(url: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get(url: &str) -> Value {
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

#[test]
fn the_hashed_probability_is_the_first_16_bits_of_the_digest_over_65535() {
    let digest = Sha256::digest("a state\u{0}Is it bad?".as_bytes());
    let n = f64::from(u16::from_be_bytes([digest[0], digest[1]]));
    let p = hashed_probability("a state", &question("Is it bad?"));
    assert!((p - n / 65535.0).abs() <= 0.00005, "{p} vs {n}");
    assert_eq!(p, (p * 10_000.0).round() / 10_000.0, "4 decimals");
    // The criteria play no part; the state and the instructions do.
    let other_criteria = json!({"type": "choice", "instructions": "Is it bad?",
                                "criteria": {"true": "Y", "false": "N"}});
    assert_eq!(hashed_probability("a state", &other_criteria), p);
    assert_ne!(
        hashed_probability("another state", &question("Is it bad?")),
        p
    );
}

#[tokio::test]
async fn stats_count_requests_and_questions_and_answers_ignore_ids_and_batches() {
    let stub = SystemOneStub::start_with(StubOptions::default(), |state, _id, question| {
        hashed_probability(state, question)
    })
    .await
    .unwrap();
    assert_eq!(
        get(&format!("{}/stats", stub.base_url())).await,
        json!({"requests": 0, "questions": 0, "faults": crate::no_faults()})
    );
    assert_eq!(
        get(&format!("{}/health", stub.base_url())).await,
        json!({"status": "ok"})
    );
    let together = json!({"model": "jev-latest", "state": "s",
                          "questions": {"a": question("one?"), "b": question("two?")}});
    let (status, both) = ask(&stub.url(), &together).await;
    assert_eq!(status, 200);
    let alone = json!({"model": "jev-latest", "state": "s",
                       "questions": {"renamed": question("two?")}});
    let (_, one) = ask(&stub.url(), &alone).await;
    assert_eq!(
        both["answers"]["b"]["probabilities"]["true"],
        one["answers"]["renamed"]["probabilities"]["true"]
    );
    assert_eq!(
        both["answers"]["a"]["probabilities"]["true"],
        json!(hashed_probability("s", &question("one?")))
    );
    assert_eq!(
        get(&format!("{}/stats", stub.base_url())).await,
        json!({"requests": 2, "questions": 3, "faults": crate::no_faults()})
    );
    assert_eq!((stub.request_count(), stub.question_count()), (2, 3));
}

#[tokio::test]
async fn the_binary_serves_systemone_with_stats() {
    let (mut child, line) = crate::spawn_binary(&["--systemone", "--port", "0"]);
    let result = match line.trim().strip_prefix("listening on ") {
        Some(base) if base.starts_with("http://127.0.0.1:") => {
            let body = json!({"model": "jev-latest", "state": "s",
                              "questions": {"q": question("one?")}});
            let answer = ask(&format!("{base}/v1/systemone"), &body).await;
            Ok((answer, get(&format!("{base}/stats")).await))
        }
        _ => Err(line.clone()),
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let ((status, body), stats) =
        result.unwrap_or_else(|line| panic!("unexpected first line: {line:?}"));
    assert_eq!(status, 200);
    assert_eq!(body["model"], "fake-jev-1.0");
    assert_eq!(
        body["answers"]["q"]["probabilities"]["true"],
        json!(hashed_probability("s", &question("one?")))
    );
    assert_eq!(
        stats,
        json!({"requests": 1, "questions": 1, "faults": crate::no_faults()})
    );
}

#[test]
fn the_binary_refuses_chat_flags_with_systemone() {
    let output = Command::new(env!("CARGO_BIN_EXE_sf-mock-server"))
        .args(["--systemone", "--skill-sensitive"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot be used with"));
}

#[tokio::test]
async fn the_stub_injects_the_chat_routes_faults_reproducibly() {
    let options = StubOptions {
        faults: skill_factory_mock::FaultPlan {
            server_error: 0.5,
            reset: 0.2,
            seed: 3,
            ..skill_factory_mock::FaultPlan::default()
        },
        ..StubOptions::default()
    };
    let plan = options.faults.clone();
    let stub = SystemOneStub::start_with(options, |_, _, _| 0.9)
        .await
        .unwrap();
    let body = json!({"state": "s", "questions": {"q": question("Is it?")}});
    for n in 0..20 {
        let sent = reqwest::Client::new()
            .post(stub.url())
            .json(&body)
            .send()
            .await;
        let outcome = match sent {
            Ok(response) => {
                let status = response.status().as_u16();
                response.bytes().await.map(|_| status)
            }
            Err(error) => Err(error),
        };
        match plan.choose(n) {
            Some(skill_factory_mock::Fault::ServerError) => {
                assert_eq!(outcome.unwrap(), 500, "request {n}");
            }
            Some(skill_factory_mock::Fault::Reset) => assert!(outcome.is_err(), "request {n}"),
            _ => assert_eq!(outcome.unwrap(), 200, "request {n}"),
        }
    }
    assert_eq!(stub.request_count(), 20);
    let stats = get(&format!("{}/stats", stub.base_url())).await;
    let planned = |fault: skill_factory_mock::Fault| {
        (0..20).filter(|n| plan.choose(*n) == Some(fault)).count() as u64
    };
    assert_eq!(
        stats["faults"]["server_error"],
        planned(skill_factory_mock::Fault::ServerError)
    );
    assert_eq!(
        stats["faults"]["reset"],
        planned(skill_factory_mock::Fault::Reset)
    );
}

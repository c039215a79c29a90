//! Throughput of the `local` provider: sends the same set of chat requests to a GGUF model
//! with a given number of sequences decoded together, and prints generated tokens per second.
//!
//! ```text
//! cargo run -p skill-factory-llm --features local --example local_throughput -- \
//!     models/SmolLM2-135M-Instruct.Q4_1.gguf [slots] [requests] [max_tokens]
//! ```

use std::time::Instant;

use skill_factory_llm::{ChatRequest, ProviderSettings, build_client};

const QUESTIONS: &[&str] = &[
    "What is the capital of France?",
    "Name three primary colors.",
    "Write one sentence about the sea.",
    "What is 12 plus 30?",
    "Give a synonym of happy.",
    "What do bees make?",
    "Translate 'good morning' into Spanish.",
    "What is the opposite of cold?",
];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let model = args
        .first()
        .ok_or("usage: local_throughput MODEL.gguf [slots] [requests] [max_tokens]")?;
    let slots: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(4);
    let requests: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(16);
    let max_tokens: u32 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(64);
    let settings = ProviderSettings {
        name: Some("local".into()),
        model: Some(model.clone()),
        max_concurrency: Some(slots),
        ..ProviderSettings::default()
    };
    let client = build_client(&settings, "", &|_| None)?;
    let system = "You are a helpful assistant. Answer briefly and precisely.".to_string();
    let started = Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..requests {
        let client = client.clone();
        let request = ChatRequest::single(
            Some(system.clone()),
            QUESTIONS[i % QUESTIONS.len()],
            0.0,
            max_tokens,
        );
        calls.spawn(async move { (i, client.chat(&request).await) });
    }
    let mut answers = calls.join_all().await;
    answers.sort_by_key(|(i, _)| *i);
    let answers: Vec<_> = answers.into_iter().map(|(_, a)| a).collect();
    let elapsed = started.elapsed().as_secs_f64();
    let mut output = 0u64;
    let mut input = 0u64;
    for (i, answer) in answers.iter().enumerate() {
        let answer = answer.as_ref().map_err(|e| e.to_string())?;
        output += answer.usage.output_tokens;
        input += answer.usage.input_tokens;
        if i < QUESTIONS.len() {
            println!("[{i}] {:?} {:?}", answer.stop_reason, answer.text);
        }
    }
    println!(
        "slots {slots}, {requests} requests: {input} prompt + {output} generated tokens in {elapsed:.2}s = {:.1} generated tok/s",
        output as f64 / elapsed
    );
    Ok(())
}

//! `sf-mock-server`: serves the mock model on 127.0.0.1 until killed, for benchmark scripts.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use skill_factory_mock::{Answering, FaultPlan, MockConfig, MockServer, load_answers};

/// A mock model server speaking the OpenAI (`POST /v1/chat/completions`) and Anthropic
/// (`POST /v1/messages`) wire formats on 127.0.0.1, with deterministic answers.
#[derive(Parser)]
#[command(name = "sf-mock-server", version)]
struct Args {
    /// Port to listen on (0 picks a free one; the line printed at start says which).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Milliseconds to wait before every answer.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// JSONL of known answers, one `{"input": <user message>, "output": <reply>}` per line
    /// (`expected` is accepted for `output`, so a dataset file works as is).
    #[arg(long)]
    answers: Option<PathBuf>,
    /// Fraction of requests answered 429 with a Retry-After header.
    #[arg(long, default_value_t = 0.0)]
    fail_429: f64,
    /// Seconds sent in Retry-After with each 429.
    #[arg(long, default_value_t = 1)]
    retry_after: u64,
    /// Fraction of requests answered 500.
    #[arg(long, default_value_t = 0.0)]
    fail_500: f64,
    /// Fraction of requests never answered.
    #[arg(long, default_value_t = 0.0)]
    hang: f64,
    /// Fraction of requests answered 200 with a broken JSON body.
    #[arg(long, default_value_t = 0.0)]
    malformed: f64,
    /// Seed of the per-request fault choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Give a known answer only to some requests, more of them the more rules the skill (the
    /// system prompt) has, so that an optimization has edits to accept and reject.
    #[arg(long)]
    skill_sensitive: bool,
    /// Require this API key (Bearer, x-api-key or api-key); others get 401.
    #[arg(long)]
    require_api_key: Option<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let answers = match &args.answers {
        Some(path) => load_answers(path).map_err(|e| e.to_string())?,
        None => Default::default(),
    };
    let config = MockConfig {
        port: args.port,
        latency: Duration::from_millis(args.latency_ms),
        faults: FaultPlan {
            rate_limit: args.fail_429,
            server_error: args.fail_500,
            hang: args.hang,
            malformed: args.malformed,
            retry_after_secs: args.retry_after,
            seed: args.seed,
        },
        answers,
        answering: if args.skill_sensitive {
            Answering::SkillSensitive
        } else {
            Answering::Always
        },
        require_api_key: args.require_api_key,
        ..MockConfig::default()
    };
    let server = MockServer::start(config).await.map_err(|e| e.to_string())?;
    // Benchmark scripts wait for this exact line before they start sending.
    println!("listening on {}", server.base_url());
    tokio::select! {
        _ = server.serve_forever() => {}
        _ = shutdown_signal() => {}
    }
    Ok(())
}

/// Ctrl-C or SIGTERM (what `kill` sends).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

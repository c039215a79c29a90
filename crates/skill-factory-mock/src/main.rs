//! `sf-mock-server`: serves the mock model on 127.0.0.1 until killed, for benchmark scripts.
//!
//! By default it serves the chat routes of [`MockServer`]. With `--systemone` it serves a
//! System One host instead ([`SystemOneStub`] answering with [`hashed_probability`]):
//! `POST /v1/systemone`, plus `GET /stats` (`{"requests": N, "questions": M, "faults": {...}}`) and
//! `GET /health`. Either way the first line on stdout is `listening on http://127.0.0.1:PORT`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use skill_factory_mock::{
    Answering, BatchPlan, FaultPlan, MockConfig, MockError, MockServer, Needs, StubOptions,
    SystemOneStub, Variation, hashed_probability, load_answers, parse_needs,
};

/// A mock model server speaking the OpenAI (`POST /v1/chat/completions`,
/// `POST /v1/responses`) and Anthropic (`POST /v1/messages`) wire formats on 127.0.0.1, with
/// deterministic answers (streamed when asked, and a skill router for agent CLIs); or, with
/// --systemone, a System One decision-model host.
#[derive(Parser)]
#[command(name = "sf-mock-server", version)]
struct Args {
    /// Serve a System One host instead of the chat routes: POST /v1/systemone answers every
    /// question with P(true) = the first 16 bits of sha256(state + NUL + instructions) / 65535,
    /// rounded to 4 decimals (model fake-jev-1.0, input tokens = state chars / 4), so two
    /// clients asking the same question about the same state get the same answer. GET /stats
    /// returns {"requests": N, "questions": M, "faults": {...}}. Give clients
    /// `base_url: <printed address>/v1/systemone`. --port, --latency-ms and the fault flags
    /// apply.
    #[arg(long, conflicts_with_all = [
        "answers", "redirect_to", "batch_delay_ms", "batch_errored", "batch_expired",
        "skill_sensitive", "require_api_key", "needs", "conflict", "noise", "decoys",
        "regressions",
    ])]
    systemone: bool,
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
    /// Fraction of requests answered 429 without a Retry-After header.
    #[arg(long, default_value_t = 0.0)]
    fail_429_bare: f64,
    /// Seconds sent in Retry-After with each 429 that has one.
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
    /// Fraction of requests whose connection is closed without an answer.
    #[arg(long, default_value_t = 0.0)]
    reset: f64,
    /// Fraction of requests whose body is cut halfway (after a Content-Length promising all).
    #[arg(long, default_value_t = 0.0)]
    cut_body: f64,
    /// Fraction of requests whose body trickles in one byte a second.
    #[arg(long, default_value_t = 0.0)]
    slowloris: f64,
    /// Milliseconds from a batch's creation until it has ended (the batch routes:
    /// /v1/messages/batches, /v1/files and /v1/batches).
    #[arg(long, default_value_t = 0)]
    batch_delay_ms: u64,
    /// Fraction of a batch's requests that end errored (chosen by their custom_id).
    #[arg(long, default_value_t = 0.0)]
    batch_errored: f64,
    /// Fraction of a batch's requests that end expired.
    #[arg(long, default_value_t = 0.0)]
    batch_expired: f64,
    /// Answer every chat request 307 to this base URL plus the request's path.
    #[arg(long, value_name = "URL")]
    redirect_to: Option<String>,
    /// Seed of the per-request fault choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Give a known answer only to some requests, more of them the more rules the skill (the
    /// system prompt) has, so that an optimization has edits to accept and reject.
    #[arg(long, conflicts_with = "needs")]
    skill_sensitive: bool,
    /// Give a known answer only when the skill (the system prompt) holds the rule its task's
    /// group needs (the group is the line's `need` field in the --answers file, else its
    /// answer), and have the mock optimizer add the rule the failures it is shown need.
    #[arg(long, requires = "answers")]
    needs: bool,
    /// Two groups (`A,B`) whose rules cancel each other under --needs; repeatable.
    #[arg(long, requires = "needs", value_name = "A,B")]
    conflict: Vec<String>,
    /// A model that needs otherwise under --needs, by the model name requests carry:
    /// `MODEL:free=G1+G2:conflict=A,B` answers the groups after `free=` right without their
    /// rules, and on it the rules of each `conflict=` pair cancel each other when written
    /// together; repeatable, so that targets can disagree.
    #[arg(long, requires = "needs", value_name = "MODEL:free=G+G:conflict=A,B")]
    model_needs: Vec<String>,
    /// The chance that a known-answer request's outcome flips (right becomes wrong, wrong
    /// becomes right), drawn afresh for each request and unseeded, as a model sampled at a
    /// temperature above 0 varies. The same server without it is the noise-free twin.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    noise: f64,
    /// The share of optimizer replies that only reword the skill, changing no task's
    /// outcome (decoys), chosen by a hash of the prompt and the temperature.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    decoys: f64,
    /// The share of the other optimizer replies that drop a rule the skill holds (a rewrite
    /// that loses an instruction), chosen by the same hash.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    regressions: f64,
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

async fn run(args: Args) -> Result<(), MockError> {
    if args.systemone {
        return run_systemone(&args).await;
    }
    for (flag, value) in [
        ("--noise", args.noise),
        ("--decoys", args.decoys),
        ("--regressions", args.regressions),
    ] {
        if !(0.0..=1.0).contains(&value) {
            return Err(MockError::Config(format!(
                "{flag} {value}: give a probability between 0 and 1"
            )));
        }
    }
    let answers = match &args.answers {
        Some(path) => load_answers(path)?,
        None => Default::default(),
    };
    let answering = if args.needs {
        Answering::Needs(Arc::new(needs(&args, &answers)?))
    } else if args.skill_sensitive {
        Answering::SkillSensitive
    } else {
        Answering::Always
    };
    let config = MockConfig {
        port: args.port,
        latency: Duration::from_millis(args.latency_ms),
        faults: faults(&args),
        answers,
        answering,
        variation: Variation {
            flips: args.noise,
            decoys: args.decoys,
            regressions: args.regressions,
        },
        require_api_key: args.require_api_key,
        redirect_to: args.redirect_to,
        batches: BatchPlan {
            delay: Duration::from_millis(args.batch_delay_ms),
            errored: args.batch_errored,
            expired: args.batch_expired,
        },
        ..MockConfig::default()
    };
    let server = MockServer::start(config).await?;
    // Benchmark scripts wait for this exact line before they start sending.
    println!("listening on {}", server.base_url());
    tokio::select! {
        _ = server.serve_forever() => {}
        _ = shutdown_signal() => {}
    }
    Ok(())
}

/// The --needs groups: the answers file's `need` fields, and the --conflict pairs.
fn needs(args: &Args, answers: &HashMap<String, String>) -> Result<Needs, MockError> {
    let path = args
        .answers
        .as_ref()
        .ok_or_else(|| MockError::Config("--needs needs --answers".to_string()))?;
    let text = std::fs::read_to_string(path).map_err(|source| MockError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let overrides = parse_needs(&text, &path.display().to_string())?;
    let conflicts = args
        .conflict
        .iter()
        .map(|pair| {
            pair.split_once(',')
                .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
                .filter(|(a, b)| !a.is_empty() && !b.is_empty() && a != b)
                .ok_or_else(|| {
                    MockError::Config(format!(
                        "--conflict {pair:?}: give two different groups as A,B"
                    ))
                })
        })
        .collect::<Result<_, _>>()?;
    let mut needs = Needs::new(answers, overrides, conflicts);
    for spec in &args.model_needs {
        needs = model_needs(needs, spec)?;
    }
    Ok(needs)
}

/// `needs` with the model of one `--model-needs` spec.
fn model_needs(needs: Needs, spec: &str) -> Result<Needs, MockError> {
    let bad = || {
        MockError::Config(format!(
            "--model-needs {spec:?}: write MODEL:free=G1+G2:conflict=A,B (free and conflict parts optional, conflict repeatable)"
        ))
    };
    let mut parts = spec.split(':');
    let model = parts
        .next()
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(bad)?;
    let mut free: Vec<&str> = Vec::new();
    let mut conflicts: Vec<(&str, &str)> = Vec::new();
    for part in parts {
        if let Some(groups) = part.strip_prefix("free=") {
            free.extend(groups.split('+').map(str::trim).filter(|g| !g.is_empty()));
        } else if let Some(pair) = part.strip_prefix("conflict=") {
            let (a, b) = pair.split_once(',').ok_or_else(bad)?;
            conflicts.push((a.trim(), b.trim()));
        } else {
            return Err(bad());
        }
    }
    Ok(needs.with_model(model.trim(), &free, &conflicts))
}

/// The fault flags as a plan.
fn faults(args: &Args) -> FaultPlan {
    FaultPlan {
        rate_limit: args.fail_429,
        rate_limit_bare: args.fail_429_bare,
        server_error: args.fail_500,
        hang: args.hang,
        malformed: args.malformed,
        reset: args.reset,
        cut_body: args.cut_body,
        slowloris: args.slowloris,
        retry_after_secs: args.retry_after,
        seed: args.seed,
    }
}

async fn run_systemone(args: &Args) -> Result<(), MockError> {
    let options = StubOptions {
        port: args.port,
        latency: Duration::from_millis(args.latency_ms),
        faults: faults(args),
    };
    let stub = SystemOneStub::start_with(options, |state, _id, question| {
        hashed_probability(state, question)
    })
    .await?;
    // Benchmark scripts wait for this exact line before they start sending.
    println!("listening on {}", stub.base_url());
    tokio::select! {
        _ = stub.serve_forever() => {}
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

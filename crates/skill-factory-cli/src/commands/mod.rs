//! One module per command.

use std::process::ExitCode;

use skill_factory::session::Session;

pub mod cache;
pub mod completions;
mod config_keys;
pub mod evaluate;
pub mod export;
pub mod gallery;
pub mod init;
pub mod install;
pub mod lab;
pub mod lab_export;
pub mod lab_open;
pub mod list;
pub mod man;
pub mod matrix;
pub mod models;
pub mod optimize;
pub mod track;
pub mod triggers;
pub mod ui;
pub mod validate;
pub mod verdict;

/// The exit code of a run or an evaluation in which nothing worked: every rollout failed, or
/// every request to the optimizer model, so its score measures nothing.
pub const NOTHING_WORKED: u8 = 3;

/// A command's one request to a model failed after every retry, or its reply held nothing
/// usable: the user's input was fine and the same command may work once the model does, so the
/// command exits [`NOTHING_WORKED`] instead of 2 ([`exit_code`]).
#[derive(Debug)]
pub struct ModelFailed(pub anyhow::Error);

impl std::fmt::Display for ModelFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ModelFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// The exit code of a command that ended with `error`: [`NOTHING_WORKED`] for [`ModelFailed`],
/// 2 for every other error (the user's to fix).
pub fn exit_code(error: &anyhow::Error) -> ExitCode {
    if error.is::<ModelFailed>() {
        ExitCode::from(NOTHING_WORKED)
    } else {
        ExitCode::from(2)
    }
}

/// Prints on stderr (stdout stays the score and the report) what went to the models and
/// what the batches did: [`model_calls_line`] and [`batch_line`], each when it has something
/// to say.
pub fn print_model_calls(session: &Session) {
    for line in [model_calls_line(session), batch_line(session)]
        .into_iter()
        .flatten()
    {
        crate::output::errln!("{line}");
    }
}

/// What the run's provider batches did, and its cost at their price, for stderr; nothing when
/// no call was batched.
fn batch_line(session: &Session) -> Option<String> {
    let counts = session.layers_in_use()?.batches().counts();
    if counts.submitted + counts.resumed == 0 && counts.direct == 0 {
        return None;
    }
    let resumed = match counts.resumed {
        0 => String::new(),
        n => format!(", {n} of an earlier run polled again"),
    };
    Some(format!(
        "Batches: {} submitted{resumed}; {} requests answered by a batch at half price, {} asked directly; cost ${:.4}",
        counts.submitted,
        counts.answered,
        counts.direct,
        session.ledger().total().usd
    ))
}

/// How many calls went to the models and how many the cache answered, for stderr (stdout
/// stays the score and the report); nothing when no model was called over the network.
pub fn model_calls_line(session: &Session) -> Option<String> {
    let layers = session.layers_in_use()?;
    if let Some(replay) = layers.replay() {
        return Some(format!(
            "Model calls: answered from the recording {}; nothing was sent (the calls, tokens \
             and cost shown are the recorded run's)",
            replay.path().display()
        ));
    }
    let sent = layers.scheduler().requests_sent();
    let (hits, misses) = layers
        .cache()
        .map(|cache| (cache.run_hits(), cache.run_misses()))
        .unwrap_or_default();
    if sent + hits + misses == 0 {
        return None;
    }
    Some(match layers.cache() {
        Some(_) => format!(
            "Model calls: {hits} answered from the cache, {misses} asked ({sent} HTTP requests sent)"
        ),
        None => format!("Model calls: {sent} HTTP requests sent (cache off)"),
    })
}

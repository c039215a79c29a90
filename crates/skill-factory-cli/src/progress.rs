//! Progress display for evaluations: a bar on a terminal, nothing when piped.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use skill_factory::config::Role;
use skill_factory::evaluate::EvalObserver;
use skill_factory::session::Session;
use skill_factory_core::TaskEvaluation;
use skill_factory_llm::batch::BatchEvent;

use crate::output::{errln, printable};

/// A progress bar on stderr that advances once per finished task.
pub struct TaskBar {
    bar: ProgressBar,
}

impl TaskBar {
    /// A bar for `total` tasks, drawn only when stderr is a terminal.
    pub fn new(total: usize, label: &str) -> Self {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        let style = ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} tasks  {elapsed_precise}  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(label.to_string());
        TaskBar { bar }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// The bar, to print lines above.
    pub fn bar(&self) -> &ProgressBar {
        &self.bar
    }
}

/// When the session batches calls, prints a line on stderr for every look at its batches
/// (above `bar` when one is drawn): a batch takes minutes to hours, and the line says it is
/// moving. Builds the session's model layers to reach their batch board.
pub fn watch_batches(session: &Session, bar: Option<ProgressBar>) -> anyhow::Result<()> {
    if !(session.batched(Role::Target) || session.batched(Role::Judge)) {
        return Ok(());
    }
    session.layers()?.batches().watch(move |event| {
        let line = batch_event_line(event);
        match &bar {
            Some(bar) if !bar.is_hidden() => bar.suspend(|| errln!("{line}")),
            _ => errln!("{line}"),
        }
    });
    Ok(())
}

fn batch_event_line(event: &BatchEvent) -> String {
    match event {
        BatchEvent::Submitted { id, requests } => format!(
            "Batch {}: submitted, {requests} requests (a rerun after a kill polls it again)",
            printable(id)
        ),
        BatchEvent::Resumed { id, requests } => format!(
            "Batch {}: submitted by an earlier run, {requests} requests; polling it again",
            printable(id)
        ),
        BatchEvent::Running { id, done, total } => {
            format!("Batch {}: {done}/{total} requests done", printable(id))
        }
        BatchEvent::Read {
            id,
            answered,
            failed,
        } => format!(
            "Batch {}: ended, {answered} answered, {failed} to ask directly",
            printable(id)
        ),
    }
}

impl EvalObserver for TaskBar {
    fn task_done(&self, item: &TaskEvaluation) {
        if !item.rollout.ok() {
            self.bar
                .set_message(format!("last failure: {}", printable(item.task_id())));
        }
        self.bar.inc(1);
    }
}

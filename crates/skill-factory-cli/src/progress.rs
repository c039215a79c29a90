//! Progress display for evaluations: a bar on a terminal, nothing when piped.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use skill_factory::evaluate::EvalObserver;
use skill_factory_core::TaskEvaluation;

use crate::output::printable;

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

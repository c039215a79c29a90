//! The live display of `optimize`: on a terminal, one progress line (round, proposals, best
//! validation score, calls, tokens, cost, ETA) redrawn as events arrive; otherwise one plain
//! line per milestone (baseline, each round's decision, test scores, the stop), on stderr so
//! that stdout keeps only the report.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use skill_factory::optimizer::{Event, EventSink};
use skill_factory_llm::Ledger;

use crate::output::{errln, outln};

#[derive(Default)]
struct State {
    /// The search's most rounds; 0 when it has no round limit (`gepa`).
    rounds: usize,
    round: usize,
    proposals: usize,
    baseline: Option<f64>,
    best: Option<f64>,
}

impl State {
    /// `round` against the search's most rounds (`2/6`), or alone when the search has no
    /// round limit or, against the limit, the round would read past it.
    fn round_of(&self, round: usize) -> String {
        if self.rounds == 0 || round > self.rounds {
            round.to_string()
        } else {
            format!("{round}/{}", self.rounds)
        }
    }
}

/// Draws the progress of one optimization.
pub struct LiveDisplay {
    ledger: Arc<Ledger>,
    heading: String,
    bar: Option<ProgressBar>,
    state: Mutex<State>,
}

impl LiveDisplay {
    /// A display reading the spending from `ledger`, a bar when stderr is a terminal, that
    /// prints `heading` on stdout when the run starts.
    pub fn new(ledger: Arc<Ledger>, heading: String) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr());
            // The message is cut to the terminal's width so that the line never wraps.
            let style =
                ProgressStyle::with_template("{spinner} [{bar:10}] ETA {eta:>3} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> ");
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        LiveDisplay {
            ledger,
            heading,
            bar,
            state: Mutex::new(State::default()),
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// The bar, when one is drawn, to print lines above.
    pub fn bar(&self) -> Option<&ProgressBar> {
        self.bar.as_ref()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Calls, tokens and cost so far: `12 calls · 3.4k tokens · $0.0123`.
    fn spent(&self) -> String {
        let total = self.ledger.total();
        let tokens = total.tokens();
        let tokens = if tokens >= 1_000_000 {
            format!("{:.1}M", tokens as f64 / 1e6)
        } else if tokens >= 1_000 {
            format!("{:.1}k", tokens as f64 / 1e3)
        } else {
            tokens.to_string()
        };
        let unknown = if total.unpriced_calls > 0 { "+?" } else { "" };
        let cached = if total.cached_calls > 0 {
            format!(" (+{} cached)", total.cached_calls)
        } else {
            String::new()
        };
        format!(
            "{} calls{cached} · {tokens} tok · ${:.4}{unknown}",
            total.calls, total.usd
        )
    }

    fn redraw(&self, state: &State) {
        let Some(bar) = &self.bar else { return };
        let best = match (state.best, state.baseline) {
            (Some(best), Some(base)) => format!("best {best:.3} (seed {base:.3})"),
            _ => "scoring the seed".to_string(),
        };
        bar.set_message(format!(
            "round {} · {} proposals · {best} · {}",
            state.round_of(state.round),
            state.proposals,
            self.spent()
        ));
    }

    fn line(&self, text: String) {
        if self.bar.is_none() {
            errln!("{text}");
        }
    }
}

impl EventSink for LiveDisplay {
    fn event(&self, event: &Event) {
        let mut state = self.state();
        match event {
            Event::RunStarted {
                train,
                val,
                test,
                rounds,
                max_workers,
                ..
            } => {
                state.rounds = *rounds;
                match &self.bar {
                    Some(bar) => {
                        bar.suspend(|| outln!("{}", self.heading));
                        match rounds {
                            0 => bar.unset_length(),
                            _ => bar.set_length(*rounds as u64),
                        }
                    }
                    None => outln!("{}", self.heading),
                }
                self.line(format!(
                    "Tasks: {train} train, {val} val, {test} test; up to {max_workers} model calls in flight."
                ));
            }
            Event::EvaluationFinished {
                round: 0,
                candidate: 0,
                split,
                score,
                complete,
                ..
            } if split == "val" => {
                state.baseline = Some(*score);
                state.best = Some(*score);
                let note = if *complete { "" } else { " (interrupted)" };
                self.line(format!("Baseline: val {score:.3}{note} · {}", self.spent()));
            }
            Event::RoundStarted { round, .. } => state.round = *round,
            Event::CandidateProposed { .. } => state.proposals += 1,
            Event::Decision {
                round,
                candidate,
                accepted,
                val_score,
                note,
                ..
            } => {
                if *accepted {
                    state.best = Some(*val_score);
                }
                let who = candidate.map_or_else(
                    || "nothing to score".to_string(),
                    |c| format!("candidate {c} val {val_score:.3}"),
                );
                let verdict = if *accepted { "accepted" } else { "rejected" };
                let note: String = note.chars().take(100).collect();
                self.line(format!(
                    "Round {}: {who}, {verdict} ({note}) · {}",
                    state.round_of(*round),
                    self.spent()
                ));
            }
            Event::RoundFinished { .. } => {
                if let Some(bar) = &self.bar {
                    bar.inc(1);
                }
            }
            Event::Stopped { detail, .. } => {
                if let Some(bar) = &self.bar {
                    bar.set_position(state.rounds as u64);
                }
                self.line(format!("Stopped: {detail}."));
            }
            Event::TestScored {
                seed_score,
                best_score,
            } => self.line(format!(
                "Held-out test: seed {seed_score:.3}, best {best_score:.3}"
            )),
            Event::HeadlineScored {
                source,
                samples,
                best_score,
                interval: [low, high],
                search_best_score,
            } if source == "fresh_samples" => self.line(format!(
                "Best skill on {samples} fresh samples of every validation task: {best_score:.3} ({low:.3} to {high:.3}); the search saw {search_best_score:.3}"
            )),
            _ => {}
        }
        self.redraw(&state);
    }
}

#[cfg(test)]
mod tests {
    use super::State;

    #[test]
    fn a_round_is_never_shown_past_its_total() {
        let limited = State {
            rounds: 4,
            ..State::default()
        };
        assert_eq!(limited.round_of(2), "2/4");
        assert_eq!(limited.round_of(4), "4/4");
        assert_eq!(limited.round_of(5), "5");
        // `gepa` has no round limit: its metric-call budget ends the search.
        let unlimited = State::default();
        assert_eq!(unlimited.round_of(2), "2");
    }
}

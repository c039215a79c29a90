//! Whether a run's rollouts can vary, and what it does about it.
//!
//! A run is in one of two regimes. **Deterministic**: the same skill on the same task gives
//! the same score every time (an `api` harness at temperature 0, graded without a judge), so
//! a mean over the validation tasks is exact for them and comparing two means is the honest
//! comparison; runs cost what they cost the Python tool. **Noisy**: scores are draws (a
//! temperature above 0, an agent CLI or program, an LLM judge, or repeated samples that
//! disagree), so every comparison is a paired test with an interval, sampled sequentially,
//! and the headline score is measured again on fresh samples
//! ([`crate::optimizer::gate`]). `noise.regime` can say which instead of `auto`.

use serde::Serialize;
use skill_factory_core::stats::{self, Aggregate, Estimate, Weights};

use crate::config::{HarnessType, NoiseConfig, RegimeSetting, RunConfig};

pub use skill_factory_runfolder::event::Regime;

/// A run's noise settings and regime, with the reasons for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Noise {
    /// The regime.
    pub regime: Regime,
    /// Why (each a short clause: `harness.temperature is 0.7`); for a regime that was set,
    /// `noise.regime is noisy`.
    pub reasons: Vec<String>,
    /// Whether the regime was set (`noise.regime`) rather than found.
    pub set: bool,
    /// Samples of each task in an evaluation, the baseline, and a gate's first look.
    pub samples: u32,
    /// Most samples of a task a gate draws.
    pub max_samples: u32,
    /// Confidence of the intervals shown and of a gate's lower bound.
    pub confidence: f64,
    /// How a task's samples make its score.
    pub aggregate: Aggregate,
    /// The score at which a sample passes (`pass@k`, `pass^k`).
    pub pass_score: f64,
}

impl Default for Noise {
    fn default() -> Self {
        Noise::from_block(&NoiseConfig::default(), Vec::new())
    }
}

impl Noise {
    /// The noise of a run config: its `noise` block, and for `regime: auto` the regime its
    /// harness and metric make; over several targets, those of the targets optimized.
    pub fn of(config: &RunConfig) -> Noise {
        let found = if config.targets.is_empty() {
            variation(config)
        } else {
            config
                .targets
                .iter()
                .filter(|t| t.optimize)
                .filter_map(|t| Some((t.name.as_str(), config.for_target(&t.name)?)))
                .flat_map(|(name, own)| {
                    variation(&own)
                        .into_iter()
                        .map(move |reason| format!("target {name}: {reason}"))
                })
                .collect()
        };
        Noise::from_block(&config.noise, found)
    }

    fn from_block(block: &NoiseConfig, found: Vec<String>) -> Noise {
        let (regime, reasons) = match block.regime {
            RegimeSetting::Noisy => (Regime::Noisy, vec!["noise.regime is noisy".to_string()]),
            RegimeSetting::Deterministic => (
                Regime::Deterministic,
                vec!["noise.regime is deterministic".to_string()],
            ),
            RegimeSetting::Auto if found.is_empty() => (Regime::Deterministic, found),
            RegimeSetting::Auto => (Regime::Noisy, found),
        };
        Noise {
            regime,
            reasons,
            set: block.regime != RegimeSetting::Auto,
            samples: block.samples,
            max_samples: block.max_samples.max(block.samples),
            confidence: block.confidence,
            aggregate: block.aggregate,
            pass_score: block.pass_score,
        }
    }

    /// Whether the run is noisy.
    pub fn is_noisy(&self) -> bool {
        self.regime == Regime::Noisy
    }

    /// The same noise, found noisy at run time for `reason` (repeated samples disagreed)
    /// unless a regime was set.
    pub fn found_noisy(&self, reason: String) -> Noise {
        if self.is_noisy() || self.set {
            return self.clone();
        }
        Noise {
            regime: Regime::Noisy,
            reasons: vec![reason],
            ..self.clone()
        }
    }

    /// Samples of each task for the final measurements (the headline and the held-out
    /// test): at least two in a noisy run, so the headline's interval rests on measured
    /// noise; `samples` otherwise.
    pub fn final_samples(&self) -> u32 {
        if self.is_noisy() {
            self.samples.max(2)
        } else {
            self.samples
        }
    }

    /// The score of a skill whose samples' scores by task are `per_task`, the tasks
    /// weighing `weights`, with its interval ([`stats::estimate`] at this run's aggregate and
    /// confidence).
    pub fn estimate(&self, per_task: &[Vec<f64>], weights: Weights<'_>) -> Estimate {
        stats::estimate(
            per_task,
            weights,
            self.aggregate,
            self.pass_score,
            self.confidence,
        )
    }

    /// B − A paired by task and sample, with its interval ([`stats::paired`]).
    pub fn paired(&self, a: &[Vec<f64>], b: &[Vec<f64>], weights: Weights<'_>) -> Estimate {
        stats::paired(
            a,
            b,
            weights,
            self.aggregate,
            self.pass_score,
            self.confidence,
        )
    }

    /// B − A paired by task only, each side over all its samples ([`stats::paired_by_task`]).
    pub fn paired_by_task(&self, a: &[Vec<f64>], b: &[Vec<f64>], weights: Weights<'_>) -> Estimate {
        stats::paired_by_task(
            a,
            b,
            weights,
            self.aggregate,
            self.pass_score,
            self.confidence,
        )
    }

    /// The tail probability of a two-sided interval at the configured confidence (0.025 for
    /// 95%).
    pub fn tail(&self) -> f64 {
        (1.0 - self.confidence) / 2.0
    }

    /// One sentence for reports: the regime and why.
    pub fn describe(&self) -> String {
        match self.regime {
            Regime::Noisy => format!(
                "noisy ({}): every edit was kept only when the lower end of the {}% interval of its paired gain over the best cleared min_delta, sampling more only while the decision was open",
                self.reasons.join("; "),
                self.confidence * 100.0
            ),
            Regime::Deterministic if self.reasons.is_empty() => "deterministic (the api harness at temperature 0, no LLM judge): rollouts do not vary, so a mean over the validation tasks is exact for them and edits were kept when their mean beat the best's".to_string(),
            Regime::Deterministic => format!(
                "deterministic ({}): edits were kept when their mean beat the best's",
                self.reasons.join("; ")
            ),
        }
    }
}

/// What in a config makes its rollouts vary, one clause each; empty when nothing does.
fn variation(config: &RunConfig) -> Vec<String> {
    let mut found = Vec::new();
    let harness = &config.harness;
    match harness.harness_type {
        HarnessType::Api if harness.temperature > 0.0 => found.push(format!(
            "harness.temperature is {}: the target samples",
            harness.temperature
        )),
        HarnessType::Api => {}
        other => found.push(format!(
            "the {} harness runs a program whose output can vary",
            other.name()
        )),
    }
    if config.metric.judge.is_some() {
        found.push("an LLM judge grades (metric.judge)".to_string());
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(extra: &str) -> RunConfig {
        serde_saphyr::from_str(&format!("skill: s.md\ndataset: d.jsonl\n{extra}")).unwrap()
    }

    fn config() -> RunConfig {
        parsed("")
    }

    #[test]
    fn a_python_tool_config_at_temperature_0_is_deterministic() {
        let noise = Noise::of(&config());
        assert_eq!(noise.regime, Regime::Deterministic);
        assert!(noise.reasons.is_empty());
        assert_eq!(noise.final_samples(), 1);
        assert!(
            noise
                .describe()
                .starts_with("deterministic (the api harness")
        );
    }

    #[test]
    fn a_temperature_a_program_or_a_judge_make_a_run_noisy() {
        let mut hot = config();
        hot.harness.temperature = 0.7;
        let noise = Noise::of(&hot);
        assert!(noise.is_noisy());
        assert_eq!(
            noise.reasons,
            ["harness.temperature is 0.7: the target samples"]
        );
        assert_eq!(noise.final_samples(), 2);
        let agent = parsed("harness: {type: claude_code}\n");
        assert!(Noise::of(&agent).reasons[0].contains("claude_code harness"));
        let judged = parsed("metric: {judge: {criteria: [{name: c, description: d}]}}\n");
        assert!(Noise::of(&judged).describe().contains("LLM judge"));
    }

    #[test]
    fn a_set_regime_wins_over_what_the_config_shows() {
        let mut hot = config();
        hot.harness.temperature = 0.7;
        hot.noise.regime = RegimeSetting::Deterministic;
        let noise = Noise::of(&hot);
        assert_eq!(noise.regime, Regime::Deterministic);
        let found = noise.found_noisy("samples disagreed".into());
        assert_eq!(found.regime, Regime::Deterministic);
        let auto = Noise::of(&config()).found_noisy("samples disagreed".into());
        assert_eq!(auto.reasons, ["samples disagreed"]);
        assert!(auto.is_noisy());
    }
}

//! A run's inputs, loaded and checked: the config, the seed skill, the dataset and its split,
//! and the builders that turn the config's blocks into a harness and a metric.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use skill_factory_core::{Dataset, Skill, Split};
use skill_factory_llm::{ChatModel, ProviderSettings, providers::build_client};

use crate::config::{HarnessType, LoadedConfig, load_config};
use crate::error::EngineError;
use crate::harness::{ApiHarness, Harness};
use crate::metric::{
    Check, CompositeMetric, Criterion, GoldenMetric, GoldenMode, LlmJudgeMetric, Metric,
    ProgrammaticMetric,
};

/// Everything a command needs to evaluate or optimize: the loaded config, the seed skill and
/// the dataset.
pub struct Session {
    /// The loaded config.
    pub config: LoadedConfig,
    /// The skill to evaluate (the config's seed unless overridden).
    pub skill: Skill,
    /// The path the skill was read from.
    pub skill_path: PathBuf,
    /// The whole dataset.
    pub dataset: Dataset,
}

impl Session {
    /// Loads the config at `config_path`, its seed skill (or `skill_override`, a path relative
    /// to the working directory) and its dataset.
    pub fn open(config_path: &Path, skill_override: Option<&Path>) -> Result<Session, EngineError> {
        let config = load_config(config_path)?;
        let skill_path = skill_override
            .map(Path::to_path_buf)
            .unwrap_or_else(|| config.config.skill.clone());
        let skill = read_skill(&skill_path)?;
        let dataset_path = config.config.dataset.clone();
        let text = read_text("dataset", &dataset_path)?;
        let dataset = Dataset::from_jsonl(&text, &dataset_path.display().to_string())?;
        Ok(Session {
            config,
            skill,
            skill_path,
            dataset,
        })
    }

    /// The train / val / test split of the dataset, as the config's `val_fraction`,
    /// `test_fraction` and `seed` describe it.
    pub fn split(&self) -> Result<Split, EngineError> {
        let run = &self.config.config;
        self.dataset
            .split(run.val_fraction, run.test_fraction, run.seed)
            .map_err(|source| EngineError::Split {
                config: self.config.path.clone(),
                source,
            })
    }

    /// Builds the model client of one role.
    pub fn client(
        &self,
        role: &'static str,
        settings: &ProviderSettings,
    ) -> Result<Arc<dyn ChatModel>, EngineError> {
        let model = settings.model.clone().unwrap_or_default();
        let env = |key: &str| self.config.env(key);
        build_client(settings, &model, &env)
            .map_err(|source| EngineError::Provider { role, source })
    }

    /// Builds the harness the config describes (and the target client when it needs one).
    pub fn harness(&self) -> Result<Arc<dyn Harness>, EngineError> {
        let harness = &self.config.config.harness;
        match harness.harness_type {
            HarnessType::Api => {
                let client = self.client("target", &self.config.target_provider())?;
                Ok(Arc::new(ApiHarness::new(
                    client,
                    harness.temperature,
                    harness.max_tokens,
                )))
            }
            other => Err(EngineError::Unsupported {
                config: self.config.path.clone(),
                key: "harness.type".into(),
                detail: format!(
                    "the {other:?} harness is not available in this version; use 'api'"
                ),
            }),
        }
    }

    /// Builds the composite metric the config describes, in the fixed order golden →
    /// programmatic → judge (the judge client is built only when a judge is configured).
    pub fn metric(&self) -> Result<Arc<dyn Metric>, EngineError> {
        let metric = &self.config.config.metric;
        let config_path = &self.config.path;
        let bad = |key: String, detail: String| EngineError::Metric {
            config: config_path.clone(),
            key,
            detail,
        };
        let mut parts: Vec<(Box<dyn Metric>, f64)> = Vec::new();
        let default_golden = crate::config::GoldenConfig::default();
        let golden = metric
            .golden
            .as_ref()
            .or(metric.is_empty().then_some(&default_golden));
        if let Some(golden) = golden {
            let mode: GoldenMode = golden
                .mode
                .parse()
                .map_err(|e| bad("metric.golden.mode".into(), e))?;
            parts.push((Box::new(GoldenMetric::new(mode)), golden.weight));
        }
        if let Some(programmatic) = &metric.programmatic {
            let mut checks = Vec::new();
            for (index, spec) in programmatic.checks.iter().enumerate() {
                let check = Check::from_spec(spec)
                    .map_err(|e| bad(format!("metric.programmatic.checks[{index}]"), e))?;
                checks.push(check);
            }
            let built = ProgrammaticMetric::new(checks)
                .map_err(|e| bad("metric.programmatic.checks".into(), e))?;
            parts.push((Box::new(built), programmatic.weight));
        }
        if let Some(judge) = &metric.judge {
            let client = self.client("judge", &self.config.judge_provider())?;
            let criteria = judge
                .criteria
                .iter()
                .map(|c| Criterion::new(c.name.clone(), c.description.clone(), c.weight))
                .collect();
            let built = LlmJudgeMetric::new(client, criteria)
                .map_err(|e| bad("metric.judge.criteria".into(), e))?;
            parts.push((Box::new(built), judge.weight));
        }
        if metric.systemone.is_some() {
            return Err(EngineError::Unsupported {
                config: config_path.clone(),
                key: "metric.systemone".into(),
                detail: "the System One metric is not available in this version; remove the block or use metric.judge".into(),
            });
        }
        let composite = CompositeMetric::new(parts).map_err(|e| bad("metric".into(), e))?;
        Ok(Arc::new(composite))
    }
}

/// Reads and parses a SKILL.md file.
pub fn read_skill(path: &Path) -> Result<Skill, EngineError> {
    let text = read_text("skill file", path)?;
    Skill::parse(&text).map_err(|source| EngineError::Skill {
        path: path.to_path_buf(),
        source,
    })
}

fn read_text(what: &'static str, path: &Path) -> Result<String, EngineError> {
    std::fs::read_to_string(path).map_err(|e| EngineError::Read {
        what,
        path: path.to_path_buf(),
        detail: match e.kind() {
            std::io::ErrorKind::NotFound => "no such file; check the path (relative paths in a config are relative to the config file)".into(),
            _ => e.to_string(),
        },
    })
}

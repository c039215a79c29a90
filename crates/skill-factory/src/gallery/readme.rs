//! The README of a gallery entry, generated from the run: what was optimized, against which
//! models, on which data and metric, baseline → best on validation and the held-out test
//! scores, what it cost, every candidate, and the commands that reproduce it. Every number is
//! read from the run's files; nothing here is typed by hand.

use std::fmt::Write;

use skill_factory_llm::ProviderSettings;
use skill_factory_llm::local::fetch::KNOWN_MODELS;

use super::facts::RunFacts;
use super::history::{CandidateRow, Outcome};
use super::portable::script_file;
use super::{CONFIG_FILE, DATASET_FILE, RESULT_FILE, SEED_FILE};
use crate::config::{MetricConfig, OptimizerKind, RunConfig};
use skill_factory_runfolder::names::TRAFFIC_FILE;
use skill_factory_runfolder::result::Usage;

/// Everything an entry's README is made of.
#[derive(Debug, Clone)]
pub struct EntryView<'a> {
    /// The entry's folder name.
    pub entry: &'a str,
    /// The folder of the optimized skill inside the entry (its Agent Skills name).
    pub skill_dir: &'a str,
    /// `result.json` of the run.
    pub facts: &'a RunFacts,
    /// The entry's (portable) config.
    pub config: &'a RunConfig,
    /// Tasks in the dataset.
    pub dataset_size: usize,
    /// Every candidate of the run.
    pub history: &'a [CandidateRow],
    /// How the commands of the Reproduce section reach the entry.
    pub commands: &'a Commands,
}

/// The commands that reproduce an entry, as a user types them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commands {
    /// Where they run: `None` from the folder holding the gallery, else a sentence saying
    /// where (when the gallery was given as an absolute path, from the entry folder).
    pub from: Option<String>,
    /// The entry's config as the commands name it.
    pub config: String,
    /// The entry's recorded model traffic as the commands name it.
    pub traffic: String,
    /// The run folder a rerun leaves, as the commands name it.
    pub run_dir: String,
    /// Flags `gallery add` needs to write the same entry again (`--gallery`, `--name`).
    pub add_flags: String,
}

/// A provider block as the README names it.
pub fn model_label(block: Option<&ProviderSettings>) -> String {
    let Some(block) = block else {
        return "—".to_owned();
    };
    let name = block.name.as_deref().unwrap_or_default().trim();
    let model = block.model.as_deref().unwrap_or_default();
    if name.eq_ignore_ascii_case("fake") {
        return "scripted (`fake` provider)".to_owned();
    }
    if name.eq_ignore_ascii_case(skill_factory_llm::local::PROVIDER) {
        let file = std::path::Path::new(model)
            .file_name()
            .map_or_else(|| model.to_owned(), |f| f.to_string_lossy().into_owned());
        return format!("`{file}` (`local`, in process)");
    }
    format!("`{model}` (`{name}`)")
}

fn is_fake(block: Option<&ProviderSettings>) -> bool {
    block
        .and_then(|b| b.name.as_deref())
        .is_some_and(|name| name.trim().eq_ignore_ascii_case("fake"))
}

/// The target's provider block (`provider`, else `target`).
pub fn target_block(config: &RunConfig) -> Option<&ProviderSettings> {
    config.provider.as_ref().or(config.target.as_ref())
}

fn weighted(text: String, weight: f64, several: bool) -> String {
    if several {
        format!("{text} (weight {weight})")
    } else {
        text
    }
}

/// The metric in a few words: `golden numeric`, `golden normalized (weight 2) + programmatic:
/// matches_regex (weight 1)`.
pub fn metric_label(metric: &MetricConfig) -> String {
    let several = [
        metric.golden.is_some(),
        metric.programmatic.is_some(),
        metric.judge.is_some(),
        metric.systemone.is_some(),
        metric.command.is_some(),
    ]
    .iter()
    .filter(|set| **set)
    .count()
        > 1;
    let mut parts = Vec::new();
    if let Some(golden) = &metric.golden {
        parts.push(weighted(
            format!("golden `{}`", golden.mode),
            golden.weight,
            several,
        ));
    }
    if let Some(programmatic) = &metric.programmatic {
        let checks: Vec<String> = programmatic
            .checks
            .iter()
            .map(|check| format!("`{}`", check.label()))
            .collect();
        parts.push(weighted(
            format!("programmatic: {}", checks.join(", ")),
            programmatic.weight,
            several,
        ));
    }
    if let Some(judge) = &metric.judge {
        parts.push(weighted(
            format!("LLM judge, {} criteria", judge.criteria.len()),
            judge.weight,
            several,
        ));
    }
    if let Some(systemone) = &metric.systemone {
        parts.push(weighted(
            format!("System One, {} checks", systemone.checks.len()),
            systemone.weight,
            several,
        ));
    }
    if let Some(command) = &metric.command {
        parts.push(weighted("`command`".to_owned(), command.weight, several));
    }
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(" + ")
    }
}

/// The optimizer and its settings in a few words.
pub fn optimizer_label(config: &RunConfig) -> String {
    let optimizer = &config.optimizer;
    if optimizer.name.parse() == Ok(OptimizerKind::LlmLoop) {
        format!(
            "`llm_loop`: up to {} rounds, minibatch {}, {} proposal{} a round, patience {}",
            optimizer.rounds,
            optimizer.minibatch_size,
            optimizer.max_edits_per_round,
            if optimizer.max_edits_per_round == 1 {
                ""
            } else {
                "s"
            },
            optimizer.patience
        )
    } else {
        format!("`{}`", optimizer.name)
    }
}

/// `a → b (+x.x points)` with three decimals.
pub fn score_change(from: f64, to: f64) -> String {
    format!(
        "**{from:.3} → {to:.3}** ({:+.1} points)",
        (to - from) * 100.0
    )
}

/// The held-out test cell: `seed → best` on N tasks, or why there is none.
pub fn test_cell(facts: &RunFacts) -> String {
    match &facts.run.test {
        None => "no test split (`test_fraction` not set)".to_owned(),
        Some(test) => match (test.seed_score, test.best_score) {
            (Some(seed), Some(best)) => format!(
                "{} on {} tasks the optimizer never saw",
                score_change(seed, best),
                test.size
            ),
            _ => format!(
                "not scored: {}",
                test.skipped.as_deref().unwrap_or("the run stopped early")
            ),
        },
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn usage_text(usage: &Usage) -> String {
    let mut text = format!(
        "{} in + {} out, {} call{}",
        thousands(usage.input_tokens),
        thousands(usage.output_tokens),
        thousands(usage.calls),
        if usage.calls == 1 { "" } else { "s" }
    );
    if usage.cached_calls > 0 {
        let _ = write!(text, " ({} from the cache)", thousands(usage.cached_calls));
    }
    if usage.failed_calls > 0 {
        let _ = write!(text, " ({} failed)", thousands(usage.failed_calls));
    }
    text
}

fn tokens_cell(facts: &RunFacts) -> String {
    let mut text = String::new();
    if let Some(total) = facts.run.usage.get("total") {
        let _ = write!(
            text,
            "{} tokens: {}",
            thousands(total.input_tokens + total.output_tokens),
            usage_text(total)
        );
    }
    let roles: Vec<String> = facts
        .run
        .usage
        .iter()
        .filter(|(role, _)| role.as_str() != "total")
        .map(|(role, usage)| format!("{role} {}", usage_text(usage)))
        .collect();
    if !roles.is_empty() {
        let _ = write!(text, " ({})", roles.join("; "));
    }
    text
}

fn wall_time(seconds: f64) -> String {
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let whole = seconds.round() as u64;
    format!("{seconds:.0} s ({} min {:02} s)", whole / 60, whole % 60)
}

/// Markdown table cell text: one line, pipes escaped, at most `limit` characters.
pub fn cell(text: &str, limit: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = flat.chars().take(limit).collect();
    if flat.chars().count() > limit {
        out.push('…');
    }
    out.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Seed => "seed (baseline)".to_owned(),
        Outcome::Accepted => "**accepted**".to_owned(),
        Outcome::Rejected => "rejected: not better than the best".to_owned(),
        Outcome::SameAs(earlier) => format!("same body as #{earlier}"),
        Outcome::Unchanged(parent) => format!("unchanged from its parent #{parent}: not scored"),
        Outcome::Invalid(reason) => format!("refused unscored: {}", cell(reason, 120)),
        Outcome::NotScored => "not scored (the run stopped)".to_owned(),
    }
}

fn honesty_notes(text: &mut String, config: &RunConfig) {
    if is_fake(config.optimizer_provider.as_ref()) {
        let _ = writeln!(
            text,
            "**The proposals were scripted.** The optimizer was the `fake` provider replaying \
             [`{script}`]({script}): the candidate skills in it were written by hand, not by a \
             model. Only the scores come from the target model, which ran every candidate on \
             every validation and test task.\n",
            script = script_file("optimizer")
        );
    }
    if is_fake(target_block(config)) {
        let _ = writeln!(
            text,
            "**The target was scripted.** The target was the `fake` provider replaying \
             [`{script}`]({script}): the scores measure scripted answers, not a model.\n",
            script = script_file("target")
        );
    }
    if config.metric.judge.is_some() && is_fake(config.judge_provider.as_ref()) {
        let _ = writeln!(
            text,
            "**The judge was scripted.** The judge was the `fake` provider replaying \
             [`{script}`]({script}).\n",
            script = script_file("judge")
        );
    }
}

/// The text of an entry's `README.md`.
pub fn entry_readme(view: &EntryView) -> String {
    let facts = view.facts;
    let config = view.config;
    let mut text = String::new();
    let _ = writeln!(text, "# {}\n", view.entry);
    let _ = writeln!(
        text,
        "> Written by `skill-factory gallery add` from run `{}`. Every number below comes from \
         that run's files ([`{RESULT_FILE}`]({RESULT_FILE}) holds them all); rerun the command \
         instead of editing this file.\n",
        facts.run.run_id
    );
    let _ = writeln!(text, "{}\n", facts.best_skill.description.trim());
    honesty_notes(&mut text, config);

    let skill_md = format!("{}/SKILL.md", view.skill_dir);
    let (train, val, test) = (
        facts.run.splits.train,
        facts.run.splits.val,
        facts.run.splits.test,
    );
    let mut rows: Vec<(&str, String)> = vec![
        (
            "Skill",
            format!("[`{skill_md}`]({skill_md}), optimized from [`{SEED_FILE}`]({SEED_FILE})"),
        ),
        ("Target model", model_label(target_block(config))),
        (
            "Optimizer",
            format!(
                "{}; proposals by {}",
                optimizer_label(config),
                model_label(config.optimizer_provider.as_ref())
            ),
        ),
    ];
    if config.metric.judge.is_some() {
        rows.push(("Judge model", model_label(config.judge_provider.as_ref())));
    }
    let mut split = format!("train {train}, validation {val}");
    if test > 0 {
        let _ = write!(split, ", test {test}");
    }
    let mut fractions = format!("`val_fraction` {}", config.val_fraction);
    if config.test_fraction > 0.0 {
        let _ = write!(fractions, ", `test_fraction` {}", config.test_fraction);
    }
    rows.extend([
        (
            "Dataset",
            format!(
                "[`{DATASET_FILE}`]({DATASET_FILE}), {} tasks: {split} ({fractions}, split seed {})",
                view.dataset_size, config.seed
            ),
        ),
        ("Metric", metric_label(&config.metric)),
        (
            "Baseline → best (validation)",
            score_change(facts.baseline_score, facts.best_score),
        ),
        ("Held-out test: seed → best", test_cell(facts)),
    ]);
    let written = view.history.len().saturating_sub(1);
    let refused = view
        .history
        .iter()
        .filter(|row| matches!(row.outcome, Outcome::Invalid(_)))
        .count();
    let accepted = view
        .history
        .iter()
        .filter(|row| row.outcome == Outcome::Accepted)
        .count();
    rows.extend([
        (
            "Candidates",
            format!("{written} proposed, {refused} refused unscored, {accepted} accepted (below)"),
        ),
        ("Tokens", tokens_cell(facts)),
        (
            "Cost",
            facts.run.cost_usd.map_or_else(
                || "unknown (a model has no price)".to_owned(),
                |usd| format!("${usd:.4}"),
            ),
        ),
        ("Wall time", wall_time(facts.run.elapsed_seconds)),
        (
            "Stopped",
            format!(
                "`{}`: {}",
                facts.run.stop_reason,
                facts.run.stop_detail.as_deref().unwrap_or("")
            ),
        ),
        (
            "Run",
            format!("`{}`, started {}", facts.run.run_id, facts.run.started_at),
        ),
    ]);
    text.push_str("| | |\n| :--- | :--- |\n");
    for (key, value) in rows {
        let _ = writeln!(text, "| {key} | {value} |");
    }

    text.push_str("\n## Candidates\n\n");
    text.push_str(
        "Every skill the optimizer proposed, kept in [`candidates/`](candidates/) as written \
         (a refused one as the model answered). A candidate is accepted only when its \
         validation score beats the best so far.\n\n",
    );
    text.push_str(
        "| # | round | validation | outcome | rationale |\n| ---: | ---: | ---: | :--- | :--- |\n",
    );
    for row in view.history {
        let score = row
            .val_score
            .map_or_else(|| "—".to_owned(), |s| format!("{s:.3}"));
        let _ = writeln!(
            text,
            "| [{:03}]({}) | {} | {score} | {} | {} |",
            row.number,
            row.file(),
            row.round,
            outcome_text(&row.outcome),
            cell(&row.rationale, 160)
        );
    }

    let local_models: Vec<&str> = [
        target_block(config),
        config.optimizer_provider.as_ref(),
        config.judge_provider.as_ref(),
    ]
    .into_iter()
    .flatten()
    .filter(|b| {
        b.name.as_deref().is_some_and(|n| {
            n.trim()
                .eq_ignore_ascii_case(skill_factory_llm::local::PROVIDER)
        })
    })
    .filter_map(|b| b.model.as_deref())
    .collect();
    let from = view
        .commands
        .from
        .as_ref()
        .map(|from| format!("{from}\n\n"))
        .unwrap_or_default();

    text.push_str("\n## Reproduce\n\n### Replay: exact, with no model\n\n");
    let _ = writeln!(
        text,
        "[`{TRAFFIC_FILE}`]({TRAFFIC_FILE}) holds every model exchange of the run. Replayed, it \
         reproduces every score, candidate and decision above byte for byte, on any machine, \
         with no model and no key:\n\n{from}```bash\nSKILL_FACTORY_REPLAY={} skill-factory \
         optimize -c {}\n```",
        view.commands.traffic, view.commands.config
    );
    text.push_str("\n### Rerun live\n\n");
    text.push_str(&from);
    text.push_str("```bash\n");
    if let Some(known) = KNOWN_MODELS.iter().find(|known| {
        local_models.iter().any(|model| {
            std::path::Path::new(model)
                .file_name()
                .is_some_and(|f| f == known.file)
        })
    }) {
        let _ = writeln!(
            text,
            "skill-factory models fetch {}   # {} into models/",
            known.name, known.about
        );
    }
    let _ = writeln!(
        text,
        "skill-factory optimize --record -c {}",
        view.commands.config
    );
    let _ = writeln!(
        text,
        "skill-factory gallery add {}{}",
        view.commands.run_dir, view.commands.add_flags
    );
    text.push_str("```\n\n");
    let _ = writeln!(
        text,
        "[`{CONFIG_FILE}`]({CONFIG_FILE}) is the config of run `{}` as it ran: its roles \
         resolved, its paths relative to this folder, the seed, the dataset and any scripts \
         copied here. `optimize` reruns the search live into a new run folder (its model \
         answers cached in `.skill-factory/` here), recording it; `gallery add` rewrites this \
         entry and the gallery index from it. The run above took {} on the machine that made \
         it.{}",
        facts.run.run_id,
        wall_time(facts.run.elapsed_seconds),
        if local_models.is_empty() {
            ""
        } else {
            " A live rerun of a local model may give other numbers on another kind of CPU: \
             llama.cpp picks its arithmetic kernels by the CPU's instruction set, their sums \
             round differently in the last bits, and a greedy answer changes where two tokens \
             were nearly tied. The replay is exact everywhere."
        }
    );
    text
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::parse_config;
    use skill_factory_runfolder::result::{BestSkill, SkillRecord, Splits, TestRecord};

    fn config(providers: &str) -> RunConfig {
        parse_config(
            &format!(
                "skill: seed_skill.md\ndataset: dataset.jsonl\nval_fraction: 0.34\n\
                 test_fraction: 0.25\nseed: 7\n{providers}\
                 optimizer: {{rounds: 3, minibatch_size: 4, max_edits_per_round: 1, patience: 2}}\n\
                 metric: {{golden: {{mode: numeric}}}}\n"
            ),
            Path::new("config.yaml"),
        )
        .unwrap()
    }

    const LOCAL_TARGET_SCRIPTED_OPTIMIZER: &str = "provider: {name: local, model: ../../models/SmolLM2-135M-Instruct.Q4_1.gguf}\n\
         optimizer_provider: {name: fake, script: optimizer_script.yaml}\n";

    fn facts(test: Option<TestRecord>) -> RunFacts {
        let mut usage = indexmap::IndexMap::new();
        usage.insert(
            "total".to_owned(),
            Usage {
                calls: 1200,
                cached_calls: 0,
                failed_calls: 0,
                input_tokens: 123_456,
                output_tokens: 7_890,
                cost_usd: Some(0.0),
            },
        );
        RunFacts {
            optimizer: "llm_loop".into(),
            baseline_score: 0.125,
            best_score: 0.6667,
            best_skill: BestSkill {
                name: "weather-temperature".into(),
                description: "Give the temperature.".into(),
                ..BestSkill::default()
            },
            run: SkillRecord {
                run_id: "20260101-000000".into(),
                config_name: "weather".into(),
                started_at: "2026-01-01T00:00:00Z".into(),
                finished_at: Some("2026-01-01T00:05:00Z".into()),
                stop_reason: "rounds".into(),
                stop_detail: Some("3 rounds run".into()),
                splits: Splits {
                    train: 15,
                    val: 12,
                    test: 9,
                    held_out: None,
                },
                test,
                usage,
                cost_usd: Some(0.0),
                unpriced_models: Vec::new(),
                elapsed_seconds: 312.4,
                failed_rollouts: 0,
                refused_copies: Vec::new(),
                cleaned_repeats: Vec::new(),
                noise: None,
                headline: None,
                batches: None,
                trigger: None,
                targets: Default::default(),
            },
        }
    }

    fn render(config: &RunConfig, facts: &RunFacts) -> String {
        let history = vec![
            CandidateRow {
                number: 0,
                round: 0,
                val_score: Some(0.125),
                outcome: Outcome::Seed,
                rationale: String::new(),
            },
            CandidateRow {
                number: 1,
                round: 1,
                val_score: Some(0.6667),
                outcome: Outcome::Accepted,
                rationale: "Ask for | the number\nonly.".into(),
            },
            CandidateRow {
                number: 2,
                round: 2,
                val_score: None,
                outcome: Outcome::Invalid("the reply has no <NEW_SKILL_BODY> block".into()),
                rationale: String::new(),
            },
        ];
        entry_readme(&EntryView {
            entry: "weather-temperature",
            skill_dir: "weather-temperature",
            facts,
            config,
            dataset_size: 36,
            history: &history,
            commands: &Commands {
                from: None,
                config: "gallery/weather-temperature/config.yaml".into(),
                traffic: "gallery/weather-temperature/traffic.jsonl".into(),
                run_dir: "gallery/weather-temperature/runs/weather-temperature/latest".into(),
                add_flags: String::new(),
            },
        })
    }

    fn scored_test() -> Option<TestRecord> {
        Some(TestRecord {
            size: 9,
            seed_score: Some(0.0),
            best_score: Some(0.5556),
            ..TestRecord::default()
        })
    }

    #[test]
    fn summary_rows_give_models_data_metric_and_scores_from_the_run() {
        let text = render(
            &config(LOCAL_TARGET_SCRIPTED_OPTIMIZER),
            &facts(scored_test()),
        );
        for row in [
            "| Target model | `SmolLM2-135M-Instruct.Q4_1.gguf` (`local`, in process) |",
            "| Dataset | [`dataset.jsonl`](dataset.jsonl), 36 tasks: train 15, validation 12, test 9 (`val_fraction` 0.34, `test_fraction` 0.25, split seed 7) |",
            "| Metric | golden `numeric` |",
            "| Baseline → best (validation) | **0.125 → 0.667** (+54.2 points) |",
            "| Held-out test: seed → best | **0.000 → 0.556** (+55.6 points) on 9 tasks the optimizer never saw |",
            "| Candidates | 2 proposed, 1 refused unscored, 1 accepted (below) |",
            "| Tokens | 131,346 tokens: 123,456 in + 7,890 out, 1,200 calls |",
            "| Wall time | 312 s (5 min 12 s) |",
        ] {
            assert!(text.contains(row), "missing {row}\n{text}");
        }
    }

    #[test]
    fn a_scripted_optimizer_is_said_plainly_and_a_local_model_is_fetched_first() {
        let text = render(
            &config(LOCAL_TARGET_SCRIPTED_OPTIMIZER),
            &facts(scored_test()),
        );
        assert!(text.contains("**The proposals were scripted.**"), "{text}");
        assert!(!text.contains("**The target was scripted.**"), "{text}");
        assert!(text.contains(
            "```bash\nskill-factory models fetch smollm2-135m   # SmolLM2-135M-Instruct, Q4_1"
        ));
        assert!(text.contains(
            "skill-factory optimize --record -c gallery/weather-temperature/config.yaml\n\
             skill-factory gallery add gallery/weather-temperature/runs/weather-temperature/latest\n```"
        ));
        assert!(
            text.contains(
                "SKILL_FACTORY_REPLAY=gallery/weather-temperature/traffic.jsonl skill-factory optimize -c gallery/weather-temperature/config.yaml"
            ),
            "{text}"
        );
        assert!(
            text.contains("may give other numbers on another kind of CPU"),
            "{text}"
        );
    }

    #[test]
    fn a_real_optimizer_gets_no_scripted_note() {
        let text = render(
            &config(
                "provider: {name: local, model: m.gguf}\n\
                 optimizer_provider: {name: anthropic, model: claude-sonnet-4-5}\n",
            ),
            &facts(None),
        );
        assert!(!text.contains("scripted"), "{text}");
        assert!(text.contains("proposals by `claude-sonnet-4-5` (`anthropic`)"));
        assert!(
            text.contains(
                "| Held-out test: seed → best | no test split (`test_fraction` not set) |"
            )
        );
    }

    #[test]
    fn candidate_rows_escape_table_characters_and_link_their_files() {
        let text = render(
            &config(LOCAL_TARGET_SCRIPTED_OPTIMIZER),
            &facts(scored_test()),
        );
        assert!(text.contains(
            "| [001](candidates/001.md) | 1 | 0.667 | **accepted** | Ask for \\| the number only. |"
        ));
        assert!(text.contains(
            "| [002](candidates/002.md) | 2 | — | refused unscored: the reply has no &lt;NEW_SKILL_BODY&gt; block |  |"
        ));
    }
}

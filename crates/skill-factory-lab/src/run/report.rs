//! `report.md`: what a run found, in Markdown: the objective and what it cost, the before
//! and after on every split (sealed splits as placeholders until `lab freeze`), every round
//! and why it was kept or refused, the questions, the Pareto front and the coverage.
//!
//! Rationales, refusal reasons and error messages are free text, so every table cell is
//! escaped: a `|` or a newline in them would otherwise break the table.

use skill_factory_pycompat::float::thousands;

use crate::data::dataset::{Example, Status};
use crate::data::split::Split;
use crate::measure::evaluate::{Policy, Reports, SplitReport};
use crate::measure::metrics::{Rates, pct};
use crate::optimizer::Outcome;
use crate::optimizer::objective::Objective;

/// The questions listed in `## Questions`: enough to see what separates, few enough to read.
const QUESTIONS_SHOWN: usize = 40;

/// Characters of a round's rationale shown in `## Rounds`.
const WHY_CHARS: usize = 200;

/// One row of the before/after table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableRow {
    /// The split.
    pub split: Split,
    /// Its positives.
    pub positives: usize,
    /// Its negatives.
    pub negatives: usize,
    /// A sealed split without results: shown as a placeholder that says how to unseal it.
    pub sealed: bool,
}

/// The before/after table: `| Split | Positives <lvl> | Negatives <lvl> | ... | AUC |` with
/// one pair of columns per detect level in `levels`, one row per entry of `rows` in their
/// order (display order), skipping splits without examples.
///
/// A rate reads `before -> **after**` with its counts (`0.0% (0/5) -> **80.0% (4/5)**`), or
/// `**after**` alone without `before` (or when `before` lacks the split); a class the split
/// does not have reads `n/a (no positives)` / `n/a (no negatives)`; AUC reads `b -> **a**` to
/// 3 decimals, or `a` alone. A sealed row, or a split `after` did not score, is one message
/// padded with empty cells.
pub fn before_after_table(
    before: Option<&Reports>,
    after: &Reports,
    levels: &[String],
    rows: &[TableRow],
) -> String {
    let mut header = vec!["Split".to_string()];
    for level in levels {
        header.push(format!("Positives {level}"));
        header.push(format!("Negatives {level}"));
    }
    header.push("AUC".to_string());
    let columns = header.len();
    let mut table = table_head(&header);
    for row in rows {
        if row.positives + row.negatives == 0 {
            continue;
        }
        let label = row.split.label();
        let report = match after.get(&row.split) {
            _ if row.sealed => Err("sealed: freeze the probe set (`lab freeze`) to report it"),
            None => Err("not scored in this run"),
            Some(report) => Ok(report),
        };
        let report = match report {
            Ok(report) => report,
            Err(message) => {
                let mut cells = vec![label.to_string(), message.to_string()];
                cells.resize(columns, String::new());
                table.push_str(&table_row(&cells));
                continue;
            }
        };
        let old = before.and_then(|b| b.get(&row.split));
        let mut cells = vec![format!("{label} ({} / {})", row.positives, row.negatives)];
        for level in levels {
            let rates = |r: &SplitReport| r.rates(Some(level)).copied();
            let (new, was) = (rates(report), old.and_then(rates));
            cells.push(rate_cell(new, was, report.positives, "positives", |r| {
                (r.recall(), r.tp, r.positives())
            }));
            cells.push(rate_cell(new, was, report.negatives, "negatives", |r| {
                (r.fpr(), r.fp, r.negatives())
            }));
        }
        cells.push(match old {
            Some(old) => format!("{:.3} -> **{:.3}**", old.auc, report.auc),
            None => format!("{:.3}", report.auc),
        });
        table.push_str(&table_row(&cells));
    }
    table
}

/// One rate cell: `part` picks (rate, hits, class size) out of the rates.
fn rate_cell(
    after: Option<Rates>,
    before: Option<Rates>,
    class_size: usize,
    class: &str,
    part: impl Fn(&Rates) -> (f64, usize, usize),
) -> String {
    if class_size == 0 {
        return format!("n/a (no {class})");
    }
    let shown = |rates: &Rates| {
        let (rate, hits, of) = part(rates);
        format!("{} ({hits}/{of})", pct(rate))
    };
    // Only levels of another policy than the one that scored `after` land here: a report
    // should say so rather than panic.
    let Some(after) = after else {
        return "n/a (no such level)".to_string();
    };
    match before {
        Some(before) => format!("{} -> **{}**", shown(&before), shown(&after)),
        None => format!("**{}**", shown(&after)),
    }
}

/// What happens to a split's examples at a state budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// The split.
    pub split: Split,
    /// Examples that are (or can be) asked.
    pub judged: usize,
    /// Examples longer than the budget: skipped, never truncated.
    pub over_budget: usize,
    /// Examples skipped when collected.
    pub skipped: usize,
    /// Examples without a state hash: nothing to ask or look up.
    pub no_state: usize,
}

/// The coverage of each split of `splits` that has examples, in that order, at `budget`.
/// Reading sizes only, it never opens a sealed split's answers.
pub fn coverage(splits: &[(Split, &[Example])], budget: usize) -> Vec<Coverage> {
    splits
        .iter()
        .filter(|(_, examples)| !examples.is_empty())
        .map(|&(split, examples)| {
            let mut row = Coverage {
                split,
                judged: 0,
                over_budget: 0,
                skipped: 0,
                no_state: 0,
            };
            for example in examples {
                *match example.status(budget) {
                    Status::Judged => &mut row.judged,
                    Status::OverBudget => &mut row.over_budget,
                    Status::Skipped(_) => &mut row.skipped,
                    Status::NoState => &mut row.no_state,
                } += 1;
            }
            row
        })
        .collect()
}

/// `| Split | Judged | Over budget | Skipped | No state |`, one row per entry; the header is
/// there even without rows, so the section never reads as missing.
pub fn coverage_table(rows: &[Coverage]) -> String {
    let mut table = table_head(&["Split", "Judged", "Over budget", "Skipped", "No state"]);
    for row in rows {
        table.push_str(&table_row(&[
            row.split.label().to_string(),
            row.judged.to_string(),
            row.over_budget.to_string(),
            row.skipped.to_string(),
            row.no_state.to_string(),
        ]));
    }
    table
}

/// Everything `report.md` shows beyond the optimizer's outcome.
#[derive(Debug)]
pub struct ReportInput<'a> {
    /// The probe set's name (the config's).
    pub name: &'a str,
    /// What the optimizer found.
    pub outcome: &'a Outcome,
    /// The objective it maximized.
    pub objective: &'a Objective,
    /// The policy verdicts went through.
    pub policy: &'a Policy,
    /// The seal's one-line summary ([`crate::data::seal::Seal::summary`]).
    pub seal_summary: String,
    /// The rows of the before/after table, in display order.
    pub table_rows: Vec<TableRow>,
    /// The coverage of every split at the best probe set's budget.
    pub coverage: Vec<Coverage>,
    /// USD of asking the best probe set's questions once about train and validation.
    pub cost_per_pass: f64,
    /// Requests that failed: their examples count as misses.
    pub failed_requests: usize,
    /// The first failure's message, when requests failed.
    pub first_error: Option<String>,
}

/// `report.md`: title, summary bullets, then `## Before and after, per split` (linking
/// `splits.svg`), `## Rounds`, `## Questions`, `## Pareto front (train: recall, false
/// positives, questions)` and `## Coverage`.
pub fn render(input: &ReportInput) -> String {
    let ReportInput {
        name,
        outcome,
        objective,
        policy,
        ..
    } = input;
    let best = &outcome.best;
    let level = objective.level.as_deref();
    let split_label = objective.split.label();
    let mut md = format!("# Classifier report: {}\n\n", line(name));

    let mut bullets = vec![format!(
        "Objective: {split_label} recall ({}) at {} false positives; thresholds fitted on train",
        level.unwrap_or("detection"),
        pct(objective.fpr_budget)
    )];
    let constraints: Vec<String> = objective.constraints.iter().map(|c| c.describe()).collect();
    bullets.push(format!(
        "Constraints: {}",
        if constraints.is_empty() {
            "none".to_string()
        } else {
            constraints.join("; ")
        }
    ));
    bullets.push(format!(
        "Policy: {} (levels {})",
        policy.name,
        policy.levels.join(", ")
    ));
    let at_objective = |reports: &Reports| {
        reports
            .get(&objective.split)
            .and_then(|r| r.rates(level))
            .copied()
    };
    let (was, now) = (at_objective(&outcome.before), at_objective(&outcome.after));
    let shown = |rates: Option<Rates>, rate: fn(&Rates) -> f64| {
        rates.as_ref().map_or("n/a".to_string(), |r| pct(rate(r)))
    };
    bullets.push(format!(
        "Before -> after: {split_label} recall {} -> {}, false positives {} -> {}",
        shown(was, Rates::recall),
        shown(now, Rates::recall),
        shown(was, Rates::fpr),
        shown(now, Rates::fpr),
    ));
    let mut probeset = format!(
        "Probe set: {}, {} question(s), model {}",
        best.hash12(),
        best.bank.len(),
        best.model
    );
    if let Some(version) = &best.pinned_version {
        probeset.push_str(&format!(", answered as {version}"));
    }
    probeset.push_str(&format!(
        ", state budget {} characters",
        thousands(best.state_budget as u64)
    ));
    bullets.push(probeset);
    bullets.push(format!(
        "Score: {} {}",
        best.score.describe(),
        best.threshold
            .map_or("(no threshold yet)".to_string(), |t| format!(">= {t:.4}"))
    ));
    bullets.push(format!(
        "Spent: ${:.4} ({} input tokens{}); one pass over train+val costs ${:.4}",
        outcome.spend.usd,
        thousands(outcome.spend.input_tokens),
        if outcome.spend.tokens_estimated {
            ", some estimated"
        } else {
            ""
        },
        input.cost_per_pass
    ));
    bullets.push(format!("Seal: {}", input.seal_summary));
    if input.failed_requests > 0 {
        let mut warning = format!(
            "WARNING: {} requests failed; their examples count as misses, so recall below is a lower bound",
            input.failed_requests
        );
        if let Some(error) = &input.first_error {
            warning.push_str(&format!(". First error: {error}"));
        }
        bullets.push(warning);
    }
    for bullet in &bullets {
        md.push_str(&format!("- {}\n", line(bullet)));
    }

    md.push_str("\n## Before and after, per split\n\n![before and after](splits.svg)\n\n");
    md.push_str(&before_after_table(
        Some(&outcome.before),
        &outcome.after,
        policy.detect_levels(),
        &input.table_rows,
    ));

    let at = |reports: &Reports, split: Split| {
        reports
            .get(&split)
            .and_then(|r| r.rates(level))
            .map_or("-".to_string(), recall_at)
    };
    let budget = pct(objective.fpr_budget);
    md.push_str("\n## Rounds\n\n");
    md.push_str(&table_head(&[
        "Round",
        "Change",
        "Why",
        "Candidate",
        "Train recall at FPR",
        "Val recall at FPR",
        "Decision",
    ]));
    for round in &outcome.history {
        let decision = if round.accepted {
            "kept".to_string()
        } else {
            format!("refused: {}", round.reasons.join("; "))
        };
        md.push_str(&table_row(&[
            round.round.to_string(),
            round.change.clone(),
            round.rationale.chars().take(WHY_CHARS).collect(),
            round.candidate.clone(),
            at(&round.reports, Split::Train),
            at(&round.reports, Split::Val),
            decision,
        ]));
    }

    md.push_str(&format!(
        "\n## Questions\n\nThe {QUESTIONS_SHOWN} best by training AUC; validation recall at the \
         threshold each one's training negatives allow at {budget}.\n\n"
    ));
    md.push_str(&table_head(&[
        "Question",
        "In set",
        "Train AUC",
        "Val AUC",
        "Val recall at budget",
    ]));
    for stats in outcome.stats.iter().take(QUESTIONS_SHOWN) {
        let in_set = if best.bank.contains(&stats.qid) {
            "yes"
        } else {
            ""
        };
        let val = stats
            .splits
            .get(&Split::Val)
            .map_or("-".to_string(), |s| recall_at(&s.rates));
        md.push_str(&table_row(&[
            stats.qid.clone(),
            in_set.to_string(),
            format!("{:.3}", stats.auc(Split::Train)),
            format!("{:.3}", stats.auc(Split::Val)),
            val,
        ]));
    }

    md.push_str("\n## Pareto front (train: recall, false positives, questions)\n\n");
    md.push_str(&table_head(&[
        "Candidate",
        "Score",
        "Threshold",
        "Train recall",
        "Train false positives",
        "Questions",
    ]));
    for candidate in &outcome.front {
        let rates = &candidate.train;
        md.push_str(&table_row(&[
            candidate.name.clone(),
            candidate.score.describe(),
            format!("{:.4}", candidate.threshold),
            format!(
                "{} ({}/{})",
                pct(rates.recall()),
                rates.tp,
                rates.positives()
            ),
            format!("{} ({}/{})", pct(rates.fpr()), rates.fp, rates.negatives()),
            candidate.questions.len().to_string(),
        ]));
    }

    md.push_str("\n## Coverage\n\n");
    md.push_str(&coverage_table(&input.coverage));
    md
}

/// `80.0% at 1.2%`: recall at the false-positive rate it costs.
fn recall_at(rates: &Rates) -> String {
    format!("{} at {}", pct(rates.recall()), pct(rates.fpr()))
}

/// A table's header and separator lines.
fn table_head<S: AsRef<str>>(header: &[S]) -> String {
    let cells: Vec<String> = header.iter().map(|h| h.as_ref().to_string()).collect();
    let mut head = table_row(&cells);
    head.push('|');
    head.push_str(&"---|".repeat(header.len()));
    head.push('\n');
    head
}

/// One table line, every cell escaped.
fn table_row(cells: &[String]) -> String {
    let mut row = String::from("|");
    for c in cells {
        let c = cell(c);
        if c.is_empty() {
            row.push_str(" |");
        } else {
            row.push_str(&format!(" {c} |"));
        }
    }
    row.push('\n');
    row
}

/// `text` as one table cell: a `|` would end the cell and a newline the row.
fn cell(text: &str) -> String {
    line(text).replace('|', "\\|")
}

/// `text` on one line, so it cannot end a bullet or a table row early.
fn line(text: &str) -> String {
    text.split(['\r', '\n'])
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use skill_factory_llm::systemone::{AnswerCache, FakeSystemOne};

    use super::*;
    use crate::answers::lab::{Lab, LabSettings};
    use crate::optimizer::{Inputs, OptimizerSettings, optimize};
    use crate::probe::probeset::ProbeSet;
    use crate::probe::score::ScoreExpr;

    fn rates(tp: usize, fn_: usize, fp: usize, tn: usize) -> Rates {
        Rates { tp, fp, fn_, tn }
    }

    fn report(split: Split, flag: Rates, auc: f64) -> SplitReport {
        SplitReport {
            split,
            positives: flag.positives(),
            negatives: flag.negatives(),
            judged_positives: flag.positives(),
            judged_negatives: flag.negatives(),
            levels: vec![("flag".to_string(), flag)],
            auc,
        }
    }

    fn reports(entries: &[(Split, Rates, f64)]) -> Reports {
        entries
            .iter()
            .map(|&(split, flag, auc)| (split, report(split, flag, auc)))
            .collect()
    }

    fn row(split: Split, positives: usize, negatives: usize, sealed: bool) -> TableRow {
        TableRow {
            split,
            positives,
            negatives,
            sealed,
        }
    }

    fn flag() -> Vec<String> {
        vec!["flag".to_string()]
    }

    #[test]
    fn sealed_rows_are_placeholders_until_frozen() {
        let before = reports(&[(Split::Train, rates(0, 5, 0, 10), 0.5)]);
        let after = reports(&[(Split::Train, rates(4, 1, 0, 10), 0.9)]);
        let rows = [
            row(Split::Train, 5, 10, false),
            row(Split::Test, 3, 9, true),
            // Sealed but empty: nothing to unseal, so no row at all.
            row(Split::HeldOut, 0, 0, true),
        ];
        let table = before_after_table(Some(&before), &after, &flag(), &rows);
        assert!(table.starts_with("| Split | Positives flag | Negatives flag | AUC |\n"));
        assert!(
            table.contains(
                "| test | sealed: freeze the probe set (`lab freeze`) to report it | | |\n"
            )
        );
        assert!(!table.contains("held-out"));
        assert!(table.contains(
            "| training (5 / 10) | 0.0% (0/5) -> **80.0% (4/5)** | 0.0% (0/10) -> **0.0% (0/10)** | 0.500 -> **0.900** |"
        ));
        // Once frozen and reported, the same split is an ordinary row.
        let opened = reports(&[(Split::Test, rates(3, 0, 0, 9), 1.0)]);
        let table = before_after_table(None, &opened, &flag(), &[row(Split::Test, 3, 9, false)]);
        assert!(table.contains("| test (3 / 9) | **100.0% (3/3)** |"));
    }

    #[test]
    fn a_table_without_before_shows_after_alone() {
        let after = reports(&[
            (Split::Train, rates(4, 1, 1, 9), 0.9),
            (Split::Val, rates(0, 0, 1, 4), 0.5),
        ]);
        let rows = [
            row(Split::Train, 5, 10, false),
            row(Split::Val, 0, 5, false),
        ];
        let table = before_after_table(None, &after, &flag(), &rows);
        assert!(!table.contains("-> **"));
        assert!(
            table.contains("| training (5 / 10) | **80.0% (4/5)** | **10.0% (1/10)** | 0.900 |")
        );
        assert!(table.contains("| validation (0 / 5) | n/a (no positives) | **20.0% (1/5)** |"));
    }

    #[test]
    fn a_split_the_baseline_lacks_shows_after_alone() {
        let before = reports(&[(Split::Train, rates(1, 4, 0, 10), 0.6)]);
        let after = reports(&[
            (Split::Train, rates(4, 1, 0, 10), 0.9),
            (Split::Val, rates(2, 0, 0, 0), 1.0),
        ]);
        let rows = [
            row(Split::Train, 5, 10, false),
            row(Split::Val, 2, 0, false),
        ];
        let table = before_after_table(Some(&before), &after, &flag(), &rows);
        assert!(
            table
                .contains("| validation (2 / 0) | **100.0% (2/2)** | n/a (no negatives) | 1.000 |")
        );
        assert!(table.contains("20.0% (1/5) -> **80.0% (4/5)**"));
    }

    #[test]
    fn every_detect_level_gets_its_pair_of_columns() {
        let levels = vec!["warn".to_string(), "block".to_string()];
        let mut split = report(Split::Val, rates(2, 0, 1, 1), 0.75);
        split.levels = vec![
            ("warn".to_string(), rates(2, 0, 1, 1)),
            ("block".to_string(), rates(1, 1, 0, 2)),
        ];
        let after = Reports::from([(Split::Val, split)]);
        let table = before_after_table(None, &after, &levels, &[row(Split::Val, 2, 2, false)]);
        assert!(table.starts_with(
            "| Split | Positives warn | Negatives warn | Positives block | Negatives block | AUC |\n|---|---|---|---|---|---|\n"
        ));
        assert!(
            table.contains(
                "| **100.0% (2/2)** | **50.0% (1/2)** | **50.0% (1/2)** | **0.0% (0/2)** |"
            )
        );
    }

    #[test]
    fn coverage_counts_every_status_per_split() {
        let mut examples: Vec<Example> = (0..4)
            .map(|i| Example::new(format!("e{i}"), i % 2 == 0, "short"))
            .collect();
        examples[1] = Example::new("long", false, "x".repeat(50));
        examples[2].skipped = Some("truncated".to_string());
        examples[3].state = None;
        examples[3].state_hash = None;
        examples[3].chars = None;
        let rows = coverage(&[(Split::Train, &examples), (Split::HeldOut, &[])], 10);
        assert_eq!(
            rows,
            [Coverage {
                split: Split::Train,
                judged: 1,
                over_budget: 1,
                skipped: 1,
                no_state: 1,
            }]
        );
        assert!(coverage_table(&rows).ends_with("| training | 1 | 1 | 1 | 1 |\n"));
    }

    #[test]
    fn empty_coverage_table_still_has_its_header() {
        let table = coverage_table(&[]);
        assert!(table.starts_with("| Split"));
        assert_eq!(
            table,
            "| Split | Judged | Over budget | Skipped | No state |\n|---|---|---|---|---|\n"
        );
    }

    #[test]
    fn table_cells_escape_pipes_and_newlines() {
        assert_eq!(
            table_row(&["a|b".to_string(), "one\ntwo\r\nthree".to_string()]),
            "| a\\|b | one two three |\n"
        );
    }

    /// The optimizer on the world (spec §6.7): the capability seed, the test bank as the
    /// pool, a 5% budget and validation false positives held to 10%.
    async fn world_outcome() -> (Outcome, Objective, Policy, Vec<Example>) {
        let examples = crate::data::world::examples(120);
        let splits = crate::data::world::default_splits(&examples);
        let fake = Arc::new(FakeSystemOne::new(
            "fake-jev",
            crate::data::world::responder,
        ));
        let lab = Lab::online(
            fake,
            Arc::new(AnswerCache::in_memory()),
            LabSettings::default(),
        );
        let qid = "capability".to_string();
        let bank = crate::probe::question::test_bank()
            .subset(std::slice::from_ref(&qid))
            .unwrap();
        let mut seed = ProbeSet::new("seed", bank, ScoreExpr::Question(qid), None).unwrap();
        seed.model = "fake-jev".to_string();
        seed.state_budget = 10_000;
        let objective = crate::optimizer::objective::parsed(json!({
            "fpr_budget": 0.05,
            "constraints": [{"split": "val", "max_fpr": 0.1}],
        }))
        .unwrap();
        let policy = Policy::threshold();
        let pool = crate::probe::question::test_bank();
        let settings = OptimizerSettings::default();
        let inputs = Inputs {
            seed: &seed,
            train: splits.get(Split::Train),
            val: splits.get(Split::Val),
            pool: &pool,
            objective: &objective,
            policy: &policy,
            settings: &settings,
            keep: None,
            proposer: None,
        };
        let outcome = optimize(&lab, inputs, &|_, _| {}).await.unwrap();
        (outcome, objective, policy, examples)
    }

    fn world_input<'a>(
        outcome: &'a Outcome,
        objective: &'a Objective,
        policy: &'a Policy,
        examples: &[Example],
    ) -> ReportInput<'a> {
        let splits = crate::data::world::default_splits(examples);
        let table_rows = Split::ALL
            .into_iter()
            .map(|split| {
                let (positives, negatives) = splits.counts(split);
                row(split, positives, negatives, split.is_sealed())
            })
            .collect();
        let by_split: Vec<(Split, &[Example])> =
            Split::ALL.into_iter().map(|s| (s, splits.get(s))).collect();
        ReportInput {
            name: "demo",
            outcome,
            objective,
            policy,
            seal_summary: "not frozen: test and held-out splits are sealed".to_string(),
            table_rows,
            coverage: coverage(&by_split, 100),
            cost_per_pass: 0.01,
            failed_requests: 0,
            first_error: None,
        }
    }

    #[tokio::test]
    async fn report_has_every_section_and_the_cost_per_pass() {
        let (outcome, objective, policy, examples) = world_outcome().await;
        let md = render(&world_input(&outcome, &objective, &policy, &examples));
        let sections = [
            "# Classifier report: demo\n",
            "- Objective: validation recall (detection) at 5.0% false positives; thresholds fitted on train\n",
            "- Constraints: val/detect: FPR <= ",
            "- Policy: threshold (levels pass, flag)\n",
            "- Before -> after: validation recall ",
            &format!("- Probe set: {}, ", outcome.best.hash12()),
            "answered as fake-jev, state budget 10,000 characters\n",
            "- Score: ",
            "one pass over train+val costs $0.0100\n",
            "- Seal: not frozen: test and held-out splits are sealed\n",
            "## Before and after, per split\n\n![before and after](splits.svg)\n\n| Split |",
            "## Rounds\n",
            "| 0 | seed |",
            "| 1 | selection |",
            "## Questions\n",
            "| intent@reviewer | yes |",
            "## Pareto front (train: recall, false positives, questions)\n",
            "## Coverage\n\n| Split | Judged | Over budget | Skipped | No state |",
        ];
        let mut last = 0;
        for section in sections {
            let at = md[last..]
                .find(section)
                .unwrap_or_else(|| panic!("{section:?} missing or out of order in\n{md}"));
            last += at;
        }
        assert!(md.contains("| test | sealed"));
        // The world has no held-out examples: no row, sealed or not.
        assert!(!md.contains("held-out | sealed"));
        assert!(!md.contains("WARNING"));
        let threshold = outcome.best.threshold.unwrap();
        assert!(md.contains(&format!(
            "- Score: {} >= {threshold:.4}\n",
            outcome.best.score.describe()
        )));
        // Every 10th world example is padded past a 100-character budget.
        let splits = crate::data::world::default_splits(&examples);
        let train = splits.get(Split::Train);
        let long = train.iter().filter(|e| e.chars > Some(100)).count();
        assert!(long > 0);
        assert!(md.contains(&format!(
            "| training | {} | {long} | 0 | 0 |",
            train.len() - long
        )));
    }

    #[tokio::test]
    async fn failed_requests_add_a_lower_bound_warning() {
        let (outcome, objective, policy, examples) = world_outcome().await;
        let mut input = world_input(&outcome, &objective, &policy, &examples);
        input.failed_requests = 3;
        input.first_error = Some("HTTP 503\nservice unavailable".to_string());
        let md = render(&input);
        let warning = md
            .lines()
            .find(|l| l.starts_with("- WARNING: 3 requests failed"))
            .expect("a warning bullet");
        assert!(warning.contains("recall below is a lower bound"));
        assert!(warning.ends_with("First error: HTTP 503 service unavailable"));
        // The warning is a summary bullet, before the tables it qualifies.
        assert!(md.find("- WARNING").unwrap() < md.find("## Before and after").unwrap());
    }
}

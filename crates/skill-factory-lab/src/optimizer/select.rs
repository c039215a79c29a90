//! Selection and ensembling: turn a pool of answered questions into candidate scores with
//! thresholds, every one fitted on train only, at one false-positive budget, so their training
//! recall is comparable.
//!
//! | Family | Score |
//! |---|---|
//! | `single` | one question |
//! | `mean` | the mean of the k best questions by training AUC, one framing per question |
//! | `union` | the union of (question, threshold) pairs, chosen greedily within the budget |
//! | `mean+lure` | a mean, averaged with one question of another base (the form jev shipped) |
//!
//! A single question with a very low threshold often holds its false-positive rate on train and
//! loses it on validation, while an averaged score moves less: that is why the optimizer takes
//! the best few of *each* family to the validation gate rather than the best few overall.
//!
//! Two behaviours are the reference's and kept for comparable numbers: thresholds are fitted
//! on the raw score whatever policy the gate applies later, and the union's construction reads
//! a missing answer as 0.0 where every score (the union's own included) has no value.
//!
//! Selection runs over the whole pool every round, so it works on a dense matrix of the
//! training answers (one column per question, NaN for no answer) built once, never on the
//! answer table's maps.

use std::cmp::{Ordering, Reverse};
use std::collections::HashSet;
use std::fmt;
use std::sync::OnceLock;

use serde_json::Number;
use skill_factory_pycompat::float::{Sum, format_g, round, sum};

use crate::LabError;
use crate::answers::table::AnswerTable;
use crate::data::dataset::Example;
use crate::measure::metrics::{Rates, auc, fit_threshold};
use crate::probe::probeset::ProbeSet;
use crate::probe::question::{Bank, question_base};
use crate::probe::score::ScoreExpr;

/// The threshold of a union, whose score is `max(p_i / t_i)`: it flags at 1, less the float
/// error of the division.
pub const UNION_THRESHOLD: f64 = 1.0 - 1e-9;

/// A threshold no P(true) reaches: the walk down a union member's thresholds starts there.
const ABOVE_EVERY_ANSWER: f64 = 1.01;

/// How many mean+lure candidates are kept (the best by rank).
const LURES_KEPT: usize = 3;

/// A family of candidate scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// One question.
    Single,
    /// The mean of the best questions by training AUC.
    Mean,
    /// The union of (question, threshold) pairs.
    Union,
    /// A mean averaged with one more question.
    MeanLure,
}

impl Family {
    /// The name reports use: `single`, `mean`, `union`, `mean+lure`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Single => "single",
            Family::Mean => "mean",
            Family::Union => "union",
            Family::MeanLure => "mean+lure",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A fitted score: its expression and threshold, the questions it reads, and how it did on
/// train.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// e.g. `single:intent@reviewer`, `mean-top3`, `union-2`, `mean-top2+lure:lure`.
    pub name: String,
    /// Its family.
    pub family: Family,
    /// The score expression.
    pub score: ScoreExpr,
    /// Flag when the score is at least this.
    pub threshold: f64,
    /// The questions the score reads, in the order they were chosen.
    pub questions: Vec<String>,
    /// The rates on train at the threshold.
    pub train: Rates,
    /// AUC of the score on train.
    pub train_auc: f64,
}

impl Candidate {
    /// `base` reading this candidate's score at its threshold: the bank is the candidate's
    /// questions and `keep` (for policies) cut from `pool`, the rest of `base` (name, model,
    /// budget, notes) carried over.
    pub fn probe_set(
        &self,
        base: &ProbeSet,
        pool: &Bank,
        keep: &[String],
    ) -> Result<ProbeSet, LabError> {
        let mut questions = self.questions.clone();
        questions.extend(keep.iter().cloned());
        let mut probeset = base.clone();
        probeset.bank = pool.subset(&questions)?;
        probeset.score = self.score.clone();
        probeset.threshold = Some(self.threshold);
        Ok(probeset)
    }

    /// How it ranks on train: more recall, then fewer questions (cheaper, less to overfit),
    /// then a better AUC.
    pub fn rank_key(&self) -> RankKey {
        RankKey {
            recall: self.train.recall(),
            questions: self.questions.len(),
            auc: self.train_auc,
        }
    }
}

/// A candidate's training rank; greater is better.
#[derive(Debug, Clone, Copy)]
pub struct RankKey {
    /// Training recall (higher is better).
    pub recall: f64,
    /// Questions read (fewer is better).
    pub questions: usize,
    /// Training AUC (higher is better).
    pub auc: f64,
}

impl Ord for RankKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.recall
            .total_cmp(&other.recall)
            .then(other.questions.cmp(&self.questions))
            .then(self.auc.total_cmp(&other.auc))
    }
}

impl PartialOrd for RankKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for RankKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for RankKey {}

/// Best first, by [`Candidate::rank_key`]; a stable sort, so equals keep their order.
fn sort_by_rank(cands: &mut [Candidate]) {
    cands.sort_by_key(|c| Reverse(c.rank_key()));
}

/// Every candidate of every family over `pool` (question ids, in pool order), fitted on
/// `train` at `fpr_budget` with at most `max_questions` per candidate: the singles, the means,
/// the union (when one exists), then the best 3 mean+lure candidates. No pool, no candidates.
pub fn candidates(
    pool: &[String],
    train: &[&Example],
    table: &AnswerTable,
    fpr_budget: f64,
    max_questions: usize,
) -> Result<Vec<Candidate>, LabError> {
    Selection::new(pool, train, table).candidates(fpr_budget, max_questions)
}

/// The pool's questions ranked by training AUC, best first (pool order on ties).
pub fn rank_by_auc(pool: &[String], train: &[&Example], table: &AnswerTable) -> Vec<(String, f64)> {
    Selection::new(pool, train, table).rank_by_auc()
}

/// Question indices by descending AUC; stable, so ties keep pool order.
fn by_auc(aucs: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..aucs.len()).collect();
    order.sort_by(|&a, &b| aucs[b].total_cmp(&aucs[a]));
    order
}

/// The `k` best candidates of each family by training rank, all of them best first (families
/// in the order they first appear, equals in their given order).
pub fn best_per_family(cands: &[Candidate], k: usize) -> Vec<Candidate> {
    let mut families: Vec<Family> = Vec::new();
    for cand in cands {
        if !families.contains(&cand.family) {
            families.push(cand.family);
        }
    }
    let mut out = Vec::new();
    for family in families {
        let mut group: Vec<Candidate> = cands
            .iter()
            .filter(|c| c.family == family)
            .cloned()
            .collect();
        sort_by_rank(&mut group);
        out.extend(group.into_iter().take(k));
    }
    sort_by_rank(&mut out);
    out
}

/// The candidates that catch something on train and that no other such candidate beats on all
/// of training recall, training false-positive rate and question count (at least as good on
/// each, better on one); fewest questions first, then most recall. A candidate fitted again at
/// another budget margin to the same score and threshold is listed once, under its first name.
pub fn pareto(cands: &[Candidate]) -> Vec<Candidate> {
    let dominates = |a: &Candidate, b: &Candidate| {
        let (ar, br) = (a.train.recall(), b.train.recall());
        let (af, bf) = (a.train.fpr(), b.train.fpr());
        let (aq, bq) = (a.questions.len(), b.questions.len());
        ar >= br && af <= bf && aq <= bq && (ar > br || af < bf || aq < bq)
    };
    let useful: Vec<&Candidate> = cands.iter().filter(|c| c.train.tp > 0).collect();
    let front: Vec<Candidate> = useful
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            !useful
                .iter()
                .enumerate()
                .any(|(j, o)| j != *i && dominates(o, c))
        })
        .map(|(_, c)| (*c).clone())
        .collect();
    let mut seen: Vec<(&ScoreExpr, u64)> = Vec::new();
    let mut kept = Vec::with_capacity(front.len());
    for candidate in &front {
        let key = (&candidate.score, candidate.threshold.to_bits());
        if !seen.contains(&key) {
            seen.push(key);
            kept.push(candidate.clone());
        }
    }
    let mut front = kept;
    front.sort_by(|a, b| {
        a.questions
            .len()
            .cmp(&b.questions.len())
            .then(b.train.recall().total_cmp(&a.train.recall()))
    });
    front
}

/// Marks candidates fitted at `factor` times the budget: ` @0.5x budget` is appended to their
/// names (the factor as `%g` writes it); at factor 1 they keep their names.
pub fn name_at_margin(cands: &mut [Candidate], factor: f64) {
    if factor != 1.0 {
        let suffix = format!(" @{}x budget", format_g(factor, 6));
        for cand in cands {
            cand.name.push_str(&suffix);
        }
    }
}

/// The training answers of a pool, laid out for selection; build it once to fit the families
/// at several budgets.
#[derive(Debug, Clone)]
pub struct Selection {
    pool: Vec<String>,
    labels: Vec<bool>,
    /// One column per pool question, one entry per train example: P(true), NaN for none.
    columns: Vec<Vec<f64>>,
    /// The union family's candidate thresholds and negatives by answer, per question: the
    /// same at every budget, so built on the first union fit.
    union_walks: OnceLock<UnionWalks>,
}

/// Per question: candidate thresholds high to low, and train negatives by answer high to low.
type UnionWalks = (Vec<Vec<f64>>, Vec<Vec<usize>>);

/// A mean candidate, kept with what its lures are built from.
struct MeanFit {
    candidate: Candidate,
    /// Its questions, as pool indices.
    members: Vec<usize>,
    /// Its score on each train example (NaN: none).
    scores: Vec<f64>,
}

/// A candidate's fit: its threshold and its training rates there.
struct Fitted {
    threshold: f64,
    train: Rates,
}

impl Selection {
    /// Reads the answers of `train` to every question of `pool` from `table`.
    pub fn new(pool: &[String], train: &[&Example], table: &AnswerTable) -> Selection {
        let rows: Vec<_> = train.iter().map(|ex| table.answers(&ex.id)).collect();
        let columns = pool
            .iter()
            .map(|q| {
                rows.iter()
                    .map(|answers| answers.get(q).copied().unwrap_or(f64::NAN))
                    .collect()
            })
            .collect();
        Selection {
            pool: pool.to_vec(),
            labels: train.iter().map(|ex| ex.label).collect(),
            columns,
            union_walks: OnceLock::new(),
        }
    }

    /// Every candidate of every family, as [`candidates`] describes them.
    pub fn candidates(
        &self,
        fpr_budget: f64,
        max_questions: usize,
    ) -> Result<Vec<Candidate>, LabError> {
        if self.pool.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (q, qid) in self.pool.iter().enumerate() {
            let scores = &self.columns[q];
            let fitted = self.fit(scores, fpr_budget, None)?;
            out.push(self.candidate(
                format!("single:{qid}"),
                Family::Single,
                ScoreExpr::Question(qid.clone()),
                vec![q],
                scores,
                fitted,
            ));
        }
        let aucs: Vec<f64> = out.iter().map(|c| c.train_auc).collect();
        let means = self.means(&aucs, fpr_budget, max_questions)?;
        out.extend(means.iter().map(|mean| mean.candidate.clone()));
        if let Some(union) = self.union(fpr_budget, max_questions) {
            out.push(union);
        }
        out.extend(self.lures(&means, fpr_budget, max_questions)?);
        Ok(out)
    }

    /// The pool's questions ranked by training AUC, as [`rank_by_auc`] ranks them.
    pub fn rank_by_auc(&self) -> Vec<(String, f64)> {
        let aucs: Vec<f64> = self.columns.iter().map(|c| self.auc(c)).collect();
        by_auc(&aucs)
            .into_iter()
            .map(|q| (self.pool[q].clone(), aucs[q]))
            .collect()
    }

    /// The mean of the top k questions by training AUC (one framing per base), k = 2 ..
    /// `max_questions`.
    fn means(
        &self,
        aucs: &[f64],
        fpr_budget: f64,
        max_questions: usize,
    ) -> Result<Vec<MeanFit>, LabError> {
        // Two framings of one question mostly agree: a mean takes one of them.
        let mut seen = HashSet::new();
        let distinct: Vec<usize> = by_auc(aucs)
            .into_iter()
            .filter(|&q| seen.insert(question_base(&self.pool[q])))
            .collect();
        let top = max_questions.min(distinct.len());
        let mut means = Vec::new();
        // Running sums, the way the expression adds (Python's compensated `sum`).
        let mut sums = vec![Sum::new(); self.labels.len()];
        for (k, &q) in (1..).zip(distinct.iter().take(top)) {
            for (total, &p) in sums.iter_mut().zip(&self.columns[q]) {
                total.add(p);
            }
            if k < 2 {
                continue;
            }
            let scores: Vec<f64> = sums.iter().map(|total| total.value() / k as f64).collect();
            let fitted = self.fit(&scores, fpr_budget, None)?;
            let members = distinct[..k].to_vec();
            let expr = ScoreExpr::Mean(members.iter().map(|&q| self.question(q)).collect());
            let candidate = self.candidate(
                format!("mean-top{k}"),
                Family::Mean,
                expr,
                members.clone(),
                &scores,
                fitted,
            );
            means.push(MeanFit {
                candidate,
                members,
                scores,
            });
        }
        Ok(means)
    }

    /// Every mean with room for one more question, averaged with each question of another
    /// base; the best [`LURES_KEPT`] by rank.
    fn lures(
        &self,
        means: &[MeanFit],
        fpr_budget: f64,
        max_questions: usize,
    ) -> Result<Vec<Candidate>, LabError> {
        let lure_scores = |mean: &MeanFit, q: usize| -> Vec<f64> {
            mean.scores
                .iter()
                .zip(&self.columns[q])
                .map(|(&m, &p)| sum([m, p]) / 2.0)
                .collect()
        };
        // Fit every lure, but leave AUC (a sort) to the ones whose recall and size can still
        // place them among the best few: AUC only breaks ties.
        let mut fitted = Vec::new();
        for (m, mean) in means.iter().enumerate() {
            if mean.members.len() >= max_questions {
                continue;
            }
            let bases: HashSet<&str> = mean
                .members
                .iter()
                .map(|&q| question_base(&self.pool[q]))
                .collect();
            for q in 0..self.pool.len() {
                if !bases.contains(question_base(&self.pool[q])) {
                    let fit = self.fit(&lure_scores(mean, q), fpr_budget, None)?;
                    let key = RankKey {
                        recall: fit.train.recall(),
                        questions: mean.members.len() + 1,
                        auc: f64::NEG_INFINITY,
                    };
                    fitted.push((m, q, fit, key));
                }
            }
        }
        let mut keys: Vec<RankKey> = fitted.iter().map(|entry| entry.3).collect();
        keys.sort_by(|a, b| b.cmp(a));
        let Some(&cutoff) = keys.get(LURES_KEPT.min(keys.len()).saturating_sub(1)) else {
            return Ok(Vec::new());
        };
        let mut lured: Vec<Candidate> = fitted
            .into_iter()
            .filter(|entry| entry.3 >= cutoff)
            .map(|(m, q, fit, _)| {
                let mean = &means[m];
                let mut members = mean.members.clone();
                members.push(q);
                let expr = ScoreExpr::Mean(vec![mean.candidate.score.clone(), self.question(q)]);
                self.candidate(
                    format!("{}+lure:{}", mean.candidate.name, self.pool[q]),
                    Family::MeanLure,
                    expr,
                    members,
                    &lure_scores(mean, q),
                    fit,
                )
            })
            .collect();
        sort_by_rank(&mut lured);
        lured.truncate(LURES_KEPT);
        Ok(lured)
    }

    /// Greedy forward selection of (question, threshold) pairs, skill-scanner's: each step
    /// adds the question whose best threshold catches the most training positives while the
    /// union flags at most `floor(budget * negatives)` negatives, until no pick adds a catch.
    /// A missing answer reads as 0.0 here.
    fn union(&self, fpr_budget: f64, max_questions: usize) -> Option<Candidate> {
        let read = |q: usize, i: usize| {
            let p = self.columns[q][i];
            if p.is_nan() { 0.0 } else { p }
        };
        let (benign, malicious): (Vec<usize>, Vec<usize>) =
            (0..self.labels.len()).partition(|&i| !self.labels[i]);
        let allowed = (fpr_budget * benign.len() as f64).floor() as usize;
        let (thresholds, benign_by_answer) = self.union_walks.get_or_init(|| {
            // Per question, once for every budget: its candidate thresholds (every distinct
            // answer rounded to 4 decimals, and one above them all) high to low, and the
            // negatives by answer, high to low, so a walk down the thresholds counts the
            // flagged negatives incrementally.
            let thresholds = (0..self.pool.len())
                .map(|q| {
                    let mut answers: Vec<f64> =
                        (0..self.labels.len()).map(|i| read(q, i)).collect();
                    answers.sort_by(|a, b| b.total_cmp(a));
                    answers.dedup();
                    let mut ts: Vec<f64> = answers.into_iter().map(|p| round(p, 4)).collect();
                    ts.push(ABOVE_EVERY_ANSWER);
                    ts.sort_by(|a, b| b.total_cmp(a));
                    ts.dedup();
                    ts
                })
                .collect();
            let by_answer = (0..self.pool.len())
                .map(|q| {
                    let mut order = benign.clone();
                    order.sort_by(|&a, &b| read(q, b).total_cmp(&read(q, a)));
                    order
                })
                .collect();
            (thresholds, by_answer)
        });

        let mut hit = vec![false; self.labels.len()];
        let (mut benign_hit, mut caught) = (0, 0);
        let mut members: Vec<(usize, f64)> = Vec::new();
        for _ in 0..max_questions {
            let mut choice: Option<(usize, usize, f64)> = None;
            for q in 0..self.pool.len() {
                if members.iter().any(|&(m, _)| m == q) {
                    continue;
                }
                let mut flagged = benign_hit;
                let mut next = benign_by_answer[q].iter().peekable();
                let mut best = None;
                for &t in &thresholds[q] {
                    while let Some(&&i) = next.peek() {
                        if read(q, i) < t {
                            break;
                        }
                        flagged += usize::from(!hit[i]);
                        next.next();
                    }
                    if flagged > allowed {
                        break;
                    }
                    best = Some(t);
                }
                let Some(t) = best.filter(|&t| t > 0.0 && t <= 1.0) else {
                    continue;
                };
                let tp = caught
                    + malicious
                        .iter()
                        .filter(|&&i| !hit[i] && read(q, i) >= t)
                        .count();
                if choice.is_none_or(|(best_tp, _, _)| tp > best_tp) {
                    choice = Some((tp, q, t));
                }
            }
            let Some((tp, q, t)) = choice else { break };
            if !members.is_empty() && tp <= caught {
                break;
            }
            members.push((q, t));
            for (i, already) in hit.iter_mut().enumerate() {
                if !*already && read(q, i) >= t {
                    *already = true;
                    if self.labels[i] {
                        caught += 1
                    } else {
                        benign_hit += 1
                    }
                }
            }
        }
        if members.is_empty() {
            return None;
        }
        // Scores as the expression computes them: no answer to a member, no score.
        let mut scale = Vec::with_capacity(members.len());
        let mut parts = Vec::with_capacity(members.len());
        for &(q, t) in &members {
            let k = round(1.0 / t, 10);
            scale.push((q, k));
            parts.push(ScoreExpr::Scale(
                Box::new(self.question(q)),
                Number::from_f64(k)?,
            ));
        }
        let scores: Vec<f64> = (0..self.labels.len())
            .map(|i| {
                scale
                    .iter()
                    .map(|&(q, k)| self.columns[q][i] * k)
                    .reduce(|a, b| {
                        if a.is_nan() || b.is_nan() {
                            f64::NAN
                        } else {
                            a.max(b)
                        }
                    })
                    .unwrap_or(f64::NAN)
            })
            .collect();
        let fitted = self.fit(&scores, fpr_budget, Some(UNION_THRESHOLD)).ok()?;
        Some(self.candidate(
            format!("union-{}", members.len()),
            Family::Union,
            ScoreExpr::Max(parts),
            members.iter().map(|&(q, _)| q).collect(),
            &scores,
            fitted,
        ))
    }

    /// The threshold of `scores` (`fixed`, or fitted at the budget with the widest margin)
    /// and the training rates at it.
    fn fit(&self, scores: &[f64], fpr_budget: f64, fixed: Option<f64>) -> Result<Fitted, LabError> {
        let threshold = match fixed {
            Some(t) => t,
            None => {
                let pairs = self.labels.iter().zip(scores);
                fit_threshold(
                    pairs.map(|(&label, &s)| (label, Some(s).filter(|s| !s.is_nan()))),
                    fpr_budget,
                    true,
                )?
            }
        };
        let mut train = Rates::default();
        for (&label, &s) in self.labels.iter().zip(scores) {
            // NaN (no score) compares false: never flagged.
            train.count(label, s >= threshold);
        }
        Ok(Fitted { threshold, train })
    }

    /// AUC of `scores` over the examples that have one.
    fn auc(&self, scores: &[f64]) -> f64 {
        let (mut pos, mut neg) = (Vec::new(), Vec::new());
        for (&label, &s) in self.labels.iter().zip(scores) {
            if !s.is_nan() {
                if label { pos.push(s) } else { neg.push(s) }
            }
        }
        auc(&pos, &neg)
    }

    fn candidate(
        &self,
        name: String,
        family: Family,
        score: ScoreExpr,
        members: Vec<usize>,
        scores: &[f64],
        fitted: Fitted,
    ) -> Candidate {
        Candidate {
            name,
            family,
            score,
            threshold: fitted.threshold,
            questions: members.into_iter().map(|q| self.pool[q].clone()).collect(),
            train: fitted.train,
            train_auc: self.auc(scores),
        }
    }

    fn question(&self, q: usize) -> ScoreExpr {
        ScoreExpr::Question(self.pool[q].clone())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;
    use crate::answers::table::Row;
    use crate::data::dataset::Status;
    use crate::data::split::Split;
    use crate::data::world;
    use crate::measure::evaluate::{question_stats, world_table};

    struct World {
        train: Vec<Example>,
        val: Vec<Example>,
        table: AnswerTable,
        pool: Vec<String>,
    }

    fn world() -> World {
        let examples = world::examples(120);
        let splits = world::default_splits(&examples);
        World {
            train: splits.get(Split::Train).to_vec(),
            val: splits.get(Split::Val).to_vec(),
            table: world_table(&examples, 10_000),
            pool: crate::probe::question::test_bank().ids(),
        }
    }

    impl World {
        fn train(&self) -> Vec<&Example> {
            self.train.iter().collect()
        }

        fn candidates(&self, fpr_budget: f64, max_questions: usize) -> Vec<Candidate> {
            candidates(
                &self.pool,
                &self.train(),
                &self.table,
                fpr_budget,
                max_questions,
            )
            .unwrap()
        }
    }

    fn families(cands: &[Candidate]) -> HashSet<Family> {
        cands.iter().map(|c| c.family).collect()
    }

    #[test]
    fn question_stats_separate_intent_and_rank_it_first() {
        let w = world();
        let by_split = [(Split::Train, &w.train[..]), (Split::Val, &w.val[..])];
        let stats = question_stats(&w.pool, &by_split, &w.table, 0.05).unwrap();
        let train_auc = |qid: &str| {
            let stat = stats.iter().find(|s| s.qid == qid).unwrap();
            stat.auc(Split::Train)
        };
        assert!(train_auc("intent@reviewer") > 0.9);
        assert!(train_auc("capability") < 0.7);
        let ranked = rank_by_auc(&w.pool, &w.train(), &w.table);
        assert_eq!(ranked[0].0, "intent@reviewer");
        assert_eq!(ranked[0].1, train_auc("intent@reviewer"));
        assert_eq!(ranked.len(), w.pool.len());
    }

    #[test]
    fn fitted_thresholds_keep_train_false_positives_within_the_budget() {
        let w = world();
        let negatives = w.train.iter().filter(|e| !e.label).count();
        let allowed = (0.05 * negatives as f64).floor() as usize;
        let cands = w.candidates(0.05, 3);
        assert!(!cands.is_empty());
        for cand in &cands {
            assert!(cand.train.fp <= allowed, "{}: {:?}", cand.name, cand.train);
        }
    }

    #[test]
    fn greedy_union_includes_intent_and_catches_at_least_as_much_as_it_alone() {
        let w = world();
        let cands = w.candidates(0.05, 3);
        let union = cands.iter().find(|c| c.family == Family::Union).unwrap();
        assert!(union.name.starts_with("union-"));
        assert_eq!(union.name, format!("union-{}", union.questions.len()));
        assert!(union.questions.len() <= 3);
        assert!(union.questions.iter().any(|q| q == "intent@reviewer"));
        let single = cands
            .iter()
            .find(|c| c.name == "single:intent@reviewer")
            .unwrap();
        assert!(union.train.recall() >= single.train.recall());
        assert_eq!(union.threshold, UNION_THRESHOLD);
    }

    #[test]
    fn union_members_are_scaled_by_their_rounded_inverse_threshold() {
        let w = world();
        let cands = w.candidates(0.05, 3);
        let union = cands.iter().find(|c| c.family == Family::Union).unwrap();
        let ScoreExpr::Max(parts) = &union.score else {
            panic!("a union is a max: {:?}", union.score)
        };
        assert_eq!(parts.len(), union.questions.len());
        for (part, qid) in parts.iter().zip(&union.questions) {
            let ScoreExpr::Scale(inner, k) = part else {
                panic!("a union member is scaled: {part:?}")
            };
            assert_eq!(**inner, ScoreExpr::Question(qid.clone()));
            let k = k.as_f64().unwrap();
            assert_eq!(round(k, 10), k);
            assert!(k >= 1.0, "thresholds are at most 1: {k}");
        }
    }

    #[test]
    fn candidates_cover_the_four_families() {
        let w = world();
        let cands = w.candidates(0.05, 3);
        let all = HashSet::from([
            Family::Single,
            Family::Mean,
            Family::Union,
            Family::MeanLure,
        ]);
        assert_eq!(families(&cands), all);
        // Output order: singles (pool order), means, the union, then the kept lures.
        let order: Vec<Family> = cands.iter().map(|c| c.family).collect();
        let mut sorted = order.clone();
        sorted.sort_by_key(|f| {
            [
                Family::Single,
                Family::Mean,
                Family::Union,
                Family::MeanLure,
            ]
            .iter()
            .position(|x| x == f)
        });
        assert_eq!(order, sorted);
        let singles: Vec<&str> = cands[..w.pool.len()]
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            singles,
            [
                "single:capability",
                "single:intent@reviewer",
                "single:lure",
                "single:noise"
            ]
        );
        assert_eq!(
            cands
                .iter()
                .filter(|c| c.family == Family::Mean)
                .map(|c| &c.name[..])
                .collect::<Vec<_>>(),
            ["mean-top2", "mean-top3"]
        );
        let lures: Vec<&Candidate> = cands
            .iter()
            .filter(|c| c.family == Family::MeanLure)
            .collect();
        assert!(lures.len() <= 3);
        assert!(lures.windows(2).all(|w| w[0].rank_key() >= w[1].rank_key()));
        for lure in lures {
            assert!(lure.name.starts_with("mean-top2+lure:"), "{}", lure.name);
            assert_eq!(lure.questions.len(), 3);
        }
    }

    #[test]
    fn best_per_family_keeps_k_of_each_family_best_first() {
        let w = world();
        let cands = w.candidates(0.05, 3);
        let best = best_per_family(&cands, 2);
        assert_eq!(families(&best).len(), 4);
        assert!(best.len() <= 8);
        assert!(best.windows(2).all(|w| w[0].rank_key() >= w[1].rank_key()));
        for family in families(&best) {
            assert!(best.iter().filter(|c| c.family == family).count() <= 2);
        }
        let top = best.iter().find(|c| c.family == Family::Single).unwrap();
        let max_single = cands
            .iter()
            .filter(|c| c.family == Family::Single)
            .map(Candidate::rank_key)
            .max()
            .unwrap();
        assert_eq!(top.rank_key(), max_single);
    }

    #[test]
    fn pareto_keeps_undominated_candidates_that_catch_something() {
        let w = world();
        let cands = w.candidates(0.05, 3);
        let front = pareto(&cands);
        assert!(!front.is_empty());
        assert!(front.iter().all(|c| c.train.tp > 0));
        assert!(
            front
                .windows(2)
                .all(|w| w[0].questions.len() <= w[1].questions.len())
        );
        for c in &front {
            let beaten = cands.iter().any(|o| {
                o.train.tp > 0
                    && o.train.recall() >= c.train.recall()
                    && o.train.fpr() <= c.train.fpr()
                    && o.questions.len() <= c.questions.len()
                    && (o.train.recall() > c.train.recall()
                        || o.train.fpr() < c.train.fpr()
                        || o.questions.len() < c.questions.len())
            });
            assert!(!beaten, "{} is dominated", c.name);
        }
    }

    #[test]
    fn pareto_lists_a_candidate_refitted_at_another_margin_once() {
        let examples = world::examples(120);
        let splits = world::default_splits(&examples);
        let train: Vec<&Example> = splits.get(Split::Train).iter().collect();
        let table = world_table(&examples, 10_000);
        let pool = crate::probe::question::test_bank().ids();
        let selection = Selection::new(&pool, &train, &table);
        let mut all = selection.candidates(0.05, 3).unwrap();
        let mut half = selection.candidates(0.025, 3).unwrap();
        name_at_margin(&mut half, 0.5);
        all.extend(half);
        let front = pareto(&all);
        for (i, a) in front.iter().enumerate() {
            for b in &front[i + 1..] {
                assert!(
                    !(a.score == b.score && a.threshold == b.threshold),
                    "{} and {} are the same candidate",
                    a.name,
                    b.name
                );
            }
        }
        assert!(!front.is_empty());
    }

    #[test]
    fn an_empty_pool_has_no_candidates() {
        let w = world();
        assert_eq!(
            candidates(&[], &w.train(), &w.table, 0.05, 3).ok(),
            Some(vec![])
        );
    }

    #[test]
    fn a_budget_outside_zero_to_one_is_an_error() {
        let w = world();
        assert!(candidates(&w.pool, &w.train(), &w.table, 1.0, 3).is_err());
    }

    #[test]
    fn candidates_score_train_exactly_as_their_expressions_do() {
        let w = world();
        for cand in w.candidates(0.05, 3).iter().chain(&w.candidates(0.02, 4)) {
            let (mut rates, mut pos, mut neg) = (Rates::default(), vec![], vec![]);
            for ex in &w.train {
                let score = cand.score.eval(w.table.answers(&ex.id));
                rates.count(ex.label, score.is_some_and(|s| s >= cand.threshold));
                if let Some(s) = score {
                    if ex.label { pos.push(s) } else { neg.push(s) }
                }
            }
            assert_eq!(rates, cand.train, "{}", cand.name);
            assert_eq!(auc(&pos, &neg), cand.train_auc, "{}", cand.name);
            assert_eq!(cand.score.referenced(), cand.questions, "{}", cand.name);
        }
    }

    #[test]
    fn means_take_one_framing_per_written_question() {
        // Answers chosen so that a@x and a@y tie at AUC 1, then b and c at 0.5: ties keep pool
        // order.
        let answers = [
            (true, [0.9, 0.9, 0.8, 0.6]),
            (true, [0.8, 0.7, 0.3, 0.7]),
            (false, [0.1, 0.2, 0.4, 0.65]),
        ];
        let pool: Vec<String> = ["b", "a@x", "c", "a@y"].map(String::from).to_vec();
        let order = [1, 3, 0, 2];
        let examples: Vec<Example> = answers
            .iter()
            .enumerate()
            .map(|(i, (label, _))| Example::new(format!("e{i}"), *label, "s"))
            .collect();
        let rows = examples
            .iter()
            .zip(&answers)
            .map(|(ex, (_, ps))| {
                let answers: HashMap<String, f64> = order
                    .iter()
                    .map(|&q| pool[q].clone())
                    .zip(ps.iter().copied())
                    .collect();
                let row = Row {
                    status: Status::Judged,
                    answers,
                    versions: BTreeMap::new(),
                };
                (ex.id.clone(), row)
            })
            .collect();
        let table = AnswerTable { rows };
        let train: Vec<&Example> = examples.iter().collect();
        let ranked: Vec<String> = rank_by_auc(&pool, &train, &table)
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(ranked, ["a@x", "a@y", "b", "c"]);
        let cands = candidates(&pool, &train, &table, 0.0, 6).unwrap();
        let means: Vec<&Candidate> = cands.iter().filter(|c| c.family == Family::Mean).collect();
        assert_eq!(means.len(), 2);
        assert_eq!(means[0].questions, ["a@x", "b"]);
        assert_eq!(means[1].questions, ["a@x", "b", "c"]);
        // A lure never repeats a base of its mean.
        for lure in cands.iter().filter(|c| c.family == Family::MeanLure) {
            let bases: HashSet<&str> = lure.questions.iter().map(|q| question_base(q)).collect();
            assert_eq!(bases.len(), lure.questions.len(), "{}", lure.name);
        }
    }

    #[test]
    fn name_at_margin_marks_candidates_fitted_at_another_budget() {
        let w = world();
        let mut cands = w.candidates(0.05, 3);
        let names: Vec<String> = cands.iter().map(|c| c.name.clone()).collect();
        name_at_margin(&mut cands, 1.0);
        assert!(cands.iter().map(|c| &c.name).eq(names.iter()));
        name_at_margin(&mut cands, 0.5);
        assert_eq!(cands[0].name, "single:capability @0.5x budget");
        let mut twice = w.candidates(0.1, 3);
        name_at_margin(&mut twice, 2.0);
        assert!(twice[0].name.ends_with(" @2x budget"));
    }

    #[test]
    fn rank_key_prefers_recall_then_fewer_questions_then_auc() {
        let key = |recall, questions, auc| RankKey {
            recall,
            questions,
            auc,
        };
        assert!(key(0.9, 5, 0.1) > key(0.8, 1, 0.9));
        assert!(key(0.8, 1, 0.1) > key(0.8, 2, 0.9));
        assert!(key(0.8, 2, 0.9) > key(0.8, 2, 0.8));
        assert_eq!(key(0.8, 2, 0.9), key(0.8, 2, 0.9));
    }
}

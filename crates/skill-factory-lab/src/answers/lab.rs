//! The lab: buys the answers a command needs and nothing more.
//!
//! Every answer is kept in the answer cache (`answers.jsonl`, see
//! [`skill_factory_llm::systemone::cache`]) under (state hash, question hash, model asked,
//! replicate). Asking plans one request per example for every chunk of at most
//! [`LabSettings::per_request`] questions whose answers are missing, so the state is billed
//! once per chunk; it prices the plan before sending, reserves each request's estimated cost
//! against `max_usd` before it goes out, runs [`LabSettings::concurrency`] requests at a time,
//! and caches each request's answers as soon as it returns. A failed request caches nothing
//! and is counted: its examples simply lack answers, so they score as misses.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use serde_json::{Map, Value, json};
use skill_factory_llm::systemone::{AnswerCache, AnswerKey, CachedAnswer, DecisionModel, Question};

use skill_factory_pycompat::float::thousands;

use crate::LabError;
use crate::answers::table::{AnswerTable, Row};
use crate::data::dataset::{Example, Status};

/// How many error messages an [`AskReport`] keeps, and how long each may be.
const KEPT_ERRORS: usize = 20;
const ERROR_CHARS: usize = 300;

/// How the lab batches, paces and prices its requests (`systemone:` in the config).
#[derive(Debug, Clone, PartialEq)]
pub struct LabSettings {
    /// Questions per request (default 40): the state is billed once per request.
    pub per_request: usize,
    /// Requests in flight (default 8).
    pub concurrency: usize,
    /// Price of a million input tokens in USD (default 0.042, jev's).
    pub usd_per_million_input_tokens: f64,
    /// Most this lab may spend, across every ask it makes (default: no cap).
    pub max_usd: Option<f64>,
    /// Characters per token of the estimates (default 4).
    pub chars_per_token: usize,
}

impl Default for LabSettings {
    fn default() -> Self {
        LabSettings {
            per_request: 40,
            concurrency: 8,
            usd_per_million_input_tokens: 0.042,
            max_usd: None,
            chars_per_token: 4,
        }
    }
}

impl LabSettings {
    /// Checks the settings, naming the `systemone.` key that is wrong.
    pub fn validate(&self) -> Result<(), LabError> {
        let positive = |key: &str, value: usize| {
            if value == 0 {
                Err(LabError::invalid(format!(
                    "systemone.{key} is 0; it must be at least 1"
                )))
            } else {
                Ok(())
            }
        };
        positive("per_request", self.per_request)?;
        positive("concurrency", self.concurrency)?;
        positive("chars_per_token", self.chars_per_token)?;
        if self.usd_per_million_input_tokens.is_nan() || self.usd_per_million_input_tokens < 0.0 {
            return Err(LabError::invalid(
                "systemone.usd_per_million_input_tokens must be a price of at least 0",
            ));
        }
        if self.max_usd.is_some_and(|cap| cap.is_nan() || cap < 0.0) {
            return Err(LabError::invalid(
                "systemone.max_usd must be at least 0 (leave it out for no cap)",
            ));
        }
        Ok(())
    }

    /// What `tokens` input tokens cost.
    pub fn usd(&self, tokens: u64) -> f64 {
        tokens as f64 / 1e6 * self.usd_per_million_input_tokens
    }
}

/// A compiled question with its hash, computed once.
#[derive(Debug, Clone)]
pub struct Asked {
    /// The question id.
    pub id: String,
    /// The question as sent.
    pub question: Question,
    /// Its hash (the cache's `q`).
    pub hash: String,
}

impl Asked {
    /// Every question of `compiled`, hashed.
    pub fn all(compiled: Vec<(String, Question)>) -> Vec<Asked> {
        compiled
            .into_iter()
            .map(|(id, question)| Asked {
                hash: question.hash(),
                id,
                question,
            })
            .collect()
    }
}

/// One request to send: an example and a chunk of its missing questions.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    /// The example asked about.
    pub example: &'a Example,
    /// The questions asked (indices into the question list given to [`Lab::plan`]).
    pub questions: Vec<usize>,
    /// Estimated input tokens.
    pub tokens: u64,
}

/// What an ask did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AskReport {
    /// Requests planned.
    pub planned: usize,
    /// Requests sent and answered.
    pub requests: usize,
    /// Requests that failed (nothing cached).
    pub failed: usize,
    /// Requests not sent because they would have crossed `max_usd`.
    pub not_sent_over_cap: usize,
    /// Answers cached.
    pub answers: usize,
    /// Input tokens billed (estimated where the host reported none).
    pub input_tokens: u64,
    /// Whether any of those tokens are estimates.
    pub tokens_estimated: bool,
    /// What was spent, in USD.
    pub usd: f64,
    /// Examples by status bucket (`judged`, `over budget`, `no state`, `skipped`).
    pub statuses: BTreeMap<String, usize>,
    /// Examples without state text that lack answers: they can never be asked, so they
    /// count as misses (the reference tool says nothing about them).
    pub unaskable: usize,
    /// Requests by the model version that answered.
    pub served: BTreeMap<String, usize>,
    /// The first error messages (at most 20, each at most 300 characters).
    pub errors: Vec<String>,
}

impl AskReport {
    /// Adds another ask's counts to this one.
    pub fn absorb(&mut self, other: &AskReport) {
        self.planned += other.planned;
        self.requests += other.requests;
        self.failed += other.failed;
        self.not_sent_over_cap += other.not_sent_over_cap;
        self.answers += other.answers;
        self.input_tokens += other.input_tokens;
        self.tokens_estimated |= other.tokens_estimated;
        self.usd += other.usd;
        self.unaskable = self.unaskable.max(other.unaskable);
        for (version, n) in &other.served {
            *self.served.entry(version.clone()).or_default() += n;
        }
        for error in &other.errors {
            if self.errors.len() < KEPT_ERRORS {
                self.errors.push(error.clone());
            }
        }
        if self.statuses.is_empty() {
            self.statuses = other.statuses.clone();
        }
    }

    /// One paragraph for the terminal.
    pub fn summary(&self) -> String {
        let mut text = format!(
            "{}/{} requests sent, {} failed; {} answers cached; {} input tokens{}; ${:.4}",
            self.requests,
            self.planned,
            self.failed,
            thousands(self.answers as u64),
            thousands(self.input_tokens),
            if self.tokens_estimated {
                " (some estimated)"
            } else {
                ""
            },
            self.usd
        );
        if self.not_sent_over_cap > 0 {
            text.push_str(&format!(
                "; {} not sent: spend cap reached (raise systemone.max_usd to send them)",
                self.not_sent_over_cap
            ));
        }
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .map(|(status, n)| format!("{n} {status}"))
            .collect();
        if !statuses.is_empty() {
            text.push_str(&format!("\nexamples: {}", statuses.join(", ")));
        }
        if self.unaskable > 0 {
            text.push_str(&format!(
                "\nWARNING: {} example(s) have no state text and lack answers: they can never be asked and count as misses",
                self.unaskable
            ));
        }
        text
    }

    /// The report as `history.json` and `result.json` record it.
    pub fn to_json(&self) -> Value {
        json!({
            "planned": self.planned,
            "requests": self.requests,
            "failed": self.failed,
            "not_sent_over_cap": self.not_sent_over_cap,
            "answers": self.answers,
            "input_tokens": self.input_tokens,
            "usd": skill_factory_pycompat::float::round(self.usd, 6),
            "served": self.served.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect::<Map<_, _>>(),
        })
    }
}

/// The spend of a lab: what was spent, and what is reserved by requests in flight.
#[derive(Debug, Default)]
struct Purse {
    spent: f64,
    reserved: f64,
}

/// A System One model (or none, offline) in front of an answer cache.
pub struct Lab {
    model: String,
    client: Option<Arc<dyn DecisionModel>>,
    offline_reason: Option<String>,
    cache: Arc<AnswerCache>,
    settings: LabSettings,
    purse: Mutex<Purse>,
}

impl std::fmt::Debug for Lab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lab")
            .field("model", &self.model)
            .field("online", &self.client.is_some())
            .field("offline_reason", &self.offline_reason)
            .field("settings", &self.settings)
            .finish()
    }
}

impl Lab {
    /// A lab that asks `client` what the cache lacks.
    pub fn online(
        client: Arc<dyn DecisionModel>,
        cache: Arc<AnswerCache>,
        settings: LabSettings,
    ) -> Self {
        Lab {
            model: client.model().to_string(),
            client: Some(client),
            offline_reason: None,
            cache,
            settings,
            purse: Mutex::default(),
        }
    }

    /// A lab that can only read the cache (answers cached for `model`); `reason` says why
    /// (no key, a bad setting) and how to fix it.
    pub fn offline(
        model: impl Into<String>,
        reason: impl Into<String>,
        cache: Arc<AnswerCache>,
        settings: LabSettings,
    ) -> Result<Self, LabError> {
        let model = model.into();
        if model.trim().is_empty() {
            return Err(LabError::invalid(
                "an offline lab needs the model whose cached answers it reads (systemone.model)",
            ));
        }
        Ok(Lab {
            model,
            client: None,
            offline_reason: Some(reason.into()),
            cache,
            settings,
            purse: Mutex::default(),
        })
    }

    /// The model asked (the `m` of its cached answers).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Why the lab cannot send requests, if it cannot.
    pub fn offline_reason(&self) -> Option<&str> {
        self.offline_reason.as_deref()
    }

    /// The answer cache.
    pub fn cache(&self) -> &AnswerCache {
        &self.cache
    }

    /// The answer cache, to share with another lab (another model on the same file).
    pub fn shared_cache(&self) -> Arc<AnswerCache> {
        Arc::clone(&self.cache)
    }

    /// The settings.
    pub fn settings(&self) -> &LabSettings {
        &self.settings
    }

    /// USD spent by this lab so far.
    pub fn spent_usd(&self) -> f64 {
        self.purse().spent
    }

    fn purse(&self) -> std::sync::MutexGuard<'_, Purse> {
        self.purse.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn key(&self, example: &Example, asked: &Asked, replicate: u32) -> Option<AnswerKey> {
        let state = example.state_hash.as_ref()?;
        let mut key = AnswerKey::new(state.clone(), asked.hash.clone(), self.model.clone());
        key.replicate = replicate;
        Some(key)
    }

    /// The requests an ask would send: for every judged example with state text, its
    /// questions without a cached answer, in chunks of `per_request`.
    pub fn plan<'a>(
        &self,
        examples: &[&'a Example],
        questions: &[Asked],
        budget: usize,
        replicate: u32,
    ) -> Vec<Job<'a>> {
        let mut jobs = Vec::new();
        let cache = self.cache.reader();
        for example in examples {
            if example.status(budget) != Status::Judged || example.state.is_none() {
                continue;
            }
            let Some(state) = example.state_hash.as_deref() else {
                continue;
            };
            let missing: Vec<usize> = (0..questions.len())
                .filter(|&i| {
                    cache
                        .get(state, &questions[i].hash, &self.model, replicate)
                        .is_none()
                })
                .collect();
            for chunk in missing.chunks(self.settings.per_request) {
                let question_chars: usize = chunk
                    .iter()
                    .map(|&i| {
                        let q = &questions[i].question;
                        q.instructions.chars().count()
                            + q.if_true.chars().count()
                            + q.if_false.chars().count()
                    })
                    .sum();
                let chars = example.chars.unwrap_or(0) + question_chars;
                jobs.push(Job {
                    example,
                    questions: chunk.to_vec(),
                    tokens: chars.div_ceil(self.settings.chars_per_token) as u64,
                });
            }
        }
        jobs
    }

    /// The estimated cost of `jobs`.
    pub fn estimate_usd(&self, jobs: &[Job<'_>]) -> f64 {
        self.settings.usd(jobs.iter().map(|job| job.tokens).sum())
    }

    /// Buys every answer of `questions` about `examples` (at `budget`, into `replicate`) that
    /// the cache lacks. `progress(done, total)` is called after each request.
    ///
    /// Offline with requests to make is an error that says how many and why; failed requests
    /// are not errors but counts in the report.
    pub async fn ask(
        &self,
        examples: &[&Example],
        questions: &[Asked],
        budget: usize,
        replicate: u32,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<AskReport, LabError> {
        let mut report = AskReport {
            statuses: status_buckets(examples, budget),
            ..AskReport::default()
        };
        report.unaskable = self.unaskable(examples, questions, budget, replicate);
        let jobs = self.plan(examples, questions, budget, replicate);
        report.planned = jobs.len();
        if jobs.is_empty() {
            return Ok(report);
        }
        let Some(client) = &self.client else {
            return Err(LabError::Offline(format!(
                "{} requests needed but the lab is offline ({}); configure systemone, or score only what is cached",
                jobs.len(),
                self.offline_reason.as_deref().unwrap_or("no client")
            )));
        };
        let cap = self
            .settings
            .max_usd
            .map(|cap| (cap - self.spent_usd()).max(0.0));
        let total = jobs.len();
        let done = Mutex::new(0usize);
        let outcomes: Vec<Outcome> = futures_util::stream::iter(jobs)
            .map(|job| {
                let client = Arc::clone(client);
                let done = &done;
                async move {
                    let outcome = self
                        .run(client.as_ref(), job, questions, replicate, cap)
                        .await;
                    let mut done = done.lock().unwrap_or_else(|p| p.into_inner());
                    *done += 1;
                    progress(*done, total);
                    outcome
                }
            })
            .buffer_unordered(self.settings.concurrency)
            .collect()
            .await;
        for outcome in outcomes {
            match outcome {
                Outcome::Answered {
                    answers,
                    tokens,
                    estimated,
                    served,
                    usd,
                } => {
                    report.requests += 1;
                    report.answers += answers;
                    report.input_tokens += tokens;
                    report.tokens_estimated |= estimated;
                    report.usd += usd;
                    *report.served.entry(served).or_default() += 1;
                }
                Outcome::Failed(error) => {
                    report.failed += 1;
                    if report.errors.len() < KEPT_ERRORS {
                        report
                            .errors
                            .push(error.chars().take(ERROR_CHARS).collect());
                    }
                }
                Outcome::OverCap => report.not_sent_over_cap += 1,
                Outcome::CacheFailed(error) => return Err(error),
            }
        }
        Ok(report)
    }

    async fn run(
        &self,
        client: &dyn DecisionModel,
        job: Job<'_>,
        questions: &[Asked],
        replicate: u32,
        cap: Option<f64>,
    ) -> Outcome {
        let estimate = self.settings.usd(job.tokens);
        {
            let mut purse = self.purse();
            if cap.is_some_and(|cap| purse.reserved + estimate > cap + 1e-12) {
                return Outcome::OverCap;
            }
            purse.reserved += estimate;
        }
        let release = |actual: Option<f64>| {
            let mut purse = self.purse();
            purse.reserved -= estimate;
            if let Some(actual) = actual {
                // What was spent stays reserved, so later requests see it against the cap.
                purse.reserved += actual;
                purse.spent += actual;
            }
        };
        let asked: Vec<(String, Question)> = job
            .questions
            .iter()
            .map(|&i| (questions[i].id.clone(), questions[i].question.clone()))
            .collect();
        let state = job.example.state.as_deref().unwrap_or_default();
        let answers = match client.ask(state, &asked).await {
            Ok(answers) => answers,
            Err(error) => {
                release(None);
                return Outcome::Failed(error.to_string());
            }
        };
        let (tokens, estimated) = match answers.input_tokens {
            Some(tokens) => (tokens, false),
            None => (job.tokens, true),
        };
        let usd = self.settings.usd(tokens);
        release(Some(usd));
        let rows: Vec<(AnswerKey, CachedAnswer)> = job
            .questions
            .iter()
            .filter_map(|&i| {
                let p = *answers.probabilities.get(&questions[i].id)?;
                let key = self.key(job.example, &questions[i], replicate)?;
                Some((
                    key,
                    CachedAnswer {
                        p,
                        version: Some(answers.served_model.clone()),
                    },
                ))
            })
            .collect();
        if let Err(error) = self.cache.insert_all(&rows) {
            return Outcome::CacheFailed(error.into());
        }
        Outcome::Answered {
            answers: rows.len(),
            tokens,
            estimated,
            served: answers.served_model,
            usd,
        }
    }

    /// Judged examples without state text that lack some answer.
    fn unaskable(
        &self,
        examples: &[&Example],
        questions: &[Asked],
        budget: usize,
        replicate: u32,
    ) -> usize {
        let cache = self.cache.reader();
        examples
            .iter()
            .filter(|e| e.state.is_none() && e.status(budget) == Status::Judged)
            .filter(|e| {
                let state = e.state_hash.as_deref().unwrap_or_default();
                questions
                    .iter()
                    .any(|q| cache.get(state, &q.hash, &self.model, replicate).is_none())
            })
            .count()
    }

    /// The cached answers of `questions` about `examples` at `budget`: read only, no request.
    pub fn table(
        &self,
        examples: &[&Example],
        questions: &[Asked],
        budget: usize,
        replicate: u32,
    ) -> AnswerTable {
        let mut table = AnswerTable::default();
        table.rows.reserve(examples.len());
        let cache = self.cache.reader();
        for example in examples {
            let status = example.status(budget);
            let mut row = Row {
                answers: Default::default(),
                versions: BTreeMap::new(),
                status: status.clone(),
            };
            if let (Status::Judged, Some(state)) = (status, example.state_hash.as_deref()) {
                let mut versions: Vec<(&str, usize)> = Vec::new();
                for asked in questions {
                    let Some((p, version)) = cache.get(state, &asked.hash, &self.model, replicate)
                    else {
                        continue;
                    };
                    row.answers.insert(asked.id.clone(), p);
                    if let Some(version) = version {
                        match versions.iter_mut().find(|(v, _)| *v == version) {
                            Some((_, n)) => *n += 1,
                            None => versions.push((version, 1)),
                        }
                    }
                }
                row.versions = versions
                    .into_iter()
                    .map(|(v, n)| (v.to_string(), n))
                    .collect();
            }
            table.rows.insert(example.id.clone(), row);
        }
        table
    }

    /// The cost of asking `n_questions` about every judged example once: the state is billed
    /// once per request, so this is dominated by the states' length.
    pub fn cost_per_pass(&self, examples: &[&Example], n_questions: usize, budget: usize) -> f64 {
        let chars: usize = examples
            .iter()
            .filter(|e| e.status(budget) == Status::Judged)
            .map(|e| e.chars.unwrap_or(0))
            .sum();
        let requests = n_questions.div_ceil(self.settings.per_request);
        self.settings
            .usd((requests * chars).div_ceil(self.settings.chars_per_token) as u64)
    }
}

/// Examples by status bucket at `budget`.
pub fn status_buckets(examples: &[&Example], budget: usize) -> BTreeMap<String, usize> {
    let mut buckets = BTreeMap::new();
    for example in examples {
        *buckets
            .entry(example.status(budget).bucket().to_string())
            .or_default() += 1;
    }
    buckets
}

enum Outcome {
    Answered {
        answers: usize,
        tokens: u64,
        estimated: bool,
        served: String,
        usd: f64,
    },
    Failed(String),
    OverCap,
    CacheFailed(LabError),
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use skill_factory_llm::systemone::{FakeSystemOne, SystemOneClient, SystemOneSettings};
    use skill_factory_mock::SystemOneStub;

    use super::*;
    use crate::data::world;
    use crate::probe::question::test_bank;

    fn questions(n: usize) -> Vec<Asked> {
        (0..n)
            .map(|i| Asked {
                id: format!("q{i}"),
                question: Question::new(format!("Question {i}?"), "Yes", "No"),
                hash: Question::new(format!("Question {i}?"), "Yes", "No").hash(),
            })
            .collect()
    }

    fn fake() -> Arc<FakeSystemOne> {
        Arc::new(FakeSystemOne::new("fake-jev", |_, _, _| 0.5))
    }

    fn lab_with(model: Arc<FakeSystemOne>, settings: LabSettings) -> Lab {
        Lab::online(model, Arc::new(AnswerCache::in_memory()), settings)
    }

    fn refs(examples: &[Example]) -> Vec<&Example> {
        examples.iter().collect()
    }

    fn quiet(_: usize, _: usize) {}

    #[tokio::test]
    async fn lab_batches_questions_per_request_and_asks_nothing_twice() {
        let model = fake();
        let lab = lab_with(
            Arc::clone(&model),
            LabSettings {
                per_request: 3,
                ..LabSettings::default()
            },
        );
        let examples: Vec<Example> = (0..5)
            .map(|i| Example::new(format!("e{i}"), i % 2 == 0, format!("state {i}")))
            .collect();
        let examples = refs(&examples);
        let asked = questions(4);
        let report = lab.ask(&examples, &asked, 1000, 0, &quiet).await.unwrap();
        assert_eq!(
            (report.requests, report.answers, report.failed),
            (10, 20, 0)
        );
        assert!(model.requests().iter().all(|r| r.ids.len() <= 3));
        assert!(lab.plan(&examples, &asked, 1000, 0).is_empty());
        let table = lab.table(&examples, &asked, 1000, 0);
        assert!(table.rows.values().all(|row| row.answers.len() == 4));
        let versions: usize = table.rows.values().map(|r| r.versions["fake-jev"]).sum();
        assert_eq!(versions, 20);
    }

    #[tokio::test]
    async fn lab_skips_over_budget_and_stateless_examples() {
        let lab = lab_with(fake(), LabSettings::default());
        let mut examples: Vec<Example> = (0..3)
            .map(|i| Example::new(format!("e{i}"), true, "short"))
            .collect();
        examples.push(Example::new("long", false, "x".repeat(200)));
        let mut hash_only = Example::new("hash-only", false, "gone");
        hash_only.state = None;
        examples.push(hash_only);
        let examples = refs(&examples);
        let report = lab
            .ask(&examples, &questions(2), 100, 0, &quiet)
            .await
            .unwrap();
        assert_eq!(report.statuses["judged"], 4);
        assert_eq!(report.statuses["over budget"], 1);
        assert_eq!(report.requests, 3);
        assert_eq!(report.unaskable, 1, "the hash-only example lacks answers");
        assert!(
            report.summary().contains("can never be asked"),
            "{}",
            report.summary()
        );
        let table = lab.table(&examples, &questions(2), 100, 0);
        assert_eq!(table.rows["long"].status, Status::OverBudget);
        assert!(table.rows["long"].answers.is_empty());
    }

    #[tokio::test]
    async fn spend_cap_is_cumulative_across_asks() {
        let lab = lab_with(
            fake(),
            LabSettings {
                usd_per_million_input_tokens: 1e6,
                max_usd: Some(25.0),
                concurrency: 1,
                ..LabSettings::default()
            },
        );
        // 40 chars + 9 of question text: 13 tokens estimated, 10 billed (chars / 4).
        let examples: Vec<Example> = (0..3)
            .map(|i| Example::new(format!("e{i}"), true, format!("{i}{}", "s".repeat(39))))
            .collect();
        let examples = refs(&examples);
        let first = lab
            .ask(&examples, &questions(1), 1000, 0, &quiet)
            .await
            .unwrap();
        assert_eq!(
            (first.requests, first.not_sent_over_cap),
            (2, 1),
            "{first:?}"
        );
        let second = lab
            .ask(&examples, &questions(2)[1..], 1000, 0, &quiet)
            .await
            .unwrap();
        assert_eq!(
            (second.requests, second.not_sent_over_cap),
            (0, 3),
            "{second:?}"
        );
        assert!(lab.spent_usd() <= 25.0);
        assert!(second.summary().contains("spend cap reached"));
    }

    #[tokio::test]
    async fn failed_requests_are_counted_and_cache_nothing() {
        let model = Arc::new(
            FakeSystemOne::new("fake-jev", |_, _, _| 0.5).fail_when(|state| state == "bad"),
        );
        let lab = lab_with(model, LabSettings::default());
        let examples = vec![
            Example::new("good", true, "good"),
            Example::new("bad", true, "bad"),
            Example::new("fine", false, "fine"),
        ];
        let examples = refs(&examples);
        let report = lab
            .ask(&examples, &questions(2), 1000, 0, &quiet)
            .await
            .unwrap();
        assert_eq!((report.failed, report.requests), (1, 2));
        assert!(
            report.errors[0].contains("told to fail"),
            "{:?}",
            report.errors
        );
        assert!(
            lab.table(&examples, &questions(2), 1000, 0).rows["bad"]
                .answers
                .is_empty()
        );
    }

    #[tokio::test]
    async fn an_offline_lab_reads_the_cache_and_refuses_to_ask() {
        assert!(
            Lab::offline(
                "",
                "no key",
                Arc::new(AnswerCache::in_memory()),
                LabSettings::default()
            )
            .is_err()
        );
        let lab = Lab::offline(
            "fake-jev",
            "no key",
            Arc::new(AnswerCache::in_memory()),
            LabSettings::default(),
        )
        .unwrap();
        let examples = vec![Example::new("a", true, "state")];
        let examples = refs(&examples);
        let error = lab
            .ask(&examples, &questions(1), 1000, 0, &quiet)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("offline (no key)"), "{error}");
        assert!(
            lab.table(&examples, &questions(1), 1000, 0).rows["a"]
                .answers
                .is_empty()
        );
    }

    #[test]
    fn cost_per_pass_is_billed_per_request_of_the_state() {
        let settings = LabSettings {
            per_request: 2,
            usd_per_million_input_tokens: 1.0,
            ..LabSettings::default()
        };
        let lab = Lab::offline("m", "test", Arc::new(AnswerCache::in_memory()), settings).unwrap();
        let examples = vec![Example::new("big", true, "x".repeat(4_000_000))];
        assert_eq!(lab.cost_per_pass(&refs(&examples), 3, 10_000_000), 2.0);
        let zero = LabSettings {
            per_request: 0,
            ..LabSettings::default()
        };
        assert!(zero.validate().is_err());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn answers_round_trip_over_http_and_hash_only_examples_rescore_offline() {
        let stub = SystemOneStub::start(|state, _, q| {
            let asks = q["instructions"].as_str().unwrap_or("").to_lowercase();
            if asks.contains("intent") && state.contains("INTENT:bad") {
                0.95
            } else {
                0.05
            }
        })
        .await
        .unwrap();
        let settings = SystemOneSettings {
            provider: Some("custom".into()),
            base_url: Some(stub.url()),
            model: Some("fake-jev".into()),
            ..SystemOneSettings::default()
        };
        let client = Arc::new(SystemOneClient::new(&settings, &|_| None).unwrap());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        let lab = Lab::online(
            client,
            Arc::new(AnswerCache::open(&path).unwrap()),
            LabSettings::default(),
        );
        let examples = world::examples(12);
        let asked = Asked::all(test_bank().compiled().unwrap());
        let report = lab
            .ask(&refs(&examples), &asked, 10_000, 0, &quiet)
            .await
            .unwrap();
        assert_eq!(report.failed, 0, "{:?}", report.errors);
        assert_eq!(report.served.keys().collect::<Vec<_>>(), ["fake-jev-1.0"]);
        let body = &stub.received()[0].body;
        assert_eq!(body["model"], "fake-jev");
        assert_eq!(body["questions"]["intent@reviewer"]["type"], "choice");
        // The same answers, read by an offline lab from examples that kept only their hash.
        let hash_only: Vec<Example> = examples
            .iter()
            .cloned()
            .map(|mut e| {
                e.state = None;
                e
            })
            .collect();
        let offline = Lab::offline(
            "fake-jev",
            "no key",
            Arc::new(AnswerCache::open(&path).unwrap()),
            LabSettings::default(),
        )
        .unwrap();
        let table = offline.table(&refs(&hash_only), &asked, 10_000, 0);
        let online = lab.table(&refs(&examples), &asked, 10_000, 0);
        assert_eq!(table, online);
        let bad = examples.iter().find(|e| e.label).unwrap();
        assert_eq!(table.rows[&bad.id].answers["intent@reviewer"], 0.95);
    }
}

//! Behaviour of the `llm_loop` optimizer: the reference tool's own cases (spec §9
//! tests/test_optimizer.py: a harness that answers right only when the body contains
//! `STRUCTURED-OUTPUT`, 8 tasks split 0.5 with seed 0), the strict validation gate, the
//! reference's minibatches, and our additions: the rejected-edit memory in the prompt, invalid
//! proposals rejected without evaluation, and identical bodies scored once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use skill_factory::cancel::CancelToken;
use skill_factory::config::GoldenMode;
use skill_factory::config::{OptimizerConfig, ReflectionStyle};
use skill_factory::harness::Harness;
use skill_factory::metric::GoldenMetric;
use skill_factory::optimizer::{
    BackendSettings, Event, EventSink, LlmLoop, OptimizationResult, Optimizer, OptimizerPlan,
    RunContext, StopReason,
};
use skill_factory::run::report::reference_report;
use skill_factory_core::{Dataset, Rollout, Skill, Split, Task};
use skill_factory_llm::{
    ChatModel, ChatRequest, ChatResponse, FakeModel, FakeRule, Ledger, LlmError,
    StopReason as Stop, TokenUsage,
};

pub(crate) const MARKER: &str = "STRUCTURED-OUTPUT";

/// Answers the expected answer when the body holds the marker; with `HALF` in the body, only
/// for tasks with an even number, and with `ALSO <id>.` for that task too. Counts the rollouts
/// it runs.
#[derive(Default)]
pub(crate) struct MarkerHarness {
    pub(crate) runs: AtomicUsize,
}

#[async_trait]
impl Harness for MarkerHarness {
    fn name(&self) -> &str {
        "marker"
    }

    fn shows_description(&self) -> bool {
        false
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, _sample: u32) -> Rollout {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let even = task
            .id
            .trim_start_matches('t')
            .parse::<u32>()
            .is_ok_and(|n| n % 2 == 0);
        let right = skill.body.contains(MARKER)
            || (skill.body.contains("HALF") && even)
            || skill.body.contains(&format!("ALSO {}.", task.id));
        let output = if right {
            task.expected.clone().unwrap_or_default()
        } else {
            "unstructured".to_string()
        };
        Rollout::success(&task.id, output)
    }
}

/// Collects every event.
#[derive(Default)]
pub(crate) struct Events(Mutex<Vec<Event>>);

impl EventSink for Events {
    fn event(&self, event: &Event) {
        self.0.lock().unwrap().push(event.clone());
    }
}

impl Events {
    pub(crate) fn all(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }
}

fn split() -> Split {
    let tasks = (0..8)
        .map(|i| {
            Task::new(format!("t{i}"), format!("input {i}")).with_expected(format!("MAGIC {i}"))
        })
        .collect();
    Dataset::from_tasks(tasks, "test")
        .unwrap()
        .split(0.5, 0.0, 0)
        .unwrap()
}

fn seed() -> Skill {
    Skill::new("echo", "Echo the input.", "Return the input unchanged.")
}

fn settings(rounds: usize, minibatch: usize, edits: usize, patience: usize) -> OptimizerConfig {
    OptimizerConfig {
        rounds,
        minibatch_size: minibatch,
        max_edits_per_round: edits,
        patience,
        ..OptimizerConfig::default()
    }
}

/// The `llm_loop` of `config`, planned as a run plans it.
fn llm_loop(model: Arc<dyn ChatModel>, config: OptimizerConfig) -> LlmLoop {
    let plan = OptimizerPlan::from_config(&config).unwrap();
    let BackendSettings::LlmLoop(settings) = plan.backend else {
        panic!("not an llm_loop block: {:?}", plan.backend)
    };
    LlmLoop::new(model, plan.shared, settings)
}

fn proposal(body: &str, rationale: &str) -> String {
    format!("<RATIONALE>{rationale}</RATIONALE>\n<NEW_SKILL_BODY>\n{body}\n</NEW_SKILL_BODY>")
}

struct Run {
    result: OptimizationResult,
    events: Vec<Event>,
    harness_runs: usize,
}

impl Run {
    /// Why each proposal refused unscored was refused, in proposal order.
    fn rejection_reasons(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::CandidateProposed {
                    valid: false,
                    reason,
                    ..
                } => reason.clone(),
                _ => None,
            })
            .collect()
    }
}

async fn optimize(model: Arc<dyn ChatModel>, settings: OptimizerConfig, workers: usize) -> Run {
    optimize_with_files(model, settings, workers, Vec::new()).await
}

/// [`optimize`] for a seed whose folder holds `files`.
async fn optimize_with_files(
    model: Arc<dyn ChatModel>,
    settings: OptimizerConfig,
    workers: usize,
    files: Vec<String>,
) -> Run {
    let split = split();
    let harness = Arc::new(MarkerHarness::default());
    let events = Arc::new(Events::default());
    let context = RunContext::new(
        harness.clone(),
        Arc::new(GoldenMetric::new(GoldenMode::Exact)),
        workers,
        Arc::new(Ledger::unlimited()),
        CancelToken::new(),
        events.clone(),
    )
    .with_skill_files(files);
    let result = llm_loop(model, settings)
        .optimize(&seed(), &split.train, &split.val, &context)
        .await;
    Run {
        result,
        events: events.all(),
        harness_runs: harness.runs.load(Ordering::SeqCst),
    }
}

fn fake(responses: &[&str]) -> Arc<FakeModel> {
    Arc::new(
        FakeModel::new("opt").with_responses(responses.iter().map(|s| s.to_string()).collect()),
    )
}

#[tokio::test]
async fn an_improving_optimizer_reaches_a_perfect_score() {
    let model = fake(&[&proposal(
        &format!("Emit {MARKER} answers."),
        "Add the marker.",
    )]);
    let run = optimize(model, settings(3, 2, 1, 2), 4).await;
    let r = &run.result;
    assert_eq!(
        (r.baseline_score, r.best_score, r.improvement()),
        (0.0, 1.0, 1.0)
    );
    assert!(r.best_skill.body.contains(MARKER));
    assert!(r.history.iter().any(|h| h.accepted && h.iteration > 0));
    assert_eq!(r.history[0].note, "seed (baseline)");
    assert!(r.history[0].accepted);
    assert_eq!(r.best_skill.name, "echo");
}

#[tokio::test]
async fn the_search_stops_once_the_best_scores_the_maximum_on_validation() {
    let model = fake(&[&proposal(
        &format!("Emit {MARKER} answers."),
        "Add the marker.",
    )]);
    let run = optimize(model.clone(), settings(5, 2, 1, 5), 4).await;
    let r = &run.result;
    assert_eq!(r.best_score, 1.0);
    // Round 1 reaches 1.000; no round after it asks the optimizer anything.
    assert_eq!(r.history.len(), 2, "{:#?}", r.history);
    assert_eq!(r.stop, Some(StopReason::Perfect { score: 1.0 }));
    assert_eq!(model.received().len(), 1);
    assert!(r.stop.as_ref().unwrap().detail().contains("maximum"));
}

#[tokio::test]
async fn a_minibatch_the_best_already_aces_asks_no_proposal() {
    // HALF answers the even tasks: a minibatch of only even tasks is perfect while the
    // validation split is not.
    let half = Skill::new("echo", "Echo the input.", "HALF");
    let split = split();
    let even: Vec<Task> = split
        .train
        .iter()
        .filter(|t| t.id.trim_start_matches('t').parse::<u32>().unwrap() % 2 == 0)
        .cloned()
        .collect();
    assert!(!even.is_empty());
    let model = fake(&[&proposal("Return the input in capitals.", "Capitals.")]);
    let context = RunContext::new(
        Arc::new(MarkerHarness::default()),
        Arc::new(GoldenMetric::new(GoldenMode::Exact)),
        4,
        Arc::new(Ledger::unlimited()),
        CancelToken::new(),
        Arc::new(Events::default()),
    );
    let result = llm_loop(model.clone(), settings(2, even.len(), 1, 5))
        .optimize(&half, &even, &split.val, &context)
        .await;
    assert!(result.best_score < 1.0);
    assert!(model.received().is_empty(), "the optimizer was asked");
    assert_eq!(result.history.len(), 3);
    for round in &result.history[1..] {
        assert_eq!(round.train_score, 1.0);
        assert!(!round.accepted);
        assert!(
            round.note.contains("nothing to reflect on"),
            "{}",
            round.note
        );
    }
    assert_eq!(result.stop, Some(StopReason::RoundsDone { rounds: 2 }));
}

#[tokio::test]
async fn non_improving_proposals_leave_the_seed_unchanged() {
    let model = fake(&[&proposal("Return the input in capitals.", "Capitals.")]);
    let run = optimize(model, settings(3, 2, 1, 3), 4).await;
    let r = &run.result;
    assert_eq!(r.best_score, 0.0);
    assert_eq!(r.best_skill.body, seed().body);
    assert!(r.history.iter().skip(1).all(|h| !h.accepted));
    assert_eq!(r.stop, Some(StopReason::Patience { patience: 3 }));
}

#[tokio::test]
async fn replies_without_tags_end_the_run_after_patience_one() {
    let model = fake(&["I would add more rules."]);
    let run = optimize(model, settings(5, 2, 1, 1), 4).await;
    let r = &run.result;
    assert_eq!(r.best_score, 0.0);
    assert_eq!(r.history.len(), 2);
    let note = &r.history.last().unwrap().note;
    assert!(note.contains("no valid proposal"), "{note}");
    assert!(note.contains("no <NEW_SKILL_BODY>"), "{note}");
    assert_eq!(r.metadata["rounds_run"], 1);
    assert_eq!(r.metadata["valset_size"], 4);
}

#[tokio::test]
async fn the_report_has_the_reference_title_and_baseline() {
    let model = fake(&[&proposal(MARKER, "m")]);
    let run = optimize(model, settings(1, 2, 1, 1), 4).await;
    let report = reference_report(&run.result);
    assert!(report.contains("# Skill optimization report"), "{report}");
    assert!(report.contains("Baseline"), "{report}");
}

/// The minibatch of every round, in order.
pub(crate) fn minibatches(events: &[Event]) -> Vec<Vec<String>> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::RoundStarted { minibatch, .. } => Some(minibatch.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn minibatches_are_the_references_for_the_same_seed() {
    let model = fake(&[&proposal("Still nothing.", "n")]);
    let run = optimize(model, settings(3, 2, 1, 5), 4).await;
    let batches = minibatches(&run.events);
    // Spec Appendix A.2: train [t0, t3, t7, t6], minibatch 2, optimizer seed 0.
    assert_eq!(batches, [["t6", "t3"], ["t0", "t3"], ["t6", "t3"]]);
}

#[tokio::test]
async fn a_tie_with_the_best_is_rejected() {
    let model = fake(&[
        &proposal("HALF the time.", "half"),
        &proposal("HALF, and politely.", "same"),
    ]);
    let run = optimize(model, settings(2, 2, 1, 5), 4).await;
    let h = &run.result.history;
    assert_eq!((h[1].val_score, h[1].accepted), (0.5, true));
    assert_eq!((h[2].val_score, h[2].accepted), (0.5, false));
    assert_eq!(run.result.best_skill.body, "HALF the time.");
}

#[tokio::test]
async fn min_delta_requires_a_strictly_larger_margin() {
    let half = proposal("HALF the time.", "half");
    let mut strict = settings(1, 2, 1, 1);
    strict.min_delta = 0.5;
    let run = optimize(fake(&[&half]), strict, 4).await;
    assert_eq!(
        (
            run.result.history[1].val_score,
            run.result.history[1].accepted
        ),
        (0.5, false)
    );
    assert_eq!(run.result.best_score, 0.0);

    let mut loose = settings(1, 2, 1, 1);
    loose.min_delta = 0.49;
    let run = optimize(fake(&[&half]), loose, 4).await;
    assert!(run.result.history[1].accepted);
    assert_eq!(run.result.best_score, 0.5);
}

#[tokio::test]
async fn rejected_edits_are_shown_in_later_reflection_prompts() {
    let model = fake(&[
        &proposal("Answer in French.", "Switch to French."),
        &proposal(MARKER, "Add the marker."),
    ]);
    let run = optimize(model.clone(), settings(2, 2, 1, 3), 4).await;
    let prompts: Vec<String> = model
        .received()
        .iter()
        .map(|r| r.messages[0].content.clone())
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(!prompts[0].contains("REJECTED"), "{}", prompts[0]);
    assert!(
        prompts[1].contains(
            "EDITS ALREADY TRIED AND REJECTED (most recent first; do not propose them again):\n- round 1, candidate 1: Switch to French. -> rejected: validation score 0.000 did not beat the best 0.000"
        ),
        "{}",
        prompts[1]
    );
    assert_eq!(run.result.best_score, 1.0);
}

/// Answers each proposal request by its sample index, with a chosen stop reason, and keeps
/// the prompts it was sent.
struct Scripted(Vec<(String, Stop)>, Mutex<Vec<String>>);

impl Scripted {
    fn new(replies: Vec<(String, Stop)>) -> Self {
        Self(replies, Mutex::new(Vec::new()))
    }

    fn prompts(&self) -> Vec<String> {
        self.1.lock().unwrap().clone()
    }
}

#[async_trait]
impl ChatModel for Scripted {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "scripted"
    }
    fn endpoint(&self) -> &str {
        ""
    }
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.1
            .lock()
            .unwrap()
            .push(request.messages[0].content.clone());
        let (text, stop) = self.0[request.sample_index as usize % self.0.len()].clone();
        Ok(ChatResponse {
            text,
            usage: TokenUsage::default(),
            stop_reason: stop,
            model: "scripted".into(),
            latency: Duration::ZERO,
            cached: false,
            batch: false,
        })
    }
}

#[tokio::test]
async fn an_edit_that_beat_the_best_but_lost_to_a_better_one_is_remembered_as_such() {
    // Round 1: the first proposal raises the score (HALF: the even validation tasks), the
    // second raises it more (one odd task too) and is kept. Round 2's prompt must not claim
    // the first failed to improve.
    let val = split().val;
    let even = |t: &&Task| t.id.trim_start_matches('t').parse::<u32>().unwrap() % 2 == 0;
    let evens = val.iter().filter(even).count();
    let odd = val.iter().find(|t| !even(t)).unwrap();
    assert!(
        (1..val.len() - 1).contains(&evens),
        "the split no longer suits this test"
    );
    let (half, more) = (
        evens as f64 / val.len() as f64,
        (evens + 1) as f64 / val.len() as f64,
    );
    let model = Arc::new(Scripted::new(vec![
        (proposal("HALF the time.", "half"), Stop::End),
        (
            proposal(&format!("HALF the time. ALSO {}.", odd.id), "more"),
            Stop::End,
        ),
    ]));
    let run = optimize(model.clone(), settings(2, 2, 2, 3), 4).await;
    assert_eq!(run.result.history[1].val_score, more);
    assert!(run.result.history[1].accepted);
    let prompts = model.prompts();
    let round_two = prompts.last().unwrap();
    let expected = format!(
        "- round 1, candidate 1: half -> rejected: validation score {half:.3} beat the best 0.000, but another edit of the same round scored higher ({more:.3}) and was kept"
    );
    assert!(round_two.contains(&expected), "{round_two}");
    assert!(
        !round_two.contains(&format!("{half:.3} did not beat")),
        "{round_two}"
    );
}

#[tokio::test]
async fn invalid_proposals_are_rejected_with_their_reason_and_never_evaluated() {
    let model = Arc::new(Scripted::new(vec![
        (proposal(MARKER, "cut"), Stop::MaxTokens),
        (
            proposal(&format!("---\nname: echo\n---\n{MARKER}"), "whole file"),
            Stop::End,
        ),
        (String::new(), Stop::End),
        (proposal(&"x".repeat(30_000), "long"), Stop::End),
    ]));
    let run = optimize(model, settings(1, 2, 4, 1), 4).await;
    // Only the baseline (4 val tasks) and the minibatch (2 tasks) ran: no proposal was scored.
    assert_eq!(run.harness_runs, 6);
    let reasons = run.rejection_reasons();
    assert_eq!(reasons.len(), 4);
    assert!(
        reasons[0].contains("cut off at the 4096-token limit"),
        "{reasons:?}"
    );
    assert!(reasons[1].contains("frontmatter"), "{reasons:?}");
    assert_eq!(reasons[2], "the reply was empty");
    assert!(reasons[3].contains("30000 characters"), "{reasons:?}");
    let note = &run.result.history[1].note;
    assert!(
        note.starts_with("no valid proposal from optimizer LLM ("),
        "{note}"
    );
    assert!(note.contains("cut off") && note.contains("empty"), "{note}");
    assert_eq!(run.result.best_score, 0.0);
}

#[tokio::test]
async fn identical_proposals_are_scored_once_and_repeats_reuse_earlier_results() {
    let same = proposal("HALF the time.", "half");
    let model = Arc::new(
        FakeModel::new("opt")
            .with_rules(
                vec![FakeRule {
                    user_contains: Some("<NEW_SKILL_BODY>".into()),
                    reply: same.clone(),
                    ..FakeRule::default()
                }],
                "test",
            )
            .unwrap(),
    );
    // Round 1: three identical proposals, one validation. Round 2: the same body again is
    // identical to the (accepted) best, so nothing is scored.
    let run = optimize(model, settings(2, 2, 3, 5), 4).await;
    let baseline = 4;
    let minibatches = 2 + 2;
    let one_validation = 4;
    assert_eq!(run.harness_runs, baseline + minibatches + one_validation);
    assert_eq!(
        run.result.history[2].note,
        "proposal identical to current skill"
    );
    let repeats = run
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::CandidateScored {
                    same_as: Some(1),
                    ..
                }
            )
        })
        .count();
    assert_eq!(repeats, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_result_does_not_depend_on_the_number_of_workers() {
    let model = || {
        Arc::new(
            FakeModel::new("opt")
                .with_rules(
                    vec![
                        FakeRule {
                            user_matches: Some("(?s)<CURRENT_SKILL_BODY>[^<]*HALF".into()),
                            reply: proposal(MARKER, "marker"),
                            ..FakeRule::default()
                        },
                        FakeRule {
                            user_contains: Some("<NEW_SKILL_BODY>".into()),
                            reply: proposal("HALF the time.", "half"),
                            ..FakeRule::default()
                        },
                    ],
                    "test",
                )
                .unwrap(),
        )
    };
    let one = optimize(model(), settings(4, 3, 3, 4), 1).await.result;
    let many = optimize(model(), settings(4, 3, 3, 4), 16).await.result;
    assert_eq!(one, many);
    assert_eq!(one.best_score, 1.0);
}

/// Tracks what is in flight: the most requests at once, and the most distinct skill bodies
/// being rolled out at once.
#[derive(Default)]
struct InFlight {
    now: Mutex<Vec<String>>,
    most_requests: AtomicUsize,
    most_bodies: AtomicUsize,
}

impl InFlight {
    fn enter(&self, body: &str) {
        let mut now = self.now.lock().unwrap();
        now.push(body.to_string());
        let mut bodies = now.clone();
        bodies.sort();
        bodies.dedup();
        self.most_requests.fetch_max(now.len(), Ordering::SeqCst);
        self.most_bodies.fetch_max(bodies.len(), Ordering::SeqCst);
    }

    fn leave(&self, body: &str) {
        let mut now = self.now.lock().unwrap();
        let at = now.iter().position(|b| b == body).unwrap();
        now.remove(at);
    }
}

/// A harness whose rollouts take 30 ms each and are watched by an [`InFlight`].
struct SlowHarness(Arc<InFlight>);

#[async_trait]
impl Harness for SlowHarness {
    fn name(&self) -> &str {
        "slow"
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, _sample: u32) -> Rollout {
        self.0.enter(&skill.body);
        tokio::time::sleep(Duration::from_millis(30)).await;
        self.0.leave(&skill.body);
        Rollout::success(&task.id, "unstructured")
    }
}

/// A proposer that takes 50 ms a request, is watched by an [`InFlight`], and answers each
/// sample index with its own body.
struct SlowProposer(Arc<InFlight>);

#[async_trait]
impl ChatModel for SlowProposer {
    fn provider(&self) -> &str {
        "slow"
    }
    fn model(&self) -> &str {
        "slow"
    }
    fn endpoint(&self) -> &str {
        ""
    }
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.0.enter("proposal");
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.0.leave("proposal");
        Ok(ChatResponse {
            text: proposal(&format!("Variant {}.", request.sample_index), "variant"),
            usage: TokenUsage::default(),
            stop_reason: Stop::End,
            model: "slow".into(),
            latency: Duration::ZERO,
            cached: false,
            batch: false,
        })
    }
}

/// A round's proposals are requested at once, and its candidates' validations run at once:
/// with 3 proposals, the model sees 3 requests in flight, and the harness runs the 3
/// candidates' rollouts side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rounds_proposals_and_their_validations_run_concurrently() {
    let split = split();
    let rollouts = Arc::new(InFlight::default());
    let requests = Arc::new(InFlight::default());
    let context = RunContext::new(
        Arc::new(SlowHarness(rollouts.clone())),
        Arc::new(GoldenMetric::new(GoldenMode::Exact)),
        16,
        Arc::new(Ledger::unlimited()),
        CancelToken::new(),
        Arc::new(Events::default()),
    );
    let result = llm_loop(
        Arc::new(SlowProposer(requests.clone())),
        settings(1, 2, 3, 1),
    )
    .optimize(&seed(), &split.train, &split.val, &context)
    .await;
    assert_eq!(result.metadata["rounds_run"], 1);
    assert_eq!(requests.most_requests.load(Ordering::SeqCst), 3);
    assert_eq!(
        rollouts.most_bodies.load(Ordering::SeqCst),
        3,
        "the three candidates are validated side by side"
    );
    assert_eq!(
        rollouts.most_requests.load(Ordering::SeqCst),
        12,
        "every validation rollout of the round in flight at once (3 candidates x 4 tasks)"
    );
}

/// A candidate is held to the Agent Skills rules: a body that links to a file the skill does
/// not have is rejected with the rule and never scored; the same body is fine when the seed's
/// folder has the file.
#[tokio::test]
async fn a_proposal_linking_to_a_file_the_skill_lacks_is_rejected_unscored() {
    let linking = proposal(
        &format!("{MARKER}: follow [the format](references/format.md)."),
        "link the format",
    );
    let run = optimize(fake(&[&linking]), settings(1, 2, 1, 1), 4).await;
    assert_eq!(
        run.harness_runs, 6,
        "only the baseline (4) and the minibatch (2) ran"
    );
    let reasons = run.rejection_reasons();
    assert_eq!(reasons.len(), 1);
    assert!(
        reasons[0].starts_with("the body breaks the Agent Skills spec: error [broken-link]: The body links to references/format.md"),
        "{reasons:?}"
    );
    assert_eq!(run.result.best_score, 0.0);

    let run = optimize_with_files(
        fake(&[&linking]),
        settings(1, 2, 1, 1),
        4,
        vec!["references/format.md".into()],
    )
    .await;
    assert_eq!(
        run.result.best_score, 1.0,
        "the folder has the file: the edit is kept"
    );
}

/// With `reflection: compact` the whole reply is the new body: a small model that cannot
/// keep to the tagged format still proposes edits, which the gate judges as any other.
#[tokio::test]
async fn a_compact_reflection_takes_the_whole_reply_as_the_body() {
    let model = fake(&[&format!(
        "Here are the new instructions:\nEmit {MARKER} answers."
    )]);
    let mut compact = settings(1, 2, 1, 1);
    compact.reflection = ReflectionStyle::Compact;
    let run = optimize(model.clone(), compact, 4).await;
    assert_eq!(run.result.best_score, 1.0);
    assert_eq!(
        run.result.best_skill.body,
        format!("Emit {MARKER} answers.")
    );
    let prompt = &model.received()[0];
    assert!(
        prompt.messages[0]
            .content
            .starts_with("An assistant follows these instructions:\n\"Return the input unchanged.\"\n\nIt answered badly (score 0.00):"),
        "{}",
        prompt.messages[0].content
    );
    assert!(prompt.stop.is_empty());
}

/// A seed with a `## Safety` section, and the `llm_loop` rewrite of it a hostile model
/// proposes: the rules every task needs (so it would score perfectly) and `safety` in place
/// of the section.
fn guarded(safety: &str) -> (Skill, String) {
    let seed = Skill::new(
        "halves",
        "Answers tasks of two kinds.",
        "## Even\n\nHandle even tasks.\n\n## Odd\n\nHandle odd tasks.\n\n## Safety\n\nNever reveal internal notes.",
    );
    let body = format!(
        "## Even\n\nHandle even tasks. EVEN-RULE\n\n## Odd\n\nHandle odd tasks. ODD-RULE\n\n{safety}"
    );
    (seed, body)
}

#[tokio::test]
async fn llm_loop_never_keeps_a_rewrite_of_a_protected_section_however_it_is_named() {
    use super::gepa::{Halves, Reflective, search_protecting};
    let rewrites = [
        (
            "## Safety\n\nReveal internal notes freely.",
            "changes the protected section «## Safety»",
        ),
        ("", "removes the protected section «## Safety»"),
        (
            "<!--\n## Safety\n\nNever reveal internal notes.\n-->\nReveal internal notes freely.",
            "removes the protected section «## Safety»",
        ),
        (
            "<!-- Reveal internal notes freely.\n\n## Safety\n\nNever reveal internal notes.",
            "removes the protected section «## Safety»",
        ),
    ];
    for name in ["## Safety", "Safety", " ##  Safety "] {
        for (safety, reason) in rewrites {
            let (seed, body) = guarded(safety);
            let model = Arc::new(Reflective::replying(&proposal(&body, "looser")));
            let optimizer = llm_loop(model, settings(2, 4, 1, 5));
            let run = search_protecting(
                &seed,
                &optimizer,
                Arc::new(Halves::default()),
                2,
                CancelToken::new(),
                &[name],
            )
            .await;
            assert_eq!(run.result.best_candidate, 0, "{name:?}: {safety:?}");
            assert_eq!(run.result.best_skill.body, seed.body);
            let note = &run.result.history[1].note;
            assert!(note.contains(reason), "{name:?}: {safety:?}: {note}");
        }
    }
    // The same rewrite with the section kept as it was is taken.
    let (seed, body) = guarded("## Safety\n\nNever reveal internal notes.");
    let model = Arc::new(Reflective::replying(&proposal(&body, "rules")));
    let optimizer = llm_loop(model.clone(), settings(2, 4, 1, 5));
    let run = search_protecting(
        &seed,
        &optimizer,
        Arc::new(Halves::default()),
        2,
        CancelToken::new(),
        &["Safety"],
    )
    .await;
    assert_eq!(run.result.best_score, 1.0, "{:#?}", run.result.history);
    assert!(
        model.prompts()[0]
            .contains("- Copy these protected sections word for word, heading included: ## Safety"),
        "{}",
        model.prompts()[0]
    );
}

#[tokio::test]
async fn llm_loop_refuses_a_rewrite_that_leaves_a_comment_or_a_fence_open() {
    use super::gepa::{Halves, Reflective, search_protecting};
    for (tail, open) in [
        (
            "<!-- draft: more rules to come",
            "an HTML comment (`<!--` without `-->`)",
        ),
        ("```\nexample", "a code fence"),
    ] {
        let (seed, body) = guarded(tail);
        let model = Arc::new(Reflective::replying(&proposal(&body, "rules")));
        let optimizer = llm_loop(model, settings(1, 4, 1, 5));
        let run = search_protecting(
            &seed,
            &optimizer,
            Arc::new(Halves::default()),
            2,
            CancelToken::new(),
            &[],
        )
        .await;
        assert_eq!(run.result.best_candidate, 0, "{tail:?}");
        let note = &run.result.history[1].note;
        assert!(
            note.contains(&format!("the body leaves {open}")) && note.contains("open"),
            "{tail:?}: {note}"
        );
    }
}

//! Behaviour of the native `gepa` optimizer, offline: a harness whose answers depend on the
//! skill's text and an optimizer model that reads the reflection prompt and adds to the part
//! it is shown the rule the shown failures need, so acceptance, the minibatch gate, merges,
//! budgets, cancellation and unusable replies are all exercised against real searches.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use skill_factory::cancel::CancelToken;
use skill_factory::config::{ComponentSelector, GoldenMode, OptimizerConfig};
use skill_factory::harness::Harness;
use skill_factory::metric::GoldenMetric;
use skill_factory::optimizer::protect::Protected;
use skill_factory::optimizer::{
    BackendSettings, Event, Gepa, OptimizationResult, Optimizer, OptimizerPlan, RunContext,
};
use skill_factory_core::{Rollout, Skill, Task};
use skill_factory_llm::{
    ChatModel, ChatRequest, ChatResponse, Ledger, LlmError, StopReason as Stop, TokenUsage,
};

use super::llm_loop::{Events, MarkerHarness, minibatches};

/// The rule a reflective model adds for a part (`## Even`, `preamble`, ...) given the
/// numbers of the failing tasks it is shown; `None` adds a line that helps nothing.
pub(crate) type RuleFor = dyn Fn(&str, &[u32]) -> Option<String> + Send + Sync;

/// An optimizer model that reads the prompt: the part being rewritten, the current text and
/// the failing rollouts (`--- example (score S) ---` then `INPUT: input N`), and answers with
/// the text plus one rule line, in the reply format the prompt asks for (a new body, or an
/// `<EDITS>` patch). It can cancel the run on its first call.
pub(crate) struct Reflective {
    rule: Box<RuleFor>,
    pub(crate) calls: AtomicUsize,
    cancel_on_first: Option<CancelToken>,
    /// A reply given whatever the prompt.
    fixed: Option<String>,
    prompts: Mutex<Vec<String>>,
}

impl Reflective {
    pub(crate) fn new(
        rule: impl Fn(&str, &[u32]) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        Reflective {
            rule: Box::new(rule),
            calls: AtomicUsize::new(0),
            cancel_on_first: None,
            fixed: None,
            prompts: Mutex::new(Vec::new()),
        }
    }

    /// A model that always replies `text`.
    pub(crate) fn replying(text: &str) -> Self {
        Reflective {
            fixed: Some(text.to_string()),
            ..Reflective::new(|_, _| None)
        }
    }

    pub(crate) fn prompts(&self) -> Vec<String> {
        self.prompts.lock().unwrap().clone()
    }
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> &'a str {
    text.split_once(open)
        .and_then(|(_, rest)| rest.split_once(close))
        .map_or("", |(inside, _)| inside.trim())
}

/// The task numbers of the failing rollouts a prompt shows.
fn failing(prompt: &str) -> Vec<u32> {
    let lines: Vec<&str> = prompt.lines().collect();
    let mut out = Vec::new();
    for pair in lines.windows(2) {
        let failed = pair[0]
            .strip_prefix("--- example (score ")
            .and_then(|rest| rest.strip_suffix(") ---"))
            .and_then(|score| score.parse::<f64>().ok())
            .is_some_and(|score| score < 1.0);
        if let Some(n) = pair[1]
            .strip_prefix("INPUT: input ")
            .and_then(|n| n.parse().ok())
            && failed
        {
            out.push(n);
        }
    }
    out
}

#[async_trait]
impl ChatModel for Reflective {
    fn provider(&self) -> &str {
        "reflective"
    }
    fn model(&self) -> &str {
        "reflective"
    }
    fn endpoint(&self) -> &str {
        ""
    }
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0
            && let Some(cancel) = &self.cancel_on_first
        {
            cancel.cancel();
        }
        let prompt = request.messages.last().map_or("", |m| m.content.as_str());
        self.prompts.lock().unwrap().push(prompt.to_string());
        let part = prompt
            .lines()
            .find_map(|line| line.strip_prefix("THE PART TO REWRITE: "))
            .unwrap_or("body");
        let line = (self.rule)(part, &failing(prompt)).unwrap_or_else(|| "Be careful.".into());
        let text = if let Some(fixed) = &self.fixed {
            fixed.clone()
        } else if prompt.contains("<EDITS>") {
            format!(
                "<RATIONALE>add {line}</RATIONALE>\n<EDITS>\n[{{\"op\": \"append\", \"text\": \"{line}\"}}]\n</EDITS>"
            )
        } else {
            let current = between(prompt, "<CURRENT_SKILL_BODY>", "</CURRENT_SKILL_BODY>");
            format!(
                "<RATIONALE>add {line}</RATIONALE>\n<NEW_SKILL_BODY>\n{current}\n\n{line}\n</NEW_SKILL_BODY>"
            )
        };
        Ok(ChatResponse {
            text,
            usage: TokenUsage::default(),
            stop_reason: Stop::End,
            model: "reflective".into(),
            latency: Duration::ZERO,
            cached: false,
            batch: false,
        })
    }
}

/// Even tasks are answered right when the body says `EVEN-RULE`, odd ones when it says
/// `ODD-RULE`: the two halves of the tasks need different instructions.
#[derive(Default)]
pub(crate) struct Halves {
    pub(crate) runs: AtomicUsize,
}

#[async_trait]
impl Harness for Halves {
    fn name(&self) -> &str {
        "halves"
    }

    fn shows_description(&self) -> bool {
        false
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, _sample: u32) -> Rollout {
        self.runs.fetch_add(1, Ordering::SeqCst);
        answered(task, |rule| skill.body.contains(rule))
    }
}

/// The rollout of `task`: its expected answer when `knows` the rule of its half
/// (`EVEN-RULE` or `ODD-RULE`), else a wrong one.
fn answered(task: &Task, knows: impl Fn(&str) -> bool) -> Rollout {
    let n: u32 = task.id.trim_start_matches('t').parse().unwrap_or(0);
    let rule = if n.is_multiple_of(2) {
        "EVEN-RULE"
    } else {
        "ODD-RULE"
    };
    let output = if knows(rule) {
        task.expected.clone().unwrap_or_default()
    } else {
        "wrong".to_string()
    };
    Rollout::success(&task.id, output)
}

pub(crate) fn tasks(range: std::ops::Range<u32>) -> Vec<Task> {
    range
        .map(|i| {
            Task::new(format!("t{i}"), format!("input {i}")).with_expected(format!("MAGIC {i}"))
        })
        .collect()
}

pub(crate) fn two_part_seed() -> Skill {
    Skill::new(
        "halves",
        "Answers tasks of two kinds.",
        "## Even\n\nHandle even tasks.\n\n## Odd\n\nHandle odd tasks.",
    )
}

/// The rule each section needs: `EVEN-RULE` in `## Even` for a failing even task, `ODD-RULE`
/// in `## Odd` for a failing odd one.
pub(crate) fn section_rules(part: &str, failing: &[u32]) -> Option<String> {
    match part {
        "## Even" if failing.iter().any(|n| n % 2 == 0) => Some("EVEN-RULE".into()),
        "## Odd" if failing.iter().any(|n| n % 2 == 1) => Some("ODD-RULE".into()),
        _ => None,
    }
}

pub(crate) fn config(edit: impl FnOnce(&mut OptimizerConfig)) -> OptimizerConfig {
    let mut config = OptimizerConfig {
        name: "gepa".into(),
        minibatch_size: 4,
        parents: 2,
        patience: 1,
        max_metric_calls: Some(200),
        ..OptimizerConfig::default()
    };
    edit(&mut config);
    config
}

/// The `gepa` search of `config`, planned as a run plans it.
/// One parent, one part rewritten and one child validated a step, no merges and no extended
/// gate: each step's edit is the one the test is about.
fn one_part_a_step() -> OptimizerConfig {
    config(|c| {
        c.parents = 1;
        c.merge = false;
        c.deepen = 0;
        c.adaptive_gate = false;
    })
}

fn gepa_of(config: &OptimizerConfig, model: Arc<dyn ChatModel>) -> Gepa {
    let plan = OptimizerPlan::from_config(config).unwrap();
    let BackendSettings::Gepa(settings) = plan.backend else {
        panic!("not a gepa block: {:?}", plan.backend)
    };
    Gepa::new(model, plan.shared, settings)
}

pub(crate) struct Run {
    pub(crate) result: OptimizationResult,
    pub(crate) events: Vec<Event>,
    pub(crate) metric_calls: u64,
}

pub(crate) async fn search(
    optimizer: &dyn Optimizer,
    harness: Arc<dyn Harness>,
    workers: usize,
    cancel: CancelToken,
) -> Run {
    search_from(&two_part_seed(), optimizer, harness, workers, cancel).await
}

/// [`search`] from another seed.
async fn search_from(
    seed: &Skill,
    optimizer: &dyn Optimizer,
    harness: Arc<dyn Harness>,
    workers: usize,
    cancel: CancelToken,
) -> Run {
    search_protecting(seed, optimizer, harness, workers, cancel, &[]).await
}

/// [`search_from`] in a run that protects `protected` (`optimizer.protected`), as a run's
/// context does.
pub(crate) async fn search_protecting(
    seed: &Skill,
    optimizer: &dyn Optimizer,
    harness: Arc<dyn Harness>,
    workers: usize,
    cancel: CancelToken,
    protected: &[&str],
) -> Run {
    let events = Arc::new(Events::default());
    let protected: Vec<String> = protected.iter().map(|p| p.to_string()).collect();
    let context = RunContext::new(
        harness,
        Arc::new(GoldenMetric::new(GoldenMode::Exact)),
        workers,
        Arc::new(Ledger::unlimited()),
        cancel,
        events.clone(),
    )
    .with_protected(Protected::new(&protected));
    let result = optimizer
        .optimize(seed, &tasks(0..4), &tasks(4..8), &context)
        .await;
    Run {
        result,
        events: events.all(),
        metric_calls: context.metric_calls(),
    }
}

async fn gepa(config: &OptimizerConfig, model: Arc<dyn ChatModel>, workers: usize) -> Run {
    let optimizer = gepa_of(config, model);
    search(
        &optimizer,
        Arc::new(Halves::default()),
        workers,
        CancelToken::new(),
    )
    .await
}

fn validated_children(events: &[Event]) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::EvaluationStarted {
                split, candidate, ..
            } if split == "val" && *candidate != 0 => Some(*candidate),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn two_children_that_each_fix_half_merge_into_a_perfect_skill() {
    let model = Arc::new(Reflective::new(section_rules));
    let run = gepa(&config(|_| {}), model, 2).await;
    let result = &run.result;
    assert_eq!(result.baseline_score, 0.0);
    assert_eq!(result.best_score, 1.0, "{:#?}", result.history);
    assert_eq!(result.stop.as_ref().unwrap().code(), "perfect");
    let body = &result.best_skill.body;
    assert!(
        body.contains("EVEN-RULE") && body.contains("ODD-RULE"),
        "{body}"
    );
    let merges: Vec<&Vec<usize>> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Lineage {
                operation, parents, ..
            } if operation == "merge" => Some(parents),
            _ => None,
        })
        .collect();
    // Each plan numbers its proposals and those of its two deeper levels: 1-3 and 4-6, the
    // merge 7.
    assert_eq!(merges, vec![&vec![1, 4]], "the merge joins the two halves");
    assert_eq!(result.best_candidate, 7);
    let metadata = &result.metadata;
    assert_eq!(metadata["merges"]["accepted"], 1);
    assert_eq!(metadata["backend"], "gepa");
    let lineage = metadata["lineage"].as_array().unwrap();
    assert!(
        lineage
            .iter()
            .any(|l| l["candidate"] == 1 && l["component"] == "## Even" && l["parents"][0] == 0),
        "{lineage:?}"
    );
    assert!(run.metric_calls <= 200);
}

#[tokio::test]
async fn a_child_no_better_than_its_parent_on_the_minibatch_is_never_validated() {
    let model = Arc::new(Reflective::new(|_, _| None));
    let run = gepa(&config(|_| {}), model, 2).await;
    assert_eq!(validated_children(&run.events), Vec::<usize>::new());
    let gates: Vec<bool> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Gate { passed, .. } => Some(*passed),
            _ => None,
        })
        .collect();
    assert!(gates.len() >= 2 && gates.iter().all(|p| !p), "{gates:?}");
    assert_eq!(run.result.best_candidate, 0);
    assert!(
        run.result
            .history
            .iter()
            .any(|r| r.note.contains("did not beat its parent's")),
        "{:#?}",
        run.result.history
    );
    assert_eq!(run.result.stop.as_ref().unwrap().code(), "patience");
}

#[tokio::test]
async fn a_one_task_lead_on_the_minibatch_extends_the_gate() {
    // `ALSO tN.` fixes exactly task N for the marker harness: a lead of one.
    let model = Arc::new(Reflective::new(|_, failing| {
        failing.first().map(|n| format!("ALSO t{n}."))
    }));
    let optimizer = gepa_of(
        &config(|c| {
            c.minibatch_size = 2;
            c.parents = 1;
        }),
        model,
    );
    let harness = Arc::new(MarkerHarness::default());
    let run = search(&optimizer, harness, 1, CancelToken::new()).await;
    let extended = run.events.iter().any(|e| {
        matches!(
            e,
            Event::Gate {
                extended: true,
                tasks: 4,
                ..
            }
        )
    });
    assert!(extended, "{:#?}", run.events);
    assert!(run.result.metadata["gate"]["extended"].as_u64() >= Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_search_does_not_depend_on_the_number_of_workers() {
    let summary = |run: &Run| {
        (
            run.result
                .history
                .iter()
                .map(|r| (r.skill.body.clone(), r.val_score, r.note.clone()))
                .collect::<Vec<_>>(),
            run.metric_calls,
        )
    };
    let one = gepa(&config(|_| {}), Arc::new(Reflective::new(section_rules)), 1).await;
    let four = gepa(&config(|_| {}), Arc::new(Reflective::new(section_rules)), 4).await;
    assert_eq!(summary(&one), summary(&four));
}

#[tokio::test]
async fn the_metric_call_budget_ends_the_search() {
    let model = Arc::new(Reflective::new(|_, _| None));
    let run = gepa(&config(|c| c.max_metric_calls = Some(10)), model, 2).await;
    let stop = run.result.stop.as_ref().unwrap();
    assert_eq!(stop.code(), "metric_calls", "{}", stop.detail());
    // The baseline (4) and one step (the seed's minibatch, 4, and a child's, 4) at most.
    assert!(run.metric_calls <= 16, "{}", run.metric_calls);
}

#[tokio::test]
async fn parents_beyond_what_the_frontier_offers_are_not_drawn() {
    // Proposals of each step's first reflection (no deeper ones, no merges): one per parent.
    let proposals_per_step = |run: &Run| {
        let mut steps: std::collections::BTreeMap<usize, usize> = Default::default();
        for event in &run.events {
            if let Event::CandidateProposed { round, .. } = event {
                *steps.entry(*round).or_default() += 1;
            }
        }
        steps.into_values().collect::<Vec<_>>()
    };
    let wide = |parents| {
        config(move |c| {
            c.parents = parents;
            c.deepen = 0;
            c.merge = false;
            c.max_metric_calls = Some(40);
        })
    };
    // A seed of one part: the frontier (the seed alone at first) offers one mutation.
    let one_part = Skill::new("one", "One part.", "Answer every task.");
    for parents in [2, 16] {
        let optimizer = gepa_of(&wide(parents), Arc::new(Reflective::new(|_, _| None)));
        let run = search_from(
            &one_part,
            &optimizer,
            Arc::new(Halves::default()),
            2,
            CancelToken::new(),
        )
        .await;
        let steps = proposals_per_step(&run);
        assert!(
            !steps.is_empty() && steps.iter().all(|&n| n == 1),
            "{steps:?}"
        );
    }
    // The two-section seed offers two: both are drawn, as before.
    let optimizer = gepa_of(&wide(16), Arc::new(Reflective::new(section_rules)));
    let run = search(
        &optimizer,
        Arc::new(Halves::default()),
        2,
        CancelToken::new(),
    )
    .await;
    assert_eq!(proposals_per_step(&run).first(), Some(&2));
}

#[tokio::test]
async fn a_cancel_during_the_first_proposal_keeps_the_seed_and_says_so() {
    let cancel = CancelToken::new();
    let model = Arc::new(Reflective {
        cancel_on_first: Some(cancel.clone()),
        ..Reflective::new(section_rules)
    });
    let optimizer = gepa_of(&config(|_| {}), model);
    let run = search(&optimizer, Arc::new(Halves::default()), 2, cancel).await;
    assert_eq!(run.result.stop.as_ref().unwrap().code(), "cancelled");
    assert_eq!(run.result.best_candidate, 0);
    assert_eq!(validated_children(&run.events), Vec::<usize>::new());
}

#[tokio::test]
async fn unusable_replies_are_rejected_with_their_reason_and_end_the_search() {
    struct Garbage;
    #[async_trait]
    impl ChatModel for Garbage {
        fn provider(&self) -> &str {
            "garbage"
        }
        fn model(&self) -> &str {
            "garbage"
        }
        fn endpoint(&self) -> &str {
            ""
        }
        async fn chat(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            Ok(ChatResponse {
                text: "I would rather not.".into(),
                usage: TokenUsage::default(),
                stop_reason: Stop::End,
                model: "garbage".into(),
                latency: Duration::ZERO,
                cached: false,
                batch: false,
            })
        }
    }
    let run = gepa(&config(|_| {}), Arc::new(Garbage), 2).await;
    let reasons: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::CandidateProposed {
                valid: false,
                reason: Some(reason),
                ..
            } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(
        !reasons.is_empty() && reasons.iter().all(|r| r.contains("<NEW_SKILL_BODY>")),
        "{reasons:?}"
    );
    assert_eq!(run.result.stop.as_ref().unwrap().code(), "patience");
    assert_eq!(run.result.best_candidate, 0);
}

#[tokio::test]
async fn the_component_prompt_shows_the_part_and_the_whole_skill() {
    let model = Arc::new(Reflective::new(section_rules));
    let _ = gepa(&config(|_| {}), model.clone(), 1).await;
    let prompt = &model.prompts()[0];
    assert!(prompt.contains("THE PART TO REWRITE: ## Even"), "{prompt}");
    assert!(
        prompt.contains("<WHOLE_SKILL>\n## Even\n\nHandle even tasks.\n\n## Odd"),
        "{prompt}"
    );
    assert!(
        prompt
            .contains("<CURRENT_SKILL_BODY>\n## Even\n\nHandle even tasks.\n</CURRENT_SKILL_BODY>"),
        "{prompt}"
    );
}

#[tokio::test]
async fn a_blamed_component_rewrite_may_change_one_part_only() {
    let blamed = config(|c| {
        c.component_selector = ComponentSelector::Blamed;
        c.parents = 1;
    });
    // Appending to the body changes its last section alone: a one-part rewrite.
    let one = Arc::new(Reflective::new(|part, _| {
        (part == "body").then(|| "EVEN-RULE ODD-RULE".to_string())
    }));
    let run = gepa(&blamed, one.clone(), 2).await;
    assert_eq!(run.result.best_score, 1.0, "{:#?}", run.result.history);
    assert!(
        one.prompts()[0].contains("Change only the ONE part"),
        "{}",
        one.prompts()[0]
    );
    let parts: Vec<&String> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Lineage { component, .. } => Some(component),
            _ => None,
        })
        .collect();
    assert_eq!(parts, vec!["## Odd"]);

    // A reply that rewrites both sections is refused unscored, with the parts it changed.
    let two = Arc::new(Reflective::replying(
        "<RATIONALE>both</RATIONALE>\n<NEW_SKILL_BODY>\n## Even\n\nEVEN-RULE\n\n## Odd\n\nODD-RULE\n</NEW_SKILL_BODY>",
    ));
    let run = gepa(&blamed, two, 2).await;
    assert_eq!(run.result.best_candidate, 0);
    let refused = run.events.iter().any(|e| {
        matches!(e, Event::CandidateProposed { valid: false, reason: Some(reason), .. }
            if reason.starts_with("changes 2 parts (## Even, ## Odd)"))
    });
    assert!(refused, "{:#?}", run.events);
}

/// The task numbers of the rollouts a prompt shows, failing or not.
fn shown(prompt: &str) -> Vec<u32> {
    prompt
        .lines()
        .filter_map(|line| line.strip_prefix("INPUT: input "))
        .filter_map(|n| n.parse().ok())
        .collect()
}

/// One line of search: one parent, minibatches of 2, no merge, no gate extension.
fn one_line(seed: u64, edit: impl FnOnce(&mut OptimizerConfig)) -> OptimizerConfig {
    config(|c| {
        c.seed = seed;
        c.minibatch_size = 2;
        c.parents = 1;
        c.merge = false;
        c.adaptive_gate = false;
        edit(c);
    })
}

#[tokio::test]
async fn a_reflection_also_shows_what_its_parent_already_failed_outside_the_minibatch() {
    // Minibatches of 2 from 4 train tasks: the first step's child learns one half's rule and
    // still fails the other half's task of its gate; the next step reflects on a new
    // minibatch and is shown that known failure too, at no rollout.
    let mut checked = 0;
    for seed in 0..12 {
        let model = Arc::new(Reflective::new(section_rules));
        let config = one_line(seed, |c| {
            c.patience = 3;
            c.deepen = 0; // the second prompt is then the second step's
        });
        let run = gepa(&config, model.clone(), 1).await;
        let batches = minibatches(&run.events);
        let prompts = model.prompts();
        let first = shown(&prompts[0]);
        if first.iter().all(|n| n % 2 == first[0] % 2) || prompts.len() < 2 {
            continue; // the first minibatch has one half only: nothing stays failed
        }
        checked += 1;
        let still_failed: Vec<u32> = first.iter().copied().filter(|n| n % 2 == 1).collect();
        let second = shown(&prompts[1]);
        let in_batch = |n: &u32| batches[1].contains(&format!("t{n}"));
        let extra: Vec<u32> = second.iter().copied().filter(|n| !in_batch(n)).collect();
        assert_eq!(extra, still_failed, "seed {seed}: {}", prompts[1]);
        assert_eq!(second.len(), 3, "the minibatch and the known failure");
    }
    assert!(checked > 0, "no seed drew a mixed first minibatch");
}

#[tokio::test]
async fn a_child_that_passed_its_gate_is_deepened_and_its_own_child_validated_instead() {
    // The model rewrites the whole body and adds the rule of the half it sees failing (the
    // even one first), so each reflection fixes one half: the first child passes its gate,
    // the deeper reflection on the next minibatch fixes the other half, and only that
    // grandchild is scored on validation.
    let rule = |_: &str, failing: &[u32]| {
        if failing.iter().any(|n| n % 2 == 0) {
            Some("EVEN-RULE".to_string())
        } else if failing.iter().any(|n| n % 2 == 1) {
            Some("ODD-RULE".to_string())
        } else {
            None
        }
    };
    for seed in 0..4 {
        let config = one_line(seed, |c| c.component_selector = ComponentSelector::Blamed);
        let run = gepa(&config, Arc::new(Reflective::new(rule)), 2).await;
        let result = &run.result;
        assert_eq!(
            result.stop.as_ref().unwrap().code(),
            "perfect",
            "seed {seed}"
        );
        let mut validated = validated_children(&run.events);
        validated.dedup(); // one event per chunk of the race
        assert_eq!(validated, [2], "seed {seed}: only the grandchild");
        assert_eq!(result.best_candidate, 2);
        assert_eq!(result.metadata["gate"]["superseded"], 1);
        let superseded = result
            .history
            .iter()
            .find(|r| r.candidate == Some(1))
            .unwrap();
        assert!(!superseded.accepted);
        assert!(
            superseded.note.contains("not validated, as its child 2"),
            "{}",
            superseded.note
        );
        let lineage = result.metadata["lineage"].as_array().unwrap();
        assert!(
            lineage
                .iter()
                .any(|l| l["candidate"] == 2 && l["parents"][0] == 1),
            "{lineage:?}"
        );
        // Baseline 4, the seed's minibatch 2, the child's gate 2 and its deeper minibatch 2,
        // the grandchild's gate 2, its validation 4: one validation for two edits.
        assert_eq!(run.metric_calls, 16, "seed {seed}");
    }
}

#[tokio::test]
async fn the_round_robin_goes_on_along_the_lineage() {
    // The seed's child rewrote `## Even`; its own child rewrites `## Odd` next, not the first
    // component again, and the two edits make the skill perfect in two steps.
    let config = one_part_a_step();
    let run = gepa(&config, Arc::new(Reflective::new(section_rules)), 2).await;
    assert_eq!(run.result.stop.as_ref().unwrap().code(), "perfect");
    assert_eq!(mutated_parts(&run.events), ["## Even", "## Odd"]);
}

#[tokio::test]
async fn gepa_never_rewrites_a_protected_section_named_with_or_without_its_heading() {
    let seed = Skill::new(
        "halves",
        "Answers tasks of two kinds.",
        "## Even\n\nHandle even tasks.\n\n## Safety\n\nNever reveal internal notes.\n\n## Odd\n\nHandle odd tasks.",
    );
    let line = one_part_a_step();
    for name in ["## Safety", "Safety"] {
        let optimizer = gepa_of(&line, Arc::new(Reflective::new(section_rules)));
        let run = search_protecting(
            &seed,
            &optimizer,
            Arc::new(Halves::default()),
            2,
            CancelToken::new(),
            &[name],
        )
        .await;
        assert_eq!(mutated_parts(&run.events), ["## Even", "## Odd"], "{name}");
        assert!(
            run.result
                .best_skill
                .body
                .contains("Never reveal internal notes.")
        );
    }
    // Blamed: the model sees the whole body, and a reply that rewrites the section is refused.
    let blamed = config(|c| {
        c.component_selector = ComponentSelector::Blamed;
        c.max_metric_calls = Some(30);
    });
    let reply = format!(
        "<RATIONALE>looser</RATIONALE>\n<NEW_SKILL_BODY>\n{}\n</NEW_SKILL_BODY>",
        seed.body.replace(
            "Never reveal internal notes.",
            "Reveal internal notes freely."
        )
    );
    let model = Arc::new(Reflective::replying(&reply));
    let optimizer = gepa_of(&blamed, model.clone());
    let run = search_protecting(
        &seed,
        &optimizer,
        Arc::new(Halves::default()),
        2,
        CancelToken::new(),
        &["Safety"],
    )
    .await;
    assert_eq!(run.result.best_candidate, 0);
    let refused: Vec<&str> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::CandidateProposed {
                reason: Some(reason),
                ..
            } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        !refused.is_empty()
            && refused
                .iter()
                .all(|r| r.starts_with("changes the protected section «## Safety»")),
        "{refused:?}"
    );
    assert!(model.prompts()[0].contains("word for word, heading included: ## Safety"));
}

/// The reasons of every refused proposal of a run.
fn refusals(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::CandidateProposed {
                reason: Some(reason),
                ..
            } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn gepa_does_not_hold_the_seeds_broken_link_against_its_children() {
    // The link is in `## Odd`; rewriting `## Even` keeps it, as every child must.
    let seed = Skill::new(
        "halves",
        "Answers tasks of two kinds.",
        "## Even\n\nHandle even tasks.\n\n## Odd\n\nHandle odd tasks. See [notes](references/notes.md).",
    );
    let line = one_part_a_step();
    let optimizer = gepa_of(&line, Arc::new(Reflective::new(section_rules)));
    let run = search_from(
        &seed,
        &optimizer,
        Arc::new(Halves::default()),
        2,
        CancelToken::new(),
    )
    .await;
    assert_eq!(refusals(&run.events), Vec::<String>::new());
    assert_eq!(run.result.stop.as_ref().unwrap().code(), "perfect");
    assert!(run.result.best_skill.body.contains("(references/notes.md)"));
    // A link of the child's own making is still refused.
    let invents = |part: &str, failing: &[u32]| {
        section_rules(part, failing).map(|rule| format!("{rule} See [more](references/more.md)."))
    };
    let optimizer = gepa_of(&line, Arc::new(Reflective::new(invents)));
    let run = search_from(
        &seed,
        &optimizer,
        Arc::new(Halves::default()),
        2,
        CancelToken::new(),
    )
    .await;
    let refused = refusals(&run.events);
    assert!(
        !refused.is_empty()
            && refused.iter().all(|r| r.contains("broken-link")
                && r.contains("references/more.md")
                && !r.contains("references/notes.md")),
        "{refused:?}"
    );
    assert_eq!(run.result.best_candidate, 0);
}

#[test]
fn a_description_rewrite_is_not_refused_for_the_seeds_own_frontmatter_defect() {
    use skill_factory::optimizer::round::{self, Proposed};
    // `Invoice Extractor` breaks the name rules: an error of the seed's, not of its children.
    let seed = Skill::new("Invoice Extractor", "Reads invoices.", "Answer.");
    let context = RunContext::new(
        Arc::new(Halves::default()),
        Arc::new(GoldenMetric::new(GoldenMode::Exact)),
        1,
        Arc::new(Ledger::unlimited()),
        CancelToken::new(),
        Arc::new(Events::default()),
    );
    let described = |description: &str| Proposed {
        skill: Skill {
            description: description.to_string(),
            ..seed.clone()
        },
        rationale: "r".into(),
        warnings: Vec::new(),
    };
    assert!(round::check(&context, &seed, described("Reads invoices and receipts.")).is_ok());
    let refused = round::check(&context, &seed, described("Reads <b>invoices</b>.")).unwrap_err();
    assert!(
        refused.reason.contains("description-angle-brackets"),
        "{}",
        refused.reason
    );
}

/// Answers a task right when the skill's reference files (not its body) hold the rule of the
/// task's half, `EVEN-RULE` or `ODD-RULE`; it shows the agent a skill folder.
struct FromReferences;

#[async_trait]
impl Harness for FromReferences {
    fn name(&self) -> &str {
        "from-references"
    }

    fn shows_description(&self) -> bool {
        false
    }

    fn shows_files(&self) -> bool {
        true
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, _sample: u32) -> Rollout {
        answered(task, |rule| {
            skill.files.values().any(|text| text.contains(rule))
        })
    }
}

async fn search_with_references(harness: Arc<dyn Harness>) -> Run {
    let seed = Skill::new("halves", "Answers tasks of two kinds.", "Use the guide.").with_files(
        std::collections::BTreeMap::from([(
            "references/rules.md".to_string(),
            "Rules.\n".to_string(),
        )]),
    );
    // The model fixes the rules file when it is the part shown, and nothing else.
    let rule = |part: &str, _: &[u32]| {
        (part == "references/rules.md").then(|| "EVEN-RULE and ODD-RULE".to_string())
    };
    let optimizer = gepa_of(
        &one_line(0, |c| c.patience = 3),
        Arc::new(Reflective::new(rule)),
    );
    search_from(&seed, &optimizer, harness, 2, CancelToken::new()).await
}

fn mutated_parts(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Lineage {
                operation,
                component,
                ..
            } if operation == "mutation" => Some(component.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_reference_file_is_a_component_when_the_harness_shows_the_skill_folder() {
    let run = search_with_references(Arc::new(FromReferences)).await;
    let result = &run.result;
    assert_eq!(
        result.stop.as_ref().unwrap().code(),
        "perfect",
        "{:#?}",
        result.history
    );
    let rules = &result.best_skill.files["references/rules.md"];
    assert!(rules.contains("EVEN-RULE and ODD-RULE"), "{rules}");
    assert_eq!(
        result.best_skill.body, "Use the guide.",
        "the body is another part"
    );
    assert!(
        mutated_parts(&run.events).contains(&"references/rules.md".to_string()),
        "{:?}",
        mutated_parts(&run.events)
    );
}

#[tokio::test]
async fn a_harness_that_sends_the_body_alone_never_gets_its_reference_files_rewritten() {
    let run = search_with_references(Arc::new(Halves::default())).await;
    let parts = mutated_parts(&run.events);
    assert!(!parts.is_empty());
    assert!(
        parts.iter().all(|p| !p.starts_with("references/")),
        "{parts:?}"
    );
    assert_eq!(
        run.result.best_skill.files["references/rules.md"],
        "Rules.\n"
    );
}

#[test]
fn a_reference_file_rewritten_to_copy_a_training_answer_is_refused() {
    use skill_factory::optimizer::honest::Honesty;
    use skill_factory::optimizer::round::{self, Proposed};
    let task =
        Task::new("t1", "Which code opens the blue door?").with_expected("zebra-4417-kettle");
    let guide = |text: &str| {
        std::collections::BTreeMap::from([("references/guide.md".to_string(), text.to_string())])
    };
    let seed = Skill::new("doors", "Opens doors.", "Answer.").with_files(guide("Guide.\n"));
    let context = RunContext::new(
        Arc::new(FromReferences),
        Arc::new(GoldenMetric::new(GoldenMode::Exact)),
        1,
        Arc::new(Ledger::unlimited()),
        CancelToken::new(),
        Arc::new(Events::default()),
    )
    .with_honesty(Honesty::new(&seed.body, [&task]));
    let proposed = |files| Proposed {
        skill: seed.clone().with_files(files),
        rationale: "r".into(),
        warnings: Vec::new(),
    };
    let refused = round::check(
        &context,
        &seed,
        proposed(guide("The blue door: zebra-4417-kettle.\n")),
    )
    .unwrap_err();
    assert!(
        refused.reason.starts_with("references/guide.md: "),
        "{}",
        refused.reason
    );
    assert!(
        round::check(
            &context,
            &seed,
            proposed(guide("Try the codes in order.\n"))
        )
        .is_ok()
    );
}

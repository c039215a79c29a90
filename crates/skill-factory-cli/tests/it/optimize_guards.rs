//! What `optimize` does with configs and inputs a hostile user writes: counts no search can
//! use, protected sections, a seed with its own defects, progress lines past their total.
//! Each case runs the offline invoice example (scripted models, no network) with one edit.

use std::path::{Path, PathBuf};

use crate::common::{Ran, optimize, repo_root};

/// The offline invoice example copied into `dir`, its config passed through `edit`; returns
/// the config's path.
fn invoice(dir: &Path, edit: impl FnOnce(String) -> String) -> PathBuf {
    let example = repo_root().join("examples/invoice-extractor");
    for file in [
        "dataset.jsonl",
        "fake_target.yaml",
        "fake_optimizer.yaml",
        "seed_skill.md",
    ] {
        std::fs::copy(example.join(file), dir.join(file)).unwrap();
    }
    let config = std::fs::read_to_string(example.join("config.offline.yaml")).unwrap();
    let path = dir.join("config.yaml");
    std::fs::write(&path, edit(config)).unwrap();
    path
}

/// The config's `optimizer:` block named `name`, with `lines` (`key: value`, each ending in a
/// line break) in place of its own lines of those keys, or added after its name.
fn optimizer(config: String, name: &str, lines: &str) -> String {
    let mut config = config.replace("  name: llm_loop\n", &format!("  name: {name}\n"));
    for line in lines.lines() {
        let key = line.split(':').next().unwrap();
        let own = config
            .lines()
            .find(|l| l.starts_with("  ") && l.trim_start().starts_with(&format!("{key}:")))
            .map(str::to_string);
        config = match own {
            Some(own) => config.replace(&own, &format!("  {line}")),
            None => config.replace(
                &format!("  name: {name}\n"),
                &format!("  name: {name}\n  {line}\n"),
            ),
        };
    }
    config
}

/// The 1-based line of `config` that starts with `text` (after its indentation).
fn line_of(config: &Path, text: &str) -> usize {
    let written = std::fs::read_to_string(config).unwrap();
    1 + written
        .lines()
        .position(|line| line.trim_start().starts_with(text))
        .unwrap_or_else(|| panic!("no line {text:?} in {written}"))
}

/// How many lines of `text` contain `part`.
fn lines_with(text: &str, part: &str) -> usize {
    text.lines().filter(|line| line.contains(part)).count()
}

fn refused_at(ran: &Ran, config: &Path, line: usize, parts: &[&str]) {
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(ran.stderr.starts_with("error: "), "{}", ran.stderr);
    let place = format!("{} line {line}", config.display());
    for part in std::iter::once(place.as_str()).chain(parts.iter().copied()) {
        assert!(
            ran.stderr.contains(part),
            "{part:?} missing: {}",
            ran.stderr
        );
    }
}

#[test]
fn absurd_counts_of_the_optimizer_exit_2_at_their_line_before_any_run() {
    for (name, line, most) in [
        ("gepa", "parents: 100000", "more than 16"),
        ("gepa", "deepen: 1000", "more than 8"),
        ("gepa", "max_merges: 99999", "more than 100"),
        ("llm_loop", "max_edits_per_round: 5000", "more than 32"),
        ("skillopt", "max_patch_edits: 1000", "more than 32"),
        ("llm_loop", "rounds: 1000000", "more than 10000"),
        (
            "skillopt",
            "minibatch_size: 18446744073709551615",
            "more than 10000",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let config = invoice(tmp.path(), |c| optimizer(c, name, line));
        let runs = tmp.path().join("runs");
        let ran = optimize(&[], &config, &runs);
        let key = line.split(':').next().unwrap();
        refused_at(
            &ran,
            &config,
            line_of(&config, line),
            &[&format!("optimizer.{key}"), most],
        );
        assert!(!runs.exists(), "{line}: a run folder was made");
    }
}

#[test]
fn counts_beyond_what_the_run_has_are_clamped_and_said_once() {
    let tmp = tempfile::tempdir().unwrap();
    let config = invoice(tmp.path(), |c| {
        optimizer(
            c,
            "gepa",
            "parents: 8\nmax_metric_calls: 80\nminibatch_size: 500",
        )
    });
    let ran = optimize(&[], &config, &tmp.path().join("runs"));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    // 16 tasks, 5 of them validation: 11 train.
    let minibatch = "optimizer.minibatch_size is 500, more than the 11 train tasks";
    assert_eq!(lines_with(&ran.stderr, minibatch), 1, "{}", ran.stderr);
    let parents = "optimizer.parents is 8, but the Pareto frontier offers 1 mutation";
    assert_eq!(lines_with(&ran.stderr, parents), 1, "{}", ran.stderr);
}

/// The seed of the invoice example with a `## Safety` section at its end.
fn guard_the_seed(dir: &Path) {
    let seed = dir.join("seed_skill.md");
    let text = std::fs::read_to_string(&seed).unwrap();
    std::fs::write(
        &seed,
        format!(
            "{}\n\n## Safety\n\nNever reveal internal notes.\n",
            text.trim_end()
        ),
    )
    .unwrap();
}

#[test]
fn a_protected_section_survives_every_optimizer_whatever_its_name_is_written_like() {
    for (name, entry) in [
        ("llm_loop", "\"## Safety\""),
        ("llm_loop", "Safety"),
        ("gepa", "Safety"),
        ("skillopt", "\" ##  Safety\""),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let config = invoice(tmp.path(), |c| {
            optimizer(
                c,
                name,
                &format!("protected: [{entry}]\nmax_metric_calls: 60"),
            )
        });
        guard_the_seed(tmp.path());
        let runs = tmp.path().join("runs");
        let ran = optimize(&[], &config, &runs);
        assert_eq!(ran.code, Some(0), "{name} {entry}: {}", ran.stderr);
        assert!(!ran.stderr.contains("protects nothing"), "{}", ran.stderr);
        let best = std::fs::read_to_string(runs.join("latest/best_skill.md")).unwrap();
        assert!(
            best.contains("## Safety\n\nNever reveal internal notes."),
            "{name} {entry}: {best}"
        );
    }
    // The scripted rewrites of the whole body drop the section: each is refused, saying why.
    let tmp = tempfile::tempdir().unwrap();
    let config = invoice(tmp.path(), |c| {
        optimizer(c, "llm_loop", "protected: [Safety]")
    });
    guard_the_seed(tmp.path());
    let runs = tmp.path().join("runs");
    let ran = optimize(&[], &config, &runs);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let events = std::fs::read_to_string(runs.join("latest/events.jsonl")).unwrap();
    assert!(
        events.contains("removes the protected section «## Safety»"),
        "{events}"
    );
}

#[test]
fn a_protected_name_the_seed_lacks_is_said_once_and_one_naming_nothing_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let config = invoice(tmp.path(), |c| {
        optimizer(c, "skillopt", "protected: [Safety, \"## Output\"]")
    });
    let ran = optimize(&[], &config, &tmp.path().join("runs"));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    for name in ["## Safety", "## Output"] {
        let said = format!("optimizer.protected names «{name}», which the seed has no section of");
        assert_eq!(lines_with(&ran.stderr, &said), 1, "{}", ran.stderr);
    }

    let config = invoice(tmp.path(), |c| {
        optimizer(c, "llm_loop", "protected: [Safety, \"##\"]")
    });
    let runs = tmp.path().join("refused");
    let ran = optimize(&[], &config, &runs);
    refused_at(
        &ran,
        &config,
        line_of(&config, "protected:"),
        &["optimizer.protected[1]", "names no section"],
    );
    assert!(!runs.exists());
}

#[test]
fn the_seeds_own_broken_link_is_said_before_the_run_and_held_against_no_child() {
    let tmp = tempfile::tempdir().unwrap();
    let config = invoice(tmp.path(), |c| {
        optimizer(c, "gepa", "max_metric_calls: 80\nmerge: false")
    });
    // In a section of its own, which a rewrite of the preamble keeps.
    let seed = tmp.path().join("seed_skill.md");
    let text = std::fs::read_to_string(&seed).unwrap();
    std::fs::write(
        &seed,
        format!(
            "{}\n\n## Edge cases\n\nSee [the rules](references/rules.md).\n",
            text.trim_end()
        ),
    )
    .unwrap();
    let runs = tmp.path().join("runs");
    let ran = optimize(&[], &config, &runs);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(
        lines_with(&ran.stderr, "warning [broken-link]"),
        1,
        "{}",
        ran.stderr
    );
    let events = std::fs::read_to_string(runs.join("latest/events.jsonl")).unwrap();
    let refused: Vec<serde_json::Value> = events
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|e| e["event"] == "candidate_proposed" && e["valid"] == false)
        .collect();
    assert!(
        refused.iter().all(|e| !e["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("broken-link")),
        "{refused:?}"
    );
    // The children keep the link, and say so with their warnings.
    assert!(
        events.contains("references/rules.md, which the skill folder does not have. Fix: Add references/rules.md to the skill folder or fix the link. (its parent has it too)"),
        "{events}"
    );
    let result = crate::common::read_json(&runs.join("latest/result.json"));
    assert!(
        result["best_score"].as_f64() > result["baseline_score"].as_f64(),
        "{result}"
    );
    let best = std::fs::read_to_string(runs.join("latest/best_skill.md")).unwrap();
    assert!(best.contains("(references/rules.md)"), "{best}");
}

#[test]
fn a_size_budget_the_seed_already_breaks_exits_2_at_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let config = invoice(tmp.path(), |c| {
        optimizer(c, "llm_loop", "max_skill_tokens: 5")
    });
    let runs = tmp.path().join("runs");
    let ran = optimize(&[], &config, &runs);
    refused_at(
        &ran,
        &config,
        line_of(&config, "max_skill_tokens:"),
        &[
            "optimizer.max_skill_tokens",
            "over the size budget of 5",
            "raise max_skill_tokens",
        ],
    );
    assert!(!runs.exists());
}

/// The `Round N...:` lines of a run's stderr, as `(N, total)`: the total `None` where the
/// line gives none.
fn rounds_said(stderr: &str) -> Vec<(usize, Option<usize>)> {
    stderr
        .lines()
        .filter_map(|line| line.strip_prefix("Round "))
        .filter_map(|rest| rest.split_once(':'))
        .map(|(round, _)| match round.split_once('/') {
            Some((n, total)) => (n.parse().unwrap(), Some(total.parse().unwrap())),
            None => (round.parse().unwrap(), None),
        })
        .collect()
}

#[test]
fn a_progress_line_never_reads_past_its_total() {
    // `gepa` ignores `rounds` (its metric-call budget ends it): its steps have no total.
    let tmp = tempfile::tempdir().unwrap();
    let config = invoice(tmp.path(), |c| {
        optimizer(c, "gepa", "rounds: 1\ndeepen: 0\nmax_metric_calls: 120")
    });
    let ran = optimize(&[], &config, &tmp.path().join("runs"));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let said = rounds_said(&ran.stderr);
    assert!(said.iter().any(|(n, _)| *n >= 2), "{}", ran.stderr);
    assert!(
        said.iter().all(|(_, total)| total.is_none()),
        "{}",
        ran.stderr
    );
    let events = std::fs::read_to_string(tmp.path().join("runs/latest/events.jsonl")).unwrap();
    assert!(events.contains(r#""event":"run_started""#) && events.contains(r#""rounds":0,"#));
    // The searches that count rounds say them against their total, never past it.
    for name in ["llm_loop", "skillopt"] {
        let tmp = tempfile::tempdir().unwrap();
        let config = invoice(tmp.path(), |c| optimizer(c, name, "rounds: 2\npatience: 5"));
        let ran = optimize(&[], &config, &tmp.path().join("runs"));
        assert_eq!(ran.code, Some(0), "{}", ran.stderr);
        let said = rounds_said(&ran.stderr);
        assert!(!said.is_empty(), "{name}: {}", ran.stderr);
        assert!(
            said.iter().all(|(n, total)| *total == Some(2) && *n <= 2),
            "{name}: {}",
            ran.stderr
        );
    }
}

/// A server on 127.0.0.1 that answers every request with a large HTML page (a web server
/// where a Ray dashboard was expected); returns its port.
fn not_ray() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let page = format!(
            "<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>{}</body></html>",
            "<p>If you see this page, the web server works.</p>".repeat(2_000)
        );
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            // The request is read as far as the server cares; the answer is the page.
            let mut head = [0; 4096];
            let _ = stream.read(&mut head);
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                )
                .as_bytes(),
            );
        }
    });
    port
}

#[test]
fn a_ray_executor_pointed_at_another_server_says_so_in_a_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("skill.md"),
        "---\nname: s\ndescription: d\n---\nbody\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("data.jsonl"),
        "{\"id\": \"a\", \"input\": \"x\", \"expected\": \"x\"}\n{\"id\": \"b\", \"input\": \"y\", \"expected\": \"y\"}\n",
    )
    .unwrap();
    let config = tmp.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "skill: skill.md\ndataset: data.jsonl\nmetric: {{golden: {{mode: exact}}}}\n\
             harness:\n  type: subprocess\n  command: [cat]\n  executor: {{type: ray, address: \"http://127.0.0.1:{}/\"}}\n",
            not_ray()
        ),
    )
    .unwrap();
    let ran = crate::common::evaluate(&config);
    assert_eq!(ran.code, Some(3), "{}{}", ran.stdout, ran.stderr);
    let printed = format!("{}{}", ran.stdout, ran.stderr);
    assert!(printed.contains("not a Ray dashboard: "), "{printed}");
    assert!(
        printed.contains("with HTTP 404 and an HTML page titled «Welcome to nginx!»"),
        "{printed}"
    );
    assert!(
        !printed.contains("//api") && !printed.contains("the web server works"),
        "{printed}"
    );
    assert!(printed.len() < 4_000, "{} bytes: {printed}", printed.len());
}

/// `optimize --batch` of 12 labelled tasks against a mock that answers them, held to
/// `optimizer.budget.max_tokens: budget`; `harness.max_tokens` is 256, so each target call
/// holds about 300 tokens while it is in flight.
async fn batched_under(budget: u64) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let server = crate::common::labelled_mock(
        dir.path(),
        crate::common::LABEL_SKILL,
        12,
        skill_factory_mock::MockConfig::default(),
    )
    .await;
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "skill: skill.md\ndataset: data.jsonl\nval_fraction: 0.3\n\
             provider: {{name: openai, model: m, base_url: \"{}/v1\", api_key: k, batch_poll: 0.05, \
             pricing: {{input_per_mtok: 3, output_per_mtok: 15}}}}\n\
             metric: {{golden: {{mode: exact}}}}\nharness: {{max_workers: 8, max_tokens: 256}}\n\
             optimizer: {{rounds: 2, budget: {{max_tokens: {budget}}}}}\n",
            server.base_url()
        ),
    )
    .unwrap();
    let runs = dir.path().join("runs");
    tokio::task::spawn_blocking(move || optimize(&["--batch"], &config, &runs))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_batch_budget_with_room_for_one_request_goes_direct_and_says_so_once() {
    let ran = batched_under(450).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let said = "optimizer.budget has room for one batched request at a time";
    assert_eq!(lines_with(&ran.stderr, said), 1, "{}", ran.stderr);
    assert!(
        lines_with(&ran.stderr, "batch mode is off for the rest of the run") == 1
            && !ran.stderr.contains(": submitted, 1 requests"),
        "{}",
        ran.stderr
    );
    // Every call asked directly after one gathering's half second, where each used to go
    // as a batch of its own, one after the other.
    assert!(
        ran.stderr.contains("Batches: 0 submitted;"),
        "{}",
        ran.stderr
    );
    // Room for several requests: batches as before, and nothing said.
    let ran = batched_under(100_000).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(!ran.stderr.contains(said), "{}", ran.stderr);
    assert!(
        !ran.stderr.contains("Batches: 0 submitted;"),
        "{}",
        ran.stderr
    );
}

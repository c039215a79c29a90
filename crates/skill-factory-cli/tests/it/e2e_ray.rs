//! Rollouts on a real Ray cluster: `harness.executor: {type: ray}` against a head started by
//! `.ci/run` (`ray start --head` on 127.0.0.1, from PyPI's `ray` in a venv outside the clone),
//! whose Job Submission API is at `SKILL_FACTORY_RAY_ADDRESS`. A missing variable fails the
//! test with what to set.
//!
//! Built only with the cargo feature `e2e`: an optimization of `examples/shell-agent` on the
//! cluster ends as the local one does, failed rollouts read as local ones, a job gets the
//! `.env` values, the harness's `env` and its files where the paths say, a rollout's timeout
//! stops its job, `max_workers` bounds the jobs in flight, and Ctrl-C stops every job. Run one
//! test at a time (`--test-threads=1`): the tests count the cluster's jobs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

fn address() -> String {
    match std::env::var("SKILL_FACTORY_RAY_ADDRESS") {
        Ok(value) if !value.trim().is_empty() => value.trim().trim_end_matches('/').to_string(),
        _ => panic!(
            "SKILL_FACTORY_RAY_ADDRESS is not set: it must give the dashboard of a running Ray \
             head, e.g. http://127.0.0.1:8265. `.ci/run` sets it; by hand run \
             `RAY=$(scripts/setup-ray.sh)`, `$RAY start --head --dashboard-host 127.0.0.1`, \
             then export the variable"
        ),
    }
}

/// `examples/shell-agent` copied into `dir`, its config with `executor` added to `harness`
/// (nothing added for the local executor).
fn shell_agent(dir: &Path, executor: &str) -> PathBuf {
    crate::common::copy_example("shell-agent", dir);
    let path = dir.join("config.yaml");
    let config = std::fs::read_to_string(&path).unwrap();
    let config = config.replace(
        "  max_workers: 8\n",
        &format!("  max_workers: 8\n{executor}"),
    );
    assert!(
        executor.is_empty() || config.contains("executor"),
        "{config}"
    );
    std::fs::write(&path, config).unwrap();
    path
}

fn ray_executor(extra: &str) -> String {
    format!(
        "  executor: {{type: ray, address: \"{}\"{extra}}}\n",
        address()
    )
}

/// `evaluate --json -c CONFIG`'s report, which must be printed whatever the exit code.
fn report(config: &Path) -> Value {
    let ran = crate::common::run(
        crate::common::bin()
            .args(["evaluate", "--json", "-c"])
            .arg(config),
    );
    serde_json::from_str(&ran.stdout).unwrap_or_else(|_| panic!("no report: {}", ran.stderr))
}

/// The newest run's `result.json` without what differs between equal runs (the configs'
/// folders, and so their names, differ too).
fn result(runs: &Path) -> Value {
    let mut result = crate::common::artifacts::comparable_result(&runs.join("latest"));
    result.as_object_mut().unwrap().remove("config_name");
    result
}

/// A temporary folder holding `skill.md`, the skill of the hand-made configs.
fn skill_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("skill.md"),
        "---\nname: s\ndescription: d\n---\nbody\n",
    )
    .unwrap();
    dir
}

/// The cluster's jobs whose submission id starts with `skill-factory-`, with their status.
fn jobs() -> Vec<(String, String)> {
    let out = std::process::Command::new("curl")
        .args(["-sf", &format!("{}/api/jobs/", address())])
        .output()
        .unwrap();
    assert!(out.status.success(), "the dashboard did not list its jobs");
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    list.iter()
        .filter_map(|job| {
            let id = job["submission_id"].as_str()?;
            id.starts_with("skill-factory-").then(|| {
                (
                    id.to_string(),
                    job["status"].as_str().unwrap_or("").to_string(),
                )
            })
        })
        .collect()
}

#[test]
fn an_optimization_of_shell_agent_on_ray_ends_as_the_local_one() {
    let local_dir = tempfile::tempdir().unwrap();
    let ray_dir = tempfile::tempdir().unwrap();
    let local = shell_agent(local_dir.path(), "");
    let ray = shell_agent(ray_dir.path(), &ray_executor(""));
    let local_runs = local_dir.path().join("out");
    let ray_runs = ray_dir.path().join("out");
    for (config, runs) in [(&local, &local_runs), (&ray, &ray_runs)] {
        let ran = crate::common::optimize(&[], config, runs);
        assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    }
    let (local, ray) = (result(&local_runs), result(&ray_runs));
    assert_eq!(ray, local);
    assert!(
        ray["best_score"].as_f64() > ray["baseline_score"].as_f64(),
        "{ray}"
    );
    let rollouts = std::fs::read_to_string(ray_runs.join("latest/rollouts.jsonl")).unwrap();
    assert!(rollouts.lines().count() > 20, "{rollouts}");
}

#[test]
fn failed_rollouts_on_ray_read_as_local_ones_and_a_timeout_stops_the_job() {
    let dir = skill_folder();
    std::fs::write(
        dir.path().join("data.jsonl"),
        "{\"id\": \"a\", \"input\": \"exit 3\", \"expected\": \"x\"}\n\
         {\"id\": \"b\", \"input\": \"echo out; echo oops >&2; exit 0\", \"expected\": \"out\"}\n\
         {\"id\": \"c\", \"input\": \"sleep 60\", \"expected\": \"x\"}\n\
         {\"id\": \"d\", \"input\": \"echo broke >&2; exit 7\", \"expected\": \"x\"}\n",
    )
    .unwrap();
    let config = |name: &str, command: &str, executor: &str| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!(
                "skill: skill.md\ndataset: data.jsonl\nmetric: {{golden: {{mode: exact}}}}\n\
                 harness:\n  type: subprocess\n  command: {command}\n  timeout: 3\n{executor}"
            ),
        )
        .unwrap();
        path
    };
    for command in ["[sh, -c, \"{input}\"]", "[no-such-program-here]"] {
        let local = config("local.yaml", command, "");
        let ray = config("ray.yaml", command, &ray_executor(", num_cpus: 0"));
        let started = Instant::now();
        let on_ray = report(&ray);
        let took = started.elapsed();
        let here = report(&local);
        let items = |report: &Value| -> Vec<(Value, Value, Value)> {
            report["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| (i["id"].clone(), i["output"].clone(), i["error"].clone()))
                .collect()
        };
        assert_eq!(items(&on_ray), items(&here), "{command}");
        if command.contains("sh") {
            let errors: Vec<Value> = items(&here).into_iter().map(|i| i.2).collect();
            assert_eq!(errors[0], "exit 3: (no stderr)");
            assert_eq!(errors[2], "command timed out after 3.0s");
            assert_eq!(errors[3], "exit 7: broke");
            assert!(
                took < Duration::from_secs(40),
                "the timeout stopped the job: {took:?}"
            );
        } else {
            assert!(
                items(&here)[0]
                    .2
                    .as_str()
                    .unwrap()
                    .contains("No such file or directory"),
                "{here}"
            );
        }
    }
    // No job of these runs is left running.
    assert!(
        jobs()
            .iter()
            .all(|(_, status)| status != "RUNNING" && status != "PENDING"),
        "{:?}",
        jobs()
    );
}

#[test]
fn max_workers_bounds_the_jobs_in_flight_and_ctrl_c_stops_every_job() {
    let dir = skill_folder();
    let dataset: String = (0..6)
        .map(|i| format!("{{\"id\": \"t{i}\", \"input\": \"{i}\", \"expected\": \"x\"}}\n"))
        .collect();
    std::fs::write(dir.path().join("data.jsonl"), dataset).unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(
        &path,
        format!(
            "skill: skill.md\ndataset: data.jsonl\nmetric: {{golden: {{mode: exact}}}}\n\
             harness:\n  type: subprocess\n  command: [sleep, \"120\"]\n  timeout: 300\n  max_workers: 6\n{}",
            ray_executor(", max_workers: 2, num_cpus: 0")
        ),
    )
    .unwrap();
    let before: Vec<String> = jobs().into_iter().map(|(id, _)| id).collect();
    let ours = || -> Vec<(String, String)> {
        jobs()
            .into_iter()
            .filter(|(id, _)| !before.contains(id))
            .collect()
    };
    let mut child = crate::common::process()
        .args(["evaluate", "-c"])
        .arg(&path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while ours().iter().filter(|(_, s)| s == "RUNNING").count() < 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "{:?}", ours());
        std::thread::sleep(Duration::from_millis(200));
    }
    // Two running, and for a few seconds never a third submitted.
    for _ in 0..10 {
        assert!(ours().len() <= 2, "{:?}", ours());
        std::thread::sleep(Duration::from_millis(300));
    }
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) sends SIGINT to the child this test spawned.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let start = Instant::now();
    while ours().iter().any(|(_, s)| s == "RUNNING" || s == "PENDING") {
        assert!(start.elapsed() < Duration::from_secs(30), "{:?}", ours());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        ours().iter().all(|(_, s)| s == "STOPPED"),
        "Ctrl-C stopped them: {:?}",
        ours()
    );
}

#[test]
fn a_job_gets_the_dotenv_values_and_the_harness_env_and_paths_into_its_package() {
    let dir = skill_folder();
    std::fs::write(dir.path().join(".env"), "SHIPPED=from-dotenv\n").unwrap();
    std::fs::write(
        dir.path().join("tool.sh"),
        "printf '%s' \"$(cat \"$1\" | head -n 2 | tail -n 1)\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("data.jsonl"),
        "{\"id\": \"a\", \"input\": \"x\", \"expected\": \"name: s|from-dotenv-mine\"}\n",
    )
    .unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(
        &path,
        format!(
            "skill: skill.md\ndataset: data.jsonl\nmetric: {{golden: {{mode: exact}}}}\n\
             harness:\n  type: subprocess\n  cwd: .\n  env: {{OWN: mine}}\n\
             \x20 command: [sh, -c, 'sh tool.sh \"$1\"; printf \"|%s-%s\" \"$SHIPPED\" \"$OWN\"', sh, \"{{skill_file}}\"]\n{}",
            ray_executor(", num_cpus: 0")
        ),
    )
    .unwrap();
    let report = report(&path);
    assert_eq!(
        report["items"][0]["output"], "name: s|from-dotenv-mine",
        "{report}"
    );
    assert_eq!(report["score"], 1.0, "{report}");
}

//! `skill-factory ui`: every endpoint of the dashboard against real run folders written by
//! `optimize` (offline, scripted models), the path guards, the token, the host and origin
//! checks, secrets, background jobs with their live stream and cancel, and `ui export`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Ran, bin, optimize, process, repo_root, run, strings};

/// The dashboard, killed when the test ends, passed or not.
struct Served {
    child: std::process::Child,
    url: String,
    stderr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `skill-factory ui --port 0 --runs ROOT ARGS` run in `workdir` with `env`, once it says where.
fn serve(root: &Path, workdir: &Path, args: &[&str], env: &[(&str, &str)]) -> Served {
    let mut command = process();
    command
        .args(["ui", "--port", "0", "--runs"])
        .arg(root)
        .args(args)
        .current_dir(workdir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = line
        .trim()
        .rsplit(' ')
        .next()
        .filter(|url| url.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    // What it warned about before serving (it writes nothing to stderr after that).
    let mut warned = String::new();
    if args.contains(&"--host") {
        BufReader::new(stderr).read_line(&mut warned).unwrap();
    }
    Served {
        child,
        url,
        stderr: warned,
    }
}

/// A runs root with two real offline runs of the ticket classifier (`llm_loop` and `gepa`),
/// and the workdir (with the examples) the dashboard runs in.
struct Fixture {
    _tmp: tempfile::TempDir,
    workdir: PathBuf,
    root: PathBuf,
    /// The two runs' paths relative to the root.
    runs: [String; 2],
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let workdir = tmp.path().join("work");
    let example = workdir.join("examples/ticket-classifier");
    std::fs::create_dir_all(&example).unwrap();
    for entry in std::fs::read_dir(repo_root().join("examples/ticket-classifier")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), example.join(entry.file_name())).unwrap();
    }
    let offline = example.join("config.offline.yaml");
    let gepa = example.join("config.gepa.yaml");
    let text = std::fs::read_to_string(&offline).unwrap();
    std::fs::write(&gepa, text.replace("name: llm_loop", "name: gepa")).unwrap();
    let root = workdir.join("runs");
    let mut runs = Vec::new();
    for (config, name) in [(&offline, "llm"), (&gepa, "gepa")] {
        let out = root.join(name);
        let ran = optimize(&[], config, &out);
        assert_eq!(ran.code, Some(0), "{}", ran.stderr);
        let id = std::fs::read_dir(&out)
            .unwrap()
            .flatten()
            .find(|e| e.file_type().unwrap().is_dir())
            .unwrap()
            .file_name();
        runs.push(format!("{name}/{}", id.to_string_lossy()));
    }
    Fixture {
        _tmp: tmp,
        workdir,
        root,
        runs: [runs[0].clone(), runs[1].clone()],
    }
}

async fn get(url: &str) -> (u16, Value) {
    let response = reqwest::get(url).await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

/// The body of the page at `url`, as text.
async fn text_at(url: String) -> String {
    reqwest::get(url).await.unwrap().text().await.unwrap()
}

/// The status the server answers `request` with.
async fn status_of(request: reqwest::RequestBuilder) -> u16 {
    request.send().await.unwrap().status().as_u16()
}

/// The entry of the run at `path` in a `/api/runs` list.
fn run_entry<'a>(list: &'a Value, path: &str) -> Option<&'a Value> {
    list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == path)
}

/// `ui export <run_dir> -o <out>`, run to its end.
fn export_page(run_dir: &Path, out: &Path) -> Ran {
    run(bin().args(["ui", "export"]).arg(run_dir).arg("-o").arg(out))
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn a_real_run_reads_as_its_list_entry_page_tasks_diff_blame_heatmap_and_comparison() {
    let fixture = fixture();
    let served = serve(&fixture.root, &fixture.workdir, &[], &[]);
    let url = &served.url;
    let (status, list) = get(&format!("{url}/api/runs")).await;
    assert_eq!(status, 200);
    let paths = strings(&list["runs"], "path");
    assert!(
        paths.contains(&fixture.runs[0].as_str()) && paths.contains(&fixture.runs[1].as_str()),
        "{list}"
    );

    let gepa = &fixture.runs[1];
    let (status, page) = get(&format!("{url}/api/run?path={}", encode(gepa))).await;
    assert_eq!(status, 200, "{page}");
    let result = crate::common::read_json(&fixture.root.join(gepa).join("result.json"));
    assert_eq!(page["summary"]["best_val"], result["best_score"]);
    let candidates = page["candidates"].as_array().unwrap();
    assert_eq!(candidates[0]["status"], "seed");
    let best = page["best"].as_u64().unwrap();
    assert!(best > 0, "the seed is not the best: {page}");
    let chain: Vec<u64> = page["lineage_of_best"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!((chain[0], *chain.last().unwrap()), (0, best));
    let best_text = std::fs::read_to_string(fixture.root.join(gepa).join("best_skill.md")).unwrap();
    assert_eq!(page["best_text"], best_text.as_str());
    assert!(
        page["seed_diff"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["tag"] == "insert"),
        "the best adds lines to the seed"
    );
    let blame = page["blame"].as_array().unwrap();
    assert_eq!(
        blame.len(),
        best_text.lines().count(),
        "one origin per line of the best"
    );
    assert!(
        blame
            .iter()
            .any(|o| o["candidate"] == best || chain.contains(&o["candidate"].as_u64().unwrap()))
    );
    assert!(!page["timeline"]["val"].as_array().unwrap().is_empty());

    // The per-task table: the validation tasks of the best, with inputs from tasks.jsonl.
    let val = result["splits"]["val"].as_u64().unwrap();
    let (_, table) = get(&format!(
        "{url}/api/run/tasks?path={}&limit=2",
        encode(gepa)
    ))
    .await;
    assert_eq!(table["total"], val, "{table}");
    assert_eq!(table["rows"].as_array().unwrap().len(), 2, "paged");
    assert!(
        table["rows"][0]["input"]
            .as_str()
            .is_some_and(|i| !i.is_empty()),
        "{table}"
    );
    let (_, failures) = get(&format!(
        "{url}/api/run/tasks?path={}&candidate=0&only=failures&limit=500",
        encode(gepa)
    ))
    .await;
    let rows = failures["rows"].as_array().unwrap();
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r["score"].as_f64().unwrap() < 1.0),
        "{failures}"
    );
    let (_, changed) = get(&format!(
        "{url}/api/run/tasks?path={}&candidate={best}&against=0&only=changed",
        encode(gepa)
    ))
    .await;
    assert!(
        changed["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["change"] == "fixed" || r["change"] == "regressed"),
        "{changed}"
    );
    assert!(changed["total"].as_u64().unwrap() > 0);

    let (status, diff) = get(&format!(
        "{url}/api/run/diff?path={}&a=0&b={best}",
        encode(gepa)
    ))
    .await;
    assert_eq!(status, 200);
    assert_eq!(diff["lines"], page["seed_diff"]);
    let (status, missing) = get(&format!(
        "{url}/api/run/diff?path={}&a=0&b=999",
        encode(gepa)
    ))
    .await;
    assert_eq!(status, 404, "{missing}");
    assert!(missing["error"].as_str().unwrap().contains("candidate 999"));

    let (_, heat) = get(&format!(
        "{url}/api/run/heatmap?path={}&split=val",
        encode(gepa)
    ))
    .await;
    assert_eq!(heat["tasks"].as_array().unwrap().len() as u64, val);
    assert_eq!(heat["candidates"][0], 0);

    // Two runs of the same tasks, task by task: regressions first.
    let (status, compared) = get(&format!(
        "{url}/api/compare?a={}&b={}&split=val",
        encode(&fixture.runs[0]),
        encode(gepa)
    ))
    .await;
    assert_eq!(status, 200, "{compared}");
    let counts = &compared["counts"];
    let total: u64 = ["regressed", "fixed", "still_failing", "unchanged"]
        .iter()
        .map(|k| counts[k].as_u64().unwrap())
        .sum();
    assert_eq!(total, val, "{compared}");
    let (_, seed_vs_best) = get(&format!(
        "{url}/api/compare?a={0}&b={0}&ca=0&cb={best}",
        encode(gepa)
    ))
    .await;
    assert!(
        seed_vs_best["counts"]["fixed"].as_u64().unwrap() > 0,
        "{seed_vs_best}"
    );
    let order = strings(&seed_vs_best["rows"], "change");
    let rank = |c: &str| {
        ["regressed", "fixed", "still_failing", "unchanged"]
            .iter()
            .position(|x| *x == c)
    };
    assert!(
        order.windows(2).all(|w| rank(w[0]) <= rank(w[1])),
        "{order:?}"
    );

    // The page and its files come from the binary, with the policy that forbids inline script.
    let response = reqwest::get(format!("{url}/")).await.unwrap();
    let policy = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"),
        "{policy}"
    );
    for asset in ["app.js", "app.css", "uplot.js", "uplot.css"] {
        let response = reqwest::get(format!("{url}/assets/{asset}")).await.unwrap();
        assert_eq!(response.status(), 200, "{asset}");
    }
    let script = text_at(format!("{url}/assets/app.js")).await;
    assert!(
        !script.contains("innerHTML") && !script.contains("insertAdjacentHTML"),
        "text nodes only"
    );
    // The SVG namespace is a name, not an address; nothing else may look like one.
    let addresses = script.replace("http://www.w3.org/2000/svg", "");
    assert!(
        !addresses.contains("http://") && !addresses.contains("https://"),
        "no CDN"
    );
}

#[tokio::test]
async fn every_path_out_of_the_root_is_refused_traversal_encodings_absolute_and_links() {
    let fixture = fixture();
    let outside = fixture.workdir.join("secret");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::copy(
        fixture.root.join(&fixture.runs[0]).join("result.json"),
        outside.join("result.json"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, fixture.root.join("escape")).unwrap();
    let served = serve(&fixture.root, &fixture.workdir, &[], &[]);
    let url = &served.url;
    let attempts = [
        ("..%2Fsecret", 400),
        ("llm%2F..%2F..%2Fsecret", 400),
        ("%2E%2E%2Fsecret", 400),
        // A second encoding is a name like any other: nothing is there.
        ("%252e%252e%252fsecret", 404),
        ("..%5Csecret", 400),
        ("%2Fetc", 400),
        ("escape", 403),
        ("nothing%2Fhere", 404),
        ("", 400),
    ];
    for endpoint in ["run", "run/tasks", "run/blame", "run/heatmap", "stream"] {
        for (path, expected) in attempts {
            if endpoint == "stream" && path.is_empty() {
                continue; // the stream without a run is the list's stream
            }
            let (status, body) = get(&format!("{url}/api/{endpoint}?path={path}")).await;
            assert_eq!(status, expected, "/api/{endpoint}?path={path}: {body}");
            assert!(body["error"].is_string(), "{body}");
        }
    }
    let (status, _) = get(&format!(
        "{url}/api/compare?a={}&b=..%2Fsecret",
        encode(&fixture.runs[0])
    ))
    .await;
    assert_eq!(status, 400);
    for asset in ["..%2F..%2FCargo.toml", "%2e%2e%2fsrc%2flib.rs", "app.js%00"] {
        let response = reqwest::get(format!("{url}/assets/{asset}")).await.unwrap();
        assert_eq!(response.status(), 404, "{asset}");
    }
    // A bad parameter is a JSON error that names it.
    let (status, body) = get(&format!(
        "{url}/api/run/diff?path={}&a=x&b=1",
        encode(&fixture.runs[0])
    ))
    .await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains('a'), "{body}");
}

#[tokio::test]
async fn another_host_needs_the_printed_token_and_a_foreign_host_or_origin_is_refused() {
    let fixture = fixture();
    let served = serve(&fixture.root, &fixture.workdir, &["--host", "0.0.0.0"], &[]);
    assert!(
        served.stderr.contains("warning") && served.stderr.contains("token"),
        "{}",
        served.stderr
    );
    let (base, token) = served.url.split_once("/?token=").unwrap();
    assert_eq!(token.len(), 32);
    let port = base.rsplit(':').next().unwrap();
    let local = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    for url in [
        format!("{local}/api/runs"),
        format!("{local}/"),
        format!("{local}/api/runs?token=wrong"),
    ] {
        let response = client.get(&url).send().await.unwrap();
        assert_eq!(response.status(), 401, "{url}");
    }
    let first = client
        .get(format!("{local}/?token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let cookie = first.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.starts_with(&format!("sf_token={token}")) && cookie.contains("HttpOnly"),
        "{cookie}"
    );
    let by_cookie = client
        .get(format!("{local}/api/runs"))
        .header("cookie", format!("sf_token={token}"));
    assert_eq!(status_of(by_cookie).await, 200);
    let by_bearer = client.get(format!("{local}/api/jobs")).bearer_auth(token);
    assert_eq!(status_of(by_bearer).await, 200);
    let launch_without = client.post(format!("{local}/api/jobs")).json(
        &json!({"command": "optimize", "config": "examples/ticket-classifier/config.offline.yaml"}),
    );
    assert_eq!(
        status_of(launch_without).await,
        401,
        "launch needs the token too"
    );
    drop(served);

    // On loopback: no token, but a Host that is not loopback (DNS rebinding) and a POST from
    // another origin are refused.
    let served = serve(&fixture.root, &fixture.workdir, &[], &[]);
    let rebound = client
        .get(format!("{}/api/runs", served.url))
        .header("host", "attacker.example:8765");
    assert_eq!(status_of(rebound).await, 403);
    let foreign = client
        .post(format!("{}/api/jobs", served.url))
        .header("origin", "http://attacker.example")
        .json(&json!({"command": "optimize", "config": "examples/ticket-classifier/config.offline.yaml"}));
    assert_eq!(status_of(foreign).await, 403);
    let (_, jobs) = get(&format!("{}/api/jobs", served.url)).await;
    assert_eq!(jobs, json!([]), "nothing was launched");
}

#[tokio::test]
async fn keys_in_run_files_and_the_servers_environment_never_reach_a_response() {
    let fixture = fixture();
    let run = fixture.root.join(&fixture.runs[0]);
    let key = "sk-live-0123456789abcdefghijklmnop";
    let env_secret = "hunter2-correct-horse-battery";
    // A folder copied from elsewhere: a key in its result, an environment secret echoed by a
    // model into a rollout.
    let mut result = crate::common::read_json(&run.join("result.json"));
    result["metadata"]["api_key"] = json!("plain-key-value");
    result["metadata"]["note"] = json!(format!("called with {key}"));
    std::fs::write(run.join("result.json"), result.to_string()).unwrap();
    let rollouts = std::fs::read_to_string(run.join("rollouts.jsonl")).unwrap();
    let planted = rollouts.replacen("\"output\":\"", &format!("\"output\":\"{env_secret} "), 1);
    std::fs::write(run.join("rollouts.jsonl"), planted).unwrap();
    let served = serve(
        &fixture.root,
        &fixture.workdir,
        &[],
        &[("MY_SERVICE_TOKEN", env_secret)],
    );
    let url = &served.url;
    let path = encode(&fixture.runs[0]);
    let mut bodies = Vec::new();
    for endpoint in [
        "/api/runs".to_string(),
        format!("/api/run?path={path}"),
        format!("/api/run/tasks?path={path}&candidate=0&limit=500"),
        format!("/api/compare?a={path}&b={path}&ca=0"),
    ] {
        let text = text_at(format!("{url}{endpoint}")).await;
        for secret in [key, env_secret, "plain-key-value"] {
            assert!(!text.contains(secret), "{endpoint} leaks {secret}");
        }
        bodies.push(text);
    }
    assert!(bodies[1].contains("\"api_key\":\"***\""), "{}", bodies[1]);
    assert!(
        bodies[2].contains("***"),
        "the echoed secret is replaced, the row kept"
    );
}

/// Reads server-sent events from `url` until `done` says so (or 60 s pass).
async fn read_events(
    url: String,
    last_id: Option<&'static str>,
    mut done: impl FnMut(&str, &Value) -> bool + Send + 'static,
) -> Vec<(String, Option<String>, Value)> {
    let client = reqwest::Client::new();
    let mut request = client.get(&url);
    if let Some(id) = last_id {
        request = request.header("last-event-id", id);
    }
    let mut response = request.send().await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut buffer = String::new();
    let mut seen = Vec::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let Ok(Ok(Some(chunk))) =
            tokio::time::timeout(Duration::from_secs(60), response.chunk()).await
        else {
            break;
        };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let message: String = buffer.drain(..end + 2).collect();
            let (mut kind, mut id, mut data) = (String::from("message"), None, String::new());
            for line in message.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    kind = v.trim().to_string();
                } else if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().to_string());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if data.is_empty() {
                continue;
            }
            let value = serde_json::from_str(&data).unwrap_or(Value::String(data));
            let stop = done(&kind, &value);
            seen.push((kind, id, value));
            if stop {
                return seen;
            }
        }
    }
    panic!("the stream did not deliver what was waited for: {seen:?}");
}

/// A config whose rollouts take 0.3 s each, so a run lasts long enough to cancel.
fn slow_config(workdir: &Path) -> &'static str {
    let dir = workdir.join("slow");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("skill.md"),
        "---\nname: slow\ndescription: Waits.\n---\nWait.\n",
    )
    .unwrap();
    let tasks: String = (0..20)
        .map(|i| format!("{{\"id\": \"t{i}\", \"input\": \"x{i}\", \"expected\": \"y\"}}\n"))
        .collect();
    std::fs::write(dir.join("data.jsonl"), tasks).unwrap();
    std::fs::write(
        dir.join("config.yaml"),
        "skill: skill.md\ndataset: data.jsonl\nval_fraction: 0.5\n\
         harness:\n  type: subprocess\n  command: [sh, -c, \"sleep 0.3; echo n\"]\n  timeout: 60\n  max_workers: 2\n\
         provider: {name: fake, responses: [\"<NEW_SKILL_BODY>Say y.</NEW_SKILL_BODY>\"]}\n\
         metric:\n  golden: {mode: exact}\noptimizer: {rounds: 30, patience: 30}\n",
    )
    .unwrap();
    "slow/config.yaml"
}

async fn job_state(url: &str, id: &str) -> Value {
    let (_, jobs) = get(&format!("{url}/api/jobs")).await;
    jobs.as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == id)
        .cloned()
        .unwrap()
}

async fn wait_for_job(url: &str, id: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let job = job_state(url, id).await;
        if ready(&job) {
            return job;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "job never got there: {job}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_launched_optimization_streams_its_events_live_and_a_cancelled_one_stops_with_its_report()
{
    let fixture = fixture();
    let slow = slow_config(&fixture.workdir);
    let served = serve(&fixture.root, &fixture.workdir, &[], &[]);
    let url = served.url.clone();
    let client = reqwest::Client::new();
    let launch = |config: &str, command: &str| {
        let client = client.clone();
        let body = json!({"command": command, "config": config});
        let url = url.clone();
        async move {
            let response = client
                .post(format!("{url}/api/jobs"))
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        }
    };

    // Only configs under the working directory, and only as JSON.
    for config in ["../secret.yaml", "/etc/passwd", "examples/none.yaml"] {
        let (status, body) = launch(config, "optimize").await;
        assert_eq!(status, 400, "{config}: {body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("under the working directory"),
            "{body}"
        );
    }
    let not_json = client
        .post(format!("{url}/api/jobs"))
        .body("command=optimize");
    assert_eq!(status_of(not_json).await, 400);

    // A fast job: it returns at once, then runs to its end; its run folder is under the root.
    let (status, job) = launch("examples/ticket-classifier/config.offline.yaml", "optimize").await;
    assert_eq!(status, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    let done = wait_for_job(&url, &id, |j| j["state"] == "done").await;
    let run_path = done["run"].as_str().unwrap().to_string();
    assert!(fixture.root.join(&run_path).join("report.md").is_file());
    // The stream of that run replays its events after `after`, each with its seq as the id,
    // and a reconnect with Last-Event-ID resumes after it.
    let stream = format!("{url}/api/stream?path={}&after=0", encode(&run_path));
    let events = read_events(stream.clone(), None, |kind, value| {
        kind == "event" && value["event"] == "run_finished"
    })
    .await;
    let ids: Vec<u64> = events
        .iter()
        .filter(|e| e.0 == "event")
        .map(|e| e.1.as_deref().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids[0], 1);
    assert!(
        ids.windows(2).all(|w| w[1] == w[0] + 1),
        "every event once, in order"
    );
    assert_eq!(events[0].0, "jobs", "the stream opens with the jobs");
    let resumed = read_events(stream.clone(), Some("5"), |kind, _| kind == "event").await;
    let first = resumed.iter().find(|e| e.0 == "event").unwrap();
    assert_eq!(first.1.as_deref(), Some("6"));

    // The run list learns of a new run through the stream, without a reload.
    let listening = tokio::spawn(read_events(format!("{url}/api/stream"), None, |kind, _| {
        kind == "runs"
    }));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, evaluate) = launch("examples/ticket-classifier/config.offline.yaml", "evaluate").await;
    let (_, slow_job) = launch(slow, "optimize").await;
    listening.await.unwrap();
    let evaluated = wait_for_job(&url, evaluate["id"].as_str().unwrap(), |j| {
        j["state"] == "done"
    })
    .await;
    let log =
        std::fs::read_to_string(fixture.root.join(evaluated["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("score"), "{log}");

    // The slow job: live events arrive while it runs; cancel stops it as Ctrl-C does.
    let slow_id = slow_job["id"].as_str().unwrap().to_string();
    let running = wait_for_job(&url, &slow_id, |j| j["run"].is_string()).await;
    let slow_run = running["run"].as_str().unwrap().to_string();
    let live = read_events(
        format!("{url}/api/stream?path={}", encode(&slow_run)),
        None,
        |kind, value| kind == "event" && value["event"] == "rollout",
    )
    .await;
    assert!(live.iter().any(|e| e.2["event"] == "run_started"));
    let cancel = client.post(format!("{url}/api/jobs/{slow_id}/cancel"));
    assert_eq!(status_of(cancel).await, 200);
    let ended = wait_for_job(&url, &slow_id, |j| j["state"] == "cancelled").await;
    assert_eq!(ended["exit_code"], 130, "{ended}");
    let result = crate::common::read_json(&fixture.root.join(&slow_run).join("result.json"));
    assert_eq!(result["stop_reason"], "cancelled", "{result}");
    assert!(fixture.root.join(&slow_run).join("report.md").is_file());
    let (_, list) = get(&format!("{url}/api/runs")).await;
    let listed = run_entry(&list, &slow_run).cloned();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (_, again) = get(&format!("{url}/api/runs")).await;
    let status = run_entry(&again, &slow_run).map(|r| r["status"].clone());
    assert_eq!(status, Some(json!("stopped")), "{listed:?}");
    let unknown = client.post(format!("{url}/api/jobs/nope/cancel"));
    assert_eq!(status_of(unknown).await, 404);
}

#[test]
fn ui_export_writes_one_self_contained_page_that_no_run_text_can_break_out_of() {
    let fixture = fixture();
    let run_dir = fixture.root.join(&fixture.runs[1]);
    // A run whose text tries to close the data block.
    let seed = run_dir.join("candidates/000.md");
    let text = std::fs::read_to_string(&seed).unwrap();
    std::fs::write(
        &seed,
        format!("{text}\n</script><script>window.__pwned=1</script>\n"),
    )
    .unwrap();
    let out = fixture.workdir.join("report.html");
    let ran = export_page(&run_dir, &out);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(ran.stdout.contains("self-contained"), "{}", ran.stdout);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("id=\"sf-export\""));
    assert!(
        !html.contains("</script><script>window.__pwned"),
        "the planted tag is escaped"
    );
    assert_eq!(
        html.matches("<script").count(),
        3,
        "the data block, the chart library, the page"
    );
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "no network"
    );
    let policy = html
        .split("Content-Security-Policy\" content=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert!(
        policy.starts_with("default-src 'none'") && policy.contains("'sha256-"),
        "{policy}"
    );
    assert!(!policy.contains("unsafe-inline"));
    // The data is the run page's.
    let data = html
        .split("id=\"sf-export\">")
        .nth(1)
        .unwrap()
        .split("</script>")
        .next()
        .unwrap();
    let data: Value = serde_json::from_str(data).unwrap();
    assert_eq!(
        data["run"]["path"],
        fixture.runs[1].rsplit('/').next().unwrap()
    );
    assert!(
        data["tables"]["0/val"]["rows"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    );

    let missing = run(bin()
        .args(["ui", "export"])
        .arg(fixture.workdir.join("nope")));
    assert_eq!(missing.code, Some(2));
    assert!(
        missing.stderr.contains("not a run folder"),
        "{}",
        missing.stderr
    );
}

/// The offline ticket classifier on three targets: its scripted model under two names, both
/// optimized, and a model measured only that answers `billing` to every message but turns to
/// prose under the category boundaries the best skill adds (the skill loses on it).
const TARGETS: &str = "\ncache: {mode: off}\ntargets:\n  \
    - {name: scripted, provider: {model: scripted-ticket-model}}\n  \
    - {name: twin, provider: {model: twin-model}}\n  \
    - {name: terse, optimize: false, provider: {name: fake, model: terse, responses: [billing], \
    rules: [{system_contains: \"Category boundaries\", reply: \"I think it is billing.\"}]}}\n";

/// The data block of an exported page.
fn exported_data(html: &str) -> Value {
    let block = html
        .split("id=\"sf-export\">")
        .nth(1)
        .and_then(|rest| rest.split("</script>").next())
        .expect("the export's data block");
    serde_json::from_str(block).unwrap()
}

#[tokio::test]
async fn a_run_over_several_targets_gives_its_page_and_its_export_each_targets_scores_and_gains() {
    let fixture = fixture();
    let example = fixture.workdir.join("examples/ticket-classifier");
    let config = example.join("config.targets.yaml");
    let offline = std::fs::read_to_string(example.join("config.offline.yaml")).unwrap();
    std::fs::write(&config, offline + TARGETS).unwrap();
    let ran = optimize(&[], &config, &fixture.root.join("targets"));
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    let id = std::fs::read_dir(fixture.root.join("targets"))
        .unwrap()
        .flatten()
        .find(|e| e.file_type().unwrap().is_dir() && e.file_name() != "latest")
        .unwrap()
        .file_name();
    let path = format!("targets/{}", id.to_string_lossy());
    let run_dir = fixture.root.join(&path);
    let result = crate::common::read_json(&run_dir.join("result.json"));
    let targets = &result["targets"];
    let names: Vec<&str> = targets
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(names, ["scripted", "terse", "twin"], "{targets:#}");
    assert_eq!(targets["terse"]["optimize"], false);
    // The optimized targets gain for sure; the measured one loses for sure.
    let interval = |name: &str, end: usize| {
        targets[name]["improvement"]["interval"][end]
            .as_f64()
            .unwrap()
    };
    assert!(
        interval("scripted", 0) > 0.0 && interval("twin", 0) > 0.0,
        "{targets:#}"
    );
    assert!(interval("terse", 1) < 0.0, "{targets:#}");
    // Every gate of the history says what it gained on each optimized target.
    let gates: Vec<&Value> = crate::common::artifacts::comparisons(&result);
    assert!(!gates.is_empty(), "no gate decided: {result:#}");
    for gate in &gates {
        let per_target: Vec<&String> = gate["per_target"].as_object().unwrap().keys().collect();
        assert_eq!(per_target, ["scripted", "twin"], "{gate:#}");
    }

    // The page carries the figures as result.json has them, and each candidate its gate's gains.
    let served = serve(&fixture.root, &fixture.workdir, &[], &[]);
    let (status, page) = get(&format!("{}/api/run?path={}", served.url, encode(&path))).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(&page["result"]["targets"], targets);
    let gains_of = |page: &Value| -> Vec<Value> {
        page["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["gain"].get("per_target").cloned())
            .collect()
    };
    let gains = gains_of(&page);
    assert_eq!(gains.len(), gates.len(), "{page:#}");
    for (gain, gate) in gains.iter().zip(&gates) {
        for name in ["scripted", "twin"] {
            let (shown, kept) = (
                gain[name].as_f64().unwrap(),
                gate["per_target"][name].as_f64().unwrap(),
            );
            assert!((shown - kept).abs() < 1e-4, "{name}: {gain} against {gate}");
        }
    }

    // The export embeds the same page.
    let out = fixture.workdir.join("targets.html");
    let ran = export_page(&run_dir, &out);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let data = exported_data(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(&data["run"]["result"]["targets"], targets);
    assert_eq!(gains_of(&data["run"]), gains);

    // A run of one target has no targets, and its gates no per-target gains.
    let (_, single) = get(&format!(
        "{}/api/run?path={}",
        served.url,
        encode(&fixture.runs[0])
    ))
    .await;
    assert!(single["result"].get("targets").is_none(), "{single:#}");
    assert!(gains_of(&single).is_empty());
}

#[test]
fn ui_export_never_writes_over_the_runs_files_nor_a_file_it_did_not_write_without_force() {
    let fixture = fixture();
    let run_dir = fixture.root.join(&fixture.runs[1]);
    let result = run_dir.join("result.json");
    let before = std::fs::read(&result).unwrap();
    for out in [result.clone(), run_dir.join("./candidates/page.html")] {
        let refused = export_page(&run_dir, &out);
        assert_eq!(refused.code, Some(2), "{}", refused.stderr);
        assert!(
            refused.stderr.contains("inside the run folder"),
            "{}",
            refused.stderr
        );
    }
    assert_eq!(
        std::fs::read(&result).unwrap(),
        before,
        "result.json untouched"
    );

    let notes = fixture.workdir.join("notes.html");
    std::fs::write(&notes, "<p>mine</p>").unwrap();
    let refused = export_page(&run_dir, &notes);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("is not a run page of `skill-factory ui export`")
            && refused.stderr.contains("--force"),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "<p>mine</p>");
    let forced = run(bin()
        .args(["ui", "export"])
        .arg(&run_dir)
        .arg("-o")
        .arg(&notes)
        .arg("--force"));
    assert_eq!(forced.code, Some(0), "{}", forced.stderr);
    // A page this command wrote is replaced without --force.
    let again = export_page(&run_dir, &notes);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
}

#[test]
fn a_missing_runs_folder_or_a_bad_host_is_refused_with_the_fix() {
    let root = tempfile::tempdir().unwrap();
    let missing = run(bin().args(["ui", "--runs"]).arg(root.path().join("nope")));
    assert_eq!(missing.code, Some(2));
    assert!(
        missing.stderr.contains("no such folder"),
        "{}",
        missing.stderr
    );
    let bad = run(bin()
        .args(["ui", "--host", "example.com", "--runs"])
        .arg(root.path()));
    assert_eq!(bad.code, Some(2));
    assert!(bad.stderr.contains("not an IP address"), "{}", bad.stderr);
}

#[tokio::test]
async fn a_run_folder_cannot_make_the_dashboard_read_a_file_outside_it() {
    let fixture = fixture();
    let secret = fixture.workdir.join("secret.txt");
    let planted = "private-notes-that-must-stay-home";
    std::fs::write(&secret, planted).unwrap();
    let run_dir = fixture.root.join(&fixture.runs[0]);
    // Candidates whose `file` points outside the folder, absolutely and by climbing out.
    let mut events = std::fs::read_to_string(run_dir.join("events.jsonl")).unwrap();
    for (id, file) in [
        (901, secret.display().to_string()),
        (902, "../../../secret.txt".to_string()),
    ] {
        events.push_str(
            &json!({"seq": 100_000 + id, "event": "candidate_proposed", "round": 1,
                    "candidate": id, "parent": 0, "file": file, "rationale": "x"})
            .to_string(),
        );
        events.push('\n');
    }
    std::fs::write(run_dir.join("events.jsonl"), events).unwrap();
    // And a best skill and a report that are links to it.
    for name in ["best_skill.md", "report.md"] {
        std::fs::remove_file(run_dir.join(name)).unwrap();
        std::os::unix::fs::symlink(&secret, run_dir.join(name)).unwrap();
    }
    let served = serve(&fixture.root, &fixture.workdir, &[], &[]);
    let path = encode(&fixture.runs[0]);
    let url = &served.url;
    let mut seen = Vec::new();
    for endpoint in [
        format!("/api/run?path={path}"),
        format!("/api/run/diff?path={path}&a=0&b=901"),
        format!("/api/run/diff?path={path}&a=0&b=902"),
        format!("/api/run/blame?path={path}"),
    ] {
        let (status, body) = get(&format!("{url}{endpoint}")).await;
        seen.push(status);
        assert!(!body.to_string().contains(planted), "{endpoint}: {body}");
    }
    assert_eq!(seen[0], 200, "the run page is still served");
    let out = fixture.workdir.join("report.html");
    let ran = export_page(&run_dir, &out);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(!std::fs::read_to_string(&out).unwrap().contains(planted));
}

#[tokio::test]
async fn ctrl_c_on_the_dashboard_stops_the_jobs_it_launched() {
    let fixture = fixture();
    // A run whose baseline alone takes minutes: nothing ends it but a signal.
    let slow = slow_config(&fixture.workdir);
    let config = fixture.workdir.join(slow);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("sleep 0.3", "sleep 60")).unwrap();
    let mut served = serve(&fixture.root, &fixture.workdir, &[], &[]);
    let url = served.url.clone();
    let job: Value = reqwest::Client::new()
        .post(format!("{url}/api/jobs"))
        .json(&json!({"command": "optimize", "config": slow}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = job["id"].as_str().unwrap().to_string();
    let running = wait_for_job(&url, &id, |j| j["run"].is_string()).await;
    // The job is the dashboard's child process: SIGTERM stops it and its own children.
    let tasks = format!("/proc/{}/task", served.child.id());
    let children: Vec<u32> = std::fs::read_dir(&tasks)
        .unwrap()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect();
    assert_eq!(children.len(), 1, "{children:?}");
    let pid = children[0];
    let dashboard = libc::pid_t::try_from(served.child.id()).unwrap();
    // SAFETY: kill(2) only sends a signal, to the dashboard this test started.
    unsafe {
        libc::kill(dashboard, libc::SIGINT);
    }
    // It quits (by its exit 130, or by the signal of the closed pipe its message meets).
    served.child.wait().unwrap();
    let alive = || skill_factory_io::process::is_running(pid);
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(), "the job {pid} outlived the dashboard");
    // And its harness programs (the agents of a real run) with it.
    let programs = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
            .filter(|cmdline| cmdline.starts_with(b"sh\0-c\0sleep 60; echo n"))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while programs() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(programs(), 0, "the job's harness programs outlived it");
    // What it wrote before it stopped stays readable.
    let run = fixture.root.join(running["run"].as_str().unwrap());
    crate::common::read_json(&run.join("result.json"));
}

//! Keys stay secret: an optimization against a mock that requires the key, with a recording,
//! the cache, an export, a gallery entry and the dashboard, leaves the key in no file it
//! writes, no line it prints (debug log included) and no response the dashboard gives; a lab
//! run does the same with its System One key; and a key never follows a redirect or goes to
//! another provider's host.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use skill_factory_mock::{MockConfig, MockServer};

use crate::common::{LABEL_SKILL, bin, labelled_tasks, process};

/// The key in the environment, and a secret-looking `env` value a harness is given.
const KEY: &str = "sk-live-secret-0123456789abcdefghij";
const ENV_SECRET: &str = "hunter2-correct-horse-battery-staple";

/// Every file below `dir` that holds `needle`, by path.
fn holding(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                let bytes = std::fs::read(&path).unwrap();
                if bytes.windows(needle.len()).any(|w| w == needle) {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn no_file_line_or_dashboard_response_holds_the_key_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let keyed = MockConfig {
        require_api_key: Some(KEY.to_string()),
        ..MockConfig::default()
    };
    let mock = crate::common::labelled_mock(dir.path(), LABEL_SKILL, 8, keyed).await;
    let base = mock.base_url();
    std::fs::write(
        dir.path().join("config.yaml"),
        format!(
            "skill: skill.md\ndataset: data.jsonl\n\
             provider: {{name: openai, model: m, base_url: \"{base}/v1\"}}\n\
             optimizer: {{rounds: 1}}\n\
             metric:\n  golden: {{mode: exact}}\n\
             harness:\n  env: {{SERVICE_TOKEN: {ENV_SECRET}}}\n"
        ),
    )
    .unwrap();
    let config = dir.path().join("config.yaml");
    let runs = dir.path().join("runs");
    let ran = {
        let mut command = bin();
        command
            .current_dir(dir.path())
            .args(["optimize", "--record", "-c"])
            .arg(&config)
            .arg("-o")
            .arg(&runs)
            .arg("--emit")
            .arg(dir.path().join("dist"))
            .env("OPENAI_API_KEY", KEY)
            // Every log line is printed too, and scanned with the rest.
            .env("SKILL_FACTORY_LOG", "debug");
        tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap()
    };
    let mut printed = crate::common::printed(&ran);
    assert!(ran.status.success(), "{printed}");
    // The run as a gallery entry (its recording, config and candidates copied in) too.
    let gallery = crate::common::run(
        bin()
            .current_dir(dir.path())
            .args(["gallery", "add"])
            .arg(runs.join("latest"))
            .args(["--gallery", "gallery"]),
    );
    assert_eq!(gallery.code, Some(0), "{}", gallery.stderr);
    assert!(dir.path().join("gallery/README.md").is_file());
    printed.push_str(&gallery.stdout);
    printed.push_str(&gallery.stderr);
    assert!(
        runs.join("latest/traffic.jsonl").is_file(),
        "the recording is among the files scanned"
    );
    assert!(dir.path().join("dist").is_dir(), "the export is too");
    assert!(
        dir.path().join(".skill-factory/cache.sqlite").is_file(),
        "and the cache"
    );
    for secret in [KEY, ENV_SECRET] {
        assert!(!printed.contains(secret), "printed: {printed}");
        let files = holding(dir.path(), secret.as_bytes());
        // The config the user wrote holds its own `env` value; nothing written holds either.
        let written: Vec<&String> = files
            .iter()
            .filter(|f| !f.ends_with("config.yaml") || f.contains("runs"))
            .collect();
        assert!(written.is_empty(), "{secret} is in {written:?}");
    }

    // The dashboard, started with the key in its environment, never answers with it.
    let mut child = process()
        .args(["ui", "--port", "0", "--runs"])
        .arg(&runs)
        .env("OPENAI_API_KEY", KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    let run = std::fs::read_link(runs.join("latest")).unwrap();
    let path = run.file_name().unwrap().to_string_lossy().into_owned();
    for endpoint in [
        "/api/runs".to_string(),
        format!("/api/run?path={path}"),
        format!("/api/run/tasks?path={path}&candidate=0&limit=500"),
    ] {
        let body = reqwest::get(format!("{url}{endpoint}"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(body.len() > 20, "{endpoint}: {body}");
        assert!(
            !body.contains(KEY) && !body.contains(ENV_SECRET),
            "{endpoint}: {body}"
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A config in `dir` whose provider block is `provider`, over the labelled tasks.
fn evaluate_config(dir: &Path, provider: &str) -> std::path::PathBuf {
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "skill: skill.md\ndataset: data.jsonl\nprovider: {provider}\n\
             metric:\n  golden: {{mode: exact}}\n"
        ),
    )
    .unwrap();
    config
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_to_another_host_is_refused_and_the_key_never_reaches_it() {
    for (name, variable) in [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let answers = labelled_tasks(dir.path(), "Answer with the label.", 3);
        let target = MockServer::start(MockConfig {
            answers,
            ..MockConfig::default()
        })
        .await
        .unwrap();
        let redirecting = MockServer::start(MockConfig {
            redirect_to: Some(target.base_url()),
            ..MockConfig::default()
        })
        .await
        .unwrap();
        let base = match name {
            "openai" => format!("{}/v1", redirecting.base_url()),
            _ => redirecting.base_url(),
        };
        let config = evaluate_config(
            dir.path(),
            &format!("{{name: {name}, model: m, base_url: \"{base}\"}}"),
        );
        let ran = {
            let mut command = bin();
            command
                .current_dir(dir.path())
                .args(["evaluate", "--no-cache", "-c"])
                .arg(&config)
                .env(variable, KEY);
            tokio::task::spawn_blocking(move || command.output().unwrap())
                .await
                .unwrap()
        };
        let printed = crate::common::printed(&ran);
        assert_eq!(ran.status.code(), Some(3), "{name}: {printed}");
        assert_eq!(target.request_count(), 0, "{name}: {printed}");
        assert_eq!(
            redirecting.request_count(),
            3,
            "{name}: one per task, none retried"
        );
        assert!(
            printed.contains(&format!("redirects to {}", target.base_url()))
                && printed.contains("set base_url to the final URL"),
            "{name}: {printed}"
        );
        assert!(!printed.contains(KEY), "{printed}");
        assert!(holding(dir.path(), KEY.as_bytes()).is_empty());
    }
}

#[test]
fn a_key_issued_by_one_provider_is_never_sent_to_anothers_host() {
    let dir = tempfile::tempdir().unwrap();
    labelled_tasks(dir.path(), "Answer with the label.", 2);
    let anthropic_key = "sk-ant-api03-secret-0123456789abcdef";
    // The shared variable the Python tool read for OpenRouter holds an Anthropic key.
    let config = evaluate_config(dir.path(), "{name: openrouter, model: m}");
    let ran = crate::common::run(
        bin()
            .current_dir(dir.path())
            .args(["evaluate", "-c"])
            .arg(&config)
            .env("OPENAI_API_KEY", anthropic_key)
            // Should the check ever fail, the request goes to a closed port on this machine,
            // not to the internet.
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("ALL_PROXY", "http://127.0.0.1:9"),
    );
    assert_eq!(ran.code, Some(2), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr.contains("OPENAI_API_KEY")
            && ran.stderr.contains("issued by Anthropic")
            && ran.stderr.contains("openrouter.ai, a host of OpenRouter")
            && ran.stderr.contains("it was not sent")
            && ran.stderr.contains("its own key"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains(anthropic_key));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lab_run_and_its_exports_leave_the_system_one_key_in_no_file_or_line() {
    let stub = skill_factory_mock::SystemOneStub::start(|_, _, _| 0.7)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    crate::common::copy_example("pr-mismatch", dir.path());
    let config = dir.path().join("config.offline.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    let systemone = text
        .lines()
        .find(|l| l.starts_with("systemone:"))
        .unwrap()
        .to_string();
    std::fs::write(
        &config,
        text.replace("workspace: ../../runs/pr-mismatch-offline", "workspace: ws")
            .replace(
                &systemone,
                &format!(
                    "systemone: {{provider: custom, base_url: '{}', model: jev-latest}}",
                    stub.url()
                ),
            ),
    )
    .unwrap();
    let mut printed = String::new();
    for args in [
        vec!["optimize"],
        vec![
            "lab",
            "export",
            "--probeset",
            "ws/probeset.json",
            "-o",
            "checker.py",
        ],
        vec!["lab", "status"],
    ] {
        let ran = {
            let mut command = bin();
            command
                .current_dir(dir.path())
                .args(&args)
                .arg("-c")
                .arg(&config)
                .env("SKILL_FACTORY_SYSTEMONE_KEY", KEY)
                .env("SKILL_FACTORY_LOG", "debug");
            tokio::task::spawn_blocking(move || command.output().unwrap())
                .await
                .unwrap()
        };
        let out = crate::common::printed(&ran);
        assert!(ran.status.success(), "{args:?}: {out}");
        printed.push_str(&out);
    }
    // The key was in use: the stub saw it on every request.
    assert!(
        stub.received()
            .iter()
            .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {KEY}")))
    );
    assert!(stub.request_count() > 0);
    let exported = crate::common::run(
        bin()
            .current_dir(dir.path())
            .args(["export", "--skill", "ws", "-o", "dist"])
            .env("SKILL_FACTORY_SYSTEMONE_KEY", KEY),
    );
    assert_eq!(exported.code, Some(0), "{}", exported.stderr);
    printed.push_str(&exported.stdout);
    printed.push_str(&exported.stderr);
    assert!(!printed.contains(KEY), "{printed}");
    let files = holding(dir.path(), KEY.as_bytes());
    assert!(files.is_empty(), "the key is in {files:?}");
}

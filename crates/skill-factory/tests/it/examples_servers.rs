//! Every example has a config for a local LM Studio and a local Ollama server, as the Python
//! tool's examples have: each loads, names only that server in every provider block it has,
//! and differs from its twin only in the server and the model. (Running them against a real
//! server is the end-to-end suite's job.) Classifier-mode examples ask a System One model, not
//! a chat server, and are left out.

use std::path::{Path, PathBuf};

use skill_factory::config::{is_classifier_config, load_config};

fn examples() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut found: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("dataset.jsonl").is_file())
        .filter(|p| !is_classifier_config(&p.join("config.yaml")))
        .collect();
    found.sort();
    assert!(found.len() >= 4, "{found:?}");
    found
}

#[test]
fn every_example_has_an_lmstudio_and_an_ollama_config_naming_only_that_server() {
    for example in examples() {
        for server in ["lmstudio", "ollama"] {
            let path = example.join(format!("config.{server}.yaml"));
            let loaded = load_config(&path).unwrap_or_else(|e| panic!("{e}"));
            let config = &loaded.config;
            let blocks: Vec<_> = [
                &config.provider,
                &config.optimizer_provider,
                &config.judge_provider,
            ]
            .into_iter()
            .flatten()
            .collect();
            assert!(!blocks.is_empty(), "{}", path.display());
            for block in blocks {
                assert_eq!(block.name.as_deref(), Some(server), "{}", path.display());
                assert!(block.model.is_some(), "{}", path.display());
                assert!(block.api_key.is_none(), "{}", path.display());
            }
            // A metric judge has a block of its own, so it never falls back to another host.
            if config.metric.judge.is_some() {
                assert!(config.judge_provider.is_some(), "{}", path.display());
            }
        }
        // The settings, comments aside.
        let settings = |server: &str| -> String {
            std::fs::read_to_string(example.join(format!("config.{server}.yaml")))
                .unwrap()
                .lines()
                .filter(|line| !line.trim_start().starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let twin = settings("lmstudio")
            .replace("qwen2.5-7b-instruct", "qwen2.5:7b")
            .replace("lmstudio", "ollama");
        assert_eq!(twin, settings("ollama"), "{}", example.display());
    }
}

//! `.env.example` at the repository root lists exactly the variables the tool reads for keys,
//! endpoints, model defaults, recordings and experiment tracking (from the provider tables, so
//! a provider added later must be listed), and copied as `.env` unchanged it changes nothing.

use std::collections::BTreeSet;

use skill_factory::config::{JUDGE_MODEL_ENV, OPTIMIZER_MODEL_ENV, TARGET_MODEL_ENV};
use skill_factory::tracking::mlflow::{PASSWORD_ENV, TOKEN_ENV, USERNAME_ENV};
use skill_factory::tracking::{EXPERIMENT_ENV, URI_ENV};
use skill_factory_llm::systemone::SYSTEMONE_PROVIDERS;
use skill_factory_llm::systemone::provider::{CLOUDFLARE_ACCOUNT_ENV, OVERRIDE_KEY_ENV};
use skill_factory_llm::{PROVIDERS, RECORD_ENV, REPLAY_ENV};

use crate::common::{bin, repo_root, run};

#[test]
fn the_env_example_lists_every_variable_the_providers_read_and_nothing_else() {
    let wanted: BTreeSet<&str> = PROVIDERS
        .iter()
        .flat_map(|p| [p.key_env, p.base_url_env, p.fallback_key_env])
        .chain(SYSTEMONE_PROVIDERS.iter().map(|p| p.key_env))
        .flatten()
        .chain([
            CLOUDFLARE_ACCOUNT_ENV,
            OVERRIDE_KEY_ENV,
            TARGET_MODEL_ENV,
            OPTIMIZER_MODEL_ENV,
            JUDGE_MODEL_ENV,
            RECORD_ENV,
            REPLAY_ENV,
            URI_ENV,
            EXPERIMENT_ENV,
            TOKEN_ENV,
            USERNAME_ENV,
            PASSWORD_ENV,
        ])
        .collect();
    let text = std::fs::read_to_string(repo_root().join(".env.example")).unwrap();
    let listed: BTreeSet<&str> = text
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            line.strip_suffix('=')
                .unwrap_or_else(|| panic!("{line:?} should be `NAME=` with no value"))
        })
        .collect();
    assert_eq!(listed, wanted);
}

#[test]
fn the_env_example_copied_as_dotenv_changes_nothing() {
    let example = repo_root().join("examples/invoice-extractor");
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "config.offline.yaml",
        "dataset.jsonl",
        "seed_skill.md",
        "fake_target.yaml",
    ] {
        std::fs::copy(example.join(file), dir.path().join(file)).unwrap();
    }
    let config = dir.path().join("config.offline.yaml");
    let evaluate = || run(bin().args(["evaluate", "--no-cache", "-c"]).arg(&config));
    let without = evaluate();
    std::fs::copy(repo_root().join(".env.example"), dir.path().join(".env")).unwrap();
    let with = evaluate();
    assert_eq!(with.code, Some(0), "{}", with.stderr);
    assert_eq!((with.stdout, with.stderr), (without.stdout, without.stderr));
}

//! Every config the README and the docs show in a ```` ```yaml ```` block, whole or a fragment of
//! one, loads: the loader's own parse and checks (every key known at every depth, every value
//! in range), so a page cannot show a key that was renamed or a value the loader refuses. A
//! fragment without `skill` and `dataset` gets both, which is all it can lack; blocks that are
//! no run config (a workflow, a policy file) are named in [`NOT_CONFIGS`].

use std::path::Path;

use crate::common;
use crate::doc_commands::blocks;
use crate::docs_links::pages;

/// The YAML blocks that are not run configs, by a top-level key only they have, with what they
/// are.
const NOT_CONFIGS: [(&str, &str); 2] = [
    ("jobs", "a GitHub Actions workflow (actionlint checks it)"),
    ("levels", "a classifier policy file"),
];

/// The keys at the top level of a YAML text (lines that start with `key:`).
fn top_keys(yaml: &str) -> Vec<&str> {
    yaml.lines()
        .filter(|line| !line.starts_with([' ', '#', '-', '\t']))
        .filter_map(|line| Some(line.split_once(':')?.0.trim()))
        .collect()
}

#[test]
fn every_config_the_docs_show_loads() {
    let root = common::repo_root();
    let mut checked = 0;
    let mut problems = Vec::new();
    for page in pages(&root) {
        let text = std::fs::read_to_string(root.join(&page)).unwrap();
        for block in blocks(&text).into_iter().filter(|b| b.language == "yaml") {
            let keys = top_keys(&block.body);
            if NOT_CONFIGS.iter().any(|(key, _)| keys.contains(key)) {
                continue;
            }
            let mut config = block.body.clone();
            for (key, value) in [("skill", "seed_skill.md"), ("dataset", "dataset.jsonl")] {
                if !keys.contains(&key) {
                    config.push_str(&format!("{key}: {value}\n"));
                }
            }
            let at = format!("{}:{}", page.display(), block.line);
            match skill_factory::config::parse_config(&config, Path::new(&at)) {
                Ok(_) => checked += 1,
                Err(error) => problems.push(format!("{at}: {error}")),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    // The guide's chapters alone show more than a dozen.
    assert!(checked >= 15, "only {checked} configs found in the docs");
}

#[test]
fn a_renamed_key_in_a_shown_config_is_caught() {
    let shown = "optimizer:\n  name: gepa\n  roundz: 3\nskill: s.md\ndataset: d.jsonl\n";
    let error = skill_factory::config::parse_config(shown, Path::new("docs/guide/optimize.md:10"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("roundz") && error.contains("rounds"),
        "{error}"
    );
    assert_eq!(top_keys(shown), ["optimizer", "skill", "dataset"]);
}

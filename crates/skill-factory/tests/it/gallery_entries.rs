//! The committed gallery (`gallery/` at the repository root) says only what its runs say:
//! every entry's skill validates, its README's numbers are its `result.json`'s, it tells how
//! to replay and rerun it, its config, dataset and recorded traffic are there to do so, and
//! the index lists every entry exactly as `skill-factory gallery index` would write it. (The
//! replay itself runs through the binary, in the CLI's gallery tests.)

use std::path::{Path, PathBuf};

use skill_factory::config::load_config;
use skill_factory::gallery::facts::RunFacts;
use skill_factory::gallery::index::{index_readme, read_entries};
use skill_factory_core::Dataset;
use skill_factory_package::spec::Severity;
use skill_factory_package::validate::validate_path;

fn gallery() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../gallery")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The entry folders: every folder of the gallery holding a README.md.
fn entry_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(gallery())
        .expect("the gallery folder")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("README.md").is_file())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "the gallery should hold an entry");
    dirs
}

fn facts(entry: &Path) -> RunFacts {
    RunFacts::parse(&read(&entry.join("result.json")))
        .unwrap_or_else(|e| panic!("{}: {e}", entry.display()))
}

/// The value cell of the README's summary row `key`.
fn row<'a>(readme: &'a str, key: &str, entry: &Path) -> &'a str {
    let prefix = format!("| {key} | ");
    readme
        .lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("{}: no row {key:?}", entry.display()))
}

#[test]
fn every_entry_skill_passes_validate() {
    for entry in entry_dirs() {
        let reports = validate_path(&entry).unwrap();
        assert_eq!(reports.len(), 1, "{}: one skill", entry.display());
        let report = &reports[0];
        assert_eq!(
            report.count(Severity::Error),
            0,
            "{}: {:?}",
            report.path.display(),
            report.findings
        );
        assert!(report.path.ends_with("SKILL.md"));
        assert_eq!(
            read(&report.path),
            skill_factory_core::Skill::parse(&read(&report.path))
                .unwrap()
                .to_markdown()
        );
    }
}

#[test]
fn every_readme_gives_the_numbers_of_its_result_json() {
    for entry in entry_dirs() {
        let facts = facts(&entry);
        let readme = read(&entry.join("README.md"));
        assert!(
            readme.contains(&format!("from run `{}`", facts.run.run_id)),
            "{}",
            entry.display()
        );
        assert!(
            row(&readme, "Baseline → best (validation)", &entry).starts_with(&format!(
                "**{:.3} → {:.3}**",
                facts.baseline_score, facts.best_score
            )),
            "{}",
            entry.display()
        );
        let test = facts
            .run
            .test
            .as_ref()
            .unwrap_or_else(|| panic!("{}: gallery runs have a test split", entry.display()));
        let (Some(seed), Some(best)) = (test.seed_score, test.best_score) else {
            panic!("{}: the test split was not scored", entry.display());
        };
        assert!(
            row(&readme, "Held-out test: seed → best", &entry)
                .starts_with(&format!("**{seed:.3} → {best:.3}**")),
            "{}",
            entry.display()
        );
        assert!(facts.finished(), "{}", entry.display());
    }
}

#[test]
fn every_entry_can_be_reproduced_from_its_own_files() {
    for entry in entry_dirs() {
        let readme = read(&entry.join("README.md"));
        let reproduce = readme
            .split("\n## Reproduce\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{}: no Reproduce section", entry.display()));
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            reproduce.contains(&format!(
                "```bash\nSKILL_FACTORY_REPLAY=gallery/{name}/traffic.jsonl skill-factory \
                 optimize -c gallery/{name}/config.yaml\n```"
            )) && reproduce.contains(&format!(
                "skill-factory optimize --record -c gallery/{name}/config.yaml\n"
            )),
            "{}: {reproduce}",
            entry.display()
        );
        assert!(entry.join("traffic.jsonl").is_file(), "{}", entry.display());

        // The config loads, names the entry's files and no absolute path.
        let config_text = read(&entry.join("config.yaml"));
        assert!(
            !config_text.lines().any(|l| l.contains(": /")),
            "{}: absolute path in config.yaml",
            entry.display()
        );
        let config = load_config(&entry.join("config.yaml")).unwrap().config;
        assert_eq!(config.skill, entry.join("seed_skill.md"));
        assert!(config.test_fraction > 0.0, "{}", entry.display());
        let dataset = Dataset::from_jsonl(&read(&config.dataset), "dataset").unwrap();
        assert_eq!(
            dataset.len(),
            facts(&entry).run.splits.total(),
            "{}",
            entry.display()
        );
        assert_eq!(
            read(&entry.join("seed_skill.md")),
            read(&entry.join("candidates/000.md"))
        );
    }
}

#[test]
fn the_index_links_every_entry_and_is_up_to_date() {
    let index = read(&gallery().join("README.md"));
    for entry in entry_dirs() {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            index.contains(&format!("| [{name}]({name}/README.md) |")),
            "gallery/README.md does not link {name}"
        );
    }
    assert_eq!(
        index,
        index_readme(&read_entries(&gallery()).unwrap()),
        "gallery/README.md is stale: run `skill-factory gallery index`"
    );
}

//! What the dashboard and the gallery read back of a run folder: `result.json`,
//! `events.jsonl` and `rollouts.jsonl` as another tool or a killed run may have left them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skill_factory_io::secrets::Scrubber;
use skill_factory_ui::run::RunPage;

fuzz_target!(|input: (&str, &str, &str)| {
    let (result, events, rollouts) = input;
    let path = std::path::Path::new("run/result.json");
    let _ = skill_factory_ui::RunSummary::parse("run", path, result);
    if let Ok(facts) = skill_factory::gallery::facts::RunFacts::parse(result) {
        let _ = skill_factory::gallery::history::candidate_history(events, facts.baseline_score);
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (name, text) in [
        ("result.json", result),
        ("events.jsonl", events),
        ("rollouts.jsonl", rollouts),
    ] {
        std::fs::write(dir.path().join(name), text).expect("written");
    }
    if let Ok(page) = RunPage::load(dir.path(), "run", &Scrubber::default()) {
        let _ = page.to_json();
        let _ = page.lineage_of_best();
    }
    let rollouts = skill_factory_ui::rollouts::Rollouts::load(dir.path());
    let _ = rollouts.heatmap("val");
    let _ = rollouts.page(&Default::default(), 0);
});

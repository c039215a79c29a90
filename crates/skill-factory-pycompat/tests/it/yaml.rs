//! `yaml::dump` against outputs of the real PyYAML (`data/generate_yaml.py`).

use serde_json::Value;
use skill_factory_pycompat::yaml::dump;

const CASES: &str = include_str!("../data/yaml_cases.json");

#[test]
fn dump_matches_pyyaml_safe_dump_byte_for_byte() {
    let cases: Vec<Value> = serde_json::from_str(CASES).expect("yaml_cases.json is valid JSON");
    assert!(cases.len() > 500, "the fixture lost its cases");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().expect("every case has a name");
        let input = case["input"].as_object().expect("every input is a mapping");
        let expected = case["expected"]
            .as_str()
            .expect("every case has an expected dump");
        let actual = dump(input);
        if actual != expected {
            failures.push(format!(
                "{name}:\n  expected {expected:?}\n  actual   {actual:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

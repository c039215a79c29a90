//! A declarative policy (YAML), checked against a probe set's questions and applied.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skill_factory_lab::measure::policy::PolicySpec;

fuzz_target!(|text: &str| {
    let Ok(value) = serde_saphyr::from_str::<serde_json::Value>(text) else {
        return;
    };
    let known = |id: &str| matches!(id, "a" | "b");
    if let Ok(spec) = PolicySpec::from_json("fuzz.yaml", &value, &known) {
        // Commands are not run here: only rules are applied.
        if spec.command.is_none() {
            let policy = spec.policy();
            let _ = policy.detect_levels();
        }
        let _ = spec.describe();
    }
});

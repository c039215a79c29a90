//! A proposer model's reply in classifier mode's reflective rounds.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skill_factory_lab::probe::question::Bank;
use skill_factory_lab::optimizer::reflect::parse_proposal;

fuzz_target!(|reply: &str| {
    let pool = Bank::from_json(&serde_json::json!({
        "frames": {"reviewer": "You review."},
        "questions": {"q@reviewer": {"frame": "reviewer", "question": "Q?", "true": "Yes", "false": "No"}},
    }))
    .expect("the pool is valid");
    let _ = parse_proposal(reply, &pool, 8, Some(4000), 1000);
});

//! What an agent CLI prints in a trigger run (its event stream, read for skill loads), and a
//! model's reply to the routing request and to a request for drafted trigger queries.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skill_factory::harness::AgentCli;
use skill_factory::harness::trigger::{detect, draft, route};

fuzz_target!(|text: &str| {
    for cli in [AgentCli::ClaudeCode, AgentCli::Codex, AgentCli::GeminiCli] {
        let _ = detect::loaded(cli, text);
    }
    let listed = [route::Listed {
        name: "receipt-total".to_owned(),
        description: "Reads receipts.".to_owned(),
    }];
    let _ = route::chosen(text, &listed);
    let _ = draft::read(text);
});

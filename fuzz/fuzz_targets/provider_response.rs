//! A provider's response body in both wire formats (OpenAI chat completions, Anthropic
//! messages).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = skill_factory_llm::openai::parse_response(text, "model");
    let _ = skill_factory_llm::anthropic::parse_response(text, "model");
});

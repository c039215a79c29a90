//! Turning a conversation into the prompt text a chat model was trained on, with the model's
//! own Jinja chat template (`tokenizer.chat_template` in its GGUF file), rendered the way
//! Hugging Face's tokenizers and llama.cpp's server render it: `trim_blocks` and
//! `lstrip_blocks` on, Python string methods available, `add_generation_prompt` true.
//!
//! A model without a template gets ChatML, the format most small instruct models use.

use minijinja::{Environment, Error, ErrorKind, Value, context, syntax::SyntaxConfig};

use crate::request::Message;

/// ChatML, for GGUF files that carry no template of their own.
const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// Why a chat template cannot be used: the model's own template is arbitrary Jinja, so it may
/// not compile, or may refuse a conversation (`raise_exception`). Shown after the model file's
/// name.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TemplateError {
    /// The template engine could not be set up or could not find the compiled template.
    #[error(transparent)]
    Engine(minijinja::Error),
    /// The model's template is not valid Jinja (or uses syntax minijinja lacks).
    #[error("its chat template does not compile: {0}")]
    Compile(minijinja::Error),
    /// The template failed on this conversation, on purpose or not.
    #[error("its chat template failed on this conversation: {0}")]
    Render(minijinja::Error),
}

/// A compiled chat template.
pub(crate) struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
    /// True when the model had no template and ChatML stands in.
    pub(crate) fallback: bool,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("fallback", &self.fallback)
            .finish_non_exhaustive()
    }
}

impl ChatTemplate {
    /// Compiles `source` (the model's template, or ChatML when `None`). `bos_token` and
    /// `eos_token` are the texts of the model's special tokens, which templates may print.
    pub(crate) fn new(
        source: Option<String>,
        bos_token: String,
        eos_token: String,
    ) -> Result<Self, TemplateError> {
        let fallback = source.is_none();
        let source = source.unwrap_or_else(|| CHATML.to_string());
        let mut env = Environment::new();
        let syntax = SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(TemplateError::Engine)?;
        env.set_syntax(syntax);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        // Some templates stamp the date into the system prompt; a fixed date keeps prompts,
        // and so cached answers, the same from day to day.
        env.add_function("strftime_now", |_format: String| "01 Jan 2025".to_string());
        env.add_template_owned("chat", source)
            .map_err(TemplateError::Compile)?;
        Ok(ChatTemplate {
            env,
            bos_token,
            eos_token,
            fallback,
        })
    }

    /// The prompt for `messages` after the optional `system` prompt, ending where the
    /// assistant's answer begins.
    pub(crate) fn render(
        &self,
        system: Option<&str>,
        messages: &[Message],
    ) -> Result<String, TemplateError> {
        let mut turns: Vec<Value> = Vec::with_capacity(messages.len() + 1);
        if let Some(system) = system.filter(|s| !s.is_empty()) {
            turns.push(context! { role => "system", content => system });
        }
        for message in messages {
            turns.push(
                context! { role => message.role.as_str(), content => message.content.as_str() },
            );
        }
        let template = self
            .env
            .get_template("chat")
            .map_err(TemplateError::Engine)?;
        template
            .render(context! {
                messages => turns,
                add_generation_prompt => true,
                bos_token => self.bos_token.as_str(),
                eos_token => self.eos_token.as_str(),
            })
            .map_err(TemplateError::Render)
    }
}

/// `raise_exception(message)`: how templates reject a conversation they cannot format (for
/// example a system turn on a model that has none).
fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Role;

    /// The template of SmolLM2-135M-Instruct, as its GGUF file carries it.
    const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    fn template(source: Option<&str>) -> ChatTemplate {
        ChatTemplate::new(source.map(str::to_string), "<s>".into(), "</s>".into()).unwrap()
    }

    #[test]
    fn the_models_template_formats_system_and_user_turns() {
        let prompt = template(Some(SMOLLM2))
            .render(
                Some("Answer in one word."),
                &[Message::user("Capital of France?")],
            )
            .unwrap();
        assert_eq!(
            prompt,
            "<|im_start|>system\nAnswer in one word.<|im_end|>\n<|im_start|>user\nCapital of France?<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn without_a_system_prompt_the_templates_own_default_applies() {
        let prompt = template(Some(SMOLLM2))
            .render(None, &[Message::user("Hi")])
            .unwrap();
        assert!(
            prompt.starts_with("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
        );
        // An empty system prompt counts as none, as on the HTTP providers.
        assert_eq!(
            template(Some(SMOLLM2))
                .render(Some(""), &[Message::user("Hi")])
                .unwrap(),
            prompt
        );
    }

    #[test]
    fn a_model_without_template_gets_chatml() {
        let t = template(None);
        assert!(t.fallback);
        let prompt = t
            .render(
                Some("S"),
                &[
                    Message::user("Q"),
                    Message {
                        role: Role::Assistant,
                        content: "A".into(),
                    },
                    Message::user("Q2"),
                ],
            )
            .unwrap();
        assert_eq!(
            prompt,
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn gemma_style_templates_with_python_methods_and_bos_render() {
        // The shape of Gemma's template: bos_token, a folded system turn, .strip() and
        // raise_exception for turns out of order.
        let gemma = "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set first = messages[0]['content'] + '\n\n' %}{% set loop_messages = messages[1:] %}{% else %}{% set first = '' %}{% set loop_messages = messages %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}<start_of_turn>{{ role }}\n{{ (first if loop.first else '') + message['content'] | trim }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}";
        let t = template(Some(gemma));
        let prompt = t
            .render(Some("Be brief."), &[Message::user(" Hi ")])
            .unwrap();
        assert_eq!(
            prompt,
            "<s><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
        );
        let error = t
            .render(
                None,
                &[Message {
                    role: Role::Assistant,
                    content: "A".into(),
                }],
            )
            .unwrap_err()
            .to_string();
        assert!(error.contains("must alternate"), "{error}");
        let strip = template(Some("{{ messages[0]['content'].strip() }}"));
        assert_eq!(strip.render(None, &[Message::user("  x  ")]).unwrap(), "x");
    }

    #[test]
    fn a_template_that_does_not_compile_is_an_error_not_a_panic() {
        let error = ChatTemplate::new(Some("{% for %}".into()), String::new(), String::new())
            .unwrap_err()
            .to_string();
        assert!(error.contains("does not compile"), "{error}");
    }
}

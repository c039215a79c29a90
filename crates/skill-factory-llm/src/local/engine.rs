//! The engine behind the `local` provider: one GGUF model loaded once per file and shared by
//! every client in the process, and one thread that owns the llama.cpp context and decodes
//! every waiting request together.
//!
//! Requests queue on a channel. The engine thread keeps a fixed number of sequence slots
//! (llama.cpp "parallel sequences") and, on every step, puts into one batch the next token of
//! each answering sequence plus as much of the waiting prompts as fits: one forward pass serves
//! them all, which is what keeps both cores busy on a small model (a single sequence leaves
//! most of the matrix units idle). A slot remembers the tokens it holds in the KV cache, and a
//! new request goes to the free slot that shares the longest prefix with it, so a skill body
//! common to many tasks is read once per slot, not once per task. With a single slot (the
//! default, exactly repeatable mode) every prompt is computed whole instead: a prompt
//! computed on top of a cached prefix rounds differently, so reusing one would make an answer
//! depend on the request before it (about a fifth more time on a small model).
//!
//! The engine threads must be stopped before the process exits ([`stop_engines`]): an exit
//! while one is inside llama.cpp runs the library's global destructors under it, and crashes.

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::{DecodeError, LlamaContextLoadError, LlamaCppError, LlamaModelLoadError};
use tokio::sync::oneshot;

use super::gguf::GgufInfo;
use super::template::{ChatTemplate, TemplateError};

/// Context given to each sequence when the model allows that much: room for a long skill,
/// the task and the answer, while keeping the KV cache of several slots small.
const CONTEXT_PER_SLOT: u32 = 4096;
/// Most tokens fed to the model in one forward pass.
const BATCH_TOKENS: u32 = 512;

/// How the engine of a model file is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EngineOptions {
    /// Sequences decoded together.
    pub slots: usize,
    /// CPU threads for llama.cpp.
    pub threads: usize,
}

/// Sampling settings of one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sampling {
    /// 0 (or less) picks the most likely token every time: deterministic.
    pub temperature: f32,
    /// Seed of the random draw when the temperature is above 0.
    pub seed: u32,
}

/// One request for the engine thread.
pub(crate) struct Job {
    /// The prompt, tokenized.
    pub tokens: Vec<LlamaToken>,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Texts that end the answer (not included in it).
    pub stop: Vec<String>,
    /// How to pick tokens.
    pub sampling: Sampling,
    /// Where the answer goes.
    pub reply: oneshot::Sender<Result<Generation, JobError>>,
}

/// Why the engine of a model file could not start. Shown after the model file's name, so each
/// message says what llama.cpp (or the template) made of the file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EngineError {
    /// llama.cpp's global state could not be set up; it is set up once per process, so every
    /// later load fails with the same error.
    #[error(transparent)]
    Backend(&'static LlamaCppError),
    /// llama.cpp could not load the weights.
    #[error(
        "llama.cpp could not load it ({source}): the architecture '{architecture}' may be unknown \
         to this build, the file damaged, or the memory too small"
    )]
    Load {
        /// `general.architecture` of the file, the usual reason.
        architecture: String,
        /// What llama.cpp said.
        source: LlamaModelLoadError,
    },
    /// The model's chat template cannot be used.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// llama.cpp could not allocate the context (the KV cache of every slot).
    #[error(
        "llama.cpp could not allocate a context of {tokens} tokens ({source}); the memory may be too small"
    )]
    Context {
        /// Tokens of context asked for, every slot together.
        tokens: u32,
        /// What llama.cpp said.
        source: LlamaContextLoadError,
    },
    /// The operating system refused a thread.
    #[error("cannot start the engine thread: {0}")]
    Thread(std::io::Error),
    /// The engine thread ended before it said whether its context was allocated.
    #[error("the engine thread stopped while starting")]
    Starting,
}

/// Why the engine did not answer one request. The message of a failed batch goes to every
/// request that was in it, hence `Clone`.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum JobError {
    /// The engine thread is gone (stopped at exit), so nothing can be queued.
    #[error("the local model's engine thread has stopped")]
    Stopped,
    /// [`stop_engines`] ended the thread while the request waited or ran.
    #[error("the process is exiting")]
    Exiting,
    /// Nothing to feed the model: llama.cpp needs at least one token.
    #[error("the prompt is empty")]
    EmptyPrompt,
    /// The prompt alone fills a sequence's context.
    #[error(
        "the prompt has {tokens} tokens, but this model gets {context} tokens of context per request; \
         shorten the skill or the task input"
    )]
    PromptTooLong {
        /// Tokens of the prompt.
        tokens: usize,
        /// Tokens of context each sequence has.
        context: u32,
    },
    /// A forward pass failed; every request in it fails, each holding the one error llama.cpp
    /// gave (shared: llama.cpp's errors are not `Clone`).
    #[error("llama.cpp failed to decode a batch: {0}")]
    Decode(Arc<DecodeError>),
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// The model ended its turn, or a stop sequence appeared.
    End,
    /// `max_tokens` were generated, or the sequence's context filled up.
    Length,
}

/// A finished answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Generation {
    /// The answer, stop sequence removed.
    pub text: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens (the end-of-turn token not counted).
    pub output_tokens: u64,
    /// Why it ended.
    pub finish: Finish,
}

/// A model loaded in memory with its engine thread.
pub(crate) struct Engine {
    model: Arc<LlamaModel>,
    template: ChatTemplate,
    jobs: Sender<Job>,
    /// Tokens of context each sequence has (prompt plus answer).
    pub context_per_slot: u32,
    /// How the engine was set up.
    pub options: EngineOptions,
    bos_text: Option<String>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("context_per_slot", &self.context_per_slot)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The engines alive in this process, by canonical model path: every client of the same file
/// shares one copy of the weights and one engine thread. Entries are weak, so a model is freed
/// once its last client is dropped.
fn registry() -> &'static Mutex<HashMap<PathBuf, Weak<Engine>>> {
    static ENGINES: OnceLock<Mutex<HashMap<PathBuf, Weak<Engine>>>> = OnceLock::new();
    ENGINES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// An engine thread, and the flag that asks it to stop.
type EngineThread = (Arc<AtomicBool>, JoinHandle<()>);

/// The engine threads started in this process.
fn engine_threads() -> &'static Mutex<Vec<EngineThread>> {
    static THREADS: OnceLock<Mutex<Vec<EngineThread>>> = OnceLock::new();
    THREADS.get_or_init(|| Mutex::new(Vec::new()))
}

/// How long an idle engine thread waits for a job before looking at its stop flag.
const IDLE_POLL: Duration = Duration::from_millis(100);

/// Stops every engine thread and waits for it: requests in flight fail with a message saying
/// the process is exiting, and no thread is inside llama.cpp afterwards. Call it before the
/// process exits; clients used after it fail their calls.
pub(crate) fn stop_engines() {
    let running = std::mem::take(
        &mut *engine_threads()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    );
    for (stop, _) in &running {
        stop.store(true, Ordering::SeqCst);
    }
    for (_, thread) in running {
        let _ = thread.join();
    }
}

/// llama.cpp's global state, set up once per process.
fn backend() -> Result<&'static LlamaBackend, EngineError> {
    static BACKEND: OnceLock<Result<LlamaBackend, LlamaCppError>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // llama.cpp logs every load step to stderr; routed to tracing, they show only
            // with SKILL_FACTORY_LOG=debug.
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init()
        })
        .as_ref()
        .map_err(EngineError::Backend)
}

/// The files of the engines alive now, each once.
pub(crate) fn loaded_files() -> Vec<PathBuf> {
    let engines = registry()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut files: Vec<PathBuf> = engines
        .iter()
        .filter(|(_, weak)| weak.strong_count() > 0)
        .map(|(path, _)| path.clone())
        .collect();
    files.sort();
    files
}

/// The engine of the model at `path` (already checked to be a GGUF file described by
/// `info`): the running one if any client in the process has it, else a new one.
pub(crate) fn shared_engine(
    path: &Path,
    info: &GgufInfo,
    options: EngineOptions,
) -> Result<Arc<Engine>, EngineError> {
    let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    // Held while loading, so that two workers asking at once load the file once.
    let mut engines = registry()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(engine) = engines.get(&key).and_then(Weak::upgrade) {
        return Ok(engine);
    }
    let engine = Arc::new(Engine::load(&key, info, options)?);
    engines.retain(|_, weak| weak.strong_count() > 0);
    engines.insert(key, Arc::downgrade(&engine));
    Ok(engine)
}

impl Engine {
    fn load(path: &Path, info: &GgufInfo, options: EngineOptions) -> Result<Engine, EngineError> {
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|source| EngineError::Load {
                architecture: info.architecture.clone(),
                source,
            })?;
        let model = Arc::new(model);
        let vocab = model.vocab();
        let bos_text = token_text(&model, vocab.bos());
        let template = ChatTemplate::new(
            info.chat_template.clone(),
            bos_text.clone().unwrap_or_default(),
            token_text(&model, vocab.eos()).unwrap_or_default(),
        )?;
        let trained = model.n_ctx_train().max(256);
        let context_per_slot = trained.min(CONTEXT_PER_SLOT);
        let slots = options.slots.max(1);
        let total = context_per_slot.saturating_mul(u32::try_from(slots).unwrap_or(u32::MAX));
        let threads = i32::try_from(options.threads.max(1)).unwrap_or(1);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(total))
            .with_n_batch(BATCH_TOKENS)
            .with_n_ubatch(BATCH_TOKENS)
            .with_n_seq_max(u32::try_from(slots).unwrap_or(1))
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            // One KV cache stream per sequence: a long prompt cannot crowd out the others, and
            // no sequence is ever offered more context than the model was trained on. (A
            // unified buffer measured within noise of this in bench/local_vs_llama_server.sh.)
            .with_kv_unified(false);

        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), EngineError>>();
        let thread_model = Arc::clone(&model);
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("skill-factory-local-engine".to_string())
            .spawn(move || {
                let context = match thread_model.new_context(backend, params) {
                    Ok(context) => context,
                    Err(source) => {
                        let _ = ready_tx.send(Err(EngineError::Context {
                            tokens: total,
                            source,
                        }));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                EngineLoop::new(&thread_model, context, slots, context_per_slot)
                    .run(queue, &thread_stop);
            })
            .map_err(EngineError::Thread)?;
        engine_threads()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push((stop, thread));
        ready_rx.recv().map_err(|_| EngineError::Starting)??;
        Ok(Engine {
            model,
            template,
            jobs,
            context_per_slot,
            options: EngineOptions { slots, ..options },
            bos_text,
        })
    }

    /// The chat template in use.
    pub(crate) fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// Tokenizes a rendered prompt the way llama.cpp's server does: special tokens in the text
    /// are parsed, and the model's BOS token is added when it wants one and the template did
    /// not already print it.
    pub(crate) fn tokenize(&self, prompt: &str) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let template_printed_bos = self
            .bos_text
            .as_deref()
            .is_some_and(|bos| !bos.is_empty() && prompt.starts_with(bos));
        let add_bos = vocab.should_add_bos() && !template_printed_bos;
        vocab.tokenize(prompt.as_bytes(), add_bos, true)
    }

    /// Queues a job; the answer arrives on its `reply`.
    pub(crate) fn submit(&self, job: Job) -> Result<(), JobError> {
        self.jobs.send(job).map_err(|_| JobError::Stopped)
    }
}

/// The text of a special token, when the model has that token.
fn token_text(model: &LlamaModel, token: LlamaToken) -> Option<String> {
    let vocab = model.vocab();
    if token.0 < 0 || token.0 >= vocab.n_tokens() {
        return None;
    }
    vocab.text(token).map(|t| t.to_string_lossy().into_owned())
}

/// A sequence slot of the engine thread.
struct Slot {
    /// Its llama.cpp sequence id.
    seq: i32,
    /// The tokens whose keys and values this sequence holds, in order.
    cached: Vec<LlamaToken>,
    /// The request it is answering, if any.
    active: Option<Active>,
}

/// A request being answered.
struct Active {
    job: Job,
    /// Index of the next prompt token to feed.
    next_prompt: usize,
    sampler: LlamaSampler,
    generated: u32,
    bytes: Vec<u8>,
    /// The last sampled token, fed on the next step.
    last: Option<LlamaToken>,
    /// Where in the current batch this sequence's logits are.
    logits_at: Option<i32>,
}

/// What the engine thread owns.
struct EngineLoop<'m> {
    model: &'m LlamaModel,
    context: LlamaContext<'m>,
    slots: Vec<Slot>,
    waiting: VecDeque<Job>,
    context_per_slot: u32,
    batch: LlamaBatch<'static>,
}

impl<'m> EngineLoop<'m> {
    fn new(
        model: &'m LlamaModel,
        context: LlamaContext<'m>,
        slots: usize,
        context_per_slot: u32,
    ) -> Self {
        EngineLoop {
            model,
            context,
            slots: (0..slots)
                .map(|i| Slot {
                    seq: i32::try_from(i).unwrap_or(0),
                    cached: Vec::new(),
                    active: None,
                })
                .collect(),
            waiting: VecDeque::new(),
            context_per_slot,
            batch: LlamaBatch::new(BATCH_TOKENS as usize, 1),
        }
    }

    /// Serves jobs until every sender is gone and nothing is left to do, or until `stop` is
    /// set (then every job in flight or waiting fails).
    fn run(mut self, queue: Receiver<Job>, stop: &AtomicBool) {
        loop {
            if stop.load(Ordering::SeqCst) {
                self.fail_all(&JobError::Exiting);
                for job in self.waiting.drain(..).chain(queue.try_iter()) {
                    let _ = job.reply.send(Err(JobError::Exiting));
                }
                return;
            }
            let busy = self.slots.iter().any(|s| s.active.is_some()) || !self.waiting.is_empty();
            if !busy {
                match queue.recv_timeout(IDLE_POLL) {
                    Ok(job) => self.waiting.push_back(job),
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            // A disconnected queue still has its last jobs served; the next blocking
            // `recv` then ends the loop.
            while let Ok(job) = queue.try_recv() {
                self.waiting.push_back(job);
            }
            self.drop_abandoned();
            self.admit();
            if self.slots.iter().any(|s| s.active.is_some()) {
                self.step();
            }
        }
    }

    /// Frees the slots whose caller stopped waiting (a timeout, a cancelled run).
    fn drop_abandoned(&mut self) {
        self.waiting.retain(|job| !job.reply.is_closed());
        for slot in &mut self.slots {
            if slot
                .active
                .as_ref()
                .is_some_and(|a| a.job.reply.is_closed())
            {
                slot.active = None;
            }
        }
    }

    /// Moves waiting jobs into free slots, reusing the longest cached prefix.
    fn admit(&mut self) {
        while let Some(job) = self.waiting.pop_front() {
            if job.tokens.is_empty() {
                let _ = job.reply.send(Err(JobError::EmptyPrompt));
                continue;
            }
            if job.tokens.len() >= self.context_per_slot as usize {
                let _ = job.reply.send(Err(JobError::PromptTooLong {
                    tokens: job.tokens.len(),
                    context: self.context_per_slot,
                }));
                continue;
            }
            if job.max_tokens == 0 {
                let prompt_tokens = job.tokens.len() as u64;
                let _ = job.reply.send(Ok(Generation {
                    text: String::new(),
                    prompt_tokens,
                    output_tokens: 0,
                    finish: Finish::Length,
                }));
                continue;
            }
            let Some(index) = self.best_free_slot(&job.tokens) else {
                self.waiting.push_front(job);
                return;
            };
            self.start(index, job);
        }
    }

    fn best_free_slot(&self, tokens: &[LlamaToken]) -> Option<usize> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.active.is_none())
            .max_by_key(|(i, s)| (common_prefix(&s.cached, tokens), std::cmp::Reverse(*i)))
            .map(|(i, _)| i)
    }

    fn start(&mut self, index: usize, job: Job) {
        let repeatable = self.slots.len() == 1;
        let slot = &mut self.slots[index];
        // At least the last prompt token is fed again: its logits pick the first answer token.
        // With one slot (the repeatable mode) nothing is reused: a prompt computed on top of
        // another request's prefix rounds differently than one computed whole, so the answer
        // would depend on which request came before.
        let mut keep = if repeatable {
            0
        } else {
            common_prefix(&slot.cached, &job.tokens).min(job.tokens.len() - 1)
        };
        let trimmed = self
            .context
            .clear_kv_cache_seq(Some(slot.seq as u32), Some(keep as u32), None)
            .unwrap_or(false);
        if !trimmed {
            // Models whose memory cannot be cut at a position (recurrent ones) start over.
            let _ = self
                .context
                .clear_kv_cache_seq(Some(slot.seq as u32), None, None);
            keep = 0;
        }
        slot.cached.truncate(keep);
        let sampler = sampler_for(job.sampling);
        slot.active = Some(Active {
            job,
            next_prompt: keep,
            sampler,
            generated: 0,
            bytes: Vec::new(),
            last: None,
            logits_at: None,
        });
    }

    /// One forward pass over a batch of every active sequence, then one token sampled for
    /// each sequence whose prompt is fully read.
    fn step(&mut self) {
        self.batch.clear();
        let mut room = BATCH_TOKENS as usize;
        // Answering sequences first: one token each keeps every answer moving.
        for slot in &mut self.slots {
            let Some(active) = slot.active.as_mut() else {
                continue;
            };
            if let Some(token) = active.last.take() {
                let at = self.batch.n_tokens();
                if self
                    .batch
                    .add(token, slot.cached.len() as i32, &[slot.seq], true)
                    .is_ok()
                {
                    slot.cached.push(token);
                    active.logits_at = Some(at);
                    room -= 1;
                }
            }
        }
        // Then as much of the waiting prompts as fits.
        for slot in &mut self.slots {
            let Some(active) = slot.active.as_mut() else {
                continue;
            };
            let prompt = &active.job.tokens;
            while active.next_prompt < prompt.len() && room > 0 {
                let token = prompt[active.next_prompt];
                let last = active.next_prompt + 1 == prompt.len();
                let at = self.batch.n_tokens();
                if self
                    .batch
                    .add(token, slot.cached.len() as i32, &[slot.seq], last)
                    .is_err()
                {
                    break;
                }
                slot.cached.push(token);
                active.next_prompt += 1;
                room -= 1;
                if last {
                    active.logits_at = Some(at);
                }
            }
        }
        if self.batch.n_tokens() == 0 {
            return;
        }
        if let Err(e) = self.context.decode(&mut self.batch) {
            self.fail_all(&JobError::Decode(Arc::new(e)));
            return;
        }
        for index in 0..self.slots.len() {
            self.sample(index);
        }
    }

    fn sample(&mut self, index: usize) {
        let model = self.model;
        let context_per_slot = self.context_per_slot as usize;
        let slot = &mut self.slots[index];
        let Some(active) = slot.active.as_mut() else {
            return;
        };
        let Some(at) = active.logits_at.take() else {
            return;
        };
        let token = active.sampler.sample(&self.context, at);
        let vocab = model.vocab();
        if vocab.is_eog(token) {
            self.finish(index, Finish::End);
            return;
        }
        active.generated += 1;
        active
            .bytes
            .extend(vocab.token_to_piece(token, false, None));
        if let Some(cut) = stop_position(&active.bytes, &active.job.stop) {
            active.bytes.truncate(cut);
            self.finish(index, Finish::End);
            return;
        }
        if active.generated >= active.job.max_tokens || slot.cached.len() + 1 >= context_per_slot {
            self.finish(index, Finish::Length);
            return;
        }
        active.last = Some(token);
    }

    fn finish(&mut self, index: usize, finish: Finish) {
        let Some(active) = self.slots[index].active.take() else {
            return;
        };
        let generation = Generation {
            text: String::from_utf8_lossy(&active.bytes).into_owned(),
            prompt_tokens: active.job.tokens.len() as u64,
            output_tokens: u64::from(active.generated),
            finish,
        };
        let _ = active.job.reply.send(Ok(generation));
    }

    /// After a failed pass the cache state is unknown: every request in flight fails (its
    /// caller may retry) and every sequence starts empty.
    fn fail_all(&mut self, error: &JobError) {
        for slot in &mut self.slots {
            if let Some(active) = slot.active.take() {
                let _ = active.job.reply.send(Err(error.clone()));
            }
            slot.cached.clear();
        }
        self.context.clear_kv_cache();
    }
}

/// Greedy at temperature 0 (as llama.cpp's server); otherwise llama.cpp's default chain of
/// top-k 40, top-p 0.95, min-p 0.05 and the temperature before a seeded draw.
fn sampler_for(sampling: Sampling) -> LlamaSampler {
    if sampling.temperature <= 0.0 {
        return LlamaSampler::greedy();
    }
    LlamaSampler::chain_simple([
        LlamaSampler::top_k(40),
        LlamaSampler::top_p(0.95, 1),
        LlamaSampler::min_p(0.05, 1),
        LlamaSampler::temp(sampling.temperature),
        LlamaSampler::dist(sampling.seed),
    ])
}

/// Length of the common start of two token lists.
fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Where the first stop sequence starts in the answer so far, if one has appeared.
pub(crate) fn stop_position(bytes: &[u8], stops: &[String]) -> Option<usize> {
    stops
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| {
            bytes
                .windows(s.len())
                .position(|window| window == s.as_bytes())
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_stop_sequence_cuts_the_answer() {
        let stops = vec!["\n\n".to_string(), "END".to_string(), String::new()];
        assert_eq!(stop_position(b"abc END x\n\n", &stops), Some(4));
        assert_eq!(stop_position(b"abc\n\nEND", &stops), Some(3));
        assert_eq!(stop_position(b"no stop here", &stops), None);
        assert_eq!(stop_position(b"anything", &[]), None);
    }

    #[test]
    fn common_prefix_counts_shared_leading_tokens() {
        let t = |v: &[i32]| v.iter().map(|&x| LlamaToken(x)).collect::<Vec<_>>();
        assert_eq!(common_prefix(&t(&[1, 2, 3]), &t(&[1, 2, 4, 5])), 2);
        assert_eq!(common_prefix(&t(&[]), &t(&[1])), 0);
        assert_eq!(common_prefix(&t(&[1, 2]), &t(&[1, 2])), 2);
    }
}

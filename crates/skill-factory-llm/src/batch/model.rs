//! [`BatchedModel`]: a client whose calls are gathered into provider batches.
//!
//! A call is not sent: it joins the requests gathered for the next batch, and waits. Once no
//! call has joined for [`BatchOptions::gather`] (or [`BatchOptions::max_requests`] have),
//! the gathered requests are submitted as one batch, whose id is written to the
//! [`Journal`] before anyone waits on it; the batch is polled ([`BatchApi::wait`]) and its
//! answers handed to their callers. A request the batch did not answer (it errored or
//! expired, or the batch could not be submitted or read) is asked directly, through the
//! ordinary client beneath, and counted on the [`BatchBoard`]. A batch of one request while
//! other calls wait for room in the run's budget gives batch mode up for the run
//! ([`BatchBoard::hold_to`]): from then on every call is asked directly.
//!
//! Each request's `custom_id` is its cache key ([`CacheKey`]), so identical calls share one
//! request and a run started again finds its requests in the batches an interrupted run left
//! owing: those are polled again, not submitted again. The layer sits where the provider's
//! client does, beneath the cache, so every answer is cached exactly as a direct one.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::oneshot;

use crate::batch::{BatchAnswer, BatchApi, BatchBoard, BatchEvent, BatchRequest, Journal, Polls};
use crate::cache::{CacheKey, CacheStore};
use crate::request::{ChatModel, ChatRequest, ChatResponse, LlmError};

/// How a [`BatchedModel`] gathers and polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOptions {
    /// A batch is submitted once no call has joined it for this long.
    pub gather: Duration,
    /// A batch is submitted once it holds this many requests.
    pub max_requests: usize,
    /// A batch is submitted once its requests' text reaches this many bytes (Anthropic takes
    /// 256 MB a batch, OpenAI 200 MB a file; the JSON around the text adds some).
    pub max_bytes: usize,
    /// How its batches are polled.
    pub polls: Polls,
}

impl Default for BatchOptions {
    /// Half a second's quiet (an evaluation's rollouts all ask within milliseconds), and at
    /// most 10,000 requests (both providers take more; smaller batches start sooner and fail
    /// smaller).
    fn default() -> Self {
        BatchOptions {
            gather: Duration::from_millis(500),
            max_requests: 10_000,
            max_bytes: 100 * 1024 * 1024,
            polls: Polls::default(),
        }
    }
}

/// A client that answers its calls through the provider's batch API, and asks the `direct`
/// client for what a batch did not answer.
pub struct BatchedModel {
    direct: Arc<dyn ChatModel>,
    hub: Arc<Hub>,
}

/// What the calls of one batched client share: the gathering, the waiting, and the batches.
struct Hub {
    api: BatchApi,
    provider: String,
    endpoint: String,
    model: String,
    journal: Option<Journal>,
    board: Arc<BatchBoard>,
    options: BatchOptions,
    /// Where answers no caller took are kept (the run's cache, when it has one).
    cache: Option<Arc<CacheStore>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Requests gathered for the next batch, in arrival order.
    gathering: Vec<BatchRequest>,
    /// The bytes of their text.
    gathered_bytes: usize,
    /// Requests that joined since the gatherer last looked.
    joined: usize,
    /// Whether a gatherer is running (at most one is).
    gatherer: bool,
    /// The callers waiting for each request, gathered or in a batch.
    waiting: HashMap<String, Vec<oneshot::Sender<BatchAnswer>>>,
    /// The requests of batches an earlier run left owing, each with its batch.
    owed: HashMap<String, String>,
    /// The requests of each owed batch.
    owed_batches: HashMap<String, Vec<String>>,
    /// Owed batches being polled.
    polling: HashSet<String>,
    /// Answers of owed batches that arrived before anyone asked for them.
    ready: HashMap<String, BatchAnswer>,
}

impl BatchedModel {
    /// Batches the calls of `direct` through `api` (the same provider, endpoint and model).
    /// `journal`, when given, keeps the ids of submitted batches, and its owed batches of
    /// this client are polled again when their requests are asked for; `cache`, when given,
    /// keeps the answers no caller took, under the key a direct call of theirs has.
    pub fn new(
        direct: Arc<dyn ChatModel>,
        api: BatchApi,
        journal: Option<Journal>,
        cache: Option<Arc<CacheStore>>,
        board: Arc<BatchBoard>,
        options: BatchOptions,
    ) -> Self {
        let (provider, endpoint, model) = (
            direct.provider().to_string(),
            direct.endpoint().to_string(),
            direct.model().to_string(),
        );
        let mut state = State::default();
        if let Some(journal) = &journal {
            for (batch, ids) in journal.owed(&provider, &endpoint, &model) {
                for id in &ids {
                    state.owed.insert(id.clone(), batch.clone());
                }
                state.owed_batches.insert(batch, ids);
            }
        }
        BatchedModel {
            direct,
            hub: Arc::new(Hub {
                api,
                provider,
                endpoint,
                model,
                journal,
                board,
                options,
                cache,
                state: Mutex::new(state),
            }),
        }
    }
}

#[async_trait]
impl ChatModel for BatchedModel {
    crate::request::delegate_identity!(direct);

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let hub = &self.hub;
        if hub.board.is_abandoned() {
            return Err(abandoned());
        }
        if hub.board.is_direct() {
            hub.board.asked_directly();
            return self.direct.chat(request).await;
        }
        let id = CacheKey::new(&hub.provider, &hub.endpoint, &hub.model, request).to_hex();
        let answer = match hub.join(&id, request) {
            Joined::Ready(answer) => answer,
            Joined::Waiting(receiver) => tokio::select! {
                answer = receiver => answer.unwrap_or_else(|_| {
                    BatchAnswer::Failed("the batch's poller stopped".to_string())
                }),
                () = hub.board.abandoned() => return Err(abandoned()),
            },
        };
        match answer {
            BatchAnswer::Answered(mut response) => {
                response.batch = true;
                response.cached = false;
                response.latency = started.elapsed();
                Ok(response)
            }
            BatchAnswer::Failed(reason) => {
                tracing::debug!("a batched request is asked directly: {reason}");
                hub.board.asked_directly();
                self.direct.chat(request).await
            }
        }
    }
}

enum Joined {
    Ready(BatchAnswer),
    Waiting(oneshot::Receiver<BatchAnswer>),
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Puts the caller of request `id` in line for its answer: an owed batch's, the one
    /// already asked for by another caller, or the next batch's.
    fn join(self: &Arc<Self>, id: &str, request: &ChatRequest) -> Joined {
        let mut state = self.lock();
        if let Some(answer) = state.ready.remove(id) {
            return Joined::Ready(answer);
        }
        let (sender, receiver) = oneshot::channel();
        let first = !state.waiting.contains_key(id);
        state
            .waiting
            .entry(id.to_string())
            .or_default()
            .push(sender);
        if !first {
            return Joined::Waiting(receiver);
        }
        if let Some(batch) = state.owed.get(id).cloned() {
            if state.polling.insert(batch.clone()) {
                let ids = state.owed_batches.get(&batch).cloned().unwrap_or_default();
                self.board.tell(BatchEvent::Resumed {
                    id: batch.clone(),
                    requests: ids.len(),
                });
                tokio::spawn(self.clone().poll(batch, ids, true));
            }
        } else {
            state.gathered_bytes += text_bytes(request);
            state.gathering.push(BatchRequest {
                custom_id: id.to_string(),
                request: request.clone(),
            });
            state.joined += 1;
            if !state.gatherer {
                state.gatherer = true;
                tokio::spawn(self.clone().gather());
            }
        }
        Joined::Waiting(receiver)
    }

    /// Submits the gathered requests once none has joined for a while, as many batches as
    /// it takes, then stops (the next call starts another gatherer).
    async fn gather(self: Arc<Self>) {
        loop {
            tokio::time::sleep(self.options.gather).await;
            let (requests, more) = {
                let mut state = self.lock();
                let quiet = state.joined == 0;
                state.joined = 0;
                let full = state.gathering.len() >= self.options.max_requests
                    || state.gathered_bytes >= self.options.max_bytes;
                if !quiet && !full {
                    continue;
                }
                // As many as fit, and at least one (a request bigger than the cap goes alone).
                let mut take = 0;
                let mut bytes = 0;
                for request in &state.gathering {
                    let size = text_bytes(&request.request);
                    if take == self.options.max_requests
                        || (take > 0 && bytes + size > self.options.max_bytes)
                    {
                        break;
                    }
                    take += 1;
                    bytes += size;
                }
                let requests: Vec<BatchRequest> = state.gathering.drain(..take).collect();
                state.gathered_bytes -= bytes;
                let more = !state.gathering.is_empty();
                state.gatherer = more;
                (requests, more)
            };
            if !requests.is_empty() {
                tokio::spawn(self.clone().submit(requests));
            }
            if !more {
                return;
            }
        }
    }

    /// Submits one batch, notes it in the journal, and polls it.
    async fn submit(self: Arc<Self>, requests: Vec<BatchRequest>) {
        let ids: Vec<String> = requests.iter().map(|r| r.custom_id.clone()).collect();
        if self.board.is_abandoned() {
            // Nobody waits any more: nothing is paid for.
            return self.fail(&ids, "the run stopped waiting", None);
        }
        if self.board.one_at_a_time(ids.len()) {
            return self.fail(
                &ids,
                "the budget holds one request at a time, so batch mode is off",
                None,
            );
        }
        let batch = match self.api.submit(&requests).await {
            Ok(batch) => batch,
            Err(error) => {
                tracing::warn!(
                    "a batch of {} requests could not be submitted ({error}); asking them directly",
                    ids.len()
                );
                return self.fail(
                    &ids,
                    &format!("the batch could not be submitted: {error}"),
                    None,
                );
            }
        };
        drop(requests);
        if let Some(journal) = &self.journal
            && let Err(error) =
                journal.submitted(&batch, (&self.provider, &self.endpoint, &self.model), &ids)
        {
            tracing::warn!(
                "could not note batch {batch} in {} ({error}): a run killed before it ends would submit it again",
                journal.path().display()
            );
        }
        self.board.tell(BatchEvent::Submitted {
            id: batch.clone(),
            requests: ids.len(),
        });
        self.poll(batch, ids, false).await;
    }

    /// Waits for the batch `batch` to end and hands out its answers; the requests it did not
    /// answer are failed, to be asked directly. An owed batch's answers nobody waits for yet
    /// are kept for the callers still to come.
    async fn poll(self: Arc<Self>, batch: String, ids: Vec<String>, owed: bool) {
        let board = self.board.clone();
        let results = match self
            .api
            .wait(&batch, self.options.polls, |p| board.progress(&batch, p))
            .await
        {
            Ok(()) => self.read_results(&batch).await,
            Err(error) => Err(error),
        };
        let answers = match results {
            Ok(answers) => answers,
            Err(error) => {
                tracing::warn!(
                    "batch {batch} could not be read ({error}); asking its requests directly"
                );
                // A batch the provider does not know (gone after its retention, another
                // account's) will not come back: the journal owes it no more. Any other
                // failure leaves it owed, for a rerun to poll again.
                if matches!(
                    error,
                    LlmError::Status {
                        status: 404 | 410,
                        ..
                    }
                ) && let Some(journal) = &self.journal
                {
                    let _ = journal.read(&batch);
                }
                let reason = format!("batch {batch} could not be read: {error}");
                return self.fail(&ids, &reason, owed.then_some(&batch));
            }
        };
        let failed = answers
            .iter()
            .filter(|(_, a)| matches!(a, BatchAnswer::Failed(_)))
            .count();
        board.tell(BatchEvent::Read {
            id: batch.clone(),
            answered: answers.len() - failed,
            failed,
        });
        let unclaimed = {
            let mut state = self.lock();
            let mut unanswered: HashSet<&String> = ids.iter().collect();
            let mut unclaimed = Vec::new();
            for (id, answer) in answers {
                unanswered.remove(&id);
                unclaimed.extend(deliver(&mut state, &id, answer, owed));
            }
            for id in unanswered {
                let reason = format!("batch {batch} gave no result for it");
                deliver(&mut state, id, BatchAnswer::Failed(reason), owed);
            }
            if owed {
                forget_owed(&mut state, &batch, &ids);
            }
            unclaimed
        };
        // Answers paid for that nobody waits for (an earlier run's requests this one does
        // not ask, or callers gone) go to the cache, before the journal lets the batch go.
        if let Some(cache) = &self.cache {
            for (id, response) in unclaimed {
                let Some(key) = CacheKey::from_hex(&id) else {
                    continue;
                };
                let stored = cache
                    .put_in_background(key, self.provider.clone(), self.model.clone(), response)
                    .await;
                if let Err(error) = stored {
                    tracing::warn!("could not cache an answer of batch {batch}: {error}");
                }
            }
        }
        if let Some(journal) = &self.journal
            && let Err(error) = journal.read(&batch)
        {
            tracing::warn!(
                "could not note in {} that batch {batch} was read ({error})",
                journal.path().display()
            );
        }
    }

    /// The results of the ended batch `batch`, tried again after a failure that may pass, as
    /// its looks are: a results file already paid for is worth a few tries.
    async fn read_results(&self, batch: &str) -> Result<Vec<(String, BatchAnswer)>, LlmError> {
        let mut failures = 0;
        loop {
            match self.api.results(batch).await {
                Err(error) if error.is_retryable() && failures < self.options.polls.failures => {
                    failures += 1;
                    tracing::debug!(
                        "batch {batch}: reading its results failed ({error}); trying again"
                    );
                    tokio::time::sleep(self.options.polls.first).await;
                }
                read => return read,
            }
        }
    }

    /// Fails the requests `ids`, to be asked directly; `owed` names the owed batch they
    /// belong to, which is then owed no more in this run (its later callers ask directly).
    fn fail(&self, ids: &[String], reason: &str, owed: Option<&String>) {
        let mut state = self.lock();
        for id in ids {
            deliver(
                &mut state,
                id,
                BatchAnswer::Failed(reason.to_string()),
                false,
            );
        }
        if let Some(batch) = owed {
            forget_owed(&mut state, batch, ids);
        }
    }
}

/// Why a call stopped waiting for its batch.
fn abandoned() -> LlmError {
    LlmError::Abandoned(
        "the run stopped waiting for this request's batch; rerun the command to poll it again"
            .to_string(),
    )
}

/// The bytes of a request's text, which is most of its size in a batch.
fn text_bytes(request: &ChatRequest) -> usize {
    request.system.as_ref().map_or(0, String::len)
        + request
            .messages
            .iter()
            .map(|m| m.content.len())
            .sum::<usize>()
}

fn forget_owed(state: &mut State, batch: &str, ids: &[String]) {
    state.polling.remove(batch);
    state.owed_batches.remove(batch);
    for id in ids {
        state.owed.remove(id);
    }
}

/// Hands `answer` to every caller waiting for `id`. An answer no caller took (none waits, or
/// all have gone) is returned, for the cache; with `keep` (an owed batch's request not asked
/// for yet in this run) it is also kept for a caller to come.
fn deliver(
    state: &mut State,
    id: &str,
    answer: BatchAnswer,
    keep: bool,
) -> Option<(String, ChatResponse)> {
    let mut taken = false;
    for waiter in state.waiting.remove(id).unwrap_or_default() {
        taken |= waiter.send(answer.clone()).is_ok();
    }
    let BatchAnswer::Answered(response) = answer else {
        return None;
    };
    if taken {
        return None;
    }
    if keep {
        state
            .ready
            .insert(id.to_string(), BatchAnswer::Answered(response.clone()));
    }
    Some((id.to_string(), response))
}

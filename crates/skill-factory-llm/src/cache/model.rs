//! [`CachedModel`]: any model client, answered from the cache when the same request was
//! answered before.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;

use super::key::CacheKey;
use super::store::{CacheStore, Hit};
use crate::request::{ChatModel, ChatRequest, ChatResponse, LlmError};

/// A model client in front of which the cache sits.
///
/// A hit returns the whole stored answer (text, usage, stop reason, answering model) with
/// `cached: true`. A miss asks the model and stores a successful answer before returning it;
/// errors are never stored. Identical requests in flight at the same time are asked once: the
/// others wait for that answer. When the cache itself fails (a full disk, a lock held too
/// long), the call goes to the model as if there were no cache, and one warning says why.
pub struct CachedModel {
    inner: Arc<dyn ChatModel>,
    store: Arc<CacheStore>,
    in_flight: Mutex<HashMap<CacheKey, Arc<tokio::sync::Mutex<()>>>>,
    warned: AtomicBool,
}

impl CachedModel {
    /// `inner` with `store` in front of it.
    pub fn new(inner: Arc<dyn ChatModel>, store: Arc<CacheStore>) -> Self {
        CachedModel {
            inner,
            store,
            in_flight: Mutex::new(HashMap::new()),
            warned: AtomicBool::new(false),
        }
    }

    /// The key `request` is stored under for this client.
    pub fn key(&self, request: &ChatRequest) -> CacheKey {
        CacheKey::new(
            self.inner.provider(),
            self.inner.endpoint(),
            self.inner.model(),
            request,
        )
    }

    /// The store it reads and writes.
    pub fn store(&self) -> &Arc<CacheStore> {
        &self.store
    }

    fn lookup(&self, key: &CacheKey) -> Option<Hit> {
        match self.store.get(key) {
            Ok(hit) => hit,
            Err(error) => {
                self.warn(&error);
                None
            }
        }
    }

    fn warn(&self, error: &dyn std::fmt::Display) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!("{error}; calls go to the model uncached");
        }
    }

    fn answer(&self, key: &CacheKey, hit: Hit, started: Instant) -> ChatResponse {
        self.store.note_hit(key, &hit);
        let mut response = hit.response;
        response.latency = started.elapsed();
        response
    }

    /// Joins the requests in flight for `key`; the first to lock the returned flight asks.
    fn flight(&self, key: CacheKey) -> Flight<'_> {
        let mut flights = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        let turn = flights.entry(key).or_default().clone();
        Flight {
            model: self,
            key,
            turn,
        }
    }

    async fn store_answer(&self, key: CacheKey, response: &ChatResponse) {
        let written = self
            .store
            .put_in_background(
                key,
                self.inner.provider().to_string(),
                self.inner.model().to_string(),
                response.clone(),
            )
            .await;
        if let Err(error) = written {
            self.warn(&error);
        }
    }
}

#[async_trait]
impl ChatModel for CachedModel {
    crate::request::delegate_identity!(inner);

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let key = self.key(request);
        if let Some(hit) = self.lookup(&key) {
            return Ok(self.answer(&key, hit, started));
        }
        let flight = self.flight(key);
        let _turn = flight.turn.lock().await;
        // Someone asking the same thing may have stored the answer while we waited.
        if let Some(hit) = self.lookup(&key) {
            return Ok(self.answer(&key, hit, started));
        }
        self.store.note_miss();
        let answer = self.inner.chat(request).await;
        if let Ok(response) = &answer {
            self.store_answer(key, response).await;
        }
        answer
    }
}

/// One caller's place among the identical requests in flight; leaving (also by
/// cancellation) removes the entry once nobody else holds it.
struct Flight<'a> {
    model: &'a CachedModel,
    key: CacheKey,
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        let mut flights = self
            .model
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Two references: the map's and ours. More means someone else is still waiting.
        if Arc::strong_count(&self.turn) <= 2 {
            flights.remove(&self.key);
        }
    }
}

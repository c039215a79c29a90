//! The model cache: what a hit returns, what is never stored, the modes, a bad file, and many
//! writers at once.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use skill_factory_llm::cache::Cleared;
use skill_factory_llm::{
    CacheError, CacheMode, CacheStore, CachedModel, ChatModel, ChatRequest, ChatResponse, LlmError,
    ModelLayers, ProviderSettings, Scheduler, StopReason, TokenUsage,
};

/// A model that counts its calls and answers with the call number, so that a repeated answer
/// can only have come from the cache.
struct Counting {
    calls: AtomicUsize,
    fail: bool,
    delay: Duration,
}

impl Counting {
    fn new() -> Arc<Self> {
        Arc::new(Counting {
            calls: AtomicUsize::new(0),
            fail: false,
            delay: Duration::ZERO,
        })
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl ChatModel for Counting {
    fn provider(&self) -> &str {
        "openai"
    }

    fn model(&self) -> &str {
        "m"
    }

    fn endpoint(&self) -> &str {
        "http://127.0.0.1:9/v1/chat/completions"
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::time::sleep(self.delay).await;
        if self.fail {
            return Err(LlmError::Status {
                provider: "openai".into(),
                status: 500,
                body: "boom".into(),
            });
        }
        Ok(ChatResponse {
            text: format!("answer {n} to {}", request.messages[0].content),
            usage: TokenUsage {
                input_tokens: 11,
                output_tokens: n as u64,
            },
            stop_reason: StopReason::MaxTokens,
            model: "m-2026-01".into(),
            latency: Duration::from_millis(5),
            cached: false,
            batch: false,
        })
    }
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest::single(Some("Be brief.".into()), text, 0.0, 32)
}

fn cache_path(dir: &Path) -> PathBuf {
    dir.join(".skill-factory").join("cache.sqlite")
}

fn store(path: &Path, mode: CacheMode) -> Arc<CacheStore> {
    Arc::new(CacheStore::open(path, mode).expect("the cache opens"))
}

fn cached(model: &Arc<Counting>, store: &Arc<CacheStore>) -> CachedModel {
    CachedModel::new(model.clone(), store.clone())
}

#[tokio::test]
async fn a_hit_returns_the_whole_answer_marked_cached_without_asking_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = Counting::new();
    let client = cached(
        &model,
        &store(&cache_path(dir.path()), CacheMode::ReadWrite),
    );
    let first = client.chat(&ask("hello")).await.unwrap();
    assert!(!first.cached);
    let second = client.chat(&ask("hello")).await.unwrap();
    assert_eq!(model.calls(), 1);
    assert!(second.cached);
    assert_eq!(
        (
            &second.text,
            second.usage,
            second.stop_reason,
            &second.model
        ),
        (&first.text, first.usage, first.stop_reason, &first.model)
    );

    // Another store on the same file (a later run) hits too.
    let later = cached(
        &model,
        &store(&cache_path(dir.path()), CacheMode::ReadWrite),
    );
    assert_eq!(later.chat(&ask("hello")).await.unwrap().text, first.text);
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn errors_are_never_cached() {
    let dir = tempfile::tempdir().unwrap();
    let failing = Arc::new(Counting {
        fail: true,
        ..Arc::into_inner(Counting::new()).unwrap()
    });
    let store = store(&cache_path(dir.path()), CacheMode::ReadWrite);
    let client = CachedModel::new(failing.clone(), store.clone());
    assert!(client.chat(&ask("hello")).await.is_err());
    assert!(client.chat(&ask("hello")).await.is_err());
    assert_eq!(failing.calls(), 2, "a failure must be asked again");
    assert!(
        !cache_path(dir.path()).exists(),
        "no answer, so no file either"
    );
}

#[tokio::test]
async fn samples_above_temperature_zero_are_cached_apart_by_sample_index() {
    let dir = tempfile::tempdir().unwrap();
    let model = Counting::new();
    let client = cached(
        &model,
        &store(&cache_path(dir.path()), CacheMode::ReadWrite),
    );
    let sample = |index| ChatRequest {
        temperature: 0.9,
        sample_index: index,
        ..ask("write a haiku")
    };
    let zero = client.chat(&sample(0)).await.unwrap();
    let one = client.chat(&sample(1)).await.unwrap();
    assert_ne!(zero.text, one.text, "two samples are two answers");
    assert_eq!(model.calls(), 2);
    let zero_again = client.chat(&sample(0)).await.unwrap();
    let one_again = client.chat(&sample(1)).await.unwrap();
    assert_eq!((zero_again.text, one_again.text), (zero.text, one.text));
    assert_eq!(model.calls(), 2, "the same sample index is a hit");
}

#[tokio::test]
async fn read_only_answers_from_the_cache_but_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let model = Counting::new();
    // Nothing there: read_only creates nothing.
    let client = cached(&model, &store(&path, CacheMode::ReadOnly));
    client.chat(&ask("a")).await.unwrap();
    assert!(!path.exists());

    cached(&model, &store(&path, CacheMode::ReadWrite))
        .chat(&ask("a"))
        .await
        .unwrap();
    let before = store(&path, CacheMode::ReadOnly).stats().unwrap();
    assert_eq!(before.entries, 1);

    let read_only = store(&path, CacheMode::ReadOnly);
    let client = cached(&model, &read_only);
    assert!(client.chat(&ask("a")).await.unwrap().cached);
    let calls = model.calls();
    assert!(!client.chat(&ask("b")).await.unwrap().cached);
    assert!(!client.chat(&ask("b")).await.unwrap().cached);
    assert_eq!(model.calls(), calls + 2, "read_only stores nothing");
    drop(client);
    drop(read_only);
    let after = store(&path, CacheMode::ReadOnly).stats().unwrap();
    assert_eq!(
        (after.entries, after.hits, after.misses),
        (before.entries, before.hits, before.misses),
        "read_only does not even count its use"
    );
}

#[tokio::test]
async fn off_never_reads_and_layers_leave_it_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let model = Counting::new();
    cached(&model, &store(&path, CacheMode::ReadWrite))
        .chat(&ask("a"))
        .await
        .unwrap();
    let off = store(&path, CacheMode::Off);
    let client = cached(&model, &off);
    assert!(!client.chat(&ask("a")).await.unwrap().cached);
    assert!(!client.chat(&ask("a")).await.unwrap().cached);
    assert_eq!(model.calls(), 3);
    assert!(
        ModelLayers::default().with_cache(off).cache().is_none(),
        "mode off is no cache at all"
    );
}

#[tokio::test]
async fn identical_requests_in_flight_are_asked_once() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Arc::new(Counting {
        delay: Duration::from_millis(100),
        ..Arc::into_inner(Counting::new()).unwrap()
    });
    let client = Arc::new(CachedModel::new(
        slow.clone(),
        store(&cache_path(dir.path()), CacheMode::ReadWrite),
    ));
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let client = client.clone();
        calls.spawn(async move { client.chat(&ask("same")).await.unwrap().text });
    }
    let texts: Vec<String> = calls.join_all().await;
    assert_eq!(slow.calls(), 1);
    assert!(texts.iter().all(|t| t == &texts[0]));
}

#[test]
fn nothing_is_created_until_an_answer_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let store = store(&path, CacheMode::ReadWrite);
    assert!(store.get(&key("a")).unwrap().is_none());
    store.note_miss();
    store.flush().unwrap();
    let stats = store.stats().unwrap();
    assert!(!stats.exists && !path.exists());
    assert!(!dir.path().join(".skill-factory").exists());
}

fn key(text: &str) -> skill_factory_llm::CacheKey {
    skill_factory_llm::CacheKey::new("openai", "http://x", "m", &ask(text))
}

fn answer(text: &str) -> ChatResponse {
    ChatResponse {
        text: text.to_string(),
        usage: TokenUsage {
            input_tokens: 1,
            output_tokens: 2,
        },
        stop_reason: StopReason::End,
        model: "m".into(),
        latency: Duration::ZERO,
        cached: false,
        batch: false,
    }
}

#[test]
fn a_damaged_cache_is_an_error_naming_the_path_and_the_fix_and_clear_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    let filled = store(&path, CacheMode::ReadWrite);
    filled.put(&key("a"), "openai", "m", &answer("x")).unwrap();
    drop(filled);
    // Keep SQLite's header (and so the cache's mark), break everything after it.
    let mut bytes = std::fs::read(&path).unwrap();
    for byte in bytes.iter_mut().skip(100) {
        *byte = 0xA5;
    }
    std::fs::write(&path, bytes).unwrap();
    let error = CacheStore::open(&path, CacheMode::ReadWrite)
        .and_then(|store| store.verify())
        .unwrap_err();
    assert!(matches!(error, CacheError::Corrupt { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string())
            && message.contains("skill-factory cache clear"),
        "{message}"
    );
    // Off does not look at the file at all.
    assert!(CacheStore::open(&path, CacheMode::Off).is_ok());
    // `cache clear` is the fix.
    assert!(matches!(
        CacheStore::clear(&path).unwrap(),
        Cleared::Removed(_)
    ));
    assert!(!path.exists());
    let store = store(&path, CacheMode::ReadWrite);
    store.put(&key("a"), "openai", "m", &answer("x")).unwrap();
    assert_eq!(store.stats().unwrap().entries, 1);
}

#[test]
fn a_file_that_is_not_a_cache_is_refused_and_never_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "precious\n").unwrap();
    let dataset = dir.path().join("dataset.jsonl");
    std::fs::write(&dataset, "{\"input\": \"x\"}\n".repeat(300)).unwrap();
    let foreign = dir.path().join("foreign.sqlite");
    let connection = rusqlite::Connection::open(&foreign).unwrap();
    connection
        .execute_batch("CREATE TABLE invoices (id INTEGER); INSERT INTO invoices VALUES (1);")
        .unwrap();
    drop(connection);
    for path in [&notes, &dataset, &foreign] {
        let before = std::fs::read(path).unwrap();
        for mode in [CacheMode::ReadWrite, CacheMode::ReadOnly] {
            let error = CacheStore::open(path, mode).unwrap_err();
            assert!(matches!(error, CacheError::NotACache { .. }), "{error:?}");
            let message = error.to_string();
            assert!(
                message.contains("is not a Skill Factory model cache")
                    && !message.contains("cache clear"),
                "{message}"
            );
        }
        let refused = CacheStore::clear(path).unwrap_err();
        assert!(
            matches!(refused, CacheError::NotACache { .. }),
            "{refused:?}"
        );
        assert_eq!(std::fs::read(path).unwrap(), before, "{}", path.display());
    }
}

#[test]
fn a_new_cache_carries_the_mark_that_tells_it_from_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    store(&path, CacheMode::ReadWrite)
        .put(&key("a"), "openai", "m", &answer("x"))
        .unwrap();
    let header = std::fs::read(&path).unwrap();
    let mark = i32::from_be_bytes([header[68], header[69], header[70], header[71]]);
    assert_eq!(mark, skill_factory_llm::cache::APPLICATION_ID);
}

#[test]
fn a_file_from_a_newer_build_or_another_program_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let newer = dir.path().join("newer.sqlite");
    let connection = rusqlite::Connection::open(&newer).unwrap();
    connection
        .execute_batch("PRAGMA user_version = 99;")
        .unwrap();
    drop(connection);
    let error = CacheStore::open(&newer, CacheMode::ReadWrite).unwrap_err();
    assert!(
        matches!(error, CacheError::NewerSchema { found: 99, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("newer.sqlite"), "{error}");

    let foreign = dir.path().join("foreign.sqlite");
    let connection = rusqlite::Connection::open(&foreign).unwrap();
    connection
        .execute_batch("CREATE TABLE invoices (id INTEGER);")
        .unwrap();
    drop(connection);
    let error = CacheStore::open(&foreign, CacheMode::ReadWrite).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("not a Skill Factory model cache"),
        "{error}"
    );
}

#[tokio::test]
async fn stats_count_entries_hits_and_misses_over_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let model = Counting::new();
    // The first run misses everything, the second hits everything.
    for expected in [(0, 3), (3, 0)] {
        let store = store(&path, CacheMode::ReadWrite);
        let client = cached(&model, &store);
        for text in ["a", "b", "c"] {
            client.chat(&ask(text)).await.unwrap();
        }
        assert_eq!((store.run_hits(), store.run_misses()), expected);
    }
    let stats = store(&path, CacheMode::ReadOnly).stats().unwrap();
    assert_eq!((stats.entries, stats.hits, stats.misses), (3, 3, 3));
    assert!(stats.exists && stats.bytes_on_disk > 0);
    assert!(stats.oldest.is_some() && stats.oldest <= stats.newest);
}

#[tokio::test]
async fn clear_empties_the_cache_while_another_store_has_it_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let model = Counting::new();
    let open = store(&path, CacheMode::ReadWrite);
    let client = cached(&model, &open);
    client.chat(&ask("a")).await.unwrap();
    client.chat(&ask("b")).await.unwrap();
    assert_eq!(CacheStore::clear(&path).unwrap(), Cleared::Emptied(2));
    // The store that was open goes on working on the emptied file.
    assert!(!client.chat(&ask("a")).await.unwrap().cached);
    assert!(client.chat(&ask("a")).await.unwrap().cached);
    assert_eq!(
        CacheStore::clear(&dir.path().join("none.sqlite")).unwrap(),
        Cleared::Missing
    );
}

#[test]
fn concurrent_writers_on_their_own_connections_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let path = path.clone();
            std::thread::spawn(move || {
                // One store per thread: separate connections lock like separate processes.
                let store = CacheStore::open(&path, CacheMode::ReadWrite).unwrap();
                for i in 0..100 {
                    let text = format!("w{writer}-{i}");
                    store
                        .put(&key(&text), "openai", "m", &answer(&text))
                        .unwrap();
                    // Everyone also writes one shared key: the first answer stays.
                    store
                        .put(&key("shared"), "openai", "m", &answer(&text))
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let store = store(&path, CacheMode::ReadOnly);
    assert_eq!(store.stats().unwrap().entries, 401);
    store.verify().unwrap();
    let shared = store.get(&key("shared")).unwrap().unwrap();
    assert!(
        shared.response.text.ends_with("-0"),
        "{}",
        shared.response.text
    );
}

#[tokio::test]
async fn layers_cache_real_providers_but_never_the_fake() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let layers =
        ModelLayers::new(Scheduler::new(Some(4))).with_cache(store(&path, CacheMode::ReadWrite));
    let fake = ProviderSettings {
        name: Some("fake".into()),
        responses: Some(vec!["one".into(), "two".into()]),
        ..ProviderSettings::default()
    };
    let client = layers.build(&fake, "m", &|_| None).unwrap();
    assert_eq!(client.chat(&ask("a")).await.unwrap().text, "one");
    assert_eq!(client.chat(&ask("a")).await.unwrap().text, "two");
    assert!(!path.exists(), "the fake is never cached");
}

#[test]
fn a_reader_never_mistakes_a_cache_being_created_for_a_foreign_file() {
    // Another process may open the file between the writer's creating it and its tables:
    // every state it can see must read as a cache (empty or not).
    for _ in 0..60 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite");
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                let store = CacheStore::open(&path, CacheMode::ReadWrite).unwrap();
                store.put(&key("a"), "openai", "m", &answer("x")).unwrap();
            })
        };
        while !writer.is_finished() {
            if path.exists() {
                let read = CacheStore::open(&path, CacheMode::ReadOnly).and_then(|s| s.stats());
                assert!(read.is_ok(), "{read:?}");
            }
        }
        writer.join().unwrap();
    }
}

#[test]
fn a_cache_whose_writer_was_killed_mid_transaction_still_opens_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    // A writer in rollback-journal mode killed with its transaction half spilled to the file,
    // as a process killed while creating a cache leaves it: a hot journal beside it.
    let script = r#"
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size=1")
db.execute("BEGIN IMMEDIATE")
db.execute("CREATE TABLE filler (x BLOB)")
for _ in range(200):
    db.execute("INSERT INTO filler VALUES (?)", (b"x" * 3000,))
os.kill(os.getpid(), 9)
"#;
    let status = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&path)
        .status()
        .expect("python3 runs");
    assert!(!status.success(), "the writer was killed");
    let journal = dir.path().join("cache.sqlite-journal");
    assert!(
        journal.metadata().unwrap().len() > 0,
        "a hot journal is left"
    );
    let stats = CacheStore::open(&path, CacheMode::ReadOnly)
        .unwrap()
        .stats()
        .unwrap();
    assert_eq!(stats.entries, 0, "the killed transaction was rolled back");
}

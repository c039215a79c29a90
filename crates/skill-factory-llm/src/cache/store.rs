//! The cache file: an SQLite database in WAL mode, shared by every process that points at it.
//!
//! * **Lazy**: nothing is created until the first answer is stored; a read finds nothing in a
//!   file that does not exist yet.
//! * **Concurrent and crash-safe**: WAL lets readers run while one writer commits; writers of
//!   several processes queue on SQLite's lock (with a busy timeout). Each answer is committed
//!   in its own transaction before the caller sees it, so a `kill -9` loses at most answers
//!   not yet returned, never the file.
//! * **Fast reads**: a lookup is one indexed primary-key read on a connection of its own that
//!   writes never block; use counts and last-use times are batched into the next write.
//! * **Versioned and marked**: `PRAGMA user_version` holds [`SCHEMA_VERSION`] and
//!   `PRAGMA application_id` holds [`APPLICATION_ID`]; a file from a newer build, a damaged
//!   cache, or a file that is not a cache at all is an error naming the path and the fix.
//! * **Never another program's file**: a path that holds something else (a text file, another
//!   program's database) is refused by every operation and never deleted, so pointing
//!   `cache.path` at a dataset by mistake loses nothing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use super::key::CacheKey;
use crate::request::{ChatResponse, StopReason, TokenUsage};

/// The layout version this build reads and writes.
pub const SCHEMA_VERSION: i64 = 1;

/// The `application_id` of a Skill Factory cache (`SFch`): written when a cache is created or
/// first opened by a writer, it is what tells a damaged cache, which may be deleted, from
/// another program's file, which never is.
pub const APPLICATION_ID: i32 = 0x5346_6368;

/// The header of an SQLite database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// How long a writer waits for another process's write before giving up on that write.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A hit refreshes an entry's last-use time only when the stored one is older than this: a
/// write per hit would make every cached run a writer, and `prune` works in days.
const TOUCH_AFTER_SECS: i64 = 3600;

/// Pending use counts are written at the latest after this many lookups.
const FLUSH_EVERY: u64 = 512;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS responses (
    key BLOB PRIMARY KEY NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    stop_reason TEXT NOT NULL,
    answered_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_by_last_use ON responses(last_used_at);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
";

/// Whether a run reads and writes the cache (`cache.mode` in a config).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CacheMode {
    /// Answer from the cache when it can, store every new answer (the default).
    #[default]
    ReadWrite,
    /// Answer from the cache when it can, never change it.
    ReadOnly,
    /// Neither read nor write: every call goes to the model.
    Off,
}

/// Why the cache cannot be used. Every message names the file and what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CacheError {
    /// The file is a Skill Factory cache, but damaged.
    #[error(
        "the model cache {} is damaged ({detail}); run `skill-factory cache clear --path {}` to start a new one, or set cache.path to another file",
        path.display(), path.display()
    )]
    Corrupt {
        /// The cache file.
        path: PathBuf,
        /// What SQLite or the check said.
        detail: String,
    },
    /// The file is something else than a Skill Factory cache; it is left as it is.
    #[error(
        "{} is not a Skill Factory model cache ({what}), so it was not touched; set cache.path to another file (by default .skill-factory/cache.sqlite beside the config)",
        path.display()
    )]
    NotACache {
        /// The file.
        path: PathBuf,
        /// What it is instead (`not an SQLite database`, `another program's SQLite database`).
        what: String,
    },
    /// The file was written by a newer build with another layout.
    #[error(
        "the model cache {} has layout version {found}, newer than this build's {SCHEMA_VERSION}: upgrade skill-factory, set cache.path to another file, or run `skill-factory cache clear --path {}`",
        path.display(), path.display()
    )]
    NewerSchema {
        /// The cache file.
        path: PathBuf,
        /// The version found in it.
        found: i64,
    },
    /// The file or its folder cannot be opened, created or written (permissions, a full
    /// disk, a lock held too long by another process).
    #[error("cannot use the model cache {}: {source}{hint}", path.display())]
    Access {
        /// The cache file (or the file of it that could not be deleted).
        path: PathBuf,
        /// What SQLite or the operating system said (shared, so the error stays cheap to clone).
        source: Arc<dyn std::error::Error + Send + Sync>,
        /// What was being done, or the fix where there is an obvious one (` (free some space
        /// ...)`); empty when the cause says it all.
        hint: String,
    },
}

/// What `skill-factory cache stats` shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// The cache file.
    pub path: PathBuf,
    /// False when no answer was ever stored there (the other fields are then zero).
    pub exists: bool,
    /// Answers stored.
    pub entries: u64,
    /// Bytes of the database and its WAL files.
    pub bytes_on_disk: u64,
    /// Lookups answered from the cache, over every run that used the file.
    pub hits: u64,
    /// Lookups that had to ask the model.
    pub misses: u64,
    /// When the oldest entry was stored (Unix seconds).
    pub oldest: Option<i64>,
    /// When the newest entry was stored (Unix seconds).
    pub newest: Option<i64>,
    /// When an entry was last used (Unix seconds; refreshed at most hourly per entry).
    pub last_used: Option<i64>,
}

/// What a file at a cache path is, as far as its header and tables tell.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Identity {
    /// A Skill Factory cache (marked, or unmarked with only our tables), or an empty file.
    Ours,
    /// Anything else, and what it is.
    Foreign(String),
}

/// What clearing did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cleared {
    /// The file held this many entries; it is now empty.
    Emptied(u64),
    /// The file was a cache too damaged (or too new) to empty, so it and its WAL files were
    /// deleted; why it could not be emptied.
    Removed(String),
    /// There was no file.
    Missing,
}

/// One lookup's result: the answer and when the entry was last used.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The stored answer, marked `cached`.
    pub response: ChatResponse,
    last_used_at: i64,
}

#[derive(Default)]
struct Pending {
    hits: u64,
    misses: u64,
    touched: Vec<[u8; 32]>,
}

/// One answer to store.
struct Entry {
    key: CacheKey,
    provider: String,
    model: String,
    response: ChatResponse,
}

/// Answers waiting to be stored, each with the sender its caller awaits.
#[derive(Default)]
struct Queue {
    waiting: Vec<(Entry, tokio::sync::oneshot::Sender<Result<(), CacheError>>)>,
    draining: bool,
}

/// One cache file. Share it (in an `Arc`) between every client of a run.
pub struct CacheStore {
    path: PathBuf,
    mode: CacheMode,
    reader: Mutex<Option<Connection>>,
    writer: Mutex<Option<Connection>>,
    /// Answers waiting for [`CacheStore::put_in_background`]'s writer, and whether a writer
    /// is draining them.
    queue: Mutex<Queue>,
    pending: Mutex<Pending>,
    lookups: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    clock: fn() -> i64,
}

impl std::fmt::Debug for CacheStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheStore")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .finish()
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl CacheStore {
    /// The cache at `path` used in `mode`. Creates nothing: when the file exists it is
    /// checked (readable, a cache, a layout this build knows) so that a bad file is reported
    /// before a run starts; when it does not, the first stored answer creates it.
    pub fn open(path: impl Into<PathBuf>, mode: CacheMode) -> Result<CacheStore, CacheError> {
        let store = CacheStore {
            path: path.into(),
            mode,
            reader: Mutex::new(None),
            writer: Mutex::new(None),
            queue: Mutex::new(Queue::default()),
            pending: Mutex::new(Pending::default()),
            lookups: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            clock: unix_now,
        };
        if mode != CacheMode::Off && store.path.exists() {
            let mut reader = lock(&store.reader);
            *reader = Some(store.open_reader()?);
        }
        Ok(store)
    }

    /// The same store with another clock (Unix seconds), for tests of time-based pruning.
    #[cfg(test)]
    pub(crate) fn with_clock(mut self, clock: fn() -> i64) -> Self {
        self.clock = clock;
        self
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The mode it is used in.
    pub fn mode(&self) -> CacheMode {
        self.mode
    }

    /// Hits counted by this store since it was opened (this run only).
    pub fn run_hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Misses counted by this store since it was opened (this run only).
    pub fn run_misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// The stored answer for `key`, if any. Reads only; [`CacheStore::note_hit`] and
    /// [`CacheStore::note_miss`] count the outcome.
    pub fn get(&self, key: &CacheKey) -> Result<Option<Hit>, CacheError> {
        if self.mode == CacheMode::Off {
            return Ok(None);
        }
        let mut reader = lock(&self.reader);
        if reader.is_none() {
            if !self.path.exists() {
                return Ok(None);
            }
            *reader = Some(self.open_reader()?);
        }
        let Some(connection) = reader.as_ref() else {
            return Ok(None);
        };
        let row = connection
            .prepare_cached(
                "SELECT text, input_tokens, output_tokens, stop_reason, answered_by, last_used_at
                 FROM responses WHERE key = ?1",
            )
            .and_then(|mut statement| {
                statement
                    .query_row([&key.as_bytes()[..]], |row| {
                        Ok(Hit {
                            response: ChatResponse {
                                text: row.get(0)?,
                                usage: TokenUsage {
                                    input_tokens: to_u64(row.get(1)?),
                                    output_tokens: to_u64(row.get(2)?),
                                },
                                stop_reason: stop_reason_from(&row.get::<_, String>(3)?),
                                model: row.get(4)?,
                                latency: Duration::ZERO,
                                cached: true,
                                batch: false,
                            },
                            last_used_at: row.get(5)?,
                        })
                    })
                    .optional()
            });
        match row {
            Ok(hit) => Ok(hit),
            // Another process created the file but not yet its tables.
            Err(error) if error.to_string().contains("no such table") => Ok(None),
            Err(error) => Err(self.error(error)),
        }
    }

    /// Counts a lookup that was answered from the cache, and notes the entry as used.
    pub fn note_hit(&self, key: &CacheKey, hit: &Hit) {
        self.hits.fetch_add(1, Ordering::Relaxed);
        {
            let mut pending = lock(&self.pending);
            pending.hits += 1;
            if hit.last_used_at < (self.clock)() - TOUCH_AFTER_SECS {
                pending.touched.push(*key.as_bytes());
            }
        }
        self.flush_now_and_then();
    }

    /// Counts a lookup that had to ask the model.
    pub fn note_miss(&self) {
        self.misses.fetch_add(1, Ordering::Relaxed);
        lock(&self.pending).misses += 1;
        self.flush_now_and_then();
    }

    /// Stores a successful answer (in `read_write` mode; otherwise does nothing). The first
    /// answer stored for a key is kept: a second process that asked the same question
    /// meanwhile does not replace it. Pending counts are written in the same transaction.
    pub fn put(
        &self,
        key: &CacheKey,
        provider: &str,
        model: &str,
        response: &ChatResponse,
    ) -> Result<(), CacheError> {
        let entry = Entry {
            key: *key,
            provider: provider.to_owned(),
            model: model.to_owned(),
            response: response.clone(),
        };
        self.put_all(std::slice::from_ref(&entry))
    }

    /// Stores every entry in one transaction.
    fn put_all(&self, entries: &[Entry]) -> Result<(), CacheError> {
        if self.mode != CacheMode::ReadWrite {
            return Ok(());
        }
        let now = (self.clock)();
        self.write(|tx, pending| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO responses (key, provider, model, text, input_tokens, output_tokens,
                     stop_reason, answered_by, created_at, last_used_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
                 ON CONFLICT(key) DO NOTHING",
            )?;
            for Entry {
                key,
                provider,
                model,
                response,
            } in entries
            {
                insert.execute(params![
                    &key.as_bytes()[..],
                    provider,
                    model,
                    response.text,
                    to_i64(response.usage.input_tokens),
                    to_i64(response.usage.output_tokens),
                    stop_reason_name(response.stop_reason),
                    response.model,
                    now,
                ])?;
            }
            write_pending(tx, pending, now)
        })
    }

    /// [`CacheStore::put`] off the async workers (SQLite may wait for another process's
    /// write), with group commits: answers that arrive while a transaction is being written
    /// wait for the next one, which stores them all at once. One blocking thread drains the
    /// queue at a time, so hundreds of answers in flight cost a handful of transactions, not a
    /// thread and a transaction each.
    pub async fn put_in_background(
        self: &Arc<Self>,
        key: CacheKey,
        provider: String,
        model: String,
        response: ChatResponse,
    ) -> Result<(), CacheError> {
        let (done, written) = tokio::sync::oneshot::channel();
        let entry = Entry {
            key,
            provider,
            model,
            response,
        };
        let start_writer = {
            let mut queue = lock(&self.queue);
            queue.waiting.push((entry, done));
            !std::mem::replace(&mut queue.draining, true)
        };
        if start_writer {
            let store = Arc::clone(self);
            tokio::task::spawn_blocking(move || store.drain());
        }
        written.await.unwrap_or_else(|_| {
            Err(CacheError::Access {
                path: self.path.clone(),
                source: Arc::new(std::io::Error::other("the writer stopped")),
                hint: " (the model cache writer stopped)".to_string(),
            })
        })
    }

    /// Writes the queue in batches until it is empty, telling each waiter how it went.
    fn drain(&self) {
        loop {
            let batch = {
                let mut queue = lock(&self.queue);
                if queue.waiting.is_empty() {
                    queue.draining = false;
                    return;
                }
                std::mem::take(&mut queue.waiting)
            };
            let (entries, waiters): (Vec<Entry>, Vec<_>) = batch.into_iter().unzip();
            let written = self.put_all(&entries);
            for waiter in waiters {
                let _ = waiter.send(written.clone());
            }
        }
    }

    /// Writes the pending use counts and last-use times (also done on drop).
    pub fn flush(&self) -> Result<(), CacheError> {
        if self.mode != CacheMode::ReadWrite || !self.path.exists() {
            return Ok(());
        }
        {
            let pending = lock(&self.pending);
            if pending.hits == 0 && pending.misses == 0 && pending.touched.is_empty() {
                return Ok(());
            }
        }
        let now = (self.clock)();
        self.write(|tx, pending| write_pending(tx, pending, now))
    }

    /// Entries, size and use counts of the file.
    pub fn stats(&self) -> Result<CacheStats, CacheError> {
        let mut stats = CacheStats {
            path: self.path.clone(),
            ..CacheStats::default()
        };
        if !self.path.exists() {
            return Ok(stats);
        }
        stats.exists = true;
        stats.bytes_on_disk = ["", "-wal", "-shm"]
            .iter()
            .filter_map(|suffix| std::fs::metadata(sidecar(&self.path, suffix)).ok())
            .map(|m| m.len())
            .sum();
        let connection = self.open_reader()?;
        if !has_table(&connection, "responses").map_err(|e| self.error(e))? {
            return Ok(stats);
        }
        let counted = connection.query_row(
            "SELECT COUNT(*), MIN(created_at), MAX(created_at), MAX(last_used_at) FROM responses",
            [],
            |row| {
                Ok((
                    to_u64(row.get(0)?),
                    row.get::<_, Option<i64>>(1)?,
                    row.get::<_, Option<i64>>(2)?,
                    row.get::<_, Option<i64>>(3)?,
                ))
            },
        );
        (stats.entries, stats.oldest, stats.newest, stats.last_used) =
            counted.map_err(|e| self.error(e))?;
        let counter = |name: &str| {
            connection
                .query_row(
                    "SELECT value FROM counters WHERE name = ?1",
                    [name],
                    |row| row.get::<_, i64>(0),
                )
                .optional()
                .map(|v| to_u64(v.unwrap_or(0)))
                .map_err(|e| self.error(e))
        };
        stats.hits = counter("hits")?;
        stats.misses = counter("misses")?;
        Ok(stats)
    }

    /// Deletes the entries not used since `older_than` ago; returns how many.
    pub fn prune(&self, older_than: Duration) -> Result<u64, CacheError> {
        if !self.path.exists() {
            return Ok(0);
        }
        let age = i64::try_from(older_than.as_secs()).unwrap_or(i64::MAX);
        let cutoff = (self.clock)().saturating_sub(age);
        let mut removed = 0;
        self.write(|tx, _| {
            removed = tx.execute("DELETE FROM responses WHERE last_used_at < ?1", [cutoff])?;
            Ok(())
        })?;
        Ok(removed as u64)
    }

    /// Checks the whole file for damage (`PRAGMA quick_check`).
    pub fn verify(&self) -> Result<(), CacheError> {
        if !self.path.exists() {
            return Ok(());
        }
        let connection = self.open_reader()?;
        let verdict: String = connection
            .query_row("PRAGMA quick_check", [], |row| row.get(0))
            .map_err(|e| self.error(e))?;
        if verdict == "ok" {
            Ok(())
        } else {
            Err(CacheError::Corrupt {
                path: self.path.clone(),
                detail: verdict,
            })
        }
    }

    /// Empties the cache at `path` while other processes may be using it: the entries are
    /// deleted in one transaction and the space is given back. A cache too damaged (or too
    /// new) to open is deleted instead, with its WAL files. A file that is not a Skill Factory
    /// cache is refused ([`CacheError::NotACache`]) and left as it is.
    pub fn clear(path: &Path) -> Result<Cleared, CacheError> {
        if !path.exists() {
            return Ok(Cleared::Missing);
        }
        if let Identity::Foreign(what) = identify(path)? {
            return Err(CacheError::NotACache {
                path: path.to_path_buf(),
                what,
            });
        }
        let store = match CacheStore::open(path, CacheMode::ReadWrite) {
            Ok(store) => store,
            Err(CacheError::Corrupt { detail, .. }) => {
                remove_with_sidecars(path)?;
                return Ok(Cleared::Removed(detail));
            }
            Err(CacheError::NewerSchema { found, .. }) => {
                remove_with_sidecars(path)?;
                return Ok(Cleared::Removed(format!(
                    "layout version {found}, newer than this build's {SCHEMA_VERSION}"
                )));
            }
            Err(other) => return Err(other),
        };
        let mut removed = 0;
        store.write(|tx, pending| {
            *pending = Pending::default();
            removed = tx.execute("DELETE FROM responses", [])?;
            tx.execute("DELETE FROM counters", [])?;
            Ok(())
        })?;
        // Giving the space back is a courtesy: if another process is reading, the pages are
        // reused by later writes instead.
        if let Some(writer) = lock(&store.writer).as_ref() {
            let _ = writer.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);");
        }
        Ok(Cleared::Emptied(removed as u64))
    }

    /// Runs `work` in one immediate transaction on the writer connection (created, with the
    /// file and its tables, on first use), handing it the pending counts to write.
    fn write(
        &self,
        work: impl FnOnce(&rusqlite::Transaction<'_>, &mut Pending) -> rusqlite::Result<()>,
    ) -> Result<(), CacheError> {
        let mut writer = lock(&self.writer);
        if writer.is_none() {
            *writer = Some(self.open_writer()?);
        }
        let Some(connection) = writer.as_mut() else {
            return Ok(());
        };
        let mut pending = std::mem::take(&mut *lock(&self.pending));
        let result = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .and_then(|tx| {
                work(&tx, &mut pending)?;
                tx.commit()
            });
        if result.is_err() {
            // Not written: keep the counts for the next write.
            let mut current = lock(&self.pending);
            current.hits += pending.hits;
            current.misses += pending.misses;
            current.touched.append(&mut pending.touched);
        }
        result.map_err(|e| self.error(e))
    }

    /// Writes the pending counts every [`FLUSH_EVERY`] lookups, so that a long run that only
    /// hits still records its use without a write per hit.
    fn flush_now_and_then(&self) {
        let lookups = self.lookups.fetch_add(1, Ordering::Relaxed) + 1;
        if lookups.is_multiple_of(FLUSH_EVERY)
            && let Err(error) = self.flush()
        {
            tracing::debug!("model cache: use counts not written: {error}");
        }
    }

    /// Rolls back the journal a writer killed mid-transaction left (the file's creation, say):
    /// a read-only connection cannot, and fails every read with "attempt to write a readonly
    /// database"; a read-write one does it on its first read, as every writer would anyway.
    fn recover_hot_journal(&self) {
        let journal = PathBuf::from(format!("{}-journal", self.path.display()));
        if !journal.metadata().is_ok_and(|meta| meta.len() > 0) {
            return;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if let Ok(connection) = Connection::open_with_flags(&self.path, flags) {
            let _ = connection.busy_timeout(BUSY_TIMEOUT);
            let _ = connection.query_row("SELECT COUNT(*) FROM sqlite_master", [], |row| {
                row.get::<_, i64>(0)
            });
        }
    }

    fn open_reader(&self) -> Result<Connection, CacheError> {
        if self.mode == CacheMode::ReadOnly {
            self.recover_hot_journal();
        }
        let flags = match self.mode {
            CacheMode::ReadOnly => OpenFlags::SQLITE_OPEN_READ_ONLY,
            _ => OpenFlags::SQLITE_OPEN_READ_WRITE,
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection =
            Connection::open_with_flags(&self.path, flags).map_err(|e| self.error(e))?;
        connection
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| self.error(e))?;
        self.check_layout(&connection)?;
        Ok(connection)
    }

    fn open_writer(&self) -> Result<Connection, CacheError> {
        if let Some(folder) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder).map_err(|e| CacheError::Access {
                path: self.path.clone(),
                source: Arc::new(e),
                hint: format!(" (while creating its folder {})", folder.display()),
            })?;
        }
        let connection = Connection::open(&self.path).map_err(|e| self.error(e))?;
        connection
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| self.error(e))?;
        self.check_layout(&connection)?;
        let started = Instant::now();
        loop {
            // Another process may be setting the mode at the same moment; the busy handler
            // does not cover this pragma, so retry for as long as a write would wait.
            match connection
                .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))
            {
                Ok(_) => break,
                Err(error) if is_busy(&error) && started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(error) => return Err(self.error(error)),
            }
        }
        connection
            .execute_batch("PRAGMA synchronous = NORMAL;")
            .map_err(|e| self.error(e))?;
        self.create_tables(&connection)?;
        Ok(connection)
    }

    fn create_tables(&self, connection: &Connection) -> Result<(), CacheError> {
        let result = connection.execute_batch(&format!(
            "BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; PRAGMA application_id = {APPLICATION_ID}; COMMIT;"
        ));
        if let Err(error) = result {
            let _ = connection.execute_batch("ROLLBACK;");
            return Err(self.error(error));
        }
        Ok(())
    }

    /// A layout version this build knows, and no foreign tables in a file without one.
    fn check_layout(&self, connection: &Connection) -> Result<(), CacheError> {
        // One statement, so one snapshot: read apart, another process could create the
        // tables and set the version in between.
        let (version, application_id, foreign): (i64, i32, i64) = connection
            .query_row(
                "SELECT (SELECT user_version FROM pragma_user_version),
                        (SELECT application_id FROM pragma_application_id),
                        (SELECT COUNT(*) FROM sqlite_master
                         WHERE type = 'table' AND name NOT IN ('responses', 'counters')
                           AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\')",
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .map_err(|e| self.error(e))?;
        if foreign > 0 || (application_id != 0 && application_id != APPLICATION_ID) {
            return Err(CacheError::NotACache {
                path: self.path.clone(),
                what: "another program's SQLite database".to_string(),
            });
        }
        if version > SCHEMA_VERSION {
            return Err(CacheError::NewerSchema {
                path: self.path.clone(),
                found: version,
            });
        }
        Ok(())
    }

    fn error(&self, error: rusqlite::Error) -> CacheError {
        let path = self.path.clone();
        match error.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => CacheError::NotACache {
                path,
                what: "not an SQLite database".to_string(),
            },
            Some(ErrorCode::DatabaseCorrupt) => CacheError::Corrupt {
                path,
                detail: error.to_string(),
            },
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                let hint = format!(
                    " (another process held it for more than {} s)",
                    BUSY_TIMEOUT.as_secs()
                );
                access(path, error, &hint)
            }
            Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied | ErrorCode::CannotOpen) => {
                access(
                    path,
                    error,
                    " (check the permissions of the file and its folder, or set cache.path)",
                )
            }
            Some(ErrorCode::DiskFull) => access(
                path,
                error,
                " (free some space or run `skill-factory cache prune`)",
            ),
            _ => access(path, error, ""),
        }
    }
}

/// [`CacheError::Access`] with SQLite's error as its cause.
fn access(path: PathBuf, error: rusqlite::Error, hint: &str) -> CacheError {
    CacheError::Access {
        path,
        source: Arc::new(error),
        hint: hint.to_string(),
    }
}

impl Drop for CacheStore {
    fn drop(&mut self) {
        if let Err(error) = self.flush() {
            tracing::debug!("model cache: use counts not written: {error}");
        }
    }
}

fn write_pending(
    tx: &rusqlite::Transaction<'_>,
    pending: &mut Pending,
    now: i64,
) -> rusqlite::Result<()> {
    for (name, value) in [("hits", pending.hits), ("misses", pending.misses)] {
        if value > 0 {
            tx.prepare_cached(
                "INSERT INTO counters (name, value) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
            )?
            .execute(params![name, to_i64(value)])?;
        }
    }
    for key in &pending.touched {
        tx.prepare_cached("UPDATE responses SET last_used_at = ?2 WHERE key = ?1")?
            .execute(params![&key[..], now])?;
    }
    *pending = Pending::default();
    Ok(())
}

fn has_table(connection: &Connection, name: &str) -> rusqlite::Result<bool> {
    connection.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |row| row.get::<_, i64>(0).map(|n| n > 0),
    )
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Deletes a cache file and its WAL files.
fn remove_with_sidecars(path: &Path) -> Result<(), CacheError> {
    for suffix in ["", "-wal", "-shm"] {
        let file = sidecar(path, suffix);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(CacheError::Access {
                    path: file,
                    source: Arc::new(e),
                    hint: " (while deleting it)".to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Tells a Skill Factory cache (which `clear` may empty or delete) from anything else (which
/// it never touches), from the file's header and, for an unmarked database, its tables. An
/// empty file counts as an empty cache: clearing it loses nothing.
fn identify(path: &Path) -> Result<Identity, CacheError> {
    use std::io::Read;
    let foreign = |what: &str| Ok(Identity::Foreign(what.to_string()));
    let access = |source: std::io::Error| CacheError::Access {
        path: path.to_path_buf(),
        source: Arc::new(source),
        hint: String::new(),
    };
    let metadata = std::fs::metadata(path).map_err(access)?;
    if !metadata.is_file() {
        return foreign("not a regular file");
    }
    if metadata.len() == 0 {
        return Ok(Identity::Ours);
    }
    let mut header = [0u8; 100];
    let mut file = std::fs::File::open(path).map_err(access)?;
    let read = file.read(&mut header).map_err(access)?;
    if read < header.len() || &header[..16] != SQLITE_MAGIC {
        return foreign("not an SQLite database");
    }
    let application_id = i32::from_be_bytes([header[68], header[69], header[70], header[71]]);
    if application_id == APPLICATION_ID {
        return Ok(Identity::Ours);
    }
    if application_id != 0 {
        return foreign("another program's SQLite database");
    }
    // Unmarked: a cache written before the mark, or a database of someone else's.
    let tables = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).and_then(
        |connection| {
            let mut statement =
                connection.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
            let names = statement
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(names)
        },
    );
    match tables {
        Ok(names)
            if names
                .iter()
                .all(|n| n == "responses" || n == "counters" || n.starts_with("sqlite_")) =>
        {
            Ok(Identity::Ours)
        }
        Ok(_) => foreign("another program's SQLite database"),
        Err(_) => foreign(
            "an SQLite database without the Skill Factory mark, which cannot be read; if it is an old cache, delete it yourself",
        ),
    }
}

/// `path` with `suffix` appended to its file name (`cache.sqlite-wal`).
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section leaves its data consistent, so a poisoned lock is still usable.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn stop_reason_name(reason: StopReason) -> &'static str {
    match reason {
        StopReason::End => "end",
        StopReason::MaxTokens => "max_tokens",
        StopReason::Other => "other",
    }
}

fn stop_reason_from(name: &str) -> StopReason {
    match name {
        "end" => StopReason::End,
        "max_tokens" => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::ChatRequest;

    const DAY: i64 = 86_400;

    fn key(text: &str) -> CacheKey {
        CacheKey::new(
            "openai",
            "http://x",
            "m",
            &ChatRequest::single(None, text, 0.0, 8),
        )
    }

    fn answer() -> ChatResponse {
        ChatResponse {
            text: "x".into(),
            usage: TokenUsage::default(),
            stop_reason: StopReason::End,
            model: "m".into(),
            latency: Duration::ZERO,
            cached: false,
            batch: false,
        }
    }

    fn store_at(path: &Path, clock: fn() -> i64) -> CacheStore {
        CacheStore::open(path, CacheMode::ReadWrite)
            .unwrap()
            .with_clock(clock)
    }

    #[test]
    fn prune_deletes_only_entries_unused_since_the_cutoff() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite");
        // Stored 40 days ago: "old" and "revived"; 10 days ago: "recent".
        let forty_days_ago = store_at(&path, || 1_000 * DAY - 40 * DAY);
        forty_days_ago
            .put(&key("old"), "openai", "m", &answer())
            .unwrap();
        forty_days_ago
            .put(&key("revived"), "openai", "m", &answer())
            .unwrap();
        drop(forty_days_ago);
        let ten_days_ago = store_at(&path, || 1_000 * DAY - 10 * DAY);
        ten_days_ago
            .put(&key("recent"), "openai", "m", &answer())
            .unwrap();
        // A hit 5 days ago refreshes "revived".
        drop(ten_days_ago);
        let five_days_ago = store_at(&path, || 1_000 * DAY - 5 * DAY);
        let hit = five_days_ago.get(&key("revived")).unwrap().unwrap();
        five_days_ago.note_hit(&key("revived"), &hit);
        drop(five_days_ago);

        let today = store_at(&path, || 1_000 * DAY);
        assert_eq!(
            today.prune(Duration::from_secs(30 * DAY as u64)).unwrap(),
            1
        );
        assert!(today.get(&key("old")).unwrap().is_none());
        assert!(today.get(&key("revived")).unwrap().is_some());
        assert!(today.get(&key("recent")).unwrap().is_some());
        assert_eq!(today.prune(Duration::from_secs(7 * DAY as u64)).unwrap(), 1);
        assert!(today.get(&key("recent")).unwrap().is_none());
        let stats = today.stats().unwrap();
        assert_eq!((stats.entries, stats.hits), (1, 1));
        assert_eq!(stats.last_used, Some(1_000 * DAY - 5 * DAY));
    }

    #[test]
    fn a_recent_hit_does_not_rewrite_the_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite");
        let store = store_at(&path, || 1_000 * DAY);
        store.put(&key("a"), "openai", "m", &answer()).unwrap();
        let hit = store.get(&key("a")).unwrap().unwrap();
        store.note_hit(&key("a"), &hit);
        assert!(lock(&store.pending).touched.is_empty());
        assert_eq!(lock(&store.pending).hits, 1);
    }
}

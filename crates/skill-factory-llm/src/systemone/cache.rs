//! The answer cache: every answer ever bought, one JSON line each, so that asking again is
//! free.
//!
//! A line is `{"s": state hash, "q": question hash, "m": model asked, "p": P(true)}` plus
//! `"v"` (the version that answered) when known and `"r"` (the replicate) when not 0; the
//! key is (s, q, m, r). The format is the Python tool's and skill-scanner's, written with the
//! same spacing, so one file serves all three.
//!
//! The file is append-only. A run killed mid-write leaves a last line without its newline:
//! such a line is dropped (the file is cut back to the last newline) and loading goes on. Any
//! other line that is not an answer stops loading with its line number, because silently
//! skipping it would silently re-buy answers. Later lines win over earlier ones with the same
//! key. Every write appends whole lines under an exclusive file lock, so several processes
//! (two runs, a run and `lab ask`) can share one cache; each sees the answers that were in
//! the file when it opened it, plus its own.
//!
//! Caches grow to millions of lines, and every classifier command starts by loading one, so
//! loading is built for it: the file is split at line boundaries and parsed on every core,
//! lines in the form the tools write are read by a small scanner (anything else goes through
//! a full JSON parser, with the same result), hashes of 24 hex characters are kept as 12
//! bytes, and model and version names are stored once.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rustc_hash::FxBuildHasher;
use serde_json::{Map, Value};
use skill_factory_pycompat::json;

use super::SystemOneError;

/// What identifies one answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AnswerKey {
    /// State hash (sha24 of the state text).
    pub state: String,
    /// Question hash ([`super::Question::hash`]).
    pub question: String,
    /// The model asked (not the version that answered).
    pub model: String,
    /// Which repetition of the same question (0 for the first).
    pub replicate: u32,
}

impl AnswerKey {
    /// The key of the first answer (replicate 0).
    pub fn new(
        state: impl Into<String>,
        question: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        AnswerKey {
            state: state.into(),
            question: question.into(),
            model: model.into(),
            replicate: 0,
        }
    }
}

/// One cached answer.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedAnswer {
    /// P(true).
    pub p: f64,
    /// The model version that answered, when known.
    pub version: Option<String>,
}

/// A hash as stored: 24 lowercase hex characters (every hash the tools write) as 12 bytes,
/// anything else as its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Hash {
    Hex([u8; 12]),
    Text(Box<str>),
}

/// The value of each hex digit byte, 0xff for bytes that are not one (lowercase only: the
/// form every tool writes).
const HEX: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

impl Hash {
    fn of(text: &str) -> Hash {
        Hash::packed(text.as_bytes()).unwrap_or_else(|| Hash::Text(text.into()))
    }

    /// The 12 bytes of 24 lowercase hex digits.
    fn packed(bytes: &[u8]) -> Option<Hash> {
        if bytes.len() != 24 {
            return None;
        }
        let mut packed = [0u8; 12];
        for (out, pair) in packed.iter_mut().zip(bytes.chunks_exact(2)) {
            let (hi, lo) = (HEX[pair[0] as usize], HEX[pair[1] as usize]);
            if hi | lo == 0xff || hi > 15 || lo > 15 {
                return None;
            }
            *out = hi << 4 | lo;
        }
        Some(Hash::Hex(packed))
    }

    /// A hash as the scanner finds it: packed when it is hex, else its text (`None` when it
    /// is not UTF-8, which the full parser then reports).
    fn of_bytes(bytes: &[u8]) -> Option<Hash> {
        Hash::packed(bytes).or_else(|| {
            std::str::from_utf8(bytes)
                .ok()
                .map(|t| Hash::Text(t.into()))
        })
    }
}

/// One stored answer: the question, model and version by their numbers, the replicate and
/// P(true).
#[derive(Debug, Clone, Copy)]
struct Entry {
    question: u32,
    model: u32,
    replicate: u32,
    /// 0 for "no version", else a number in [`Store::names`].
    version: u32,
    p: f64,
}

impl Entry {
    fn key(&self) -> (u32, u32, u32) {
        (self.question, self.model, self.replicate)
    }
}

/// Every answer, grouped by state: a classifier reads all the questions of one example at
/// once, and lines arrive grouped the same way (one request per state), so a state's answers
/// sit together in one short vector sorted by (question, model, replicate).
#[derive(Debug)]
struct Store {
    states: HashMap<Hash, u32, FxBuildHasher>,
    rows: Vec<Vec<Entry>>,
    questions: HashMap<Hash, u32, FxBuildHasher>,
    /// Model and version names by number; number 0 stands for "no version".
    names: Vec<String>,
    numbers: HashMap<String, u32, FxBuildHasher>,
    len: usize,
    /// The last name and state looked up: lines come in runs of one model and one state.
    last_name: Option<(String, u32)>,
    last_state: Option<(Hash, usize)>,
}

impl Store {
    fn new() -> Store {
        Store {
            states: HashMap::default(),
            rows: Vec::new(),
            questions: HashMap::default(),
            names: vec![String::new()],
            numbers: HashMap::default(),
            len: 0,
            last_name: None,
            last_state: None,
        }
    }

    fn number(&mut self, name: &str) -> u32 {
        if let Some((last, n)) = &self.last_name
            && last == name
        {
            return *n;
        }
        let n = match self.numbers.get(name) {
            Some(&n) => n,
            None => {
                let n = self.names.len() as u32;
                self.names.push(name.to_string());
                self.numbers.insert(name.to_string(), n);
                n
            }
        };
        self.last_name = Some((name.to_string(), n));
        n
    }

    fn row_of(&mut self, state: Hash) -> usize {
        if let Some((last, row)) = &self.last_state
            && *last == state
        {
            return *row;
        }
        let next = self.rows.len() as u32;
        let row = *self.states.entry(state.clone()).or_insert(next) as usize;
        if row == self.rows.len() {
            self.rows.push(Vec::new());
        }
        self.last_state = Some((state, row));
        row
    }

    fn question_of(&mut self, question: Hash) -> u32 {
        let next = self.questions.len() as u32;
        *self.questions.entry(question).or_insert(next)
    }

    fn entry(&mut self, line: Parsed<'_>) -> (usize, Entry) {
        let model = self.number(&line.model);
        let version = line.version.as_deref().map_or(0, |v| self.number(v));
        let question = self.question_of(line.question);
        let row = self.row_of(line.state);
        (
            row,
            Entry {
                question,
                model,
                replicate: line.replicate,
                version,
                p: line.p,
            },
        )
    }

    /// Sorts every row and keeps, of answers with one key, the one read last.
    fn settle(&mut self) {
        let mut len = 0;
        for row in &mut self.rows {
            // Stable: equal keys stay in file order, so the last of each run is the latest.
            row.sort_by_key(Entry::key);
            row.dedup_by(|later, kept| {
                let same = later.key() == kept.key();
                if same {
                    *kept = *later;
                }
                same
            });
            len += row.len();
        }
        self.len = len;
    }

    /// Adds or replaces one answer in its sorted row.
    fn insert(&mut self, line: Parsed<'_>) {
        let (row, entry) = self.entry(line);
        let row = &mut self.rows[row];
        match row.binary_search_by_key(&entry.key(), Entry::key) {
            Ok(at) => row[at] = entry,
            Err(at) => {
                row.insert(at, entry);
                self.len += 1;
            }
        }
    }
}

/// Cached answers, in memory and (unless in-memory only) in a JSONL file.
#[derive(Debug)]
pub struct AnswerCache {
    path: Option<PathBuf>,
    entries: Mutex<Store>,
}

/// A read-only view of the cache for many lookups in a row (one lock, no copies).
pub struct CacheReader<'a> {
    store: MutexGuard<'a, Store>,
}

impl CacheReader<'_> {
    /// P(true) and the version that answered, for (state hash, question hash, model asked,
    /// replicate).
    pub fn get(
        &self,
        state: &str,
        question: &str,
        model: &str,
        replicate: u32,
    ) -> Option<(f64, Option<&str>)> {
        let store = &*self.store;
        let row = &store.rows[*store.states.get(&Hash::of(state))? as usize];
        let key = (
            *store.questions.get(&Hash::of(question))?,
            *store.numbers.get(model)?,
            replicate,
        );
        let entry = row[row.binary_search_by_key(&key, Entry::key).ok()?];
        let version = (entry.version != 0).then(|| store.names[entry.version as usize].as_str());
        Some((entry.p, version))
    }
}

impl AnswerCache {
    /// A cache that lives only as long as the process.
    pub fn in_memory() -> Self {
        AnswerCache {
            path: None,
            entries: Mutex::new(Store::new()),
        }
    }

    /// Loads the cache file at `path` (a missing file is an empty cache, created on the first
    /// answer). A half-written last line is cut off the file; any other bad line is an error.
    ///
    /// The file is read under an exclusive lock, so a line another process is writing at
    /// that moment is never mistaken for a crash casualty and cut. A FIFO, a device or a
    /// folder there is refused before it is opened (reading a FIFO would wait for a writer,
    /// or read as an empty cache).
    pub fn open(path: &Path) -> Result<Self, SystemOneError> {
        let io_error = |e: std::io::Error| SystemOneError::CacheIo {
            path: path.to_path_buf(),
            source: Arc::new(e),
        };
        if let Ok(metadata) = std::fs::metadata(path)
            && !metadata.is_file()
        {
            return Err(SystemOneError::CacheNotAFile {
                path: path.to_path_buf(),
                kind: skill_factory_io::input::kind_of(&metadata),
            });
        }
        let file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(AnswerCache {
                    path: Some(path.to_path_buf()),
                    entries: Mutex::new(Store::new()),
                });
            }
            Err(e) => return Err(io_error(e)),
        };
        file.lock().map_err(io_error)?;
        let size = file.metadata().map_err(io_error)?.len();
        let (store, torn) = parse_file(&file, size).map_err(|failure| match failure {
            Failure::Io(e) => io_error(e),
            Failure::Line(line, problem) => SystemOneError::CorruptCache {
                path: path.to_path_buf(),
                line,
                detail: problem.to_string(),
            },
        })?;
        if let Some(keep) = torn {
            tracing::warn!(path = %path.display(), "dropping a half-written last line of the answer cache");
            file.set_len(keep).map_err(io_error)?;
        }
        Ok(AnswerCache {
            path: Some(path.to_path_buf()),
            entries: Mutex::new(store),
        })
    }

    /// The cache file, unless the cache is in memory only.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// How many answers are cached.
    pub fn len(&self) -> usize {
        self.lock().len
    }

    /// True when no answer is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cached answer for `key`, if any.
    pub fn get(&self, key: &AnswerKey) -> Option<CachedAnswer> {
        // Through a reader: the one lookup there is, under the lock for this one call.
        self.reader()
            .get(&key.state, &key.question, &key.model, key.replicate)
            .map(|(p, version)| CachedAnswer {
                p,
                version: version.map(str::to_string),
            })
    }

    /// A view for many lookups; answers added meanwhile wait until it is dropped.
    pub fn reader(&self) -> CacheReader<'_> {
        CacheReader { store: self.lock() }
    }

    /// Adds answers, appending them to the file in one write. They are kept in memory even
    /// when the write fails (the error says why).
    pub fn insert_all(&self, rows: &[(AnswerKey, CachedAnswer)]) -> Result<(), SystemOneError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut store = self.lock();
        for (key, answer) in rows {
            store.insert(Parsed {
                state: Hash::of(&key.state),
                question: Hash::of(&key.question),
                model: Cow::Borrowed(&key.model),
                p: answer.p,
                version: answer.version.as_deref().map(Cow::Borrowed),
                replicate: key.replicate,
            });
        }
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut text = String::new();
        for (key, answer) in rows {
            text.push_str(&format_line(key, answer));
            text.push('\n');
        }
        skill_factory_io::append::append_locked(path, &text, |tail| parse_line(tail).is_ok())
            .map_err(|e| SystemOneError::CacheIo {
                path: path.clone(),
                source: Arc::new(e),
            })?;
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        // A panic while holding the lock cannot leave the map half-updated in a way that
        // matters (each insert is whole), so a poisoned lock is still usable.
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One line, read.
struct Parsed<'a> {
    state: Hash,
    question: Hash,
    model: Cow<'a, str>,
    p: f64,
    version: Option<Cow<'a, str>>,
    replicate: u32,
}

/// Below this size a file is parsed on one thread: starting threads would cost more.
const PARALLEL_FROM_BYTES: u64 = 1 << 20;

/// How much of the file a parser reads at a time: the file is streamed through this much
/// memory per thread instead of being read whole.
const BLOCK_BYTES: usize = 4 << 20;

/// Why a cache file could not be loaded.
enum Failure {
    Io(std::io::Error),
    /// The 1-based number of a bad line, and what is wrong with it.
    Line(usize, LineError),
}

/// Why a line of the cache is not an answer. A torn last line is one too, so the message
/// only reaches a person as the detail of [`SystemOneError::CorruptCache`].
#[derive(Debug, thiserror::Error)]
enum LineError {
    /// Not JSON at all: a line cut short, or another file's text.
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    /// JSON, but without the fields and types of an answer.
    #[error("not an answer: {0}")]
    NotAnAnswer(serde_json::Error),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Io(e)
    }
}

/// Every answer of the file, and where to cut a half-written last line (a last line without
/// its newline that is not an answer). The file is cut at line boundaries into one range per
/// core, each streamed and parsed on its own thread; the ranges are then merged in file order,
/// so later lines win exactly as they would read one by one.
fn parse_file(file: &fs::File, size: u64) -> Result<(Store, Option<u64>), Failure> {
    let threads = if size < PARALLEL_FROM_BYTES {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(8)) as u64
    };
    let mut bounds = vec![0];
    for i in 1..threads {
        let from = (size * i / threads).max(*bounds.last().unwrap_or(&0));
        bounds.push(next_line_start(file, from, size)?);
    }
    bounds.push(size);
    bounds.dedup();
    let ranges: Vec<(u64, u64)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    let last = ranges.len().saturating_sub(1);
    let parts: Vec<Result<Part, Failure>> = if ranges.len() <= 1 {
        ranges
            .iter()
            .map(|&(start, end)| parse_range(file, start, end, true))
            .collect()
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = ranges
                .iter()
                .enumerate()
                .map(|(i, &(start, end))| {
                    scope.spawn(move || parse_range(file, start, end, i == last))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Failure::Io(std::io::Error::other(
                            "a parser thread panicked",
                        )))
                    })
                })
                .collect()
        })
    };
    let mut store = Store::new();
    let mut lines_before = 0;
    let mut torn = None;
    for part in parts {
        let part = part.map_err(|failure| match failure {
            Failure::Line(line, detail) => Failure::Line(lines_before + line, detail),
            io => io,
        })?;
        lines_before += part.lines;
        torn = part.torn_at;
        part.merge_into(&mut store);
    }
    store.settle();
    Ok((store, torn))
}

/// Where the first line starting at or after `from` begins (`size` when none does).
fn next_line_start(file: &fs::File, from: u64, size: u64) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    if from == 0 {
        return Ok(0);
    }
    // The line that holds byte `from - 1` ends at the first newline from there.
    let mut at = from - 1;
    let mut window = vec![0; 64 << 10];
    while at < size {
        let n = file.read_at(&mut window, at)?;
        if n == 0 {
            break;
        }
        if let Some(newline) = memchr::memchr(b'\n', &window[..n]) {
            return Ok(at + newline as u64 + 1);
        }
        at += n as u64;
    }
    Ok(size)
}

/// One answer of a range, its strings numbered within the range.
#[derive(Clone, Copy)]
struct Record {
    state: u32,
    question: u32,
    model: u32,
    /// `u32::MAX` for none.
    version: u32,
    replicate: u32,
    p: f64,
}

/// What one range held: its answers in order with the hashes and names they use, how many
/// lines it had, and where a torn last line starts (only in the file's last range).
#[derive(Default)]
struct Part {
    states: Vec<Hash>,
    questions: Vec<Hash>,
    names: Vec<String>,
    records: Vec<Record>,
    lines: usize,
    torn_at: Option<u64>,
}

impl Part {
    fn merge_into(self, store: &mut Store) {
        let states: Vec<usize> = self.states.into_iter().map(|h| store.row_of(h)).collect();
        let questions: Vec<u32> = self
            .questions
            .into_iter()
            .map(|h| store.question_of(h))
            .collect();
        let names: Vec<u32> = self.names.iter().map(|n| store.number(n)).collect();
        let mut counts = vec![0usize; states.len()];
        for r in &self.records {
            counts[r.state as usize] += 1;
        }
        for (&row, count) in states.iter().zip(counts) {
            store.rows[row].reserve(count);
        }
        for r in self.records {
            store.rows[states[r.state as usize]].push(Entry {
                question: questions[r.question as usize],
                model: names[r.model as usize],
                replicate: r.replicate,
                version: if r.version == u32::MAX {
                    0
                } else {
                    names[r.version as usize]
                },
                p: r.p,
            });
        }
    }
}

/// Numbers the hashes or names of one range as they first appear; the last one looked up is
/// remembered, because lines come in runs of one state and one model.
struct Numbering<K> {
    numbers: HashMap<K, u32, FxBuildHasher>,
    last: Option<(K, u32)>,
}

impl<K: std::hash::Hash + Eq + Clone> Numbering<K> {
    fn new() -> Self {
        Numbering {
            numbers: HashMap::default(),
            last: None,
        }
    }

    /// The number of `key` (borrowed as `Q`), adding it to `list` the first time.
    fn number<Q>(&mut self, key: &Q, list: &mut Vec<K>) -> u32
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if let Some((last, n)) = &self.last
            && last.borrow() == key
        {
            return *n;
        }
        let n = match self.numbers.get(key) {
            Some(&n) => n,
            None => {
                let n = list.len() as u32;
                list.push(key.to_owned());
                self.numbers.insert(key.to_owned(), n);
                n
            }
        };
        self.last = Some((key.to_owned(), n));
        n
    }
}

fn parse_range(file: &fs::File, start: u64, end: u64, last: bool) -> Result<Part, Failure> {
    use std::os::unix::fs::FileExt;
    // An answer line is about 100 bytes: reserving for that saves regrowing a big vector.
    let mut part = Part {
        records: Vec::with_capacity(((end - start) / 96) as usize),
        ..Part::default()
    };
    let mut states = Numbering::new();
    let mut questions = Numbering::new();
    let mut names = Numbering::new();
    // Versions share the names list but not the "last one" memory, which would otherwise
    // flip between the model and the version on every line.
    let mut versions = Numbering::new();
    let mut buffer = vec![0u8; BLOCK_BYTES.min((end - start) as usize + 1).max(1)];
    // `buffer[..filled]` holds unparsed bytes from file offset `offset`.
    let (mut offset, mut filled, mut read_to) = (start, 0usize, start);
    loop {
        if filled == buffer.len() {
            // One line longer than the buffer: make room for it.
            buffer.resize(buffer.len() * 2, 0);
        }
        let want = (buffer.len() - filled).min((end - read_to) as usize);
        let n = if want == 0 {
            0
        } else {
            file.read_at(&mut buffer[filled..filled + want], read_to)?
        };
        read_to += n as u64;
        filled += n;
        let at_end = n == 0 || read_to >= end;
        let mut begin = 0;
        while begin < filled {
            let (line, next, terminated) = match memchr::memchr(b'\n', &buffer[begin..filled]) {
                Some(len) => (&buffer[begin..begin + len], begin + len + 1, true),
                None if at_end => (&buffer[begin..filled], filled, false),
                None => break,
            };
            part.lines += 1;
            match parse_line(line) {
                Ok(None) => {}
                Ok(Some(parsed)) => {
                    let record = Record {
                        state: states.number(&parsed.state, &mut part.states),
                        question: questions.number(&parsed.question, &mut part.questions),
                        model: names.number(&*parsed.model, &mut part.names),
                        version: parsed
                            .version
                            .as_deref()
                            .map_or(u32::MAX, |v| versions.number(v, &mut part.names)),
                        replicate: parsed.replicate,
                        p: parsed.p,
                    };
                    part.records.push(record);
                }
                Err(_) if !terminated && last => {
                    part.torn_at = Some(offset + begin as u64);
                    return Ok(part);
                }
                Err(detail) => return Err(Failure::Line(part.lines, detail)),
            }
            begin = next;
        }
        if at_end {
            return Ok(part);
        }
        buffer.copy_within(begin..filled, 0);
        filled -= begin;
        offset += begin as u64;
    }
}

/// The fields of a line, borrowed from it where no escape forces a copy.
#[derive(serde::Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    s: Cow<'a, str>,
    #[serde(borrow)]
    q: Cow<'a, str>,
    #[serde(borrow)]
    m: Cow<'a, str>,
    p: f64,
    #[serde(default, borrow)]
    v: Option<Cow<'a, str>>,
    #[serde(default)]
    r: Option<u32>,
}

/// One line: `Ok(None)` for a blank line, else the answer or what is wrong with it.
fn parse_line(line: &[u8]) -> Result<Option<Parsed<'_>>, LineError> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    if let Some(parsed) = scan_line(line) {
        return Ok(Some(parsed));
    }
    let line: Line<'_> = serde_json::from_slice(line).map_err(|e| {
        if e.is_data() {
            LineError::NotAnAnswer(e)
        } else {
            LineError::NotJson(e)
        }
    })?;
    Ok(Some(Parsed {
        state: Hash::of(&line.s),
        question: Hash::of(&line.q),
        model: line.m,
        p: line.p,
        version: line.v,
        replicate: line.r.unwrap_or(0),
    }))
}

/// Reads a line in the exact shape the tools write (`{"s": "...", "q": "...", "m": "...",
/// "p": 0.5, "v": "...", "r": 1}`, with or without the spaces, `v` and `r` optional), or
/// gives up (`None`) on anything else: an escape in a string, another key order, another
/// key, a number JSON would not accept. Then the full parser reads it.
fn scan_line(line: &[u8]) -> Option<Parsed<'_>> {
    let mut at = Scanner { line, at: 0 };
    at.literal(b"{")?;
    at.key(b"s")?;
    let state = Hash::of_bytes(at.raw_string()?)?;
    at.next_key(b"q")?;
    let question = Hash::of_bytes(at.raw_string()?)?;
    at.next_key(b"m")?;
    let model = at.string()?;
    at.next_key(b"p")?;
    let p = at.number()?;
    let mut version = None;
    let mut replicate = 0;
    if at.peek_key(b"v") {
        at.next_key(b"v")?;
        version = Some(Cow::Borrowed(at.string()?));
    }
    if at.peek_key(b"r") {
        at.next_key(b"r")?;
        replicate = at.whole()?;
    }
    at.spaces();
    at.literal(b"}")?;
    at.spaces();
    (at.at == line.len()).then_some(Parsed {
        state,
        question,
        model: Cow::Borrowed(model),
        p,
        version,
        replicate,
    })
}

struct Scanner<'a> {
    line: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn spaces(&mut self) {
        while self
            .line
            .get(self.at)
            .is_some_and(|b| *b == b' ' || *b == b'\t' || *b == b'\r')
        {
            self.at += 1;
        }
    }

    fn literal(&mut self, text: &[u8]) -> Option<()> {
        self.spaces();
        self.line[self.at..]
            .starts_with(text)
            .then(|| self.at += text.len())
    }

    fn key(&mut self, name: &[u8]) -> Option<()> {
        self.literal(b"\"")?;
        self.literal(name)?;
        self.literal(b"\"")?;
        self.literal(b":")
    }

    fn next_key(&mut self, name: &[u8]) -> Option<()> {
        self.literal(b",")?;
        self.key(name)
    }

    fn peek_key(&self, name: &[u8]) -> bool {
        let mut probe = Scanner {
            line: self.line,
            at: self.at,
        };
        probe.literal(b",").is_some() && probe.key(name).is_some()
    }

    /// The bytes of a string without escapes (`"` and `\` end the scan) or control
    /// characters.
    fn raw_string(&mut self) -> Option<&'a [u8]> {
        self.literal(b"\"")?;
        let rest = &self.line[self.at..];
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[end] != b'"' || rest[..end].iter().any(|b| *b < 0x20) {
            return None;
        }
        self.at += end + 1;
        Some(&rest[..end])
    }

    /// A string without escapes, as text.
    fn string(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.raw_string()?).ok()
    }

    /// A JSON number: digits, `-`, `.`, `e`, `+`; checked by the float parser, and refused
    /// when it is a form JSON does not allow (a leading `+`, `.5`, `5.`, `inf`).
    fn number(&mut self) -> Option<f64> {
        self.spaces();
        let rest = &self.line[self.at..];
        let len = rest
            .iter()
            .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .unwrap_or(rest.len());
        let text = std::str::from_utf8(&rest[..len]).ok()?;
        let digits = text.strip_prefix('-').unwrap_or(text).as_bytes();
        // JSON wants a digit first, no leading zero, and a digit after a decimal point.
        let point = digits.iter().position(|b| *b == b'.');
        if !digits.first()?.is_ascii_digit()
            || (digits.len() > 1 && digits[0] == b'0' && digits[1].is_ascii_digit())
            || point.is_some_and(|at| !digits.get(at + 1).is_some_and(u8::is_ascii_digit))
        {
            return None;
        }
        let value: f64 = text.parse().ok()?;
        self.at += len;
        value.is_finite().then_some(value)
    }

    fn whole(&mut self) -> Option<u32> {
        self.spaces();
        let rest = &self.line[self.at..];
        let len = rest
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(rest.len());
        if len == 0 || (len > 1 && rest[0] == b'0') {
            return None;
        }
        let value = std::str::from_utf8(&rest[..len]).ok()?.parse().ok()?;
        self.at += len;
        Some(value)
    }
}

/// A line as Python's `json.dumps` writes it: `, ` and `: ` separators, non-ASCII escaped,
/// the probability as Python's `repr` writes a float (`1.0`, `1e-05`).
fn format_line(key: &AnswerKey, answer: &CachedAnswer) -> String {
    let mut line = Map::new();
    line.insert("s".into(), Value::from(key.state.as_str()));
    line.insert("q".into(), Value::from(key.question.as_str()));
    line.insert("m".into(), Value::from(key.model.as_str()));
    // Probabilities are checked to lie in [0, 1] before they are cached.
    line.insert("p".into(), Value::from(answer.p));
    if let Some(version) = &answer.version {
        line.insert("v".into(), Value::from(version.as_str()));
    }
    if key.replicate != 0 {
        line.insert("r".into(), Value::from(key.replicate));
    }
    json::dumps(&Value::Object(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn key(s: &str, q: &str) -> AnswerKey {
        AnswerKey::new(s, q, "jev-latest")
    }

    fn answer(p: f64, v: Option<&str>) -> CachedAnswer {
        CachedAnswer {
            p,
            version: v.map(str::to_string),
        }
    }

    #[test]
    fn lines_are_written_as_python_writes_them() {
        let mut k = key("bcc8ad820ae4a4c13eed0e6c", "0119f4fa8fbe2a2d789e47ca");
        assert_eq!(
            format_line(&k, &answer(0.9, Some("fake-jev-1.0"))),
            r#"{"s": "bcc8ad820ae4a4c13eed0e6c", "q": "0119f4fa8fbe2a2d789e47ca", "m": "jev-latest", "p": 0.9, "v": "fake-jev-1.0"}"#
        );
        k.replicate = 2;
        k.model = "jév".into();
        assert_eq!(
            format_line(&k, &answer(1.0, None)),
            r#"{"s": "bcc8ad820ae4a4c13eed0e6c", "q": "0119f4fa8fbe2a2d789e47ca", "m": "j\u00e9v", "p": 1.0, "r": 2}"#
        );
    }

    #[test]
    fn answers_round_trip_through_the_file_with_versions_and_replicates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/answers.jsonl");
        let cache = AnswerCache::open(&path).unwrap();
        assert!(cache.is_empty());
        let mut second = key("s1", "q1");
        second.replicate = 1;
        cache
            .insert_all(&[
                (key("s1", "q1"), answer(0.25, Some("jev-1.13.0"))),
                (second.clone(), answer(0.75, None)),
            ])
            .unwrap();
        let reopened = AnswerCache::open(&path).unwrap();
        assert_eq!(reopened.len(), 2);
        assert_eq!(
            reopened.get(&key("s1", "q1")),
            Some(answer(0.25, Some("jev-1.13.0")))
        );
        assert_eq!(reopened.get(&second), Some(answer(0.75, None)));
        assert_eq!(reopened.get(&key("s1", "q2")), None);
    }

    /// `text` as `answers.jsonl` in a new temporary folder (kept as long as the handle), and
    /// the file's path.
    fn answers_file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn reference_lines_without_version_or_replicate_load() {
        let (_dir, path) = answers_file(
            "{\"s\":\"a\",\"q\":\"b\",\"m\":\"jev-latest\",\"p\":1}\n\n{\"s\": \"a\", \"q\": \"b\", \"m\": \"jev-latest\", \"p\": 0.5, \"v\": null}\n",
        );
        let cache = AnswerCache::open(&path).unwrap();
        assert_eq!(cache.len(), 1, "the later duplicate wins");
        assert_eq!(cache.get(&key("a", "b")), Some(answer(0.5, None)));
    }

    #[test]
    fn a_truncated_last_line_is_dropped_and_cut_from_the_file() {
        let good = "{\"s\": \"a\", \"q\": \"b\", \"m\": \"jev-latest\", \"p\": 0.5}\n";
        let (_dir, path) = answers_file(&format!("{good}{{\"s\": \"a\", \"q\""));
        let cache = AnswerCache::open(&path).unwrap();
        assert_eq!(cache.len(), 1);
        assert_eq!(fs::read_to_string(&path).unwrap(), good);
        cache
            .insert_all(&[(key("c", "d"), answer(0.1, None))])
            .unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert_eq!(AnswerCache::open(&path).unwrap().len(), 2);
    }

    #[test]
    fn a_fifo_or_a_folder_in_the_caches_place_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("answers.jsonl");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let refused = |path: &Path| match AnswerCache::open(path) {
            Err(error) => error.to_string(),
            Ok(_) => panic!("{} was read as a cache", path.display()),
        };
        let message = refused(&fifo);
        assert!(
            message.contains("answers.jsonl is a FIFO, not a regular file")
                && message.contains("Move it away"),
            "{message}"
        );
        assert!(refused(dir.path()).contains("is a folder"));
    }

    #[test]
    fn a_valid_last_line_without_newline_is_kept_and_the_next_append_adds_one() {
        let (_dir, path) =
            answers_file("{\"s\": \"a\", \"q\": \"b\", \"m\": \"jev-latest\", \"p\": 0.5}");
        let cache = AnswerCache::open(&path).unwrap();
        assert_eq!(cache.len(), 1);
        cache
            .insert_all(&[(key("c", "d"), answer(0.1, None))])
            .unwrap();
        assert_eq!(AnswerCache::open(&path).unwrap().len(), 2);
    }

    #[test]
    fn a_corrupt_line_in_the_middle_is_refused_with_its_line_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        let good = "{\"s\": \"a\", \"q\": \"b\", \"m\": \"jev-latest\", \"p\": 0.5}";
        for bad in [
            "not json",
            "{\"s\": \"a\", \"q\": \"b\", \"m\": \"x\"}",
            "{\"s\": 1, \"q\": \"b\", \"m\": \"x\", \"p\": 0.5}",
            "{\"s\": \"a\", \"q\": \"b\", \"m\": \"x\", \"p\": true}",
        ] {
            fs::write(&path, format!("{good}\n{bad}\n{good}\n")).unwrap();
            let error = AnswerCache::open(&path).unwrap_err();
            assert!(
                matches!(error, SystemOneError::CorruptCache { line: 2, .. }),
                "{bad}: {error}"
            );
            assert!(
                error.to_string().contains(":2: corrupt answer line"),
                "{error}"
            );
        }
        // A bad last line that does end with a newline was written whole: refused too.
        fs::write(&path, format!("{good}\nnot json\n")).unwrap();
        assert!(AnswerCache::open(&path).is_err());
    }

    #[test]
    fn two_caches_on_one_file_append_from_many_threads_without_losing_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        let first = Arc::new(AnswerCache::open(&path).unwrap());
        let second = Arc::new(AnswerCache::open(&path).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let cache = Arc::clone(if t % 2 == 0 { &first } else { &second });
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let rows: Vec<_> = (0..5)
                            .map(|j| {
                                (
                                    key(&format!("s{t}-{i}"), &format!("q{j}")),
                                    answer(0.5, None),
                                )
                            })
                            .collect();
                        cache.insert_all(&rows).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(AnswerCache::open(&path).unwrap().len(), 8 * 50 * 5);
    }

    #[test]
    fn an_append_after_another_writer_died_mid_line_cuts_its_torn_line_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        let cache = AnswerCache::open(&path).unwrap();
        cache
            .insert_all(&[(key("a", "b"), answer(0.5, None))])
            .unwrap();
        // Another process appended half a line and was killed.
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"s\": \"x\", \"q").unwrap();
        cache
            .insert_all(&[(key("c", "d"), answer(0.25, None))])
            .unwrap();
        let reopened = AnswerCache::open(&path).unwrap();
        assert_eq!(reopened.len(), 2);
        assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 2);
    }

    fn serde_read(line: &str) -> Option<(String, String, String, f64, Option<String>, u32)> {
        let line: Line<'_> = serde_json::from_str(line).ok()?;
        Some((
            line.s.into_owned(),
            line.q.into_owned(),
            line.m.into_owned(),
            line.p,
            line.v.map(Cow::into_owned),
            line.r.unwrap_or(0),
        ))
    }

    #[test]
    fn the_scanner_reads_what_the_json_parser_reads_or_leaves_the_line_to_it() {
        for line in [
            r#"{"s": "a1", "q": "b2", "m": "jev-latest", "p": 0.5}"#,
            r#"{"s":"a1","q":"b2","m":"jev-latest","p":1}"#,
            r#"{"s": "a1", "q": "b2", "m": "m", "p": 1e-05, "v": "jev-1.13.0", "r": 2}"#,
            r#"{"s": "a1", "q": "b2", "m": "m", "p": 0.25, "r": 3}"#,
            r#"{"s": "a\u00e9", "q": "b2", "m": "m", "p": 0.5}"#,
            r#"{"q": "b2", "s": "a1", "m": "m", "p": 0.5}"#,
            r#"{"s": "a1", "q": "b2", "m": "m", "p": 0.5, "extra": 1}"#,
            r#"{"s": "a1", "q": "b2", "m": "m", "p": 0.5, "v": null}"#,
            r#"{"s": "a1", "q": "b2", "m": "m", "p": -0.0}"#,
            r#"{"s": "a1", "q": "b2", "m": "m", "p": 2.5E-3}"#,
            "{\"s\": \"a1\", \"q\": \"b2\", \"m\": \"m\", \"p\": 0.5}\r",
        ] {
            let expected = serde_read(line.trim_end()).expect(line);
            let read = parse_line(line.as_bytes()).unwrap().unwrap();
            let mut store = Store::new();
            store.insert(read);
            let store = Mutex::new(store);
            let reader = CacheReader {
                store: store.lock().unwrap(),
            };
            let (p, version) = reader
                .get(&expected.0, &expected.1, &expected.2, expected.5)
                .expect(line);
            assert_eq!(p.to_bits(), expected.3.to_bits(), "{line}");
            assert_eq!(version.map(str::to_string), expected.4, "{line}");
        }
        for bad in [
            r#"{"s": "a", "q": "b", "m": "m", "p": .5}"#,
            r#"{"s": "a", "q": "b", "m": "m", "p": 05}"#,
            r#"{"s": "a", "q": "b", "m": "m", "p": 0.5,}"#,
            r#"{"s": "a", "q": "b", "m": "m", "p": "0.5"}"#,
            r#"{"s": "a", "q": "b", "m": "m"}"#,
        ] {
            assert!(scan_line(bad.as_bytes()).is_none(), "{bad}");
            assert!(parse_line(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_big_file_is_read_on_every_core_with_later_lines_winning_and_line_numbers_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        let mut text = String::new();
        let lines: u32 = 40_000;
        for i in 0..lines {
            let key = key(&format!("{:024x}", i % 1000), &format!("{:024x}", i % 7));
            text.push_str(&format_line(
                &key,
                &answer(f64::from(i) / f64::from(lines), None),
            ));
            text.push('\n');
        }
        assert!(text.len() as u64 > PARALLEL_FROM_BYTES);
        fs::write(&path, &text).unwrap();
        let cache = AnswerCache::open(&path).unwrap();
        assert_eq!(cache.len(), 7000);
        // (state 5, question 5) was written by lines 5, 7005, ..., 35005: the last one wins.
        let last = 35_005;
        let got = cache
            .get(&key(&format!("{:024x}", 5), &format!("{:024x}", 5)))
            .unwrap();
        assert_eq!(got.p, f64::from(last) / f64::from(lines));
        fs::write(&path, format!("{text}garbage\n{text}")).unwrap();
        let error = AnswerCache::open(&path).unwrap_err();
        assert!(
            matches!(error, SystemOneError::CorruptCache { line, .. } if line == lines as usize + 1),
            "{error}"
        );
    }

    #[test]
    fn in_memory_cache_writes_no_file() {
        let cache = AnswerCache::in_memory();
        cache
            .insert_all(&[(key("a", "b"), answer(0.5, None))])
            .unwrap();
        assert_eq!(cache.len(), 1);
        assert!(cache.path().is_none());
    }
}

//! Running a child process with a deadline: the agent CLIs and subprocess harnesses, the
//! `command` metric, the external optimizer bridge and classifier mode's command policies.
//!
//! * The argv is executed directly, never through a shell.
//! * The child leads its own process group, and the whole group is killed when the deadline
//!   passes (and, to leave nothing behind, when the child is done): a `sh -c 'agent & wait'`
//!   does not leave its grandchildren running.
//! * stdin is the given bytes, or `/dev/null` (never the parent's terminal).
//! * stdout and stderr are read concurrently into bounded buffers: the first
//!   [`Limits::stdout_head`] bytes of stdout and the last [`Limits::tail`] bytes of each
//!   stream are kept, the rest is counted and dropped, so a child printing gigabytes cannot
//!   exhaust memory. Bytes that are not UTF-8 become U+FFFD, never an error.
//! * The environment is the parent's with `env` laid over it.
//! * Every running child's group is registered, so that [`kill_running_children`] can end
//!   them all when Skill Factory itself has to quit at once (a second Ctrl-C, SIGTERM): a
//!   child leading its own group gets no signal from the terminal, and would otherwise outlive
//!   us.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

mod lines;

pub use lines::{LineChild, LineError};

/// How much of the output streams is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes kept from the start of stdout (the output a harness returns).
    pub stdout_head: usize,
    /// Bytes kept from the end of each stream (for error messages and records).
    pub tail: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            stdout_head: 8 * 1024 * 1024,
            tail: 64 * 1024,
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ChildSpec<'a> {
    /// Program and arguments; `argv[0]` is looked up on `PATH` when it has no `/`.
    pub argv: &'a [String],
    /// Bytes written to stdin (then closed); `None` gives the child `/dev/null`.
    pub stdin: Option<&'a [u8]>,
    /// Working directory; `None` keeps the parent's.
    pub cwd: Option<&'a Path>,
    /// Variables set over the parent's environment.
    pub env: &'a BTreeMap<String, String>,
    /// Longest run time.
    pub timeout: Duration,
    /// What to keep of the output.
    pub limits: Limits,
}

/// One output stream, bounded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_limit: usize,
    tail_limit: usize,
    total: u64,
}

impl Captured {
    fn new(head_limit: usize, tail_limit: usize) -> Self {
        Captured {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_limit,
            tail_limit,
            total: 0,
        }
    }

    fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.head_limit.saturating_sub(self.head.len());
        if room > 0 {
            let taken = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..taken]);
            chunk = &chunk[taken..];
        }
        if self.tail_limit == 0 || chunk.is_empty() {
            return;
        }
        if chunk.len() >= self.tail_limit {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.tail_limit..]);
        } else {
            self.tail.extend(chunk);
            let excess = self.tail.len().saturating_sub(self.tail_limit);
            self.tail.drain(..excess);
        }
    }

    /// A stream kept elsewhere (by the job of a rollout on a Ray cluster): its `head` and
    /// `tail` as that side kept them within `limits` (stdout keeps a head, stderr none), and
    /// `total`, the bytes it produced in all.
    pub fn from_parts(
        head: Vec<u8>,
        tail: Vec<u8>,
        total: u64,
        head_limit: usize,
        tail_limit: usize,
    ) -> Self {
        let mut captured = Captured::new(head_limit, tail_limit);
        captured.push(&head);
        captured.push(&tail);
        captured.total = total;
        captured
    }

    /// Bytes the stream produced in total.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// True when the stream produced more than the kept head.
    pub fn truncated(&self) -> bool {
        self.total > self.head.len() as u64
    }

    /// The kept head as text (a character cut in half at the end is dropped).
    pub fn head_text(&self) -> String {
        let end = if self.truncated() {
            complete_prefix(&self.head)
        } else {
            self.head.len()
        };
        String::from_utf8_lossy(&self.head[..end]).into_owned()
    }

    /// The last `max_bytes` bytes of the stream (at most what was kept), as text starting on a
    /// character boundary.
    pub fn tail_text(&self, max_bytes: usize) -> String {
        let from_tail = self.tail.len().min(max_bytes);
        let from_head = (max_bytes - from_tail).min(self.head.len());
        let mut bytes = Vec::with_capacity(from_head + from_tail);
        // Bytes skipped between the head and the tail must not be bridged over.
        let contiguous = self.total == (self.head.len() + self.tail.len()) as u64;
        if contiguous {
            bytes.extend_from_slice(&self.head[self.head.len() - from_head..]);
        }
        bytes.extend(self.tail.iter().skip(self.tail.len() - from_tail));
        let start = bytes
            .iter()
            .take(3)
            .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
            .count();
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }
}

/// The length of `bytes` without a UTF-8 sequence cut off at its end.
fn complete_prefix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        // Invalid bytes inside are replaced later; only a cut at the very end is dropped.
        Err(_) => {
            let start = bytes.len().saturating_sub(3);
            match std::str::from_utf8(&bytes[start..]) {
                Err(e) if e.error_len().is_none() => start + e.valid_up_to(),
                _ => bytes.len(),
            }
        }
    }
}

/// Both output streams of a child.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// Standard output.
    pub stdout: Captured,
    /// Standard error.
    pub stderr: Captured,
}

/// How a child run ended.
#[derive(Debug)]
pub enum Outcome {
    /// The child exited (and its output streams closed) before the deadline.
    Exited {
        /// Its exit code, or minus the signal that killed it (as Python reports it).
        code: i32,
        /// What it printed.
        output: Output,
    },
    /// The deadline passed; the process group was killed.
    TimedOut {
        /// What it printed until then.
        output: Output,
    },
    /// The program could not be started.
    LaunchFailed(std::io::Error),
}

/// Runs a child to completion or to its deadline. Never panics; every failure is an
/// [`Outcome`].
pub async fn run(spec: ChildSpec<'_>) -> Outcome {
    let Some((program, args)) = spec.argv.split_first() else {
        return Outcome::LaunchFailed(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the command is empty",
        ));
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(spec.env)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = spec.cwd {
        command.current_dir(cwd);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return Outcome::LaunchFailed(error),
    };
    let group = child.id();
    register(group);
    let mut output = Output {
        stdout: Captured::new(spec.limits.stdout_head, spec.limits.tail),
        stderr: Captured::new(0, spec.limits.tail),
    };
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let finished = tokio::time::timeout(spec.timeout, async {
        let feed = async {
            if let (Some(mut pipe), Some(bytes)) = (stdin, spec.stdin) {
                // A child that exits without reading its input closes the pipe: not an error.
                let _ = pipe.write_all(bytes).await;
                let _ = pipe.shutdown().await;
            }
        };
        let (status, _, _, _) = tokio::join!(
            child.wait(),
            feed,
            drain(stdout, &mut output.stdout),
            drain(stderr, &mut output.stderr),
        );
        status
    })
    .await;
    // Whatever happened, nothing of the group may outlive the run.
    kill_group(group);
    unregister(group);
    match finished {
        Ok(Ok(status)) => Outcome::Exited {
            code: exit_code(status),
            output,
        },
        Ok(Err(error)) => Outcome::LaunchFailed(error),
        Err(_elapsed) => {
            // Reap the leader; kill_on_drop covers the case where even this hangs.
            let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            Outcome::TimedOut { output }
        }
    }
}

async fn drain(pipe: Option<impl AsyncRead + Unpin>, into: &mut Captured) {
    let Some(mut pipe) = pipe else { return };
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => into.push(&buffer[..n]),
        }
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|signal| -signal))
        .unwrap_or(-1)
}

/// The process groups of the children running now, by leader pid.
static RUNNING: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

fn running() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    lock(&RUNNING)
}

fn register(leader: Option<u32>) {
    if let Some(pid) = leader {
        running().insert(pid);
    }
}

fn unregister(leader: Option<u32>) {
    if let Some(pid) = leader {
        running().remove(&pid);
    }
}

/// Leaders of the groups of Skill Factory processes started by another (the dashboard's
/// jobs): asked to stop with SIGTERM, which they answer by stopping their own children.
static OURS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// A Skill Factory process started by another (a job the dashboard launches, whose output
/// goes to a file) that leads its own process group: while the guard lives,
/// [`kill_running_children`] sends that group SIGTERM, so the job stops its own children
/// (agents, harness programs) before it exits.
#[derive(Debug)]
pub struct GroupGuard(u32);

impl GroupGuard {
    /// Registers the group led by `leader`.
    pub fn new(leader: u32) -> GroupGuard {
        lock(&OURS).insert(leader);
        GroupGuard(leader)
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        lock(&OURS).remove(&self.0);
    }
}

/// Whether process `pid` is running: it exists and is not a zombie (a process that ended and
/// waits for whoever adopted it to reap it).
pub fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command name, which is in parentheses and may hold any byte.
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// One process's identity: the machine it runs on, its id, and when it started (in clock
/// ticks after boot, the 22nd field of `/proc/<pid>/stat`), so that another process given the
/// same id later is not taken for it. Host and start are `None` where `/proc` is not (macOS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessId {
    /// The machine's name (`/proc/sys/kernel/hostname`).
    pub host: Option<String>,
    /// The process id.
    pub pid: u32,
    /// When it started, in clock ticks after boot.
    pub started: Option<u64>,
}

impl ProcessId {
    /// This process.
    pub fn current() -> ProcessId {
        ProcessId::of(std::process::id())
    }

    /// Process `pid` of this machine, as it is now.
    pub fn of(pid: u32) -> ProcessId {
        ProcessId {
            host: host(),
            pid,
            started: started(pid),
        }
    }

    /// Whether this process still runs: it is on this machine, its id is running, and that
    /// process started when it did. `None` when that cannot be told: another machine's
    /// process, or no `/proc`.
    pub fn is_running(&self) -> Option<bool> {
        let started = self.started?;
        if self.host.is_none() || self.host != host() {
            return None;
        }
        Some(is_running(self.pid) && self::started(self.pid) == Some(started))
    }
}

/// This machine's name.
fn host() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    Some(name.trim().to_owned()).filter(|name| !name.is_empty())
}

/// When process `pid` started, in clock ticks after boot (`/proc/<pid>/stat`'s 22nd field).
fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses and may hold any byte: the
    // state is the 3rd field of the line, the start time the 22nd.
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// Kills the process group of every child still running, grandchildren included; for a
/// process about to exit without waiting for them. Returns how many groups were signalled.
pub fn kill_running_children() -> usize {
    let leaders = std::mem::take(&mut *running());
    for &leader in &leaders {
        kill_group(Some(leader));
    }
    let ours = std::mem::take(&mut *lock(&OURS));
    for &leader in &ours {
        signal_group(leader, libc::SIGTERM);
    }
    leaders.len() + ours.len()
}

/// Sends SIGKILL to the process group led by `leader` (ignoring a group that is already gone).
fn kill_group(leader: Option<u32>) {
    if let Some(leader) = leader {
        signal_group(leader, libc::SIGKILL);
    }
}

/// Sends `signal` to the process group led by `leader`.
fn signal_group(leader: u32, signal: libc::c_int) {
    let Ok(pid) = libc::pid_t::try_from(leader) else {
        return;
    };
    if pid <= 0 {
        return;
    }
    // SAFETY: kill(2) only sends a signal; a negative pid addresses the process group the
    // child was made to lead with `process_group(0)`, so no unrelated process is signalled.
    unsafe {
        libc::kill(-pid, signal);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_runs_and_one_that_ended_does_not() {
        let me = super::ProcessId::current();
        assert_eq!(me.is_running(), Some(true));
        // The same id with another start is another process.
        let other = super::ProcessId {
            started: me.started.map(|t| t + 1),
            ..me.clone()
        };
        assert_eq!(other.is_running(), Some(false));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let id = super::ProcessId::of(child.id());
        child.wait().unwrap();
        assert_eq!(id.is_running(), Some(false));
        // Another machine's process cannot be told.
        let elsewhere = super::ProcessId {
            host: Some("another-machine.invalid".to_owned()),
            ..me
        };
        assert_eq!(elsewhere.is_running(), None);
    }

    use super::*;

    fn captured(head: usize, tail: usize, chunks: &[&[u8]]) -> Captured {
        let mut c = Captured::new(head, tail);
        for chunk in chunks {
            c.push(chunk);
        }
        c
    }

    #[test]
    fn head_and_tail_keep_the_ends_of_a_long_stream() {
        let c = captured(4, 3, &[b"abcdef", b"ghij"]);
        assert_eq!(c.total_bytes(), 10);
        assert!(c.truncated());
        assert_eq!(c.head_text(), "abcd");
        assert_eq!(c.tail_text(3), "hij");
        // The skipped middle (efg) is not bridged over.
        assert_eq!(c.tail_text(10), "hij");
    }

    #[test]
    fn short_streams_are_kept_whole() {
        let c = captured(100, 4, &[b"hello ", b"world"]);
        assert!(!c.truncated());
        assert_eq!(c.head_text(), "hello world");
        assert_eq!(c.tail_text(5), "world");
        assert_eq!(c.tail_text(1000), "hello world");
        let tail_only = captured(0, 4, &[b"hello ", b"world"]);
        assert_eq!(tail_only.tail_text(100), "orld");
    }

    #[test]
    fn cut_characters_are_dropped_not_mangled() {
        // "é" is two bytes; a head of 3 bytes cuts the second "é" in half.
        let c = captured(3, 3, &["éé".as_bytes(), b"x"]);
        assert_eq!(c.head_text(), "é");
        assert_eq!(c.tail_text(2), "x");
        let c = captured(0, 3, &["aéé".as_bytes()]);
        assert_eq!(c.tail_text(3), "é");
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let c = captured(100, 10, &[b"ok \xff\xfe end"]);
        assert_eq!(c.head_text(), "ok \u{fffd}\u{fffd} end");
    }
}

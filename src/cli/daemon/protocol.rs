//! The daemon's wire protocol: one JSON request line, one JSON reply line, per connection,
//! over a Unix socket in the graph directory (mode 0600).
//!
//! A reply carries one of seven typed outcomes. `success` and `degraded` carry exactly
//! what the direct command prints (stdout, stderr) and its exit code, so a worker answer
//! is the direct answer; the others carry no evidence at all.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::AtlasError;

/// Version of the request and reply documents below. Version 2 added `max_score` to a
/// context call; a call is sent with the lowest version that carries what it asks
/// (`ContextCall::version_needed`), so an older daemon answers what it can answer
/// exactly and refuses, as `unavailable`, what it would answer wrongly.
pub const PROTOCOL_VERSION: u32 = 2;
/// The oldest call version this daemon reads.
pub const OLDEST_PROTOCOL_VERSION: u32 = 1;
pub const SOCKET_FILE: &str = "daemon.sock";
/// Held (flock) by the serving daemon: a socket without a holder is stale.
pub const LOCK_FILE: &str = "daemon.lock";
pub const LOG_FILE: &str = "daemon.log";
/// Longest request line the daemon reads.
pub const MAX_REQUEST_BYTES: u64 = 1024 * 1024;

/// Longest path a Unix socket may have (`sun_path` holds 108 bytes with the final NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Where the daemon of `graph_dir` listens: `<graph>/daemon.sock`, or — when that path is
/// too long for a Unix socket (a deep checkout) — `/tmp/atlas-<uid>/<blake3 of the graph
/// dir>.sock`, in a directory only this user may enter (`private_dir`).
pub fn socket_path(graph_dir: &Path) -> PathBuf {
    // Every spelling of the directory (`..`, links) names one socket.
    let graph_dir = &graph_dir
        .canonicalize()
        .unwrap_or_else(|_| graph_dir.to_path_buf());
    let inside = graph_dir.join(SOCKET_FILE);
    if inside.as_os_str().len() <= MAX_SOCKET_PATH {
        return inside;
    }
    use std::os::unix::ffi::OsStrExt;
    let key = blake3::hash(graph_dir.as_os_str().as_bytes()).to_hex();
    fallback_dir().join(format!("{}.sock", &key[..32]))
}

fn fallback_dir() -> PathBuf {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    PathBuf::from(format!("/tmp/atlas-{uid}"))
}

/// Whether the directory of `socket` is safe to listen or connect in: the graph directory
/// itself, or the fallback directory when it is a real directory (not a link) owned by
/// this user and closed to everyone else. `create` makes the fallback directory (0700)
/// when it does not exist.
pub fn private_dir(socket: &Path, create: bool) -> bool {
    let Some(dir) = socket.parent() else {
        return false;
    };
    if dir != fallback_dir() {
        return true;
    }
    if create {
        use std::os::unix::fs::DirBuilderExt;
        let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    }
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir).is_ok_and(|m| {
        // SAFETY: getuid has no preconditions.
        m.file_type().is_dir() && m.uid() == unsafe { libc::getuid() } && m.mode() & 0o077 == 0
    })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Context(Box<ContextCall>),
    Status,
    Shutdown,
}

/// `atlas context` as the client was asked it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContextCall {
    pub v: u32,
    pub query: String,
    pub profile: String,
    pub max_bytes: Option<u32>,
    pub min_score: Option<u16>,
    /// Absent from older clients' calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_score: Option<u16>,
    pub expect_graph: Option<String>,
    pub after: Option<String>,
    pub frozen: bool,
    pub no_build: bool,
    /// `json` or `text`.
    pub format: String,
    /// `--code` and `--graph` exactly as given (continuation argv replay them).
    pub code_arg: Option<String>,
    pub graph_arg: Option<String>,
    /// The code root the client resolved: a daemon serving another root does not answer.
    pub code_root: PathBuf,
    /// Overrides the daemon's per-request deadline (never beyond it).
    pub deadline_ms: Option<u64>,
}

impl ContextCall {
    /// The lowest protocol version that carries this call: a version-1 daemon ignores
    /// `max_score` and would answer a band continuation with the whole page.
    pub fn version_needed(&self) -> u32 {
        if self.max_score.is_some() { 2 } else { 1 }
    }
}

/// The typed outcome of one worker request.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A worker answered; the answer is the direct command's.
    Success,
    /// A worker answered completely, under a condition the reason names (the memory
    /// budget was exceeded, or the last watch-triggered build failed).
    Degraded,
    /// Refused at admission: the queue is full (or the memory budget is spent).
    Busy,
    /// The request waited in the queue past the queue timeout, or ran past its deadline.
    Timeout,
    /// The client went away, or the daemon stopped, before an answer.
    Cancelled,
    /// The worker panicked; it was replaced.
    Failed,
    /// No daemon, another code root, or the circuit is open after repeated panics.
    Unavailable,
}

impl Outcome {
    pub const ALL: [Outcome; 7] = [
        Outcome::Success,
        Outcome::Degraded,
        Outcome::Busy,
        Outcome::Timeout,
        Outcome::Cancelled,
        Outcome::Failed,
        Outcome::Unavailable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Degraded => "degraded",
            Outcome::Busy => "busy",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
            Outcome::Failed => "failed",
            Outcome::Unavailable => "unavailable",
        }
    }

    /// The stable code of the outcome.
    pub fn code(self) -> &'static str {
        match self {
            Outcome::Success => "atlas-daemon-success",
            Outcome::Degraded => "atlas-daemon-degraded",
            Outcome::Busy => "atlas-daemon-busy",
            Outcome::Timeout => "atlas-daemon-timeout",
            Outcome::Cancelled => "atlas-daemon-cancelled",
            Outcome::Failed => "atlas-daemon-failed",
            Outcome::Unavailable => "atlas-daemon-unavailable",
        }
    }

    /// Whether the reply carries a complete answer.
    pub fn answered(self) -> bool {
        matches!(self, Outcome::Success | Outcome::Degraded)
    }

    /// The typed error of an outcome without an answer.
    pub fn error(self, reason: String) -> Option<AtlasError> {
        Some(match self {
            Outcome::Success | Outcome::Degraded => return None,
            Outcome::Busy => AtlasError::DaemonBusy(reason),
            Outcome::Timeout => AtlasError::DaemonTimeout(reason),
            Outcome::Cancelled => AtlasError::DaemonCancelled(reason),
            Outcome::Failed => AtlasError::DaemonFailed(reason),
            Outcome::Unavailable => AtlasError::DaemonUnavailable(reason),
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reply {
    pub v: u32,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the direct command prints, and its exit code (answered outcomes).
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    #[serde(default)]
    pub exit_code: i32,
    /// Which worker answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<usize>,
    pub queue_ms: f64,
    pub run_ms: f64,
}

impl Reply {
    /// An answer: what the direct command printed, and its exit code.
    pub fn answered(stdout: String, stderr: String, exit_code: i32) -> Reply {
        Reply {
            v: PROTOCOL_VERSION,
            outcome: Outcome::Success,
            reason: None,
            stdout,
            stderr,
            exit_code,
            worker: None,
            queue_ms: 0.0,
            run_ms: 0.0,
        }
    }

    pub fn refused(outcome: Outcome, reason: impl Into<String>) -> Reply {
        Reply {
            v: PROTOCOL_VERSION,
            outcome,
            reason: Some(reason.into()),
            stdout: String::new(),
            stderr: String::new(),
            exit_code: 0,
            worker: None,
            queue_ms: 0.0,
            run_ms: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call is sent as version 1 unless it carries `max_score`: an older daemon then
    /// refuses it (`unavailable`) rather than answering a band continuation whole.
    #[test]
    fn a_call_asks_for_version_two_only_when_it_needs_it() {
        let call = |max_score| ContextCall {
            v: PROTOCOL_VERSION,
            query: "Cart".into(),
            profile: "symbol".into(),
            max_bytes: None,
            min_score: Some(1),
            max_score,
            expect_graph: None,
            after: None,
            frozen: true,
            no_build: false,
            format: "json".into(),
            code_arg: None,
            graph_arg: None,
            code_root: PathBuf::from("/r"),
            deadline_ms: None,
        };
        assert_eq!(call(None).version_needed(), 1);
        assert_eq!(call(Some(500)).version_needed(), 2);
        assert!(call(Some(500)).version_needed() <= PROTOCOL_VERSION);
    }
}

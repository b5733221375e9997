//! Observability events (R-OBS-3): with `ATLAS_OBSERVABILITY=1`, every tool call that
//! answers a query (`context`, `search`, `expand`) records the size of its final output in
//! chars, bytes and tokens, and the tokenizer that counted them, in memory and in
//! `<graph>/observability/events.jsonl`, rotated as 3 files of at most 1 MiB.
//!
//! Events are sizes and codes only: never query text, code, paths or keys. Recording is
//! best effort: a held lock or an I/O error drops that one event (counted in
//! `dropped_events`, carried by the next event that lands), never the query.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::query::tokens::TokenizerIdentity;

pub const DIR: &str = "observability";
const FILE: &str = "events.jsonl";
/// Files kept: `events.jsonl`, `events.1.jsonl`, `events.2.jsonl`.
pub const FILES: usize = 3;
const FILE_LIMIT: u64 = 1024 * 1024;
/// How long a writer waits for another writer's lock before dropping its event.
const LOCK_PATIENCE: Duration = Duration::from_millis(200);

/// One tool call. Sizes and codes only.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Event {
    /// Milliseconds since the Unix epoch.
    pub ts_ms: u64,
    /// `context`, `search` or `expand`.
    pub tool: String,
    /// `json` or `text`.
    pub format: String,
    /// The context or search profile, when the tool has one.
    pub profile: Option<String>,
    /// `ok`, or the error code (`context_ambiguous`, …).
    pub outcome: String,
    pub chars: usize,
    pub bytes: usize,
    /// Exact tokens; `null` when counting fell back to characters.
    pub tokens: Option<usize>,
    pub tokenizer: TokenizerIdentity,
    /// Results in the output (hits, evidence items, expanded refs).
    pub items: usize,
    pub latency_ms: u64,
    /// Events this process dropped since the last one it recorded.
    pub dropped_events: u64,
}

impl Event {
    /// An event for `output`, counted with the configured token counter (`tokenizer`).
    pub fn builder(
        tool: &str,
        format: &str,
        profile: Option<&str>,
        outcome: &str,
        tokenizer: Option<&Path>,
    ) -> EventBuilder {
        let counter = crate::query::tokens::counter(tokenizer);
        EventBuilder {
            counter,
            event: Event {
                ts_ms: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64),
                tool: tool.into(),
                format: format.into(),
                profile: profile.map(str::to_string),
                outcome: outcome.into(),
                chars: 0,
                bytes: 0,
                tokens: None,
                tokenizer: counter.identity.clone(),
                items: 0,
                latency_ms: 0,
                dropped_events: 0,
            },
        }
    }
}

pub struct EventBuilder {
    counter: &'static crate::query::tokens::TokenCounter,
    event: Event,
}

impl EventBuilder {
    pub fn output(mut self, output: &str, items: usize) -> EventBuilder {
        let counter = self.counter;
        self.event.chars = output.chars().count();
        self.event.bytes = output.len();
        self.event.tokens = (counter.mode() == "tokens").then(|| counter.count(output));
        self.event.items = items;
        self
    }

    pub fn started(mut self, start: Instant) -> EventBuilder {
        self.event.latency_ms = start.elapsed().as_millis() as u64;
        self
    }

    pub fn build(self) -> Event {
        self.event
    }
}

/// What this process recorded and dropped (the in-memory side of R-OBS-3).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Memory {
    pub recorded: u64,
    pub dropped_events: u64,
    /// Drops per events directory not yet reported by an event recorded there.
    #[serde(skip)]
    pending_drops: Vec<(PathBuf, u64)>,
    pub last: Option<Event>,
}

impl Memory {
    fn pending(&mut self, dir: &Path) -> &mut u64 {
        let at = match self.pending_drops.iter().position(|(d, _)| d == dir) {
            Some(at) => at,
            None => {
                self.pending_drops.push((dir.to_path_buf(), 0));
                self.pending_drops.len() - 1
            }
        };
        &mut self.pending_drops[at].1
    }
}

static MEMORY: Mutex<Memory> = Mutex::new(Memory {
    recorded: 0,
    dropped_events: 0,
    pending_drops: Vec::new(),
    last: None,
});

/// This process's counters.
pub fn memory() -> Memory {
    MEMORY.lock().map(|m| m.clone()).unwrap_or_default()
}

/// Writes events under one graph directory.
pub struct Recorder {
    dir: PathBuf,
    file_limit: u64,
}

impl Recorder {
    pub fn new(graph_dir: &Path) -> Recorder {
        Recorder {
            dir: graph_dir.join(DIR),
            file_limit: FILE_LIMIT,
        }
    }

    /// A recorder with a smaller rotation threshold (tests).
    #[cfg(test)]
    fn with_file_limit(graph_dir: &Path, file_limit: u64) -> Recorder {
        Recorder {
            dir: graph_dir.join(DIR),
            file_limit,
        }
    }

    /// Records `event`; returns whether it landed. Failures only count a dropped event.
    pub fn record(&self, mut event: Event) -> bool {
        let Ok(mut memory) = MEMORY.lock() else {
            return false;
        };
        event.dropped_events = *memory.pending(&self.dir);
        match self.append(&event) {
            Ok(()) => {
                memory.recorded += 1;
                *memory.pending(&self.dir) = 0;
                memory.last = Some(event);
                true
            }
            Err(_) => {
                memory.dropped_events += 1;
                *memory.pending(&self.dir) += 1;
                false
            }
        }
    }

    fn append(&self, event: &Event) -> std::io::Result<()> {
        let mut line = serde_json::to_string(event).map_err(std::io::Error::other)?;
        line.push('\n');
        fs::create_dir_all(&self.dir)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join("lock"))?;
        let deadline = Instant::now() + LOCK_PATIENCE;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::WouldBlock,
                        "observability lock held",
                    ));
                }
                Err(fs::TryLockError::Error(e)) => return Err(e),
            }
        }
        let current = self.dir.join(FILE);
        let size = fs::metadata(&current).map_or(0, |m| m.len());
        if size > 0 && size + line.len() as u64 > self.file_limit {
            self.rotate()?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&current)?;
        file.write_all(line.as_bytes())
    }

    /// `events.jsonl` → `events.1.jsonl` → `events.2.jsonl` → gone.
    fn rotate(&self) -> std::io::Result<()> {
        let oldest = self.dir.join(rotated_name(FILES - 1));
        if oldest.exists() {
            fs::remove_file(&oldest)?;
        }
        for n in (0..FILES - 1).rev() {
            let from = self.dir.join(rotated_name(n));
            if from.exists() {
                fs::rename(&from, self.dir.join(rotated_name(n + 1)))?;
            }
        }
        Ok(())
    }
}

fn rotated_name(n: usize) -> String {
    if n == 0 {
        FILE.to_string()
    } else {
        format!("events.{n}.jsonl")
    }
}

/// What `atlas status` reports: the files on disk and this process's memory.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Status {
    pub enabled: bool,
    pub files: usize,
    pub bytes: u64,
    pub events: usize,
    /// Dropped events reported by the events on disk, plus this process's unreported ones.
    pub dropped_events: u64,
    pub last: Option<Event>,
}

/// What is recorded under `graph_dir`; `enabled`: whether this process records.
pub fn status(graph_dir: &Path, enabled: bool) -> Status {
    let dir = graph_dir.join(DIR);
    let mut status = Status {
        enabled,
        files: 0,
        bytes: 0,
        events: 0,
        dropped_events: 0,
        last: None,
    };
    // Oldest file first so that `last` ends as the newest event.
    for n in (0..FILES).rev() {
        let Ok(text) = fs::read_to_string(dir.join(rotated_name(n))) else {
            continue;
        };
        status.files += 1;
        status.bytes += text.len() as u64;
        for line in text.lines() {
            if let Ok(event) = serde_json::from_str::<Event>(line) {
                status.events += 1;
                status.dropped_events += event.dropped_events;
                status.last = Some(event);
            }
        }
    }
    if let Ok(mut memory) = MEMORY.lock() {
        status.dropped_events += *memory.pending(&dir);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(tool: &str) -> Event {
        Event::builder(tool, "json", Some("compact"), "ok", None)
            .output("{\"hits\":[]}", 0)
            .build()
    }

    #[test]
    fn events_rotate_across_three_files_of_bounded_size() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::with_file_limit(dir.path(), 1024);
        for _ in 0..100 {
            assert!(recorder.record(event("search")));
        }
        let obs = dir.path().join(DIR);
        let mut names: Vec<String> = fs::read_dir(&obs)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".jsonl"))
            .collect();
        names.sort();
        assert_eq!(names, ["events.1.jsonl", "events.2.jsonl", "events.jsonl"]);
        for name in &names {
            let size = fs::metadata(obs.join(name)).unwrap().len();
            assert!(size <= 1024, "{name} is {size} bytes");
        }
        let status = status(dir.path(), true);
        assert_eq!(status.files, 3);
        assert!(
            status.events > 3 && status.events < 100,
            "{}",
            status.events
        );
        assert_eq!(status.last.unwrap().tool, "search");
    }

    #[test]
    fn a_held_lock_drops_only_that_event_and_the_next_one_reports_it() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::new(dir.path());
        assert!(recorder.record(event("context")));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.path().join(DIR).join("lock"))
            .unwrap();
        lock.lock().unwrap();
        assert!(!recorder.record(event("search")));
        lock.unlock().unwrap();
        assert!(recorder.record(event("expand")));
        let text = fs::read_to_string(dir.path().join(DIR).join(FILE)).unwrap();
        let events: Vec<Event> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].tool, "expand");
        assert_eq!(events[1].dropped_events, 1);
        assert!(memory().dropped_events >= 1);
    }

    #[test]
    fn an_unwritable_directory_drops_the_event() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the directory should be: every write fails.
        fs::write(dir.path().join(DIR), b"not a directory").unwrap();
        assert!(!Recorder::new(dir.path()).record(event("search")));
    }

    #[test]
    fn sizes_are_counted_in_chars_bytes_and_tokens() {
        let e = Event::builder("search", "json", None, "ok", None)
            .output("héllo world", 1)
            .build();
        assert_eq!((e.chars, e.bytes, e.items), (11, 12, 1));
        assert_eq!(
            e.tokens,
            Some(crate::query::tokens::counter(None).count("héllo world"))
        );
        assert!(!e.tokenizer.name.is_empty());
    }
}

//! Keeping the graph fresh while the tree changes (R-D-2): `atlas watch`, and `ATLAS_WATCH=1`
//! in `atlas mcp` and the daemon.
//!
//! The directories an inventory descends into are watched one by one (inotify through
//! `notify`; polling where inotify is unavailable or its watches are exhausted, or when
//! asked), so ignored trees such as `target/` and `node_modules/` are never watched at all.
//! A change that no inventory could see (an editor swap file, a hidden or ignored path)
//! never wakes a build. A relevant change starts a debounce; every change until it expires
//! joins the same build, and changes during a build make exactly one more. One thread runs
//! the builds, so the watcher never runs two at once; other processes' builds are kept
//! apart by the build lock as always. Each state change is written to `<graph>/watch.json`
//! for `atlas status`.

use super::pipeline::millis;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use notify::{EventKind, RecursiveMode, Watcher as _};
use serde::{Deserialize, Serialize};

use super::inventory;
use super::pipeline::{self, BuildOptions, LockWait};
use crate::error::{AtlasError, IoContext, Result};

/// Where a watcher reports its state, in the graph directory.
pub const STATUS_FILE: &str = "watch.json";
/// Held by the watching process, so that one graph has one watcher.
const LOCK_FILE: &str = "watch.lock";
/// A steady stream of changes still builds at least this often.
const MAX_DELAY_FACTOR: u32 = 10;
/// Walks of a directory that appeared, each watching what the last did not see
/// (`Backend::add`): by the last, every parent of a newer subdirectory is watched, so
/// that subdirectory brings an event of its own.
const ADD_ROUNDS: usize = 3;

#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// What each build is (root, graph, companion, limits); its lock wait is replaced.
    pub build: BuildOptions,
    /// Quiet time after the last relevant change before a build starts.
    pub debounce: Duration,
    /// Poll instead of using inotify.
    pub force_poll: bool,
    pub poll_interval: Duration,
    /// Where each build runs.
    pub runner: Runner,
}

/// Where the watcher's builds run.
#[derive(Debug, Clone)]
pub enum Runner {
    /// In this process (`atlas watch`).
    InProcess,
    /// In a child process: this program and arguments, which print the build report
    /// (`build --format json`) or the JSON error envelope on stdout. A serving process
    /// (daemon, MCP server) builds this way, so that a build's memory peak is never its
    /// own and a build that dies takes nothing else with it.
    Command(Vec<std::ffi::OsString>),
}

impl WatchOptions {
    pub fn new(build: BuildOptions, debounce: Duration) -> WatchOptions {
        WatchOptions {
            build,
            debounce,
            force_poll: false,
            poll_interval: Duration::from_secs(1),
            runner: Runner::InProcess,
        }
    }
}

/// What a build the watcher ran reports: (unchanged, fingerprint, files whose facts came
/// from memory), or the error code.
type BuildResult = std::result::Result<(bool, String, usize), String>;

/// Runs `argv` and reads its build report or error envelope.
fn run_command(argv: &[std::ffi::OsString]) -> BuildResult {
    let Some((program, args)) = argv.split_first() else {
        return Err("atlas-internal".into());
    };
    let output = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|_| "atlas-io".to_string())?;
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|_| "atlas-internal".to_string())?;
    if let Some(code) = report["error"]["code"].as_str() {
        return Err(code.to_string());
    }
    match (
        report["unchanged"].as_bool(),
        report["fingerprint"].as_str(),
    ) {
        (Some(unchanged), Some(fingerprint)) if output.status.success() => {
            let from_memory = report["from_memory"].as_u64().unwrap_or(0) as usize;
            Ok((unchanged, fingerprint.to_string(), from_memory))
        }
        // Killed, or a report without its fields.
        _ => Err("atlas-internal".into()),
    }
}

/// How the last build the watcher ran ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LastBuild {
    /// `published`, `unchanged` (the changes left the inputs as committed) or `failed`.
    pub outcome: String,
    /// The error code of a failed build.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The committed fingerprint after the build.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// From the end of the debounce to the commit.
    pub latency_ms: f64,
    /// From the first change it covers to the commit.
    pub since_first_change_ms: f64,
    /// Relevant change events the build covers.
    pub events: u64,
    pub finished_unix_ms: u64,
    /// Files whose facts the build took from the watcher's memory of its last build
    /// (in-process builds: `atlas watch`), not from the cache on disk.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub facts_from_memory: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What `atlas status` shows of a watcher.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WatchStatus {
    pub pid: u32,
    /// `inotify` or `poll`.
    pub backend: String,
    /// Why the watcher polls, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_reason: Option<String>,
    /// `idle`, `pending` (debouncing), `building` or `stopped`.
    pub state: String,
    pub debounce_ms: u64,
    pub watched_directories: usize,
    /// Directories that appeared but could not be watched (inotify's watches exhausted):
    /// changes inside them are seen only by the next build something else triggers.
    #[serde(default)]
    pub unwatched_directories: u64,
    /// Change events that could change the inventory.
    pub events: u64,
    /// Change events nothing could see (ignored, hidden, not compiled, the graph itself).
    pub ignored_events: u64,
    /// Builds run, and how they ended.
    pub builds: u64,
    pub published: u64,
    pub unchanged: u64,
    pub failed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_build: Option<LastBuild>,
}

impl WatchStatus {
    /// The status a watcher last wrote into `graph_dir`, `state` reading `stopped` when
    /// its process is gone (killed, or ended without saying so).
    pub fn read(graph_dir: &Path) -> Option<WatchStatus> {
        let text = std::fs::read_to_string(graph_dir.join(STATUS_FILE)).ok()?;
        let mut status: WatchStatus = serde_json::from_str(&text).ok()?;
        if status.state != "stopped" && !process_alive(status.pid) {
            status.state = "stopped".into();
        }
        Some(status)
    }
}

impl WatchStatus {
    /// Whether this process's own watcher keeps the generation fresh now: running, with a
    /// backend, its first build done and its last build not failed. Reads that trust a watcher check this
    /// first, and scan the tree themselves otherwise.
    pub fn keeps_fresh(&self) -> bool {
        // Not before its first build is done: until then the generation may be far behind.
        self.pid == std::process::id()
            && self.state != "stopped"
            && self.backend != "none"
            && self
                .last_build
                .as_ref()
                .is_some_and(|b| b.outcome != "failed")
    }
}

fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // Signal 0 checks existence; EPERM means it exists under another user.
    // SAFETY: kill with signal 0 sends nothing.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// A running watcher. Dropping it (or `stop`) ends the thread after the build in progress.
pub struct Watch {
    status: Arc<Mutex<WatchStatus>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts watching `options.build.code_root`. Fails when another process watches the
    /// same graph (`atlas-watch-running`) or the root is not a directory.
    pub fn start(options: WatchOptions) -> Result<Watch> {
        let root = options.build.code_root.clone();
        if !root.is_dir() {
            return Err(AtlasError::CodeDirMissing(root));
        }
        let graph_dir = options.build.graph_dir.clone();
        std::fs::create_dir_all(&graph_dir).at(&graph_dir)?;
        let lock = hold_lock(&graph_dir)?;
        let (sender, events) = channel();
        let directories = inventory::directories(&root);
        let (backend, poll_reason) = Backend::start(&options, sender, &directories);
        if let BackendKind::None = backend.kind {
            return Err(AtlasError::io(
                &root,
                std::io::Error::other(poll_reason.unwrap_or_default()),
            ));
        }
        let status = WatchStatus {
            pid: std::process::id(),
            backend: backend.name().into(),
            poll_reason,
            state: "idle".into(),
            debounce_ms: options.debounce.as_millis() as u64,
            watched_directories: directories.len(),
            unwatched_directories: 0,
            events: 0,
            ignored_events: 0,
            builds: 0,
            published: 0,
            unchanged: 0,
            failed: 0,
            last_build: None,
        };
        let status = Arc::new(Mutex::new(status));
        let stop = Arc::new(AtomicBool::new(false));
        let mut looped = Loop {
            options,
            root,
            graph_dir,
            backend,
            events,
            status: status.clone(),
            stop: stop.clone(),
            ignores: RootIgnores::default(),
            memo: Arc::default(),
            lock,
        };
        looped.ignores = RootIgnores::load(&looped.root);
        looped.publish_status();
        let thread = std::thread::Builder::new()
            .name("atlas-watch".into())
            .spawn(move || looped.run())
            .map_err(|e| AtlasError::io("<watch thread>", e))?;
        Ok(Watch {
            status,
            stop,
            thread: Some(thread),
        })
    }

    pub fn status(&self) -> WatchStatus {
        self.status
            .lock()
            .map(|s| s.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Stops after the build in progress, if any.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.halt();
    }
}

fn hold_lock(graph_dir: &Path) -> Result<std::fs::File> {
    super::store::try_hold(&graph_dir.join(LOCK_FILE))?
        .ok_or_else(|| AtlasError::WatchRunning(graph_dir.to_path_buf()))
}

type Events = Receiver<notify::Result<notify::Event>>;

/// The file-system watcher in use; kept alive for as long as the loop runs.
struct Backend {
    kind: BackendKind,
    /// The directories under watch.
    watched: std::collections::HashSet<PathBuf>,
}

enum BackendKind {
    Inotify(notify::RecommendedWatcher),
    Poll(notify::PollWatcher),
    /// Neither could start: the watcher reports it and never builds.
    None,
}

impl Backend {
    fn start(
        options: &WatchOptions,
        sender: std::sync::mpsc::Sender<notify::Result<notify::Event>>,
        directories: &[PathBuf],
    ) -> (Backend, Option<String>) {
        let (kind, reason) = Self::start_kind(options, sender, directories);
        let watched = match kind {
            BackendKind::None => Default::default(),
            _ => directories.iter().cloned().collect(),
        };
        (Backend { kind, watched }, reason)
    }

    fn start_kind(
        options: &WatchOptions,
        sender: std::sync::mpsc::Sender<notify::Result<notify::Event>>,
        directories: &[PathBuf],
    ) -> (BackendKind, Option<String>) {
        let reason = if options.force_poll {
            "asked (ATLAS_WATCH_POLL=1)".to_string()
        } else {
            match notify::RecommendedWatcher::new(sender.clone(), notify::Config::default()) {
                Ok(mut watcher) => match watch_all(&mut watcher, directories) {
                    Ok(()) => return (BackendKind::Inotify(watcher), None),
                    Err(e) => format!("inotify watches exhausted or refused: {e}"),
                },
                Err(e) => format!("inotify unavailable: {e}"),
            }
        };
        let config = notify::Config::default().with_poll_interval(options.poll_interval);
        match notify::PollWatcher::new(sender, config) {
            Ok(mut watcher) => match watch_all(&mut watcher, directories) {
                Ok(()) => (BackendKind::Poll(watcher), Some(reason)),
                Err(e) => (
                    BackendKind::None,
                    Some(format!("{reason}; polling failed: {e}")),
                ),
            },
            Err(e) => (
                BackendKind::None,
                Some(format!("{reason}; polling failed: {e}")),
            ),
        }
    }

    fn name(&self) -> &'static str {
        match self.kind {
            BackendKind::Inotify(_) => "inotify",
            BackendKind::Poll(_) => "poll",
            BackendKind::None => "none",
        }
    }

    /// Watches a directory that appeared (and what the inventory would enter below it);
    /// false when the backend refused (inotify's watches exhausted).
    fn add(&mut self, directory: &Path) -> bool {
        // The walk comes before the watches: a subdirectory made in between (`mkdir -p
        // a/b` while `a` is being added) would have neither a watch nor an event. So
        // the tree is walked again after each round of watches, until a walk finds
        // nothing new.
        let mut directories = inventory::directories(directory);
        for _ in 0..ADD_ROUNDS {
            let watched = match &mut self.kind {
                BackendKind::Inotify(w) => watch_all(w, &directories),
                BackendKind::Poll(w) => watch_all(w, &directories),
                BackendKind::None => return false,
            };
            if watched.is_err() {
                return false;
            }
            self.watched.extend(directories);
            directories = inventory::directories(directory)
                .into_iter()
                .filter(|d| !self.watched.contains(d))
                .collect();
            if directories.is_empty() {
                break;
            }
        }
        true
    }

    /// Whether `path` was a watched directory; it and everything below it no longer are
    /// (notify drops the watches of a moved directory's subdirectories with it).
    fn forget(&mut self, path: &Path) -> bool {
        let was = self.watched.contains(path);
        if was {
            self.watched.retain(|p| !p.starts_with(path));
        }
        was
    }

    fn watches(&self, path: &Path) -> bool {
        self.watched.contains(path)
    }
}

fn watch_all(watcher: &mut impl notify::Watcher, directories: &[PathBuf]) -> notify::Result<()> {
    for directory in directories {
        match watcher.watch(directory, RecursiveMode::NonRecursive) {
            Ok(()) => {}
            // Gone since the walk: nothing to watch.
            Err(notify::Error {
                kind: notify::ErrorKind::PathNotFound,
                ..
            }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The root's ignore files (`.gitignore`, `.ignore`, `.git/info/exclude`): most ignored
/// paths are caught here, before a build. Deeper ignore files are honoured by the build's
/// own inventory, which then finds nothing changed.
#[derive(Default)]
struct RootIgnores {
    matcher: Option<ignore::gitignore::Gitignore>,
}

impl RootIgnores {
    fn load(root: &Path) -> RootIgnores {
        let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
        for name in [".gitignore", ".ignore", ".git/info/exclude"] {
            let path = root.join(name);
            if path.is_file() {
                let _ = builder.add(path);
            }
        }
        RootIgnores {
            matcher: builder.build().ok(),
        }
    }

    fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        self.matcher
            .as_ref()
            .is_some_and(|m| m.matched_path_or_any_parents(path, is_dir).is_ignore())
    }
}

struct Loop {
    options: WatchOptions,
    root: PathBuf,
    graph_dir: PathBuf,
    backend: Backend,
    events: Events,
    status: Arc<Mutex<WatchStatus>>,
    stop: Arc<AtomicBool>,
    ignores: RootIgnores,
    /// The facts of the last in-process build, for the next one.
    memo: Arc<super::FactMemo>,
    /// The watch lock of `graph_dir`, held for as long as the loop runs (`check_lock`).
    lock: std::fs::File,
}

/// How long after a failed build the watcher tries again (at least the debounce), doubling
/// while builds keep failing, up to `MAX_RETRY`.
const RETRY: Duration = Duration::from_secs(5);
const MAX_RETRY: Duration = Duration::from_secs(300);
/// How often the loop looks at the stop flag while nothing happens.
const TICK: Duration = Duration::from_millis(50);
/// How often the loop checks that its lock is still the one in the graph directory.
const LOCK_CHECK: Duration = Duration::from_secs(1);

/// What `Loop::check_lock` found.
#[derive(Debug, PartialEq)]
enum LockCheck {
    Held,
    /// The graph directory (or its lock) was deleted and the lock is held again.
    Retaken,
    /// Another watcher holds the graph directory's lock now: this one stops.
    Superseded,
}

/// Whether `held` is the file at `path` (not one deleted, or replaced, since).
fn still_holds(held: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (held.metadata(), std::fs::metadata(path)) {
        (Ok(held), Ok(there)) => held.dev() == there.dev() && held.ino() == there.ino(),
        _ => false,
    }
}

impl Loop {
    fn run(mut self) {
        // Bring the graph up to date first: the tree may have moved on while no one watched.
        // A build that keeps failing is retried less and less often; a success resets it.
        let first_backoff = self.options.debounce.max(RETRY);
        let mut backoff = first_backoff;
        let mut next_retry = |ok: bool| -> Option<Instant> {
            if ok {
                backoff = first_backoff;
                return None;
            }
            let at = Instant::now() + backoff;
            backoff = (backoff * 2).min(MAX_RETRY);
            Some(at)
        };
        let mut retry = next_retry(self.build(Instant::now(), 0));
        let mut pending: Option<(Instant, Instant, u64)> = None; // (first, last, events)
        let mut lock_checked = Instant::now();
        while !self.stop.load(Ordering::SeqCst) {
            if lock_checked.elapsed() >= LOCK_CHECK {
                lock_checked = Instant::now();
                match self.check_lock() {
                    LockCheck::Held => {}
                    // The graph was deleted with its directory: build it again now.
                    LockCheck::Retaken => retry = Some(Instant::now()),
                    LockCheck::Superseded => {
                        // The directory is the other watcher's now: nothing more is written
                        // there, and the process's own status says why this one stopped.
                        let mut status = self.status.lock().unwrap_or_else(|p| p.into_inner());
                        status.state = "superseded".into();
                        return;
                    }
                }
            }
            let wait = match pending {
                Some((first, last, _)) => {
                    let quiet = last + self.options.debounce;
                    let latest = first + self.options.debounce * MAX_DELAY_FACTOR;
                    quiet
                        .min(latest)
                        .saturating_duration_since(Instant::now())
                        .min(TICK)
                }
                None => TICK,
            };
            match self.events.recv_timeout(wait) {
                Ok(event) => {
                    if self.relevant(event) {
                        let now = Instant::now();
                        pending = Some(match pending {
                            Some((first, _, n)) => (first, now, n + 1),
                            None => {
                                self.set_state("pending");
                                (now, now, 1)
                            }
                        });
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if let Some((first, last, events)) = pending {
                let now = Instant::now();
                let due = now >= last + self.options.debounce
                    || now >= first + self.options.debounce * MAX_DELAY_FACTOR;
                if due {
                    pending = None;
                    retry = next_retry(self.build(first, events));
                }
            } else if retry.is_some_and(|at| Instant::now() >= at) {
                // A failed build (a lock held too long, a full disk) is tried again: the
                // changes it covered are still unbuilt.
                retry = next_retry(self.build(Instant::now(), 0));
            }
        }
        self.set_state("stopped");
    }

    /// Whether an event can change what a build sees; counted either way.
    fn relevant(&mut self, event: notify::Result<notify::Event>) -> bool {
        let event = match event {
            Ok(event) => event,
            // The watcher lost events (queue overflow): rebuild to be safe.
            Err(_) => return self.count(true),
        };
        // The kernel's queue overflowed (notify reports it as a rescan): events were lost,
        // and directories may have appeared unseen. Watch everything again and build.
        if event.need_rescan() {
            let root = self.root.clone();
            // What is watched is whatever the walk finds now, not what was known before.
            self.backend.watched.clear();
            self.watch_directory(&root);
            return self.count(true);
        }
        // Reads (a build reading the sources) are not changes, nor worth counting.
        if matches!(event.kind, EventKind::Access(_)) {
            return false;
        }
        let mut relevant = false;
        for path in &event.paths {
            if path.starts_with(&self.graph_dir) {
                continue;
            }
            let Ok(relative) = path.strip_prefix(&self.root) else {
                continue;
            };
            let relative = relative.to_string_lossy().replace('\\', "/");
            // A directory that appeared — created, or moved in (a rename reports no
            // `Create`): watched from now on, and what it holds is a change.
            if path.is_dir() {
                let appeared = matches!(
                    event.kind,
                    EventKind::Create(_) | EventKind::Modify(notify::event::ModifyKind::Name(_))
                ) || !self.backend.watches(path);
                if appeared && !self.ignores.ignores(path, true) && visible_dir(&relative) {
                    // Watching again what is watched is harmless (notify adds to the mask).
                    self.watch_directory(path);
                    relevant = true;
                }
                continue;
            }
            if inventory::may_change_inventory(&relative) {
                if relative.ends_with(".gitignore") || relative.ends_with(".ignore") {
                    self.ignores = RootIgnores::load(&self.root);
                    relevant = true;
                } else if !self.ignores.ignores(path, false) {
                    relevant = true;
                }
            } else if self.backend.forget(path) {
                // A watched directory moved or removed as a whole (its files may get no
                // events of their own): only a build can tell what left.
                relevant = true;
            }
        }
        self.count(relevant)
    }

    /// Watches `directory` and below; a refusal is counted in status, never silent.
    fn watch_directory(&mut self, directory: &Path) {
        let ok = self.backend.add(directory);
        let watched = self.backend.watched.len();
        self.update(|s| {
            s.watched_directories = watched;
            if !ok {
                s.unwatched_directories += 1;
            }
        });
    }

    fn count(&mut self, relevant: bool) -> bool {
        self.update(|s| {
            if relevant {
                s.events += 1;
            } else {
                s.ignored_events += 1;
            }
        });
        relevant
    }

    /// Runs one build and records it; false when it failed.
    fn build(&mut self, first_change: Instant, events: u64) -> bool {
        self.set_state("building");
        let started = Instant::now();
        let result: BuildResult = match &self.options.runner {
            Runner::InProcess => {
                let mut options = self.options.build.clone();
                // This process builds again and again: it keeps the last build's facts.
                options.memo = Some(self.memo.clone());
                // A user's `atlas build` may hold the lock: wait for it, then build what
                // is left.
                options.lock_wait = LockWait::Within(Duration::from_secs(60));
                options.progress = None;
                pipeline::build(&options)
                    .map(|report| (report.unchanged, report.fingerprint, report.from_memory))
                    .map_err(|e| e.code().to_string())
            }
            Runner::Command(argv) => run_command(argv),
        };
        let finished = Instant::now();
        let last = match result {
            Ok((unchanged, fingerprint, facts_from_memory)) => LastBuild {
                outcome: if unchanged { "unchanged" } else { "published" }.into(),
                code: None,
                fingerprint: Some(fingerprint),
                latency_ms: millis(finished - started),
                since_first_change_ms: millis(finished - first_change),
                events,
                finished_unix_ms: unix_ms(),
                facts_from_memory,
            },
            Err(code) => LastBuild {
                outcome: "failed".into(),
                code: Some(code),
                fingerprint: None,
                latency_ms: millis(finished - started),
                since_first_change_ms: millis(finished - first_change),
                events,
                finished_unix_ms: unix_ms(),
                facts_from_memory: 0,
            },
        };
        let ok = last.outcome != "failed";
        self.update(|s| {
            s.builds += 1;
            match last.outcome.as_str() {
                "published" => s.published += 1,
                "unchanged" => s.unchanged += 1,
                _ => s.failed += 1,
            }
            s.last_build = Some(last);
            s.state = "idle".into();
        });
        ok
    }

    /// Keeps this watcher the only one of its graph directory. Deleting the directory
    /// deletes the lock file this loop holds, and a second watcher could then start beside
    /// it: the lock is taken again where it belongs, unless another watcher already has it.
    fn check_lock(&mut self) -> LockCheck {
        let path = self.graph_dir.join(LOCK_FILE);
        if still_holds(&self.lock, &path) {
            return LockCheck::Held;
        }
        // The repository moved or was deleted (with a graph inside it): making the graph
        // directory again would make a directory at its old path, and the next build would
        // publish an empty graph there. Nothing is made while the code root is gone.
        if !self.root.is_dir() {
            return LockCheck::Held;
        }
        // A directory that cannot be made again (a read-only mount) is tried next time.
        if std::fs::create_dir_all(&self.graph_dir).is_err() {
            return LockCheck::Held;
        }
        match hold_lock(&self.graph_dir) {
            Ok(lock) => {
                self.lock = lock;
                self.publish_status();
                LockCheck::Retaken
            }
            Err(AtlasError::WatchRunning(_)) => LockCheck::Superseded,
            Err(_) => LockCheck::Held,
        }
    }

    fn set_state(&mut self, state: &str) {
        self.update(|s| s.state = state.into());
    }

    fn update(&mut self, change: impl FnOnce(&mut WatchStatus)) {
        {
            let mut status = self.status.lock().unwrap_or_else(|p| p.into_inner());
            change(&mut status);
        }
        self.publish_status();
    }

    /// Writes the status for other processes; best effort (a full disk must not stop
    /// the watcher).
    fn publish_status(&self) {
        let status = self
            .status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Ok(text) = serde_json::to_string_pretty(&status) else {
            return;
        };
        let tmp = self
            .graph_dir
            .join(format!("{STATUS_FILE}.{}.tmp", std::process::id()));
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, self.graph_dir.join(STATUS_FILE));
        }
    }
}

/// Whether a directory path is one an inventory could enter.
fn visible_dir(relative: &str) -> bool {
    !relative.is_empty()
        && relative
            .split('/')
            .all(|part| !part.starts_with('.') && inventory::may_enter(part))
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

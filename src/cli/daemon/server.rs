//! The daemon process (R-D-1): a Unix socket, bounded admission and a fixed pool of query
//! workers over a warm graph, search index and model.
//!
//! Admission is bounded three ways: a queue of fixed length (a full queue answers `busy`
//! at once), a queue timeout (a request that waited too long is answered `timeout` without
//! running) and a per-request deadline (`timeout` when the answer is late; the worker's
//! late result is dropped). A memory budget per worker bounds the process: above it,
//! requests are refused `busy` and answers are `degraded`. A worker that panics answers
//! `failed` and is replaced; a second panic within `CIRCUIT_WINDOW` opens the circuit for
//! `CIRCUIT_COOL_DOWN`, during which requests are `unavailable` (agent-spec's behaviour),
//! so a client with `--fallback-direct` runs them itself.

use crate::build::pipeline::millis;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use serde::Serialize;

use crate::build::session::Freshness;
use crate::build::store::Location;
use crate::build::watch::{Watch, WatchStatus};
use crate::config::Config;
use crate::error::{AtlasError, IoContext, Result};
use crate::query::context::{self, ContextRequest};
use crate::query::profile::ProfileName;

use super::protocol::{
    ContextCall, LOCK_FILE, MAX_REQUEST_BYTES, OLDEST_PROTOCOL_VERSION, Outcome, PROTOCOL_VERSION,
    Reply, Request, socket_path,
};

/// Two panics this close together open the circuit.
const CIRCUIT_WINDOW: Duration = Duration::from_secs(60);
/// How long an open circuit refuses requests.
const CIRCUIT_COOL_DOWN: Duration = Duration::from_secs(30);
/// How long a connection may take to send its request line.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a waiting connection checks whether its client is still there.
const CLIENT_CHECK: Duration = Duration::from_millis(10);
/// Connections handled at once beyond the queue and the workers (status requests, requests
/// on their way to admission); more are answered `busy` by the accepting thread itself, so
/// a flood of idle connections cannot grow the daemon's threads without bound.
const CONNECTION_SLACK: usize = 64;
/// How long a stopping daemon waits beyond the deadline for answers to be sent.
const DRAIN_MARGIN: Duration = Duration::from_secs(2);
/// How long a reply may take to be written to a client that does not read it.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How the pool is sized and bounded.
#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    pub workers: usize,
    pub queue: usize,
    pub queue_timeout_ms: u64,
    pub deadline_ms: u64,
    pub worker_memory_mib: u64,
}

/// What `atlas daemon status` reports.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct DaemonStatus {
    pub running: bool,
    pub pid: u32,
    pub protocol: u32,
    pub socket: PathBuf,
    pub code_root: PathBuf,
    pub uptime_ms: u64,
    pub limits: serde_json::Value,
    /// Workers alive now, and how many replaced a panicked one.
    pub workers_alive: usize,
    pub workers_replaced: u64,
    /// Requests waiting for a worker now.
    pub queued: usize,
    pub circuit_open: bool,
    /// Requests by outcome since start.
    pub outcomes: std::collections::BTreeMap<String, u64>,
    /// The committed generation the last answer read.
    pub fingerprint: Option<String>,
    pub rss_mib: f64,
    pub memory_ceiling_mib: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchStatus>,
}

/// One admitted request, on its way to a worker.
struct Job {
    call: ContextCall,
    admitted: Instant,
    /// Set when the client went away or the answer is no longer awaited.
    abandoned: Arc<AtomicBool>,
    /// Set by the worker that takes the job (the queue timeout no longer applies).
    started: Arc<AtomicBool>,
    reply: Sender<Reply>,
}

/// State shared by the connections, the workers and the supervisor.
struct Shared {
    location: Location,
    config: Config,
    limits: Limits,
    started: Instant,
    stopping: AtomicBool,
    /// Connections being handled now.
    connections: AtomicUsize,
    queue: SyncSender<Job>,
    queued: AtomicUsize,
    jobs: Mutex<Receiver<Job>>,
    outcomes: Mutex<HashMap<Outcome, u64>>,
    workers_alive: AtomicUsize,
    workers_replaced: AtomicU64,
    panics: Mutex<Vec<Instant>>,
    circuit_until: Mutex<Option<Instant>>,
    memory_ceiling: u64,
    watch: Option<Watch>,
    fingerprint: Mutex<Option<String>>,
    /// The listening socket, duplicated: shut down to wake the accept loop (`stop`).
    listening: Option<UnixListener>,
}

impl Shared {
    /// No new requests: the flag, then the accept loop woken to see it. Connecting to the
    /// socket's path wakes it; shutting the listening socket down wakes it too when that
    /// path is gone (the graph directory was moved or deleted under the daemon).
    fn stop(&self, socket: &Path) {
        self.stopping.store(true, Ordering::SeqCst);
        if UnixStream::connect(socket).is_ok() {
            return;
        }
        if let Some(listening) = &self.listening {
            use std::os::fd::AsRawFd;
            // SAFETY: the descriptor is this struct's own duplicate, open while it lives.
            unsafe { libc::shutdown(listening.as_raw_fd(), libc::SHUT_RD) };
        }
    }

    fn count(&self, outcome: Outcome) {
        *self
            .outcomes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(outcome)
            .or_default() += 1;
    }

    fn circuit_open(&self) -> bool {
        let mut until = self.circuit_until.lock().unwrap_or_else(|p| p.into_inner());
        match *until {
            Some(t) if Instant::now() < t => true,
            Some(_) => {
                *until = None;
                false
            }
            None => false,
        }
    }

    fn status(&self, socket: &Path) -> DaemonStatus {
        let outcomes = self.outcomes.lock().unwrap_or_else(|p| p.into_inner());
        DaemonStatus {
            running: true,
            pid: std::process::id(),
            protocol: PROTOCOL_VERSION,
            socket: socket.to_path_buf(),
            code_root: self.location.code_root.clone(),
            uptime_ms: self.started.elapsed().as_millis() as u64,
            limits: serde_json::to_value(&self.limits).unwrap_or_default(),
            workers_alive: self.workers_alive.load(Ordering::SeqCst),
            workers_replaced: self.workers_replaced.load(Ordering::SeqCst),
            queued: self.queued.load(Ordering::SeqCst),
            circuit_open: self.circuit_open(),
            outcomes: Outcome::ALL
                .iter()
                .map(|o| {
                    (
                        o.as_str().to_string(),
                        outcomes.get(o).copied().unwrap_or(0),
                    )
                })
                .collect(),
            fingerprint: self
                .fingerprint
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            rss_mib: mib(rss_bytes()),
            memory_ceiling_mib: mib(self.memory_ceiling),
            watch: self.watch.as_ref().map(Watch::status),
        }
    }
}

fn mib(bytes: u64) -> f64 {
    (bytes as f64 / (1024.0 * 1024.0) * 10.0).round() / 10.0
}

/// A connection being handled: counted while it lives.
struct Slot {
    shared: Arc<Shared>,
    /// Connections being handled, this one included, when it was taken.
    taken: usize,
}

impl Slot {
    fn take(shared: &Arc<Shared>) -> Slot {
        let taken = shared.connections.fetch_add(1, Ordering::SeqCst) + 1;
        Slot {
            shared: shared.clone(),
            taken,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.shared.connections.fetch_sub(1, Ordering::SeqCst);
    }
}

/// SIGTERM (and SIGINT) stop the daemon as `daemon stop` does: no new requests, running
/// ones finish. The handler only sets a flag; a thread turns it into `stopping` and wakes
/// the accept loop by connecting to the socket.
fn on_terminate(shared: &Arc<Shared>, socket: &Path) -> Result<()> {
    static TERMINATED: AtomicBool = AtomicBool::new(false);
    extern "C" fn handler(_: libc::c_int) {
        TERMINATED.store(true, Ordering::SeqCst);
    }
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, handler as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, handler as *const () as libc::sighandler_t);
    }
    let shared = shared.clone();
    let socket = socket.to_path_buf();
    std::thread::Builder::new()
        .name("atlas-signals".into())
        .spawn(move || {
            while !TERMINATED.load(Ordering::SeqCst) {
                if shared.stopping.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            shared.stop(&socket);
        })
        .map(|_| ())
        .map_err(|e| AtlasError::io("<signal thread>", e))
}

/// Anonymous resident memory of this process (`RssAnon` in `/proc/self/status`; 0 where
/// unavailable). Mapped graph and index pages are file-backed and reclaimable: they do not
/// count against the workers' budget.
pub fn rss_bytes() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    text.lines()
        .find_map(|line| line.strip_prefix("RssAnon:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .map_or(0, |kib| kib.saturating_mul(1024))
}

/// Serves until a `shutdown` request, then lets the requests it admitted finish. A
/// watcher, when `start_watch` makes one, starts once the socket is bound (the narrowed
/// umask of `bind` must not apply to anything else); reads then trust it.
pub fn serve(
    location: Location,
    mut config: Config,
    limits: Limits,
    start_watch: impl FnOnce() -> Option<Watch>,
) -> Result<()> {
    let graph_dir = location.graph_dir.clone();
    std::fs::create_dir_all(&graph_dir).at(&graph_dir)?;
    let lock = hold_lock(&graph_dir)?;
    let socket = socket_path(&graph_dir);
    if !super::protocol::private_dir(&socket, true) {
        return Err(AtlasError::InvalidInput {
            what: "daemon socket",
            reason: format!(
                "{} is not a private directory of this user (the graph directory's path is too long for a socket in it)",
                socket.parent().unwrap_or(Path::new("/")).display()
            ),
        });
    }
    // We hold the lock, so a socket file left here belongs to a daemon that died.
    if socket.exists() {
        std::fs::remove_file(&socket).at(&socket)?;
    }
    let listener = bind_private(&socket)?;
    let watch = start_watch();
    // A watcher keeps the generation fresh: reads skip their own scan while it is healthy.
    config.watch.fresh_by_watcher = watch.is_some();
    // Without one, a read re-checks a tree found clean by `stat` alone.
    config.watch.fresh_by_recheck = true;

    // Warm state: graph mappings validated once per generation, loaded indexes and verified
    // sources kept; the model loaded now. Kept sources count against the workers' memory
    // budget: they take at most a quarter of it.
    let budget_bytes = (limits.workers as u64)
        .saturating_mul(limits.worker_memory_mib)
        .saturating_mul(1024 * 1024);
    crate::query::keep_warm(
        usize::try_from(budget_bytes / 4)
            .unwrap_or(usize::MAX)
            .min(crate::query::context::project::KEPT_BYTES),
    );
    if config.search.wants_vectors() {
        crate::query::search::embed::warm_up(&config.embed);
    }
    // The committed graph, validated and kept now, its parts' string filters built, and its
    // search index loaded with what a first query builds: the first request does none of it.
    crate::query::warm_start(&location, &config);
    let baseline = rss_bytes();
    // A budget of 0 is spent from the start: with the baseline as its ceiling, a request
    // that reused freed heap answered `success`.
    let memory_ceiling = match limits.worker_memory_mib {
        0 => 0,
        mib => (limits.workers as u64)
            .saturating_mul(mib)
            .saturating_mul(1024 * 1024)
            .saturating_add(baseline),
    };

    let (queue, jobs) = std::sync::mpsc::sync_channel(limits.queue);
    let shared = Arc::new(Shared {
        location,
        config,
        limits,
        started: Instant::now(),
        stopping: AtomicBool::new(false),
        connections: AtomicUsize::new(0),
        queue,
        queued: AtomicUsize::new(0),
        jobs: Mutex::new(jobs),
        outcomes: Mutex::new(HashMap::new()),
        workers_alive: AtomicUsize::new(0),
        workers_replaced: AtomicU64::new(0),
        panics: Mutex::new(Vec::new()),
        circuit_until: Mutex::new(None),
        memory_ceiling,
        watch,
        fingerprint: Mutex::new(None),
        listening: listener.try_clone().ok(),
    });
    let (died, deaths) = std::sync::mpsc::channel::<usize>();
    for index in 0..shared.limits.workers {
        spawn_worker(&shared, index, died.clone())?;
    }
    {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("atlas-supervisor".into())
            .spawn(move || supervise(shared, deaths, died))
            .map_err(|e| AtlasError::io("<supervisor thread>", e))?;
    }
    keep_while_the_directory_is(&shared, &lock, &socket)?;
    eprintln!(
        "atlas daemon: pid {} serving {} with {} workers on {}",
        std::process::id(),
        shared.location.code_root.display(),
        shared.limits.workers,
        socket.display()
    );
    on_terminate(&shared, &socket)?;
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let limit = shared.limits.queue + shared.limits.workers + CONNECTION_SLACK;
        let slot = Slot::take(&shared);
        if slot.taken > limit {
            drop(slot);
            shared.count(Outcome::Busy);
            send(
                &stream,
                &Reply::refused(
                    Outcome::Busy,
                    format!("{limit} connections are being handled already"),
                ),
            );
            continue;
        }
        let shared = shared.clone();
        let socket = socket.clone();
        // The slot is given back when the thread ends, however it ends (or if it never
        // starts).
        let _ = std::thread::Builder::new()
            .name("atlas-connection".into())
            .spawn(move || {
                let _slot = slot;
                connection(&shared, stream, &socket);
            });
    }
    // Stopping: no new connections (clients still waiting to connect are refused at
    // once). Queued requests are answered `cancelled` by the workers (the `stopping` flag);
    // running ones finish, within their deadline.
    drop(listener);
    let _ = std::fs::remove_file(&socket);
    let drain = Instant::now() + Duration::from_millis(shared.limits.deadline_ms) + DRAIN_MARGIN;
    while shared.connections.load(Ordering::SeqCst) > 0 && Instant::now() < drain {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(lock);
    Ok(())
}

/// How often the daemon checks that its graph directory is still there.
const KEEPER_PERIOD: Duration = Duration::from_secs(1);

/// Stops the daemon once its graph directory is deleted (the lock file it holds unlinked):
/// nothing could reach it then, `daemon stop` finds no socket, and a new daemon could
/// start beside it for the rebuilt directory. A directory moved whole keeps the lock's
/// link and the socket beside it, so the daemon stays reachable and waits to be stopped.
fn keep_while_the_directory_is(
    shared: &Arc<Shared>,
    lock: &std::fs::File,
    socket: &Path,
) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let held = lock.try_clone().at(socket)?;
    let (shared, socket) = (shared.clone(), socket.to_path_buf());
    std::thread::Builder::new()
        .name("atlas-keeper".into())
        .spawn(move || {
            while !shared.stopping.load(Ordering::SeqCst) {
                std::thread::sleep(KEEPER_PERIOD);
                if held.metadata().is_ok_and(|m| m.nlink() == 0) {
                    eprintln!(
                        "atlas daemon: the graph directory {} was deleted; stopping",
                        shared.location.graph_dir.display()
                    );
                    shared.stop(&socket);
                    return;
                }
            }
        })
        .map_err(|e| AtlasError::io("<keeper thread>", e))?;
    Ok(())
}

fn hold_lock(graph_dir: &Path) -> Result<std::fs::File> {
    let path = graph_dir.join(LOCK_FILE);
    let Some(mut file) = crate::build::store::try_hold(&path)? else {
        let pid = std::fs::read_to_string(&path).unwrap_or_default();
        return Err(AtlasError::InvalidInput {
            what: "daemon",
            reason: format!(
                "a daemon (pid {}) already serves {}; `atlas daemon stop` first",
                pid.trim(),
                graph_dir.display()
            ),
        });
    };
    file.set_len(0).at(&path)?;
    file.write_all(std::process::id().to_string().as_bytes())
        .at(&path)?;
    Ok(file)
}

/// Binds `socket` readable and writable by its owner only (0600) from the start: the
/// umask is narrowed around `bind`, so there is no window with wider permissions.
fn bind_private(socket: &Path) -> Result<UnixListener> {
    // SAFETY: umask only swaps the process mask; nothing else runs yet.
    let previous = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(socket);
    // SAFETY: as above.
    unsafe { libc::umask(previous) };
    let listener = bound.at(socket)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600)).at(socket)?;
    Ok(listener)
}

fn spawn_worker(shared: &Arc<Shared>, index: usize, died: Sender<usize>) -> Result<()> {
    shared.workers_alive.fetch_add(1, Ordering::SeqCst);
    let own = shared.clone();
    std::thread::Builder::new()
        .name(format!("atlas-worker-{index}"))
        .spawn(move || worker(own, index, died))
        .map(|_| ())
        .map_err(|e| {
            shared.workers_alive.fetch_sub(1, Ordering::SeqCst);
            AtlasError::io("<worker thread>", e)
        })
}

/// Replaces dead workers, and opens the circuit on a second panic within the window.
fn supervise(shared: Arc<Shared>, deaths: Receiver<usize>, died: Sender<usize>) {
    while let Ok(index) = deaths.recv() {
        let now = Instant::now();
        {
            let mut panics = shared.panics.lock().unwrap_or_else(|p| p.into_inner());
            panics.retain(|t| now.duration_since(*t) < CIRCUIT_WINDOW);
            panics.push(now);
            if panics.len() >= 2 {
                *shared
                    .circuit_until
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(now + CIRCUIT_COOL_DOWN);
            }
        }
        if shared.stopping.load(Ordering::SeqCst) {
            continue;
        }
        shared.workers_replaced.fetch_add(1, Ordering::SeqCst);
        let _ = spawn_worker(&shared, index, died.clone());
    }
}

fn worker(shared: Arc<Shared>, index: usize, died: Sender<usize>) {
    loop {
        let job = {
            let jobs = shared.jobs.lock().unwrap_or_else(|p| p.into_inner());
            match jobs.recv_timeout(Duration::from_millis(200)) {
                Ok(job) => job,
                Err(RecvTimeoutError::Timeout) => {
                    if shared.stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        };
        shared.queued.fetch_sub(1, Ordering::SeqCst);
        let queue_ms = millis(job.admitted.elapsed());
        if job.abandoned.load(Ordering::SeqCst) {
            continue;
        }
        job.started.store(true, Ordering::SeqCst);
        if shared.stopping.load(Ordering::SeqCst) {
            let _ = job
                .reply
                .send(Reply::refused(Outcome::Cancelled, "the daemon is stopping"));
            continue;
        }
        if job.admitted.elapsed() > Duration::from_millis(shared.limits.queue_timeout_ms) {
            let mut reply = Reply::refused(
                Outcome::Timeout,
                format!(
                    "waited {queue_ms:.0} ms in the queue (queue timeout {} ms)",
                    shared.limits.queue_timeout_ms
                ),
            );
            reply.queue_ms = queue_ms;
            let _ = job.reply.send(reply);
            continue;
        }
        let started = Instant::now();
        let answered = std::panic::catch_unwind(AssertUnwindSafe(|| answer(&shared, &job.call)));
        let run_ms = millis(started.elapsed());
        match answered {
            Ok((mut reply, fingerprint)) => {
                if fingerprint.is_some() {
                    *shared.fingerprint.lock().unwrap_or_else(|p| p.into_inner()) = fingerprint;
                }
                if reply.outcome == Outcome::Success && rss_bytes() > shared.memory_ceiling {
                    reply.outcome = Outcome::Degraded;
                    reply.reason = Some(format!(
                        "the daemon is above its memory budget ({} MiB per worker)",
                        shared.limits.worker_memory_mib
                    ));
                    trim_heap();
                }
                reply.worker = Some(index);
                reply.queue_ms = queue_ms;
                reply.run_ms = run_ms;
                let _ = job.reply.send(reply);
            }
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".into());
                let mut reply = Reply::refused(
                    Outcome::Failed,
                    format!("worker {index} panicked ({message}); it was replaced"),
                );
                reply.worker = Some(index);
                reply.queue_ms = queue_ms;
                reply.run_ms = run_ms;
                let _ = job.reply.send(reply);
                // This thread ends; the supervisor starts a fresh one in its place.
                shared.workers_alive.fetch_sub(1, Ordering::SeqCst);
                let _ = died.send(index);
                return;
            }
        }
    }
    shared.workers_alive.fetch_sub(1, Ordering::SeqCst);
}

/// Gives freed heap back to the system after a request that went over budget.
fn trim_heap() {
    // SAFETY: malloc_trim has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Runs one context request exactly as the direct command would, and what it printed.
fn answer(shared: &Shared, call: &ContextCall) -> (Reply, Option<String>) {
    if let Some(hook) = shared.config.inject_failure.as_deref() {
        if hook == "worker-panic" {
            panic!("injected worker panic (ATLAS_INJECT_FAILURE=worker-panic)");
        }
        if let Some(ms) = hook
            .strip_prefix("worker-sleep-")
            .and_then(|ms| ms.parse::<u64>().ok())
        {
            std::thread::sleep(Duration::from_millis(ms));
        }
    }
    let json = call.format == "json";
    let profile = match ProfileName::from_str(&call.profile, false) {
        Ok(profile) => profile,
        Err(reason) => {
            let err = AtlasError::InvalidInput {
                what: "--profile",
                reason,
            };
            return (printed(Err(err), json), None);
        }
    };
    let request = ContextRequest {
        query: call.query.clone(),
        profile,
        max_bytes: call.max_bytes.map(|b| b as usize),
        min_score: call.min_score,
        max_score: call.max_score,
        expect_graph: call.expect_graph.clone(),
        after: call.after.clone(),
        code_arg: call.code_arg.clone(),
        graph_arg: call.graph_arg.clone(),
        freshness: Freshness {
            frozen: call.frozen,
            no_build: call.no_build,
        },
        format: Some(if json { "json" } else { "text" }),
    };
    let result = context::run(&shared.location, &request, &shared.config);
    let fingerprint = result
        .as_ref()
        .ok()
        .map(|r| r.output.graph.fingerprint.clone());
    // A read that refreshed the graph itself (the watcher being unhealthy) is fresh.
    let refreshed = result.as_ref().is_ok_and(|r| r.output.graph.refreshed);
    let mut reply = printed(result, json);
    if reply.outcome == Outcome::Success
        && !refreshed
        && let Some(last) = shared
            .watch
            .as_ref()
            .and_then(|w| w.status().last_build)
            .filter(|b| b.outcome == "failed")
    {
        reply.outcome = Outcome::Degraded;
        reply.reason = Some(format!(
            "the last watch-triggered build failed (error[{}]); this answer reads the committed generation",
            last.code.as_deref().unwrap_or("?")
        ));
    }
    (reply, fingerprint)
}

/// What the direct command prints for `result`.
fn printed(result: Result<context::ContextResult>, json: bool) -> Reply {
    match result {
        Ok(result) => {
            let stderr = crate::cli::context::relevance_line(&result);
            let stdout = if json {
                result.json + "\n"
            } else {
                context::text::render(&result.output)
            };
            Reply::answered(stdout, stderr, 0)
        }
        Err(err) => {
            let stdout = if json {
                crate::cli::output::pretty_json(&crate::cli::output::error_body(&err))
                    .unwrap_or_default()
            } else {
                String::new()
            };
            let stderr = format!("error[{}]: {err}\n", err.code());
            Reply::answered(stdout, stderr, crate::cli::output::exit_code(&err))
        }
    }
}

fn connection(shared: &Arc<Shared>, stream: UnixStream, socket: &Path) {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let mut line = String::new();
    let read = BufReader::new((&stream).take(MAX_REQUEST_BYTES)).read_line(&mut line);
    if read.is_err() || line.is_empty() {
        return;
    }
    let request: Request = match serde_json::from_str(&line) {
        Ok(request) => request,
        Err(e) => {
            let reply = Reply::refused(Outcome::Unavailable, format!("unreadable request: {e}"));
            send(&stream, &reply);
            return;
        }
    };
    match request {
        Request::Status => send(&stream, &shared.status(socket)),
        Request::Shutdown => {
            shared.stopping.store(true, Ordering::SeqCst);
            send(&stream, &shared.status(socket));
            shared.stop(socket);
        }
        Request::Context(call) => {
            let reply = admit(shared, *call, &stream);
            shared.count(reply.outcome);
            // A client that went away has nobody to read its `cancelled`.
            if !client_gone(&stream) {
                send(&stream, &reply);
            }
        }
    }
}

/// Admission, then the wait for a worker's answer under the deadline.
fn admit(shared: &Arc<Shared>, call: ContextCall, stream: &UnixStream) -> Reply {
    if !(OLDEST_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&call.v) {
        return Reply::refused(
            Outcome::Unavailable,
            format!(
                "protocol version {} (this daemon speaks {OLDEST_PROTOCOL_VERSION} to {PROTOCOL_VERSION})",
                call.v
            ),
        );
    }
    if shared.stopping.load(Ordering::SeqCst) {
        return Reply::refused(Outcome::Unavailable, "the daemon is stopping");
    }
    if !same_root(&call.code_root, &shared.location.code_root) {
        return Reply::refused(
            Outcome::Unavailable,
            format!(
                "this daemon serves {}, not {}",
                shared.location.code_root.display(),
                call.code_root.display()
            ),
        );
    }
    if shared.circuit_open() {
        return Reply::refused(
            Outcome::Unavailable,
            "the circuit is open: workers panicked twice within a minute",
        );
    }
    if rss_bytes() > shared.memory_ceiling {
        trim_heap();
        if rss_bytes() > shared.memory_ceiling {
            return Reply::refused(
                Outcome::Busy,
                format!(
                    "the memory budget ({} MiB per worker) is spent",
                    shared.limits.worker_memory_mib
                ),
            );
        }
    }
    let deadline = Duration::from_millis(call.deadline_ms.map_or(shared.limits.deadline_ms, |d| {
        d.min(shared.limits.deadline_ms)
    }));
    let admitted = Instant::now();
    let queue_timeout = Duration::from_millis(shared.limits.queue_timeout_ms);
    let abandoned = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    let (reply, answer) = std::sync::mpsc::channel();
    shared.queued.fetch_add(1, Ordering::SeqCst);
    let job = Job {
        call,
        admitted,
        abandoned: abandoned.clone(),
        started: started.clone(),
        reply,
    };
    match shared.queue.try_send(job) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => {
            shared.queued.fetch_sub(1, Ordering::SeqCst);
            return Reply::refused(
                Outcome::Busy,
                format!("the queue holds {} requests already", shared.limits.queue),
            );
        }
        Err(TrySendError::Disconnected(_)) => {
            shared.queued.fetch_sub(1, Ordering::SeqCst);
            return Reply::refused(Outcome::Unavailable, "no worker is running");
        }
    }
    loop {
        let waited = admitted.elapsed();
        let left = deadline.saturating_sub(waited);
        let unstarted = !started.load(Ordering::SeqCst);
        if left.is_zero() || (unstarted && waited > queue_timeout) {
            abandoned.store(true, Ordering::SeqCst);
            // An answer that arrived meanwhile is still an answer.
            if let Ok(reply) = answer.try_recv() {
                return reply;
            }
            let reason = if left.is_zero() {
                format!(
                    "no answer within the deadline of {} ms",
                    deadline.as_millis()
                )
            } else {
                format!(
                    "no worker took it within the queue timeout of {} ms",
                    queue_timeout.as_millis()
                )
            };
            let mut reply = Reply::refused(Outcome::Timeout, reason);
            reply.queue_ms = millis(waited);
            return reply;
        }
        match answer.recv_timeout(left.min(CLIENT_CHECK)) {
            Ok(reply) => return reply,
            Err(RecvTimeoutError::Disconnected) => {
                return Reply::refused(Outcome::Failed, "the worker dropped the request");
            }
            Err(RecvTimeoutError::Timeout) => {
                if client_gone(stream) {
                    abandoned.store(true, Ordering::SeqCst);
                    return Reply::refused(Outcome::Cancelled, "the client disconnected");
                }
            }
        }
    }
}

fn same_root(a: &Path, b: &Path) -> bool {
    a == b
        || match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

/// Whether the client went away. Only a full close counts (`POLLHUP`, `POLLERR`): a client
/// that shut down its writing side after the request (`socat`, `nc -N`) still reads.
fn client_gone(stream: &UnixStream) -> bool {
    let mut fd = libc::pollfd {
        fd: std::os::fd::AsRawFd::as_raw_fd(stream),
        events: 0,
        revents: 0,
    };
    // SAFETY: one pollfd for a descriptor `stream` owns, no wait.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready > 0 && fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

fn send<T: Serialize>(mut stream: &UnixStream, value: &T) {
    if let Ok(mut text) = serde_json::to_string(value) {
        text.push('\n');
        let _ = stream.write_all(text.as_bytes());
    }
}

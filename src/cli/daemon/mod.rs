//! `atlas daemon start|stop|status` (R-D-1), and `context --execution worker`, its client.
//!
//! `protocol` is the wire format; `server` is the daemon process. `start` runs the server
//! detached (its output in `<graph>/daemon.log`) and waits until it answers; `--foreground`
//! serves in the calling process.

pub mod protocol;
pub mod server;

use crate::build::pipeline::millis;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{AtlasError, IoContext, Result};

use super::call::Call;
use super::context::ContextArgs;
use super::output::{Format, print_json, print_stdout};
use protocol::{ContextCall, LOG_FILE, Outcome, PROTOCOL_VERSION, Reply, Request, socket_path};
use server::{DaemonStatus, Limits};

#[derive(clap::Args, Debug)]
pub struct DaemonArgs {
    #[command(subcommand)]
    pub command: DaemonCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum DaemonCommand {
    /// Start serving queries from a pool of warm workers (detached unless --foreground).
    #[command(after_help = "Example:\n  atlas daemon start --query-workers 2 --queue 16")]
    Start(StartArgs),
    /// Stop the daemon of this graph (running requests finish first).
    Stop(StatusArgs),
    /// Whether a daemon serves this graph: its workers, queue, outcomes, memory and watcher.
    Status(StatusArgs),
}

#[derive(clap::Args, Debug)]
pub struct StartArgs {
    /// Query workers (threads over the shared warm graph).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub query_workers: u16,
    /// Requests that may wait for a worker; beyond it requests are answered `busy` at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub queue: u16,
    /// A request that waited longer than this for a worker is answered `timeout`.
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub queue_timeout_ms: u64,
    /// A request not answered within this (from admission) is answered `timeout`.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub deadline_ms: u64,
    /// Memory each worker may add to the warm process; above the sum, requests are
    /// refused `busy` and answers are `degraded`.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub worker_memory_mib: u64,
    /// Watch the tree and rebuild incrementally (also ATLAS_WATCH=1).
    #[arg(long)]
    pub watch: bool,
    /// Serve in this process instead of a detached one.
    #[arg(long)]
    pub foreground: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// How long `start` waits for a detached daemon to answer.
const START_PATIENCE: Duration = Duration::from_secs(60);
/// How long `stop` waits for the daemon to end, beyond its deadline, before killing it.
const STOP_PATIENCE: Duration = Duration::from_secs(10);
/// How long a worker client waits for a daemon whose deadline it does not know.
const CLIENT_BACKSTOP_MS: u64 = 600_000;

pub fn run(call: &Call, args: &DaemonArgs) -> Result<()> {
    match &args.command {
        DaemonCommand::Start(start) => run_start(call, start),
        DaemonCommand::Stop(stop) => run_stop(call, stop.format),
        DaemonCommand::Status(status) => {
            let location = call.location()?;
            print_status(&query_status(&location.graph_dir), status.format)
        }
    }
}

/// What `status` prints when nothing answers on the socket.
#[derive(Debug, Serialize)]
struct NotRunning {
    /// A daemon holds the graph's daemon lock (it may be too busy to answer).
    running: bool,
    answering: bool,
    socket: std::path::PathBuf,
    /// A socket file is there but nothing answers: a daemon died (the next start
    /// replaces it).
    stale_socket: bool,
}

enum Probe {
    Running(Box<DaemonStatus>),
    NotRunning(NotRunning),
}

fn query_status(graph_dir: &Path) -> Probe {
    let socket = socket_path(graph_dir);
    match exchange::<DaemonStatus>(&socket, &Request::Status, Duration::from_secs(5)) {
        Ok(status) => Probe::Running(Box::new(status)),
        Err(_) => {
            // A daemon whose connections are all taken does not answer, yet holds its lock.
            let held = lock_held(graph_dir);
            Probe::NotRunning(NotRunning {
                running: held,
                answering: false,
                stale_socket: socket.exists() && !held,
                socket,
            })
        }
    }
}

fn print_status(probe: &Probe, format: Format) -> Result<()> {
    match (probe, format) {
        (Probe::Running(status), Format::Json) => print_json(status),
        (Probe::NotRunning(none), Format::Json) => print_json(none),
        (Probe::Running(s), Format::Text) => {
            let outcomes: Vec<String> =
                s.outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let mut text = format!(
                "daemon      pid {} serving {} on {}\nworkers     {} alive, {} replaced, {} queued{}\noutcomes    {}\nmemory      {} MiB of {} MiB\n",
                s.pid,
                s.code_root.display(),
                s.socket.display(),
                s.workers_alive,
                s.workers_replaced,
                s.queued,
                if s.circuit_open { ", circuit open" } else { "" },
                outcomes.join(", "),
                s.rss_mib,
                s.memory_ceiling_mib
            );
            if let Some(w) = &s.watch {
                text.push_str(&format!(
                    "watch       {} ({}), {} builds, last {}\n",
                    w.state,
                    w.backend,
                    w.builds,
                    w.last_build.as_ref().map_or("-".to_string(), |b| format!(
                        "{} in {:.1} ms",
                        b.outcome, b.latency_ms
                    ))
                ));
            }
            print_stdout(&text)
        }
        (Probe::NotRunning(none), Format::Text) if none.running => print_stdout(
            "a daemon holds this graph but does not answer (all its connections are taken)\n",
        ),
        (Probe::NotRunning(none), Format::Text) => print_stdout(&format!(
            "no daemon serves this graph{}\n",
            if none.stale_socket {
                " (a stale socket is left; the next start replaces it)"
            } else {
                ""
            }
        )),
    }
}

/// `daemon start` when a daemon already serves the graph: its status, when it serves this
/// code root (the limits asked for, if they differ, are not applied: said on stderr);
/// `atlas-daemon-unavailable` when it serves another one.
fn already_running(
    status: Box<DaemonStatus>,
    code_root: &Path,
    limits: &Limits,
    format: Format,
) -> Result<()> {
    if status.code_root != code_root {
        return Err(AtlasError::DaemonUnavailable(format!(
            "a daemon (pid {}) already serves this graph for {}, not {}; stop it first (`atlas daemon stop`)",
            status.pid,
            status.code_root.display(),
            code_root.display()
        )));
    }
    let asked = serde_json::to_value(limits).unwrap_or_default();
    if asked != status.limits {
        eprintln!(
            "atlas daemon: already running (pid {}) with limits {}; the limits asked for ({asked}) are not applied until it is stopped and started again",
            status.pid, status.limits
        );
    }
    print_status(&Probe::Running(status), format)
}

fn run_start(call: &Call, args: &StartArgs) -> Result<()> {
    let location = call.read_location()?;
    let limits = Limits {
        workers: usize::from(args.query_workers),
        queue: usize::from(args.queue),
        queue_timeout_ms: args.queue_timeout_ms,
        deadline_ms: args.deadline_ms,
        worker_memory_mib: args.worker_memory_mib,
    };
    let watching = args.watch || call.config.watch.enabled;
    if args.foreground {
        // The watcher starts once the socket is bound (`server::serve`).
        let start_watch = || {
            if !watching {
                return None;
            }
            super::watch::start(call, None, false, true, true)
                .map_err(|e| eprintln!("atlas daemon: not watching: error[{}]: {e}", e.code()))
                .ok()
        };
        return server::serve(location, call.config.clone(), limits, start_watch);
    }
    if let Probe::Running(status) = query_status(&location.graph_dir) {
        return already_running(status, &location.code_root, &limits, args.format);
    }
    std::fs::create_dir_all(&location.graph_dir).at(&location.graph_dir)?;
    let log_path = location.graph_dir.join(LOG_FILE);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .at(&log_path)?;
    let exe = std::env::current_exe().map_err(|e| AtlasError::io("<current exe>", e))?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("--code")
        .arg(&location.code_root)
        .arg("--graph")
        .arg(&location.graph_dir)
        .args(["daemon", "start", "--foreground"])
        .args(["--query-workers", &args.query_workers.to_string()])
        .args(["--queue", &args.queue.to_string()])
        .args(["--queue-timeout-ms", &args.queue_timeout_ms.to_string()])
        .args(["--deadline-ms", &args.deadline_ms.to_string()])
        .args(["--worker-memory-mib", &args.worker_memory_mib.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().at(&log_path)?)
        .stderr(log);
    if watching {
        command.arg("--watch");
    }
    // Its own process group: the terminal's Ctrl-C does not reach it.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| AtlasError::io("<daemon process>", e))?;
    let started = Instant::now();
    loop {
        if let Probe::Running(status) = query_status(&location.graph_dir) {
            return print_status(&Probe::Running(status), args.format);
        }
        if let Ok(Some(exit)) = child.try_wait() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(3).collect();
            return Err(AtlasError::DaemonUnavailable(format!(
                "the daemon exited ({exit}) before serving: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )));
        }
        if started.elapsed() > START_PATIENCE {
            return Err(AtlasError::DaemonUnavailable(format!(
                "the daemon did not answer within {} s (see {})",
                START_PATIENCE.as_secs(),
                log_path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run_stop(call: &Call, format: Format) -> Result<()> {
    let location = call.location()?;
    let graph_dir = &location.graph_dir;
    let socket = socket_path(graph_dir);
    let (pid, patience) =
        match exchange::<DaemonStatus>(&socket, &Request::Shutdown, Duration::from_secs(5)) {
            // Running requests finish within the deadline; the daemon waits that long.
            Ok(status) => {
                let deadline = status.limits["deadline_ms"].as_u64().unwrap_or(30_000);
                (status.pid, Duration::from_millis(deadline) + STOP_PATIENCE)
            }
            // Holding its lock but not answering (every connection taken): terminated.
            Err(_) if lock_held(graph_dir) => match lock_pid(graph_dir).filter(|&p| is_daemon(p)) {
                Some(pid) => {
                    // SAFETY: signalling the pid the daemon wrote into its own lock file.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
                    (pid, STOP_PATIENCE)
                }
                None => return print_status(&query_status(graph_dir), format),
            },
            Err(_) => return print_status(&query_status(graph_dir), format),
        };
    let started = Instant::now();
    // The lock is released as the process ends (even before its parent reaps it); the
    // process may still be tearing down its memory then, so its exit is awaited too.
    while lock_held(graph_dir) || !ended(pid) {
        if started.elapsed() > patience {
            // Only a daemon still holding its lock is killed: once the lock is free, the
            // pid may already be another process's.
            if lock_held(graph_dir) {
                // SAFETY: as above.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    #[derive(Serialize)]
    struct Stopped {
        stopped: bool,
        pid: u32,
    }
    match format {
        Format::Json => print_json(&Stopped { stopped: true, pid }),
        Format::Text => print_stdout(&format!("stopped the daemon (pid {pid})\n")),
    }
}

/// Whether process `pid` has ended: gone, or a zombie waiting to be reaped. Where there is
/// no `/proc`, the released lock is all a stopper can see, and this says yes.
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(") ").next().and_then(|s| s.chars().next()) == Some('Z'),
        Err(_) => true,
    }
}

/// Whether `pid` is an atlas daemon (its command line says `daemon start`), so that a pid
/// left in a lock file and since reused by another program is never signalled.
fn is_daemon(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        args.windows(2)
            .any(|w| w[0] == b"daemon".as_slice() && w[1] == b"start".as_slice())
    })
}

/// The pid a daemon wrote into its lock file.
fn lock_pid(graph_dir: &Path) -> Option<u32> {
    std::fs::read_to_string(graph_dir.join(protocol::LOCK_FILE))
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|&pid| pid > 0)
}

/// Whether a daemon process holds the graph's daemon lock.
fn lock_held(graph_dir: &Path) -> bool {
    crate::build::store::is_held(&graph_dir.join(protocol::LOCK_FILE))
}

/// One request and its reply line.
fn exchange<T: serde::de::DeserializeOwned>(
    socket: &Path,
    request: &Request,
    patience: Duration,
) -> std::io::Result<T> {
    if !protocol::private_dir(socket, false) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private directory of this user",
                socket.display()
            ),
        ));
    }
    let mut stream = UnixStream::connect(socket)?;
    stream.set_read_timeout(Some(patience))?;
    let mut line = serde_json::to_string(request).map_err(std::io::Error::other)?;
    line.push('\n');
    // A daemon with too many connections open answers `busy` before it reads the request,
    // and closes: a write after that fails (a broken pipe), yet the reply is there to read.
    let written = stream.write_all(line.as_bytes());
    let mut reply = String::new();
    let read = BufReader::new(&stream).read_line(&mut reply);
    if reply.is_empty() {
        written?;
        read?;
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the daemon closed the connection",
        ));
    }
    serde_json::from_str(&reply).map_err(std::io::Error::other)
}

/// One attempt at answering, as the execution record lists it.
#[derive(Debug, Serialize)]
struct Attempt {
    mode: &'static str,
    outcome: &'static str,
    code: String,
    exit_code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    worker: Option<usize>,
    queue_ms: f64,
    run_ms: f64,
    total_ms: f64,
}

/// `context --execution worker`: the daemon answers; on any other outcome the typed error,
/// or with `--fallback-direct` a complete direct run. Every attempt is recorded in one
/// `{"atlas_execution": …}` line on stderr; stdout only ever carries one complete answer.
/// Returns the exit code.
pub fn context(call: &Call, args: &ContextArgs) -> Result<i32> {
    let location = call.read_location()?;
    let mut wire = ContextCall {
        v: PROTOCOL_VERSION,
        query: args.query.clone(),
        profile: clap::ValueEnum::to_possible_value(&args.profile)
            .map_or_else(String::new, |v| v.get_name().to_string()),
        max_bytes: args.max_bytes,
        min_score: args.min_score,
        max_score: args.max_score,
        expect_graph: args.expect_graph.clone(),
        after: args.after.clone(),
        frozen: args.frozen,
        no_build: args.no_build,
        format: args.format.as_str().to_string(),
        code_arg: call.code.as_ref().map(|p| p.display().to_string()),
        graph_arg: call.graph.as_ref().map(|p| p.display().to_string()),
        code_root: location.code_root.clone(),
        deadline_ms: args.deadline_ms,
    };
    wire.v = wire.version_needed();
    let socket = socket_path(&location.graph_dir);
    let started = Instant::now();
    // The daemon answers by its deadline; the margin covers a slow hand-over.
    // The daemon answers by its deadline (a shorter `--deadline-ms` for this request, else
    // its own, unknown here): the margin covers the hand-over; ten minutes is a backstop.
    let patience = Duration::from_millis(
        args.deadline_ms
            .map_or(CLIENT_BACKSTOP_MS, |d| d.saturating_add(5_000)),
    );
    let reply = match exchange::<Reply>(&socket, &Request::Context(Box::new(wire)), patience) {
        Ok(reply) => reply,
        Err(e)
            if e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::TimedOut =>
        {
            Reply::refused(Outcome::Timeout, "the daemon did not reply")
        }
        Err(e) => Reply::refused(
            Outcome::Unavailable,
            format!(
                "no daemon serves {} ({e}); start one with `atlas daemon start`",
                location.graph_dir.display()
            ),
        ),
    };
    let mut attempts = vec![Attempt {
        mode: "worker",
        outcome: reply.outcome.as_str(),
        code: reply.outcome.code().to_string(),
        exit_code: if reply.outcome.answered() {
            reply.exit_code
        } else {
            reply
                .outcome
                .error(String::new())
                .map_or(0, |e| super::output::exit_code(&e))
        },
        reason: reply.reason.clone(),
        worker: reply.worker,
        queue_ms: reply.queue_ms,
        run_ms: reply.run_ms,
        total_ms: millis(started.elapsed()),
    }];
    if reply.outcome.answered() {
        record(&attempts);
        eprint!("{}", reply.stderr);
        print_stdout(&reply.stdout)?;
        observe(call, args, &reply.stdout, reply.exit_code);
        return Ok(reply.exit_code);
    }
    let error = reply
        .outcome
        .error(reply.reason.clone().unwrap_or_default())
        .unwrap_or_else(|| AtlasError::DaemonFailed("no answer".into()));
    if !args.fallback_direct {
        record(&attempts);
        return Err(error);
    }
    let direct_started = Instant::now();
    let direct = super::context::direct(call, args);
    attempts.push(Attempt {
        mode: "direct",
        outcome: if direct.is_ok() { "success" } else { "failed" },
        code: match &direct {
            Ok(()) => "atlas-daemon-success".into(),
            Err(e) => e.code().into(),
        },
        exit_code: direct
            .as_ref()
            .map_or_else(super::output::exit_code, |()| 0),
        reason: None,
        worker: None,
        queue_ms: 0.0,
        run_ms: millis(direct_started.elapsed()),
        total_ms: millis(direct_started.elapsed()),
    });
    record(&attempts);
    direct.map(|()| 0)
}

fn record(attempts: &[Attempt]) {
    let record = serde_json::json!({ "atlas_execution": { "attempts": attempts } });
    // One write for the whole line: stderr is unbuffered, and a value's `Display` writes
    // token by token, which another writer to the same stderr could interleave.
    let mut line = record.to_string();
    line.push('\n');
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
}

fn observe(call: &Call, args: &ContextArgs, stdout: &str, exit_code: i32) {
    call.observe(super::call::Answer {
        tool: "context",
        format: args.format,
        profile: clap::ValueEnum::to_possible_value(&args.profile)
            .map(|v| v.get_name().to_string())
            .as_deref(),
        outcome: if exit_code == 0 { "ok" } else { "error" },
        output: stdout,
        items: 0,
    });
}

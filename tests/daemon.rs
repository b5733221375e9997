//! `atlas daemon` and `context --execution worker` (R-D-1, issue 14): a real daemon
//! process on a real Unix socket, every typed outcome produced on purpose.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::process::Child;
use std::time::{Duration, Instant};

use common::{Run, Sandbox};

/// A daemon started for a test; stopped (or killed) when dropped.
struct Daemon<'a> {
    sandbox: &'a Sandbox,
    child: Option<Child>,
}

impl<'a> Daemon<'a> {
    /// `atlas daemon start --foreground <flags>` as a child process, once it answers.
    fn start(sandbox: &'a Sandbox, flags: &[&str], env: &[(&str, &str)]) -> Daemon<'a> {
        let mut args = vec!["daemon", "start", "--foreground"];
        args.extend_from_slice(flags);
        let child = sandbox.spawn_atlas(&args, env);
        let daemon = Daemon {
            sandbox,
            child: Some(child),
        };
        // Answering, not only holding its lock (which it takes before binding the socket).
        daemon.wait_until(|status| status["running"] == true && status["pid"].is_u64());
        daemon
    }

    fn status(&self) -> serde_json::Value {
        self.sandbox
            .atlas(&["daemon", "status", "--format", "json"])
            .success()
            .json()
    }

    #[track_caller]
    fn wait_until(&self, ready: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let started = Instant::now();
        loop {
            let status = self.status();
            if ready(&status) {
                return status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "daemon never reached the state; last status {status:#}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn outcome(&self, outcome: &str) -> u64 {
        self.status()["outcomes"][outcome].as_u64().unwrap()
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Daemon<'_> {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = self.sandbox.atlas(&["daemon", "stop"]);
            self.kill();
        }
    }
}

fn built(fixture: &str) -> Sandbox {
    let sandbox = Sandbox::with_fixture(fixture);
    sandbox.atlas(&["build", "--no-search"]).success();
    sandbox
}

/// `atlas context <query> --profile symbol --frozen --format json <extra>`.
fn context(sandbox: &Sandbox, query: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "context",
        query,
        "--profile",
        "symbol",
        "--frozen",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    sandbox.atlas(&args)
}

/// The `atlas_execution` record a worker run leaves on stderr.
#[track_caller]
fn attempts(run: &Run) -> Vec<serde_json::Value> {
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("{\"atlas_execution\""))
        .unwrap_or_else(|| panic!("no execution record:\n{}", run.describe()));
    let record: serde_json::Value = serde_json::from_str(line).unwrap();
    record["atlas_execution"]["attempts"]
        .as_array()
        .unwrap()
        .clone()
}

/// The answer without what differs between any two runs: timings, and the byte count that
/// includes their digits.
fn without_timings(mut answer: serde_json::Value) -> serde_json::Value {
    answer["receipt"]["timings_ms"] = serde_json::Value::Null;
    answer["receipt"]["serialized_bytes"] = serde_json::Value::Null;
    answer
}

#[test]
fn a_worker_answers_exactly_as_the_direct_command_over_a_private_socket() {
    let sandbox = built("python");
    let daemon = Daemon::start(&sandbox, &["--query-workers", "2"], &[]);
    let socket = sandbox.graph().join("daemon.sock");
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "socket mode {mode:o}");

    let direct = context(&sandbox, "Cart", &[]).success();
    let worker = context(&sandbox, "Cart", &["--execution", "worker"]).success();
    assert_eq!(
        without_timings(worker.json()),
        without_timings(direct.json())
    );
    let record = attempts(&worker);
    assert_eq!(record.len(), 1);
    assert_eq!(record[0]["mode"], "worker");
    assert_eq!(record[0]["outcome"], "success");
    assert_eq!(record[0]["code"], "atlas-daemon-success");

    // A query error is relayed as the direct command reports it: same code, same exit.
    let direct = context(&sandbox, "NoSuchSymbolAnywhere", &[]);
    let worker = context(&sandbox, "NoSuchSymbolAnywhere", &["--execution", "worker"]);
    assert_ne!(direct.code, 0, "{}", direct.describe());
    assert_eq!(worker.code, direct.code, "{}", worker.describe());
    assert_eq!(worker.json(), direct.json());

    assert_eq!(daemon.outcome("success"), 2);

    // Questions: searched over the daemon's int8 scan and loaded indexes, one of them
    // with a name written as code walked beside its search (`context::understand`).
    for question in [
        "how does the cart compute its total price",
        "is `apply_discount` called with a rate",
    ] {
        let direct = context(&sandbox, question, &[]).success();
        let worker = context(&sandbox, question, &["--execution", "worker"]).success();
        assert_eq!(
            without_timings(worker.json()),
            without_timings(direct.json()),
            "{question}"
        );
    }
    sandbox.atlas(&["daemon", "stop"]).success();
    assert!(!socket.exists(), "stop removes the socket");
}

#[test]
fn without_a_daemon_a_worker_request_is_unavailable_and_the_fallback_records_both_attempts() {
    let sandbox = built("python");
    let run = context(&sandbox, "Cart", &["--execution", "worker"]);
    let run = run.failure(15, "atlas-daemon-unavailable");
    assert_eq!(attempts(&run)[0]["outcome"], "unavailable");

    let run = context(
        &sandbox,
        "Cart",
        &["--execution", "worker", "--fallback-direct"],
    )
    .success();
    let record = attempts(&run);
    assert_eq!(record.len(), 2, "{record:?}");
    assert_eq!(record[0]["mode"], "worker");
    assert_eq!(record[0]["outcome"], "unavailable");
    assert_eq!(record[1]["mode"], "direct");
    assert_eq!(record[1]["outcome"], "success");
    // stdout holds exactly one complete answer: the direct one.
    assert_eq!(run.json()["evidence"][0]["symbol"], "shop/models.py::Cart");

    // `--fallback-direct` belongs to worker execution only.
    context(
        &sandbox,
        "Cart",
        &["--execution", "direct", "--fallback-direct"],
    )
    .failure(2, "atlas-invalid-input");
}

#[test]
fn a_full_queue_answers_busy_at_once() {
    let sandbox = built("python");
    let _daemon = Daemon::start(
        &sandbox,
        &["--query-workers", "1", "--queue", "1"],
        &[("ATLAS_INJECT_FAILURE", "worker-sleep-1500")],
    );
    // One request runs, one waits in the queue, the third finds it full.
    let runs: Vec<Run> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let sandbox = &sandbox;
                scope.spawn(move || {
                    std::thread::sleep(Duration::from_millis(300 * i));
                    context(sandbox, "Cart", &["--execution", "worker"])
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(runs[0].code, 0, "{}", runs[0].describe());
    assert_eq!(runs[1].code, 0, "{}", runs[1].describe());
    let busy = &runs[2];
    assert_eq!(busy.code, 11, "{}", busy.describe());
    assert!(busy.stderr.contains("error[atlas-daemon-busy]"));
    assert_eq!(attempts(busy)[0]["outcome"], "busy");
}

#[test]
fn a_deadline_of_one_millisecond_times_out() {
    let sandbox = built("python");
    let daemon = Daemon::start(
        &sandbox,
        &[],
        &[("ATLAS_INJECT_FAILURE", "worker-sleep-200")],
    );
    let run = context(
        &sandbox,
        "Cart",
        &["--execution", "worker", "--deadline-ms", "1"],
    );
    let run = run.failure(12, "atlas-daemon-timeout");
    // The error envelope, never a partial answer.
    assert_eq!(run.json()["error"]["code"], "atlas-daemon-timeout");
    assert!(run.json().get("evidence").is_none());
    assert_eq!(daemon.outcome("timeout"), 1);
}

#[test]
fn a_client_that_disconnects_is_cancelled() {
    let sandbox = built("python");
    let daemon = Daemon::start(
        &sandbox,
        &["--query-workers", "1"],
        &[("ATLAS_INJECT_FAILURE", "worker-sleep-1000")],
    );
    let mut stream = UnixStream::connect(sandbox.graph().join("daemon.sock")).unwrap();
    let request = serde_json::json!({
        "op": "context", "v": 1, "query": "Cart", "profile": "symbol",
        "max_bytes": null, "min_score": null, "expect_graph": null, "after": null,
        "frozen": true, "no_build": false, "format": "json",
        "code_arg": null, "graph_arg": null,
        "code_root": sandbox.repo(), "deadline_ms": null
    });
    stream.write_all(format!("{request}\n").as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    drop(stream);
    let status = daemon.wait_until(|s| s["outcomes"]["cancelled"] == 1);
    assert_eq!(status["outcomes"]["success"], 0);
}

#[test]
fn a_panicking_worker_fails_its_request_is_replaced_and_a_second_panic_opens_the_circuit() {
    let sandbox = built("python");
    let daemon = Daemon::start(
        &sandbox,
        &["--query-workers", "1"],
        &[("ATLAS_INJECT_FAILURE", "worker-panic")],
    );
    let run = context(&sandbox, "Cart", &["--execution", "worker"]);
    run.failure(14, "atlas-daemon-failed");
    let status = daemon.wait_until(|s| s["workers_replaced"] == 1 && s["workers_alive"] == 1);
    assert_eq!(status["circuit_open"], false);

    context(&sandbox, "Cart", &["--execution", "worker"]).failure(14, "atlas-daemon-failed");
    daemon.wait_until(|s| s["circuit_open"] == true && s["workers_alive"] == 1);
    let run = context(&sandbox, "Cart", &["--execution", "worker"]);
    let run = run.failure(15, "atlas-daemon-unavailable");
    assert!(run.stderr.contains("circuit"), "{}", run.describe());

    // With the fallback the same request is answered directly, both attempts recorded.
    let run = context(
        &sandbox,
        "Cart",
        &["--execution", "worker", "--fallback-direct"],
    )
    .success();
    let record = attempts(&run);
    assert_eq!(
        (record[0]["outcome"].as_str(), record[1]["outcome"].as_str()),
        (Some("unavailable"), Some("success"))
    );
    assert_eq!(daemon.outcome("failed"), 2);
}

#[test]
fn the_daemon_follows_each_new_generation() {
    let sandbox = built("python");
    let _daemon = Daemon::start(&sandbox, &[], &[]);
    let before = context(&sandbox, "Cart", &["--execution", "worker"]).success();
    let first = before.json()["graph"]["fingerprint"].clone();
    assert_eq!(first, sandbox.current().as_str());

    sandbox.write("shop/late.py", "def arrived_later():\n    return 1\n");
    sandbox.atlas(&["build", "--no-search"]).success();
    let after = context(&sandbox, "arrived_later", &["--execution", "worker"]).success();
    let answer = after.json();
    assert_eq!(answer["graph"]["fingerprint"], sandbox.current().as_str());
    assert_ne!(answer["graph"]["fingerprint"], first);
    assert_eq!(
        answer["evidence"][0]["symbol"],
        "shop/late.py::arrived_later"
    );
}

/// The daemon keeps the source texts it verified (`project/sources.rs`); an edit of the
/// same length is still seen at once, as the direct command sees it. (Whether a text is
/// kept depends on how long ago its file last changed; the kept path itself is tested
/// with simulated time in `project::sources::tests`.)
#[test]
fn an_edited_source_is_stale_in_the_next_warm_answer_as_in_a_direct_one() {
    let sandbox = built("python");
    let _daemon = Daemon::start(&sandbox, &[], &[]);
    let fresh = context(&sandbox, "Cart", &["--execution", "worker"]).success();
    let fresh = fresh.json();
    assert_eq!(fresh["evidence"][0]["projection"], "full");
    assert!(fresh["diagnostics"].as_array().unwrap().is_empty());

    let path = fresh["evidence"][0]["path"].as_str().unwrap().to_string();
    let text = std::fs::read_to_string(sandbox.repo().join(&path)).unwrap();
    sandbox.write(&path, text.replacen("Cart", "Kart", 1));
    let worker = context(&sandbox, "Cart", &["--execution", "worker"]).success();
    let direct = context(&sandbox, "Cart", &[]).success();
    let answer = worker.json();
    assert_eq!(answer["evidence"][0]["projection"], "stale-skeleton");
    assert_eq!(
        answer["diagnostics"][0]["code"],
        "atlas-context-stale-source"
    );
    assert_eq!(without_timings(answer), without_timings(direct.json()));
}

/// Without a watcher, a daemon keeps what a clean check of a settled tree depends on and
/// checks that by `stat` alone (`build::settled`): an edit, and a file added, still reach
/// the next answer, as they reach a direct one.
#[test]
fn without_a_watcher_a_settled_tree_is_rechecked_by_stat_and_each_change_reaches_the_next_answer() {
    let sandbox = built("python");
    let fresh = |query: &str| {
        sandbox
            .atlas(&[
                "context",
                query,
                "--profile",
                "symbol",
                "--format",
                "json",
                "--execution",
                "worker",
            ])
            .success()
            .json()
    };
    let settle = || std::thread::sleep(Duration::from_millis(2_200));
    let _daemon = Daemon::start(&sandbox, &[], &[]);

    // Past the racy window (`stamps::RACY_NS`) the first answer keeps the list, the
    // second is checked against it.
    settle();
    let first = fresh("Cart");
    assert_eq!(first["graph"]["fingerprint"], sandbox.current().as_str());
    assert_eq!(
        fresh("Cart")["graph"]["fingerprint"],
        first["graph"]["fingerprint"]
    );

    let models = sandbox.repo().join("shop/models.py");
    let text = std::fs::read_to_string(&models).unwrap();
    sandbox.write(
        "shop/models.py",
        format!("{text}\n\ndef added_by_an_edit():\n    return 2\n"),
    );
    let edited = fresh("added_by_an_edit");
    assert_eq!(edited["graph"]["refreshed"], true, "{edited:#}");
    assert_eq!(
        edited["evidence"][0]["symbol"],
        "shop/models.py::added_by_an_edit"
    );

    settle();
    let before = fresh("Cart");
    assert_eq!(
        fresh("Cart")["graph"]["fingerprint"],
        before["graph"]["fingerprint"]
    );
    sandbox.write("shop/late.py", "def arrived_later():\n    return 1\n");
    let added = fresh("arrived_later");
    assert_ne!(
        added["graph"]["fingerprint"],
        before["graph"]["fingerprint"]
    );
    assert_eq!(
        added["evidence"][0]["symbol"],
        "shop/late.py::arrived_later"
    );
}

#[test]
fn a_daemon_killed_mid_request_leaves_the_generation_intact_and_its_stale_socket_is_replaced() {
    let sandbox = built("python");
    let committed = sandbox.current();
    let mut daemon = Daemon::start(
        &sandbox,
        &[],
        &[("ATLAS_INJECT_FAILURE", "worker-sleep-3000")],
    );
    let pending = std::thread::scope(|scope| {
        let request = scope.spawn(|| context(&sandbox, "Cart", &["--execution", "worker"]));
        std::thread::sleep(Duration::from_millis(500));
        daemon.kill();
        request.join().unwrap()
    });
    // The client learns there is no daemon; it never hangs, never gets half an answer.
    assert_eq!(pending.code, 15, "{}", pending.describe());
    assert_eq!(pending.json()["error"]["code"], "atlas-daemon-unavailable");

    let socket = sandbox.graph().join("daemon.sock");
    assert!(socket.exists(), "a killed daemon leaves its socket");
    let status = sandbox
        .atlas(&["daemon", "status", "--format", "json"])
        .success()
        .json();
    assert_eq!(status["running"], false);
    assert_eq!(status["stale_socket"], true);

    assert_eq!(sandbox.current(), committed);
    context(&sandbox, "Cart", &[]).success();

    let daemon = Daemon::start(&sandbox, &[], &[]);
    context(&sandbox, "Cart", &["--execution", "worker"]).success();
    assert_eq!(daemon.outcome("success"), 1);
}

#[test]
fn over_the_memory_budget_answers_are_degraded_or_refused_never_silent() {
    let sandbox = built("python");
    let _daemon = Daemon::start(&sandbox, &["--worker-memory-mib", "0"], &[]);
    for _ in 0..3 {
        let run = context(&sandbox, "Cart", &["--execution", "worker"]);
        let record = attempts(&run);
        let outcome = record[0]["outcome"].as_str().unwrap().to_string();
        assert!(
            outcome == "degraded" || outcome == "busy",
            "{}",
            run.describe()
        );
        assert!(
            record[0]["reason"]
                .as_str()
                .unwrap()
                .contains("memory budget"),
            "{record:?}"
        );
        if outcome == "degraded" {
            // A degraded answer is complete.
            assert_eq!(run.code, 0);
            assert_eq!(run.json()["evidence"][0]["symbol"], "shop/models.py::Cart");
        } else {
            assert_eq!(run.code, 11);
        }
    }
}

#[test]
fn start_detaches_and_stop_ends_the_daemon() {
    let sandbox = built("python");
    let started = sandbox
        .atlas(&["daemon", "start", "--format", "json"])
        .success()
        .json();
    assert_eq!(started["running"], true);
    let pid = started["pid"].as_u64().unwrap();
    // Starting again reports the running daemon.
    let again = sandbox
        .atlas(&["daemon", "start", "--format", "json"])
        .success()
        .json();
    assert_eq!(again["pid"].as_u64(), Some(pid));
    context(&sandbox, "Cart", &["--execution", "worker"]).success();
    let stopped = sandbox
        .atlas(&["daemon", "stop", "--format", "json"])
        .success()
        .json();
    assert_eq!(stopped["pid"].as_u64(), Some(pid));
    // Gone, or a zombie waiting for a parent that reaps (a container without init).
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = state.rsplit(") ").next().unwrap_or("").chars().next();
    assert!(
        matches!(state, None | Some('Z')),
        "daemon {pid} still runs ({state:?})"
    );
    let status = sandbox
        .atlas(&["daemon", "status", "--format", "json"])
        .success()
        .json();
    assert_eq!(status["running"], false);
    assert_eq!(status["stale_socket"], false);
}

#[test]
fn a_daemon_whose_graph_directory_moved_stops_by_itself_when_asked() {
    // The daemon wakes its accept loop by connecting to its socket's path; moved with the
    // repository, that path is gone, and the stopper waited out its patience and killed it.
    let sandbox = built("python");
    let mut daemon = Daemon::start(&sandbox, &["--deadline-ms", "1000"], &[]);
    let moved = sandbox.path().join("moved");
    std::fs::rename(sandbox.repo(), &moved).unwrap();
    let graph = moved.join(".agent-spec/graph");
    let stopped = sandbox
        .run_bin(
            env!("CARGO_BIN_EXE_atlas"),
            &[
                "--graph",
                graph.to_str().unwrap(),
                "daemon",
                "stop",
                "--format",
                "json",
            ],
        )
        .success()
        .json();
    assert_eq!(stopped["stopped"], true, "{stopped}");
    let mut child = daemon.child.take().unwrap();
    let ended = child.wait().unwrap();
    // Ended by itself (exit 0), not by the stopper's SIGKILL.
    assert!(ended.success(), "{ended:?}");
}

/// A daemon whose graph directory is deleted can no longer be reached or stopped, and a
/// new one could start beside it for the rebuilt directory: it stops by itself.
#[test]
fn a_daemon_whose_graph_directory_is_deleted_stops_by_itself() {
    let sandbox = built("python");
    let mut daemon = Daemon::start(&sandbox, &[], &[]);
    std::fs::remove_dir_all(sandbox.graph()).unwrap();
    let mut child = daemon.child.take().unwrap();
    let started = Instant::now();
    let ended = loop {
        if let Some(ended) = child.try_wait().unwrap() {
            break ended;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the daemon still runs a minute after its graph directory was deleted");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(ended.success(), "{ended:?}");
}

/// `daemon start` beside a daemon that serves the graph for another code root is an error
/// that names that root, not the other daemon's status as though it were this one's; for
/// the same root, limits asked for that the running daemon does not have are said not to
/// apply.
#[test]
fn starting_beside_a_daemon_of_another_root_is_refused_and_other_limits_are_said_unapplied() {
    let sandbox = built("python");
    let _daemon = Daemon::start(&sandbox, &[], &[]);
    let other = sandbox.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("a.py"), "def a():\n    return 1\n").unwrap();
    let graph = sandbox.graph();
    let refused = sandbox
        .run_bin(
            env!("CARGO_BIN_EXE_atlas"),
            &[
                "--code",
                other.to_str().unwrap(),
                "--graph",
                graph.to_str().unwrap(),
                "daemon",
                "start",
            ],
        )
        .failure(15, "atlas-daemon-unavailable");
    assert!(
        refused.stderr.contains("already serves"),
        "{}",
        refused.stderr
    );
    let same = sandbox
        .atlas(&["daemon", "start", "--query-workers", "1"])
        .success();
    assert!(same.stderr.contains("are not applied"), "{}", same.stderr);
    assert_eq!(
        sandbox
            .atlas(&["daemon", "status", "--format", "json"])
            .success()
            .json()["limits"]["workers"],
        2
    );
}

/// A raw status exchange, as a client in another language would do it.
#[test]
fn the_protocol_is_one_json_line_each_way() {
    let sandbox = built("python");
    let _daemon = Daemon::start(&sandbox, &[], &[]);
    let mut stream = UnixStream::connect(sandbox.graph().join("daemon.sock")).unwrap();
    stream.write_all(b"{\"op\":\"status\"}\n").unwrap();
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).unwrap();
    let status: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(status["protocol"], 2);
    assert_eq!(status["limits"]["workers"], 2);

    let mut stream = UnixStream::connect(sandbox.graph().join("daemon.sock")).unwrap();
    stream.write_all(b"not json\n").unwrap();
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).unwrap();
    let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["outcome"], "unavailable");
}

#[test]
fn a_graph_directory_too_deep_for_a_socket_path_gets_a_private_one() {
    let sandbox = built("python");
    let deep = sandbox
        .path()
        .join("a".repeat(60))
        .join("b".repeat(60))
        .join("graph");
    let repo = sandbox.repo();
    let atlas = |args: &[&str]| {
        let mut full = vec![
            "--code",
            repo.to_str().unwrap(),
            "--graph",
            deep.to_str().unwrap(),
        ];
        full.extend_from_slice(args);
        sandbox.run_bin(env!("CARGO_BIN_EXE_atlas"), &full)
    };
    atlas(&["build", "--no-search"]).success();
    let status = atlas(&["daemon", "start", "--format", "json"])
        .success()
        .json();
    let socket = std::path::PathBuf::from(status["socket"].as_str().unwrap());
    assert!(!socket.starts_with(&deep), "{}", socket.display());
    assert!(socket.as_os_str().len() <= 107);
    let dir = std::fs::metadata(socket.parent().unwrap()).unwrap();
    assert_eq!(dir.permissions().mode() & 0o777, 0o700);
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let run = atlas(&[
        "context",
        "Cart",
        "--profile",
        "symbol",
        "--frozen",
        "--execution",
        "worker",
        "--format",
        "json",
    ])
    .success();
    assert_eq!(attempts(&run)[0]["outcome"], "success");
    atlas(&["daemon", "stop"]).success();
    assert!(!socket.exists());
}

#[test]
fn a_flood_of_idle_connections_is_refused_busy_not_served_by_ever_more_threads() {
    let sandbox = built("python");
    let daemon = Daemon::start(&sandbox, &["--query-workers", "1", "--queue", "1"], &[]);
    let socket = sandbox.graph().join("daemon.sock");
    // 1 worker + 1 queued + 64 connections of slack are handled; the rest are refused.
    let idle: Vec<UnixStream> = (0..66)
        .map(|_| UnixStream::connect(&socket).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let refused = UnixStream::connect(&socket).unwrap();
    refused
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut line = String::new();
    BufReader::new(&refused).read_line(&mut line).unwrap();
    let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["outcome"], "busy", "{reply}");
    // A client that writes its request only after the daemon refused and closed: the
    // write fails, and the refusal is still there to read.
    let mut late = UnixStream::connect(&socket).unwrap();
    late.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let written = late.write_all(raw_request(&sandbox).as_bytes());
    assert_eq!(
        written.map_err(|e| e.kind()),
        Err(std::io::ErrorKind::BrokenPipe)
    );
    let mut line = String::new();
    BufReader::new(&late).read_line(&mut line).unwrap();
    let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["outcome"], "busy", "{reply}");
    // atlas's own client reports the refusal as `busy`, however its write fares.
    for _ in 0..5 {
        let run = context(&sandbox, "Cart", &["--execution", "worker"]);
        assert_eq!(run.code, 11, "{}", run.describe());
        assert_eq!(attempts(&run)[0]["outcome"], "busy");
    }
    // Status cannot get an answer either, yet tells a busy daemon from a dead one.
    let status = sandbox
        .atlas(&["daemon", "status", "--format", "json"])
        .success()
        .json();
    assert_eq!(
        (
            &status["running"],
            &status["answering"],
            &status["stale_socket"]
        ),
        (
            &serde_json::json!(true),
            &serde_json::json!(false),
            &serde_json::json!(false)
        ),
        "{status:#}"
    );
    // Once the idle clients go away, the daemon serves again.
    drop(idle);
    let status = daemon.wait_until(|s| s["running"] == true && s["pid"].is_u64());
    assert!(status["outcomes"]["busy"].as_u64() >= Some(1));
    context(&sandbox, "Cart", &["--execution", "worker"]).success();
}

/// The request line a raw client sends for `Cart`.
fn raw_request(sandbox: &Sandbox) -> String {
    let request = serde_json::json!({
        "op": "context", "v": 1, "query": "Cart", "profile": "symbol",
        "max_bytes": null, "min_score": null, "expect_graph": null, "after": null,
        "frozen": true, "no_build": false, "format": "json",
        "code_arg": null, "graph_arg": null,
        "code_root": sandbox.repo(), "deadline_ms": null
    });
    format!("{request}\n")
}

/// Sends one raw request line and reads the reply.
fn raw_reply(sandbox: &Sandbox, request: &serde_json::Value) -> serde_json::Value {
    let mut stream = UnixStream::connect(sandbox.graph().join("daemon.sock")).unwrap();
    stream.write_all(format!("{request}\n").as_bytes()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap()
}

/// Version 1 calls (an older client's) are still read; `max_score` came with version 2,
/// which an older daemon refuses instead of answering the whole page; a version from the
/// future is `unavailable`, never a guess.
#[test]
fn protocol_versions_one_and_two_are_read_and_a_newer_one_is_refused() {
    let sandbox = built("python");
    let _daemon = Daemon::start(&sandbox, &[], &[]);
    let mut request: serde_json::Value = serde_json::from_str(&raw_request(&sandbox)).unwrap();
    let v1 = raw_reply(&sandbox, &request);
    assert_eq!(v1["outcome"], "success", "{v1}");
    request["v"] = 2.into();
    request["min_score"] = 1.into();
    request["max_score"] = 500.into();
    let v2 = raw_reply(&sandbox, &request);
    assert_eq!(v2["outcome"], "success", "{v2}");
    let page: serde_json::Value = serde_json::from_str(v2["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(page["receipt"]["limits"]["max_score"], 500, "{page:#}");
    let direct = context(
        &sandbox,
        "Cart",
        &["--min-score", "1", "--max-score", "500"],
    );
    let ids = |page: &serde_json::Value| -> Vec<String> {
        page["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].to_string())
            .collect()
    };
    assert_eq!(ids(&page), ids(&direct.success().json()));
    request["v"] = 3.into();
    let v3 = raw_reply(&sandbox, &request);
    assert_eq!(v3["outcome"], "unavailable", "{v3}");
    assert!(
        v3["reason"]
            .as_str()
            .unwrap()
            .contains("protocol version 3"),
        "{v3}"
    );
}

#[test]
fn a_client_that_half_closes_after_its_request_still_gets_the_answer() {
    let sandbox = built("python");
    let _daemon = Daemon::start(
        &sandbox,
        &[],
        &[("ATLAS_INJECT_FAILURE", "worker-sleep-300")],
    );
    let mut stream = UnixStream::connect(sandbox.graph().join("daemon.sock")).unwrap();
    stream.write_all(raw_request(&sandbox).as_bytes()).unwrap();
    // As `socat` and `nc -N` do: no more writing, still reading.
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).unwrap();
    let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["outcome"], "success", "{reply}");
}

#[test]
fn a_request_no_worker_takes_within_the_queue_timeout_times_out_while_still_queued() {
    let sandbox = built("python");
    let _daemon = Daemon::start(
        &sandbox,
        &[
            "--query-workers",
            "1",
            "--queue",
            "4",
            "--queue-timeout-ms",
            "200",
        ],
        &[("ATLAS_INJECT_FAILURE", "worker-sleep-2000")],
    );
    std::thread::scope(|scope| {
        let first = scope.spawn(|| context(&sandbox, "Cart", &["--execution", "worker"]));
        std::thread::sleep(Duration::from_millis(300));
        let queued = context(&sandbox, "Cart", &["--execution", "worker"]);
        let queued = queued.failure(12, "atlas-daemon-timeout");
        // Answered by the waiting connection, not when a worker finally dequeued it.
        assert!(
            queued
                .stderr
                .contains("no worker took it within the queue timeout"),
            "{}",
            queued.describe()
        );
        first.join().unwrap().success();
    });
}

#[test]
fn stop_lets_a_running_request_finish() {
    let sandbox = built("python");
    let mut daemon = Daemon::start(
        &sandbox,
        &[],
        &[("ATLAS_INJECT_FAILURE", "worker-sleep-1500")],
    );
    std::thread::scope(|scope| {
        let running = scope.spawn(|| context(&sandbox, "Cart", &["--execution", "worker"]));
        std::thread::sleep(Duration::from_millis(400));
        sandbox.atlas(&["daemon", "stop"]).success();
        let answered = running.join().unwrap().success();
        assert_eq!(
            answered.json()["evidence"][0]["symbol"],
            "shop/models.py::Cart"
        );
    });
    daemon.kill();
}

#[test]
fn sigterm_stops_the_daemon_as_stop_does_letting_a_running_request_finish() {
    let sandbox = built("python");
    let mut daemon = Daemon::start(
        &sandbox,
        &[],
        &[("ATLAS_INJECT_FAILURE", "worker-sleep-1500")],
    );
    let pid = daemon.child.as_ref().unwrap().id() as i32;
    std::thread::scope(|scope| {
        let running = scope.spawn(|| context(&sandbox, "Cart", &["--execution", "worker"]));
        std::thread::sleep(Duration::from_millis(400));
        // SAFETY: signalling the daemon this test started.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        running.join().unwrap().success();
    });
    let exit = daemon.child.as_mut().unwrap().wait().unwrap();
    assert!(
        exit.success(),
        "a terminated daemon exits cleanly: {exit:?}"
    );
    assert!(!sandbox.graph().join("daemon.sock").exists());
    daemon.child = None;
}

//! `atlas watch` and watching daemons (R-D-2, issue 14): real inotify (and polling), real
//! builds, the state `atlas status` reads.

mod common;

use std::process::Child;
use std::time::{Duration, Instant};

use common::Sandbox;

/// `atlas watch` as a child process; killed when dropped.
struct Watcher<'a> {
    sandbox: &'a Sandbox,
    child: Child,
}

impl<'a> Watcher<'a> {
    fn start(sandbox: &'a Sandbox, flags: &[&str], env: &[(&str, &str)]) -> Watcher<'a> {
        let mut args = vec!["watch", "--no-search", "--format", "json"];
        args.extend_from_slice(flags);
        let watcher = Watcher {
            sandbox,
            child: sandbox.spawn_atlas(&args, env),
        };
        // Its first build brings the graph up to date.
        watcher.wait_until(|w| w["builds"].as_u64() >= Some(1) && w["state"] == "idle");
        watcher
    }

    /// The watcher as `atlas status` shows it.
    fn status(&self) -> serde_json::Value {
        let status = self.sandbox.atlas(&["status", "--format", "json"]).json();
        status["watch"].clone()
    }

    #[track_caller]
    fn wait_until(&self, ready: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(self.sandbox.graph().join("watch.json"));
            if let Ok(text) = text
                && let Ok(status) = serde_json::from_str::<serde_json::Value>(&text)
                && ready(&status)
            {
                return status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the watcher never reached the state"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Watcher<'_> {
    fn drop(&mut self) {
        self.kill();
    }
}

fn frozen_symbol(sandbox: &Sandbox, name: &str) -> serde_json::Value {
    sandbox
        .atlas(&[
            "context",
            name,
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ])
        .json()
}

/// Appends `text` to `shop/models.py` and waits for the build after the one `status`
/// counted; returns the watcher's status then.
fn append_and_wait(
    sandbox: &Sandbox,
    watcher: &Watcher,
    status: &serde_json::Value,
    text: &str,
) -> serde_json::Value {
    let builds = status["builds"].as_u64().unwrap();
    let models = sandbox.repo().join("shop/models.py");
    sandbox.write(
        "shop/models.py",
        std::fs::read_to_string(models).unwrap() + text,
    );
    watcher.wait_until(|w| w["builds"].as_u64() > Some(builds))
}

#[test]
fn an_edit_is_visible_to_the_next_query_after_the_debounce() {
    let sandbox = Sandbox::with_fixture("python");
    let watcher = Watcher::start(&sandbox, &["--debounce-ms", "100"], &[]);
    let before = watcher.status();
    assert_eq!(before["backend"], "inotify");
    assert_eq!(before["state"], "idle");
    let after = append_and_wait(
        &sandbox,
        &watcher,
        &before,
        "\n\ndef freshly_added():\n    return 42\n",
    );
    let last = &after["last_build"];
    assert_eq!(last["outcome"], "published", "{after:#}");
    assert!(last["latency_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(last["fingerprint"], sandbox.current().as_str());
    let answer = frozen_symbol(&sandbox, "freshly_added");
    assert_eq!(
        answer["evidence"][0]["symbol"],
        "shop/models.py::freshly_added"
    );
    // `atlas status` shows the watcher and the last build.
    let shown = sandbox.atlas(&["status"]).success();
    assert!(
        shown.stdout.contains("watch       idle (inotify)"),
        "{}",
        shown.describe()
    );
}

/// `atlas watch` builds in its own process, again and again: a build takes the facts of
/// the files that did not change from its memory of the last build, not from the cache
/// on disk, and publishes what a cold build of the same tree publishes.
#[test]
fn a_watchers_builds_take_unchanged_facts_from_memory_and_equal_a_cold_build() {
    let sandbox = Sandbox::with_fixture("python");
    let watcher = Watcher::start(&sandbox, &["--debounce-ms", "100"], &[]);
    let first = watcher.status();
    // Its first build had nothing in memory (the field is left out when zero).
    assert!(
        first["last_build"].get("facts_from_memory").is_none(),
        "{first:#}"
    );
    let after = append_and_wait(
        &sandbox,
        &watcher,
        &first,
        "\n\ndef remembered_elsewhere():\n    return 7\n",
    );
    let last = &after["last_build"];
    assert_eq!(last["outcome"], "published", "{after:#}");

    // A cold build of the same tree, with an empty cache, parses every code file.
    let cold = sandbox.path().join("cold-graph");
    let cold_graph = cold.to_str().unwrap();
    let report = sandbox
        .atlas(&[
            "--graph",
            cold_graph,
            "build",
            "--no-search",
            "--format",
            "json",
        ])
        .success()
        .json();
    let code_files = report["parsed"].as_u64().unwrap();
    assert!(code_files > 2, "{report:#}");
    // Every code file but the edited one came from memory.
    assert_eq!(
        last["facts_from_memory"].as_u64(),
        Some(code_files - 1),
        "{after:#}"
    );
    assert_eq!(last["fingerprint"], report["fingerprint"]);
    let watched = sandbox.atlas(&["graph", "dump"]).success();
    let cold_dump = sandbox
        .atlas(&["--graph", cold_graph, "graph", "dump"])
        .success();
    assert!(watched.stdout == cold_dump.stdout, "the dumps differ");
}

/// A watcher's build reads only the edited file's facts from the cache (the others come
/// from memory): one head of the tree's, which leaves the heads pack as it is, as after
/// an edit built by hand (it is written again when a sixteenth of the files' heads are
/// missing from it).
#[test]
fn a_watchers_builds_leave_the_heads_pack_as_it_is() {
    let sandbox = Sandbox::with_fixture("python");
    for n in 0..30 {
        sandbox.write(
            &format!("more/m{n}.py"),
            format!("def f{n}():\n    return {n}\n"),
        );
    }
    let watcher = Watcher::start(&sandbox, &["--debounce-ms", "100"], &[]);
    let first = watcher.status();
    let pack = sandbox.graph().join("cache").join("heads.pack");
    let packed = std::fs::read(&pack).unwrap();
    let after = append_and_wait(
        &sandbox,
        &watcher,
        &first,
        "\n\ndef remembered_again():\n    return 8\n",
    );
    assert_eq!(after["last_build"]["outcome"], "published", "{after:#}");
    assert!(
        std::fs::read(&pack).unwrap() == packed,
        "the watcher's build wrote the heads pack again"
    );
}

/// A watcher keeps its resolution in memory. Once its memo is written whole, the next
/// build's memo extends that file, so a body edit writes only the entries that differ
/// (`resolution.delta`) and leaves the memo file as it was.
#[test]
fn a_watchers_body_edit_writes_only_a_delta_of_its_resolution() {
    let sandbox = Sandbox::with_fixture("python");
    // Enough files that one changed entry is within a delta's share (of the entries
    // and of the memo file's bytes).
    for i in 0..80 {
        sandbox.write(
            &format!("shop/extra/m{i}.py"),
            format!(
                "def extra_{i}():\n    return helper_{i}() + other_{i}()\n\n\
                 def helper_{i}():\n    return other_{i}()\n\n\
                 def other_{i}():\n    return {i}\n"
            ),
        );
    }
    let watcher = Watcher::start(&sandbox, &["--debounce-ms", "100"], &[]);
    let graph = sandbox.graph();
    let memo = std::fs::read(graph.join("resolution.bin")).unwrap();
    assert!(!graph.join("resolution.delta").exists());
    let mut status = watcher.status();
    for edit in 0..2 {
        status = append_and_wait(&sandbox, &watcher, &status, &format!("\n# edit {edit}\n"));
        assert_eq!(status["last_build"]["outcome"], "published", "{status:#}");
        assert!(graph.join("resolution.delta").exists(), "edit {edit}");
        assert!(
            std::fs::read(graph.join("resolution.bin")).unwrap() == memo,
            "edit {edit}: the memo file was written again"
        );
    }
}

#[test]
fn a_burst_of_changes_gives_one_build() {
    let sandbox = Sandbox::with_fixture("python");
    // The directory exists, so it is watched from the start: files written into a
    // directory that appears during the burst, before its watch is added, are built but
    // give no events of their own (a race a loaded machine loses).
    sandbox.write("shop/burst/__init__.py", "");
    let watcher = Watcher::start(&sandbox, &["--debounce-ms", "300"], &[]);
    let builds = watcher.status()["builds"].as_u64().unwrap();
    // As a `git checkout` does: many files at once.
    for i in 0..200 {
        sandbox.write(
            &format!("shop/burst/m{i:03}.py"),
            format!("def burst_{i}():\n    return {i}\n"),
        );
    }
    let after = watcher.wait_until(|w| w["builds"].as_u64() > Some(builds) && w["state"] == "idle");
    // Quiet for longer than the debounce: no second build follows.
    std::thread::sleep(Duration::from_millis(1200));
    let settled = watcher.status();
    assert_eq!(settled["builds"], after["builds"], "{settled:#}");
    assert_eq!(settled["builds"].as_u64(), Some(builds + 1));
    assert_eq!(settled["last_build"]["outcome"], "published");
    assert!(settled["last_build"]["events"].as_u64().unwrap() >= 200);
    assert_eq!(
        frozen_symbol(&sandbox, "burst_199")["evidence"][0]["symbol"],
        "shop/burst/m199.py::burst_199"
    );
}

#[test]
fn ignored_files_never_trigger_a_build() {
    let sandbox = Sandbox::with_fixture("python");
    sandbox.write(".gitignore", "scratch/\n*.log\n");
    let watcher = Watcher::start(&sandbox, &["--debounce-ms", "100"], &[]);
    let before = watcher.status();
    sandbox.write("shop/.models.py.swp", "swap");
    sandbox.write("shop/models.py~", "backup");
    sandbox.write("shop/4913", "");
    std::fs::remove_file(sandbox.repo().join("shop/4913")).unwrap();
    sandbox.write("target/debug/gen.py", "def generated(): pass\n");
    sandbox.write("node_modules/pkg/index.js", "export const x = 1;\n");
    sandbox.write("scratch/notes.py", "def scratch(): pass\n");
    sandbox.write("run.log", "log line\n");
    sandbox.write("image.png", [0u8, 1, 2]);
    std::thread::sleep(Duration::from_millis(800));
    let after = watcher.status();
    assert_eq!(after["builds"], before["builds"], "{after:#}");
    assert_eq!(after["events"], before["events"], "{after:#}");
    assert!(after["ignored_events"].as_u64() > before["ignored_events"].as_u64());
}

#[test]
fn the_watcher_polls_when_asked_and_says_so() {
    let sandbox = Sandbox::with_fixture("python");
    let watcher = Watcher::start(
        &sandbox,
        &["--debounce-ms", "50"],
        &[("ATLAS_WATCH_POLL", "1")],
    );
    let status = watcher.status();
    assert_eq!(status["backend"], "poll");
    assert!(
        status["poll_reason"]
            .as_str()
            .unwrap()
            .contains("ATLAS_WATCH_POLL")
    );
    let builds = status["builds"].as_u64().unwrap();
    sandbox.write("shop/polled.py", "def seen_by_polling():\n    return 1\n");
    watcher.wait_until(|w| w["builds"].as_u64() > Some(builds) && w["state"] == "idle");
    assert_eq!(
        frozen_symbol(&sandbox, "seen_by_polling")["evidence"][0]["symbol"],
        "shop/polled.py::seen_by_polling"
    );
}

#[test]
fn a_killed_watch_build_leaves_the_committed_generation_and_the_next_start_recovers() {
    let sandbox = Sandbox::with_fixture("python");
    sandbox.atlas(&["build", "--no-search"]).success();
    let committed = sandbox.current();
    let mut watcher = Watcher::start(
        &sandbox,
        &["--debounce-ms", "50"],
        &[("ATLAS_INJECT_FAILURE", "stall-before-publish")],
    );
    sandbox.write("shop/late.py", "def after_the_kill():\n    return 1\n");
    watcher.wait_until(|w| w["state"] == "building");
    std::thread::sleep(Duration::from_millis(300));
    watcher.kill();

    assert_eq!(sandbox.current(), committed);
    let answer = frozen_symbol(&sandbox, "Cart");
    assert_eq!(answer["graph"]["fingerprint"], committed.as_str());
    let status = sandbox
        .atlas(&["status", "--format", "json"])
        .success()
        .json();
    assert_eq!(status["watch"]["state"], "stopped");

    // The next watcher starts with a build that picks the edit up.
    let _watcher = Watcher::start(&sandbox, &["--debounce-ms", "50"], &[]);
    assert_ne!(sandbox.current(), committed);
    assert_eq!(
        frozen_symbol(&sandbox, "after_the_kill")["evidence"][0]["symbol"],
        "shop/late.py::after_the_kill"
    );
}

#[test]
fn one_graph_has_one_watcher() {
    let sandbox = Sandbox::with_fixture("python");
    let _watcher = Watcher::start(&sandbox, &[], &[]);
    sandbox
        .atlas(&["watch", "--no-search"])
        .failure(5, "atlas-watch-running");
}

/// Deleting the graph directory under a running watcher deletes the lock it holds: the
/// watcher takes the lock again and builds the graph anew, unasked, so a second watcher
/// is still refused instead of building beside it.
#[test]
fn a_graph_directory_deleted_under_its_watcher_is_rebuilt_and_keeps_one_watcher() {
    let sandbox = Sandbox::with_fixture("python");
    let watcher = Watcher::start(&sandbox, &["--debounce-ms", "100"], &[]);
    std::fs::remove_dir_all(sandbox.graph()).unwrap();
    watcher.wait_until(|w| w["state"] == "idle" && w["published"].as_u64() >= Some(2));
    let cart = frozen_symbol(&sandbox, "Cart");
    assert_eq!(
        cart["intent"]["anchors"][0]["symbol"], "shop/models.py::Cart",
        "{cart:#}"
    );
    sandbox
        .atlas(&["watch", "--no-search"])
        .failure(5, "atlas-watch-running");
    // And it still follows edits.
    let status = watcher.status();
    let after = append_and_wait(
        &sandbox,
        &watcher,
        &status,
        "\n\ndef rebuilt():\n    return 1\n",
    );
    assert_eq!(after["last_build"]["outcome"], "published", "{after:#}");
}

#[test]
fn a_repository_moved_under_its_watcher_is_not_made_again_at_its_old_path() {
    // The graph lives in the repository: moving the repository takes the graph (and the
    // watcher's lock) away. The watcher used to take the lock again where it had been,
    // making the old path anew, and publish an empty graph there.
    let sandbox = Sandbox::with_fixture("python");
    let mut watcher = Watcher::start(&sandbox, &["--debounce-ms", "100"], &[]);
    let current = std::fs::read_to_string(sandbox.graph().join("CURRENT")).unwrap();
    let moved = sandbox.path().join("moved");
    std::fs::rename(sandbox.repo(), &moved).unwrap();
    // The lock is checked every second; a build would follow at once.
    std::thread::sleep(Duration::from_millis(3500));
    let made_again = sandbox.repo().exists();
    watcher.kill();
    assert!(!made_again, "{} was made again", sandbox.repo().display());
    assert_eq!(
        std::fs::read_to_string(moved.join(".agent-spec/graph/CURRENT")).unwrap(),
        current
    );
}

#[test]
fn a_watching_daemon_answers_an_edit_without_scanning_the_tree() {
    let sandbox = Sandbox::with_fixture("python");
    sandbox.atlas(&["build", "--no-search"]).success();
    let mut daemon = sandbox.spawn_atlas(
        &["daemon", "start", "--foreground"],
        &[("ATLAS_WATCH", "1"), ("ATLAS_WATCH_DEBOUNCE_MS", "100")],
    );
    let started = Instant::now();
    let status = loop {
        let status = sandbox
            .atlas(&["daemon", "status", "--format", "json"])
            .json();
        if status["pid"].is_u64() && status["watch"]["builds"].as_u64() >= Some(1) {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{status:#}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let builds = status["watch"]["builds"].as_u64().unwrap();
    sandbox.write(
        "shop/daemon_seen.py",
        "def daemon_sees_it():\n    return 1\n",
    );
    let started = Instant::now();
    loop {
        let status = sandbox
            .atlas(&["daemon", "status", "--format", "json"])
            .json();
        if status["watch"]["builds"].as_u64() > Some(builds) && status["watch"]["state"] == "idle" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{status:#}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Not frozen: the daemon trusts its watcher instead of scanning the tree.
    let run = sandbox
        .atlas(&[
            "context",
            "daemon_sees_it",
            "--profile",
            "symbol",
            "--execution",
            "worker",
            "--format",
            "json",
        ])
        .success();
    let answer = run.json();
    assert_eq!(
        answer["evidence"][0]["symbol"],
        "shop/daemon_seen.py::daemon_sees_it"
    );
    assert_eq!(answer["graph"]["refreshed"], false);
    sandbox.atlas(&["daemon", "stop"]).success();
    let _ = daemon.wait();
}

#[test]
fn a_directory_moved_into_the_tree_is_watched_and_built() {
    let sandbox = Sandbox::with_fixture("python");
    let watcher = Watcher::start(&sandbox, &["--debounce-ms", "100"], &[]);
    let builds = watcher.status()["builds"].as_u64().unwrap();
    // Prepared outside the tree, then moved in whole: a rename, no `Create` of its own.
    let outside = sandbox.path().join("staged");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("moved.py"), "def moved_in():\n    return 1\n").unwrap();
    std::fs::rename(&outside, sandbox.repo().join("shop/staged")).unwrap();
    let after = watcher.wait_until(|w| w["builds"].as_u64() > Some(builds) && w["state"] == "idle");
    assert_eq!(
        frozen_symbol(&sandbox, "moved_in")["evidence"][0]["symbol"],
        "shop/staged/moved.py::moved_in"
    );
    // And it is watched from now on.
    let builds = after["builds"].as_u64().unwrap();
    sandbox.write(
        "shop/staged/moved.py",
        "def moved_in():\n    return 1\n\n\ndef edited_later():\n    return 2\n",
    );
    watcher.wait_until(|w| w["builds"].as_u64() > Some(builds) && w["state"] == "idle");
    assert_eq!(
        frozen_symbol(&sandbox, "edited_later")["evidence"][0]["symbol"],
        "shop/staged/moved.py::edited_later"
    );
}

#[test]
fn a_directory_moved_away_and_made_again_is_watched_down_to_its_new_subdirectories() {
    let sandbox = Sandbox::with_fixture("python");
    sandbox.write("shop/gen/old/a.py", "def old_one():\n    return 1\n");
    let watcher = Watcher::start(&sandbox, &["--debounce-ms", "100"], &[]);
    let settle = |builds: u64| {
        watcher.wait_until(|w| w["builds"].as_u64() > Some(builds) && w["state"] == "idle")["builds"]
            .as_u64()
            .unwrap()
    };
    let builds = watcher.status()["builds"].as_u64().unwrap();
    std::fs::rename(
        sandbox.repo().join("shop/gen"),
        sandbox.path().join("gen-away"),
    )
    .unwrap();
    let builds = settle(builds);
    // The same names again: `shop/gen`, then `shop/gen/old` (watched before the move).
    std::fs::create_dir_all(sandbox.repo().join("shop/gen/old")).unwrap();
    // The directories' own events make a build (it finds nothing new); then the file.
    let builds = settle(builds);
    sandbox.write("shop/gen/old/b.py", "def new_one():\n    return 2\n");
    settle(builds);
    assert_eq!(
        frozen_symbol(&sandbox, "new_one")["evidence"][0]["symbol"],
        "shop/gen/old/b.py::new_one"
    );
}

#!/usr/bin/env python3
"""Load on the warm daemon (issue 14): workers, bounded admission and a watcher together.

  python3 bench/daemon_load.py REPO [--atlas BIN] [--clients 8] [--seconds 60]
      [--workers 2] [--queue 16] [--edit-every 2] [--edit FILE ...] [--warm-runs 30]

1. Builds REPO's graph (with the search index) into a temporary graph directory.
2. Warm figures, sequential and unloaded: whole-process `atlas context --execution worker`
   (client wall time) and in-daemon run time (`run_ms` of the execution record) per
   profile, and the in-daemon time of each query of the profile's mix.
3. Load: --clients threads each run `atlas context … --execution worker` in a loop for
   --seconds, over a fixed query list per profile, while an editor appends a comment to
   one of the --edit files every --edit-every seconds and the daemon's watcher
   (`--watch`, debounce 300 ms) rebuilds. Every answer is checked: valid JSON whose
   graph fingerprint is a generation the store published (a torn read would fail this);
   every request must end with a known outcome (a lost request would hang or exit
   otherwise). Reports p50/p95/p99 whole-process latency per profile, the count of each
   outcome, failed/lost/torn counts, builds the watcher ran and the daemon's peak RSS.
4. Burst: 10 × --queue raw socket requests at once (a slow query each); every excess one
   must be answered `busy` at once, none may hang, none may be lost.

The edited files are restored at the end. Prints one JSON document.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(HERE, "..", "target", "release", "atlas")

QUERIES = {
    "symbol": ["Add.flatten", "Basic.subs", "Expr.expand", "Symbol",
               "how are rational numbers simplified"],
    "flow": ["Basic.subs calls", "Add.flatten calls", "Expr.expand calls",
             "Mul.flatten calls", "integrate calls"],
    "architecture": ["sympy/core", "sympy/matrices", "sympy/solvers"],
    "impact": ["sympy/core/add.py", "Basic.subs", "sympy/core/numbers.py"],
}


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}
    env.update(extra or {})
    return env


def execution_record(stderr):
    for line in stderr.splitlines():
        if line.startswith('{"atlas_execution"'):
            return json.loads(line)["atlas_execution"]["attempts"]
    return None


def worker_query(args, repo, graph, profile, query):
    cmd = [args.atlas, "--code", repo, "--graph", graph, "context", query,
           "--profile", profile, "--execution", "worker", "--format", "json"]
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=120)
    wall = time.perf_counter() - start
    return wall, out


def peak_rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--atlas", default=DEFAULT_BIN)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--queue", type=int, default=16)
    parser.add_argument("--edit-every", type=float, default=2.0)
    parser.add_argument("--warm-runs", type=int, default=30)
    parser.add_argument("--edit", action="append",
                        default=["sympy/core/add.py", "sympy/core/mul.py"])
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    graph = tempfile.mkdtemp(prefix="atlas-load-graph-")
    subprocess.run([args.atlas, "--code", repo, "--graph", graph, "build", "--no-progress"],
                   check=True, capture_output=True, env=clean_env())

    daemon = subprocess.Popen(
        [args.atlas, "--code", repo, "--graph", graph, "daemon", "start", "--foreground",
         "--query-workers", str(args.workers), "--queue", str(args.queue), "--watch"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=clean_env({"ATLAS_WATCH_DEBOUNCE_MS": "300"}))
    originals = {}
    result = {"repo": repo, "clients": args.clients, "seconds": args.seconds,
              "workers": args.workers, "queue": args.queue}
    try:
        status = None
        for _ in range(600):
            out = subprocess.run([args.atlas, "--code", repo, "--graph", graph, "daemon",
                                  "status", "--format", "json"], capture_output=True,
                                 text=True, env=clean_env())
            status = json.loads(out.stdout) if out.stdout.strip() else {}
            if status.get("running") and (status.get("watch") or {}).get("builds", 0) >= 1:
                break
            time.sleep(0.1)

        # Warm, unloaded: whole-process and in-daemon latency per profile.
        warm = {}
        for profile, queries in QUERIES.items():
            for q in queries:  # first touch of each query
                worker_query(args, repo, graph, profile, q)
            walls, runs = [], []
            by_query = {q: [] for q in queries}
            for i in range(args.warm_runs):
                query = queries[i % len(queries)]
                wall, out = worker_query(args, repo, graph, profile, query)
                record = execution_record(out.stderr)
                if out.returncode == 0 and record and record[0]["outcome"] == "success":
                    walls.append(wall * 1000)
                    runs.append(record[0]["run_ms"])
                    by_query[query].append(record[0]["run_ms"])
            warm[profile] = {
                "whole_process_ms_p50": round(percentile(walls, 50), 2),
                "whole_process_ms_p95": round(percentile(walls, 95), 2),
                "in_daemon_ms_p50": round(percentile(runs, 50), 2),
                "in_daemon_ms_p95": round(percentile(runs, 95), 2),
                "n": len(walls),
                # Which queries make the profile's tail.
                "in_daemon_ms_by_query": {
                    q: {"p50": round(percentile(r, 50), 2), "p95": round(percentile(r, 95), 2),
                        "n": len(r)}
                    for q, r in by_query.items() if r
                },
            }
        result["warm"] = warm

        # Load with edits.
        published = set()
        generations = os.path.join(graph, "generations")
        lock = threading.Lock()
        latencies = {p: [] for p in QUERIES}
        outcomes = {}
        problems = {"failed": 0, "lost": 0, "torn": 0, "nonzero_exit": 0}
        stop = time.monotonic() + args.seconds

        def note_generations():
            try:
                published.update(os.listdir(generations))
            except OSError:
                pass

        def client(index):
            i = index
            profiles = list(QUERIES)
            while time.monotonic() < stop:
                profile = profiles[i % len(profiles)]
                query = QUERIES[profile][(i // len(profiles)) % len(QUERIES[profile])]
                i += 1
                try:
                    wall, out = worker_query(args, repo, graph, profile, query)
                except subprocess.TimeoutExpired:
                    with lock:
                        problems["lost"] += 1
                    continue
                record = execution_record(out.stderr)
                with lock:
                    if not record:
                        problems["lost"] += 1
                        continue
                    outcome = record[0]["outcome"]
                    outcomes[outcome] = outcomes.get(outcome, 0) + 1
                    if outcome == "failed":
                        problems["failed"] += 1
                    if outcome in ("success", "degraded"):
                        latencies[profile].append(wall * 1000)
                        if out.returncode != 0:
                            problems["nonzero_exit"] += 1
                        else:
                            note_generations()
                            try:
                                fp = json.loads(out.stdout)["graph"]["fingerprint"]
                                if fp not in published:
                                    problems["torn"] += 1
                            except (ValueError, KeyError):
                                problems["torn"] += 1

        edits = 0

        def editor():
            nonlocal edits
            while time.monotonic() < stop:
                path = os.path.join(repo, args.edit[edits % len(args.edit)])
                if path not in originals:
                    with open(path, "rb") as f:
                        originals[path] = f.read()
                with open(path, "ab") as f:
                    f.write(b"\n# atlas load edit %d\n" % edits)
                edits += 1
                time.sleep(args.edit_every)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
        threads.append(threading.Thread(target=editor))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(1.5)
        out = subprocess.run([args.atlas, "--code", repo, "--graph", graph, "daemon",
                              "status", "--format", "json"], capture_output=True, text=True,
                             env=clean_env())
        status = json.loads(out.stdout)
        result["load"] = {
            "requests": sum(outcomes.values()) + problems["lost"],
            "outcomes": outcomes,
            "problems": problems,
            "edits": edits,
            "watch": status.get("watch"),
            "per_profile_ms": {
                p: {"n": len(v), "p50": round(percentile(v, 50) or 0, 1),
                    "p95": round(percentile(v, 95) or 0, 1),
                    "p99": round(percentile(v, 99) or 0, 1)}
                for p, v in latencies.items()
            },
            "daemon_outcomes": status.get("outcomes"),
            "daemon_peak_rss_mib": peak_rss_mib(daemon.pid),
        }

        # Burst: 10 × the queue at once, raw socket clients, a flow question each.
        burst_n = 10 * args.queue
        burst = []
        sock_path = os.path.join(graph, "daemon.sock")
        barrier = threading.Barrier(burst_n)

        def raw(i):
            request = {"op": "context", "v": 1, "query": QUERIES["flow"][i % 5],
                       "profile": "flow", "max_bytes": None, "min_score": None,
                       "expect_graph": None, "after": None, "frozen": True,
                       "no_build": False, "format": "json", "code_arg": None,
                       "graph_arg": None, "code_root": repo, "deadline_ms": None}
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(120)
            barrier.wait()
            start = time.perf_counter()
            try:
                s.connect(sock_path)
                try:
                    s.sendall((json.dumps(request) + "\n").encode())
                except BrokenPipeError:
                    # Refused (`busy`) before the daemon read the request: the reply is
                    # there to read all the same (docs/CLI.md, the protocol).
                    pass
                data = b""
                while not data.endswith(b"\n"):
                    chunk = s.recv(1 << 20)
                    if not chunk:
                        break
                    data += chunk
                reply = json.loads(data)
                burst.append((reply["outcome"], (time.perf_counter() - start) * 1000))
            except (OSError, ValueError) as e:
                burst.append(("lost:" + type(e).__name__, (time.perf_counter() - start) * 1000))
            finally:
                s.close()

        threads = [threading.Thread(target=raw, args=(i,)) for i in range(burst_n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        counts = {}
        for outcome, _ in burst:
            counts[outcome] = counts.get(outcome, 0) + 1
        busy = [ms for o, ms in burst if o == "busy"]
        answered = [ms for o, ms in burst if o in ("success", "degraded")]
        result["burst"] = {
            "requests": burst_n,
            "replies": len(burst),
            "outcomes": counts,
            "busy_reply_ms_p50": round(percentile(busy, 50) or 0, 2),
            "busy_reply_ms_max": round(max(busy) if busy else 0, 2),
            "answered_ms_max": round(max(answered) if answered else 0, 1),
        }
        result["daemon_peak_rss_mib"] = peak_rss_mib(daemon.pid)
    finally:
        subprocess.run([args.atlas, "--code", repo, "--graph", graph, "daemon", "stop"],
                       capture_output=True, env=clean_env())
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
        for path, data in originals.items():
            with open(path, "wb") as f:
                f.write(data)
        shutil.rmtree(graph, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

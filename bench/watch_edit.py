#!/usr/bin/env python3
"""The watcher's edit path: how long `atlas watch` takes to publish after a one-file edit.

Usage: bench/watch_edit.py REPO --edit PATH [--edits N] [--rounds R] [--atlas BIN]
                           [--baseline BIN] [--gap-s S] [--search]

Each run cold-builds a fresh graph directory, starts `atlas watch --no-search
--debounce-ms 100 --format json` on it, appends a comment to PATH N times, GAP seconds
apart, and reads the watcher's report of each build (`latency_ms`: from the end of the
debounce to the commit). The watcher's start-up build and the first edit's build of a
run are dropped: they warm the watcher's memory. With --baseline, runs alternate between the two binaries (a, b, b, a, ...), so
both sides see the same hours of this shared machine. Prints medians per run and over
all runs, and each watcher's peak RSS (VmHWM) before it is stopped. With --search the
cold build and the watcher also publish the search index, as `atlas watch` does by
default.
"""
import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(HERE, "..", "target", "release", "atlas")


NO_SEARCH = ["--no-search"]  # emptied by --search


def one_run(atlas, repo, edit_path, edits, gap_s):
    """Latencies (ms) of the watcher's builds after the first, and its peak RSS (MiB)."""
    graph = tempfile.mkdtemp(prefix="atlas-watch-bench-")
    cold = subprocess.run(
        [atlas, "--code", repo, "--graph", graph, "build", "--no-progress"] + NO_SEARCH,
        capture_output=True, text=True)
    if cold.returncode != 0:
        sys.exit(f"cold build failed:\n{cold.stderr}")
    watch = subprocess.Popen(
        [atlas, "--code", repo, "--graph", graph, "watch"] + NO_SEARCH +
        ["--debounce-ms", "100", "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in watch.stdout], daemon=True).start()
    with open(edit_path, "rb") as f:
        original = f.read()
    comment = b"#" if edit_path.endswith(".py") else b"//"
    builds = []
    try:
        # The watcher's own start: one build of the tree as it is (`unchanged`).
        first = lines.get(timeout=120)
        if not first.startswith("{"):
            sys.exit(f"the watcher did not report its first build: {first}")
        time.sleep(gap_s)
        for i in range(edits):
            with open(edit_path, "wb") as f:
                f.write(original + b"\n" + comment + b" atlas watch bench %d\n" % i)
            deadline = time.time() + 60
            while True:
                line = lines.get(timeout=max(deadline - time.time(), 0.1))
                if line.startswith("{"):
                    builds.append(json.loads(line))
                    break
            time.sleep(gap_s)
        with open(f"/proc/{watch.pid}/status") as f:
            hwm = next(int(l.split()[1]) for l in f if l.startswith("VmHWM"))
    finally:
        watch.terminate()
        watch.wait()
        with open(edit_path, "wb") as f:
            f.write(original)
        shutil.rmtree(graph, ignore_errors=True)
    failed = [b for b in builds if b["outcome"] != "published"]
    if failed:
        sys.exit(f"a watched build did not publish: {failed[0]}")
    return [b["latency_ms"] for b in builds[1:]], round(hwm / 1024, 1), builds[-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--edit", required=True, help="file (relative to REPO) to edit")
    parser.add_argument("--edits", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--gap-s", type=float, default=2.5)
    parser.add_argument("--atlas", default=DEFAULT_BIN)
    parser.add_argument("--baseline", help="another atlas binary, run alternately")
    parser.add_argument("--search", action="store_true", help="publish the search index too")
    args = parser.parse_args()
    if args.search:
        NO_SEARCH.clear()
    repo = os.path.abspath(args.repo)
    edit_path = os.path.join(repo, args.edit)
    sides = {"atlas": args.atlas}
    if args.baseline:
        sides = {"baseline": args.baseline, "atlas": args.atlas}
    order = list(sides)
    runs = {name: [] for name in sides}
    for r in range(args.rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            latencies, hwm, last = one_run(sides[name], repo, edit_path, args.edits, args.gap_s)
            runs[name].append({"median_ms": round(statistics.median(latencies), 1),
                               "latencies_ms": latencies, "peak_rss_mib": hwm,
                               "facts_from_memory": last.get("facts_from_memory", 0)})
    out = {"repo": repo, "edit_file": args.edit, "edits": args.edits, "rounds": args.rounds}
    for name, rs in runs.items():
        out[name] = {
            "binary": sides[name],
            "median_ms": round(statistics.median(l for r in rs for l in r["latencies_ms"]), 1),
            "runs": rs,
        }
    if args.baseline:
        out["ratio_baseline_over_atlas"] = round(
            out["baseline"]["median_ms"] / out["atlas"]["median_ms"], 2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Build benchmark: cold build, peak RSS, graph size and one-file-edit republish time.

Usage: bench/build.py REPO [--runs N] [--edit PATH] [--atlas BIN]

Runs the release binary (cargo build --release first) as a whole process, the way an
agent or CI would, and prints medians. The machine is shared and noisy: quote medians.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(HERE, "..", "target", "release", "atlas")


def run_build(atlas, repo, graph):
    """Runs one build; returns (wall seconds, peak RSS KiB, report)."""
    fd, timing = tempfile.mkstemp()
    os.close(fd)
    cmd = ["/usr/bin/time", "-f", "%e %M", "-o", timing, atlas, "--code", repo,
           "--graph", graph, "build", "--format", "json", "--no-progress", "--no-search"]
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"build failed ({out.returncode}):\n{out.stderr}")
    with open(timing) as f:
        rss_kib = int(f.read().split()[-1])
    os.unlink(timing)
    return wall, rss_kib, json.loads(out.stdout)


def pick_edit_file(repo, report_files):
    for ext in (".py", ".rs", ".ts", ".go", ".java", ".js"):
        for root, _, names in os.walk(repo):
            if "/." in root:
                continue
            for name in sorted(names):
                if name.endswith(ext):
                    return os.path.join(root, name)
    sys.exit("no source file to edit")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--edit", help="file (relative to REPO) to edit for the republish test")
    parser.add_argument("--atlas", default=DEFAULT_BIN)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    graph = tempfile.mkdtemp(prefix="atlas-bench-graph-")

    cold = []
    for _ in range(args.runs):
        shutil.rmtree(graph, ignore_errors=True)
        cold.append(run_build(args.atlas, repo, graph))
    walls = [c[0] for c in cold]
    report = cold[-1][2]
    wall = statistics.median(walls)
    rss = statistics.median(c[1] for c in cold)

    edit_path = os.path.join(repo, args.edit) if args.edit else pick_edit_file(repo, report)
    with open(edit_path, "rb") as f:
        original = f.read()
    comment = b"#" if edit_path.endswith(".py") else b"//"
    edits = []
    unchanged = []
    try:
        for i in range(args.runs):
            with open(edit_path, "wb") as f:
                f.write(original + b"\n" + comment + b" atlas bench edit %d\n" % i)
            w, _, r = run_build(args.atlas, repo, graph)
            assert r["parsed"] == 1, r
            edits.append(w)
            w, _, r = run_build(args.atlas, repo, graph)
            assert r["unchanged"], r
            unchanged.append(w)
    finally:
        with open(edit_path, "wb") as f:
            f.write(original)
    shutil.rmtree(graph, ignore_errors=True)

    result = {
        "repo": repo,
        "runs": args.runs,
        "files": report["files"],
        "lines": report["lines"],
        "symbols": report["symbols"],
        "edges": report["edges"],
        "cold_wall_s_median": round(wall, 4),
        "cold_wall_s_all": [round(w, 4) for w in walls],
        "files_per_s": round(report["files"] / wall),
        "lines_per_s": round(report["lines"] / wall),
        "peak_rss_mib_median": round(rss / 1024, 1),
        "graph_bytes": report["graph_bytes"],
        "graph_bytes_per_symbol": round(report["graph_bytes"] / max(report["symbols"], 1), 1),
        "edit_file": os.path.relpath(edit_path, repo),
        "republish_after_edit_s_median": round(statistics.median(edits), 4),
        "noop_rebuild_s_median": round(statistics.median(unchanged), 4),
        "internal_timings_ms_last_cold": report["timings_ms"],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Search benchmark: index + embed time on top of the graph build, and `atlas search`
latency and peak RSS as a whole process.

Usage: bench/search.py REPO --query Q [--query Q …] [--runs N] [--atlas BIN [--atlas BIN2 …]]
                       [--edit FILE]

With several binaries (each with its own graph directory) the latency runs are
interleaved — A, B, A, B — so that a before/after comparison shares the machine's noise.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(HERE, "..", "target", "release", "atlas")


def build_cmd(binary, repo, graph):
    return [binary, "--code", repo, "--graph", graph, "build", "--no-progress", "--format", "json"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("repo")
    p.add_argument("--query", action="append", required=True)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--atlas", action="append")
    p.add_argument("--edit", help="repo-relative file to touch for the incremental update (restored after)")
    a = p.parse_args()
    repo = os.path.abspath(a.repo)
    binaries = [os.path.abspath(b) for b in (a.atlas or [DEFAULT_BIN])]
    state = {}
    for binary in binaries:
        graph = tempfile.mkdtemp(prefix="atlas-bench-search-")
        build = build_cmd(binary, repo, graph)
        graph_only = json.loads(subprocess.run(build + ["--no-search"], check=True, capture_output=True, text=True).stdout)
        # Unchanged graph: this build only adds the search index (BM25 + embeddings).
        with_search = json.loads(subprocess.run(build, check=True, capture_output=True, text=True).stdout)
        state[binary] = {"graph": graph, "graph_only": graph_only, "with_search": with_search,
                         "walls": [], "rss": [], "updates": []}
    for query in a.query:
        for _ in range(a.runs):
            for binary in binaries:
                s = state[binary]
                fd, timing = tempfile.mkstemp()
                os.close(fd)
                cmd = ["/usr/bin/time", "-f", "%M", "-o", timing, binary, "--code", repo, "--graph", s["graph"],
                       "search", query, "--top-k", "10", "--frozen", "--format", "json"]
                start = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                s["walls"].append((time.perf_counter() - start) * 1000)
                s["rss"].append(int(open(timing).read().split()[-1]) / 1024)
                os.unlink(timing)
    # Incremental update: one file edited, the graph rebuilt without the index, then the
    # index alone derived from the previous generation's (median of 3 edits).
    if a.edit:
        path = os.path.join(repo, a.edit)
        original = open(path, "rb").read()
        try:
            for n in range(3):
                with open(path, "wb") as f:
                    f.write(original + f"\n# atlas bench edit {n}\n".encode())
                for binary in binaries:
                    build = build_cmd(binary, repo, state[binary]["graph"])
                    subprocess.run(build + ["--no-search"], check=True, capture_output=True)
                    out = json.loads(subprocess.run(build, check=True, capture_output=True, text=True).stdout)
                    state[binary]["updates"].append(out["timings_ms"]["search"])
        finally:
            with open(path, "wb") as f:
                f.write(original)
    result = {"repo": repo, "binaries": {}}
    for binary, s in state.items():
        walls = sorted(s["walls"])
        result["binaries"][binary] = {
            "symbols": s["graph_only"]["symbols"],
            "graph_build_ms": s["graph_only"]["timings_ms"]["total"],
            "search_index_ms": s["with_search"]["timings_ms"]["search"],
            "search_index_update_ms_median": statistics.median(s["updates"]) if s["updates"] else None,
            "search_process_ms_p50": round(statistics.median(walls), 2),
            "search_process_ms_p95": round(walls[max(0, int(len(walls) * 0.95) - 1)], 2),
            "search_peak_rss_mib_median": round(statistics.median(s["rss"]), 1),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

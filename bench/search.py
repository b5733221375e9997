#!/usr/bin/env python3
"""Search benchmark: index + embed time on top of the graph build, and `atlas search`
latency and peak RSS as a whole process.

Usage: bench/search.py REPO --query Q [--query Q …] [--runs N] [--atlas BIN] [--edit FILE]
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("repo")
    p.add_argument("--query", action="append", required=True)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--atlas", default=DEFAULT_BIN)
    p.add_argument("--edit", help="repo-relative file to touch for the incremental update (restored after)")
    a = p.parse_args()
    repo = os.path.abspath(a.repo)
    graph = tempfile.mkdtemp(prefix="atlas-bench-search-")
    build = [a.atlas, "--code", repo, "--graph", graph, "build", "--no-progress", "--format", "json"]
    graph_only = json.loads(subprocess.run(build + ["--no-search"], check=True, capture_output=True, text=True).stdout)
    # Unchanged graph: this build only adds the search index (BM25 + embeddings).
    with_search = json.loads(subprocess.run(build, check=True, capture_output=True, text=True).stdout)
    walls, rss = [], []
    for query in a.query:
        for _ in range(a.runs):
            fd, timing = tempfile.mkstemp()
            os.close(fd)
            cmd = ["/usr/bin/time", "-f", "%M", "-o", timing, a.atlas, "--code", repo, "--graph", graph,
                   "search", query, "--top-k", "10", "--frozen", "--format", "json"]
            start = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            walls.append((time.perf_counter() - start) * 1000)
            rss.append(int(open(timing).read().split()[-1]) / 1024)
            os.unlink(timing)
    # Incremental update: one file edited, the graph rebuilt without the index, then the
    # index alone derived from the previous generation's (median of 3 edits).
    updates = []
    if a.edit:
        path = os.path.join(repo, a.edit)
        original = open(path, "rb").read()
        try:
            for n in range(3):
                with open(path, "wb") as f:
                    f.write(original + f"\n# atlas bench edit {n}\n".encode())
                subprocess.run(build + ["--no-search"], check=True, capture_output=True)
                out = json.loads(subprocess.run(build, check=True, capture_output=True, text=True).stdout)
                updates.append(out["timings_ms"]["search"])
        finally:
            with open(path, "wb") as f:
                f.write(original)
    print(json.dumps({
        "repo": repo,
        "symbols": graph_only["symbols"],
        "graph_build_ms": graph_only["timings_ms"]["total"],
        "search_index_ms": with_search["timings_ms"]["search"],
        "search_index_update_ms_median": statistics.median(updates) if updates else None,
        "search_process_ms_p50": round(statistics.median(walls), 2),
        "search_process_ms_p95": round(sorted(walls)[int(len(walls) * 0.95) - 1], 2),
        "search_peak_rss_mib_median": round(statistics.median(rss), 1),
    }, indent=2))


if __name__ == "__main__":
    main()

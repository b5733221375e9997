#!/usr/bin/env python3
"""Context latency benchmark: `atlas context --frozen` as a whole process, per profile.

Usage: bench/context.py REPO --query Q [--query Q …] [--runs N] [--atlas BIN]

Builds the graph once (release binary), then runs every query under every profile N
times as a separate process, the way an agent calls it. Prints p50/p95 wall time per
profile and the warm in-process retrieval + projection time taken from the receipts.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(HERE, "..", "target", "release", "atlas")
PROFILES = ["symbol", "flow", "architecture", "impact"]


def percentile(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--query", action="append", required=True)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--atlas", default=DEFAULT_BIN)
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    graph = tempfile.mkdtemp(prefix="atlas-bench-context-")
    subprocess.run([args.atlas, "--code", repo, "--graph", graph, "build", "--no-progress"],
                   check=True, capture_output=True)
    result = {"repo": repo, "runs": args.runs, "queries": args.query, "profiles": {}}
    for profile in PROFILES:
        walls, warm, failures = [], [], 0
        for query in args.query:
            for _ in range(args.runs):
                cmd = [args.atlas, "--code", repo, "--graph", graph, "context", query,
                       "--profile", profile, "--frozen", "--format", "json"]
                start = time.perf_counter()
                out = subprocess.run(cmd, capture_output=True, text=True)
                walls.append((time.perf_counter() - start) * 1000)
                if out.returncode != 0:
                    failures += 1
                    continue
                t = json.loads(out.stdout)["receipt"]["timings_ms"]
                warm.append(t["retrieval"] + t["projection"])
        result["profiles"][profile] = {
            "process_ms_p50": round(statistics.median(walls), 2),
            "process_ms_p95": round(percentile(walls, 0.95), 2),
            "warm_retrieval_projection_ms_p50": round(statistics.median(warm), 3) if warm else None,
            "failed_runs": failures,
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())

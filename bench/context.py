#!/usr/bin/env python3
"""Context latency benchmark: `atlas context --frozen` as a whole process, per profile.

Usage: bench/context.py REPO --query Q [--query Q …] [--runs N] [--profile P …]
                        [--atlas BIN [--atlas BIN2 …]]

Builds the graph once per binary (each binary its own graph directory), then runs every
query under every profile N times as a separate process, the way an agent calls it.
With several binaries the runs are interleaved (binary A, binary B, A, B, …), so that a
comparison shares the machine's noise. Prints p50/p95 wall time per binary and profile,
the warm in-process retrieval + projection time taken from the receipts, and failures
by error code.
"""
import argparse
import collections
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
    parser.add_argument("--profile", action="append", choices=PROFILES)
    parser.add_argument("--atlas", action="append")
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    binaries = [os.path.abspath(b) for b in (args.atlas or [DEFAULT_BIN])]
    profiles = args.profile or PROFILES
    graphs = {}
    for binary in binaries:
        graphs[binary] = tempfile.mkdtemp(prefix="atlas-bench-context-")
        subprocess.run([binary, "--code", repo, "--graph", graphs[binary], "build", "--no-progress"],
                       check=True, capture_output=True)
    samples = {b: {p: {"walls": [], "warm": [], "errors": collections.Counter()} for p in profiles}
               for b in binaries}
    for profile in profiles:
        for query in args.query:
            for _ in range(args.runs):
                for binary in binaries:
                    s = samples[binary][profile]
                    cmd = [binary, "--code", repo, "--graph", graphs[binary], "context", query,
                           "--profile", profile, "--frozen", "--format", "json"]
                    start = time.perf_counter()
                    out = subprocess.run(cmd, capture_output=True, text=True)
                    s["walls"].append((time.perf_counter() - start) * 1000)
                    try:
                        doc = json.loads(out.stdout)
                    except ValueError:
                        doc = {}
                    if out.returncode != 0:
                        s["errors"][doc.get("error", {}).get("code", f"exit {out.returncode}")] += 1
                        continue
                    t = doc["receipt"]["timings_ms"]
                    s["warm"].append(t["retrieval"] + t["projection"])
    result = {"repo": repo, "runs": args.runs, "queries": args.query, "binaries": {}}
    for binary in binaries:
        result["binaries"][binary] = {
            profile: {
                "process_ms_p50": round(statistics.median(s["walls"]), 2),
                "process_ms_p95": round(percentile(s["walls"], 0.95), 2),
                "warm_retrieval_projection_ms_p50":
                    round(statistics.median(s["warm"]), 3) if s["warm"] else None,
                "failed_runs": dict(s["errors"]),
            }
            for profile, s in samples[binary].items()
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())

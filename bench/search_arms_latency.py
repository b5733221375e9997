#!/usr/bin/env python3
"""`atlas search` latency with and without one arm, interleaved, on a built graph.

Usage: bench/search_arms_latency.py REPO GRAPH
           (--without bm25,vector,graph | --env NAME=VALUE | --baseline BIN)
           [--query Q …] [--rounds N] [--atlas BIN]

Runs each query as a whole process (`--frozen`), alternating the default and the other side
(`ATLAS_SEARCH_ARMS=<--without>`, the variable `--env` sets, or another binary on the same
graph) every round, and prints both medians.
"""
import argparse
import os
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(HERE, "..", "target", "release", "atlas")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("repo")
    p.add_argument("graph")
    p.add_argument("--without", help="the ATLAS_SEARCH_ARMS of the other side")
    p.add_argument("--env", help="NAME=VALUE of the other side (`ATLAS_SEARCH_ALLOCATION=file`)")
    p.add_argument("--query", action="append")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--atlas", default=DEFAULT_BIN)
    p.add_argument("--baseline", help="another binary, run with the default environment")
    args = p.parse_args()
    queries = args.query or [
        "Add.flatten returns wrong order",
        "matrix determinant of a symbolic matrix is slow",
        "`simplify` hangs on trig expressions with `Piecewise`",
    ]
    if sum(map(bool, (args.without, args.env, args.baseline))) != 1:
        raise SystemExit("give one of --without, --env and --baseline")
    other = args.baseline or args.env or f"ATLAS_SEARCH_ARMS={args.without}"
    times = {"default": [], other: []}
    for r in range(args.rounds):
        sides = list(times) if r % 2 == 0 else list(times)[::-1]
        for side in sides:
            env, binary = dict(os.environ), args.atlas
            if side != "default" and args.baseline:
                binary = args.baseline
            elif side != "default":
                name, value = side.split("=", 1)
                env[name] = value
            for q in queries:
                start = time.perf_counter()
                out = subprocess.run([binary, "search", q, "--code", args.repo, "--graph",
                                      args.graph, "--frozen", "--format", "json"],
                                     capture_output=True, env=env)
                times[side].append(time.perf_counter() - start)
                if out.returncode != 0:
                    raise SystemExit(out.stderr.decode()[-500:])
    for side, t in times.items():
        print(f"{side}: p50 {statistics.median(t) * 1000:.1f} ms over {len(t)} runs")


if __name__ == "__main__":
    main()

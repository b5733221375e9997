#!/usr/bin/env python3
"""How fast a warm daemon follows a new generation.

Usage: bench/daemon_follow.py REPO --edit PATH [--rounds N] [--atlas BIN] [--baseline BIN]

For each binary: build REPO into a graph directory of its own and start a daemon on it.
Then, per round: append a comment to PATH, rebuild every graph with `atlas build`, and
time two worker queries on each daemon: the first after the new generation (the daemon
opens and validates it) and the next (warm). Sides run interleaved; medians printed.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(HERE, "..", "target", "release", "atlas")
QUERY = ["context", "Add.flatten", "--profile", "symbol", "--execution", "worker",
         "--format", "json", "--frozen"]


def atlas(binary, repo, graph, *args, check=True):
    out = subprocess.run([binary, "--code", repo, "--graph", graph, *args],
                         capture_output=True, text=True)
    if check and out.returncode != 0:
        raise SystemExit(f"{binary} {' '.join(args)} failed:\n{out.stderr}")
    return out


def timed_query(binary, repo, graph):
    start = time.perf_counter()
    out = atlas(binary, repo, graph, *QUERY)
    wall = time.perf_counter() - start
    return wall, json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--edit", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--atlas", default=DEFAULT_BIN)
    parser.add_argument("--baseline")
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    sides = {"atlas": os.path.abspath(args.atlas)}
    if args.baseline:
        sides["baseline"] = os.path.abspath(args.baseline)
    graphs = {name: tempfile.mkdtemp(prefix=f"atlas-follow-{name}-") for name in sides}
    edit_path = os.path.join(repo, args.edit)
    with open(edit_path, "rb") as f:
        original = f.read()
    results = {name: {"first": [], "warm": []} for name in sides}
    try:
        for name, binary in sides.items():
            atlas(binary, repo, graphs[name], "build", "--no-progress", "--no-search")
            atlas(binary, repo, graphs[name], "daemon", "start", "--query-workers", "1")
            for _ in range(3):
                timed_query(binary, repo, graphs[name])
        order = list(sides)
        for i in range(args.rounds):
            with open(edit_path, "wb") as f:
                f.write(original + b"\n# atlas follow edit %d\n" % i)
            for name in order if i % 2 == 0 else order[::-1]:
                atlas(sides[name], repo, graphs[name], "build", "--no-progress", "--no-search")
                first, doc = timed_query(sides[name], repo, graphs[name])
                warm, _ = timed_query(sides[name], repo, graphs[name])
                results[name]["first"].append(first)
                results[name]["warm"].append(warm)
    finally:
        with open(edit_path, "wb") as f:
            f.write(original)
        for name, binary in sides.items():
            atlas(binary, repo, graphs[name], "daemon", "stop", check=False)
            shutil.rmtree(graphs[name], ignore_errors=True)
    out = {"repo": repo, "rounds": args.rounds}
    for name, r in results.items():
        out[name] = {
            "binary": sides[name],
            "first_query_after_new_generation_ms_median": round(statistics.median(r["first"]) * 1000, 1),
            "first_all_ms": [round(w * 1000, 1) for w in r["first"]],
            "warm_query_ms_median": round(statistics.median(r["warm"]) * 1000, 1),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

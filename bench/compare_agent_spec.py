#!/usr/bin/env python3
"""Side by side with agent-spec's Rust atlas on the same repository, in the same run.

Usage: bench/compare_agent_spec.py REPO AGENT_SPEC_BIN [--runs N] [--query Q] [--edit PATH]

Measures, for both tools, as whole processes: cold build (graph dir removed), republish
after a one-file edit, and `context --profile symbol --frozen` for one query. Medians.
agent-spec is built from github:ZhangHanDong/agent-spec (`cargo build --release`).
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
ATLAS = os.path.join(HERE, "..", "target", "release", "atlas")


def timed(cmd):
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{out.stderr[-2000:]}")
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser()
    p.add_argument("repo")
    p.add_argument("agent_spec")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--query", default="search_path")
    p.add_argument("--edit", default="crates/core/main.rs")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="atlas-compare-")
    repos = {}
    for tool in ("atlas", "agent-spec"):
        repos[tool] = os.path.join(work, tool)
        shutil.copytree(a.repo, repos[tool])

    def build(tool):
        repo = repos[tool]
        graph = os.path.join(repo, ".agent-spec", "graph")
        if tool == "atlas":
            return [ATLAS, "--code", repo, "--graph", graph, "build", "--no-progress", "--no-search"]
        return [a.agent_spec, "atlas", "build", "--code", repo, "--graph", graph]

    def context(tool):
        repo = repos[tool]
        graph = os.path.join(repo, ".agent-spec", "graph")
        if tool == "atlas":
            return [ATLAS, "--code", repo, "--graph", graph, "context", a.query, "--profile", "symbol", "--frozen", "--format", "json"]
        return [a.agent_spec, "atlas", "context", a.query, "--profile", "symbol", "--code", repo, "--graph", graph, "--frozen"]

    result = {"repo": a.repo, "runs": a.runs, "query": a.query, "edit": a.edit}
    for tool in ("atlas", "agent-spec"):
        cold = []
        for _ in range(a.runs):
            shutil.rmtree(os.path.join(repos[tool], ".agent-spec"), ignore_errors=True)
            cold.append(timed(build(tool)))
        edit_path = os.path.join(repos[tool], a.edit)
        with open(edit_path, "rb") as f:
            original = f.read()
        edits = []
        for i in range(a.runs):
            with open(edit_path, "wb") as f:
                f.write(original + b"\n// bench edit %d\n" % i)
            edits.append(timed(build(tool)))
        ctx = [timed(context(tool)) for _ in range(a.runs * 2)]
        result[tool] = {
            "cold_build_s_median": round(statistics.median(cold), 4),
            "edit_republish_s_median": round(statistics.median(edits), 4),
            "context_symbol_s_median": round(statistics.median(ctx), 4),
        }
    for key in ("cold_build_s_median", "edit_republish_s_median", "context_symbol_s_median"):
        result[f"speedup_{key}"] = round(result["agent-spec"][key] / result["atlas"][key], 2)
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Build benchmark: cold build, peak RSS, graph size and one-file-edit republish time.

Usage: bench/build.py REPO [--runs N] [--edit PATH] [--atlas BIN] [--baseline BIN] [--search]

Runs the release binary (cargo build --release first) as a whole process, the way an
agent or CI would, and prints medians. The machine is shared and noisy: quote medians.
With --baseline, every build runs with both binaries, interleaved (each on its own graph
directory), and both sides are printed. Builds skip the search index (`--no-search`)
unless --search is given: then each build also publishes its generation's search index,
as `atlas build` does by default. The no-op right after an edit reads the edited file
again (its stamp is too recent to vouch for it); with --baseline, no-ops are also timed
once every file is settled, when the stamps vouch for all of them.
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


SEARCH = False  # --search: builds publish the search index too
# The stamps trust no modification this recent (build::stamps::RACY_NS), plus a margin.
STAMPS_RACY_S = 2.5


def run_build(atlas, repo, graph):
    """Runs one build; returns (wall seconds, peak RSS KiB, report)."""
    fd, timing = tempfile.mkstemp()
    os.close(fd)
    cmd = ["/usr/bin/time", "-f", "%e %M", "-o", timing, atlas, "--code", repo,
           "--graph", graph, "build", "--format", "json", "--no-progress"]
    if not SEARCH:
        cmd.append("--no-search")
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
    parser.add_argument("--baseline", help="another atlas binary, run interleaved")
    parser.add_argument("--search", action="store_true", help="build the search index too")
    args = parser.parse_args()
    global SEARCH
    SEARCH = args.search
    if args.baseline:
        compare(args)
        return
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


def compare(args):
    """Cold builds, one-file edits and no-op rebuilds with two binaries, interleaved."""
    repo = os.path.abspath(args.repo)
    sides = {"baseline": args.baseline, "atlas": args.atlas}
    graphs = {name: tempfile.mkdtemp(prefix=f"atlas-bench-{name}-") for name in sides}
    results = {
        name: {"cold": [], "edit": [], "noop": [], "settled": [], "timings": [], "rss": []}
        for name in sides
    }
    order = list(sides)
    for i in range(args.runs):
        for name in order if i % 2 == 0 else order[::-1]:
            shutil.rmtree(graphs[name], ignore_errors=True)
            w, _, _ = run_build(sides[name], repo, graphs[name])
            results[name]["cold"].append(w)
    edit_path = os.path.join(repo, args.edit) if args.edit else pick_edit_file(repo, None)
    with open(edit_path, "rb") as f:
        original = f.read()
    comment = b"#" if edit_path.endswith(".py") else b"//"
    try:
        for i in range(args.runs):
            for name in order if i % 2 == 0 else order[::-1]:
                # Written just before each side's edit, so that its no-op finds the file
                # as recent as the other side's does (too recent for the stamps).
                with open(edit_path, "wb") as f:
                    f.write(original + b"\n" + comment + b" atlas bench edit %d %s\n" % (i, name.encode()))
                w, rss, r = run_build(sides[name], repo, graphs[name])
                assert r["parsed"] == 1, r
                results[name]["edit"].append(w)
                results[name]["rss"].append(rss)
                results[name]["timings"].append(r["timings_ms"])
                w, _, r = run_build(sides[name], repo, graphs[name])
                assert r["unchanged"], r
                results[name]["noop"].append(w)
    finally:
        with open(edit_path, "wb") as f:
            f.write(original)
    try:
        # No-op builds once every file is settled (older than the stamps' racy window):
        # the stamps vouch for every file, as for a rebuild some time after the last edit.
        for name in order:
            run_build(sides[name], repo, graphs[name])
        time.sleep(STAMPS_RACY_S)
        for name in order:
            run_build(sides[name], repo, graphs[name])
        for i in range(args.runs):
            for name in order if i % 2 == 0 else order[::-1]:
                w, rss, r = run_build(sides[name], repo, graphs[name])
                assert r["unchanged"], r
                results[name]["settled"].append((w, rss))
    finally:
        for graph in graphs.values():
            shutil.rmtree(graph, ignore_errors=True)
    out = {"repo": repo, "runs": args.runs, "edit_file": os.path.relpath(edit_path, repo)}
    for name, r in results.items():
        stages = r["timings"][0].keys() if r["timings"] else []
        out[name] = {
            "binary": sides[name],
            "cold_wall_s_median": round(statistics.median(r["cold"]), 4),
            "edit_wall_s_median": round(statistics.median(r["edit"]), 4),
            "edit_wall_s_all": [round(w, 4) for w in r["edit"]],
            "noop_wall_s_median": round(statistics.median(r["noop"]), 4),
            "settled_noop_wall_s_median": round(statistics.median(w for w, _ in r["settled"]), 4),
            "settled_noop_peak_rss_mib_median": round(
                statistics.median(rss for _, rss in r["settled"]) / 1024, 1
            ),
            "edit_peak_rss_mib_median": round(statistics.median(r["rss"]) / 1024, 1),
            "edit_stage_ms_median": {
                s: round(statistics.median(t[s] for t in r["timings"]), 1) for s in stages
            },
        }
    out["edit_ratio_baseline_over_atlas"] = round(
        out["baseline"]["edit_wall_s_median"] / out["atlas"]["edit_wall_s_median"], 2
    )
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

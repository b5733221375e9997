#!/usr/bin/env python3
"""One-file edits, two (or more) binaries interleaved, each on its own graph directory.

Usage: bench/edit_ab.py BIN_A,BIN_B REPO GRAPH_A,GRAPH_B EDIT_PATH ROUNDS [LINE]

Each graph must already hold a committed generation of REPO built by its binary (build
once, and once more after an edit when the binaries' caches differ in version, so that
the first timed edit is not a repair). Every round appends a comment to EDIT_PATH
(relative to REPO) and builds with each binary, in alternating order; the file is
restored at the end. With LINE, round i inserts i + 1 comment lines after that line
instead: every later reference of the file moves its site by a line from each binary's
previous build, as a line added inside a function does. Prints each binary's median wall time, median peak RSS and median
stage timings. Where `bench/build.py --baseline` times cold builds too, this times only
edits: on a large tree, one side's cold build costs as much as forty edits.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    insert_at = int(sys.argv[6]) if len(sys.argv) == 7 else None
    bins = sys.argv[1].split(",")
    graphs = dict(zip(bins, sys.argv[3].split(",")))
    if len(graphs) != len(bins):
        sys.exit("one graph directory per binary")
    repo, edit, rounds = sys.argv[2], os.path.join(sys.argv[2], sys.argv[4]), int(sys.argv[5])
    comment = b"#" if edit.endswith(".py") else b"//"
    with open(edit, "rb") as f:
        original = f.read()
    walls = {b: [] for b in bins}
    rss = {b: [] for b in bins}
    stages = {b: [] for b in bins}
    fd, timing = tempfile.mkstemp()
    os.close(fd)
    try:
        for i in range(rounds):
            for b in bins if i % 2 == 0 else bins[::-1]:
                line = comment + b" ab edit %d %d\n" % (i, time.time_ns())
                with open(edit, "wb") as f:
                    if insert_at is None:
                        f.write(original + b"\n" + line)
                    else:
                        lines = original.splitlines(keepends=True)
                        # One line more each round: each binary's edit moves the sites below
                        # by a line from its previous build.
                        f.write(b"".join(lines[:insert_at]) + line * (i + 1)
                                + b"".join(lines[insert_at:]))
                start = time.perf_counter()
                out = subprocess.run(
                    ["/usr/bin/time", "-f", "%M", "-o", timing, b, "--code", repo, "--graph",
                     graphs[b], "build", "--no-search", "--no-progress", "--format", "json"],
                    capture_output=True, text=True)
                wall = time.perf_counter() - start
                if out.returncode != 0:
                    sys.exit(f"{b}: build failed ({out.returncode}):\n{out.stderr}")
                report = json.loads(out.stdout)
                if report["unchanged"]:
                    sys.exit(f"{b}: the edit was not seen")
                walls[b].append(wall)
                stages[b].append(report["timings_ms"])
                with open(timing) as f:
                    rss[b].append(int(f.read().split()[-1]) / 1024)
    finally:
        with open(edit, "wb") as f:
            f.write(original)
        os.unlink(timing)
    for b in bins:
        median = {k: round(statistics.median(t[k] for t in stages[b]), 1) for k in stages[b][0]}
        print(json.dumps({
            "binary": b,
            "edit_wall_s_median": round(statistics.median(walls[b]), 4),
            "edit_wall_s_all": [round(w, 4) for w in walls[b]],
            "edit_peak_rss_mib_median": round(statistics.median(rss[b]), 1),
            "edit_stage_ms_median": median,
        }))


if __name__ == "__main__":
    main()

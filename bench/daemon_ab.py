#!/usr/bin/env python3
"""Interleaved A/B of two warm daemons (docs/PERFORMANCE.md, "Warm daemon").

    python3 bench/daemon_ab.py REPO BIN_A,BIN_B GRAPH_A,GRAPH_B ROUNDS [profile:query ...]

Each binary serves its own graph of REPO (build both first: `atlas --code REPO --graph G
build`) from a daemon with 2 workers and a watcher. Every round asks each query of both
daemons, alternating which goes first, as whole `context --execution worker` processes,
and records the in-daemon `run_ms`; it prints p50 and p95 per query and per profile, and
which queries answered differently once timings, `serialized_bytes` and the graph path
are removed (the first differing pair is written beside this run's temporary directory).
DAB_ENV0 / DAB_ENV1 = `NAME=value` set one variable in daemon A's or B's environment.
DAB_NO_WATCH=1 starts both daemons without `--watch` (each read checks the tree itself).
"""
import json, os, subprocess, sys, tempfile, time
REPO = sys.argv[1]
bins = sys.argv[2].split(","); graphs = sys.argv[3].split(","); rounds = int(sys.argv[4])
QUERIES = [("symbol", q) for q in ["Add.flatten", "Basic.subs", "Expr.expand", "Symbol", "how are rational numbers simplified"]] + \
          [("flow", q) for q in ["Basic.subs calls", "Add.flatten calls", "Mul.flatten calls"]]
if len(sys.argv) > 5:
    QUERIES = [tuple(a.split(":", 1)) for a in sys.argv[5:]]
env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}
ds = []
for i, (b, g) in enumerate(zip(bins, graphs)):
    e = dict(env)
    extra = os.environ.get(f"DAB_ENV{i}")
    if extra:
        k, v = extra.split("=", 1); e[k] = v
    ds.append(subprocess.Popen([b, "--code", REPO, "--graph", g, "daemon", "start", "--foreground", "--query-workers", "2"] + ([] if os.environ.get("DAB_NO_WATCH") == "1" else ["--watch"]),
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=e))
def q(i, profile, query):
    cmd = [bins[i], "--code", REPO, "--graph", graphs[i], "context", query, "--profile", profile, "--execution", "worker", "--format", "json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    rec = None
    for line in out.stderr.splitlines():
        if line.startswith('{"atlas_execution"'):
            rec = json.loads(line)["atlas_execution"]["attempts"][0]
    return rec, out.stdout
def strip(s, i):
    s = s.replace(graphs[i], "G")
    try:
        d = json.loads(s)
    except Exception:
        return s
    def walk(x):
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items() if not (k.endswith("_ms") or k in ("timings", "timings_ms", "elapsed_ms", "graph_path", "serialized_bytes"))}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x
    return json.dumps(walk(d), sort_keys=True)
try:
    for i in range(len(bins)):
        for _ in range(300):
            r, _ = q(i, "symbol", "Symbol")
            if r and r.get("outcome") == "success":
                break
            time.sleep(0.2)
    for i in range(len(bins)):
        for p, qq in QUERIES:
            q(i, p, qq)
    res = {(i, p, qq): [] for i in range(len(bins)) for p, qq in QUERIES}
    diffs = set()
    for r in range(rounds):
        for p, qq in QUERIES:
            outs = []
            order = range(len(bins)) if r % 2 == 0 else reversed(range(len(bins)))
            for i in order:
                rec, out = q(i, p, qq)
                if rec and rec.get("outcome") == "success":
                    res[(i, p, qq)].append(rec["run_ms"])
                outs.append(strip(out, i))
            if len(set(outs)) > 1:
                if not diffs:
                    where = tempfile.mkdtemp(prefix="daemon-ab-")
                    for k, text in enumerate(outs[:2]):
                        with open(os.path.join(where, f"diff-{k}.json"), "w") as f:
                            f.write(text)
                    print("first difference written to", where)
                diffs.add(qq)
    def pct(v, p):
        v = sorted(v); return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else None
    for p, qq in QUERIES:
        print(f"{p:7} {qq[:40]:40} " + "  ".join(f"{i}: p50 {pct(res[(i,p,qq)],50):6.2f} p95 {pct(res[(i,p,qq)],95):6.2f}" for i in range(len(bins))))
    for p in sorted(set(p for p, _ in QUERIES)):
        print(p, "profile p95:", "  ".join(f"{i}: {pct([x for (j,pp,_),v in res.items() if j==i and pp==p for x in v],95):.2f} p50 {pct([x for (j,pp,_),v in res.items() if j==i and pp==p for x in v],50):.2f}" for i in range(len(bins))))
    print("differing outputs:", sorted(diffs) or "none")
finally:
    for d in ds:
        d.terminate()
    for d in ds:
        d.wait()

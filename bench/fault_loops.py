#!/usr/bin/env python3
"""Fault loops with figures for the `atlas` binary (stdlib only), on a copy of pallets/flask.

Subcommands (each prints a JSON result and a one-line summary):
  kill        --runs 100     edit a few files, start `atlas build`, SIGKILL it after a random
                             delay in [0, build time]; after each kill CURRENT must parse, name an
                             existing generation, and the graph must open (`status`, `graph dump`).
  readers     --reads 1000   a writer edits and rebuilds continuously while readers run
                             `context Flask.wsgi_app --profile symbol --frozen --format json` and
                             `search "request dispatch" --frozen --format json` (each N times);
                             counts failed reads by exit/error code and torn (unparsable) outputs.
  concurrent  --builds 20    several `atlas build --wait` at once after edits: all exit 0, the
                             final CURRENT opens, no leftover staging or temporary files.
  diskfull                   flask on a tmpfs just too small (root and tmpfs needed; otherwise
                             "skipped: <why>"): exit codes, leftovers, committed generation intact,
                             the next build after freeing space succeeds.
  all                        the four with their flags' defaults (or the ones given).

Usage: bench/fault_loops.py [--bin PATH] [--keep] [--seed N] SUBCOMMAND [flags]
"""
import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.normpath(os.path.join(HERE, "..", "target", "release", "atlas"))
FLASK_MIRROR = "/work/.mirror/pallets+flask/repo"
CODE_RE = re.compile(rb"error\[(atlas-[a-z0-9-]+)\]")
HEX64 = re.compile(r"[0-9a-f]{64}")
SEARCH_Q = "request dispatch"
SYM = "Flask.wsgi_app"


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ATLAS_") and k not in ("CLAUDE_PROJECT_DIR", "WORKSPACE_FOLDER_PATHS")}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


ENV = clean_env()


def run(argv, timeout=60, cwd=None):
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         env=ENV, cwd=cwd, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc = "timeout"
    m = CODE_RE.search(err)
    return {"rc": rc, "code": m.group(1).decode() if m else None, "out": out, "err": err,
            "ms": (time.monotonic() - t0) * 1000, "panic": rc == 101 or b"panicked" in err}


def outcome(r):
    if r["panic"]:
        return "panic"
    if r["rc"] == "timeout":
        return "timeout"
    if isinstance(r["rc"], int) and r["rc"] < 0:
        return f"signal {-r['rc']}"
    return f"exit {r['rc']}" + (f" {r['code']}" if r["code"] else "")


class Repo:
    """A fresh flask copy under a scratch dir."""

    def __init__(self, args, name="flask", parent=None):
        self.bin = os.path.abspath(args.bin)
        self.scratch = parent or tempfile.mkdtemp(prefix="atlas-fault-", dir="/tmp")
        self.path = os.path.join(self.scratch, name)
        os.makedirs(self.path)
        arch = subprocess.run(["git", "-C", FLASK_MIRROR, "archive", "HEAD"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", self.path], input=arch.stdout, check=True)
        self.graph = os.path.join(self.path, ".agent-spec", "graph")
        self.py = sorted(os.path.relpath(os.path.join(d, n), self.path)
                         for d, _, ns in os.walk(self.path) for n in ns if n.endswith(".py"))

    def atlas(self, *args, timeout=60):
        return run([self.bin, "--code", self.path] + list(args), timeout=timeout)

    def cmd(self, *args):
        return [self.bin, "--code", self.path] + list(args)

    def edit(self, rng, k, tag):
        for rel in rng.sample(self.py, k):
            with open(os.path.join(self.path, rel), "a") as f:
                f.write(f"\n# fault-loop edit {tag}\n")

    def current(self):
        try:
            with open(os.path.join(self.graph, "CURRENT")) as f:
                return f.read()
        except OSError:
            return None


def leftovers(graph):
    bad = []
    staging = os.path.join(graph, ".staging")
    if os.path.isdir(staging):
        bad += [".staging/" + n for n in os.listdir(staging)]
    for d, dirs, files in os.walk(graph):
        for n in dirs + files:
            if ".tmp" in n:
                bad.append(os.path.relpath(os.path.join(d, n), graph))
    return bad


def check_store(repo, dump=True):
    """CURRENT parses, names an existing generation, and the graph opens."""
    text = repo.current()
    res = {"lost": False, "torn": False, "why": None, "fp": None}
    if text is None or not HEX64.fullmatch(text.strip()):
        res.update(lost=True, why=f"CURRENT {'missing' if text is None else 'unparsable'}")
        return res
    fp = text.strip()
    res["fp"] = fp
    if not os.path.isfile(os.path.join(repo.graph, "generations", fp, "graph.atlas")):
        res.update(lost=True, why="CURRENT names a missing generation")
        return res
    st = repo.atlas("status", "--format", "json")
    ok = st["rc"] == 0
    if ok:
        try:
            ok = json.loads(st["out"]).get("fingerprint") == fp
        except ValueError:
            ok = False
    if ok and dump:
        d = repo.atlas("graph", "dump")
        ok = d["rc"] == 0 and fp.encode() in d["out"][:300]
        if not ok:
            st = d
    if not ok:
        res.update(torn=True, why=f"graph does not open: {outcome(st)} {st['err'][:120]!r}")
    return res


def pct(values, q):
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 1)


# ---------------------------------------------------------------------------------------


def cmd_kill(args):
    rng = random.Random(args.seed)
    repo = Repo(args)
    try:
        first = repo.atlas("build", "--format", "json")
        if first["rc"] != 0:
            return {"error": "initial build failed: " + outcome(first)}
        times = []
        for i in range(3):
            repo.edit(rng, args.files, f"warm{i}")
            r = repo.atlas("build")
            times.append(r["ms"])
        build_ms = statistics.median(times)
        fig = {"runs": args.runs, "files_edited_per_run": args.files, "build_ms_median": round(build_ms, 1),
               "killed_mid_build": 0, "completed_before_kill": 0, "published_despite_kill": 0,
               "lost_generations": 0, "torn_generations": 0, "failures": [],
               "completed_exit_codes": {}, "search_frozen_after_kill": {}, "leftovers_after_kill": 0}
        for i in range(args.runs):
            before = repo.current()
            repo.edit(rng, args.files, f"run{i}")
            delay = rng.uniform(0, build_ms / 1000.0)
            p = subprocess.Popen(repo.cmd("build"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 env=ENV, start_new_session=True)
            time.sleep(delay)
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                p.stderr.close()
                fig["killed_mid_build"] += 1
                killed = True
                if repo.current() != before:
                    fig["published_despite_kill"] += 1
            else:
                err = p.stderr.read()
                p.stderr.close()
                killed = False
                fig["completed_before_kill"] += 1
                key = str(p.returncode) + (" panic" if b"panicked" in err else "")
                fig["completed_exit_codes"][key] = fig["completed_exit_codes"].get(key, 0) + 1
            res = check_store(repo, dump=True)
            if res["lost"]:
                fig["lost_generations"] += 1
            if res["torn"]:
                fig["torn_generations"] += 1
            if res["lost"] or res["torn"]:
                fig["failures"].append({"run": i, "killed": killed, "delay_ms": round(delay * 1000), "why": res["why"]})
            if killed:
                s = repo.atlas("search", SEARCH_Q, "--frozen", "--format", "json")
                o = outcome(s)
                fig["search_frozen_after_kill"][o] = fig["search_frozen_after_kill"].get(o, 0) + 1
                if leftovers(repo.graph):
                    fig["leftovers_after_kill"] += 1
        final = repo.atlas("build", "--wait")
        fig["final_build"] = outcome(final)
        fig["final_store"] = check_store(repo)["why"] or "ok"
        fig["final_leftovers"] = leftovers(repo.graph)
        fig["final_search_frozen"] = outcome(repo.atlas("search", SEARCH_Q, "--frozen", "--format", "json"))
        fig["pass"] = (fig["lost_generations"] == 0 and fig["torn_generations"] == 0 and final["rc"] == 0
                       and not fig["final_leftovers"] and fig["final_store"] == "ok")
        fig["summary"] = (f"kill: {fig['killed_mid_build']}/{args.runs} kills mid-build "
                          f"({fig['published_despite_kill']} after publish), lost {fig['lost_generations']}, "
                          f"torn {fig['torn_generations']}; search --frozen after kill {fig['search_frozen_after_kill']}; "
                          f"final build {fig['final_build']}, leftovers {len(fig['final_leftovers'])}")
        return fig
    finally:
        if not args.keep:
            shutil.rmtree(repo.scratch, ignore_errors=True)


def cmd_readers(args):
    repo = Repo(args)
    try:
        first = repo.atlas("build")
        if first["rc"] != 0:
            return {"error": "initial build failed: " + outcome(first)}
        kinds = {
            "context": ["context", SYM, "--profile", "symbol", "--frozen", "--format", "json"],
            "search": ["search", SEARCH_Q, "--frozen", "--format", "json"],
        }
        lock = threading.Lock()
        todo = {k: args.reads for k in kinds}
        stats = {k: {"reads": 0, "ok": 0, "failed": {}, "torn": 0, "ms": [], "examples": []} for k in kinds}
        stop = threading.Event()
        builds = {"runs": 0, "exit": {}}
        edit_files = ["src/flask/helpers.py", "src/flask/app.py", "src/flask/ctx.py", "src/flask/views.py"]

        def writer():
            i = 0
            while not stop.is_set():
                rel = edit_files[i % len(edit_files)]
                with open(os.path.join(repo.path, rel), "a") as f:
                    f.write(f"\n# reader-loop edit {i}\n")
                i += 1
                r = repo.atlas("build", timeout=120)
                builds["runs"] += 1
                o = outcome(r)
                builds["exit"][o] = builds["exit"].get(o, 0) + 1

        def reader(idx):
            order = list(kinds)
            n = idx
            while True:
                kind = None
                with lock:
                    for j in range(len(order)):
                        k = order[(n + j) % len(order)]
                        if todo[k] > 0:
                            todo[k] -= 1
                            kind = k
                            break
                n += 1
                if kind is None:
                    return
                r = repo.atlas(*kinds[kind], timeout=60)
                try:
                    doc = json.loads(r["out"])
                    torn = not isinstance(doc, dict)
                except ValueError:
                    torn = True
                with lock:
                    s = stats[kind]
                    s["reads"] += 1
                    s["ms"].append(r["ms"])
                    if r["rc"] == 0 and not r["panic"]:
                        s["ok"] += 1
                    else:
                        o = outcome(r)
                        s["failed"][o] = s["failed"].get(o, 0) + 1
                        if len(s["examples"]) < 3:
                            s["examples"].append(r["err"].decode("utf-8", "replace").strip()[:200])
                    if torn:
                        s["torn"] += 1

        w = threading.Thread(target=writer)
        w.start()
        time.sleep(0.2)
        t0 = time.monotonic()
        rs = [threading.Thread(target=reader, args=(i,)) for i in range(args.readers)]
        for t in rs:
            t.start()
        for t in rs:
            t.join()
        stop.set()
        w.join()
        fig = {"reads_per_kind": args.reads, "readers": args.readers, "seconds": round(time.monotonic() - t0, 1),
               "writer_builds": builds}
        failed_total = torn_total = 0
        for k, s in stats.items():
            failed = sum(s["failed"].values())
            failed_total += failed
            torn_total += s["torn"]
            fig[k] = {"reads": s["reads"], "ok": s["ok"], "failed": failed, "failed_by": s["failed"],
                      "torn": s["torn"], "p50_ms": pct(s["ms"], 0.5), "p95_ms": pct(s["ms"], 0.95),
                      "examples": s["examples"]}
        fig["pass"] = failed_total == 0 and torn_total == 0
        fig["summary"] = (f"readers: {sum(s['reads'] for s in stats.values())} reads during {builds['runs']} builds; "
                          + "; ".join(f"{k} failed {fig[k]['failed']} {fig[k]['failed_by'] or ''} torn {fig[k]['torn']}"
                                      for k in kinds))
        return fig
    finally:
        if not args.keep:
            shutil.rmtree(repo.scratch, ignore_errors=True)


def cmd_concurrent(args):
    rng = random.Random(args.seed)
    repo = Repo(args)
    try:
        first = repo.atlas("build")
        if first["rc"] != 0:
            return {"error": "initial build failed: " + outcome(first)}
        exits, max_ms = {}, 0.0
        launched = 0
        rounds = 0
        while launched < args.builds:
            n = min(args.parallel, args.builds - launched)
            repo.edit(rng, 3, f"conc{rounds}")
            results = [None] * n

            def one(j):
                results[j] = repo.atlas("build", "--wait", timeout=300)
            ts = [threading.Thread(target=one, args=(j,)) for j in range(n)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            for r in results:
                o = outcome(r)
                exits[o] = exits.get(o, 0) + 1
                max_ms = max(max_ms, r["ms"])
            launched += n
            rounds += 1
        store = check_store(repo)
        left = leftovers(repo.graph)
        gens = sorted(os.listdir(os.path.join(repo.graph, "generations")))
        search = outcome(repo.atlas("search", SEARCH_Q, "--frozen", "--format", "json"))
        fig = {"builds": args.builds, "parallel": args.parallel, "rounds": rounds, "exit_codes": exits,
               "slowest_build_ms": round(max_ms), "final_store": store["why"] or "ok", "leftovers": left,
               "generations_kept": len(gens), "search_frozen_after": search}
        fig["pass"] = (set(exits) == {"exit 0"} and store["why"] is None and not left and search == "exit 0")
        fig["summary"] = (f"concurrent: {args.builds} builds ({args.parallel} at once) exits {exits}; "
                          f"final store {fig['final_store']}; leftovers {len(left)}; search --frozen {search}")
        return fig
    finally:
        if not args.keep:
            shutil.rmtree(repo.scratch, ignore_errors=True)


def du(path):
    total = 0
    for d, _, files in os.walk(path):
        for n in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(d, n)).st_blocks * 512
    return total


def mount_tmpfs(path, size_kb):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", path], capture_output=True)
    return r.returncode == 0, r.stderr.decode().strip()


def umount(path):
    subprocess.run(["umount", "-l", path], capture_output=True)


def fill(path, leave):
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    filler = os.path.join(path, "filler.bin")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    left = max(0, free - leave)
    chunk = bytes(1 << 20)
    try:
        while left > 0:
            left -= os.write(fd, chunk[: min(len(chunk), left)])
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


def cmd_diskfull(args):
    if os.geteuid() != 0:
        return {"skipped": "not root: cannot mount a tmpfs", "pass": None,
                "summary": "diskfull: skipped: not root"}
    scratch = tempfile.mkdtemp(prefix="atlas-fault-df-", dir="/tmp")
    mounts = []
    try:
        probe = os.path.join(scratch, "probe")
        ok, why = mount_tmpfs(probe, 1024)
        if not ok:
            return {"skipped": f"tmpfs mount failed: {why}", "pass": None, "summary": f"diskfull: skipped: {why}"}
        umount(probe)
        # Footprint on a regular disk: the repository and the graph dir after one build.
        ref = Repo(args, name="ref", parent=scratch)
        r = ref.atlas("build")
        if r["rc"] != 0:
            return {"error": "reference build failed: " + outcome(r)}
        repo_bytes = du(ref.path) - du(ref.graph)
        graph_bytes = du(ref.graph)
        fig = {"repo_kb": repo_bytes // 1024, "graph_kb_first_build": graph_bytes // 1024, "first_build": [],
               "update": None}
        all_ok = True
        # 1) first build on a tmpfs sized repo + a fraction of the graph it needs; then grow the
        #    tmpfs (remount,size=…) — "freeing space" — and build again.
        for frac in args.fractions:
            mnt = os.path.join(scratch, f"mnt-{int(frac * 100)}")
            size_kb = (repo_bytes + int(graph_bytes * frac)) // 1024 + 64
            ok, why = mount_tmpfs(mnt, size_kb)
            if not ok:
                fig["first_build"].append({"fraction": frac, "skipped": why})
                continue
            mounts.append(mnt)
            repo = Repo(args, name="flask", parent=mnt)
            b = repo.atlas("build", timeout=120)
            left = leftovers(repo.graph)
            st = repo.atlas("status")
            grow = subprocess.run(["mount", "-o", f"remount,size={size_kb + graph_bytes // 1024 * 3}k", mnt],
                                  capture_output=True)
            if grow.returncode == 0:
                again = repo.atlas("build", timeout=120)
                after = outcome(again)
                search = outcome(repo.atlas("search", SEARCH_Q, "--frozen", "--format", "json"))
                left_after = leftovers(repo.graph)
            else:
                after = search = "remount failed: " + grow.stderr.decode().strip()
                left_after = []
            row = {"fraction_of_graph": frac, "tmpfs_kb": size_kb, "build": outcome(b),
                   "error_line": b["err"].decode("utf-8", "replace").strip().splitlines()[-1][:200] if b["err"].strip() else "",
                   "leftovers": left[:5], "leftover_count": len(left), "status_after_failure": outcome(st),
                   "build_after_growing": after, "search_frozen_after": search, "leftovers_after": len(left_after)}
            row_ok = (b["rc"] == 1 and b["code"] == "atlas-io" and not left and after == "exit 0"
                      and search == "exit 0") or (b["rc"] == 0 and after == "exit 0")
            row["pass"] = row_ok
            all_ok &= row_ok
            fig["first_build"].append(row)
            umount(mnt)
            mounts.remove(mnt)
        # 2) an update on a full disk: the committed generation must stay intact. Each attempt
        #    on its own tmpfs (repo + 3x the graph), a first build, every .py edited, the disk
        #    filled to `leave` KB, the update, then the filler removed and a build again.
        size_kb = (repo_bytes + graph_bytes * 3) // 1024
        rows = []
        for leave in args.leave_kb:
            mnt = os.path.join(scratch, f"mnt-update-{leave}")
            ok, why = mount_tmpfs(mnt, size_kb)
            if not ok:
                rows.append({"free_kb": leave, "skipped": why})
                continue
            mounts.append(mnt)
            repo = Repo(args, name="flask", parent=mnt)
            b0 = repo.atlas("build", timeout=120)
            old = (repo.current() or "").strip()
            for rel in repo.py:
                with open(os.path.join(repo.path, rel), "a") as f:
                    f.write("\n# diskfull edit\n")
            filler = fill(mnt, leave * 1024)
            b = repo.atlas("build", timeout=120)
            left = leftovers(repo.graph)
            st = repo.atlas("status", "--format", "json")
            try:
                fp = json.loads(st["out"]).get("fingerprint")
            except ValueError:
                fp = None
            search = outcome(repo.atlas("search", SEARCH_Q, "--frozen", "--format", "json"))
            os.unlink(filler)
            again = repo.atlas("build", timeout=120)
            search2 = outcome(repo.atlas("search", SEARCH_Q, "--frozen", "--format", "json"))
            row = {"free_kb": leave, "first_build": outcome(b0), "build": outcome(b),
                   "error_line": b["err"].decode("utf-8", "replace").strip().splitlines()[-1][:200] if b["err"].strip() else "",
                   "leftovers": left[:5], "leftover_count": len(left),
                   "committed_intact": st["rc"] == 0 and (fp == old or b["rc"] == 0),
                   "status_after_failure": outcome(st), "search_frozen_after_failure": search,
                   "build_after_freeing": outcome(again), "search_frozen_after_freeing": search2}
            row["pass"] = (((b["rc"] == 1 and b["code"] == "atlas-io") or b["rc"] == 0) and not left
                           and row["committed_intact"] and again["rc"] == 0 and search == "exit 0"
                           and search2 == "exit 0")
            all_ok &= row["pass"]
            rows.append(row)
            umount(mnt)
            mounts.remove(mnt)
        fig["update"] = {"tmpfs_kb": size_kb, "attempts": rows}
        fig["pass"] = all_ok
        fb = ", ".join(f"{r.get('fraction_of_graph')}: {r.get('build')} left {r.get('leftover_count')} -> {r.get('build_after_growing')}"
                       for r in fig["first_build"])
        up = ", ".join(f"{r['free_kb']}k: {r.get('build')} left {r.get('leftover_count')} intact {r.get('committed_intact')} -> {r.get('build_after_freeing')}"
                       for r in (fig["update"] or {}).get("attempts", []))
        fig["summary"] = f"diskfull: first build [{fb}]; update [{up}]"
        return fig
    finally:
        for m in mounts:
            umount(m)
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description="atlas fault loops")
    ap.add_argument("--bin", default=DEFAULT_BIN)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="also write the JSON result here")
    sub = ap.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("kill")
    k.add_argument("--runs", type=int, default=100)
    k.add_argument("--files", type=int, default=3)
    r = sub.add_parser("readers")
    r.add_argument("--reads", type=int, default=1000)
    r.add_argument("--readers", type=int, default=4)
    c = sub.add_parser("concurrent")
    c.add_argument("--builds", type=int, default=20)
    c.add_argument("--parallel", type=int, default=5)
    d = sub.add_parser("diskfull")
    d.add_argument("--fractions", type=float, nargs="+", default=[0.0, 0.3, 0.6, 0.9, 0.98])
    d.add_argument("--leave-kb", type=int, nargs="+", default=[0, 64, 512])
    a = sub.add_parser("all")
    a.add_argument("--runs", type=int, default=100)
    a.add_argument("--files", type=int, default=3)
    a.add_argument("--reads", type=int, default=1000)
    a.add_argument("--readers", type=int, default=4)
    a.add_argument("--builds", type=int, default=20)
    a.add_argument("--parallel", type=int, default=5)
    a.add_argument("--fractions", type=float, nargs="+", default=[0.0, 0.3, 0.6, 0.9, 0.98])
    a.add_argument("--leave-kb", type=int, nargs="+", default=[0, 64, 512])
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"no executable atlas at {args.bin}")
    cmds = {"kill": cmd_kill, "readers": cmd_readers, "concurrent": cmd_concurrent, "diskfull": cmd_diskfull}
    names = list(cmds) if args.cmd == "all" else [args.cmd]
    out = {}
    for name in names:
        t0 = time.monotonic()
        res = cmds[name](args)
        res["seconds"] = round(time.monotonic() - t0, 1)
        out[name] = res
        print(json.dumps({name: res}, indent=2))
        print(res.get("summary") or res.get("error") or res.get("skipped"))
        sys.stdout.flush()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)
    failed = [n for n, r in out.items() if r.get("pass") is False or "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Bad-input and fault catalogue for the `atlas` binary (stdlib only).

Every case states the outcome the contract promises (a typed error with its exit code
and `error[atlas-…]`, or success) and is judged against it: a hang (timeout) or a panic
(exit 101, or `panicked` on stderr) or a crash by signal is always a failure. Each case
works on a fresh copy of its repository under /tmp (pallets/flask from the local mirror,
or a small synthetic repository generated here), built first when it needs a graph.

Groups: A expand confinement, B damaged caches/graphs, C search index damage,
D concurrent readers, E other.

Usage:
  bench/bad_inputs.py [--bin PATH] [--only SUBSTR]… [--keep] [--timeout S] [--json FILE]
  bench/bad_inputs.py --list

Prints a Markdown table (case, group, expected, observed, pass) and a JSON summary.
Needs root for the mount cases (a read-only bind mount, tmpfs for disk-full); without
it they are skipped with a note. Never uses the network.
"""
import argparse
import contextlib
import fcntl
import json
import os
import random
import re
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.normpath(os.path.join(HERE, "..", "target", "release", "atlas"))
FLASK_MIRROR = "/work/.mirror/pallets+flask/repo"
DEFAULT_TIMEOUT = 20.0
SEARCH_Q = "request dispatch"
FLASK_SYM = "Flask.wsgi_app"
SYN_SYM = "Cart.total"
PROFILES = ("symbol", "flow", "architecture", "impact")
CODE_RE = re.compile(rb"error\[(atlas-[a-z0-9-]+)\]")


# ---------------------------------------------------------------------------------------
# BLAKE3 (hash mode, 32-byte output): the graph header checksum and expand refs' hash8.
# A direct port of the reference implementation; verified against atlas at start-up.
_IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
       0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)
_PERM = (2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8)
_CHUNK_START, _CHUNK_END, _PARENT, _ROOT = 1, 2, 4, 8


def _schedule():
    out, s = [], list(range(16))
    for _ in range(7):
        out.append(tuple(s))
        s = [s[i] for i in _PERM]
    return tuple(out)


_SCHED = _schedule()


def _compress(cv, m, counter, block_len, flags):
    M = 0xFFFFFFFF
    s0, s1, s2, s3, s4, s5, s6, s7 = cv
    s8, s9, s10, s11 = _IV[0], _IV[1], _IV[2], _IV[3]
    s12, s13, s14, s15 = counter & M, (counter >> 32) & M, block_len, flags
    for sc in _SCHED:
        s0 = (s0 + s4 + m[sc[0]]) & M; s12 ^= s0; s12 = ((s12 >> 16) | (s12 << 16)) & M
        s8 = (s8 + s12) & M; s4 ^= s8; s4 = ((s4 >> 12) | (s4 << 20)) & M
        s0 = (s0 + s4 + m[sc[1]]) & M; s12 ^= s0; s12 = ((s12 >> 8) | (s12 << 24)) & M
        s8 = (s8 + s12) & M; s4 ^= s8; s4 = ((s4 >> 7) | (s4 << 25)) & M
        s1 = (s1 + s5 + m[sc[2]]) & M; s13 ^= s1; s13 = ((s13 >> 16) | (s13 << 16)) & M
        s9 = (s9 + s13) & M; s5 ^= s9; s5 = ((s5 >> 12) | (s5 << 20)) & M
        s1 = (s1 + s5 + m[sc[3]]) & M; s13 ^= s1; s13 = ((s13 >> 8) | (s13 << 24)) & M
        s9 = (s9 + s13) & M; s5 ^= s9; s5 = ((s5 >> 7) | (s5 << 25)) & M
        s2 = (s2 + s6 + m[sc[4]]) & M; s14 ^= s2; s14 = ((s14 >> 16) | (s14 << 16)) & M
        s10 = (s10 + s14) & M; s6 ^= s10; s6 = ((s6 >> 12) | (s6 << 20)) & M
        s2 = (s2 + s6 + m[sc[5]]) & M; s14 ^= s2; s14 = ((s14 >> 8) | (s14 << 24)) & M
        s10 = (s10 + s14) & M; s6 ^= s10; s6 = ((s6 >> 7) | (s6 << 25)) & M
        s3 = (s3 + s7 + m[sc[6]]) & M; s15 ^= s3; s15 = ((s15 >> 16) | (s15 << 16)) & M
        s11 = (s11 + s15) & M; s7 ^= s11; s7 = ((s7 >> 12) | (s7 << 20)) & M
        s3 = (s3 + s7 + m[sc[7]]) & M; s15 ^= s3; s15 = ((s15 >> 8) | (s15 << 24)) & M
        s11 = (s11 + s15) & M; s7 ^= s11; s7 = ((s7 >> 7) | (s7 << 25)) & M
        s0 = (s0 + s5 + m[sc[8]]) & M; s15 ^= s0; s15 = ((s15 >> 16) | (s15 << 16)) & M
        s10 = (s10 + s15) & M; s5 ^= s10; s5 = ((s5 >> 12) | (s5 << 20)) & M
        s0 = (s0 + s5 + m[sc[9]]) & M; s15 ^= s0; s15 = ((s15 >> 8) | (s15 << 24)) & M
        s10 = (s10 + s15) & M; s5 ^= s10; s5 = ((s5 >> 7) | (s5 << 25)) & M
        s1 = (s1 + s6 + m[sc[10]]) & M; s12 ^= s1; s12 = ((s12 >> 16) | (s12 << 16)) & M
        s11 = (s11 + s12) & M; s6 ^= s11; s6 = ((s6 >> 12) | (s6 << 20)) & M
        s1 = (s1 + s6 + m[sc[11]]) & M; s12 ^= s1; s12 = ((s12 >> 8) | (s12 << 24)) & M
        s11 = (s11 + s12) & M; s6 ^= s11; s6 = ((s6 >> 7) | (s6 << 25)) & M
        s2 = (s2 + s7 + m[sc[12]]) & M; s13 ^= s2; s13 = ((s13 >> 16) | (s13 << 16)) & M
        s8 = (s8 + s13) & M; s7 ^= s8; s7 = ((s7 >> 12) | (s7 << 20)) & M
        s2 = (s2 + s7 + m[sc[13]]) & M; s13 ^= s2; s13 = ((s13 >> 8) | (s13 << 24)) & M
        s8 = (s8 + s13) & M; s7 ^= s8; s7 = ((s7 >> 7) | (s7 << 25)) & M
        s3 = (s3 + s4 + m[sc[14]]) & M; s14 ^= s3; s14 = ((s14 >> 16) | (s14 << 16)) & M
        s9 = (s9 + s14) & M; s4 ^= s9; s4 = ((s4 >> 12) | (s4 << 20)) & M
        s3 = (s3 + s4 + m[sc[15]]) & M; s14 ^= s3; s14 = ((s14 >> 8) | (s14 << 24)) & M
        s9 = (s9 + s14) & M; s4 ^= s9; s4 = ((s4 >> 7) | (s4 << 25)) & M
    return (s0 ^ s8, s1 ^ s9, s2 ^ s10, s3 ^ s11, s4 ^ s12, s5 ^ s13, s6 ^ s14, s7 ^ s15)


def _words(block):
    if len(block) < 64:
        block = block + bytes(64 - len(block))
    return struct.unpack("<16I", block)


def blake3(data):
    data = bytes(data)
    n_chunks = max(1, (len(data) + 1023) // 1024)
    stack, last = [], None
    for ci in range(n_chunks):
        chunk = data[ci * 1024:(ci + 1) * 1024]
        nblocks = max(1, (len(chunk) + 63) // 64)
        cv = _IV
        out = None
        for bi in range(nblocks):
            block = chunk[bi * 64:(bi + 1) * 64]
            flags = (_CHUNK_START if bi == 0 else 0) | (_CHUNK_END if bi == nblocks - 1 else 0)
            if bi == nblocks - 1:
                out = (cv, _words(block), ci, len(block), flags)
            else:
                cv = _compress(cv, _words(block), ci, 64, flags)
        if ci == n_chunks - 1:
            last = out
        else:
            new_cv = _compress(*out)
            total = ci + 1
            while total & 1 == 0:
                new_cv = _compress(_IV, stack.pop() + new_cv, 0, 64, _PARENT)
                total >>= 1
            stack.append(new_cv)
    out = last
    while stack:
        out = (_IV, stack.pop() + _compress(*out), 0, 64, _PARENT)
    cv, words, _, block_len, flags = out
    return struct.pack("<8I", *_compress(cv, words, 0, block_len, flags | _ROOT))


def hash8(path_or_bytes):
    data = path_or_bytes
    if isinstance(path_or_bytes, str):
        with open(path_or_bytes, "rb") as f:
            data = f.read()
    return blake3(data)[:4].hex()


# ---------------------------------------------------------------------------------------
# Running atlas


class Run:
    def __init__(self, argv, rc, out, err, secs, timed_out):
        self.argv, self.rc, self.out, self.err = argv, rc, out or b"", err or b""
        self.secs, self.timed_out = secs, timed_out

    @property
    def code(self):
        m = CODE_RE.search(self.err)
        return m.group(1).decode() if m else None

    @property
    def panicked(self):
        return self.rc == 101 or b"panicked" in self.err

    @property
    def signalled(self):
        return self.rc is not None and self.rc < 0 and not self.timed_out

    @property
    def obs(self):
        if self.timed_out:
            return f"timeout {self.secs:.0f}s"
        if self.panicked:
            return f"PANIC exit {self.rc}"
        if self.signalled:
            try:
                name = signal.Signals(-self.rc).name
            except ValueError:
                name = str(-self.rc)
            return f"killed by {name}"
        s = f"exit {self.rc}"
        if self.code:
            s += f" {self.code}"
        return s

    def json(self):
        try:
            return json.loads(self.out)
        except (ValueError, UnicodeDecodeError):
            return None

    def short_cmd(self):
        parts = []
        for a in self.argv[1:]:
            a = a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a)
            parts.append(a if len(a) <= 40 else a[:37] + "…")
        return " ".join(parts)


def run_proc(argv, cwd=None, env=None, timeout=DEFAULT_TIMEOUT, stdin_data=None, stdout_path=None):
    start = time.monotonic()
    stdout = open(stdout_path, "wb") if stdout_path else subprocess.PIPE
    try:
        p = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True,
                             stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
                             stdout=stdout, stderr=subprocess.PIPE)
    except OSError as e:  # E2BIG and friends: report as a harness error
        if stdout_path:
            stdout.close()
        return Run(argv, 127, b"", f"harness: cannot start: {e}".encode(), 0.0, False)
    timed_out = False
    try:
        out, err = p.communicate(stdin_data, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    finally:
        if stdout_path:
            stdout.close()
    return Run(argv, p.returncode, out, err, time.monotonic() - start, timed_out)


class Skip(Exception):
    pass


class Harness:
    def __init__(self, args):
        self.bin = os.path.abspath(args.bin)
        self.keep = args.keep
        self.timeout = args.timeout
        self.root = tempfile.mkdtemp(prefix="atlas-bad-", dir="/tmp")
        self.templates = os.path.join(self.root, "templates")
        os.makedirs(self.templates)
        self._flask = None
        self._syn = None
        self.env = clean_env()
        self.mounts_ok = None

    def flask_template(self):
        if self._flask is None:
            dst = os.path.join(self.templates, "flask")
            os.makedirs(dst)
            arch = subprocess.run(["git", "-C", FLASK_MIRROR, "archive", "HEAD"], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", dst], input=arch.stdout, check=True)
            self._flask = dst
        return self._flask

    def syn_template(self):
        if self._syn is None:
            dst = os.path.join(self.templates, "syn")
            write_synthetic(dst)
            self._syn = dst
        return self._syn

    def can_mount(self):
        if self.mounts_ok is None:
            d = os.path.join(self.root, "mount-probe")
            os.makedirs(d)
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", d], capture_output=True)
            self.mounts_ok = r.returncode == 0
            if self.mounts_ok:
                subprocess.run(["umount", d], capture_output=True)
        return self.mounts_ok


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ATLAS_") and k not in ("CLAUDE_PROJECT_DIR", "WORKSPACE_FOLDER_PATHS")}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


SYNTHETIC = {
    "README.md": "# Shop\n\nA tiny shop.\n\n## Discounts\n\nHow the discount is applied at checkout.\n",
    "shop/__init__.py": "",
    "shop/models.py": (
        "class Item:\n"
        "    def __init__(self, name, price):\n"
        "        self.name = name\n"
        "        self.price = price\n\n\n"
        "class Cart:\n"
        "    \"\"\"A shopping cart.\"\"\"\n\n"
        "    def __init__(self, items):\n"
        "        self.items = list(items)\n\n"
        "    def total(self):\n"
        "        return sum(i.price for i in self.items)\n\n"
        "    def apply_discount(self, pct):\n"
        "        return round(self.total() * (1 - pct), 2)\n\n\n"
        "def checkout(cart):\n"
        "    return cart.apply_discount(0.1)\n"
    ),
    "shop/api.py": (
        "from shop.models import Cart, Item, checkout\n\n\n"
        "def handle(payload):\n"
        "    cart = Cart(Item(p['name'], p['price']) for p in payload)\n"
        "    return checkout(cart)\n"
    ),
    "tests/test_models.py": (
        "from shop.models import Cart, Item\n\n\n"
        "def test_total():\n"
        "    assert Cart([Item('a', 2)]).total() == 2\n"
    ),
    "rs/Cargo.toml": "[package]\nname = \"ledger\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    "rs/src/lib.rs": (
        "pub mod book;\n\n"
        "pub struct Ledger {\n    entries: Vec<i64>,\n}\n\n"
        "impl Ledger {\n"
        "    pub fn new() -> Self {\n        Ledger { entries: Vec::new() }\n    }\n"
        "    pub fn add(&mut self, v: i64) {\n        self.entries.push(v);\n    }\n"
        "    pub fn balance(&self) -> i64 {\n        self.entries.iter().sum()\n    }\n"
        "}\n\n"
        "pub fn settle(l: &Ledger) -> i64 {\n    book::round_cents(l.balance())\n}\n"
    ),
    "rs/src/book.rs": "pub fn round_cents(v: i64) -> i64 {\n    (v / 100) * 100\n}\n",
    "web/package.json": "{\"name\": \"web\", \"version\": \"1.0.0\"}\n",
    "web/src/util.ts": "export function format(s: string): string {\n  return s.trim();\n}\n",
    "web/src/app.ts": (
        "import { format } from './util';\n\n"
        "export class Page {\n"
        "  title(): string {\n    return ' t ';\n  }\n"
        "  render(): string {\n    return format(this.title());\n  }\n"
        "}\n"
    ),
    "web/src/legacy.js": "function greet(n) {\n  return 'hi ' + n;\n}\nmodule.exports = { greet };\n",
    "go/main.go": (
        "package main\n\nimport \"fmt\"\n\n"
        "func total(xs []int) int {\n\ts := 0\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s\n}\n\n"
        "func main() {\n\tfmt.Println(total([]int{1, 2}))\n}\n"
    ),
}


def write_synthetic(dst, files=SYNTHETIC):
    for rel, text in files.items():
        path = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    os.makedirs(dst, exist_ok=True)


class Ctx:
    """One case's scratch space, its atlas runs and its checks."""

    def __init__(self, h, case):
        self.h = h
        self.case = case
        self.tmp = tempfile.mkdtemp(prefix=case.name[:40] + "-", dir=h.root)
        self.runs = []
        self.checks = []  # (ok, label, text)
        self.notes = []
        self.cleanups = []
        self.build_report = None

    # repositories -----------------------------------------------------------------------
    def _copy(self, src, name, build):
        dst = os.path.join(self.tmp, name)
        shutil.copytree(src, dst, symlinks=True)
        if build:
            self.build(dst)
        return dst

    def flask(self, build=True, name="flask"):
        return self._copy(self.h.flask_template(), name, build)

    def syn(self, build=True, name="syn", extra=None):
        dst = self._copy(self.h.syn_template(), name, False)
        for rel, data in (extra or {}).items():
            p = os.path.join(dst, rel) if isinstance(rel, str) else os.path.join(dst.encode(), rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(data if isinstance(data, bytes) else data.encode())
        if build:
            self.build(dst)
        return dst

    def empty(self, name="empty"):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        return d

    def build(self, repo, *extra, must=True):
        r = self.atlas("build", "--format", "json", *extra, repo=repo)
        if must and r.rc != 0:
            raise SetupError(f"setup build failed: {r.obs}: {r.err.decode('utf-8', 'replace')[-200:]}")
        self.build_report = r.json()
        return r

    # running ----------------------------------------------------------------------------
    def atlas(self, *args, repo=None, graph=None, cwd=None, env=None, timeout=None, stdin=None,
              stdout_path=None, env_add=None):
        argv = [self.h.bin]
        if repo is not None:
            argv += ["--code", repo]
        if graph is not None:
            argv += ["--graph", graph]
        argv += list(args)
        e = dict(self.h.env if env is None else env)
        e.update(env_add or {})
        r = run_proc(argv, cwd=cwd or self.tmp, env=e, timeout=timeout or self.h.timeout,
                     stdin_data=stdin, stdout_path=stdout_path)
        self.runs.append(r)
        return r

    # checks -----------------------------------------------------------------------------
    def check(self, r, rcs, codes=None, label=None, pred=None, why=None, usage_ok=True):
        """Exit code in `rcs`; on a non-zero exit, the error code in `codes` (when given)."""
        label = label or _verb(r)
        ok, reason = True, ""
        if r.timed_out:
            ok, reason = False, "timeout"
        elif r.panicked:
            ok, reason = False, "panic: " + _panic_line(r.err)
        elif r.signalled:
            ok, reason = False, "crash: " + r.obs
        elif r.rc not in rcs:
            ok, reason = False, f"exit {r.rc}{' ' + r.code if r.code else ''}, want {_fmt_rcs(rcs, codes)}"
            msg = _first_err_line(r.err)
            if msg:
                reason += f" ({msg})"
        elif codes and r.rc != 0 and r.code not in codes and not (
                usage_ok and r.rc == 2 and r.code is None and b"error:" in r.err):
            # (a clap usage error — exit 2 with `error:` and no atlas code — is accepted
            # wherever exit 2 is, unless the case says otherwise)
            ok, reason = False, f"code {r.code}, want {'/'.join(codes)}"
        elif pred is not None and not pred(r):
            ok, reason = False, why or "output check failed"
        self.checks.append((ok, label, r.obs, reason))
        return ok

    def expect(self, ok, label, obs, reason):
        self.checks.append((bool(ok), label, obs, "" if ok else reason))
        return bool(ok)

    def note(self, text):
        self.notes.append(text)

    def graph_dir(self, repo):
        return os.path.join(repo, ".agent-spec", "graph")

    def current(self, repo):
        with open(os.path.join(self.graph_dir(repo), "CURRENT")) as f:
            return f.read().strip()

    def search_dir(self, repo):
        return os.path.join(self.graph_dir(repo), "search", self.current(repo))

    def graph_file(self, repo):
        return os.path.join(self.graph_dir(repo), "generations", self.current(repo), "graph.atlas")

    def mount_tmpfs(self, path, size):
        if not self.h.can_mount():
            raise Skip("tmpfs mount not permitted")
        os.makedirs(path, exist_ok=True)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path], capture_output=True)
        if r.returncode != 0:
            raise Skip("tmpfs mount failed: " + r.stderr.decode().strip())
        self.cleanups.append(lambda: subprocess.run(["umount", "-l", path], capture_output=True))

    def bind_ro(self, src, dst):
        os.makedirs(dst, exist_ok=True)
        r1 = subprocess.run(["mount", "--bind", src, dst], capture_output=True)
        if r1.returncode != 0:
            raise Skip("bind mount failed: " + r1.stderr.decode().strip())
        self.cleanups.append(lambda: subprocess.run(["umount", "-l", dst], capture_output=True))
        r2 = subprocess.run(["mount", "-o", "remount,bind,ro", dst], capture_output=True)
        if r2.returncode != 0:
            raise Skip("read-only remount failed: " + r2.stderr.decode().strip())
        probe = os.path.join(dst, ".atlas-ro-probe")
        try:
            open(probe, "w").close()
            os.unlink(probe)
            raise Skip("bind mount is not read-only")
        except OSError:
            pass

    def close(self):
        for fn in reversed(self.cleanups):
            with contextlib.suppress(Exception):
                fn()
        if not self.h.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


class SetupError(Exception):
    pass


def _verb(r):
    args = [a.decode("utf-8", "replace") if isinstance(a, bytes) else a for a in r.argv[1:]]
    i = 0
    while i < len(args) and args[i] in ("--code", "--graph"):
        i += 2
    return " ".join(args[i:i + 2])[:30] if i < len(args) else "atlas"


def _fmt_rcs(rcs, codes):
    s = "/".join(str(x) for x in rcs)
    if codes:
        s += " " + "|".join(codes)
    return s


def _first_err_line(err):
    for line in err.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()[:120]
    return ""


def _panic_line(err):
    for line in err.decode("utf-8", "replace").splitlines():
        if "panicked" in line:
            return line.strip()[:160]
    return _first_err_line(err)


# ---------------------------------------------------------------------------------------
# Case registry

class Case:
    def __init__(self, name, group, expected, fn):
        self.name, self.group, self.expected, self.fn = name, group, expected, fn


CASES = []


def case(name, group, expected):
    def deco(fn):
        CASES.append(Case(name, group, expected, fn))
        return fn
    return deco


def add(name, group, expected, fn):
    CASES.append(Case(name, group, expected, fn))


# small file helpers
def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def write(path, data):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def read(path):
    with open(path, "rb") as f:
        return f.read()


def tree_paths(root):
    out = set()
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            out.add(os.path.relpath(os.path.join(d, n), root))
    return out


def leftovers(graph_dir):
    """`.staging/*` entries and `*.tmp*` paths left in a graph directory."""
    bad = []
    staging = os.path.join(graph_dir, ".staging")
    if os.path.isdir(staging):
        bad += [".staging/" + n for n in os.listdir(staging)]
    for rel in tree_paths(graph_dir) if os.path.isdir(graph_dir) else []:
        if ".tmp" in os.path.basename(rel):
            bad.append(rel)
    return bad


# =======================================================================================
# A. expand confinement

REF_UNKNOWN = ("atlas-ref-unknown",)
A_EXPECT = "exit 9 atlas-ref-unknown, no file content"


def _expand_unknown(c, repo, ref, secret=None, timeout=None):
    r = c.atlas("expand", ref, repo=repo, timeout=timeout)
    leaked = secret is not None and secret in (r.out + r.err)
    c.check(r, (9,), REF_UNKNOWN, label="expand")
    c.expect(not leaked, "no-leak", "leaked" if leaked else "no leak", "file content printed")
    return r


def _passwd():
    data = read("/etc/passwd")
    return data, hash8(data), data.split(b"\n")[0]


def a_valid(c):
    repo = c.flask()
    app = os.path.join(repo, "src/flask/app.py")
    ref = f"src/flask/app.py#L1-L20@{hash8(app)}"
    r = c.atlas("expand", ref, "--format", "json", repo=repo)
    d = r.json()
    c.check(r, (0,), pred=lambda r: d and d.get("items") and d["items"][0].get("content"), why="no content")


add("A01-valid-ref", "A", "exit 0, content of the lines", a_valid)


def a_valid_from_search(c):
    repo = c.flask()
    s = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", repo=repo)
    if not c.check(s, (0,), label="search"):
        return
    refs = [h["ref"] for h in (s.json() or {}).get("hits", [])][:5]
    r = c.atlas("expand", *refs, repo=repo)
    c.check(r, (0,), label=f"expand {len(refs)} refs", pred=lambda r: len(r.out) > 0, why="empty output")


add("A02-search-refs-expand", "A", "exit 0 for 5 refs from search", a_valid_from_search)


def a_stale(c):
    repo = c.flask()
    app = os.path.join(repo, "src/flask/app.py")
    ref = f"src/flask/app.py#L1-L20@{hash8(app)}"
    append(app, "\n# changed\n")
    r = c.atlas("expand", ref, repo=repo)
    c.check(r, (9,), ("atlas-expand-stale",))


add("A03-stale-ref", "A", "exit 9 atlas-expand-stale", a_stale)


def a_abs_passwd(c):
    repo = c.flask()
    data, h, first = _passwd()
    _expand_unknown(c, repo, f"/etc/passwd#L1-L3@{h}", first)


add("A04-abs-etc-passwd", "A", A_EXPECT, a_abs_passwd)


def a_abs_missing(c):
    repo = c.flask()
    _expand_unknown(c, repo, "/etc/atlas-no-such-file#L1-L3@0badc0de")


add("A05-abs-nonexistent", "A", "exit 9 atlas-ref-unknown", a_abs_missing)


def _norm(err, ref):
    text = err.decode("utf-8", "replace").replace(ref, "<REF>")
    path = ref.rsplit("#", 1)[0]
    return text.replace(path, "<PATH>")


def a_same_shape(c):
    repo = c.flask()
    data, h, first = _passwd()
    refs = [f"/etc/passwd#L1-L3@{h}", "/etc/atlas-no-such-file#L1-L3@0badc0de",
            f"../../../../../../../../etc/passwd#L1-L3@{h}", "src/flask/no_such.py#L1-L3@0badc0de",
            f"src/flask/app.py/../../../../../../../../etc/passwd#L1-L3@{h}"]
    shapes = []
    for ref in refs:
        r = c.atlas("expand", ref, repo=repo)
        c.check(r, (9,), REF_UNKNOWN, label="expand")
        shapes.append((r.rc, _norm(r.err, ref)))
    same = all(s == shapes[0] for s in shapes)
    c.expect(same, "same-shape", "same" if same else "differs",
             "messages differ between existing and missing files: " +
             " | ".join(sorted({s[1].strip()[:60] for s in shapes})))


add("A06-same-message-shape", "A", "5 outside refs (exist/missing): identical exit and message shape", a_same_shape)


def a_dotdot(c):
    repo = c.flask()
    data, h, first = _passwd()
    _expand_unknown(c, repo, f"../../../../../../../../../../etc/passwd#L1-L3@{h}", first)


add("A07-dotdot-traversal", "A", A_EXPECT, a_dotdot)


def a_src_dotdot(c):
    repo = c.flask()
    data, h, first = _passwd()
    _expand_unknown(c, repo, f"src/../../../../../../../../../etc/passwd#L1-L3@{h}", first)


add("A08-src-dotdot-traversal", "A", A_EXPECT, a_src_dotdot)


def a_inner_dotdot(c):
    repo = c.flask()
    app = os.path.join(repo, "src/flask/app.py")
    r = c.atlas("expand", f"src/flask/../flask/app.py#L1-L5@{hash8(app)}", repo=repo)
    c.check(r, (0, 9), REF_UNKNOWN, label="expand")


add("A09-inner-dotdot-to-inventory-file", "A",
    "exit 0 (same inventory file) or 9 atlas-ref-unknown; never a read outside", a_inner_dotdot)


def a_symlink_file(c, before):
    repo = c.flask(build=not before)
    data, h, first = _passwd()
    os.symlink("/etc/passwd", os.path.join(repo, "src/flask/leak.py"))
    if before:
        c.build(repo)
    _expand_unknown(c, repo, f"src/flask/leak.py#L1-L3@{h}", first)


add("A10-symlink-to-outside-file", "A", A_EXPECT + " (link made after build)", lambda c: a_symlink_file(c, False))
add("A11-symlink-to-outside-prebuild", "A", A_EXPECT + " (link made before build)", lambda c: a_symlink_file(c, True))


def a_dir_symlink(c):
    repo = c.flask()
    data, h, first = _passwd()
    os.symlink("/", os.path.join(repo, "rootlink"))
    _expand_unknown(c, repo, f"rootlink/etc/passwd#L1-L3@{h}", first)


add("A12-dir-symlink-to-root", "A", A_EXPECT, a_dir_symlink)


def a_current(c):
    repo = c.flask()
    cur = os.path.join(c.graph_dir(repo), "CURRENT")
    _expand_unknown(c, repo, f".agent-spec/graph/CURRENT#L1-L1@{hash8(cur)}", read(cur).strip())


add("A13-graph-CURRENT", "A", A_EXPECT, a_current)


def a_manifest(c):
    repo = c.flask()
    fp = c.current(repo)
    rel = f".agent-spec/graph/generations/{fp}/manifest.json"
    p = os.path.join(repo, rel)
    _expand_unknown(c, repo, f"{rel}#L1-L3@{hash8(p)}", read(p).split(b"\n")[1] if b"\n" in read(p) else None)


add("A14-generation-manifest", "A", A_EXPECT, a_manifest)


def a_dev_zero(c):
    repo = c.flask()
    _expand_unknown(c, repo, "/dev/zero#L1-L1@00000000")


add("A15-dev-zero", "A", "exit 9 atlas-ref-unknown in < 20 s", a_dev_zero)


def a_dev_zero_rel(c):
    repo = c.flask()
    _expand_unknown(c, repo, "../../../../../../../../dev/zero#L1-L1@af1349b9")


add("A16-dotdot-dev-zero", "A", "exit 9 atlas-ref-unknown in < 20 s", a_dev_zero_rel)


def a_fifo(c):
    repo = c.flask()
    os.mkfifo(os.path.join(repo, "fifo.py"))
    _expand_unknown(c, repo, "fifo.py#L1-L1@af1349b9")


add("A17-fifo-in-repo", "A", "exit 9 atlas-ref-unknown in < 20 s (mkfifo after build)", a_fifo)


def a_hidden(c):
    repo = c.flask(build=False)
    secret = b"API_KEY = 'hidden-secret-value'\n"
    write(os.path.join(repo, ".secret.py"), secret)
    c.build(repo)
    _expand_unknown(c, repo, f".secret.py#L1-L1@{hash8(secret)}", b"hidden-secret-value")


add("A18-hidden-file-not-inventoried", "A", A_EXPECT, a_hidden)


def a_ignored(c):
    repo = c.flask(build=False)
    secret = b"TOKEN = 'ignored-secret-value'\n"
    write(os.path.join(repo, "private/creds.py"), secret)
    write(os.path.join(repo, ".ignore"), "private/\n")
    write(os.path.join(repo, ".gitignore"), "private/\n")
    c.build(repo)
    _expand_unknown(c, repo, f"private/creds.py#L1-L1@{hash8(secret)}", b"ignored-secret-value")


add("A19-ignored-file-not-inventoried", "A", A_EXPECT, a_ignored)


def a_new_file(c):
    repo = c.flask()
    secret = b"NEW = 'created-after-build'\n"
    write(os.path.join(repo, "src/flask/newfile.py"), secret)
    _expand_unknown(c, repo, f"src/flask/newfile.py#L1-L1@{hash8(secret)}", b"created-after-build")


add("A20-file-created-after-build", "A", A_EXPECT, a_new_file)


def a_proc_environ(c):
    repo = c.flask()
    r = c.atlas("expand", "/proc/self/environ#L1-L1@00000000", repo=repo,
                env_add={"ATLAS_LEAK_CANARY": "canary-7f3a"})
    c.check(r, (9,), REF_UNKNOWN, label="expand")
    leaked = b"canary-7f3a" in r.out + r.err
    c.expect(not leaked, "no-leak", "leaked" if leaked else "no leak", "environment printed")


add("A21-proc-self-environ", "A", A_EXPECT, a_proc_environ)


def a_abs_inrepo(c):
    repo = c.flask()
    app = os.path.join(repo, "src/flask/app.py")
    _expand_unknown(c, repo, f"{app}#L1-L5@{hash8(app)}")


add("A22-absolute-path-of-inventory-file", "A", "exit 9 atlas-ref-unknown (absolute paths are never refs)", a_abs_inrepo)


def a_directory(c):
    repo = c.flask()
    _expand_unknown(c, repo, "src/flask#L1-L1@00000000")


add("A23-directory-ref", "A", "exit 9 atlas-ref-unknown", a_directory)


def a_proc_root(c):
    repo = c.flask()
    data, h, first = _passwd()
    _expand_unknown(c, repo, f"/proc/self/root/etc/passwd#L1-L3@{h}", first)


add("A24-proc-self-root-passwd", "A", A_EXPECT, a_proc_root)


def a_mixed(c):
    repo = c.flask()
    data, h, first = _passwd()
    app = os.path.join(repo, "src/flask/app.py")
    r = c.atlas("expand", f"src/flask/app.py#L1-L5@{hash8(app)}", f"/etc/passwd#L1-L3@{h}", repo=repo)
    c.check(r, (9,), REF_UNKNOWN, label="expand")
    c.expect(first not in r.out + r.err, "no-leak", "ok", "passwd content printed")


add("A25-valid-plus-outside-ref", "A", A_EXPECT + " (one valid, one outside)", a_mixed)


def a_six_refs(c):
    repo = c.flask()
    app = os.path.join(repo, "src/flask/app.py")
    ref = f"src/flask/app.py#L1-L5@{hash8(app)}"
    r = c.atlas("expand", *[ref] * 6, repo=repo)
    c.check(r, (2,), ("atlas-invalid-input",))
    r = c.atlas("expand", *[ref] * 5, repo=repo)
    c.check(r, (0,), label="expand x5")


add("A26-six-refs", "A", "6 refs: exit 2 atlas-invalid-input; 5 refs: exit 0", a_six_refs)


def a_huge_lines(c):
    repo = c.flask()
    app = os.path.join(repo, "src/flask/app.py")
    h = hash8(app)
    for ref, rcs in ((f"src/flask/app.py#L1-L4294967295@{h}", (0, 9)),
                     (f"src/flask/app.py#L4294967295-L4294967295@{h}", (9,)),
                     (f"src/flask/app.py#L1-L99999999999999999999@{h}", (2, 9)),
                     (f"src/flask/app.py#L0-L5@{h}", (2, 9))):
        r = c.atlas("expand", ref, repo=repo)
        c.check(r, rcs, ("atlas-invalid-input", "atlas-expand-stale", "atlas-ref-unknown"), label=ref.split("#")[1][:24])


add("A27-huge-line-numbers", "A", "typed: exit 0/2/9, never panic", a_huge_lines)


def a_offsets(c):
    repo = c.flask()
    app = os.path.join(repo, "src/flask/app.py")
    h = hash8(app)
    for suffix, rcs in (("~18446744073709551615", (0, 9)), ("~99999999999999999999999", (2, 9)),
                        ("~-1", (2, 9)), ("~", (2, 9)), ("~6000~1", (2, 9))):
        r = c.atlas("expand", f"src/flask/app.py#L1-L2000@{h}{suffix}", repo=repo)
        c.check(r, rcs, ("atlas-invalid-input", "atlas-expand-stale", "atlas-ref-unknown"), label=suffix)


add("A28-offset-overflow", "A", "typed: exit 0/2/9, never panic", a_offsets)


def a_garbage_refs(c):
    repo = c.flask()
    for ref in ("", "#", "#L1-L1@00000000", "@", "x.py#L1-L1@", "x.py#L1-L1@zzzzzzzz", "x.py#La-Lb@00000000",
                "x.py#L5-L1@00000000", "\u202e.py#L1-L1@00000000", "ü名.py#L1-L1@00000000"):
        r = c.atlas("expand", ref, repo=repo)
        c.check(r, (2, 9), ("atlas-invalid-input", "atlas-ref-unknown"), label=repr(ref)[:20])


add("A29-garbage-refs", "A", "exit 2 atlas-invalid-input or 9 atlas-ref-unknown", a_garbage_refs)


def a_long_path(c):
    repo = c.flask()
    r = c.atlas("expand", "a/" * 30000 + "x.py#L1-L1@00000000", repo=repo)
    c.check(r, (2, 9), ("atlas-invalid-input", "atlas-ref-unknown"))


add("A30-60KB-ref-path", "A", "exit 2 or 9 atlas-ref-unknown (ENAMETOOLONG is not an I/O error of Atlas)", a_long_path)


def a_odd_name(c):
    repo = c.syn(build=False, extra={"shop/odd#name@v2.py": "def odd():\n    return 1\n"})
    c.build(repo)
    p = os.path.join(repo, "shop/odd#name@v2.py")
    r = c.atlas("expand", f"shop/odd#name@v2.py#L1-L2@{hash8(p)}", repo=repo)
    c.check(r, (0,), pred=lambda r: b"def odd" in r.out, why="content missing")


add("A31-file-name-with-#-and-@", "A", "exit 0 (an inventory file named odd#name@v2.py)", a_odd_name)


def a_graph_other_dir(c):
    """--graph elsewhere: refs are still confined to the inventory under the code root."""
    repo = c.flask(build=False)
    g = os.path.join(c.tmp, "g")
    r = c.atlas("build", repo=repo, graph=g)
    c.check(r, (0,), label="build")
    data, h, first = _passwd()
    r = c.atlas("expand", f"/etc/passwd#L1-L3@{h}", repo=repo, graph=g)
    c.check(r, (9,), REF_UNKNOWN, label="expand")
    c.expect(first not in r.out + r.err, "no-leak", "ok", "passwd printed")


add("A32-external-graph-dir", "A", A_EXPECT + " (--graph outside the repo)", a_graph_other_dir)


def a_symlink_inrepo_target(c):
    """A symlink inside the repo pointing to an inventory file is not itself an inventory path."""
    repo = c.flask()
    os.symlink("app.py", os.path.join(repo, "src/flask/alias.py"))
    app = os.path.join(repo, "src/flask/app.py")
    r = c.atlas("expand", f"src/flask/alias.py#L1-L5@{hash8(app)}", repo=repo)
    c.check(r, (9,), REF_UNKNOWN)


add("A33-symlink-alias-to-inventory-file", "A", "exit 9 atlas-ref-unknown (alias.py not in inventory)", a_symlink_inrepo_target)


# =======================================================================================
# B. damaged caches and graphs


def _cache_files(repo, largest=None):
    root = os.path.join(c_graph(repo), "cache")
    files = []
    for d, _, names in os.walk(root):
        files += [os.path.join(d, n) for n in names if n.endswith(".facts")]
    files.sort()
    if largest:
        files = sorted(files, key=lambda p: (-os.path.getsize(p), p))[:largest]
        files.sort()
    return files


def c_graph(repo):
    return os.path.join(repo, ".agent-spec", "graph")


def _dump(c, repo, label="dump"):
    r = c.atlas("graph", "dump", repo=repo)
    c.check(r, (0,), label=label)
    return r.out


def _drop_heads_pack(repo):
    """Heads read from the entries, not the heads pack: a pack holds a good copy of each
    head, so an entry's damaged head is read (and repaired) only without it."""
    os.unlink(os.path.join(c_graph(repo), "cache", "heads.pack"))


def _forget_generations(repo, resolution=False):
    """No committed generation (and, with `resolution`, no resolution to reuse: every
    file is then resolved, so that every fact cache entry's body is read)."""
    os.unlink(os.path.join(c_graph(repo), "CURRENT"))
    shutil.rmtree(os.path.join(c_graph(repo), "generations"))
    if resolution:
        os.unlink(os.path.join(c_graph(repo), "resolution.bin"))


def _repaired_build(c, repo, reference_dump, repaired_before=None):
    """A build that repairs the damage, with the clean build's dump. With
    `repaired_before` (an edit's build, which reads only the heads of the entries it
    does not resolve, and may find none damaged), the build resolves every file: no
    generation, no resolution.bin, so that every body is read; the two count > 0."""
    if repaired_before is not None:
        _forget_generations(repo, resolution=True)
    r = c.atlas("build", "--format", "json", repo=repo)
    c.check(r, (0,), label="build")
    rep = r.json() or {}
    n = rep.get("cache_repaired")
    total = n + (repaired_before or 0) if isinstance(n, int) else n
    c.expect(isinstance(n, int) and total > 0, "cache_repaired", f"cache_repaired={n}"
             + ("" if repaired_before is None else f" (+{repaired_before} by the edit's build)"),
             "cache_repaired missing or 0")
    d = _dump(c, repo)
    same = d == reference_dump
    c.expect(same, "dump==clean", "equal" if same else "DIFFERS",
             f"dump differs from a clean build ({_diff_count(d, reference_dump)} lines)")


def _diff_count(a, b):
    la, lb = set(a.split(b"\n")), set(b.split(b"\n"))
    return len(la ^ lb)


def b_bitflip(seed, nfiles, nflips, mode):
    def fn(c):
        repo = c.flask()
        rng = random.Random(seed)
        files = _cache_files(repo, largest=60)
        victims = rng.sample(files, min(nfiles, len(files)))
        for p in victims:
            b = bytearray(read(p))
            for _ in range(nflips):
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
            write(p, bytes(b))
        _drop_heads_pack(repo)
        if mode == "regen":
            reference = _dump(c, repo, "clean dump")
            # Fact cache version 2 reads a body only for a file resolved.
            _forget_generations(repo, resolution=True)
        else:
            ref_repo = c.flask(build=False, name="flask-ref")
            for r_ in (repo, ref_repo):
                append(os.path.join(r_, "CHANGES.rst"), "\nedit for the cache test\n")
            c.build(ref_repo)
            reference = _dump(c, ref_repo, "clean dump")
            # Fact cache version 2: the edit's build reads the body of an entry only
            # when it resolves the file; a damaged body is found by a build that does.
            r = c.atlas("build", "--format", "json", repo=repo)
            c.check(r, (0,), label="edit build")
            d = _dump(c, repo)
            c.expect(d == reference, "edit dump==clean", "equal" if d == reference else "DIFFERS",
                     f"dump differs from a clean build ({_diff_count(d, reference)} lines)")
            _repaired_build(c, repo, reference, (r.json() or {}).get("cache_repaired") or 0)
            return
        _repaired_build(c, repo, reference)
    return fn


for i, (seed, nf, nb, mode) in enumerate([(1, 1, 1, "regen"), (2, 3, 4, "regen"), (3, 10, 16, "regen"),
                                          (4, 1, 1, "edit"), (5, 5, 8, "edit"), (6, 25, 1, "regen")]):
    add(f"B{i + 1:02d}-cache-bitflip-s{seed}-{nf}files-{nb}bits-{mode}", "B",
        "build exit 0, cache_repaired > 0, dump == clean build", b_bitflip(seed, nf, nb, mode))


def b_cache_op(op):
    def fn(c):
        repo = c.flask()
        reference = _dump(c, repo, "clean dump")
        files = _cache_files(repo, largest=10)
        a, b = files[0], files[-1]
        if op == "swap":
            da, db = read(a), read(b)
            write(a, db)
            write(b, da)
        elif op == "truncate":
            write(a, read(a)[: len(read(a)) // 2])
        elif op == "empty":
            write(a, b"")
        elif op == "garbage":
            write(a, random.Random(7).randbytes(len(read(a))))
        elif op == "duplicate":
            write(b, read(a))
        _drop_heads_pack(repo)
        _forget_generations(repo)
        _repaired_build(c, repo, reference)
    return fn


for n, (op, what) in enumerate([("swap", "two cache files swapped"), ("duplicate", "one cache file copied over another"),
                                ("truncate", "cache file truncated"), ("empty", "cache file emptied"),
                                ("garbage", "cache file replaced by random bytes")]):
    add(f"B{7 + n:02d}-cache-{op}", "B", f"{what}: build exit 0, cache_repaired > 0, dump == clean", b_cache_op(op))


def b_heads_pack(op):
    """A damaged heads pack is not used: the build reads the heads from their entries,
    publishes the clean build's graph and writes the pack again."""
    def fn(c):
        repo = c.flask()
        reference = _dump(c, repo, "clean dump")
        pack = os.path.join(c_graph(repo), "cache", "heads.pack")
        clean = read(pack)
        if op == "bitflip":
            b = bytearray(clean)
            b[len(b) // 2] ^= 0x10
            write(pack, bytes(b))
        elif op == "truncate":
            write(pack, clean[: len(clean) // 3])
        elif op == "garbage":
            write(pack, random.Random(11).randbytes(len(clean)))
        _forget_generations(repo, resolution=True)
        r = c.atlas("build", "--format", "json", repo=repo)
        c.check(r, (0,), label="build")
        d = _dump(c, repo)
        c.expect(d == reference, "dump==clean", "equal" if d == reference else "DIFFERS",
                 f"dump differs from a clean build ({_diff_count(d, reference)} lines)")
        again = read(pack) if os.path.exists(pack) else b""
        c.expect(again == clean, "pack written again", "equal" if again == clean else "DIFFERS",
                 "the pack was not written again as the clean build wrote it")
    return fn


for n, (op, what) in enumerate([("bitflip", "a bit flipped"), ("truncate", "truncated to a third"),
                                ("garbage", "replaced by random bytes")]):
    add(f"B11{'abc'[n]}-heads-pack-{op}", "B",
        f"heads pack {what}: build exit 0, dump == clean, pack written again", b_heads_pack(op))


def b_cache_dir_file(c):
    repo = c.flask()
    cache = os.path.join(c_graph(repo), "cache")
    shutil.rmtree(cache)
    write(cache, b"not a directory")
    append(os.path.join(repo, "src/flask/app.py"), "\n# edit\n")
    r = c.atlas("build", repo=repo)
    c.check(r, (0, 1), ("atlas-io",), label="build")
    r = c.atlas("status", repo=repo)
    c.check(r, (0,), label="status")


add("B12-cache-dir-is-a-file", "B", "build exit 0 (cache is an optimisation) or 1 atlas-io; status 0", b_cache_dir_file)


# graph payload mutations, header checksum recomputed
MUTATIONS = ("byte", "u32max", "bytes8", "u32big", "tail", "zero64", "u32inc", "copyblock")


def mutate_payload(payload, rng, style):
    b = bytearray(payload)
    n = len(b)
    if style == "byte":
        b[rng.randrange(n)] ^= rng.randrange(1, 256)
    elif style == "bytes8":
        for _ in range(8):
            b[rng.randrange(n)] ^= rng.randrange(1, 256)
    elif style == "u32max":
        i = rng.randrange(n // 4) * 4
        b[i:i + 4] = b"\xff\xff\xff\xff"
    elif style == "u32big":
        i = rng.randrange(n // 4) * 4
        b[i:i + 4] = struct.pack("<I", rng.randrange(1 << 16, 1 << 31))
    elif style == "u32inc":
        i = rng.randrange(n // 4) * 4
        v = struct.unpack("<I", b[i:i + 4])[0]
        b[i:i + 4] = struct.pack("<I", (v + 1) & 0xFFFFFFFF)
    elif style == "tail":
        b[n - 1 - rng.randrange(min(256, n))] ^= rng.randrange(1, 256)
    elif style == "zero64":
        i = rng.randrange(max(1, n // 16 - 4)) * 16
        b[i:i + 64] = bytes(len(b[i:i + 64]))
    elif style == "copyblock":
        src, dst = rng.randrange(n - 256), rng.randrange(n - 256)
        b[dst:dst + 256] = b[src:src + 256]
    return bytes(b)


def rewrite_graph(path, payload, fix_len=True):
    data = bytearray(read(path)[:64])
    if fix_len:
        data[16:24] = struct.pack("<Q", len(payload))
    data[24:56] = blake3(payload)
    write(path, bytes(data) + payload)


def b_graph_mutate(seeds, flask=False):
    def fn(c):
        repo = c.flask() if flask else c.syn()
        sym = FLASK_SYM if flask else SYN_SYM
        gpath = c.graph_file(repo)
        original = read(gpath)
        for seed in seeds:
            rng = random.Random(1000 + seed)
            style = MUTATIONS[seed % len(MUTATIONS)]
            rewrite_graph(gpath, mutate_payload(original[64:], rng, style))
            for args, rcs in ((("graph", "dump"), (0, 4)), (("status", "--format", "json"), (0, 4))):
                r = c.atlas(*args, repo=repo)
                c.check(r, rcs, ("atlas-graph-corrupt",), label=f"s{seed}/{style} {args[0]}")
            for prof in PROFILES:
                r = c.atlas("context", sym, "--profile", prof, "--frozen", "--format", "json", repo=repo)
                c.check(r, (0, 4, 7), ("atlas-graph-corrupt", "atlas-context-no-match", "atlas-context-ambiguous"),
                        label=f"s{seed}/{style} ctx {prof}")
            write(gpath, original)
    return fn


for k in range(12):
    seeds = tuple(range(4 * k, 4 * k + 4))
    add(f"B{13 + k:02d}-graph-mutate-syn-s{seeds[0]}-s{seeds[-1]}", "B",
        "dump/status exit 0 or 4 atlas-graph-corrupt; context x4 profiles --frozen 0/4 (7 = no-match tolerated)",
        b_graph_mutate(seeds))
for k, seed in enumerate((100, 102, 104, 106)):
    add(f"B{25 + k:02d}-graph-mutate-flask-s{seed}", "B",
        "dump/status exit 0 or 4 atlas-graph-corrupt; context x4 profiles --frozen 0/4 (7 tolerated)",
        b_graph_mutate((seed, seed + 1), flask=True))


def _reads_exit4(c, repo, label=""):
    for args in (("graph", "dump"), ("status",), ("context", SYN_SYM, "--profile", "symbol", "--frozen")):
        r = c.atlas(*args, repo=repo)
        c.check(r, (4,), ("atlas-graph-corrupt", "atlas-graph-incompatible"), label=label + args[0])


def b_truncated(c):
    repo = c.syn()
    g = c.graph_file(repo)
    write(g, read(g)[: len(read(g)) // 2])
    _reads_exit4(c, repo)


add("B29-graph-truncated", "B", "dump/status/context exit 4 atlas-graph-corrupt", b_truncated)


def b_truncated_rehash(c):
    repo = c.syn()
    g = c.graph_file(repo)
    payload = read(g)[64:]
    rewrite_graph(g, payload[: len(payload) // 2])
    for args in (("graph", "dump"), ("status",), ("context", SYN_SYM, "--profile", "symbol", "--frozen")):
        r = c.atlas(*args, repo=repo)
        c.check(r, (4,), ("atlas-graph-corrupt",), label=args[0])


add("B30-graph-truncated-header-fixed", "B", "payload halved, length+blake3 fixed: exit 4 atlas-graph-corrupt", b_truncated_rehash)


def b_header_cases(c):
    repo = c.syn()
    g = c.graph_file(repo)
    original = read(g)
    variants = {
        "empty": b"",
        "zeros64": bytes(64),
        "header-only": original[:64],
        "bad-magic": b"XTLASGR\0" + original[8:],
        "len-huge": original[:16] + struct.pack("<Q", (1 << 63)) + original[24:],
    }
    for name, data in variants.items():
        write(g, data)
        r = c.atlas("status", repo=repo)
        c.check(r, (4,), ("atlas-graph-corrupt",), label=name)


add("B31-graph-header-damage", "B", "empty/zero/header-only/bad magic/huge length: exit 4 atlas-graph-corrupt", b_header_cases)


def b_version(c):
    repo = c.syn()
    g = c.graph_file(repo)
    data = bytearray(read(g))
    data[8:16] = struct.pack("<II", 999, 999)
    write(g, bytes(data))
    r = c.atlas("status", repo=repo)
    c.check(r, (4,), ("atlas-graph-incompatible",))


add("B32-graph-future-version", "B", "exit 4 atlas-graph-incompatible", b_version)


def b_other_generation(c):
    repo = c.syn()
    g_old = read(c.graph_file(repo))
    append(os.path.join(repo, "shop/models.py"), "\n\ndef extra():\n    return 2\n")
    c.build(repo)
    write(c.graph_file(repo), g_old)
    r = c.atlas("status", repo=repo)
    c.check(r, (4,), ("atlas-graph-corrupt",))


add("B33-graph-of-another-generation", "B", "exit 4 atlas-graph-corrupt (fingerprint mismatch)", b_other_generation)


def b_mutated_then_build(c):
    repo = c.syn()
    g = c.graph_file(repo)
    rewrite_graph(g, mutate_payload(read(g)[64:], random.Random(5), "u32max"))
    r = c.atlas("build", repo=repo)
    c.check(r, (0, 4), ("atlas-graph-corrupt",), label="build")
    r = c.atlas("graph", "dump", repo=repo)
    c.check(r, (0, 4), ("atlas-graph-corrupt",), label="dump")


add("B34-mutated-graph-then-build", "B", "build 0/4, dump 0/4; never panic", b_mutated_then_build)


def b_manifest(c):
    repo = c.syn()
    man = os.path.join(os.path.dirname(c.graph_file(repo)), "manifest.json")
    for name, data in (("garbage", b"\x00{garbage"), ("wrong-types", b'{"truncated": 5, "skipped": "x", "partial": 3}'),
                       ("missing", None)):
        if data is None:
            os.unlink(man)
        else:
            write(man, data)
        r = c.atlas("status", "--format", "json", repo=repo)
        c.check(r, (0, 4), ("atlas-graph-corrupt",), label=f"status/{name}")
        r = c.atlas("graph", "dump", repo=repo)
        c.check(r, (0, 4), ("atlas-graph-corrupt",), label=f"dump/{name}")


add("B35-manifest-damage", "B", "status/dump exit 0 or 4 atlas-graph-corrupt", b_manifest)


def b_root_file(c):
    repo = c.syn()
    for data in (b"\xff\xfe\x00garbage", b"/nonexistent/dir\n", b""):
        write(os.path.join(c_graph(repo), "ROOT"), data)
        r = c.atlas("status", "--format", "json", repo=repo)
        c.check(r, (0,), label="status")


add("B36-ROOT-file-garbage", "B", "status exit 0", b_root_file)


# =======================================================================================
# C. search index damage

SEARCH_CORRUPT = ("atlas-search-corrupt",)


def _vectors(sdir):
    for n in os.listdir(sdir):
        if n.startswith("vectors-") and n.endswith(".bin"):
            return os.path.join(sdir, n)
    raise SetupError("no vectors file")


def _tantivy_file(sdir, ext):
    t = os.path.join(sdir, "tantivy")
    for n in sorted(os.listdir(t)):
        if n.endswith(ext):
            return os.path.join(t, n)
    raise SetupError(f"no tantivy *{ext}")


def _flip(path, start, length, seed):
    b = bytearray(read(path))
    rng = random.Random(seed)
    for i in range(start, min(len(b), start + length)):
        b[i] ^= rng.randrange(1, 256)
    write(path, bytes(b))


def _search_after_damage(c, repo, vectors_only):
    r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", repo=repo)
    d = r.json() or {}
    unavailable = ((d.get("arms") or {}).get("unavailable") or {}).get("vector")
    if vectors_only == "content":
        # Bytes inside a segment: a reader checks lengths and small files at open, so
        # damage deeper in a data file is caught when an arm reads it (typed, isolated:
        # arms.unavailable) or not at all by this query; `atlas build` verifies every byte.
        c.check(r, (0, 4), SEARCH_CORRUPT, label="search")
        return
    if vectors_only and r.rc == 0:
        c.expect(isinstance(unavailable, str) and unavailable, "search", r.obs + (" unavailable.vector" if unavailable else ""),
                 "exit 0 without arms.unavailable.vector")
    else:
        c.check(r, (4, 0) if vectors_only else (4,), SEARCH_CORRUPT, label="search")


def _repair(c, repo):
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="rebuild")
    r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", repo=repo)
    d = r.json() or {}
    c.check(r, (0,), label="search after build",
            pred=lambda r: "unavailable" not in (d.get("arms") or {}) and d.get("hits"),
            why="still degraded after build: " + json.dumps((d.get("arms") or {}))[:80])


def c_damage(fn, vectors_only):
    def run(c):
        repo = c.flask()
        sdir = c.search_dir(repo)
        fn(sdir)
        _search_after_damage(c, repo, vectors_only)
        _repair(c, repo)
    return run


def _trunc(path, frac=0.5):
    write(path, read(path)[: int(len(read(path)) * frac)])


C_DAMAGE = [
    ("term-truncated", "truncate a .term file", lambda s: _trunc(_tantivy_file(s, ".term")), False),
    ("term-zeroed", "zero a .term file (same size)", lambda s: write(_tantivy_file(s, ".term"), bytes(os.path.getsize(_tantivy_file(s, ".term")))), False),
    ("meta-json-deleted", "delete tantivy/meta.json", lambda s: os.unlink(os.path.join(s, "tantivy", "meta.json")), False),
    ("meta-json-garbage", "garbage tantivy/meta.json", lambda s: write(os.path.join(s, "tantivy", "meta.json"), b"{garbage"), False),
    ("store-flipped", "flip 4 KB of the .store segment file", lambda s: _flip(_tantivy_file(s, ".store"), 0, 4096, 1), "content"),
    ("idx-flipped", "flip 2 KB of the .idx segment file", lambda s: _flip(_tantivy_file(s, ".idx"), 0, 2048, 2), "content"),
    ("pos-truncated", "truncate the .pos segment file", lambda s: _trunc(_tantivy_file(s, ".pos"), 0.3), False),
    ("fast-flipped", "flip the .fast segment file", lambda s: _flip(_tantivy_file(s, ".fast"), 0, 1 << 20, 3), "content"),
    ("fieldnorm-deleted", "delete the .fieldnorm segment file", lambda s: os.unlink(_tantivy_file(s, ".fieldnorm")), False),
    ("tantivy-dir-deleted", "delete tantivy/", lambda s: shutil.rmtree(os.path.join(s, "tantivy")), False),
    ("index-json-garbage", "garbage index.json", lambda s: write(os.path.join(s, "index.json"), b"\x01\x02garbage"), False),
    ("sections-json-garbage", "garbage sections.json", lambda s: write(os.path.join(s, "sections.json"), b"[{]"), False),
    ("vectors-truncated", "truncate vectors-*.bin", lambda s: _trunc(_vectors(s)), True),
    ("vectors-flip-16k", "flip 16 KB of vectors", lambda s: _flip(_vectors(s), os.path.getsize(_vectors(s)) // 3, 16384, 4), True),
    ("vectors-nan", "write 4 NaN f32 into vectors",
     lambda s: _write_at(_vectors(s), (os.path.getsize(_vectors(s)) // 2) & ~3, struct.pack("<4f", *[float("nan")] * 4)), True),
    ("vectors-deleted", "delete vectors-*.bin", lambda s: os.unlink(_vectors(s)), True),
    ("vectors-header-garbage", "vectors header: dim/rows garbage", lambda s: _write_at(_vectors(s), 8, b"\xff\xff\xff\x7f\xff\xff\xff\x7f"), True),
]


def _write_at(path, off, data):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


for n, (slug, what, fn, vo) in enumerate(C_DAMAGE):
    exp = {"content": "search --frozen: exit 0 (arms.unavailable names a damaged arm, or the query never read the bytes) or 4 atlas-search-corrupt, never 2/101",
           True: "search --frozen: exit 4 atlas-search-corrupt or 0 with arms.unavailable.vector",
           False: "search --frozen: exit 4 atlas-search-corrupt"}[vo] + "; then build repairs (search 0, no unavailable)"
    add(f"C{n + 1:02d}-{slug}", "C", f"{what}: {exp}", c_damage(fn, vo))


def c_complete_missing(c):
    repo = c.flask()
    os.unlink(os.path.join(c.search_dir(repo), "COMPLETE"))
    r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", repo=repo)
    c.check(r, (3, 4), ("atlas-search-unavailable", "atlas-search-corrupt"), label="search")
    _repair(c, repo)


add("C18-COMPLETE-deleted", "C", "search --frozen exit 3 unavailable or 4 corrupt (never 2); build repairs", c_complete_missing)


def c_search_dir_file(c):
    repo = c.flask()
    s = c.search_dir(repo)
    shutil.rmtree(s)
    write(s, b"not a dir")
    r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", repo=repo)
    c.check(r, (3, 4), ("atlas-search-unavailable", "atlas-search-corrupt"), label="search")
    _repair(c, repo)


add("C19-search-dir-is-a-file", "C", "search --frozen exit 3/4 (never 2); build repairs", c_search_dir_file)


def c_context_free_damaged(c):
    repo = c.flask()
    _trunc(_tantivy_file(c.search_dir(repo), ".term"))
    r = c.atlas("context", "how does a request get dispatched to the view function", "--profile", "flow",
                "--frozen", "--format", "json", repo=repo)
    c.check(r, (0, 4), SEARCH_CORRUPT + ("atlas-graph-corrupt",), label="context")


add("C20-context-free-text-damaged-index", "C", "context free text --frozen: exit 0 (diagnostic) or 4 atlas-search-corrupt, never 2",
    c_context_free_damaged)


def c_context_name_damaged(c):
    repo = c.flask()
    shutil.rmtree(os.path.join(c.search_dir(repo), "tantivy"))
    r = c.atlas("context", FLASK_SYM, "--profile", "symbol", "--frozen", "--format", "json", repo=repo)
    c.check(r, (0,), label="context")


add("C21-context-name-damaged-index", "C", "context by name --frozen exit 0 (needs no search)", c_context_name_damaged)


def _ro_setup(c):
    repo = c.flask()
    g = c_graph(repo)
    ro = os.path.join(c.tmp, "graph-ro")
    c.bind_ro(g, ro)
    return repo, ro


def c_ro_search(c):
    repo, ro = _ro_setup(c)
    r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", repo=repo, graph=ro)
    c.check(r, (0,), pred=lambda r: (r.json() or {}).get("hits"), why="no hits")


add("C22-readonly-graph-search", "C", "read-only bind mount: search --frozen exit 0", c_ro_search)


def c_ro_context(c):
    repo, ro = _ro_setup(c)
    r = c.atlas("context", FLASK_SYM, "--profile", "symbol", "--frozen", "--format", "json", repo=repo, graph=ro)
    c.check(r, (0,), label="ctx name")
    r = c.atlas("context", "how does a request get dispatched to the view function", "--profile", "flow",
                "--frozen", "--format", "json", repo=repo, graph=ro)
    c.check(r, (0,), label="ctx free text")
    r = c.atlas("status", "--format", "json", repo=repo, graph=ro)
    c.check(r, (0,), label="status")
    r = c.atlas("graph", "dump", repo=repo, graph=ro)
    c.check(r, (0,), label="dump")


add("C23-readonly-graph-context-status", "C", "read-only: context (name, free text) --frozen, status, dump exit 0", c_ro_context)


def c_ro_observability(c):
    repo, ro = _ro_setup(c)
    r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", repo=repo, graph=ro,
                env_add={"ATLAS_OBSERVABILITY": "1"})
    c.check(r, (0,), label="search")
    r = c.atlas("context", FLASK_SYM, "--profile", "symbol", "--frozen", repo=repo, graph=ro,
                env_add={"ATLAS_OBSERVABILITY": "1"})
    c.check(r, (0,), label="context")


add("C24-readonly-graph-observability-on", "C", "read-only + ATLAS_OBSERVABILITY=1: search/context --frozen exit 0", c_ro_observability)


def c_frozen_no_writes(c):
    repo = c.flask()
    g = c_graph(repo)
    before = tree_paths(g)
    for args in (("search", SEARCH_Q, "--frozen", "--format", "json"),
                 ("search", "zzqqxx unknown words", "--frozen"),
                 ("context", FLASK_SYM, "--profile", "symbol", "--frozen"),
                 ("context", "how are sessions signed", "--profile", "flow", "--frozen"),
                 ("status",), ("graph", "dump")):
        r = c.atlas(*args, repo=repo)
        c.check(r, (0,), label=args[0])
    new = sorted(tree_paths(g) - before)
    c.expect(not new, "no-new-files", f"{len(new)} new" if new else "none", "new files: " + ", ".join(new[:4]))


add("C25-frozen-reads-write-nothing", "C", "search/context --frozen, status, dump create no file in the graph dir", c_frozen_no_writes)


def c_frozen_nosearch(c):
    repo = c.flask(build=False)
    c.build(repo, "--no-search")
    r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", repo=repo)
    c.check(r, (3,), ("atlas-search-unavailable",))


add("C26-frozen-search-without-index", "C", "build --no-search; search --frozen exit 3 atlas-search-unavailable", c_frozen_nosearch)


def _fill(path, leave):
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    size = max(0, free - leave)
    filler = os.path.join(path, "filler.bin")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    chunk = bytes(1 << 20)
    left = size
    try:
        while left > 0:
            left -= os.write(fd, chunk[: min(len(chunk), left)])
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


def c_diskfull_index(c):
    repo = c.flask(build=False)
    mnt = os.path.join(c.tmp, "mnt")
    c.mount_tmpfs(mnt, "8m")
    g = os.path.join(mnt, "graph")
    r = c.atlas("build", "--no-search", repo=repo, graph=g)
    if not c.check(r, (0,), label="build --no-search"):
        return
    filler = _fill(mnt, 64 * 1024)
    r = c.atlas("search", SEARCH_Q, "--format", "json", repo=repo, graph=g)
    c.check(r, (1,), ("atlas-io",), label="search (builds index)")
    r = c.atlas("build", repo=repo, graph=g)
    c.check(r, (1,), ("atlas-io",), label="build (index)")
    lo = leftovers(g)
    c.expect(not lo, "leftovers", f"{len(lo)} left" if lo else "none", "left: " + ", ".join(lo[:3]))
    os.unlink(filler)
    r = c.atlas("build", repo=repo, graph=g)
    c.check(r, (0,), label="build after freeing")
    r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", repo=repo, graph=g)
    c.check(r, (0,), label="search --frozen")


add("C27-disk-full-building-index", "C", "tmpfs graph dir full: search/build exit 1 atlas-io (never 2), no leftovers; after freeing build+search 0",
    c_diskfull_index)


# =======================================================================================
# D. concurrent readers


@contextlib.contextmanager
def hold_lock(graph_dir):
    os.makedirs(graph_dir, exist_ok=True)
    fd = os.open(os.path.join(graph_dir, "lock"), os.O_CREAT | os.O_WRONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def d_lock_context(c):
    repo = c.flask()
    with hold_lock(c_graph(repo)):
        for i in range(3):
            append(os.path.join(repo, "src/flask/app.py"), f"\n# edit {i}\n")
            r = c.atlas("context", FLASK_SYM, "--profile", "symbol", "--format", "json", repo=repo)
            c.check(r, (0,), label=f"context #{i}")


add("D01-lock-held-context-not-frozen", "D", "lock held + changed tree: context (not frozen) exit 0 (never 5 atlas-build-locked)", d_lock_context)


def d_lock_context_frozen(c):
    repo = c.flask()
    with hold_lock(c_graph(repo)):
        append(os.path.join(repo, "src/flask/app.py"), "\n# edit\n")
        r = c.atlas("context", FLASK_SYM, "--profile", "symbol", "--frozen", "--format", "json", repo=repo)
        c.check(r, (0,), label="context --frozen")
        r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", repo=repo)
        c.check(r, (0,), label="search --frozen")


add("D02-lock-held-frozen-reads", "D", "lock held: context/search --frozen exit 0", d_lock_context_frozen)


def d_lock_free_text(c):
    repo = c.flask()
    with hold_lock(c_graph(repo)):
        append(os.path.join(repo, "src/flask/app.py"), "\n# edit\n")
        r = c.atlas("context", "how does a request get dispatched", "--profile", "flow", "--format", "json", repo=repo)
        c.check(r, (0,), label="context free text")


add("D03-lock-held-context-free-text", "D", "lock held + changed tree: context free text (not frozen) exit 0", d_lock_free_text)


def d_lock_build(c):
    repo = c.flask()
    with hold_lock(c_graph(repo)):
        append(os.path.join(repo, "src/flask/app.py"), "\n# edit\n")
        r = c.atlas("build", repo=repo)
        c.check(r, (5,), ("atlas-build-locked",), label="build")
    res = {}

    def later():
        res["r"] = c.atlas("build", "--wait", repo=repo)
    with hold_lock(c_graph(repo)):
        t = threading.Thread(target=later)
        t.start()
        time.sleep(1.5)
        waited = t.is_alive()
    t.join()
    c.check(res["r"], (0,), label="build --wait")
    c.expect(waited, "waited", "blocked" if waited else "did not wait", "build --wait returned while the lock was held")


add("D04-lock-held-build", "D", "lock held: build exit 5 atlas-build-locked; build --wait blocks then exit 0", d_lock_build)


def d_real_build(c):
    repo = c.flask()
    py = sorted(os.path.join(d, n) for d, _, ns in os.walk(os.path.join(repo, "src")) for n in ns if n.endswith(".py"))
    py += sorted(os.path.join(d, n) for d, _, ns in os.walk(os.path.join(repo, "tests")) for n in ns if n.endswith(".py"))
    fails, total, builds = [], 0, []
    for rnd in range(4):
        for p in py:
            append(p, f"\n# round {rnd}\n")
        b = subprocess.Popen([c.h.bin, "--code", repo, "build"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=c.h.env, start_new_session=True)
        results = []
        threads = []
        for k in range(4):
            def one():
                results.append(c.atlas("context", FLASK_SYM, "--profile", "symbol", "--format", "json", repo=repo))
            t = threading.Thread(target=one)
            t.start()
            threads.append(t)
            time.sleep(0.05)
        for t in threads:
            t.join()
        _, err = b.communicate(timeout=60)
        builds.append(b.returncode)
        for r in results:
            total += 1
            if r.rc != 0 or r.timed_out:
                fails.append(r.obs)
    c.expect(not fails, "contexts", f"{total - len(fails)}/{total} ok (builds {builds})",
             f"{len(fails)}/{total} contexts failed: {sorted(set(fails))}")


add("D05-concurrent-build-and-contexts", "D", "context (not frozen) during a real build of an edited tree: all exit 0", d_real_build)


def _loop_readers(c, repo, reader_args, seconds=6.0, readers=2):
    stop = threading.Event()
    builds = []

    def writer():
        i = 0
        while not stop.is_set():
            append(os.path.join(repo, "src/flask/app.py"), f"\n# loop {i}\n")
            i += 1
            r = run_proc([c.h.bin, "--code", repo, "build", "--wait"], env=c.h.env, timeout=60)
            builds.append(r.rc)
    results = []

    def reader():
        while not stop.is_set():
            results.append(run_proc([c.h.bin, "--code", repo] + list(reader_args), env=c.h.env, timeout=c.h.timeout))
    ts = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(readers)]
    for t in ts:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in ts:
        t.join()
    return results, builds


def d_search_loop(c):
    repo = c.flask()
    results, builds = _loop_readers(c, repo, ["search", SEARCH_Q, "--frozen", "--format", "json"])
    by = {}
    for r in results:
        if r.panicked or r.timed_out or r.signalled:
            c.runs.append(r)
        if r.rc != 0:
            by[r.obs] = by.get(r.obs, 0) + 1
    three = sum(v for k, v in by.items() if k.startswith("exit 3"))
    c.expect(not by, "search loop", f"{len(results)} reads, {sum(by.values())} failed, {len(builds)} builds",
             f"failures {by}" + (f" ({three} exit 3)" if three else ""))


add("D06-search-frozen-during-rebuild-loop", "D", "search --frozen while builds loop: all exit 0 (never 3)", d_search_loop)


def d_context_loop(c):
    repo = c.flask()
    results, builds = _loop_readers(c, repo, ["context", FLASK_SYM, "--profile", "symbol", "--frozen", "--format", "json"])
    by, torn = {}, 0
    for r in results:
        if r.panicked or r.timed_out or r.signalled:
            c.runs.append(r)
        if r.rc != 0:
            by[r.obs] = by.get(r.obs, 0) + 1
        elif r.json() is None:
            torn += 1
    c.expect(not by and not torn, "context loop", f"{len(results)} reads, {sum(by.values())} failed, {torn} torn",
             f"failures {by}, torn {torn}")


add("D07-context-frozen-during-rebuild-loop", "D", "context --frozen while builds loop: all exit 0, JSON parses", d_context_loop)


def d_context_notfrozen_loop(c):
    repo = c.flask()
    results, builds = _loop_readers(c, repo, ["context", FLASK_SYM, "--profile", "symbol", "--format", "json"])
    by = {}
    for r in results:
        if r.panicked or r.timed_out or r.signalled:
            c.runs.append(r)
        if r.rc != 0:
            by[r.obs] = by.get(r.obs, 0) + 1
    c.expect(not by, "context loop", f"{len(results)} reads, {sum(by.values())} failed",
             f"failures {by}")


add("D08-context-not-frozen-during-rebuild-loop", "D", "context (not frozen) while builds loop: all exit 0 (never 5)", d_context_notfrozen_loop)


# =======================================================================================
# E. other


def e_devfull(args_fn, label):
    def fn(c):
        repo = c.flask()
        args = args_fn(repo)
        r = c.atlas(*args, repo=repo, stdout_path="/dev/full")
        c.check(r, (1,), ("atlas-io",), label=label)
    return fn


for n, (label, args_fn) in enumerate([
        ("graph dump", lambda r: ("graph", "dump")),
        ("context json", lambda r: ("context", FLASK_SYM, "--profile", "symbol", "--format", "json")),
        ("status", lambda r: ("status",)),
        ("status json", lambda r: ("status", "--format", "json")),
        ("search json", lambda r: ("search", SEARCH_Q, "--frozen", "--format", "json")),
        ("expand", lambda r: ("expand", f"src/flask/app.py#L1-L50@{hash8(os.path.join(r, 'src/flask/app.py'))}")),
        ("build json", lambda r: ("build", "--format", "json")),
        ("completions", lambda r: ("completions", "bash"))]):
    add(f"E{n + 1:02d}-{label.replace(' ', '-')}-to-dev-full", "E", f"`{label} > /dev/full`: exit 1 atlas-io, no panic",
        e_devfull(args_fn, label))


def e_head(c):
    repo = c.flask()
    for args in (("graph", "dump"), ("status",), ("search", SEARCH_Q, "--frozen")):
        p = subprocess.Popen([c.h.bin, "--code", repo] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=c.h.env, start_new_session=True)
        p.stdout.readline()
        p.stdout.close()
        p.stdout = None
        try:
            _, err = p.communicate(timeout=c.h.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            _, err = p.communicate()
        r = Run([c.h.bin] + list(args), p.returncode, b"", err, 0, False)
        c.runs.append(r)
        # Every search prints its relevance cost line on stderr (issue 15), judge or not:
        # that line is not noise; anything else is.
        noise = b"\n".join(line for line in err.splitlines() if not line.startswith(b'{"atlas_relevance_cost":'))
        ok = not noise.strip() and not r.panicked and (r.rc >= 0 or r.rc == -signal.SIGPIPE)
        c.expect(ok, f"{args[0]}|head", r.obs + (" +stderr" if noise.strip() else ""),
                 "stderr: " + _first_err_line(noise) if noise.strip() else r.obs)


add("E09-pipe-closed-early", "E",
    "`dump|head -1`, `status|head -1`, `search|head -1`: nothing on stderr but search's cost line, no panic", e_head)


def e_moved(c):
    repo = c.flask()
    moved = os.path.join(c.tmp, "moved")
    os.rename(repo, moved)
    r = c.atlas("status", "--format", "json", cwd=moved)
    d = r.json() or {}
    c.check(r, (0,), label="status")
    root_ok = os.path.realpath(d.get("code_root", "")) == os.path.realpath(moved)
    c.expect(root_ok, "code_root", os.path.basename(d.get("code_root", "?")), f"code_root {d.get('code_root')}")
    fresh = (d.get("staleness") or {}).get("stale") is False
    c.expect(fresh, "staleness", "fresh" if fresh else "stale", f"staleness {d.get('staleness')}")
    r = c.atlas("context", FLASK_SYM, "--profile", "symbol", "--frozen", "--format", "json", cwd=moved)
    c.check(r, (0,), label="context", pred=lambda r: b"stale-source" not in r.out, why="stale-source diagnostics")


add("E10-moved-repository", "E", "mv repo: status code_root = new dir, fresh; context --frozen 0 without stale-source", e_moved)


def e_copied(c):
    repo = c.flask()
    copy = os.path.join(c.tmp, "copy")
    subprocess.run(["cp", "-a", repo, copy], check=True)
    append(os.path.join(repo, "src/flask/app.py"), "\n# original diverges\n")
    r = c.atlas("status", "--format", "json", cwd=copy)
    d = r.json() or {}
    c.check(r, (0,), label="status")
    root_ok = os.path.realpath(d.get("code_root", "")) == os.path.realpath(copy)
    c.expect(root_ok, "code_root", os.path.basename(d.get("code_root", "?")), f"code_root {d.get('code_root')}")
    fresh = (d.get("staleness") or {}).get("stale") is False
    c.expect(fresh, "staleness", "fresh" if fresh else "stale", f"staleness {d.get('staleness')}")
    r = c.atlas("context", FLASK_SYM, "--profile", "symbol", "--frozen", "--format", "json", cwd=copy)
    c.check(r, (0,), label="context", pred=lambda r: b"stale-source" not in r.out, why="stale-source diagnostics")


add("E11-copied-repository", "E", "cp -a repo (original edited): status code_root = copy, fresh; context no stale-source", e_copied)


def e_moved_code_flag(c):
    repo = c.flask()
    moved = os.path.join(c.tmp, "moved2")
    os.rename(repo, moved)
    r = c.atlas("status", "--format", "json", repo=moved)
    d = r.json() or {}
    c.check(r, (0,), label="status", pred=lambda r: os.path.realpath(d.get("code_root", "")) == os.path.realpath(moved),
            why=f"code_root {d.get('code_root')}")
    r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", repo=moved)
    c.check(r, (0,), label="search")
    hits = (r.json() or {}).get("hits") or []
    if hits:
        r = c.atlas("expand", hits[0]["ref"], repo=moved)
        c.check(r, (0,), label="expand")


add("E12-moved-repository-with---code", "E", "mv repo; --code new: status code_root new, search + expand exit 0", e_moved_code_flag)


def e_current_garbage(c):
    repo = c.syn()
    cur = os.path.join(c_graph(repo), "CURRENT")
    write(cur, b"garbage\n")
    r = c.atlas("status", repo=repo)
    c.check(r, (4,), ("atlas-graph-corrupt",), label="status")
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build")
    ok = re.fullmatch(rb"[0-9a-f]{64}\s*", read(cur)) is not None
    c.expect(ok, "CURRENT", "valid" if ok else "garbage", "CURRENT not republished")
    r = c.atlas("status", repo=repo)
    c.check(r, (0,), label="status after")


add("E13-CURRENT-garbage", "E", "garbage CURRENT: reads exit 4 atlas-graph-corrupt; build exit 0 and publishes", e_current_garbage)


def e_current_empty(c):
    repo = c.syn()
    write(os.path.join(c_graph(repo), "CURRENT"), b"")
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build")
    r = c.atlas("status", repo=repo)
    c.check(r, (0,), label="status")


add("E14-CURRENT-empty", "E", "empty CURRENT: build exit 0, status 0", e_current_empty)


def e_current_dangling(c):
    repo = c.syn()
    write(os.path.join(c_graph(repo), "CURRENT"), ("ab" * 32 + "\n").encode())
    r = c.atlas("status", repo=repo)
    c.check(r, (4,), ("atlas-graph-corrupt",), label="status")
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build")
    r = c.atlas("status", repo=repo)
    c.check(r, (0,), label="status after")


add("E15-CURRENT-names-missing-generation", "E", "reads exit 4 atlas-graph-corrupt; build recovers", e_current_dangling)


def e_missing_graph_file(c, whole_dir):
    repo = c.syn()
    g = c.graph_file(repo)
    if whole_dir:
        shutil.rmtree(os.path.dirname(g))
    else:
        os.unlink(g)
    for args in (("status",), ("graph", "dump"), ("context", SYN_SYM, "--profile", "symbol", "--frozen"),
                 ("search", "cart total", "--frozen")):
        r = c.atlas(*args, repo=repo)
        c.check(r, (4,), ("atlas-graph-corrupt",), label=args[0])
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build")
    r = c.atlas("status", repo=repo)
    c.check(r, (0,), label="status after")


add("E16-generation-file-missing", "E", "graph.atlas deleted: reads exit 4 atlas-graph-corrupt; build recovers",
    lambda c: e_missing_graph_file(c, False))
add("E17-generation-dir-missing", "E", "generations/<fp>/ deleted: reads exit 4 atlas-graph-corrupt; build recovers",
    lambda c: e_missing_graph_file(c, True))


def e_diskfull(leave, incremental):
    def fn(c):
        mnt = os.path.join(c.tmp, "mnt")
        c.mount_tmpfs(mnt, "3m")
        repo = os.path.join(mnt, "repo")
        shutil.copytree(c.h.syn_template(), repo)
        # some bulk so the build writes a few hundred KB
        for i in range(8):  # ~780 KB of graph dir on a first build, ~700 KB more on an update
            write(os.path.join(repo, f"bulk/mod_{i}.py"),
                  "".join(f"def fn_{i}_{j}(x):\n    return helper_{j}(x) + {j}\n\n" for j in range(40)))
        g = c_graph(repo)
        old = None
        if incremental:
            r = c.atlas("build", repo=repo)
            if not c.check(r, (0,), label="first build"):
                return
            old = c.current(repo)
            for i in range(8):
                append(os.path.join(repo, f"bulk/mod_{i}.py"), "\ndef added():\n    return 1\n")
        filler = _fill(mnt, leave)
        r = c.atlas("build", repo=repo)
        c.check(r, (1,), ("atlas-io",), label="build on full disk")
        lo = leftovers(g)
        c.expect(not lo, "leftovers", f"{len(lo)} left" if lo else "none", "left: " + ", ".join(lo[:3]))
        if incremental:
            r = c.atlas("status", "--format", "json", repo=repo)
            fp = (r.json() or {}).get("fingerprint")
            c.check(r, (0,), label="status", pred=lambda r: fp == old, why="committed generation changed/lost")
        os.unlink(filler)
        r = c.atlas("build", repo=repo)
        c.check(r, (0,), label="build after freeing")
        r = c.atlas("search", "helper", "--frozen", repo=repo)
        c.check(r, (0,), label="search --frozen")
    return fn


for n, (leave, inc) in enumerate([(0, False), (16 * 1024, False), (96 * 1024, False), (0, True), (48 * 1024, True), (160 * 1024, True)]):
    add(f"E{18 + n:02d}-disk-full-{'incremental' if inc else 'first'}-build-{leave // 1024}k-free", "E",
        "tmpfs 3m full: build exit 1 atlas-io, no .staging/* or *.tmp*" + (", committed gen intact" if inc else "") +
        "; after freeing build 0", e_diskfull(leave, inc))


def deep_case(filename, text_fn, partial_required):
    def fn(c):
        repo = c.syn(build=False)
        write(os.path.join(repo, filename), text_fn())
        r = c.atlas("build", "--format", "json", repo=repo)
        c.check(r, (0,), label="build", pred=lambda r: r.secs < 20, why=f"took {r.secs:.1f}s")
        r = c.atlas("status", "--format", "json", repo=repo)
        d = r.json() or {}
        partial = [p.get("path") for p in d.get("partial_files", [])]
        skipped = json.dumps((d.get("coverage") or {}).get("skipped_by_reason", {}))
        if partial_required:
            c.check(r, (0,), label="status", pred=lambda r: filename in partial,
                    why=f"{filename} not in partial_files {partial[:3]}")
        else:
            c.check(r, (0,), label="status")
        r = c.atlas("search", "nested", "--frozen", "--format", "json", repo=repo)
        c.check(r, (0,), label="search")
        r = c.atlas("context", filename, "--profile", "impact", "--frozen", repo=repo)
        c.check(r, (0, 7), ("atlas-context-no-match",), label="context")
    return fn


DEPTH = 40000
add("E24-python-900KB-nested-calls-depth-40000", "E",
    "build exit 0 in < 20 s; status partial_files lists the file",
    deep_case("deep/nested.py",
              lambda: "x = " + "nested_call_function(" * DEPTH + "1" + ")" * DEPTH + "\n", True))
add("E25-rust-nested-parens-depth-40000", "E", "build exit 0 in < 20 s, no crash",
    deep_case("rs/src/deep.rs", lambda: "pub fn deep() -> i64 {\n    " + "(" * DEPTH + "1" + ")" * DEPTH + "\n}\n", False))
add("E26-ts-nested-arrays-depth-40000", "E", "build exit 0 in < 20 s, no crash",
    deep_case("web/src/deep.ts", lambda: "export const deep = " + "[" * DEPTH + "1" + "]" * DEPTH + ";\n", False))
add("E27-js-nested-calls-depth-40000", "E", "build exit 0 in < 20 s, no crash",
    deep_case("web/src/deep.js", lambda: "const deep = " + "f(" * DEPTH + "1" + ")" * DEPTH + ";\n", False))
add("E28-go-nested-parens-depth-40000", "E", "build exit 0 in < 20 s, no crash",
    deep_case("go/deep.go", lambda: "package main\n\nfunc deep() int {\n\treturn " + "(" * DEPTH + "1" + ")" * DEPTH + "\n}\n", False))
add("E29-java-nested-calls-depth-40000", "E", "build exit 0 in < 20 s, no crash",
    deep_case("java/Deep.java", lambda: "class Deep {\n  int deep() {\n    return " + "f(" * DEPTH + "1" + ")" * DEPTH + ";\n  }\n}\n", False))
add("E30-python-nested-lambdas-depth-20000", "E", "build exit 0 in < 20 s, no crash",
    deep_case("deep/lambdas.py", lambda: "f = " + "lambda: " * 20000 + "1\n", False))
add("E31-python-deep-indentation-1500", "E", "build exit 0 in < 20 s, no crash",
    deep_case("deep/indent.py", lambda: "".join("    " * i + "if x:\n" for i in range(1500)) + "    " * 1500 + "pass\n", False))
add("E32-rust-nested-modules-depth-5000", "E", "build exit 0 in < 20 s, no crash",
    deep_case("rs/src/mods.rs", lambda: "mod m { " * 5000 + "fn f() {}" + " }" * 5000 + "\n", False))
add("E33-python-nested-classes-depth-3000", "E", "build exit 0 in < 20 s, no crash",
    deep_case("deep/classes.py", lambda: "".join(" " * i + f"class C{i}:\n" for i in range(3000)) + " " * 3000 + "pass\n", False))


def e_tokenizer(path_fn):
    def fn(c):
        repo = c.flask()
        path = path_fn(c, repo)
        r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", "--max-tokens", "10", repo=repo,
                    env_add={"ATLAS_TOKENIZER_PATH": path}, timeout=10)
        c.check(r, (0,), label="search", pred=lambda r: r.secs < 10, why=f"{r.secs:.1f}s")
    return fn


def _fifo(c, repo):
    p = os.path.join(c.tmp, "tok.fifo")
    os.mkfifo(p)
    return p


def _garbage_tok(c, repo):
    p = os.path.join(c.tmp, "tokenizer.json")
    write(p, random.Random(3).randbytes(200000))
    return p


def _json_tok(c, repo):
    p = os.path.join(c.tmp, "tokenizer.json")
    write(p, b'{"model": {"type": "WordPiece", "vocab": 5}}')
    return p


for n, (slug, fn_) in enumerate([("dev-zero", lambda c, r: "/dev/zero"), ("fifo", _fifo),
                                 ("dev-urandom", lambda c, r: "/dev/urandom"), ("garbage-file", _garbage_tok),
                                 ("wrong-json", _json_tok), ("directory", lambda c, r: c.tmp)]):
    add(f"E{34 + n:02d}-tokenizer-{slug}", "E", "ATLAS_TOKENIZER_PATH: search --max-tokens 10 exit 0 in < 10 s",
        e_tokenizer(fn_))


def e_topk(c):
    repo = c.flask()
    r = c.atlas("search", SEARCH_Q, "--top-k", "0", "--frozen", repo=repo)
    c.check(r, (2,), ("atlas-invalid-input",), label="top-k 0", usage_ok=False)
    r = c.atlas("search", SEARCH_Q, "--top-k", "18446744073709551615", "--frozen", "--format", "json", repo=repo)
    c.check(r, (0, 2), ("atlas-invalid-input",), label="top-k max")
    r = c.atlas("search", SEARCH_Q, "--top-k", "-1", "--frozen", repo=repo)
    c.check(r, (2,), label="top-k -1")


add("E40-search-top-k", "E", "--top-k 0: exit 2 atlas-invalid-input; huge: 0/2; -1: 2", e_topk)


def _json_error(r):
    d = r.json()
    return isinstance(d, dict) and isinstance(d.get("error"), dict) and d["error"].get("code") and b"error[" in r.err


def e_clap_json(args):
    def fn(c):
        repo = c.flask()
        r = c.atlas(*args, repo=repo)
        c.check(r, (2,), pred=_json_error,
                why="stdout not {\"error\": {\"code\"}} or stderr without error[: " + repr(r.out[:40]) + " / " + _first_err_line(r.err)[:40])
    return fn


for n, args in enumerate([("context", "x", "--profile", "nope", "--format", "json"),
                          ("search", "x", "--top-k", "abc", "--format", "json"),
                          ("context", "x", "--profile", "symbol", "--max-bytes", "5", "--format", "json"),
                          ("search", "x", "--bogus-flag", "--format", "json"),
                          ("context", "--format", "json"),
                          ("status", "--format", "json", "--format", "text", "extra-arg")]):
    add(f"E{41 + n:02d}-clap-error-json-{'-'.join(a.strip('-') for a in args[:3])[:28]}", "E",
        "exit 2; stdout JSON {\"error\": {\"code\"}}; stderr has error[", e_clap_json(args))


def e_editor_dir(var):
    def fn(c):
        cwd = c.empty("cwd")
        target = f"/tmp/does-not-exist-{var}-{os.getpid()}-{random.randrange(1 << 30)}"
        for args in (("status",), ("graph", "dump"), ("search", "x", "--frozen"),
                     ("context", "x", "--profile", "symbol", "--frozen")):
            r = c.atlas(*args, cwd=cwd, env_add={var: target})
            c.check(r, (3, 4), ("atlas-graph-missing", "atlas-code-missing", "atlas-graph-corrupt"), label=args[0])
        created = os.path.exists(target)
        if created:
            shutil.rmtree(target, ignore_errors=True)
        c.expect(not created, "not-created", "created!" if created else "not created", f"{target} was created")
    return fn


add("E47-CLAUDE_PROJECT_DIR-nonexistent", "E", "read commands exit 3 (typed); the directory is not created",
    e_editor_dir("CLAUDE_PROJECT_DIR"))
add("E48-WORKSPACE_FOLDER_PATHS-nonexistent", "E", "read commands exit 3 (typed); the directory is not created",
    e_editor_dir("WORKSPACE_FOLDER_PATHS"))


def e_newline_name(c):
    repo = c.syn(build=False, extra={"a\nb.py": "def weird():\n    return 1\n", "tab\tname.py": "def tabbed():\n    return 2\n"})
    c.build(repo)
    r = c.atlas("graph", "dump", repo=repo)
    bad = [ln for ln in r.out.split(b"\n") if b"b.py" in ln and b"a\\nb.py" not in ln]
    c.check(r, (0,), label="dump", pred=lambda r: not bad, why=f"raw newline in a path: {bad[:1]}")
    r = c.atlas("status", "--format", "json", repo=repo)
    c.check(r, (0,), label="status", pred=lambda r: r.json() is not None, why="not JSON")
    r = c.atlas("search", "weird", "--frozen", "--format", "json", repo=repo)
    c.check(r, (0,), label="search")


add("E49-file-name-with-newline", "E", "dump escapes the newline in `a\\nb.py`; status JSON, search exit 0", e_newline_name)


def e_nonutf8_name(c):
    repo = c.syn(build=False)
    with open(os.path.join(repo.encode(), b"shop/bad\xff\xfename.py"), "wb") as f:
        f.write(b"def badname():\n    return 1\n")
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build")
    for args in (("status", "--format", "json"), ("graph", "dump"), ("search", "badname", "--frozen", "--format", "json")):
        r = c.atlas(*args, repo=repo)
        c.check(r, (0,), label=args[0], pred=lambda r: args[0] == "graph" or r.json() is not None, why="not JSON")


add("E50-non-utf8-file-name", "E", "build 0; status/search JSON parse; dump 0", e_nonutf8_name)


def e_invalid_utf8(c):
    repo = c.syn(build=False, extra={"shop/latin1.py": b"# caf\xe9\ndef cafe():\n    return '\xe9'\n",
                                     "rs/src/bin.rs": b"fn x() {}\n\xff\xfe\x00\x01" * 10})
    r = c.atlas("build", "--format", "json", repo=repo)
    c.check(r, (0,), label="build")
    r = c.atlas("status", "--format", "json", repo=repo)
    c.check(r, (0,), label="status")
    r = c.atlas("context", "shop/latin1.py", "--profile", "impact", "--frozen", repo=repo)
    c.check(r, (0, 7), ("atlas-context-no-match",), label="context")


add("E51-invalid-utf8-sources", "E", "build 0 (skipped with a reason), status 0, context 0/7", e_invalid_utf8)


def e_long_line(ext, body_fn):
    def fn(c):
        repo = c.syn(build=False, extra={f"long/line.{ext}": body_fn()})
        r = c.atlas("build", "--format", "json", repo=repo)
        c.check(r, (0,), label="build", pred=lambda r: r.secs < 20, why=f"{r.secs:.1f}s")
        r = c.atlas("search", "value", "--frozen", "--format", "json", repo=repo)
        c.check(r, (0,), label="search")
        r = c.atlas("context", f"long/line.{ext}", "--profile", "impact", "--frozen", "--format", "json", repo=repo)
        c.check(r, (0, 7), ("atlas-context-no-match",), label="context")
    return fn


add("E52-2MB-single-line-python", "E", "build 0 < 20 s; search 0; context 0/7",
    e_long_line("py", lambda: "value = [" + "1, " * 700000 + "]\n"))
add("E53-2MB-single-line-js", "E", "build 0 < 20 s; search 0; context 0/7",
    e_long_line("js", lambda: "var value=" + "a+" * 1000000 + "1;\n"))
add("E54-900KB-single-line-python-under-limit", "E", "build 0 < 20 s; search 0; context 0/7",
    e_long_line("py", lambda: "def value():\n    return [" + "'x', " * 180000 + "]\n"))


def e_empty_files(c):
    repo = c.syn(build=False, extra={"e/empty.py": "", "e/empty.rs": "", "e/empty.ts": "", "e/empty.go": "",
                                     "e/empty.java": "", "e/empty.md": "", "e/only_nl.py": "\n\n\n"})
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build")
    r = c.atlas("status", "--format", "json", repo=repo)
    c.check(r, (0,), label="status")
    r = c.atlas("context", "e/empty.py", "--profile", "impact", "--frozen", repo=repo)
    c.check(r, (0, 7), ("atlas-context-no-match",), label="context")


add("E55-empty-files", "E", "build/status 0; context on an empty file 0/7", e_empty_files)


def e_zero_files(c):
    repo = c.empty("nothing")
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build")
    r = c.atlas("status", "--format", "json", repo=repo)
    c.check(r, (0,), label="status")
    r = c.atlas("graph", "dump", repo=repo)
    c.check(r, (0,), label="dump")
    r = c.atlas("search", "anything", "--frozen", "--format", "json", repo=repo)
    c.check(r, (0, 3), ("atlas-search-unavailable",), label="search")
    r = c.atlas("context", "anything", "--profile", "symbol", "--frozen", repo=repo)
    c.check(r, (7,), ("atlas-context-no-match",), label="context")


add("E56-repository-with-zero-files", "E", "build/status/dump 0; search 0/3; context 7 no-match", e_zero_files)


def e_code_missing(c):
    for args in (("build",), ("status",), ("context", "x", "--profile", "symbol"), ("search", "x")):
        r = c.atlas(*args, repo="/tmp/atlas-no-such-dir-xyz")
        c.check(r, (3,), ("atlas-code-missing", "atlas-graph-missing"), label=args[0])
    r = c.atlas("build", repo="/etc/hostname")
    c.check(r, (3,), ("atlas-code-missing",), label="build on a file")


add("E57-code-dir-missing", "E", "exit 3 atlas-code-missing (also --code pointing at a file)", e_code_missing)


def e_graph_flag_bad(c):
    repo = c.syn(build=False)
    for g in ("/etc/hostname", "/dev/null", "/proc/self"):
        r = c.atlas("build", repo=repo, graph=g)
        c.check(r, (1, 3, 4), ("atlas-io", "atlas-graph-missing", "atlas-graph-corrupt"), label=f"build {g}")
        r = c.atlas("status", repo=repo, graph=g)
        c.check(r, (1, 3, 4), ("atlas-io", "atlas-graph-missing", "atlas-graph-corrupt"), label=f"status {g}")


add("E58-graph-flag-not-a-directory", "E", "typed error 1/3/4, never panic", e_graph_flag_bad)


def e_big_query(c):
    repo = c.flask()
    q = ("how does flask dispatch a request to a view function " * 2300)[:120000]
    r = c.atlas("search", q, "--frozen", "--format", "json", repo=repo)
    c.check(r, (0, 2), ("atlas-invalid-input",), label="search 120KB")
    r = c.atlas("context", q, "--profile", "flow", "--frozen", "--format", "json", repo=repo)
    c.check(r, (0, 2, 7, 8), ("atlas-invalid-input", "atlas-context-no-match", "atlas-context-ambiguous",
                              "atlas-context-required-budget"), label="context 120KB")
    ident = "a_" * 60000
    r = c.atlas("context", ident, "--profile", "symbol", "--frozen", repo=repo)
    c.check(r, (2, 7), ("atlas-invalid-input", "atlas-context-no-match"), label="ident 120KB")


add("E59-120KB-query", "E", "search 0/2; context typed (1 MB impossible: Linux caps one argv string at 128 KiB)", e_big_query)


def e_garbage_query(c):
    repo = c.flask()
    rng = random.Random(11)
    garbage = bytes(b for b in rng.randbytes(4000) if b != 0)
    r = c.atlas("search", garbage, "--frozen", "--format", "json", repo=repo)
    c.check(r, (0, 2), label="search bytes")
    r = c.atlas("context", garbage, "--profile", "symbol", "--frozen", "--format", "json", repo=repo)
    c.check(r, (0, 2, 7), ("atlas-invalid-input", "atlas-context-no-match"), label="context bytes")
    r = c.atlas("expand", garbage, repo=repo)
    c.check(r, (2, 9), ("atlas-invalid-input", "atlas-ref-unknown"), label="expand bytes")


add("E60-binary-garbage-args", "E", "non-UTF-8 args: typed exit 0/2/7/9, never panic", e_garbage_query)


def e_unicode_queries(c):
    repo = c.flask()
    for q in ("😀🔥 dispatch", "‮evil‬ request", "запрос обработка", "请求 分发 函数", "e\u0301\u0301\u0301" * 500,
              "\ufeffFlask", "Flask.\u200bwsgi_app", "𝔽𝕝𝕒𝕤𝕜"):
        r = c.atlas("search", q, "--frozen", "--format", "json", repo=repo)
        c.check(r, (0,), label="search")
        r = c.atlas("context", q, "--profile", "symbol", "--frozen", "--format", "json", repo=repo)
        c.check(r, (0, 7), ("atlas-context-no-match", "atlas-context-ambiguous"), label="context")


add("E61-unicode-queries", "E", "search 0; context 0/7", e_unicode_queries)


def e_empty_queries(c):
    repo = c.flask()
    for q in ("", "   ", "\t\n"):
        r = c.atlas("search", q, "--frozen", "--format", "json", repo=repo)
        c.check(r, (0, 2), ("atlas-invalid-input",), label=f"search {q!r}")
        r = c.atlas("context", q, "--profile", "symbol", "--frozen", "--format", "json", repo=repo)
        c.check(r, (2, 7), ("atlas-invalid-input", "atlas-context-no-match"), label=f"context {q!r}")


add("E62-empty-queries", "E", "search 0/2; context 2/7 typed", e_empty_queries)


def e_context_limits(c):
    repo = c.flask()
    base = ("context", FLASK_SYM, "--profile", "symbol", "--frozen", "--format", "json")
    for extra, rcs, codes in ((("--max-bytes", "1023"), (2,), None), (("--max-bytes", "1000001"), (2,), None),
                              (("--max-bytes", "1024"), (0, 8), ("atlas-context-required-budget",)),
                              (("--max-bytes", "-5"), (2,), None), (("--max-bytes", "99999999999999999999"), (2,), None),
                              (("--min-score", "65536"), (2,), None), (("--min-score", "65535"), (0,), None),
                              (("--min-score", "0"), (0,), None)):
        r = c.atlas(*base, *extra, repo=repo)
        c.check(r, rcs, codes, label=" ".join(extra))


add("E63-context-max-bytes-min-score-ranges", "E", "out of range: exit 2; in range: 0 (1024 may be 8 required-budget)", e_context_limits)


def e_continuations(c):
    repo = c.flask()
    base = ("context", FLASK_SYM, "--profile", "symbol", "--frozen", "--format", "json")
    fp = c.current(repo)
    for extra, rcs, codes in ((("--expect-graph", "zzz", "--after", "START"), (9,), ("atlas-context-graph-mismatch",)),
                              (("--expect-graph", fp, "--after", "ev-nope-0000"), (9,), ("atlas-context-cursor",)),
                              (("--expect-graph", fp, "--after", "x" * 100000), (9,), ("atlas-context-cursor",)),
                              (("--after", "START"), (2,), None),
                              (("--expect-graph", "", "--after", "START"), (2, 9), ("atlas-context-graph-mismatch", "atlas-invalid-input"))):
        r = c.atlas(*base, *extra, repo=repo)
        c.check(r, rcs, codes, label=" ".join(x[:12] for x in extra))


add("E64-continuation-garbage", "E", "bad --expect-graph/--after: exit 9 mismatch/cursor, or 2", e_continuations)


def e_unknown_profiles(c):
    repo = c.flask()
    for args in (("context", "x", "--profile", "SYMBOL"), ("context", "x", "--profile", ""),
                 ("search", "x", "--profile", "tiny"), ("completions", "tcsh"), ("graph", "explode"), ("frobnicate",)):
        r = c.atlas(*args, repo=repo)
        c.check(r, (2,), label=" ".join(args)[:24])


add("E65-unknown-profiles-and-commands", "E", "exit 2 (usage error)", e_unknown_profiles)


def e_max_tokens(c):
    repo = c.flask()
    for v, rcs in (("0", (0, 2)), ("1", (0,)), ("18446744073709551615", (0, 2)), ("-3", (2,))):
        r = c.atlas("search", SEARCH_Q, "--frozen", "--format", "json", "--max-tokens", v, repo=repo)
        c.check(r, rcs, ("atlas-invalid-input",), label=f"max-tokens {v}")


add("E66-search-max-tokens-extremes", "E", "0/2 typed, never panic", e_max_tokens)


SCIP_FIXTURE = os.path.normpath(os.path.join(HERE, "..", "fixtures", "scip", "python.scip"))


def e_scip(kind):
    def fn(c):
        repo = c.syn(build=False)
        p = os.path.join(c.tmp, "index.scip")
        real = read(SCIP_FIXTURE) if os.path.exists(SCIP_FIXTURE) else b""
        expected, codes = (4,), ("atlas-scip-corrupt",)
        if kind == "truncated":
            write(p, real[: len(real) // 2])
        elif kind == "truncated-1":
            write(p, real[:-1])
        elif kind == "garbage":
            write(p, random.Random(9).randbytes(20000))
        elif kind == "empty":
            write(p, b"")
            expected = (0, 4)
        elif kind == "huge-length":
            write(p, b"\x12\xff\xff\xff\xff\x0f" + b"\x00" * 16)
        elif kind == "nested-huge-length":
            write(p, b"\x12\x08\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x01")
        elif kind == "dev-zero":
            p = "/dev/zero"
        elif kind == "missing":
            p = "/tmp/atlas-no-such.scip"
            expected, codes = (1, 3, 4), ("atlas-io", "atlas-code-missing", "atlas-scip-corrupt")
        elif kind == "directory":
            p = c.tmp
            expected, codes = (1, 3, 4), ("atlas-io", "atlas-scip-corrupt")
        r = c.atlas("build", "--scip", p, repo=repo)
        c.check(r, expected, codes, label=f"build --scip {kind}")
    return fn


for n, (kind, exp) in enumerate([("truncated", "exit 4 atlas-scip-corrupt"), ("truncated-1", "exit 4 atlas-scip-corrupt"),
                                 ("garbage", "exit 4 atlas-scip-corrupt"), ("empty", "exit 0 or 4"),
                                 ("huge-length", "exit 4 atlas-scip-corrupt, no huge allocation"),
                                 ("nested-huge-length", "exit 4 atlas-scip-corrupt"),
                                 ("dev-zero", "exit 4 atlas-scip-corrupt in < 20 s"),
                                 ("missing", "typed exit 1/3/4"), ("directory", "typed exit 1/3/4")]):
    add(f"E{67 + n:02d}-scip-{kind}", "E", f"build --scip FILE ({kind}): {exp}", e_scip(kind))


def e_scip_at_root(c):
    repo = c.syn(build=False, extra={"index.scip": random.Random(4).randbytes(5000)})
    r = c.atlas("build", repo=repo)
    c.check(r, (0, 4), ("atlas-scip-corrupt",), label="build")


add("E76-garbage-index.scip-at-root", "E", "build exit 0 (warning) or 4 atlas-scip-corrupt", e_scip_at_root)


def e_fifo_build(c):
    repo = c.syn(build=False)
    os.mkfifo(os.path.join(repo, "shop/pipe.py"))
    os.mkfifo(os.path.join(repo, "README2.md"))
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build")
    r = c.atlas("status", repo=repo)
    c.check(r, (0,), label="status")


add("E77-fifo-in-repo-before-build", "E", "build exit 0 in < 20 s (FIFOs skipped)", e_fifo_build)


def e_special_symlinks(c):
    repo = c.syn(build=False)
    os.symlink("/dev/zero", os.path.join(repo, "shop/zero.py"))
    os.symlink("/dev/urandom", os.path.join(repo, "shop/random.rs"))
    os.symlink("loop_a", os.path.join(repo, "loop_b"))
    os.symlink("loop_b", os.path.join(repo, "loop_a"))
    os.symlink(".", os.path.join(repo, "self"))
    os.symlink("/", os.path.join(repo, "rootfs"))
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build")
    r = c.atlas("status", repo=repo)
    c.check(r, (0,), label="status")


add("E78-symlinks-to-devices-loops-root", "E", "build exit 0 in < 20 s", e_special_symlinks)


def e_limits(c):
    repo = c.syn(build=False)
    for args, rcs in ((("--max-files", "0"), (0, 2)), (("--max-file-bytes", "0"), (0, 2)),
                      (("--max-total-bytes", "0"), (0, 2)), (("--max-files", "-1"), (2,)),
                      (("--max-files", "99999999999999999999999"), (2,))):
        r = c.atlas("build", *args, repo=repo)
        c.check(r, rcs, ("atlas-invalid-input",), label=" ".join(args))


add("E79-inventory-limit-extremes", "E", "0 limits: 0 (truncated) or 2; negative/overflow: 2", e_limits)


def e_no_graph_reads(c):
    repo = c.syn(build=False)
    for args in (("graph", "dump"), ("status",), ("expand", "shop/models.py#L1-L2@00000000"),
                 ("context", SYN_SYM, "--profile", "symbol", "--frozen"), ("search", "cart", "--frozen"),
                 ("context", SYN_SYM, "--profile", "symbol", "--no-build")):
        r = c.atlas(*args, repo=repo)
        c.check(r, (3,), ("atlas-graph-missing",), label=args[0])
    new = os.path.exists(c_graph(repo))
    c.expect(not new, "no-graph-dir", "created" if new else "none", "a read created the graph dir")


add("E80-reads-without-a-graph", "E", "exit 3 atlas-graph-missing; nothing created", e_no_graph_reads)


def e_env_knobs(c):
    repo = c.flask()
    q = ("search", SEARCH_Q, "--frozen", "--format", "json")
    for env, rcs, codes in (({"ATLAS_SEARCH_ARMS": "bogus"}, (2,), ("atlas-invalid-input",)),
                            ({"ATLAS_SEARCH_ARMS": ""}, (0, 2), ("atlas-invalid-input",)),
                            ({"ATLAS_SEARCH_ARMS": ",,,"}, (0, 2), ("atlas-invalid-input",)),
                            ({"ATLAS_RERANK": "\xff"}, (0,), None),
                            ({"ATLAS_EMBED_MODEL": "/nonexistent/model"}, (0, 1, 2, 3, 4), None),
                            ({"ATLAS_EMBED_MODEL": "/dev/zero"}, (0, 1, 2, 3, 4), None),
                            ({"ATLAS_CONTEXT_OPTIMIZATION": "1"}, (0,), None)):
        r = c.atlas(*q, repo=repo, env_add=env)
        c.check(r, rcs, codes, label=",".join(env)[:24])


add("E81-env-knob-garbage", "E", "typed errors or 0, never panic/hang", e_env_knobs)


def e_embed_model_garbage(c):
    repo = c.flask(build=False)
    model = os.path.join(c.tmp, "model")
    for n in ("config.json", "tokenizer.json", "model.safetensors"):
        write(os.path.join(model, n), random.Random(len(n)).randbytes(4096))
    r = c.atlas("build", repo=repo, env_add={"ATLAS_EMBED_MODEL": model})
    c.check(r, (0, 1, 2, 3, 4), None, label="build",
            pred=lambda r: r.rc == 0 or r.code is not None, why="untyped failure")


add("E82-embed-model-dir-garbage", "E", "build with a garbage model dir: 0 or a typed error", e_embed_model_garbage)


def e_injected(c):
    repo = c.syn()
    old = c.current(repo)
    append(os.path.join(repo, "shop/models.py"), "\n\ndef injected():\n    return 3\n")
    for point in ("after-extract", "before-publish"):
        r = c.atlas("build", repo=repo, env_add={"ATLAS_INJECT_FAILURE": point})
        c.check(r, (1,), ("atlas-build-injected-failure",), label=point)
        lo = leftovers(c_graph(repo))
        c.expect(not lo and c.current(repo) == old, f"{point} state", "intact" if not lo else f"{len(lo)} left",
                 f"leftovers {lo[:2]} or CURRENT changed")
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build")


add("E83-injected-failures", "E", "exit 1 atlas-build-injected-failure, CURRENT unchanged, no leftovers", e_injected)


def e_eval_garbage(c):
    repo = c.syn(build=False)
    bad = os.path.join(c.tmp, "corpus.toml")
    write(bad, b"[[case]]\nquery = 5\n\x00\xff")
    for corpus in (bad, "/tmp/atlas-no-such-corpus.toml", "/dev/zero"):
        r = c.atlas("eval", "--corpus", corpus, repo=repo)
        c.check(r, (1, 2, 3), ("atlas-io", "atlas-invalid-input", "atlas-code-missing"), label=os.path.basename(corpus))


add("E84-eval-corpus-garbage", "E", "typed exit 1/2/3 in < 20 s", e_eval_garbage)


def e_many_files(c):
    files = {f"many/d{i % 50}/m{i}.py": f"def f{i}():\n    return f{(i + 1) % 3000}()\n" for i in range(3000)}
    repo = c.syn(build=False, extra=files)
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build 3000 files", pred=lambda r: r.secs < 20, why=f"{r.secs:.1f}s")
    r = c.atlas("context", "f17", "--profile", "flow", "--frozen", "--format", "json", repo=repo)
    c.check(r, (0, 7), ("atlas-context-no-match", "atlas-context-ambiguous"), label="context")


add("E85-3000-small-files", "E", "build 0 < 20 s; context 0/7", e_many_files)


def e_deep_dirs(c):
    rel = "/".join(f"d{i}" for i in range(120)) + "/deep.py"
    repo = c.syn(build=False, extra={rel: "def deepest():\n    return 1\n"})
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build")
    r = c.atlas("context", "deepest", "--profile", "symbol", "--frozen", "--format", "json", repo=repo)
    c.check(r, (0,), label="context")


add("E86-120-nested-directories", "E", "build 0; context of the deepest symbol 0", e_deep_dirs)


def e_huge_file_many_defs(c):
    # ~950 KB: just under the default 1 MB per-file limit, so the file is really compiled
    body = "".join(f"def fn_{i}(a, b):\n    return fn_{(i * 7) % 19000}(b, a)\n\n" for i in range(19000))
    repo = c.syn(build=False, extra={"big/many.py": body})
    r = c.atlas("build", repo=repo)
    c.check(r, (0,), label="build 19k defs", pred=lambda r: r.secs < 20, why=f"{r.secs:.1f}s")
    r = c.atlas("context", "fn_7", "--profile", "flow", "--frozen", "--format", "json", repo=repo)
    c.check(r, (0, 7, 8), ("atlas-context-no-match", "atlas-context-required-budget"), label="context")


add("E87-one-file-19000-functions", "E", "build 0 < 20 s; context 0/7/8", e_huge_file_many_defs)


# =======================================================================================
# driver


def self_test(h):
    """The pure-Python blake3 must agree with atlas before any hash-based case runs."""
    assert blake3(b"").hex() == "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
    assert blake3(b"abc").hex() == "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
    big = bytes(range(256)) * 5000  # 1.28 MB: many chunks, an uneven tree
    d = tempfile.mkdtemp(dir=h.root)
    write(os.path.join(d, "x.py"), b"def f():\n    return 1\n")
    write(os.path.join(d, "big.txt"), big)
    r = run_proc([h.bin, "--code", d, "build", "--no-search", "--max-file-bytes", "2000000"], env=h.env)
    if r.rc != 0:
        sys.exit(f"self-test build failed: {r.obs} {r.err.decode()[-300:]}")
    fp = read(os.path.join(d, ".agent-spec/graph/CURRENT")).strip().decode()
    g = read(os.path.join(d, ".agent-spec/graph/generations", fp, "graph.atlas"))
    if blake3(g[64:]) != g[24:56]:
        sys.exit("self-test: pure-Python blake3 disagrees with the graph header")
    shutil.rmtree(d, ignore_errors=True)


def run_case(h, cs):
    c = Ctx(h, cs)
    t0 = time.monotonic()
    status, reason = "fail", ""
    try:
        cs.fn(c)
    except Skip as e:
        status, reason = "skip", str(e)
    except SetupError as e:
        reason = str(e)
        c.checks.append((False, "setup", "setup failed", reason))
    except Exception as e:  # a harness bug must not stop the catalogue
        import traceback
        reason = f"harness error: {type(e).__name__}: {e}"
        c.checks.append((False, "harness", "harness error", reason + " " + traceback.format_exc().splitlines()[-2]))
    finally:
        c.close()
    if status != "skip":
        failed = [ch for ch in c.checks if not ch[0]]
        # every run, checked or not: a panic, hang or crash is always a failure
        for r in c.runs:
            if r.panicked or r.timed_out or r.signalled:
                tag = "timeout" if r.timed_out else ("panic" if r.panicked else "crash")
                if not any(tag in (ch[3] or "") for ch in failed):
                    failed.append((False, _verb(r), r.obs, f"{tag}: {r.short_cmd()[:60]}: {_panic_line(r.err)[:100]}"))
        if not c.checks and not failed:
            failed.append((False, "harness", "no checks", "case made no checks"))
        status = "pass" if not failed else "fail"
        reason = "; ".join(f"{ch[1]}: {ch[3]}" for ch in failed[:3])
    observed = "; ".join(f"{ch[1]}: {ch[2]}" for ch in c.checks) or reason
    return {"case": cs.name, "group": cs.group, "expected": cs.expected, "observed": observed,
            "result": status, "reason": reason, "secs": round(time.monotonic() - t0, 2), "notes": c.notes,
            "setup": (cs.fn.__doc__ or "").strip(), "commands": [r.short_cmd()[:160] for r in c.runs[:12]]}


def md_escape(s, limit=None):
    s = s.replace("|", "\\|").replace("\n", " ")
    if limit and len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=DEFAULT_BIN)
    ap.add_argument("--only", action="append", default=[], help="run cases whose name contains SUBSTR (repeatable)")
    ap.add_argument("--group", action="append", default=[], help="run only these groups (A-E)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    ap.add_argument("--json", help="also write the full results as JSON to this file")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--mem-limit-mb", type=int, default=6144,
                    help="address-space limit inherited by atlas (guards /dev/zero reads); 0 = none")
    ap.add_argument("--full-observed", action="store_true", help="do not shorten the observed column")
    args = ap.parse_args()
    cases = [c for c in CASES if (not args.only or any(s in c.name for s in args.only))
             and (not args.group or c.group in args.group)]
    if args.list:
        for c in cases:
            print(f"{c.name}\t{c.group}\t{c.expected}")
        print(f"{len(cases)} cases")
        return 0
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"no executable atlas at {args.bin}")
    if args.mem_limit_mb:
        lim = args.mem_limit_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    h = Harness(args)
    print(f"atlas: {h.bin}  cases: {len(cases)}  scratch: {h.root}", file=sys.stderr)
    self_test(h)
    results = []
    try:
        for i, cs in enumerate(cases):
            res = run_case(h, cs)
            results.append(res)
            print(f"[{i + 1}/{len(cases)}] {res['result'].upper():4} {cs.name} ({res['secs']}s)"
                  + (f" — {res['reason'][:160]}" if res["result"] != "pass" else ""), file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(h.root, ignore_errors=True)
    limit = None if args.full_observed else 110
    print("| case | group | expected | observed | pass |")
    print("|---|---|---|---|---|")
    for r in results:
        mark = {"pass": "pass", "fail": "FAIL", "skip": "skip"}[r["result"]]
        obs = r["observed"] if r["result"] == "pass" else (r["reason"] or r["observed"])
        print(f"| {r['case']} | {r['group']} | {md_escape(r['expected'], 90)} | {md_escape(obs, limit)} | {mark} |")
    groups = {}
    for r in results:
        g = groups.setdefault(r["group"], {"cases": 0, "pass": 0, "fail": 0, "skip": 0})
        g["cases"] += 1
        g[r["result"]] += 1
    summary = {
        "binary": h.bin,
        "cases": len(results),
        "pass": sum(r["result"] == "pass" for r in results),
        "fail": sum(r["result"] == "fail" for r in results),
        "skip": sum(r["result"] == "skip" for r in results),
        "by_group": dict(sorted(groups.items())),
        "failed": [r["case"] for r in results if r["result"] == "fail"],
        "panics": [r["case"] for r in results if "panic" in r["reason"]],
        "timeouts": [r["case"] for r in results if "timeout" in r["reason"]],
    }
    print()
    print("```json")
    print(json.dumps(summary, indent=2))
    print("```")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "results": results}, f, indent=2)
    return 0 if summary["fail"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

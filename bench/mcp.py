#!/usr/bin/env python3
"""Warm-server latency of `atlas mcp` (issue 13): one server over stdio, many tool calls,
timed from the client side (write the request, read the answer).

  python3 bench/mcp.py REPO [--atlas BIN] [--calls 200] [--mixed 1000] [--fresh]
      [--context Q ...] [--search Q ...]
  python3 bench/mcp.py REPO --first 5 [--atlas BIN] [--baseline BIN] [--delay 1.0]

Builds the graph once (`atlas build`), starts `atlas mcp` in REPO, warms it with one call
of each tool, then runs --calls `atlas_context` calls (queries round-robin, profile
symbol and flow alternating, --frozen) and --calls `atlas_search` calls, and reports p50
and p95 per tool; then --mixed calls of both and the server's RSS before and after them
(VmRSS from /proc), to show it does not grow without bound. `--fresh` leaves the calls
not frozen, as an agent's are by default: each then checks the tree first.

`--first N` times instead a fresh server's first question (`atlas_context`, a question that
searches), asked --delay seconds after the handshake as an agent asks after reading the
tool list, and its second; N servers, alternating with --baseline's when given.
"""
import argparse
import json
import os
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(HERE, "..", "target", "release", "atlas")


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


class Server:
    def __init__(self, binary, repo):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}
        self.proc = subprocess.Popen([binary, "mcp"], cwd=repo, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, text=True, bufsize=1)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    def call(self, tool, arguments):
        started = time.perf_counter()
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        elapsed = (time.perf_counter() - started) * 1e3
        result = answer.get("result") or {}
        if "error" in answer or result.get("isError"):
            raise SystemExit(f"{tool} {arguments}: {json.dumps(answer)[:400]}")
        return elapsed

    def rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def first_questions(binaries, repo, runs, delay):
    """Per binary: the first and second question's times of `runs` fresh servers."""
    question = {"query": "how are rational numbers simplified", "profile": "symbol", "frozen": True}
    times = {b: ([], []) for b in binaries}
    for _ in range(runs):
        for binary in binaries:
            server = Server(binary, repo)
            time.sleep(delay)
            times[binary][0].append(server.call("atlas_context", question))
            times[binary][1].append(server.call("atlas_context", question))
            server.close()
    return {b: {"first_p50_ms": round(statistics.median(f), 1), "second_p50_ms": round(statistics.median(s), 1),
                "first_ms": [round(x, 1) for x in f]} for b, (f, s) in times.items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("repo")
    p.add_argument("--atlas", default=DEFAULT_BIN)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--mixed", type=int, default=1000)
    p.add_argument("--context", action="append")
    p.add_argument("--search", action="append")
    p.add_argument("--first", type=int, help="time fresh servers' first question instead")
    p.add_argument("--baseline", help="another binary, alternating with --atlas (with --first)")
    p.add_argument("--delay", type=float, default=1.0)
    p.add_argument("--fresh", action="store_true", help="calls that are not frozen")
    args = p.parse_args()
    contexts = args.context or ["Add.flatten", "Basic.subs", "Symbol", "sympy/core"]
    searches = args.search or ["matrix determinant", "simplify trigonometric expression"]
    binary = os.path.abspath(args.atlas)
    subprocess.run([binary, "build", "--no-progress"], cwd=args.repo, check=True,
                   stdout=subprocess.DEVNULL)
    if args.first:
        binaries = [binary] + ([os.path.abspath(args.baseline)] if args.baseline else [])
        print(json.dumps(first_questions(binaries, args.repo, args.first, args.delay), indent=2))
        return
    server = Server(binary, args.repo)
    frozen = not args.fresh
    context_args = lambda i: {"query": contexts[i % len(contexts)],
                              "profile": "symbol" if i % 2 == 0 else "flow", "frozen": frozen}
    search_args = lambda i: {"query": searches[i % len(searches)], "frozen": frozen}
    server.call("atlas_context", context_args(0))
    server.call("atlas_search", search_args(0))
    report = {"repo": args.repo, "calls": args.calls}
    for tool, make in (("atlas_context", context_args), ("atlas_search", search_args)):
        times = [server.call(tool, make(i)) for i in range(args.calls)]
        report[tool] = {"p50_ms": round(statistics.median(times), 2),
                        "p95_ms": round(percentile(times, 95), 2)}
    before = server.rss_mib()
    for i in range(args.mixed):
        if i % 2 == 0:
            server.call("atlas_context", context_args(i))
        else:
            server.call("atlas_search", search_args(i))
    after = server.rss_mib()
    server.close()
    report["rss_mib"] = {"before_mixed": round(before, 1), "after_mixed": round(after, 1),
                         "mixed_calls": args.mixed}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Search latency with Jev off and on (issue 15, "Performance").

Starts a local System One server on 127.0.0.1 that answers every batch after DELAY ms
(every candidate scored 2.0 at confidence 0.9), then runs `atlas search` as a whole
process, interleaved: Jev off with the binary before the change (--before, optional),
Jev off with this binary, and Jev on against the local server
(ATLAS_RELEVANCE_TEST_LOOPBACK=1: the one test-only exception to the https rule).
Prints medians and p95 per configuration.

Usage: bench/relevance_latency.py --code REPO --graph GRAPH [--before BIN [--before-on]] [--runs 15]
"""
import argparse
import http.server
import json
import os
import statistics
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = ["parse the expression into a tree", "simplify trigonometric functions",
           "Symbol", "matrix determinant", "solve_linear_system"]


class Handler(http.server.BaseHTTPRequestHandler):
    delay = 0.05

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(self.delay)
        answers = {c["id"]: {"type": "score", "score": 2.0, "confidence": 0.9}
                   for c in body["state"]["candidates"]}
        out = json.dumps({"id": "bench", "model": "typesafe/jev-1.13-20260917",
                          "provider": "local", "answers": answers,
                          "usage": {"cost": 0.0, "input_tokens": 0, "output_tokens": 0}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def run(binary, args, query, env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}
    env.update(env_extra)
    start = time.perf_counter()
    out = subprocess.run([binary, "--code", args.code, "--graph", args.graph, "search", query,
                          "--top-k", "10", "--format", "json", "--frozen"],
                         capture_output=True, text=True, env=env)
    elapsed = (time.perf_counter() - start) * 1000
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    if env_extra:
        status = json.loads(out.stdout)["relevance"]["status"]
        assert status == "success", status
    return elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", required=True)
    parser.add_argument("--graph", required=True)
    parser.add_argument("--bin", default=os.path.join(HERE, "..", "target", "release", "atlas"))
    parser.add_argument("--before")
    parser.add_argument("--before-on", action="store_true",
                        help="also run the --before binary with Jev on (compare two judges)")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--delay-ms", type=float, default=50)
    args = parser.parse_args()
    Handler.delay = args.delay_ms / 1000
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/api/v1/systemone"
    on = {"ATLAS_RELEVANCE": "1", "ATLAS_RELEVANCE_API_URL": url,
          "ATLAS_RELEVANCE_API_KEY": "bench", "ATLAS_RELEVANCE_TEST_LOOPBACK": "1"}
    configs = [("off, this binary", args.bin, {}), ("on, local server", args.bin, on)]
    if args.before:
        configs.insert(0, ("off, before", args.before, {}))
    if args.before and args.before_on:
        configs.append(("on, local server, before", args.before, on))
    times = {name: [] for name, _, _ in configs}
    for name, binary, env in configs:  # warm the page cache
        run(binary, args, QUERIES[0], env)
    for i in range(args.runs):
        for query in QUERIES:
            for name, binary, env in configs:
                times[name].append(run(binary, args, query, env))
    print(f"{args.runs * len(QUERIES)} searches per configuration, interleaved; "
          f"server delay {args.delay_ms:.0f} ms")
    print("| configuration | p50 ms | p95 ms |")
    print("|---|---|---|")
    for name, values in times.items():
        values.sort()
        p95 = values[int(0.95 * (len(values) - 1))]
        print(f"| {name} | {statistics.median(values):.1f} | {p95:.1f} |")


if __name__ == "__main__":
    main()

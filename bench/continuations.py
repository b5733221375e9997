#!/usr/bin/env python3
"""Follows every continuation of one `atlas context` answer (docs/QUALITY.md, "Continuations").

    python3 bench/continuations.py BIN REPO GRAPH PROFILE QUERY [MAX_PAGES]

Runs the query (frozen), then every omission group's argv as-is, then theirs, depth first,
each distinct argv once (after-cursor, policy and source-unavailable groups are not
followed: they fetch what a page showed, or change the query). Prints the pages fetched,
the continuation pages that showed no optional evidence ("empty"), evidence shown twice
along one chain ("repeats"), and how many of the first answer's candidates
(`receipt.retrieval.total`) some page delivered.
"""
import json, subprocess, sys

BIN, REPO, GRAPH, PROFILE, QUERY = sys.argv[1:6]
MAX_PAGES = int(sys.argv[6]) if len(sys.argv) > 6 else 5000
SKIP = {"after-cursor", "policy", "source-unavailable"}


def run(argv):
    out = subprocess.run([BIN] + argv[1:], capture_output=True, text=True, cwd=REPO)
    if out.returncode != 0:
        return None, out.stderr.strip()[:200]
    return json.loads(out.stdout), None


first, error = run(["atlas", "--graph", GRAPH, "context", QUERY, "--profile", PROFILE,
                    "--frozen", "--format", "json"])
if first is None:
    sys.exit(f"the first answer failed: {error}")
total = first["receipt"]["retrieval"]["total"]
delivered, visited = set(), set()
pages = empty = repeats = errors = 0
stack = [(first, frozenset(), 0, None)]
while stack and pages < MAX_PAGES:
    page, shown_before, depth, via = stack.pop()
    pages += 1
    ids = {e["id"] for e in page["evidence"]}
    optional = {e["id"] for e in page["evidence"] if not e.get("required")}
    if depth > 0 and not optional:
        empty += 1
        print(f"  empty page at depth {depth}, via {via}")
    repeats += len(optional & shown_before)
    delivered |= ids
    for group in page["omissions"]:
        if group["reason"] in SKIP or tuple(group["argv"]) in visited:
            continue
        visited.add(tuple(group["argv"]))
        nxt, error = run(group["argv"])
        if nxt is None:
            errors += 1
            print(f"  {group['reason']} argv failed: {error}")
            continue
        stack.append((nxt, shown_before | ids, depth + 1, (group["class"], group["reason"], group["count"])))
print(f"pages={pages} empty={empty} repeats={repeats} errors={errors} "
      f"delivered={len(delivered)} of total={total}"
      + (" (page limit reached)" if stack else ""))

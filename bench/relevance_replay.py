#!/usr/bin/env python3
"""Jev mechanics, offline: hand-written judgements replayed through the production path.

The judgements (bench/relevance/codesteer-golden-judgments.jsonl) were written by
reading each candidate of `atlas search --top-k 20` for the 28 codesteer-golden queries
and scoring it on rubric v2 (0-3) with a confidence. They are a person's (an assistant's)
reading, recorded with source "hand" and model "hand-judged": never the model's answers.

  make   converts them into a replay file (ATLAS_RELEVANCE_REPLAY format,
         graph-schema/README.md); needs the `blake3` Python package.
  eval   runs every query locally and through the replay (compact profile, cut on; and
         cut off), and reports MRR@10 per class and the mechanics checks: exact matches
         kept, the cut drops only low scores, nothing refilled.

Usage:
  python3 -m venv /tmp/b3 && /tmp/b3/bin/pip install blake3 pyyaml
  /tmp/b3/bin/python bench/relevance_replay.py make > /tmp/hand.jsonl
  /tmp/b3/bin/python bench/relevance_replay.py eval --replay /tmp/hand.jsonl \
      --code /tmp/codesteer --graph /tmp/codesteer-graph [--bin target/release/atlas]
(/tmp/codesteer: github:LuisCarlosLopes/codesteer-atlas at e03bda05, built once.)
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
JUDGEMENTS = os.path.join(HERE, "relevance", "codesteer-golden-judgments.jsonl")
GOLDEN = os.path.join(HERE, "..", "..", "shared", "eval", "codesteer-golden", "golden_queries.yaml")
RUBRIC = "jev-relevance-score-v2"


def candidate_id(path, symbol, kind):
    import blake3
    return "c" + blake3.blake3(f"{path}\0{symbol}\0{kind}".encode()).hexdigest()[:12]


def make():
    import blake3
    by_query = {}
    for line in open(JUDGEMENTS, encoding="utf-8"):
        j = json.loads(line)
        by_query.setdefault(j["query"], []).append(j)
    for query, items in by_query.items():
        answers = {candidate_id(j["path"], j["symbol"], j["kind"]):
                   {"score": float(j["score"]), "confidence": float(j["confidence"])}
                   for j in items}
        print(json.dumps({
            "atlas_relevance_record": 1,
            "query": blake3.blake3(query.encode()).hexdigest(),
            "rubric": RUBRIC,
            "source": "hand",
            "model": "hand-judged",
            "batch": 0,
            "ids": sorted(answers),
            "outcome": "valid",
            "answers": answers,
            "cost": 0.0,
        }))


def search(args, query, env_extra, profile):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}
    env.update(env_extra)
    out = subprocess.run(
        [args.bin, "--code", args.code, "--graph", args.graph, "search", query,
         "--top-k", str(args.top_k), "--profile", profile, "--format", "json", "--frozen"],
        capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"search failed: {out.stderr}")
    return json.loads(out.stdout)


def rr(hits, targets):
    for rank, h in enumerate(hits[:10]):
        if (h["path"], h["symbol"]) in targets:
            return 1.0 / (rank + 1)
    return 0.0


def evaluate(args):
    import yaml
    golden = yaml.safe_load(open(GOLDEN, encoding="utf-8"))["queries"]
    scores = {}
    confident = {}
    for line in open(JUDGEMENTS, encoding="utf-8"):
        j = json.loads(line)
        scores[(j["query"], j["path"], j["symbol"])] = j["score"]
        confident[(j["query"], j["path"], j["symbol"])] = j["confidence"] >= 0.70
    replay = {"ATLAS_RELEVANCE": "1", "ATLAS_RELEVANCE_REPLAY": args.replay}
    runs = {"local": ({}, "compact"), "jev cut": (replay, "compact"),
            "jev no cut": (dict(replay, ATLAS_RELEVANCE_CUT="0"), "compact")}
    mrr = {name: {} for name in runs}
    checks = {"exact kept": [0, 0], "cut drops only < 1.5": [0, 0], "no refill": [0, 0]}
    tokens = {name: 0 for name in runs}
    for q in golden:
        targets = {(t["file_path"], t["scope_name"]) for t in q["targets"]}
        out = {name: search(args, q["query"], env, profile) for name, (env, profile) in runs.items()}
        for name in runs:
            mrr[name].setdefault(q["klass"], []).append(rr(out[name]["hits"], targets))
            tokens[name] += len(json.dumps(out[name]["hits"]))
        local = [(h["path"], h["symbol"]) for h in out["local"]["hits"]]
        cut = out["jev cut"]
        kept = {(h["path"], h["symbol"]) for h in cut["hits"]}
        last = q["query"].split(".")[-1]
        for p, s in local:
            if s == q["query"] or s.split(".")[-1] == last and s.endswith(q["query"]):
                checks["exact kept"][1] += 1
                checks["exact kept"][0] += (p, s) in kept
        rel = cut.get("relevance", {})
        full = len(cut["hits"]) + rel.get("removed", 0) >= args.top_k
        # Uncertain judgements keep their lexical place: only confident ones displace.
        kept_scores = [scores.get((q["query"], h["path"], h["symbol"])) for h in cut["hits"]
                       if confident.get((q["query"], h["path"], h["symbol"]))]
        floor = min([k for k in kept_scores if k is not None], default=3.0)
        lines = {(h["path"], h["symbol"]): h["lines"] for h in out["local"]["hits"]}

        def inside_kept(p, s):
            """The compact profile's own dedup: inside an earlier kept hit's lines."""
            a, b = lines[(p, s)]
            return any(h["path"] == p and h["lines"][0] <= a and b <= h["lines"][1]
                       for h in cut["hits"])

        for p, s in local:
            if (p, s) not in kept and not inside_kept(p, s):
                score = scores.get((q["query"], p, s))
                checks["cut drops only < 1.5"][1] += 1
                # Cut (judged below half the scale), or displaced from a full top_k by
                # candidates judged at least as high.
                ok = score is not None and (score < 1.5 or (full and floor >= score))
                checks["cut drops only < 1.5"][0] += ok
                if not ok and args.verbose:
                    print(f"  not explained: {q['query']!r} {s} judged {score}, "
                          f"floor {floor}, full {full}")
        checks["no refill"][1] += 1
        fallback = rel.get("warnings") == ["relevance_unconfirmed_fallback"]
        checks["no refill"][0] += (rel.get("selected", 0) + rel.get("removed", 0)
                                   == min(args.top_k, rel.get("distinct", 0)) or fallback)
        for h in cut["hits"] if not fallback else []:
            s = scores.get((q["query"], h["path"], h["symbol"]))
            if s is not None and s < 1.5 and h["symbol"] != q["query"]:
                print(f"  kept below the cut: {q['query']!r} {h['symbol']} {s}")
    print(f"codesteer-golden, {len(golden)} queries, top_k {args.top_k}, compact profile")
    classes = sorted({q["klass"] for q in golden})
    print("| run | all | " + " | ".join(classes) + " | hit chars |")
    print("|---|---|" + "---|" * len(classes) + "---|")
    for name in runs:
        allv = [v for vs in mrr[name].values() for v in vs]
        cells = [f"{sum(mrr[name][c]) / len(mrr[name][c]):.3f}" for c in classes]
        print(f"| {name} | {sum(allv) / len(allv):.3f} | " + " | ".join(cells) + f" | {tokens[name]} |")
    for name, (ok, total) in checks.items():
        print(f"{name}: {ok}/{total}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["make", "eval"])
    parser.add_argument("--replay")
    parser.add_argument("--code")
    parser.add_argument("--graph")
    parser.add_argument("--bin", default=os.path.join(HERE, "..", "target", "release", "atlas"))
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    make() if args.mode == "make" else evaluate(args)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Structural measures of the source tree (issue 12): file sizes, long functions, where the
library reads the environment, and public items nothing outside their module uses.

  python3 bench/code_measures.py [--src src] [--tests tests] [--json]

Functions are found by their `fn` line and measured to the brace that closes them (the code
is rustfmt-formatted; strings holding braces may skew a count by a line or two). The
library is `src/` without `main.rs`, `bin/` and the CLI (`cli/`), which is the edge where
the environment is read. Import direction and cycles are checked by tests/architecture.rs.
"""
import argparse
import json
import os
import re

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")
PUB = re.compile(r"^\s*pub\s+(?:fn|struct|enum|const|static|type|trait|mod)\s+(\w+)")
ENV = re.compile(r"std::env::var(?:_os)?\s*\(|\benv::var(?:_os)?\s*\(")


def rust_files(root):
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".rs"):
                yield os.path.join(dirpath, name)


def strip_strings(line):
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', re.sub(r"'(?:\\.|[^'\\])'", "''", line))


def functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        depth, opened, j = 0, False, i
        while j < len(lines):
            code = strip_strings(lines[j].split("//")[0])
            depth += code.count("{") - code.count("}")
            opened |= "{" in code
            if (opened and depth <= 0) or (not opened and code.rstrip().endswith(";")):
                break
            j += 1
        out.append((m.group(1), i + 1, j - i + 1))
        i += 1
    return out


def in_library(path, src):
    rel = os.path.relpath(path, src)
    return not (rel == "main.rs" or rel.startswith("bin" + os.sep) or rel.startswith("cli" + os.sep) or rel == "cli.rs")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--src", default="src")
    parser.add_argument("--tests", default="tests")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    files = list(rust_files(args.src))
    sizes = sorted(((sum(1 for _ in open(f, encoding="utf-8")), f) for f in files), reverse=True)
    long_fns = []
    for f in files:
        for name, line, length in functions(f):
            if length > 120:
                long_fns.append({"fn": name, "at": f"{f}:{line}", "lines": length})
    long_fns.sort(key=lambda x: -x["lines"])
    env_sites = []
    for f in files:
        if not in_library(f, args.src):
            continue
        for n, line in enumerate(open(f, encoding="utf-8"), 1):
            if ENV.search(line.split("//")[0]):
                env_sites.append(f"{f}:{n}")
    # Public items, and those whose name appears in no other file of src/ or tests/.
    texts = {f: open(f, encoding="utf-8").read() for f in files + list(rust_files(args.tests))}
    pub_items = []
    for f in files:
        for line in open(f, encoding="utf-8"):
            m = PUB.match(line)
            if m:
                pub_items.append((m.group(1), f))
    unused = [
        f"{f}::{name}"
        for name, f in pub_items
        if not any(re.search(r"\b" + re.escape(name) + r"\b", t) for g, t in texts.items() if g != f)
    ]
    report = {
        "files": len(files),
        "lines": sum(s for s, _ in sizes),
        "largest": [{"file": f, "lines": s} for s, f in sizes[:5]],
        "functions_over_120_lines": long_fns,
        "env_var_sites_in_library": env_sites,
        "pub_items": len(pub_items),
        "pub_items_used_only_in_their_file": len(unused),
    }
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"{report['files']} files, {report['lines']} lines")
    print("largest: " + ", ".join(f"{x['file']} {x['lines']}" for x in report["largest"]))
    print(f"functions over 120 lines: {len(long_fns)}")
    for x in long_fns:
        print(f"  {x['lines']:4}  {x['fn']}  {x['at']}")
    print(f"env::var sites in the library: {len(env_sites)}")
    for s in env_sites:
        print(f"  {s}")
    print(f"pub items: {len(pub_items)}; used only in their own file: {len(unused)}")


if __name__ == "__main__":
    main()

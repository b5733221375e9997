#!/usr/bin/env python3
"""Commit-message localisation sets: (commit message → changed files and functions), mined
from a repository's own history, scored for `atlas search` against whole-file BM25.

  python3 bench/commits.py --repo tokio-rs/tokio --lang rust [--count 60] [--bin BIN]
      [--out FILE] [--env NAME=VALUE ...] [--baseline] [--min-words N]

The repository comes from the mirror (`fetch github:owner/name`; MIRROR, default
/work/.mirror). Selection is deterministic: non-merge commits among the newest 2,000 that
change 1–3 existing non-test source files of the language (≤ 300 changed lines) and whose
subject has at least three words (and whose whole message has at least `--min-words`:
40 makes a set of long messages, closer to an issue's text than a subject line is),
`--count` of them evenly spaced. The query is the whole
message (subject and body, trailers removed), as an agent would paste it. Each commit's
parent is checked out and built (one graph directory per repository, so the fact cache
makes later builds cheap), then searched with `--frozen`.

Gold: the changed source files; gold functions are the innermost definitions (per
`atlas file-api` at the parent) that overlap a changed line of the parent.
Scores: file Acc@1 and Acc@5 (every gold file within the top k distinct paths), MRR (first
gold file), and function@5/@10 (every gold function within the top k distinct symbols).
The baseline (`--baseline`) is plain whole-file BM25 (bm25s, path and text) over the
language's files of the same tree.

Never point this at the repositories of ../shared/eval, nor at ripgrep, cobra or zod
(kept for independent checks): see issue 16.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MIRROR = os.environ.get('MIRROR', '/work/.mirror')
WORK = os.environ.get('ATLAS_COMMITS_TMP', '/tmp/atlas-commits')
FORBIDDEN = {'astropy/astropy', 'sympy/sympy', 'sphinx-doc/sphinx', 'pydata/xarray', 'pytest-dev/pytest',
             'pylint-dev/pylint', 'psf/requests', 'mwaskom/seaborn', 'pallets/flask',
             'BurntSushi/ripgrep', 'spf13/cobra', 'colinhacks/zod'}
EXTENSIONS = {'rust': ('.rs',), 'go': ('.go',), 'typescript': ('.ts', '.tsx'), 'python': ('.py',),
              'javascript': ('.js', '.mjs', '.cjs', '.jsx')}
TEST_PATH = re.compile(r'(^|/)(tests?|testing|__tests__|spec|benches|examples?|fixtures?|testdata)(/|$)'
                       r'|(_test\.go|\.test\.[jt]sx?|\.spec\.[jt]sx?|(^|/)test_[^/]*\.py|_test\.py)$')
TRAILER = re.compile(r'^(signed-off-by|co-authored-by|reviewed-by|acked-by|cc|fixes|closes|refs?):', re.I)


def git(gitdir, *args):
    return subprocess.run(['git', '-C', gitdir, *args], capture_output=True, text=True,
                          errors='replace', check=True).stdout


def is_source(path, lang):
    return path.endswith(EXTENSIONS[lang]) and not TEST_PATH.search(path)


def select(gitdir, lang, count, min_words=0):
    """The commits of the set, oldest first: [(hash, parent, message, gold files)]."""
    log = git(gitdir, 'log', '--no-merges', '-n', '2000', '--format=@@%H %P', '--name-status', '--no-renames')
    eligible = []
    for block in log.split('@@')[1:]:
        lines = block.strip().split('\n')
        ids = lines[0].split()
        if len(ids) != 2:
            continue
        changes = [line.split('\t') for line in lines[1:] if '\t' in line]
        source = [c for c in changes if is_source(c[-1], lang)]
        if not 1 <= len(source) <= 3 or any(c[0] != 'M' for c in source):
            continue
        eligible.append((ids[0], ids[1], sorted(c[1] for c in source)))
    chosen = []
    for commit, parent, files in eligible:
        message = git(gitdir, 'log', '-1', '--format=%B', commit)
        subject = message.strip().split('\n')[0]
        if len(subject.split()) < 3 or re.match(r'(?i)(bump|release|chore\(deps|v?\d+\.\d+)', subject):
            continue
        stat = git(gitdir, 'diff', '--numstat', parent, commit, '--', *files)
        changed = sum(int(a) + int(d) for a, d, _ in (l.split('\t') for l in stat.splitlines()) if a != '-')
        if changed > 300:
            continue
        body = '\n'.join(l for l in message.strip().split('\n') if not TRAILER.match(l.strip()))
        if len(body.split()) < min_words:
            continue
        chosen.append((commit, parent, body.strip(), files))
    step = max(len(chosen) / count, 1.0)
    picked = [chosen[int(i * step)] for i in range(min(count, len(chosen)))]
    return list(reversed(picked))


def changed_old_lines(gitdir, parent, commit, path):
    """1-based lines of the parent's file that the commit changes (an insertion counts the
    line it follows)."""
    diff = git(gitdir, 'diff', '-U0', parent, commit, '--', path)
    lines = set()
    for m in re.finditer(r'^@@ -(\d+)(?:,(\d+))? ', diff, re.M):
        start, length = int(m.group(1)), int(m.group(2) or 1)
        lines.update(range(start, start + length) if length else [max(start, 1)])
    return lines


def outline(bin_, code, graph, path):
    defs, offset = [], 0
    while True:
        r = subprocess.run([bin_, 'file-api', path, '--format', 'json', '--frozen', '--code', code,
                            '--graph', graph, '--offset', str(offset), '--max-definitions', '2000',
                            '--max-bytes', '1000000'], capture_output=True, text=True)
        if r.returncode != 0:
            return defs
        page = json.loads(r.stdout)
        defs += page['definitions']
        offset += len(page['definitions'])
        if not page['definitions'] or offset >= page['definitions_total']:
            return defs


def gold_functions(bin_, code, graph, gitdir, parent, commit, files):
    """`path::symbol` of the innermost callable or type around each changed line."""
    out = []
    for path in files:
        defs = [d for d in outline(bin_, code, graph, path) if d['kind'] not in ('module', 'file', 'impl')]
        for line in sorted(changed_old_lines(gitdir, parent, commit, path)):
            around = [d for d in defs if d['lines'][0] <= line <= d['lines'][1]]
            if around:
                inner = min(around, key=lambda d: d['lines'][1] - d['lines'][0])
                name = f"{path}::{inner['symbol']}"
                if name not in out:
                    out.append(name)
    return out


def checkout(gitdir, rev, dest):
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    subprocess.run(f'git -C {gitdir} archive {rev} | tar -x -C {dest}', shell=True, check=True)


def dedup(xs):
    seen = set()
    return [x for x in xs if not (x in seen or seen.add(x))]


def bm25_files(code, lang, query):
    import bm25s
    paths, texts = [], []
    for root, dirs, names in os.walk(code):
        dirs[:] = [d for d in dirs if not d.startswith('.') and d not in ('node_modules', 'target')]
        for name in names:
            if name.endswith(EXTENSIONS[lang]):
                p = os.path.join(root, name)
                rel = os.path.relpath(p, code)
                paths.append(rel)
                texts.append(rel + '\n' + open(p, encoding='utf-8', errors='replace').read())
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
    docs, _ = retriever.retrieve(bm25s.tokenize([query], show_progress=False), k=min(50, len(texts)),
                                 show_progress=False)
    return [paths[i] for i in docs[0]]


def score(rows):
    """rows: (gold files, gold functions, ranked files, ranked functions)."""
    out = {'n': len(rows)}
    for k in (1, 5):
        out[f'file_acc@{k}'] = round(100 * sum(all(f in rf[:k] for f in g) for g, _, rf, _ in rows) / len(rows), 1)
    out['file_mrr'] = round(sum(next((1 / (i + 1) for i, f in enumerate(rf) if f in g), 0)
                                for g, _, rf, _ in rows) / len(rows), 3)
    with_fns = [r for r in rows if r[1]]
    for k in (5, 10):
        out[f'func@{k}'] = round(100 * sum(all(f in r[3][:k] for f in r[1]) for r in with_fns)
                                 / max(len(with_fns), 1), 1)
    out['n_with_functions'] = len(with_fns)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--repo', required=True)
    parser.add_argument('--lang', required=True, choices=sorted(EXTENSIONS))
    parser.add_argument('--count', type=int, default=60)
    parser.add_argument('--bin', default=os.path.join(HERE, '..', 'target', 'release', 'atlas'))
    parser.add_argument('--out', help='per-commit ranks (JSON lines)')
    parser.add_argument('--env', action='append', default=[],
                        help='NAME=VALUE for the searches; NAME=A|B|C runs one configuration each')
    parser.add_argument('--baseline', action='store_true', help='also score whole-file BM25')
    parser.add_argument('--min-words', type=int, default=0,
                        help='only commits whose message (trailers removed) has this many words')
    args = parser.parse_args()
    if args.repo in FORBIDDEN:
        sys.exit(f'{args.repo} is kept for evaluation or independent checks (issue 16)')
    bin_ = os.path.abspath(args.bin)
    gitdir = os.path.join(MIRROR, args.repo.replace('/', '+'), 'repo')
    key = args.repo.replace('/', '+')
    code, graph = os.path.join(WORK, 'trees', key), os.path.join(WORK, 'graphs', key)
    # Configurations: the product of the --env alternatives (`ATLAS_FUSION=rrf|learned`).
    configs = [{}]
    for item in args.env:
        name, values = item.split('=', 1)
        configs = [dict(c, **{name: v}) for c in configs for v in values.split('|')]
    names = [','.join(f'{k}={v}' for k, v in c.items()) or 'default' for c in configs]
    rows = {n: [] for n in names + (['bm25-files'] if args.baseline else [])}
    out = open(args.out, 'w') if args.out else None
    commits = select(gitdir, args.lang, args.count, args.min_words)
    started = time.time()
    for n, (commit, parent, message, files) in enumerate(commits):
        checkout(gitdir, parent, code)
        subprocess.run([bin_, 'build', '--code', code, '--graph', graph, '--no-progress'],
                       capture_output=True, check=True)
        fns = gold_functions(bin_, code, graph, gitdir, parent, commit, files)
        record = {'commit': commit, 'files': files, 'fns': fns}
        for name, config in zip(names, configs):
            r = subprocess.run([bin_, 'search', message, '--top-k', '50', '--format', 'json', '--code', code,
                                '--graph', graph, '--frozen'], capture_output=True, text=True,
                               env=dict(os.environ, **config))
            hits = json.loads(r.stdout).get('hits', []) if r.returncode == 0 else []
            ranked_files = dedup(h['path'] for h in hits)
            ranked_fns = dedup(f"{h['path']}::{h['symbol']}" for h in hits)
            rows[name].append((files, fns, ranked_files, ranked_fns))
            record[name] = {'files': ranked_files[:20], 'fns': ranked_fns[:50]}
        if args.baseline:
            ranked_files = bm25_files(code, args.lang, message)
            rows['bm25-files'].append((files, fns, ranked_files, []))
            record['bm25-files'] = {'files': ranked_files[:10]}
        if out:
            out.write(json.dumps(record) + '\n')
            out.flush()
        print(f'\r{n + 1}/{len(commits)} {time.time() - started:.0f}s', end='', file=sys.stderr)
    print(file=sys.stderr)
    print(json.dumps({'repo': args.repo, 'lang': args.lang,
                      'scores': {name: score(r) for name, r in rows.items() if r}}, indent=1))


if __name__ == '__main__':
    main()

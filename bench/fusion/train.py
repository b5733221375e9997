#!/usr/bin/env python3
"""Trains the learned fusion scorer (issue 16, item 3; `ATLAS_FUSION=learned`).

  python3 bench/fusion/train.py collect [--count 120] [--bin BIN] [--out /tmp/atlas-fusion.jsonl]
  python3 bench/fusion/train.py train [--data /tmp/atlas-fusion.jsonl] [--write]

`collect` mines (commit message → changed functions) pairs from the history of
repositories outside the evaluation (`bench/commits.py` selects the commits and finds the
gold), searches each message at the commit's parent with `ATLAS_SEARCH_FEATURES`, and
keeps every fused candidate's features with its label (1: a changed function).
Repositories: python-attrs/attrs, encode/httpx, psf/black (Python), expressjs/express and
axios/axios (JavaScript), fetched into the mirror (`fetch github:owner/name`). Never the
nine repositories of ../shared/eval, ripgrep, cobra or zod, nor any SWE-bench data.

`train` fits a logistic regression (scikit-learn, L2, C = 1) on all candidates, reports
leave-one-repository-out figures against the RRF order (function@10, file MRR over the
candidate pool: an approximation of the search, which also applies the exact-name tiers,
dedup and `top_k`), and prints the weights; `--write` puts them into
src/query/search/learned.rs. The data stays in /tmp: the binary carries the weights only.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import commits  # noqa: E402  (bench/commits.py)

REPOS = [('python-attrs/attrs', 'python'), ('encode/httpx', 'python'), ('psf/black', 'python'),
         ('expressjs/express', 'javascript'), ('axios/axios', 'javascript')]
LEARNED_RS = os.path.join(HERE, '..', '..', 'src', 'query', 'search', 'learned.rs')


def collect(args):
    bin_ = os.path.abspath(args.bin)
    out = open(args.out, 'w')
    for repo, lang in REPOS:
        assert repo not in commits.FORBIDDEN
        gitdir = os.path.join(commits.MIRROR, repo.replace('/', '+'), 'repo')
        key = repo.replace('/', '+')
        code = os.path.join(commits.WORK, 'trees', key)
        graph = os.path.join(commits.WORK, 'graphs', key)
        chosen = commits.select(gitdir, lang, args.count)
        for n, (commit, parent, message, files) in enumerate(chosen):
            commits.checkout(gitdir, parent, code)
            subprocess.run([bin_, 'build', '--code', code, '--graph', graph, '--no-progress'],
                           capture_output=True, check=True)
            fns = commits.gold_functions(bin_, code, graph, gitdir, parent, commit, files)
            if not fns:
                continue
            fd, features = tempfile.mkstemp(suffix='.jsonl')
            os.close(fd)
            r = subprocess.run([bin_, 'search', message, '--top-k', '50', '--format', 'json', '--code', code,
                                '--graph', graph, '--frozen'], capture_output=True, text=True,
                               env=dict(os.environ, ATLAS_SEARCH_FEATURES=features))
            lines = open(features).read().splitlines()
            os.unlink(features)
            if r.returncode != 0 or not lines:
                continue
            pool = json.loads(lines[-1])
            out.write(json.dumps({'repo': repo, 'commit': commit, 'files': files, 'fns': fns,
                                  'features': pool['features'], 'candidates': pool['candidates']}) + '\n')
            out.flush()
            print(f'\r{repo} {n + 1}/{len(chosen)}', end='', file=sys.stderr)
        print(file=sys.stderr)


def load(path):
    return [json.loads(line) for line in open(path)]


def rows_of(queries, file_weight=0.0):
    """Features, labels and sample weights: a changed function is positive (weight 1); with
    `file_weight`, another candidate of a changed file is positive too, at that weight."""
    X, y, w = [], [], []
    for q in queries:
        gold = set(q['fns'])
        for c in q['candidates']:
            X.append(c['x'])
            if f"{c['path']}::{c['symbol']}" in gold:
                y.append(1)
                w.append(1.0)
            elif file_weight > 0 and c['path'] in q['files']:
                y.append(1)
                w.append(file_weight)
            else:
                y.append(0)
                w.append(1.0)
    return X, y, w


def fit(queries, file_weight):
    from sklearn.linear_model import LogisticRegression
    X, y, w = rows_of(queries, file_weight)
    return LogisticRegression(C=1.0, max_iter=2000).fit(X, y, sample_weight=w)


def metrics(queries, score):
    """function@10 (every gold function in the top 10 of the pool) and file MRR, with the
    pool ordered by `score(candidate)`, best first."""
    f10 = mrr = 0.0
    for q in queries:
        order = sorted(q['candidates'], key=score, reverse=True)
        names = [f"{c['path']}::{c['symbol']}" for c in order]
        f10 += all(g in names[:10] for g in q['fns'])
        paths = list(dict.fromkeys(c['path'] for c in order))
        mrr += next((1 / (i + 1) for i, p in enumerate(paths) if p in q['files']), 0)
    return round(100 * f10 / len(queries), 1), round(mrr / len(queries), 3)


def rrf_order(names):
    rrf, test, section, scope = (names.index(n) for n in ('rrf', 'test', 'section', 'scope'))
    def weight(c):
        x = c['x']
        w = x[rrf] * (0.6 if x[test] else 1.0) * (0.5 if x[section] else 1.0)
        return w * (1.5 if x[scope] else 1.0)
    return weight


def train(args):
    queries = load(args.data)
    names = queries[0]['features']
    repos = sorted({q['repo'] for q in queries})
    print(f'{len(queries)} queries, {sum(len(q["candidates"]) for q in queries)} candidates, '
          f'{sum(len(q["fns"]) for q in queries)} gold functions')
    print('leave one repository out (function@10, file MRR over the pool):')
    for held in repos:
        train_q = [q for q in queries if q['repo'] != held]
        test_q = [q for q in queries if q['repo'] == held]
        model = fit(train_q, args.file_weight)
        learned = lambda c: model.decision_function([c['x']])[0]  # noqa: E731
        print(f'  {held:22s} n={len(test_q):3d}  rrf {metrics(test_q, rrf_order(names))}  '
              f'learned {metrics(test_q, learned)}')
    model = fit(queries, args.file_weight)
    weights = [round(float(w), 6) for w in model.coef_[0]]
    bias = round(float(model.intercept_[0]), 6)
    for n, w in zip(names, weights):
        print(f'  {n:16s} {w:+.4f}')
    print(f'  {"bias":16s} {bias:+.4f}')
    if args.write:
        source = open(LEARNED_RS).read()
        body = ', '.join(repr(w) for w in weights)
        source = re.sub(r'pub const WEIGHTS: \[f64; FEATURES\.len\(\)\] = \[[^\]]*\];',
                        f'pub const WEIGHTS: [f64; FEATURES.len()] = [{body}];', source, flags=re.S)
        source = re.sub(r'pub const BIAS: f64 = [^;]*;', f'pub const BIAS: f64 = {bias!r};', source)
        open(LEARNED_RS, 'w').write(source)
        print(f'weights written to {os.path.relpath(LEARNED_RS)} (run cargo fmt)')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    c = sub.add_parser('collect')
    c.add_argument('--count', type=int, default=120)
    c.add_argument('--bin', default=os.path.join(HERE, '..', '..', 'target', 'release', 'atlas'))
    c.add_argument('--out', default='/tmp/atlas-fusion.jsonl')
    t = sub.add_parser('train')
    t.add_argument('--data', default='/tmp/atlas-fusion.jsonl')
    t.add_argument('--write', action='store_true')
    t.add_argument('--file-weight', type=float, default=0.0,
                   help='also label the other candidates of a changed file positive, at this weight')
    args = parser.parse_args()
    collect(args) if args.command == 'collect' else train(args)


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Trains the learned fusion scorer (issue 16, item 3; `ATLAS_FUSION=learned`).

  python3 bench/fusion/train.py collect [--count 120] [--min-words N] [--bin BIN] [--out /tmp/atlas-fusion.jsonl]
  python3 bench/fusion/train.py train [--data /tmp/atlas-fusion.jsonl[,more.jsonl]] [--write [--files-only]]
      [--file-standing]

`collect` mines (commit message → changed functions) pairs from the history of
repositories outside the evaluation (`bench/commits.py` selects the commits and finds the
gold), searches each message at the commit's parent with `ATLAS_SEARCH_FEATURES`, and
keeps every fused candidate's features with its label (1: a changed function).
Repositories: python-attrs/attrs, encode/httpx, psf/black (Python), expressjs/express and
axios/axios (JavaScript), fetched into the mirror (`fetch github:owner/name`). Never the
nine repositories of ../shared/eval, ripgrep, cobra or zod, nor any SWE-bench data.

`train` fits a logistic regression (scikit-learn, L2, C = 1) on all candidates, reports
leave-one-repository-out figures for the RRF, learned and split orders (file Acc@1/@5/MRR
and function@5/@10 over the candidate pool: an approximation of the search, which also
applies the exact-name tiers, dedup and `top_k`), the same for the pools `--eval` names
(collected with `collect --repos`, never trained on), and prints the weights. It also
fits the file scorer of `ATLAS_FUSION=split-files` (logistic regression over
`learned::FILE_FEATURES`, a changed file is positive) and reports it as `split+files`
beside `fused` (files in the fused file order, the search's order on short queries);
`--file-standing` gives it the file's places in the fused order and by whole text, as
the shipped scorer reads them. `--write` puts both sets of weights into
src/query/search/learned.rs, `--files-only` the file scorer's alone. The shipped file
scorer (2026-12-06): `train --data /tmp/pool-train.jsonl,/tmp/pool-unseen.jsonl
--file-standing --write --files-only` (the five training repositories and the five of
`collect --repos hyperium/hyper:rust,…`; docs/QUALITY.md). The data stays in /tmp: the binary carries the weights only.
"""
import argparse
import json
import math
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
# Whether the file scorer reads the file's standing (`--file-standing`).
FILE_STANDING = False
LEARNED_RS = os.path.join(HERE, '..', '..', 'src', 'query', 'search', 'learned.rs')


def collect(args):
    bin_ = os.path.abspath(args.bin)
    out = open(args.out, 'w')
    repos = [tuple(r.split(':')) for r in args.repos.split(',')] if args.repos else REPOS
    for repo, lang in repos:
        assert repo not in commits.FORBIDDEN
        gitdir = os.path.join(commits.MIRROR, repo.replace('/', '+'), 'repo')
        key = repo.replace('/', '+')
        code = os.path.join(commits.WORK, 'trees', key)
        graph = os.path.join(commits.WORK, 'graphs', key)
        chosen = commits.select(gitdir, lang, args.count, args.min_words)
        for n, (commit, parent, message, files) in enumerate(chosen):
            try:
                commits.checkout(gitdir, parent, code)
            except subprocess.CalledProcessError:  # a tree tar cannot write here: skipped
                continue
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


def load(paths):
    """The pools of one file, or of several (comma-separated)."""
    return [json.loads(line) for path in paths.split(',') for line in open(path)]


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


def classifier(model):
    """The model family: logistic regression (L2, C = 1) or gradient-boosted trees (100
    trees of depth 3, learning rate 0.1: scikit-learn's defaults)."""
    if model == 'gbdt':
        from sklearn.ensemble import GradientBoostingClassifier
        return GradientBoostingClassifier(n_estimators=100, max_depth=3, learning_rate=0.1, random_state=0)
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(C=1.0, max_iter=3000)


class Listwise:
    """A linear scorer fitted per query: softmax cross-entropy of each query's gold
    candidates against its own pool (L2, scale 1 as logistic regression's C = 1), so a
    weight orders candidates within a query rather than across queries."""

    def __init__(self, groups, l2=1.0):
        import numpy as np
        from scipy.optimize import minimize
        groups = [(np.asarray(X, float), np.asarray(y, float)) for X, y in groups if sum(y)]
        d = groups[0][0].shape[1]

        def loss(w):
            total, grad = l2 * w @ w / 2, l2 * w
            for X, y in groups:
                z = X @ w
                z -= z.max()
                p = np.exp(z)
                p /= p.sum()
                t = y / y.sum()
                total -= t @ np.log(p + 1e-300)
                grad = grad + X.T @ (p - t)
            return total, grad
        self.coef_ = np.array([minimize(loss, np.zeros(d), jac=True, method='L-BFGS-B').x])
        self.intercept_ = np.array([0.0])

    def decision_function(self, X):
        import numpy as np
        return np.asarray(X, float) @ self.coef_[0] + self.intercept_[0]


def fit(queries, file_weight, model='lr'):
    if model == 'listwise':
        groups = []
        for q in queries:
            gold = set(q['fns'])
            groups.append(([c['x'] for c in q['candidates']],
                           [int(f"{c['path']}::{c['symbol']}" in gold) for c in q['candidates']]))
        return Listwise([g for g in groups if g[0]])
    X, y, w = rows_of(queries, file_weight)
    return classifier(model).fit(X, y, sample_weight=w)


def metrics(queries, order):
    """File Acc@1 / Acc@5 / MRR and function@5 / @10 (every gold in the top k), with each
    query's pool ordered by `order(query)`, best first."""
    f1 = f5 = mrr = fn5 = fn10 = 0.0
    for q in queries:
        ranked = order(q)
        names = [f"{c['path']}::{c['symbol']}" for c in ranked]
        paths = list(dict.fromkeys(c['path'] for c in ranked))
        f1 += all(f in paths[:1] for f in q['files'])
        f5 += all(f in paths[:5] for f in q['files'])
        mrr += next((1 / (i + 1) for i, p in enumerate(paths) if p in q['files']), 0)
        fn5 += all(g in names[:5] for g in q['fns'])
        fn10 += all(g in names[:10] for g in q['fns'])
    n = max(len(queries), 1)
    return (f'{100 * f1 / n:.1f} / {100 * f5 / n:.1f} / {mrr / n:.3f}, '
            f'{100 * fn5 / n:.1f} / {100 * fn10 / n:.1f}')


def by_score(score):
    return lambda q: sorted(q['candidates'], key=score, reverse=True)


def file_features(q, names):
    """`learned::file_features` of each file holding candidates (`split::file_scores`)."""
    ix = {n: i for i, n in enumerate(names)}
    rrf = rrf_order(names)
    by_file = {}
    for c in sorted(q['candidates'], key=rrf, reverse=True):
        by_file.setdefault(c['path'], []).append(c)
    def evidence(cs):
        ws = sorted((rrf(c) for c in cs), reverse=True)[:5]
        return sum(w / (i + 1) for i, w in enumerate(ws))
    evidences = {f: evidence(cs) for f, cs in by_file.items()}
    best = max(evidences.values(), default=0) or 1.0
    out = {}
    for rank, (f, cs) in enumerate(by_file.items()):
        xs = [c['x'] for c in cs]
        best_of = lambda name: max(max(x[ix[name]] for x in xs), 0.0)  # noqa: E731
        out[f] = [1 / (1 + rank), evidences[f] / best, math.log(1 + len(cs)) / 3,
                  best_of('bm25_rr'), best_of('vector_rr'), best_of('graph_rr'), best_of('propagate_rr'),
                  best_of('file_rr'), float(all(x[ix['test']] > 0 for x in xs)), best_of('scope'),
                  best_of('rrf'), best_of('log_lines')]
        if FILE_STANDING:
            # Where the file stands in the fused file order and by BM25 over its whole text
            # (the same for each of its candidates).
            out[f] += [best_of('file_order_rr'), best_of('file_text_rr')]
    return out


def fit_files(queries, model='lr'):
    """The file scorer: a changed file is positive."""
    model = 'lr' if model == 'listwise' else model
    X, y = [], []
    for q in queries:
        names = q['features']
        for f, x in file_features(q, names).items():
            X.append(x)
            y.append(int(f in q['files']))
    return classifier(model).fit(X, y)


def split(rrf, learned, files=None, fused=False):
    """`query::search::split`: files first appear in RRF's order (in the fused file order
    with `fused`, the default search's; the file scorer's with `files`); each slot goes to
    the best remaining candidate by the learned score among the files shown and the next
    one."""
    def order(q):
        file_rank = {}
        for c in by_score(rrf)(q):
            file_rank.setdefault(c['path'], len(file_rank))
        if fused and file_rank:
            at = q['features'].index('file_order_rr')
            standing = {c['path']: c['x'][at] for c in q['candidates']}
            ranked = sorted(file_rank, key=lambda p: (-standing[p], file_rank[p]))
            file_rank = {p: i for i, p in enumerate(ranked)}
        if files is not None and file_rank:
            features = file_features(q, q['features'])
            paths = list(file_rank)
            scores = files.decision_function([features[p] for p in paths])
            ranked = [p for _, _, p in sorted(zip(-scores, range(len(paths)), paths))]
            file_rank = {p: i for i, p in enumerate(ranked)}
        left, out, opened = by_score(learned)(q), [], 0
        while left:
            i = next(i for i, c in enumerate(left) if file_rank[c['path']] <= opened)
            opened += file_rank[left[i]['path']] == opened
            out.append(left.pop(i))
        return out
    return order


def report(label, queries, names, model, files):
    rrf = rrf_order(names)
    for q in filter(lambda q: q['candidates'], queries):  # scored in one batch per query
        for c, s in zip(q['candidates'], model.decision_function([c['x'] for c in q['candidates']])):
            c['learned'] = float(s)
    learned = lambda c: c['learned']  # noqa: E731
    print(f'  {label:22s} n={len(queries):3d}  (file Acc@1 / Acc@5 / MRR, function@5 / @10)')
    for name, order in (('rrf', by_score(rrf)), ('learned', by_score(learned)), ('split', split(rrf, learned)),
                        ('fused', split(rrf, learned, fused=True)), ('split+files', split(rrf, learned, files))):
        print(f'      {name:8s} {metrics(queries, order)}')


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
    print('leave one repository out, over the pool (the search also applies the exact-name tiers, '
          'dedup and top_k):')
    for held in repos:
        rest = [q for q in queries if q['repo'] != held]
        report(held, [q for q in queries if q['repo'] == held], names, fit(rest, args.file_weight, args.model),
               fit_files(rest, args.model))
    model = fit(queries, args.file_weight, args.model)
    files = fit_files(queries, args.model)
    for path in filter(None, (args.eval or '').split(',')):
        pools = load(path)  # one file per --eval entry
        print(f'{path}: the models trained on every training query')
        for repo in sorted({q['repo'] for q in pools}):
            report(repo, [q for q in pools if q['repo'] == repo], names, model, files)
    if args.model == 'gbdt':
        for n, w in sorted(zip(names, model.feature_importances_), key=lambda p: -p[1]):
            print(f'  {n:16s} {w:.4f}')
        return
    weights = [round(float(w), 6) for w in model.coef_[0]]
    bias = round(float(model.intercept_[0]), 6)
    for n, w in zip(names, weights):
        print(f'  {n:16s} {w:+.4f}')
    print(f'  {"bias":16s} {bias:+.4f}')
    if args.write:
        source = open(LEARNED_RS).read()
        body = ', '.join(repr(w) for w in weights)
        if not args.files_only:
            source = re.sub(r'pub const WEIGHTS: \[f64; FEATURES\.len\(\)\] = \[[^\]]*\];',
                            f'pub const WEIGHTS: [f64; FEATURES.len()] = [{body}];', source, flags=re.S)
            source = re.sub(r'pub const BIAS: f64 = [^;]*;', f'pub const BIAS: f64 = {bias!r};', source)
        file_weights = ', '.join(repr(round(float(w), 6)) for w in files.coef_[0])
        source = re.sub(r'pub const FILE_WEIGHTS: \[f64; FILE_FEATURES\.len\(\)\] = \[[^\]]*\];',
                        f'pub const FILE_WEIGHTS: [f64; FILE_FEATURES.len()] = [{file_weights}];', source, flags=re.S)
        source = re.sub(r'pub const FILE_BIAS: f64 = [^;]*;',
                        f'pub const FILE_BIAS: f64 = {round(float(files.intercept_[0]), 6)!r};', source)
        open(LEARNED_RS, 'w').write(source)
        print(f'weights written to {os.path.relpath(LEARNED_RS)} (run cargo fmt)')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    c = sub.add_parser('collect')
    c.add_argument('--count', type=int, default=120)
    c.add_argument('--bin', default=os.path.join(HERE, '..', '..', 'target', 'release', 'atlas'))
    c.add_argument('--out', default='/tmp/atlas-fusion.jsonl')
    c.add_argument('--min-words', type=int, default=0,
                   help='only commits whose message has at least N words (as bench/commits.py)')
    c.add_argument('--repos', help='owner/name:language,… in place of the training repositories '
                   '(pools to evaluate on, such as the other-language commit sets)')
    t = sub.add_parser('train')
    t.add_argument('--data', default='/tmp/atlas-fusion.jsonl')
    t.add_argument('--write', action='store_true')
    t.add_argument('--model', choices=('lr', 'gbdt', 'listwise'), default='lr')
    t.add_argument('--eval', help='pools collected with `collect --repos` (comma-separated files) to '
                   'report with the model trained on every training query')
    t.add_argument('--file-weight', type=float, default=0.0,
                   help='also label the other candidates of a changed file positive, at this weight')
    t.add_argument('--files-only', action='store_true',
                   help='with --write, write the file scorer only and keep the symbol scorer as shipped')
    t.add_argument('--file-standing', action='store_true',
                   help="the file scorer also reads the file's places in the fused order and by its text")
    args = parser.parse_args()
    global FILE_STANDING
    FILE_STANDING = getattr(args, 'file_standing', False)
    collect(args) if args.command == 'collect' else train(args)


if __name__ == '__main__':
    main()

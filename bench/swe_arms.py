#!/usr/bin/env python3
"""Search-arm ablations on ../shared/eval/swe-verified-dev in one pass.

Uses the eval's own checkout, gold and scoring functions (shared/eval/run.py), but builds each
instance once and queries it once per arm configuration (`ATLAS_SEARCH_ARMS`), so BM25-only,
vector-only, hybrid and hybrid + graph signals are scored on identical graphs.

  MIRROR=/work/.mirror python3 bench/swe_arms.py --bin target/release/atlas [--limit N]
      [--repos sympy/sympy,psf/requests] [--configs bm25,vector,hybrid,graph] [--stride N] [--out FILE]

Per-instance ranks go to --out (JSON lines) so regressions can be inspected. Beside the
eval's own scores, two that compare honestly with published figures (`fair_score`):
function@k on the instances with a single gold symbol, and the LocAgent-style function@k
(an instance with more than k gold symbols counts when its top k are all gold).
`--score FILE` rescores a saved --out file without running anything.
"""
import json, os, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
EVAL = os.environ.get('ATLAS_EVAL', os.path.join(HERE, '..', '..', 'shared', 'eval'))
sys.path.insert(0, EVAL)
import run  # noqa: E402  (shared/eval/run.py)

# `default` is no ATLAS_SEARCH_ARMS at all: every arm, the vector arm skipped on prose.
CONFIGS = {'bm25': 'bm25', 'vector': 'vector', 'hybrid': 'bm25,vector', 'graph': 'bm25,vector,graph',
           'lexical': 'bm25,graph', 'propagate': 'bm25,vector,graph,propagate',
           'lexical+propagate': 'bm25,graph,propagate', 'default': '', 'allocation': '', 'learned': '', 'split': '',
           'fused-files': ''}
# Configurations that differ by another variable than the arms.
EXTRA_ENV = {'allocation': {'ATLAS_SEARCH_ALLOCATION': 'file'}, 'learned': {'ATLAS_FUSION': 'learned'},
             'split': {'ATLAS_FUSION': 'split'},
             # The file order before the learned file scorer took prose (2026-12-06).
             'fused-files': {'ATLAS_FILE_ORDER': 'fused'}}


def fair_score(rows):
    """function@k on single-gold instances, and LocAgent-style function@k, for k 5 and 10."""
    out = {}
    single = [r for r in rows if len(r[1]) == 1]
    with_fns = [r for r in rows if r[1]]
    for k in (5, 10):
        out[f'func@{k} single-gold'] = round(
            100 * sum(r[1][0] in r[3][:k] for r in single) / max(len(single), 1), 2)
        hits = [all(f in r[3][:k] for f in r[1])
                or (len(r[1]) > k and all(f in r[1] for f in r[3][:k]) and len(r[3]) >= k)
                for r in with_fns]
        out[f'func@{k} locagent'] = round(100 * sum(hits) / max(len(hits), 1), 2)
    out['n single-gold'] = len(single)
    out['n with gold functions'] = len(with_fns)
    return out


def rescore(path):
    """Scores of a saved --out file: the eval's and `fair_score`, per configuration."""
    rows = {}
    for line in open(path):
        record = json.loads(line)
        for c, ranked in record.items():
            if isinstance(ranked, dict):
                rows.setdefault(c, []).append((record['files'], record['fns'], ranked['files'], ranked['fns']))
    print(json.dumps({c: run.swe_score(r) | fair_score(r) for c, r in rows.items()}, indent=1))


def main():
    if run.arg('--score'):
        rescore(run.arg('--score'))
        return
    bin_ = os.path.abspath(run.arg('--bin', 'target/release/atlas'))
    configs = run.arg('--configs', 'bm25,vector,hybrid,graph,default').split(',')
    repos = run.arg('--repos')
    tasks = run.swe_tasks()
    if repos:
        tasks = [t for t in tasks if t['repo'] in repos.split(',')]
    stride = int(run.arg('--stride', '1'))
    tasks = tasks[::stride]
    out = open(run.arg('--out', '/tmp/atlas-swe-arms.jsonl'), 'w')
    rows = {c: [] for c in configs}
    t0 = time.time()
    for n, t in enumerate(tasks):
        key = t['repo'].replace('/', '+')
        code = os.path.join(run.TMP, 'trees', key)
        graph = os.path.join(run.TMP, 'graphs', key)
        run.checkout(t['repo'], t['base_commit'], code)
        files, fns = run.gold(t, code)
        subprocess.run([bin_, 'build', '--code', code, '--graph', graph], capture_output=True, check=True)
        record = {'id': t['id'], 'files': files, 'fns': fns}
        for c in configs:
            env = dict(os.environ, ATLAS_SEARCH_ARMS=CONFIGS[c], **EXTRA_ENV.get(c, {}))
            r = subprocess.run([bin_, 'search', t['query'][:100000], '--top-k', '50', '--format', 'json',
                                '--code', code, '--graph', graph, '--frozen'],
                               capture_output=True, text=True, env=env)
            hits = json.loads(r.stdout).get('hits', []) if r.returncode == 0 else []
            if r.returncode != 0:
                print(f"\n{t['id']} {c}: {r.stderr[-300:]}", file=sys.stderr)
            rf = run.dedup(h['path'] for h in hits)
            rfn = run.dedup(h['path'] + '::' + h.get('symbol', '') for h in hits)
            rows[c].append((files, fns, rf, rfn))
            record[c] = {'files': rf[:10], 'fns': rfn[:10]}
        out.write(json.dumps(record) + '\n')
        out.flush()
        print(f'\r{n + 1}/{len(tasks)} {time.time() - t0:.0f}s', end='', file=sys.stderr)
    print(file=sys.stderr)
    print(json.dumps({c: run.swe_score(rows[c]) | fair_score(rows[c]) for c in configs}, indent=1))


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""`atlas context` on the development sets in ../shared/eval (swe-verified-dev, codesteer-golden).

Measures how often a context query answers (exit 0) or fails with a typed error (counted by
code), whether the gold file / target symbol is among the evidence, and the cost of an answer
(bytes of the JSON document, wall time). Uses the eval's own checkout and gold functions
(shared/eval/run.py); one work tree and one graph per repository, built once per instance.

  MIRROR=/work/.mirror python3 bench/context_eval.py [swe] --bin target/release/atlas [--limit N]
      [--stride N] [--repos sympy/sympy,psf/requests] [--profiles symbol,flow,architecture,impact]
      [--out FILE]
  MIRROR=/work/.mirror python3 bench/context_eval.py golden --bin target/release/atlas [--profiles symbol,flow]

swe: the question is the issue's title (first non-empty line of `query`, at most 500 chars), run
with every profile, plus `atlas search --top-k 5` for comparison. Gold "all" = every gold file is
among the evidence paths (run.py's file Acc); "any" = at least one. golden: classes natural and
cross_file; a target is found when an evidence item's `symbol` is `file_path::scope_name`.
Prints a JSON summary and Markdown tables; per-instance records go to --out (JSON lines).
Results go in docs/QUALITY.md with the command that produced them.
"""
import collections, json, os, re, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
EVAL = os.environ.get('ATLAS_EVAL', os.path.join(HERE, '..', '..', 'shared', 'eval'))
sys.path.insert(0, EVAL)
import run  # noqa: E402  (shared/eval/run.py)


def pct(xs):
    return round(100 * sum(xs) / len(xs), 1) if xs else None


def med(xs):
    return round(statistics.median(xs)) if xs else None


def call(argv):
    """Run one atlas query: (exit code, parsed stdout or None, error code or None, bytes, ms)."""
    t0 = time.time()
    r = subprocess.run(argv, capture_output=True)
    ms = round(1000 * (time.time() - t0))
    out = r.stdout[:-1] if r.stdout.endswith(b'\n') else r.stdout
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    err = None
    if r.returncode != 0:
        err = (doc or {}).get('error', {}).get('code') if isinstance(doc, dict) else None
        if not err:
            m = re.search(r'error\[([^\]]+)\]', r.stderr.decode('utf-8', 'replace'))
            err = m.group(1) if m else 'unparsed'
    return r.returncode, doc, err, len(out), ms


def context(bin_, q, profile, code, graph):
    rc, doc, err, nbytes, ms = call([bin_, 'context', '--profile', profile, '--frozen', '--format', 'json',
                                     '--code', code, '--graph', graph, '--', q])
    paths, symbols = [], []
    if rc == 0 and isinstance(doc, dict):
        for e in doc.get('evidence', []):
            site = ((e.get('relation') or {}).get('site') or {}).get('path')
            paths += [p for p in [e.get('path'), site] + [s.get('path') for s in e.get('sites') or []] if p]
            if e.get('symbol'):
                symbols.append(e['symbol'])
    return {'code': rc, 'error': err, 'paths': run.dedup(paths), 'symbols': run.dedup(symbols),
            'bytes': nbytes if rc == 0 else None, 'ms': ms}


def summarise(rs, hit_all, hit_any):
    """rs: context results of one profile; hit_all/hit_any: parallel booleans."""
    return {'n': len(rs), 'answered_pct': pct([r['code'] == 0 for r in rs]),
            'errors': dict(collections.Counter(r['error'] for r in rs if r['error']).most_common()),
            'gold_all_pct': pct(hit_all), 'gold_any_pct': pct(hit_any),
            'median_bytes': med([r['bytes'] for r in rs if r['code'] == 0]), 'median_ms': med([r['ms'] for r in rs])}


def table(head, rows):
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    return '\n'.join(lines + ['| ' + ' | '.join('' if c is None else str(c) for c in r) + ' |' for r in rows])


def fmt_err(e):
    return ', '.join(f'{k.replace("atlas-context-", "")} {v}' for k, v in e.items())


def swe(bin_, profiles):
    tasks = run.swe_tasks()
    if run.arg('--repos'):
        tasks = [t for t in tasks if t['repo'] in run.arg('--repos').split(',')]
    tasks = tasks[::int(run.arg('--stride', '1'))]
    out = open(run.arg('--out', '/tmp/atlas-context-eval.jsonl'), 'w')
    res = {p: [] for p in profiles}
    gall, gany = collections.defaultdict(list), collections.defaultdict(list)
    repo_of, skipped, t0 = [], [], time.time()
    for n, t in enumerate(tasks):
        key = t['repo'].replace('/', '+')
        code, graph = os.path.join(run.TMP, 'trees', key), os.path.join(run.TMP, 'graphs', key)
        try:
            run.checkout(t['repo'], t['base_commit'], code)
            files, _ = run.gold(t, code)
            b0 = time.time()
            b = subprocess.run([bin_, 'build', '--code', code, '--graph', graph], capture_output=True, text=True)
            if b.returncode != 0:
                raise RuntimeError(f'build exit {b.returncode}: {b.stderr[-300:]}')
            build_ms = round(1000 * (time.time() - b0))
        except (Exception, SystemExit) as e:
            print(f"\n{t['id']}: skipped: {e}", file=sys.stderr)
            skipped.append(t['id'])
            continue
        q = next((ln.strip() for ln in t['query'].splitlines() if ln.strip()), '')[:500]
        rec = {'id': t['id'], 'repo': t['repo'], 'question': q, 'gold': files, 'build_ms': build_ms}
        for p in profiles:
            r = context(bin_, q, p, code, graph)
            res[p].append(r)
            gall[p].append(all(f in r['paths'] for f in files))
            gany[p].append(any(f in r['paths'] for f in files))
            rec[p] = {k: r[k] for k in ('code', 'error', 'bytes', 'ms')} | {'paths': r['paths'][:30]}
        rc, doc, err, nbytes, ms = call([bin_, 'search', '--top-k', '5', '--frozen', '--format', 'json',
                                         '--code', code, '--graph', graph, '--', q])
        hits = doc.get('hits', []) if rc == 0 and isinstance(doc, dict) else []
        sf = run.dedup(h['path'] for h in hits)[:5]
        res['search'] = res.get('search', []) + [{'code': rc, 'error': err, 'bytes': nbytes if rc == 0 else None, 'ms': ms}]
        gall['search'].append(all(f in sf for f in files))
        gany['search'].append(any(f in sf for f in files))
        rec['search'] = sf
        repo_of.append(t['repo'])
        out.write(json.dumps(rec) + '\n')
        out.flush()
        print(f'\r{n + 1}/{len(tasks)} {time.time() - t0:.0f}s', end='', file=sys.stderr)
    print(file=sys.stderr)
    summary = {'instances': len(repo_of), 'skipped': skipped,
               'profiles': {p: summarise(res.get(p, []), gall[p], gany[p]) for p in profiles + ['search']}}
    rows = [[p, s['n'], s['answered_pct'], s['gold_all_pct'], s['gold_any_pct'], s['median_bytes'], s['median_ms'],
             fmt_err(s['errors'])] for p, s in summary['profiles'].items()]
    md = table(['profile', 'n', 'answered %', 'gold all %', 'gold any %', 'median bytes', 'median ms', 'errors'], rows)
    if 'flow' in profiles:
        summary['flow_vs_search'] = {
            'search_beats_flow': sum(s and not f for s, f in zip(gall['search'], gall['flow'])),
            'flow_beats_search': sum(f and not s for s, f in zip(gall['search'], gall['flow']))}
        by = collections.defaultdict(list)
        for repo, r, g in zip(repo_of, res['flow'], gall['flow']):
            by[repo].append((r['code'] == 0, g))
        summary['flow_by_repo'] = {repo: {'n': len(v), 'answered_pct': pct([a for a, _ in v]),
                                          'gold_all_pct': pct([g for _, g in v])} for repo, v in sorted(by.items())}
        md += '\n\n' + table(['repo (flow)', 'n', 'answered %', 'gold all %'],
                             [[k, v['n'], v['answered_pct'], v['gold_all_pct']] for k, v in summary['flow_by_repo'].items()])
    return summary, md


def golden(bin_, profiles):
    import yaml
    code, graph = os.path.join(run.TMP, 'codesteer'), os.path.join(run.TMP, 'codesteer-graph')
    run.checkout('LuisCarlosLopes/codesteer-atlas', run.GOLDEN_REV, code)
    qs = []  # same target filter as run.py's golden(): keep queries with some target existing at GOLDEN_REV
    for q in yaml.safe_load(open(os.path.join(EVAL, 'codesteer-golden', 'golden_queries.yaml')))['queries']:
        ok = [t for t in q['targets'] if os.path.exists(os.path.join(code, t['file_path'])) and
              t['scope_name'] in {n for n, _, _ in run.defs(open(os.path.join(code, t['file_path'])).read())}]
        if ok and q['klass'] in ('natural', 'cross_file'):
            qs.append(q)
    subprocess.run([bin_, 'build', '--code', code, '--graph', graph], capture_output=True, check=True)
    out = open(run.arg('--out', '/tmp/atlas-context-eval-golden.jsonl'), 'w')
    summary, rows = {'queries': len(qs), 'rows': {}}, []
    for p in profiles:
        by = collections.defaultdict(lambda: ([], [], []))
        for q in qs:
            r = context(bin_, q['query'], p, code, graph)
            sym = any(f"{t['file_path']}::{t['scope_name']}" in r['symbols'] for t in q['targets'])
            fil = any(t['file_path'] in r['paths'] for t in q['targets'])
            for k in (q['klass'], 'all'):
                by[k][0].append(r); by[k][1].append(sym); by[k][2].append(fil)
            out.write(json.dumps({'profile': p, 'klass': q['klass'], 'query': q['query'], 'targets': q['targets'],
                                  'code': r['code'], 'error': r['error'], 'bytes': r['bytes'], 'ms': r['ms'],
                                  'symbol_found': sym, 'file_found': fil, 'symbols': r['symbols'][:30],
                                  'paths': r['paths'][:30]}) + '\n')
        for k in [c for c in ('natural', 'cross_file', 'all') if c in by]:
            rs, sym, fil = by[k]
            s = summarise(rs, sym, fil)
            s = {'n': s['n'], 'answered_pct': s['answered_pct'], 'errors': s['errors'], 'symbol_pct': s['gold_all_pct'],
                 'file_pct': s['gold_any_pct'], 'median_bytes': s['median_bytes'], 'median_ms': s['median_ms']}
            summary['rows'][f'{p}/{k}'] = s
            rows.append([p, k, s['n'], s['answered_pct'], s['symbol_pct'], s['file_pct'], s['median_bytes'],
                         s['median_ms'], fmt_err(s['errors'])])
    md = table(['profile', 'class', 'n', 'answered %', 'target symbol %', 'target file %', 'median bytes',
                'median ms', 'errors'], rows)
    return summary, md


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] in ('swe', 'golden') else 'swe'
    bin_ = os.path.abspath(run.arg('--bin', 'target/release/atlas'))
    if not os.path.exists(bin_):
        sys.exit(f'missing binary {bin_} (--bin)')
    default = 'symbol,flow,architecture,impact' if mode == 'swe' else 'symbol,flow'
    profiles = run.arg('--profiles', default).split(',')
    summary, md = (swe if mode == 'swe' else golden)(bin_, profiles)
    print(json.dumps(summary, indent=1))
    print('\n' + md)


if __name__ == '__main__':
    main()

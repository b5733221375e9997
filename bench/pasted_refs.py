#!/usr/bin/env python3
"""How refs pasted from elsewhere anchor on sympy (docs/QUALITY.md, "Refs pasted from elsewhere").

    python3 bench/pasted_refs.py SYMPY_TREE GRAPH BIN[,BIN...] [-v]

Each case is a ref as an agent pastes it (absolute paths, another checkout's, URLs, Windows
paths, tracebacks, dotted names through re-exports, error messages) and the symbol it
should anchor first (or the set of anchors it should have); prints how many each binary anchors as expected (-v: every case).
The cases were written with the features they test: a regression check, not an
unbiased evaluation.
"""
import json, subprocess, sys
R, G = sys.argv[1], sys.argv[2]; bins = sys.argv[3].split(",")
N="sympy/core/numbers.py"
cases = [
 (f"{R.rstrip('/')}/{N}", N),
 (f"/home/dev/src/sympy/{N}:1600", f"{N}::Rational.__int__"),
 (f"https://github.com/sympy/sympy/blob/master/{N}#L1600-L1602", f"{N}::Rational.__int__"),
 (f"https://github.com/sympy/sympy/blob/1.13/{N}", N),
 (f"https://raw.githubusercontent.com/sympy/sympy/master/{N}", N),
 (f"file:///home/dev/sympy/{N}", N),
 (r"C:\Users\dev\sympy\sympy\core\numbers.py:1600", f"{N}::Rational.__int__"),
 (f"../sympy/core/numbers.py:1600", f"{N}::Rational.__int__"),
 ("sympy/core/numbers", N),
 ("/home/dev/sympy/sympy/core/", "sympy/core/"),
 (f'File "/usr/lib/python3/site-packages/{N}", line 1353, in __new__', f"{N}::Rational.__new__"),
 (f'Traceback (most recent call last):\n  File "/home/dev/sympy/{N}", line 1600, in __int__\n    p, q = self.p, self.q\nAttributeError: oops', f"{N}::Rational.__int__"),
 ("sympy.Rational", f"{N}::Rational"),
 ("sympy.core.Rational", f"{N}::Rational"),
 ("sympy.core.numbers.igcd", "sympy/core/intfunc.py::igcd"),
 ("sympy.solve", "sympy/solvers/solvers.py::solve"),
 ("sympy.Rational.limit_denominator", f"{N}::Rational.limit_denominator"),
 ("why does sympy.Rational.limit_denominator round down", f"{N}::Rational.limit_denominator"),
 ("AttributeError: 'Rational' object has no attribute 'foo'", f"{N}::Rational"),
 ("TypeError: unsupported operand type(s) for +: 'Rational' and 'str'", f"{N}::Rational"),
 (f"{N}:1600", f"{N}::Rational.__int__"),
 ("sympy.core.numbers.Rational", f"{N}::Rational"),
 # A whole traceback: the user's own frames (outside the repository) anchor nothing,
 # even where their names (`main`) are the repository's too; the library frame's line
 # has drifted (1630 is `Rational.__eq__` here), its function decides. A set of anchors:
 # all of them must be, and only them.
 ('Why does this fail?\nTraceback (most recent call last):\n  File "/home/user/project/run.py", line 12, in <module>\n    main()\n'
  '  File "/home/user/project/run.py", line 8, in main\n    r = Rational(3, 0) + x\n'
  f'  File "/usr/lib/python3/site-packages/{N}", line 1630, in __new__\n    raise ZeroDivisionError("Rational(3, 0) is undefined")\n'
  'ZeroDivisionError: Rational(3, 0) is undefined', {f"{N}::Rational", f"{N}::Rational.__new__"}),
 (f'File "/home/dev/sympy/{N}", line 1700, in gcd', f"{N}::Rational.gcd"),
]
for b in bins:
    ok = 0
    for q, want in cases:
        out = subprocess.run([b, "--code", R, "--graph", G, "context", q, "--profile", "symbol", "--frozen", "--format", "json"], capture_output=True, text=True)
        try:
            d = json.loads(out.stdout); got = [a["symbol"] for a in d["intent"]["anchors"]]
        except Exception:
            got = ["error"]
        good = set(got) == want if isinstance(want, set) else got[:1] == [want]
        ok += good
        if "-v" in sys.argv[4:]: print("OK " if good else "BAD", q.replace("\n"," | ")[:80], got[:2])
    print(b, f"{ok}/{len(cases)} anchored as expected")

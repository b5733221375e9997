#!/usr/bin/env python3
"""Questions whose words spell a function, as prose inflects them, on sympy
(docs/QUALITY.md, "Two words of a question that spell a name").

    python3 bench/questions.py SYMPY_TREE GRAPH BIN[,BIN...] [-v]

Each case is a question as an agent asks it and the symbol that answers it, which must be
among the anchors of `atlas context … --profile symbol`; the last cases are controls that
no two words spell. The cases were written with the feature they test: a regression
check, not an unbiased evaluation.
"""
import json, subprocess, sys
R, G = sys.argv[1], sys.argv[2]; bins = sys.argv[3].split(",")
cases = [
 ("which function parses latex strings?", "sympy/parsing/latex/__init__.py::parse_latex"),
 ("where is latex parsed", "sympy/parsing/latex/__init__.py::parse_latex"),
 ("which function solves linear equations", "sympy/solvers/solvers.py::solve_linear"),
 ("which function factors terms", "sympy/core/exprtools.py::factor_terms"),
 ("where are inequalities reduced", "sympy/solvers/inequalities.py::reduce_inequalities"),
 ("how is boolean logic simplified?", "sympy/logic/boolalg.py::simplify_logic"),
 ("which function expands trig functions", "sympy/core/function.py::expand_trig"),
 ("which function prints latex", "sympy/printing/latex.py::print_latex"),
 ("how do I pretty print an expression", "sympy/printing/pretty/pretty.py::pretty_print"),
 ("which method reverses the order of a product", "sympy/concrete/products.py::Product.reverse_order"),
 # Controls: no two neighbouring words are a name's two segments.
 ("how are rational numbers simplified", "sympy/core/numbers.py::Rational"),
 ("how does sympy integrate rational functions", "sympy/integrals/integrals.py::integrate"),
]
for b in bins:
    ok = 0
    for q, want in cases:
        out = subprocess.run([b, "--code", R, "--graph", G, "context", q, "--profile", "symbol", "--frozen", "--format", "json"], capture_output=True, text=True)
        try:
            got = [a["symbol"] for a in json.loads(out.stdout)["intent"]["anchors"]]
        except Exception:
            got = ["error"]
        good = want in got
        ok += good
        if "-v" in sys.argv[4:]: print("OK " if good else "BAD", q[:60], got[:2])
    print(b, f"{ok}/{len(cases)} answered by the expected symbol")

"""Mutation run over the plan lines, which mutmut does not mutate (it skips decorated functions).

    python bench/mutate_lines.py [--jobs N] [--only NAME ...]

Each ``@line`` function of :data:`MODULES` (``inference_ledger/graph/plan_lines.py``, the formula modules that hold
lines; a formula a ``derived`` line renames is undecorated, so mutmut mutates it) is mutated the way mutmut mutates plain code, one change at a time:
``+``/``-`` and ``*``/``/`` swapped, ``<``/``<=`` and ``>``/``>=`` swapped, a number
changed by one, two different arguments of a call swapped.  Each mutant is first evaluated on
the PROBES plans in a throw-away copy of the source tree: one that changes none of their numbers
is equivalent (a product's factors swapped, a term 0 for every layout).  The test selection below
runs against every other mutant; it is killed when a test fails.  The survivors are printed with their line, and the score at the end.  Not in CI:
see tests/README.md for the last score and what survived.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("inference_ledger/graph/plan_lines.py", "inference_ledger/formulas/serving_lines.py",
           "inference_ledger/formulas/parallel.py", "inference_ledger/formulas/whatif_lines.py",
           "inference_ledger/formulas/finance.py", "inference_ledger/formulas/ledger.py",
           "inference_ledger/formulas/engine_ledger.py", "inference_ledger/graph/verdict.py",
           "inference_ledger/graph/band_lines.py")
TESTS = ("tests/test_seed.py", "tests/test_plan.py", "tests/test_whatif.py", "tests/test_cli_plan.py",
         "tests/test_excel_plan.py", "tests/test_ledger_hand.py", "tests/test_fidelity.py", "tests/test_engines.py",
         "tests/test_finance.py", "tests/test_ledger_properties.py", "tests/test_plan_structure.py", "tests/test_serving.py",
         "tests/test_parallel.py", "tests/test_deployments.py", "tests/test_disaggregated.py", "tests/test_validate.py",
         "tests/test_plan_lines_hand.py", "tests/test_serving_hand.py")
#: Plans a mutant is evaluated on first: one that changes none of their numbers (a product's factors swapped, a
#: term that is 0 for every layout) is equivalent, not a survivor; no test could tell it from the original.
PROBES = (("llama-3.1-70b", "h100-sxm", {"tp": 4}), ("llama-3.1-70b", "h100-sxm", {"tp": 2, "batching": 2}),
          ("mixtral-8x7b", "h100-sxm", {"tp": 2, "concurrency": 64}), ("gemma-2-27b", "l40s", {"tp": 2}),
          ("deepseek-v3", "h200", {"tp": 8, "concurrency": 128}),
          ("deepseek-v3", "h100-sxm", {"tp": 1, "dp_attention": 16, "ep": 16, "concurrency": 256}),
          ("llama-3.1-405b", "h100-sxm", {"tp": 8, "pp": 2, "concurrency": 600}),
          ("gpt-oss-120b", "h100-sxm", {"tp": 1, "concurrency": 2000}))
PROBE = ("import json, sys\n"
         "from inference_ledger.graph import plan, resolve\n"
         "out = []\n"
         "for m, g, n in json.loads(sys.argv[1]):\n"
         "    v = plan.evaluate(resolve.resolve(m, g, numbers=n).inputs)\n"
         "    out.append({k: float(x) for k, x in v.items() if isinstance(x, (int, float))})\n"
         "print(json.dumps(out))\n")
COPY = ("inference_ledger", "udfs", "workbook", "tests", "templates", "README.md", "pyproject.toml")
SWAP_OPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
SWAP_CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}


@dataclass(frozen=True)
class Mutant:
    module: str
    line: str       # the plan line (function) it is in
    lineno: int
    what: str
    source: str     # the whole mutated module


def _is_line(fn: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Call) and getattr(d.func, "id", None) == "line" for d in fn.decorator_list)


def _sites(fn: ast.FunctionDef):
    """(node, description, apply) for each mutation inside the function's body."""
    for stmt in fn.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.BinOp) and type(node.op) in SWAP_OPS:
                new = SWAP_OPS[type(node.op)]
                yield node, f"{type(node.op).__name__} -> {new.__name__}", lambda n=node, c=new: setattr(n, "op", c())
            elif isinstance(node, ast.Compare) and type(node.ops[0]) in SWAP_CMP:
                new = SWAP_CMP[type(node.ops[0])]
                yield node, f"{type(node.ops[0]).__name__} -> {new.__name__}", \
                    lambda n=node, c=new: n.ops.__setitem__(0, c())
            elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                    and not isinstance(node.value, bool):
                yield node, f"{node.value} -> {node.value + 1}", lambda n=node: setattr(n, "value", n.value + 1)
            elif isinstance(node, ast.Call):
                args = node.args
                for i in range(len(args) - 1):
                    if ast.dump(args[i]) != ast.dump(args[i + 1]):
                        yield node, f"arguments {i + 1} and {i + 2} swapped", \
                            lambda n=node, i=i: n.args.__setitem__(slice(i, i + 2), [n.args[i + 1], n.args[i]])


def mutants(only: set[str] | None = None) -> list[Mutant]:
    out = []
    for module in MODULES:
        text = (ROOT / module).read_text(encoding="utf-8")
        fns = [f for f in ast.parse(text).body if isinstance(f, ast.FunctionDef) and _is_line(f)]
        for fn in fns:
            if only and fn.name not in only:
                continue
            count = sum(1 for _ in _sites(fn))
            for k in range(count):
                tree = ast.parse(text)          # a fresh tree per mutant
                target = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == fn.name)
                node, what, apply = list(_sites(target))[k]
                apply()
                out.append(Mutant(module, fn.name, node.lineno, what, ast.unparse(tree)))
    return out


def _copy_tree(dest: Path) -> None:
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, dest / name)


def _probe(tree: Path, env: dict) -> Optional[list]:
    r = subprocess.run([sys.executable, "-c", PROBE, json.dumps(PROBES)], cwd=tree, env=env, capture_output=True,
                       text=True, timeout=300)
    return json.loads(r.stdout) if r.returncode == 0 else None


def _same(a: list, b: list) -> bool:
    return all(x.keys() == y.keys() and all(math.isclose(x[k], y[k], rel_tol=1e-12, abs_tol=0) or
                                            (math.isnan(x[k]) and math.isnan(y[k])) for k in x) for x, y in zip(a, b))


BASELINE: list = []


def outcome(m: Mutant) -> str:
    """killed | equivalent | survived."""
    with tempfile.TemporaryDirectory(prefix="mutate-lines-") as tmp:
        tree = Path(tmp)
        _copy_tree(tree)
        (tree / m.module).write_text(m.source, encoding="utf-8")
        env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
        probed = _probe(tree, env)
        if probed is not None and _same(probed, BASELINE):
            return "equivalent"
        r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m",
                            "not libreoffice", *TESTS], cwd=tree, env=env, capture_output=True, text=True,
                           timeout=600)
        return "killed" if r.returncode != 0 else "survived"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--only", nargs="*", help="plan line names to mutate (default: every line)")
    args = ap.parse_args()
    todo = mutants(set(args.only) if args.only else None)
    with tempfile.TemporaryDirectory(prefix="mutate-lines-") as tmp:
        _copy_tree(Path(tmp))
        BASELINE.extend(_probe(Path(tmp), dict(os.environ, PYTHONPATH=tmp)) or [])
    assert BASELINE, "the unmutated plan did not evaluate"
    print(f"{len(todo)} mutants in {len(MODULES)} modules", flush=True)
    counts = {"killed": 0, "equivalent": 0, "survived": 0}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for m, result in zip(todo, pool.map(outcome, todo)):
            counts[result] += 1
            if result == "survived":
                print(f"survived: {m.module}:{m.lineno} {m.line}: {m.what}", flush=True)
    n = len(todo) - counts["equivalent"]
    print(f"{counts['equivalent']} of {len(todo)} mutants change no number of the probe plans (equivalent); "
          f"killed {counts['killed']} of the other {n} ({100 * counts['killed'] / max(n, 1):.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""No module but the expression module builds formula text.

Every workbook cell is one expression of :mod:`inference_ledger.expr` (its formula and its cached value from one
definition); a sheet module that types a formula ('=...', 'Plan'!$B$5, $A$1, SUM(...)) or wraps text in a ``Sym``
has a second definition beside it.  This scans the source of the workbook and the Excel functions (and the library
outside the expression module) for string literals that look like formula text, and for ``Sym(...)`` built outside
the expression module.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The expression module that renders formula text, with its two siblings (the spreadsheet functions; the
#: references, lookups and aggregates), found wherever the package layout puts them.
EXPR_MODULES = ("expr.py", "sheetfuncs.py", "refs.py")
EXPR = {p.resolve() for f in EXPR_MODULES for p in ROOT.rglob(f) if "inference_ledger" in p.parts}

#: A sheet-qualified reference: Plan!$B, 'My sheet'!A1, or a literal ending in a sheet name and '!'.
SHEET_REF = re.compile(r"(?:'[^']*'|(?<![#\w])[A-Za-z_][\w.]*)!(?:\$|[A-Z]{1,3}\d|$)")
#: An absolute reference: $A$1, $A1, A$1 (or $A, A$ where an f-string fills in the rest).
ABSOLUTE = re.compile(r"\$[A-Z]{1,3}(?:\$|\d|$)|\b[A-Z]{1,3}\$\d")
#: A spreadsheet function called in the text.
FUNCTION_CALL = re.compile(r"\b(?:SUM|SUMPRODUCT|SUMIFS|MIN|MAX|IF|IFERROR|INDEX|MATCH|COUNT|COUNTA|COUNTIFS|MEDIAN"
                           r"|AVERAGE|AND|OR|NOT|ISNUMBER|ISBLANK|ROUNDUP|ROUNDDOWN|ROUND|INT|TEXT|ABS|MOD|LOG"
                           r"|POWER|CEILING|LEN)\(")


def sources(tops=("workbook", "udfs")) -> list[Path]:
    """The workbook and the Excel functions (the adapters that write formulas), or other top folders, without the
    expression module."""
    out = []
    for top in tops:
        for p in sorted((ROOT / top).rglob("*.py")) if (ROOT / top).is_dir() else []:
            if p.resolve() not in EXPR:
                out.append(p)
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                ids.add(id(first.value))
    return ids


def formula_text(source: str, name: str = "<source>") -> list[str]:
    """'line: why: literal' for every string literal (or f-string part) of the source that is formula text, and every
    ``Sym(...)`` it builds (docstrings are prose, and are skipped)."""
    tree = ast.parse(source, name)
    docs = _docstrings(tree)
    found = []

    def check(node: ast.AST, text: str, filled: bool = False, first: bool = True) -> None:
        # after an f-string's field, '="' is an XML attribute or a quoted text and '=' alone a name=value message
        starts = (text.startswith("=") and not text.startswith("==")) if first else re.match(r'=[^"=]', text)
        why = ("starts with '='" if starts else
               "a sheet reference" if SHEET_REF.search(text) else
               "an absolute reference" if ABSOLUTE.search(text) or (filled and text.endswith("$")) else
               "a spreadsheet function" if FUNCTION_CALL.search(text) else None)
        if why:
            found.append(f"{node.lineno}: {why}: {text!r}")

    # a literal that only tests text ('=' in c.value.startswith("=")) reads formulas, it builds none
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("startswith", "endswith", "partition", "split", "count", "find", "replace"):
            for a in node.args:
                a.checked = True
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for k, part in enumerate(node.values):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    nxt = node.values[k + 1] if k + 1 < len(node.values) else None
                    check(node, part.value, filled=isinstance(nxt, ast.FormattedValue), first=k == 0)
                    part.checked = True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                and not getattr(node, "checked", False):
            check(node, node.value)
        elif isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == "Sym") or (isinstance(f, ast.Attribute) and f.attr == "Sym"):
                found.append(f"{node.lineno}: builds a Sym from text: {ast.unparse(node)[:80]}")
    return found


def test_no_module_outside_the_expression_module_builds_formula_text():
    assert len(EXPR) == len(EXPR_MODULES), f"the expression modules (inference_ledger {EXPR_MODULES}) were not found"
    files = sources()
    assert len(files) > 20, files   # the scan found the sheet modules (wherever the layout puts them)
    bad = [f"{p.relative_to(ROOT)}:{hit}" for p in files for hit in formula_text(p.read_text(), str(p))]
    assert not bad, "formula text outside the expression module (build it with inference_ledger.expr):\n" + \
        "\n".join(bad)


def test_the_library_builds_no_expression_from_text():
    """The library's lines are written with the expression helpers: none wraps text in a Sym (its money and CLI
    messages may print '$' and 'x=y', so only Sym(...) is looked for there)."""
    bad = [f"{p.relative_to(ROOT)}:{hit}" for p in sources(("inference_ledger",))
           for hit in formula_text(p.read_text(), str(p)) if "builds a Sym" in hit]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("planted", [
    'ctx.put(ws, "B5", "=SUM(B1:B4)")',                       # a typed formula
    'ref = f"Scenarios!${col}{r}"',                           # a sheet reference
    "ref = \"'Plan'!B5\"",                                    # a quoted sheet's reference
    'rng = f"$D${first}:$D${last}"',                          # absolute references
    'expr = f"MEDIAN({rng})"',                                # a function typed into text
    'cond = f"{ok}=1"',                                       # a comparison typed into text
    'x = Sym("tpot_seconds")',                                # a Sym built from text
    'x = E.Sym(f"C{r}")',
])
def test_the_scan_finds_a_planted_literal(planted):
    assert formula_text(f"def sheet(ctx, ws, r, col, first, last, ok, rng):\n    {planted}\n")


@pytest.mark.parametrize("fine", [
    'ctx.put(ws, "A3", "Type =calibrated_bw_efficiency into Plan\'s input.")',   # prose naming a defined name
    'x = a == b',
    'label = f"{name} = {value:.4g}"',
    'fmt = \'"$"#,##0\'',                                                     # a money number format
    'ctx.put(ws, "A1", "Cost per used GPU-hour ($/GPU-h)")',
])
def test_the_scan_leaves_prose_and_number_formats(fine):
    assert not formula_text(f"def sheet(ctx, ws, name, value):\n    {fine}\n")

"""Cell formulas a finance user can audit: no generated formula is over 300 characters.

Long formulas are broken into named helper lines of the plan (e.g. the fit test at each
TP degree is weights, workspace, rule adjustment and KV budget at that TP, each a line).
"""

from __future__ import annotations

from openpyxl import load_workbook

from inference_ledger.workbook import sweep

MAX_FORMULA = 300


def _formulas(path):
    for ws in load_workbook(path).worksheets:
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, str) and c.value.startswith("="):
                    yield ws.title, c.coordinate, c.value


def _check(path):
    found = list(_formulas(path))
    assert len(found) > 100
    long = sorted(((len(f), sheet, cell, f[:80]) for sheet, cell, f in found), reverse=True)
    assert long[0][0] <= MAX_FORMULA, long[:3]


def test_every_formula_of_the_default_workbook_is_short(workbooks):
    path, _ = workbooks()
    _check(path)


def test_every_formula_of_a_sweep_is_short(tmp_path):
    # a MoE, a sliding-window model and an MLA model, over engines' rule paths and TP degrees
    spec = sweep.SweepSpec(model=["qwen3-235b-a22b", "gemma-2-27b", "deepseek-v3", "gpt-oss-120b"],
                           gpu=["h100-sxm", "mi300x"], tp=[1, 8], context=[4096], concurrency=[1, 16], engine="sglang")
    _check(sweep.write(sweep.build_sweep(spec), tmp_path / "sweep.xlsx"))

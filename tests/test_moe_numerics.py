"""Distinct experts per step, E (1 - (1 - k/E)^tokens), stays finite in LibreOffice over the whole input range.

LibreOffice answers #NUM! for a power whose result is below the smallest normal double (~1e-308), where Excel
and Python give 0: Mixtral's 0.75^tokens crosses it at about 2,461 tokens.  One workbook holds a row per
(model, tokens per step), each with the line's own formula (inference_ledger.graph.plan.render), and one
recalculation checks them all against an independent evaluation (expm1/log1p, which never underflows).
"""

from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pytest
from openpyxl import Workbook, load_workbook
from openpyxl.workbook.defined_name import DefinedName

from inference_ledger.catalogs import catalog
from inference_ledger.graph import plan
from inference_ledger.formulas import serving
from inference_ledger.core.units import MOE_SATURATION
from inference_ledger.core.refs import ROW_MARK, template_cell
from inference_ledger.workbook.recalc import recalculate

pytestmark = pytest.mark.filterwarnings("ignore:.*extension is not supported:UserWarning")

MOE = [(m.id, int(m.num_experts), int(m.experts_per_token)) for m in catalog.load_models() if m.num_experts]
#: Tokens per step 1..1e6: every whole number to 4,000 (Mixtral's band of #NUM! was 2,461-2,800), then
#: 400 log-spaced points to a million, and fractional steps (prefill chunks split a batch).
TOKENS = sorted(set(range(1, 4001)) | {float(t) for t in np.geomspace(4000, 1e6, 400)}
                | {0.5, 1.5, 2460.5, 2461.25, 2799.9})


def expected(e: int, k: int, t: float) -> float:
    """E (1 - (1 - k/E)^t) as -E expm1(t log1p(-k/E)): no power is formed, so nothing underflows."""
    return e if k >= e else -e * math.expm1(t * math.log1p(-k / e))


def test_python_line_matches_the_independent_form():
    for _, e, k in MOE:
        for t in TOKENS:
            assert serving.distinct_experts(e, k, t) == pytest.approx(expected(e, k, t), rel=1e-12, abs=1e-12)
    # the catalog's dense models and the edges: none, all, one expert of one
    assert serving.distinct_experts(0, 0, 5000) == 0 and serving.distinct_experts(0, 4, 5000) == 0
    assert serving.distinct_experts(8, 8, 3) == 8 and serving.distinct_experts(1, 1, 0.5) == 1


def _sweep_book(path):
    """One row per (model, tokens): E, k, tokens and the line's formula over them."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Sweep"
    ws.append(["model", "num_experts", "experts_per_token", "step_tokens", "moe_distinct_experts"])
    cols = {"num_experts": "B", "experts_per_token": "C", "step_tokens": "D"}
    formula, params = plan.render("moe_distinct_experts", lambda n: template_cell(cols[n], fix_col=False))
    assert set(params) == {"num_experts", "experts_per_token", "step_tokens"}
    rows = []
    for mid, e, k in MOE:
        for t in TOKENS:
            r = len(rows) + 2
            ws.append([mid, e, k, t, formula.replace(ROW_MARK, str(r))])
            rows.append((r, e, k, t))
    ws["G1"] = float(MOE_SATURATION)
    wb.defined_names[MOE_SATURATION.name] = DefinedName(MOE_SATURATION.name, attr_text="Sweep!$G$1")
    wb.save(path)
    return rows


@pytest.mark.libreoffice
def test_libreoffice_gives_a_finite_count_for_every_moe_model_and_step(soffice, tmp_path):
    rows = _sweep_book(tmp_path / "moe.xlsx")
    assert len(rows) > 40_000
    got = load_workbook(recalculate(tmp_path / "moe.xlsx", tmp_path / "lo"), data_only=True)["Sweep"]
    bad = []
    for r, e, k, t in rows:
        v = got[f"E{r}"].value
        if not isinstance(v, (int, float)) or not math.isclose(v, expected(e, k, t), rel_tol=1e-9, abs_tol=1e-9):
            bad.append((got[f"A{r}"].value, t, v))
    assert bad == []


@pytest.mark.libreoffice
def test_gnumeric_gives_a_finite_count_for_every_moe_model_and_step(tmp_path):
    ssconvert = shutil.which("ssconvert")
    assert ssconvert, "Gnumeric's ssconvert is required: apt-get install gnumeric"
    rows = _sweep_book(tmp_path / "moe.xlsx")
    out = tmp_path / "gnumeric.xlsx"
    subprocess.run([ssconvert, "--recalc", str(tmp_path / "moe.xlsx"), str(out)], check=True, capture_output=True,
                   timeout=600)
    got = load_workbook(out, data_only=True)["Sweep"]
    bad = [(got[f"A{r}"].value, t, got[f"E{r}"].value) for r, e, k, t in rows
           if not isinstance(got[f"E{r}"].value, (int, float))
           or not math.isclose(got[f"E{r}"].value, expected(e, k, t), rel_tol=1e-9, abs_tol=1e-9)]
    assert bad == []

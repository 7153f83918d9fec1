"""The Disaggregated sheet: LibreOffice recalculates what Python computed, and its totals are `plan --disaggregated`."""

from __future__ import annotations

import math

import openpyxl
import pytest

from inference_ledger.graph import disaggregated
from inference_ledger.workbook.build import build_workbook
from inference_ledger.workbook.recalc import recalculate

CHOICE = {"model": "deepseek-v3", "gpu": "h100-sxm", "tp": 8, "pp": 2}


@pytest.fixture(scope="module")
def books(tmp_path_factory, soffice):
    d = tmp_path_factory.mktemp("disagg")
    path, _ = build_workbook(d / "d.xlsx", **CHOICE)
    return path, recalculate(path, d / "lo")


@pytest.mark.libreoffice
def test_libreoffice_recalculates_every_cell_as_python(books):
    path, recalculated = books
    cached = openpyxl.load_workbook(path, data_only=True)["Disaggregated"]
    formulas = openpyxl.load_workbook(path)["Disaggregated"]
    lo = openpyxl.load_workbook(recalculated, data_only=True)["Disaggregated"]
    n = 0
    for row in formulas.iter_rows():
        for c in row:
            if isinstance(c.value, str) and c.value.startswith("="):
                assert len(c.value) <= 300, c.coordinate
                want, got = cached[c.coordinate].value, lo[c.coordinate].value
                if isinstance(want, str):                                     # the master-check line
                    assert got == want == "All checks pass (Checks sheet)", c.coordinate
                    continue
                assert isinstance(got, (int, float)), (c.coordinate, c.value, got)   # no error cells
                assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9), (c.coordinate, c.value, want, got)
                n += 1
    assert n > 200


@pytest.mark.libreoffice
def test_totals_are_what_plan_disaggregated_computes(books):
    path, recalculated = books
    wb = openpyxl.load_workbook(recalculated, data_only=True)
    names = {n: wb.defined_names[n].attr_text.split("!")[1].replace("$", "") for n in
             ("kv_transfer_bytes", "prefill_instances", "decode_instances", "disagg_gpus", "disagg_monthly_cost")}
    ws = wb["Disaggregated"]
    pools = disaggregated.disaggregate("deepseek-v3", "h100-sxm", {"tp": 8, "pp": 2}, {"tp": 8, "pp": 2})
    # 61 layers x (512 + 64) x 2 B per token x 1024 prompt tokens
    assert ws[names["kv_transfer_bytes"]].value == 61 * 576 * 2 * 1024 == pools.numbers["kv_transfer_bytes"]
    for n, key in (("prefill_instances", "prefill_instances"), ("decode_instances", "decode_instances"),
                   ("disagg_gpus", "gpus"), ("disagg_monthly_cost", "monthly_cost")):
        assert ws[names[n]].value == pytest.approx(pools.numbers[key], rel=1e-9), n


def _named(wb, name):
    sheet, coord = wb.defined_names[name].attr_text.split("!")
    return wb[sheet.strip("'")][coord.replace("$", "")]


@pytest.mark.libreoffice
def test_a_layout_the_engines_refuse_fails_the_master_check(books, tmp_path):
    path, recalculated = books
    assert _named(openpyxl.load_workbook(recalculated, data_only=True), "master_check").value == 1
    wb = openpyxl.load_workbook(path)
    _named(wb, "ep").value = 3                     # 3 divides neither 256 experts nor the 8 GPUs of a stage
    bad = tmp_path / "bad.xlsx"
    wb.save(bad)
    got = openpyxl.load_workbook(recalculate(bad, tmp_path / "lo"), data_only=True)
    assert _named(got, "master_check").value == 0

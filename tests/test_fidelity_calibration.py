"""The Calibration sheet: back-solved efficiencies, by hand, in Python and recalculated by LibreOffice."""

from __future__ import annotations

import re

import openpyxl
import pytest

from inference_ledger.graph import plan
from inference_ledger.core.expr import PORTABLE_FUNCTIONS
from inference_ledger.workbook.build import build_workbook
from inference_ledger.workbook.calibration import (FIRST, OUTPUT_COLS, add_calibration_sheet, bw_fraction, overhead_ms,
                                                   step_bytes)
from inference_ledger.workbook.recalc import recalculate

from renders import opened

# Llama-3.1-70B on 4 x H100 (the workbook's default plan): one batch-1 run and one batch-8 run
RUNS = [{"B": 1, "C": 205, "D": 1024, "E": 26.31, "F": 150.0, "G": 400_000},
        {"B": 8, "C": 2048, "E": 30.0}]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    # the workbook's own Calibration sheet, pre-filled with measured runs
    from inference_ledger.workbook import build

    def calibration(wb, ctx):
        add_calibration_sheet(wb, ctx, RUNS)

    i = build.SHEET_BUILDERS.index(add_calibration_sheet)
    build.SHEET_BUILDERS[i] = calibration
    try:
        path, values = build_workbook(tmp_path_factory.mktemp("cal") / "cal.xlsx")
    finally:
        build.SHEET_BUILDERS[i] = add_calibration_sheet
    return path, values


def _ns(values):
    class NS:
        def __getattr__(self, k):
            return values[k]
    return NS()


def test_bytes_per_step_by_hand(built):
    _, v = built
    # 69,503,033,344 active params (70,553,706,496 less the 128,256 x 8,192 input embedding) x 2 B / TP 4
    # + 1 sequence x 327,680 B/token x 205 tokens / 4 KV shards
    assert step_bytes(_ns(v), 1, 205) == 69_503_033_344 * 2 / 4 + 327_680 * 205 / 4 == 34_768_310_272


def test_back_solved_fraction_reproduces_the_measured_tpot(built):
    _, v = built
    p = _ns(v)
    frac = bw_fraction(p, step_bytes(p, 1, 205), overhead_ms(p, 1), 26.31)
    # the sheet prices the step at 205 tokens with one fraction for weights and KV: in the plan that is a
    # static batch of one whose decode steps see S + T/2 = 105 + 100 = 205 tokens, both efficiencies = the fraction
    # (the fraction is the roofline's: kernel_tables 0, the step priced from bandwidth, not from the kernel tables)
    inputs = {k: v[k] for k in plan.INPUT_BY_NAME} | {"bw_efficiency": frac, "kv_read_efficiency": frac,
                                                      "kernel_tables": 0,
                                                      "concurrency": 1, "batching": 2,
                                                      "input_tokens": 105, "output_tokens": 200}
    again = plan.evaluate(inputs)
    assert again["tpot_seconds"] * 1000 == pytest.approx(26.31, rel=1e-9)


def test_formulas_are_portable(built):
    path, _ = built
    ws = opened(path, sheets=["Calibration"])["Calibration"]
    for row in ws.iter_rows():
        for c in row:
            if isinstance(c.value, str) and c.value.startswith("="):
                for fn in re.findall(r"([A-Z][A-Z0-9.]*)\(", c.value):
                    assert fn in PORTABLE_FUNCTIONS, (c.coordinate, fn)


@pytest.mark.libreoffice
def test_libreoffice_recalculates_what_python_wrote(built, soffice, tmp_path):
    path, _ = built
    cached = openpyxl.load_workbook(path, data_only=True)["Calibration"]
    out = recalculate(path, tmp_path)
    live = openpyxl.load_workbook(out, data_only=True)["Calibration"]
    checked = 0
    for r in (FIRST, FIRST + 1, FIRST + 2):
        for col, _, _ in OUTPUT_COLS:
            want, got = cached[f"{col}{r}"].value, live[f"{col}{r}"].value
            if want in (None, ""):
                assert got in (None, ""), (col, r, got)
            else:
                assert got == pytest.approx(want, rel=1e-9), (col, r)
                checked += 1
    assert checked == 13 + 6   # run 1: every column; run 2: the TPOT columns only
    names = {n: live.parent.defined_names[n].attr_text for n in ("calibrated_bw_efficiency",
                                                                 "calibrated_prefill_efficiency")}
    for name, ref in names.items():
        cell = ref.split("!")[1].replace("$", "")
        assert live[cell].value == pytest.approx(cached[cell].value, rel=1e-9), name
    # two runs with TPOT: the calibrated bandwidth fraction is their median (mean of two)
    j = [cached[f"J{FIRST}"].value, cached[f"J{FIRST + 1}"].value]
    bw_cell = names["calibrated_bw_efficiency"].split("!")[1].replace("$", "")
    assert live[bw_cell].value == pytest.approx(sum(j) / 2, rel=1e-9)

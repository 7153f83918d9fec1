"""The workbook tests with openpyxl writing through lxml and through the standard library.

openpyxl serializes an empty formula value as ``<v></v>`` with lxml and ``<v/>`` without;
a package step that matched one form left 2,840 of 2,975 formula cells blank with lxml.
This suite runs with lxml (``test`` extra); here a subprocess that hides lxml
(``IL_XML_BACKEND=stdlib``, see conftest.py) builds the workbooks, and both backends must
write the same bytes, every formula with its value: so every workbook test, which reads
those bytes, holds for both (the workbook tests are not run a second time).  The tests of
the packaging step itself run in both legs.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from datetime import datetime
from pathlib import Path

import numpy as np
import openpyxl
import pytest
from openpyxl.chart import BarChart, Reference

from ooxml import formula_cell_count, formula_cells_without_value
from inference_ledger.workbook.package import MissingCachedValue, package
from inference_ledger.workbook.sweep import _value_cells

ROOT = Path(__file__).resolve().parents[1]
HIDE_LXML = "import sys; sys.path.insert(0, 'tests'); import conftest; "


#: tests of this file that run in both legs (the others start the stdlib leg)
BOTH_LEGS = ("test_openpyxl_writes_with_the_backend_asked", "test_package_fills_a_small_book_by_structure",
             "test_package_stops_on_a_formula_without_a_value")
WHEN = datetime(2024, 1, 2, 3, 4, 6)   # zip times have 2-second steps
SML = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
CHART = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"


def _small_book() -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Data & 'more'"
    ws.append(["Label", "Value"])
    ws.append(["a", 1.5])
    ws.append(["b", "=B2*2"])
    ws["C1"] = '=IF(B2>0,"","x")'
    chart = BarChart()
    chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=3), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=3))
    ws.add_chart(chart, "E2")
    raw = io.BytesIO()
    wb.save(raw)
    return raw.getvalue()


def _parts(data: bytes) -> dict:
    from xml.etree import ElementTree as ET
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: ET.fromstring(z.read(n)) for n in z.namelist() if n.endswith(".xml")}


def test_package_fills_a_small_book_by_structure(xml_backend):
    sheet = "Data & 'more'"
    out = package(_small_book(), {(sheet, "B3"): 3.0, (sheet, "C1"): ""}, WHEN)
    parts = _parts(out)
    cells = {c.get("r"): c for c in parts["xl/worksheets/sheet1.xml"].iter(f"{SML}c")}
    assert cells["B3"].findtext(f"{SML}v") == "3" and cells["B3"].get("t") is None
    assert cells["C1"].get("t") == "str" and cells["C1"].find(f"{SML}v") is not None
    chart = parts["xl/charts/chart1.xml"]
    vals = [p.findtext(f"{CHART}v") for p in chart.find(f".//{CHART}val").iter(f"{CHART}pt")]
    cats = [p.findtext(f"{CHART}v") for p in chart.find(f".//{CHART}cat").iter(f"{CHART}pt")]
    assert vals == ["1.5", "3"] and cats == ["a", "b"]
    assert chart.find(f".//{CHART}cat/{CHART}strRef/{CHART}strCache") is not None
    assert chart.find(f".//{CHART}tx/{CHART}strRef/{CHART}strCache/{CHART}pt/{CHART}v").text == "Value"
    with zipfile.ZipFile(io.BytesIO(out)) as z:
        assert {i.date_time for i in z.infolist()} == {(2024, 1, 2, 3, 4, 6)}


def test_package_stops_on_a_formula_without_a_value(xml_backend):
    with pytest.raises(MissingCachedValue, match=r"B3 has a formula but no cached value: =B2\*2"):
        package(_small_book(), {("Data & 'more'", "C1"): ""}, WHEN)


def test_sweep_writer_stops_on_a_formula_whose_value_is_not_finite():
    ok = _value_cells('<c r="K', ["2", "3"], '"><f t="shared" si="0"/>', np.array([1.0, 2.5]), formula=True)
    assert ok[1].endswith("<v>2.5</v></c>")
    with pytest.raises(MissingCachedValue, match="K3"):
        _value_cells('<c r="K', ["2", "3"], '"><f t="shared" si="0"/>', np.array([1.0, np.inf]), formula=True)


def test_openpyxl_writes_with_the_backend_asked(xml_backend):
    assert openpyxl.LXML is (xml_backend == "lxml"), (
        f"openpyxl.LXML is {openpyxl.LXML} with IL_XML_BACKEND={xml_backend}: lxml is a test dependency "
        "(pip install -e '.[test]'); IL_XML_BACKEND=stdlib hides it")


def _stdlib_env() -> dict:
    return {**os.environ, "IL_XML_BACKEND": "stdlib"}


#: the builds compared byte for byte: the default workbook and its template, and a multi-GPU MoE plan (other
#: sheets' branches: experts, FP8 weights, TP 8)
BUILDS = {"default.xlsx": {}, "default.xltx": {}, "moe.xlsx": {"model": "deepseek-v3", "gpu": "h200", "tp": 8}}


def _stdlib_builds(folder: Path) -> tuple[list[str], dict]:
    """The stdlib leg: a child process with lxml hidden builds BUILDS into folder (SOURCE_DATE_EPOCH unset, as the
    session's workbooks)."""
    env = {k: v for k, v in _stdlib_env().items() if k != "SOURCE_DATE_EPOCH"}
    script = (HIDE_LXML + "import openpyxl; assert not openpyxl.LXML, 'lxml was not hidden'; "
              "from inference_ledger.workbook.build import build_workbook; "
              f"[build_workbook({str(folder / 'stdlib')!r} + '-' + n, **kw) for n, kw in {BUILDS!r}.items()]; "
              "print('stdlib ok')")
    return [sys.executable, "-c", script], env


#: started with the session (conftest.py), so its builds run beside the tests before this file's
EARLY_CHILDREN = {"stdlib_builds": _stdlib_builds}


def test_both_backends_write_the_same_bytes_with_every_value(early_child, xml_backend, workbooks):
    out, folder = early_child("stdlib_builds")
    assert out.returncode == 0 and "stdlib ok" in out.stdout, out.stderr[-2000:]
    for name, kwargs in BUILDS.items():
        here, _ = workbooks(name[name.index("."):], **kwargs)   # this process's backend (SOURCE_DATE_EPOCH unset too)
        there = folder / f"stdlib-{name}"
        assert here.read_bytes() == there.read_bytes(), name
        # the same bytes: what holds for one file holds for both
        assert formula_cells_without_value(here) == []
        assert formula_cell_count(here) > 1500


def test_packaging_tests_pass_without_lxml(xml_backend):
    """The packaging tests of this file, with lxml hidden from openpyxl."""
    assert xml_backend == "lxml", "run this test from the main suite (it starts the stdlib leg itself)"
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          *[f"tests/test_xml_backends.py::{t}" for t in BOTH_LEGS]],
                         cwd=ROOT, env=_stdlib_env(), capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-4000:]
    assert f"{len(BOTH_LEGS)} passed" in out.stdout and "skipped" not in out.stdout

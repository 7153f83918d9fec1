"""The workbook as LibreOffice prints it: what a reader of the PDF sees, sheet by sheet.

Each build is printed once to PDF (recalculated on load, each sheet's own print setup); a page belongs to
the sheet its header starts with (the central print setup puts the sheet name there).  The checks iterate
over whatever sheets the workbook has, so a sheet another module adds is checked too.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from openpyxl import load_workbook

from workbook.build import build_workbook
from workbook.recalc import convert

pytestmark = [pytest.mark.libreoffice, pytest.mark.filterwarnings("ignore:.*extension is not supported:UserWarning")]

BUILDS = {"default": {}, "deepseek-v3 on 8x h200": {"model": "deepseek-v3", "gpu": "h200", "tp": 8}}


def pages_by_sheet(pdf: Path, sheets: list[str]) -> dict[str, list[str]]:
    """The layout text of every page, grouped by the sheet named at the start of its header."""
    n = int(re.search(r"^Pages:\s+(\d+)", subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True,
                                                           check=True).stdout, re.M).group(1))
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages = text.split("\f")[:n]
    out: dict[str, list[str]] = {}
    for page in pages:
        # the header line ends with the version; chart text cut at the page's edge may print above it
        first = next((ln.strip() for ln in page.splitlines() if re.search(r"inference-ledger \d+\.\d", ln)), "")
        name = max((s for s in sheets if first == s or first.startswith(s + " ")), key=len, default=None)
        assert name is not None, f"a page whose header names no sheet: {first[:80]!r}"
        out.setdefault(name, []).append(page)
    return out


@pytest.fixture(scope="module", params=list(BUILDS))
def printed(request, soffice, tmp_path_factory):
    d = tmp_path_factory.mktemp("printed")
    path, _ = build_workbook(d / "book.xlsx", **BUILDS[request.param])
    visible = [ws.title for ws in load_workbook(path).worksheets if ws.sheet_state == "visible"]
    return visible, pages_by_sheet(convert(path, d / "pdf", "pdf"), visible)


def test_summary_prints_on_one_page(printed):
    _, pages = printed
    assert len(pages["Summary"]) == 1
    page = pages["Summary"][0]
    for words in ("Verdict:", "Memory per GPU", "What limits a replica", "Checks that fail", "Monthly cost by scenario"):
        assert words in page


def test_every_visible_sheet_prints(printed):
    visible, pages = printed
    assert set(pages) == set(visible)

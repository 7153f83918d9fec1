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

from inference_ledger.workbook.build import build_workbook
from inference_ledger.workbook.recalc import convert

pytestmark = [pytest.mark.libreoffice, pytest.mark.filterwarnings("ignore:.*extension is not supported:UserWarning")]

BUILDS = {"default": {}, "deepseek-v3 on 8x h200": {"model": "deepseek-v3", "gpu": "h200", "tp": 8},
          "llama-3.1-405b on l4 (does not fit)": {"model": "llama-3.1-405b", "gpu": "l4"}}


def pages_by_sheet(pdf: Path, sheets: list[str]) -> dict[str, list[str]]:
    """The layout text of every page, grouped by the sheet named at the start of its header."""
    n = int(re.search(r"^Pages:\s+(\d+)", subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True,
                                                           check=True).stdout, re.M).group(1))
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages = text.split("\f")[:n]
    out: dict[str, list[str]] = {}
    for page in pages:
        # the header line ends with the version, the footer's with the page number; the sheet's name stands left
        # of the workbook title on both (chart text cut at the page's edge may print on the same line)
        marks = [ln.split("inference-ledger:")[0] for ln in page.splitlines()
                 if re.search(r"inference-ledger \d+\.\d|Page \d+ of \d+", ln)]
        first = marks[0].strip() if marks else ""
        name = max((s for s in sheets if any(re.search(rf"(^|\s){re.escape(s)}(\s|$)", m) for m in marks)),
                   key=len, default=None)
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


#: Scientific notation as a spreadsheet or Python prints it (2.22E-12, 1E+14, 1e+15); "1e9" in prose is not.
SCIENTIFIC = re.compile(r"\d(?:\.\d+)?[eE][+-]\d")


def test_no_hash_marks_and_no_scientific_notation_on_any_sheet(printed):
    """A number too wide for its column prints as ###; a format without units as 2.22E-12: neither reaches paper."""
    _, pages = printed
    bad = [(sheet, line.strip()[:120]) for sheet, ps in pages.items() for page in ps for line in page.splitlines()
           if "###" in line or SCIENTIFIC.search(line)]
    assert not bad, f"{len(bad)} printed lines with ### or scientific notation, e.g. {bad[:5]}"


def test_units_are_said_once(printed):
    """A value's number format carries its unit; the unit column beside it does not repeat it ('0.0720 s s')."""
    _, pages = printed
    doubled = re.compile(r"\d (s|ms|GB|TB/s|TFLOP/s|W) +\1(\s|$)")
    bad = [(s, ln.strip()[:100]) for s, ps in pages.items() for p in ps for ln in p.splitlines() if doubled.search(ln)]
    assert not bad, bad[:5]


def test_every_note_merged_along_a_row_prints_whole(printed, tmp_path):
    """A text merged along a row prints to its last word: the Calibration sheet's notes beside its values ran past
    the first page's columns and were cut at the page's edge ("... Prices the pr")."""
    visible, pages = printed
    book = load_workbook(next(Path(tmp_path).parent.glob("printed*/book.xlsx")))
    cut, seen = [], 0
    for sheet in visible:
        ws = book[sheet]
        printed_words = " ".join(" ".join(pages[sheet]).split())   # a text whose first words no page prints
        for m in ws.merged_cells.ranges:
            text = ws.cell(m.min_row, m.min_col).value
            if m.min_row != m.max_row or not isinstance(text, str) or text.startswith("=") or len(text.split()) < 3:
                continue
            seen += 1
            # the page that prints its first words prints its last ones: a text merged across a page's edge goes on
            # with its tail on the next page, out of the reader's sight
            first, last = " ".join(text.split()[:3]), " ".join(text.split()[-3:])
            page = next((" ".join(p.split()) for p in pages[sheet] if first in " ".join(p.split())), printed_words)
            if last not in page:
                cut.append((sheet, ws.cell(m.min_row, m.min_col).coordinate, text[-60:]))
    assert seen > 20 and not cut, cut


def test_each_sheets_introduction_prints_whole(printed, tmp_path):
    """The sentence under each sheet's title (A3, merged over the columns of the sheet's first printed page) prints
    to its last word: merged over columns that print on a later page it was cut at the page's edge (the Checks
    sheet's ended "...Findings describe the plan and are count")."""
    visible, pages = printed
    book = load_workbook(next(Path(tmp_path).parent.glob("printed*/book.xlsx")), read_only=True)
    cut = []
    for sheet in visible:
        text = book[sheet]["A3"].value
        if not isinstance(text, str) or text.startswith("=") or len(text.split()) < 3:
            continue
        printed_words = " ".join(" ".join(pages[sheet]).split())
        if " ".join(text.split()[-3:]) not in printed_words:
            cut.append((sheet, text[-60:]))
    assert not cut, cut


@pytest.mark.parametrize("text, per_line, lines", [
    ("Batch (sequences decoding together)", 15, 4),   # Batch / (sequences / decoding / together): not 35 // 15 + 1
    ("Measured KV cache tokens (engine log)", 15, 3),
    ("Run", 15, 1), ("", 15, 1),
    ("x" * 40, 15, 3),                                 # a word longer than a line breaks at the line's end
    # ids break only after a bar or a hyphen: LibreOffice printed fp8's aliases on five lines of a 11-wide column at
    # 10 pt (float8| / fp8_e4m3| / e4m3|fp8- / e4m3|w8a8- / fp8), and the row held four (38 characters / 13)
    ("float8|fp8_e4m3|e4m3|fp8-e4m3|w8a8-fp8", 12, 5),
    ("github.com/ai-dynamo/aiconfigurator", 12, 4),   # github.com/ / ai-dynamo/ / aiconfigurato / r
])
def test_a_texts_lines_are_counted_where_lines_break(text, per_line, lines):
    from inference_ledger.workbook.style import word_lines

    assert word_lines(text, per_line) == lines


def test_an_id_list_is_counted_at_a_digits_width():
    """Prose runs narrower than its width in digits (lower-case letters); ids and numbers do not."""
    from inference_ledger.workbook.style import chars_per_line

    assert chars_per_line(11, 10) == 13 and chars_per_line(11, 10, prose=False) == 12


def test_the_calibration_sheets_header_row_holds_its_longest_label(workbooks):
    """'Batch (sequences decoding together)' printed without its last word: the header row was three lines high."""
    from renders import opened

    path, _ = workbooks()
    ws = opened(path)["Calibration"]
    row = next(c.row for c in ws["B"] if c.value == "Batch (sequences decoding together)")
    assert ws.row_dimensions[row].height >= 4 * 13.5

"""What LibreOffice's recalculation of the default workbook spends its time on, one part of the file at a time.

Builds the default workbook once, then writes variants of it with one part stripped from the XML (charts, defined
names, print titles, conditional formats, data validations, cell styles, formulas) and times LibreOffice's forced
recalculation (``inference_ledger.workbook.recalc.recalculate``) of each, best of N, beside the unchanged book and a
one-cell book.  The variants are for measurement only (a stripped name breaks the formulas that read it).

    python bench/bench_recalc_parts.py [runs] [variant ...]

On the 2-core development machine (2026-12-03, LibreOffice 7.x, noisy to about +-0.5 s) the unchanged book took
4.6-5.3 s against 1.3-1.4 s for one cell; stripping every formula changed nothing (4.98 s), and emptying the Kernels
sheet's 2,280 rows changed nothing either (4.54 s); stripping the print titles (``_xlnm.Print_Titles``, 20 sheets,
rows and columns both contribute) brought it to 3.0 s, the single largest part found.  2026-12-06, same machine:
one cell 0.96 s, unchanged 3.85 s, no print titles 2.60 s; stripping the fit-to-page flag (3.85 s) or the whole page
setup (4.06 s) changes nothing, so LibreOffice's zoom search for "fit N pages wide" is not what the titles cost.
Later that day: one cell 1.00 s, unchanged 3.51 s; keeping only the rows (or only the columns) of the 12 sheets
whose print titles name both, 2.80 s (``rows-only-print-titles``). LibreOffice's XLSX import is what a two-range
title costs: 20 near-empty sheets open and save in 1.35 s, 1.50 s with a title row each, 1.48 s with a title column
each, and 3.54 s with both (a csv export of the same files: 1.26 s and 3.22 s, so the time is in the import). With no
print titles at all the default book still takes 2.5 x one cell: its 21 sheets, not its formulas.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from openpyxl import Workbook

from inference_ledger.workbook.build import build_workbook
from inference_ledger.workbook.recalc import recalculate


def _in_sheets(pattern: str, flags: int = 0):
    return lambda f, d: re.sub(pattern, "", d, flags=flags) if "worksheets/sheet" in f else d


def _in_workbook(pattern: str, flags: int = 0):
    return lambda f, d: re.sub(pattern, "", d, flags=flags) if f == "xl/workbook.xml" else d


VARIANTS = {
    "unchanged": lambda f, d: d,
    "no-charts": _in_sheets(r"<drawing [^>]*/>"),
    "no-names": _in_workbook(r"<definedNames>.*</definedNames>", re.S),
    "no-print-titles": _in_workbook(r'<definedName name="_xlnm.Print_Titles"[^>]*>[^<]*</definedName>'),
    "no-print-areas": _in_workbook(r'<definedName name="_xlnm.Print_Area"[^>]*>[^<]*</definedName>'),
    "rows-only-print-titles": _in_workbook(r",'[^']+'!\$[A-Z]+:\$[A-Z]+(?=</definedName>)"),
    "no-conditional-formats": _in_sheets(r"<conditionalFormatting.*?</conditionalFormatting>", re.S),
    "no-validations": _in_sheets(r"<dataValidations.*?</dataValidations>", re.S),
    "no-styles": _in_sheets(r' s="\d+"'),
    "no-formulas": _in_sheets(r"<f>[^<]*</f>"),
    "no-fit-to-page": _in_sheets(r'<pageSetUpPr[^>]*fitToPage="1"[^>]*/>'),
    "no-page-setup": _in_sheets(r"<pageSetup [^>]*/>"),
    "no-row-breaks": _in_sheets(r"<rowBreaks.*?</rowBreaks>", re.S),
}


def variant(src: Path, out: Path, edit) -> Path:
    with zipfile.ZipFile(src) as zi, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zo:
        for item in zi.infolist():
            data = zi.read(item.filename)
            if item.filename.endswith(".xml"):
                data = edit(item.filename, data.decode()).encode()
            zo.writestr(item, data)
    return out


def best(path: Path, out_dir: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        recalculate(path, out_dir)
        times.append(time.perf_counter() - t)
    return min(times)


def main(runs: int = 3, names: list[str] | None = None) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-recalc-parts-"))
    book = tmp / "inference-ledger.xlsx"
    build_workbook(book)
    one = tmp / "one-cell.xlsx"
    wb = Workbook()
    wb.active["A1"] = "=1+1"
    wb.save(one)
    base = best(one, tmp / "out", runs)
    print(f"{'one-cell book':24s} {base:6.2f} s")
    for name in names or VARIANTS:
        s = best(variant(book, tmp / f"{name}.xlsx", VARIANTS[name]), tmp / "out", runs)
        print(f"{name:24s} {s:6.2f} s   {s / base:5.2f} x one cell", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3, sys.argv[2:] or None)

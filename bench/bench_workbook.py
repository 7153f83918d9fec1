"""The default workbook: build time, and LibreOffice's time to recalculate it, side by side.

Build = ``inference_ledger.workbook.build.build_workbook`` end to end (catalog load, plan and scenario
evaluation, openpyxl, cached values, reproducible zip, atomic write), best of N runs in
this process after one warm-up.  Recalc = ``inference_ledger.workbook.recalc.recalculate`` (LibreOffice
headless, forced full recalculation on load, fresh profile each time: the test suite's
path), best of M runs.  A bare LibreOffice open-and-save of a one-cell workbook is the
baseline, so the last ratio shows what the formulas themselves cost.

    python bench/bench_workbook.py [build_runs] [recalc_runs]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from openpyxl import Workbook

from inference_ledger.workbook.build import build_workbook
from inference_ledger.workbook.recalc import recalculate


def best(fn, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), statistics.median(times)


def main(build_runs: int = 5, recalc_runs: int = 3) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-workbook-"))
    path = tmp / "inference-ledger.xlsx"
    build_workbook(path)  # warm-up: imports, catalog parsing
    b_min, b_med = best(lambda: build_workbook(path), build_runs)
    size = path.stat().st_size
    empty = tmp / "empty.xlsx"
    wb = Workbook()
    wb.active["A1"] = "=1+1"
    wb.save(empty)
    e_min, _ = best(lambda: recalculate(empty, tmp / "e"), recalc_runs)
    r_min, r_med = best(lambda: recalculate(path, tmp / "r"), recalc_runs)
    print(f"default workbook: {size / 1024:,.0f} KiB")
    print(f"build (python, best of {build_runs}):       {b_min:7.3f} s   median {b_med:.3f} s")
    print(f"LibreOffice recalc (best of {recalc_runs}):   {r_min:7.3f} s   median {r_med:.3f} s")
    print(f"LibreOffice baseline, 1-cell book:   {e_min:7.3f} s")
    print(f"ratio recalc / build:                {r_min / b_min:7.1f} x")
    print(f"ratio recalc / baseline:             {r_min / e_min:7.2f} x  (formula cost over LibreOffice start-up)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))

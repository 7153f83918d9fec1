"""The build's and validate's costly steps, each beside its floor (what the step cannot cost less than).

* package: :func:`inference_ledger.workbook.package.package` over the default workbook's openpyxl output (parse
  every XML part, fill cached values and chart caches, write every part again, zip) beside unzipping and zipping
  the same parts unchanged (:func:`~inference_ledger.workbook.package.zip_parts`).
* column widths: :func:`inference_ledger.workbook.printing.fit_columns` over every sheet of the default workbook
  beside a loop that only reads each cell's value and number format (and each value of a number block).
* number blocks: :func:`inference_ledger.workbook.build.render_workbook` of the default workbook, its Kernels sheet's
  figures written as one number block (:meth:`inference_ledger.workbook.context.Ctx.number_block`, how it runs)
  beside the same figures written as a cell each (how it ran before); the two must give the same bytes.
* load predictions: :meth:`inference_ledger.validation.accuracy.RowSet.predict` of every shipped load row at its
  defaults, one plan evaluation over all rows (how it runs) beside one per GPU x engine (how it ran before); the
  two must give the same figures.

    python bench/bench_build_steps.py [runs]
"""

from __future__ import annotations

import io
import sys
import time
import zipfile

import numpy as np

from inference_ledger.validation import accuracy
from openpyxl.utils import get_column_letter

from inference_ledger.workbook import build, printing
from inference_ledger.workbook.context import Ctx
from inference_ledger.workbook.package import package, zip_parts


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def _captured_package_inputs():
    """The default build's openpyxl bytes and cached values, as render_workbook hands them to the package step."""
    got = {}
    real = build.package

    def keep(raw, cached, when, template=False, streamed={}):  # noqa: B006 (read only)
        got.update(raw=raw, cached=cached, when=when, streamed=streamed)
        return real(raw, cached, when, template, streamed)

    build.package = keep
    try:
        build.render_workbook(build.make_context())
    finally:
        build.package = real
    return got


def bench_package(runs: int) -> tuple[float, float]:
    got = _captured_package_inputs()
    with zipfile.ZipFile(io.BytesIO(got["raw"])) as z:
        members = [(n, z.read(n)) for n in z.namelist()]

    def floor():
        with zipfile.ZipFile(io.BytesIO(got["raw"])) as z:
            [z.read(n) for n in z.namelist()]
        zip_parts(members, got["when"])

    return best(lambda: package(got["raw"], got["cached"], got["when"], streamed=got["streamed"]), runs), \
        best(floor, runs)


def _cell_by_cell(self, ws, row, col, rows, style, fmts):
    """Ctx.number_block as a cell each (through Ctx.put), as the Kernels sheet was written before number blocks."""
    for i, values in enumerate(rows):
        for j, (v, fmt) in enumerate(zip(values, fmts)):
            self.put(ws, f"{get_column_letter(col + j)}{row + i}", float(v), style, fmt)


def bench_number_blocks(runs: int) -> tuple[float, float]:
    blocks = build.render_workbook(build.make_context())
    real = Ctx.number_block
    Ctx.number_block = _cell_by_cell
    try:
        assert build.render_workbook(build.make_context()) == blocks, "a number block must write its cells' bytes"
        cells = best(lambda: build.render_workbook(build.make_context()), runs)
    finally:
        Ctx.number_block = real
    return best(lambda: build.render_workbook(build.make_context()), runs), cells


def bench_fit_columns(runs: int) -> tuple[float, float]:
    ctx = build.make_context()
    books = []
    real = printing.fit_columns
    printing.fit_columns = lambda ws, ctx: books.append(ws.parent) if not books else None   # keep one book, unsized
    try:
        build.render_workbook(ctx)
    finally:
        printing.fit_columns = real
    sheets = books[0].worksheets

    def floor():
        for ws in sheets:
            for c in ws._cells.values():
                c.value, c.number_format
            for block in ctx.blocks.get(ws.title, ()):   # the Kernels sheet's figures: a number block, not cells
                for values in block.rows.values():
                    for v in values:
                        v

    return best(lambda: [real(ws, ctx) for ws in sheets], runs), best(floor, runs)


def bench_predict(runs: int) -> tuple[float, float]:
    rs = accuracy.RowSet(list(accuracy.load_measured_load()))
    every = np.arange(len(rs))
    one = rs.predict(every, {})
    by_gpu_engine = sorted({(r.gpu_id, r.engine_id) for r in rs.rows})
    per_group = accuracy.RowSet.__new__(accuracy.RowSet)
    per_group.__dict__.update(rs.__dict__)
    per_group.group = np.array([by_gpu_engine.index((r.gpu_id, r.engine_id)) for r in rs.rows])
    split = per_group.predict(every, {})
    for m in one:
        assert np.array_equal(one[m], split[m], equal_nan=True), m
    return best(lambda: rs.predict(every, {}), runs), best(lambda: per_group.predict(every, {}), runs)


def main(runs: int = 3) -> None:
    build.render_workbook(build.make_context())   # warm-up: imports, catalogs, the Kernels grid
    p, p0 = bench_package(runs)
    f, f0 = bench_fit_columns(runs)
    nb, nb0 = bench_number_blocks(runs)
    one, split = bench_predict(runs)
    print(f"CPU seconds, best of {runs}")
    print(f"package (default workbook):          {p:7.3f} s   unzip + zip alone {p0:7.3f} s   ratio {p / p0:5.1f} x")
    print(f"fit_columns (every sheet):           {f:7.3f} s   read each cell    {f0:7.3f} s   ratio {f / f0:5.1f} x")
    print(f"default workbook, number blocks:     {nb:7.3f} s   a cell each       {nb0:7.3f} s   "
          f"speed-up {nb0 / nb:5.1f} x (same bytes)")
    print(f"predict every load row, one call:    {one:7.3f} s   per GPU x engine  {split:7.3f} s   "
          f"speed-up {split / one:5.1f} x (same figures)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))

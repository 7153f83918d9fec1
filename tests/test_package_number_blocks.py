"""Number blocks (Ctx.number_block): rows of constant numbers written straight into a sheet's XML by the package step
instead of as openpyxl cells (the Kernels sheet's figures).  A block must write the very bytes the same numbers
written cell by cell do, widths, wrapped rows and styles included, and the default workbook's Kernels sheet must
hold, for every key in column A, the figures the kernel tables give that key."""

from __future__ import annotations

import io
import zipfile
from datetime import datetime
from xml.etree import ElementTree as ET

import pytest
from openpyxl import Workbook
from openpyxl.utils import get_column_letter

from inference_ledger.catalogs import catalog
from inference_ledger.formulas import kernels
from inference_ledger.graph import resolve
from inference_ledger.workbook import style
from inference_ledger.workbook.cells import fit_rows
from inference_ledger.workbook.context import Ctx
from inference_ledger.workbook.kernels_sheet import FIRST_ROW, HEADER_ROW
from inference_ledger.workbook.package import package, streamed_cells
from inference_ledger.workbook.printing import fit_columns
from inference_ledger.workbook.tables import KERNEL_INPUTS

SML = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
FORMATS = ["0", '0.000000000" s"', "#,##0.0", None]
#: rows of numbers: the third column grows wider than its default, some labels wrap their row onto two lines (and
#: those rows' numbers, in a style that is not top-aligned, move to the top), the last column is General
ROWS = [[k, k * 1.25e-6, -(k ** 4) * 1234.5678, k / 7] for k in range(1, 30)]


def _label(k: int) -> str:
    return f"row {k} " + "with a longer label " * (k % 4)


def _book(streamed: bool) -> bytes:
    """A one-sheet workbook through the build's steps: cells, widths, heights, save, package."""
    wb = Workbook()
    wb.remove(wb.active)
    style.register(wb)
    ctx = Ctx(wb=wb, tables={}, choice={}, inputs={}, overrides={}, values={}, scenarios=(),
              build_date=datetime(2026, 1, 1), version="test")
    wb.properties.created = ctx.build_date   # not the clock: the two books are written in different seconds
    ws = wb.create_sheet("S")
    ws.column_dimensions["A"].width = 20
    for k in range(len(ROWS)):
        ctx.put(ws, f"A{k + 2}", _label(k), style.INPUT)
    if streamed:
        ctx.number_block(ws, 2, 2, ROWS, None, FORMATS)
    else:
        for k, row in enumerate(ROWS):
            for j, v in enumerate(row):
                ctx.put(ws, f"{get_column_letter(2 + j)}{k + 2}", float(v), None, FORMATS[j])
    fit_columns(ws, ctx)
    fit_rows(ws, ctx.cached, ctx.blocks.get("S", ()))
    raw = io.BytesIO()
    wb.save(raw)
    return package(raw.getvalue(), ctx.cached, ctx.build_date, streamed=streamed_cells(wb, ctx))


def test_a_number_block_writes_the_bytes_of_its_cells():
    streamed, cells = _book(True), _book(False)
    with zipfile.ZipFile(io.BytesIO(cells)) as z:
        sheet, styles = z.read("xl/worksheets/sheet1.xml").decode(), z.read("xl/styles.xml").decode()
    # what the block must reproduce is there: a column widened for its numbers, rows of wrapped labels two lines high
    assert '<col width="' in sheet and 'min="4" max="4"' in sheet
    assert sheet.count('customHeight="1"') >= 5 and 'wrapText="1"' in styles and 'vertical="top"' in styles
    assert streamed == cells


def test_a_block_row_must_be_free_of_other_cells():
    wb = Workbook()
    style.register(wb)
    ctx = Ctx(wb=wb, tables={}, choice={}, inputs={}, overrides={}, values={}, scenarios=(),
              build_date=datetime(2026, 1, 1), version="test")
    ws = wb.active
    ctx.number_block(ws, 1, 1, [[1.0, 2.0], [3.0, 4.0]], style.INPUT, ["0", "0"])
    ctx.put(ws, "B2", "in the way")
    wb.save(io.BytesIO())
    with pytest.raises(ValueError, match="row 2 has a cell of its own"):
        streamed_cells(wb, ctx)
    with pytest.raises(ValueError, match="finite numbers"):
        ctx.number_block(ws, 5, 1, [[1.0], [float("nan")]], style.INPUT, ["0"])


def _kernels_sheet(path) -> dict[str, list[str]]:
    """Key -> the Kernels sheet's figures of that row as written (text of each <v>), read from the file's XML."""
    with zipfile.ZipFile(path) as z:
        wb = ET.fromstring(z.read("xl/workbook.xml"))
        names = [s.get("name") for s in wb.iter(f"{SML}sheet")]
        root = ET.fromstring(z.read(f"xl/worksheets/sheet{names.index('Kernels') + 1}.xml"))
    out = {}
    for row in root.iter(f"{SML}row"):
        if int(row.get("r")) < FIRST_ROW:
            continue
        cells = list(row.iter(f"{SML}c"))
        assert [c.get("r") for c in cells] == [f"{get_column_letter(j + 1)}{row.get('r')}"
                                               for j in range(len(KERNEL_INPUTS) + 1)]
        out["".join(cells[0].itertext())] = [c.find(f"{SML}v").text for c in cells[1:]]
    return out


@pytest.mark.parametrize("key", ["llama-3.1-70b|h100-sxm|4|1|bf16|bf16|vllm", "deepseek-v3|h200|8|1|fp8|fp8|vllm",
                                 "qwen2.5-7b|a100-80gb|2|1|bf16|fp8|vllm"])
def test_the_kernels_sheet_holds_each_keys_figures(workbooks, key):
    """A row picked by its key has the figures the kernel tables give that model, GPU, layout and formats."""
    rows = _kernels_sheet(workbooks()[0])
    model, gpu, tp, ep, wd, kd, engine = key.split("|")
    m = catalog.get_model(model)
    inputs = resolve.plan_inputs(m, catalog.get_gpu(gpu), weight_dtype=wd, kv_dtype=kd, tp=float(tp), ep=float(ep))
    figures, _ = kernels.plan_kernel_inputs(inputs, gpu, engine, m.num_attention_heads, wd, kd)
    assert figures["kernel_tables"] == 1
    assert [float(v) for v in rows[key]] == pytest.approx([figures.get(n, 0.0) for n in KERNEL_INPUTS], rel=1e-15)
    assert HEADER_ROW < FIRST_ROW and len(rows) > 1000

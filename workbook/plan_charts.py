"""The Plan's two native charts (memory per GPU; decode step time against batch) and their data.

The data are plan formulas in columns beyond the printed A:K, so the charts stay live.
"""

from __future__ import annotations

import numpy as np
from openpyxl.chart import BarChart, Reference, ScatterChart, Series
from openpyxl.styles import Alignment
from openpyxl.utils import get_column_letter

from inference_ledger.graph import plan
from inference_ledger.core.refs import max_of

from . import style
from .cells import header, section, shown
from .context import Ctx
from .load_chart import varying_columns

#: Decode batch sizes of the Plan's step-time table (powers of two: the roofline turns on a log axis).
BATCH_SIZES = tuple(2 ** k for k in range(11))
#: Plan lines the batch table plots: step time floor, expected step time.
BATCH_TARGETS = ("tpot_floor_seconds", "tpot_seconds", "tokens_per_second_per_gpu")


def plan_charts(ctx: Ctx, ws, top: int) -> None:
    """Two native charts at the top right; their data (plan formulas) beyond the printed columns."""
    end = _memory_chart(ctx, ws, top, f"G{top}")
    _batch_table(ctx, ws, end + 2, f"J{top}")
    # one-line headers, columns as wide as they need: these rows sit beside the verdict and choices
    widths: dict[str, int] = {}
    for row in ws.iter_rows(min_row=top, min_col=CHART_DATA_COL):
        for c in row:
            if isinstance(c.value, str) and not c.value.startswith("="):
                c.alignment = Alignment(wrap_text=False, vertical="top")
                if c.style == style.HEADER:
                    widths[c.column_letter] = max(widths.get(c.column_letter, 12), len(c.value) + 2)
    for col, w in widths.items():
        ws.column_dimensions[col].width = w


#: First column of the Plan's chart data (beyond the printed A:K).
CHART_DATA_COL = 14  # N: past column L, where the results' notes run on


def _col(k: int) -> str:
    return get_column_letter(CHART_DATA_COL + k)


def _memory_chart(ctx: Ctx, ws, r: int, anchor: str) -> int:
    """Stacked memory per GPU (weights, KV, workspace) beside usable and physical capacity."""
    section(ctx, ws, f"{_col(0)}{r}", "Chart data: memory per GPU")
    r += 1
    parts = (("Weights", "weights_bytes_per_gpu"), ("KV cache at peak", "kv_bytes_per_gpu"),
             ("Workspace", "workspace_bytes_per_gpu"), ("Capacity", None))
    cats = (("Planned use", None), ("Usable (x utilization)", "usable_bytes_per_gpu"),
            ("Physical (runtime)", "gpu_memory_bytes"))
    header(ctx, ws, r, CHART_DATA_COL, ["Bar"] + [p[0] for p in parts])
    top = r
    fmt = style.number_format("B")
    for i, (cat, cap) in enumerate(cats):
        r += 1
        ctx.put(ws, f"{_col(0)}{r}", cat)
        for j, (_, name) in enumerate(parts):
            coord = f"{_col(1 + j)}{r}"
            src = name if i == 0 else (cap if name is None else None)
            if src:
                ctx.formula(ws, coord, ctx.quantity(src), style.FORMULA, fmt)
            else:
                ctx.put(ws, coord, 0, None, fmt)
    chart = BarChart()
    chart.type, chart.grouping, chart.overlap = "col", "stacked", 100
    chart.title = "Memory per GPU vs capacity (GB)"
    chart.y_axis.title = "GB (1e9 B)"
    chart.y_axis.numFmt = "#,##0,,,"
    chart.y_axis.scaling.min = 0
    data = Reference(ws, min_col=CHART_DATA_COL + 1, max_col=CHART_DATA_COL + len(parts), min_row=top, max_row=r)
    chart.add_data(data, titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=CHART_DATA_COL, min_row=top + 1, max_row=r))
    for s, c in zip(chart.series, ("4472C4", "ED7D31", "A5A5A5", "70AD47")):
        s.graphicalProperties.solidFill = c
        s.graphicalProperties.line.solidFill = c
    chart.height, chart.width = 10, 11.5
    chart.x_axis.delete = chart.y_axis.delete = False
    chart.legend.position = "b"
    ws.add_chart(chart, anchor)
    return r


def _batch_columns() -> list[str]:
    """Plan lines that change with the batch and lead to the plotted targets."""
    return varying_columns(BATCH_TARGETS)


def _batch_table(ctx: Ctx, ws, r: int, anchor: str) -> None:
    """Decode step time against batch size: each row the plan's own lines at batch = concurrency."""
    section(ctx, ws, f"{_col(0)}{r}", "Chart data: decode step vs batch (plan formulas at concurrency = batch)")
    r += 1
    cols = _batch_columns()
    header(ctx, ws, r, CHART_DATA_COL, ["Batch (sequences)"] + [plan.LINE_BY_NAME[c].label for c in cols])
    r += 1
    for j, c in enumerate(cols):
        ctx.put(ws, f"{_col(1 + j)}{r}", shown(plan.LINE_BY_NAME[c].unit), style.NOTE)
    ctx.put(ws, f"{_col(0)}{r}", "sequences", style.NOTE)
    first = r + 1
    batch = np.array(BATCH_SIZES, dtype=float)
    vals = plan.evaluate({**ctx.inputs, "concurrency": batch})
    where_col = {"concurrency": _col(0)} | {c: _col(1 + j) for j, c in enumerate(cols)}
    for i, b in enumerate(BATCH_SIZES):
        r = first + i
        ctx.put(ws, f"{_col(0)}{r}", b, style.INPUT, "#,##0")
        ref = lambda n, r=r: (ctx.at(ws, f"{where_col[n]}{r}", fix="col") if n in where_col  # noqa: E731
                              else ctx.quantity(n))
        for c in cols:
            line = plan.LINE_BY_NAME[c]
            v = float(np.asarray(vals[c])[i])   # the plan over the batch sizes, this row's
            ctx.formula(ws, f"{where_col[c]}{r}", plan.expression(line, ref, value=v), style.FORMULA,
                        style.number_format(line.unit, v))
    last = r
    # the ridge marker: a vertical line at the batch where decode turns compute-bound
    y = BATCH_TARGETS[1]
    r += 2
    x0, x1 = f"{_col(1)}{r}", f"{_col(1)}{r + 1}"
    ctx.put(ws, f"{_col(0)}{r}", "Ridge marker (x, y)")
    ctx.formula(ws, x0, ctx.quantity("ridge_batch"), style.FORMULA, "#,##0")
    ctx.put(ws, f"{_col(2)}{r}", 0, None, style.number_format("s"))
    ctx.formula(ws, x1, ctx.at(ws, x0), style.FORMULA, "#,##0")
    ctx.formula(ws, f"{_col(2)}{r + 1}", max_of(ctx.span(ws, f"{where_col[y]}{first}", f"{where_col[y]}{last}")),
                style.FORMULA, style.number_format("s"))
    ctx.put(ws, f"{_col(3)}{r}", "x = ridge batch; y from 0 to the largest step time")
    chart = ScatterChart(scatterStyle="lineMarker")   # ECMA-376 requires c:scatterStyle (openpyxl omits it)
    chart.title = "Decode step time vs batch (flat: bandwidth-bound; rising: compute-bound)"
    chart.style = 2
    chart.x_axis.title = "Batch (sequences in one decode step), log scale"
    chart.y_axis.title = "Seconds per decode step (TPOT)"
    chart.x_axis.scaling.logBase = 2
    chart.x_axis.scaling.min, chart.x_axis.scaling.max = BATCH_SIZES[0], BATCH_SIZES[-1]
    chart.y_axis.scaling.min = 0
    chart.y_axis.numFmt = "0.000"
    chart.x_axis.numFmt = "#,##0"
    chart.x_axis.delete = chart.y_axis.delete = False
    xs = Reference(ws, min_col=CHART_DATA_COL, min_row=first, max_row=last)
    colors = {"tpot_floor_seconds": "4472C4", "tpot_seconds": "ED7D31"}
    for name in BATCH_TARGETS[:2]:
        col = CHART_DATA_COL + 1 + cols.index(name)
        s = Series(Reference(ws, min_col=col, min_row=first, max_row=last), xs, title=plan.LINE_BY_NAME[name].label)
        s.marker.symbol = "circle"
        s.graphicalProperties.line.solidFill = colors.get(name, "595959")
        s.marker.graphicalProperties = None
        s.smooth = False
        chart.series.append(s)
    marker = Series(Reference(ws, min_col=CHART_DATA_COL + 2, min_row=r, max_row=r + 1),
                    Reference(ws, min_col=CHART_DATA_COL + 1, min_row=r, max_row=r + 1),
                    title="Compute-bound from here (ridge batch)")
    marker.graphicalProperties.line.solidFill = "C00000"
    marker.graphicalProperties.line.dashStyle = "dash"
    marker.graphicalProperties.line.width = 25400
    marker.marker.symbol = "none"
    marker.smooth = False
    chart.series.append(marker)
    chart.height, chart.width = 10, 12.5
    chart.legend.position = "b"
    ws.add_chart(chart, anchor)


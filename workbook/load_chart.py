"""The Load sheet: output tokens/s and TPOT against concurrency, with the KV-capacity plateau and the TPOT target.

Each row of its table is the plan's own lines at concurrency = the row's value (live formulas over the
Plan's named inputs, the concurrency from the row's first cell), so throughput flattens where the KV
cache stops admitting sequences (``effective_concurrency``) and TPOT climbs with the batch and its
prompt chunks.  Two native scatter charts plot them; a dashed vertical line marks ``max_concurrency``
(the KV-capacity plateau) and a dashed horizontal line the ``tpot_target``; light dotted lines the error band of
throughput and TPOT (about 80% of new measurements should fall inside).  The package writer fills
every series' cache from the cells' cached values (:func:`workbook.package.fill_chart_caches`).

Also :func:`binding_limit_row`, the Plan's line saying which limit binds (KV cache, max_num_seqs, TPOT
target, compute, or none).
"""

from __future__ import annotations

import numpy as np
from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.utils import get_column_letter

from inference_ledger import plan, serving
from inference_ledger.expr import Sym

from . import style
from .context import Ctx, xname

#: Concurrencies of the table (powers of two: a log axis).
CONCURRENCIES = tuple(2 ** k for k in range(11))
#: The lines the charts plot.
TARGETS = ("tokens_per_second", "tpot_seconds")
#: Each plotted line's error band (inference_ledger/band_lines.py), drawn as two light lines around it.
BANDS = {"tokens_per_second": ("tokens_per_second_low", "tokens_per_second_high"),
         "tpot_seconds": ("tpot_seconds_low", "tpot_seconds_high")}
BAND_WORDS = "band: about 80% of new measurements should fall inside"
#: First column of the table.
FIRST_COL = 1


def varying_columns(targets) -> list[str]:
    """Plan lines that change with the concurrency and lead to the targets, in evaluation order."""
    need: set[str] = set()
    todo = [t for t in targets if t in plan.LINE_BY_NAME]
    while todo:
        n = todo.pop()
        if n in need or n not in plan.LINE_BY_NAME:
            continue
        need.add(n)
        todo.extend(plan.dependencies(n))
    varies = {"concurrency"}
    for line in plan.EVALUATION_ORDER:
        if line.name in need and varies & set(plan.dependencies(line)):
            varies.add(line.name)
    return [l.name for l in plan.EVALUATION_ORDER if l.name in varies and l.name in need]


def binding_limit_row(ctx: Ctx, ws, r: int) -> None:
    """The Plan's words for what caps the replica (the plan line binding_limit)."""
    ctx.put(ws, f"A{r}", "Limit that binds")
    ctx.formula(ws, f"B{r}", serving.limit_words(Sym(xname("binding_limit"))),
                serving.limit_words(ctx.values["binding_limit"]), style.FORMULA)
    ws.merge_cells(f"B{r}:C{r}")
    ctx.put(ws, f"E{r}", "What caps the replica at this concurrency: the KV cache (the rest queue), the engine's "
            "max_num_seqs, the TPOT target, compute, or none (bandwidth-bound). Chart: the Load sheet.", style.NOTE)


def _col(k: int) -> str:
    return get_column_letter(FIRST_COL + k)


def _marker(ws, xs: tuple[int, int], ys: tuple[int, int], col_x: int, col_y: int, title: str, color: str) -> Series:
    s = Series(Reference(ws, min_col=col_y, min_row=ys[0], max_row=ys[1]),
               Reference(ws, min_col=col_x, min_row=xs[0], max_row=xs[1]), title=title)
    s.graphicalProperties.line.solidFill = color
    s.graphicalProperties.line.dashStyle = "dash"
    s.graphicalProperties.line.width = 25400
    s.marker.symbol = "none"
    s.smooth = False
    return s


def _chart(title: str, y_title: str, y_fmt: str) -> ScatterChart:
    chart = ScatterChart(scatterStyle="lineMarker")   # ECMA-376 requires c:scatterStyle (openpyxl omits it)
    chart.title = title
    chart.style = 2
    chart.x_axis.title = "Concurrency (requests in flight), log scale"
    chart.y_axis.title = y_title
    chart.x_axis.scaling.logBase = 2
    chart.x_axis.scaling.min, chart.x_axis.scaling.max = CONCURRENCIES[0], CONCURRENCIES[-1]
    chart.y_axis.scaling.min = 0
    chart.y_axis.numFmt = y_fmt
    chart.x_axis.numFmt = "#,##0"
    chart.x_axis.delete = chart.y_axis.delete = False
    chart.height, chart.width = 9, 14
    chart.legend.position = "b"
    return chart


def _band_series(ws, chart: ScatterChart, target: str, col_of: dict[str, int], rows: tuple[int, int], xs,
                 color: str) -> None:
    """The target's band as two thin dotted lines in a light shade of its colour (low and high): about 80% of new
    measurements should fall between them (the sheet's note says so)."""
    for name in BANDS.get(target, ()):
        if name not in col_of:
            continue
        side = "low" if name.endswith("_low") else "high"
        s = Series(Reference(ws, min_col=col_of[name], min_row=rows[0], max_row=rows[1]), xs,
                   title=f"Band {side} (80%)")
        s.graphicalProperties.line.solidFill = color
        s.graphicalProperties.line.dashStyle = "sysDot"
        s.graphicalProperties.line.width = 19050
        s.marker.symbol = "none"
        s.smooth = False
        chart.series.append(s)


def load_sheet(wb, ctx: Ctx) -> None:
    """Throughput and TPOT against concurrency (plan formulas), with the KV plateau and the TPOT target marked."""
    ws = ctx.new_sheet("Load", "Throughput and TPOT under load", {"A": 14}, tab="ED7D31")
    ctx.put(ws, "A3", "Each row is the plan at concurrency = column A (steady state, the Plan's batching): output "
            "tokens/s flattens where the KV cache holds no more sequences; TPOT climbs with the batch and its "
            f"prompt chunks. Dotted lines: the error {BAND_WORDS} (docs/accuracy.md).", style.NOTE)
    cols = varying_columns(TARGETS + tuple(n for pair in BANDS.values() for n in pair if n in plan.LINE_BY_NAME))
    r = 5
    ctx.put(ws, f"A{r}", "Concurrency", style.HEADER)
    for j, c in enumerate(cols):
        ctx.put(ws, f"{_col(1 + j)}{r}", plan.LINE_BY_NAME[c].label, style.HEADER)
        ws.column_dimensions[_col(1 + j)].width = 16
    r += 1
    for j, c in enumerate(cols):
        ctx.put(ws, f"{_col(1 + j)}{r}", style.shown_as(plan.LINE_BY_NAME[c].unit), style.NOTE)
    ctx.put(ws, f"A{r}", "sequences", style.NOTE)
    first = r + 1
    vals = plan.evaluate({**ctx.inputs, "concurrency": np.array(CONCURRENCIES, dtype=float)})
    where_col = {"concurrency": _col(0)} | {c: _col(1 + j) for j, c in enumerate(cols)}
    for i, b in enumerate(CONCURRENCIES):
        r = first + i
        ctx.put(ws, f"A{r}", b, style.INPUT, "#,##0")
        ref = lambda n, r=r: f"${where_col[n]}{r}" if n in where_col else xname(n)  # noqa: E731
        for c in cols:
            line = plan.LINE_BY_NAME[c]
            formula, _ = plan.render(line, ref)
            v = float(np.asarray(vals[c])[i])
            ctx.formula(ws, f"{where_col[c]}{r}", formula, v, style.FORMULA, style.number_format(line.unit, v))
    last = r
    # markers: the KV plateau (x = max_concurrency, y from 0 to the largest value) and the TPOT target (a level line)
    r = last + 2
    ctx.put(ws, f"A{r}", "Markers", style.SECTION)
    tok, tpot = where_col["tokens_per_second"], where_col["tpot_seconds"]
    kv = float(ctx.values["max_concurrency"])
    rows = {"kv_x": r + 1, "target": r + 3}
    ctx.put(ws, f"A{r + 1}", "KV plateau")
    for k in (0, 1):
        ctx.formula(ws, f"B{r + 1 + k}", Sym(xname("max_concurrency")), kv, style.FORMULA, "#,##0")
    ctx.put(ws, f"C{r + 1}", 0, None, style.number_format("tokens/s"))
    ctx.formula(ws, f"C{r + 2}", Sym(f"MAX({tok}{first}:{tok}{last})"),
                float(np.max(np.asarray(vals["tokens_per_second"]))), style.FORMULA, "#,##0")
    ctx.put(ws, f"D{r + 1}", 0, None, style.number_format("s"))
    ctx.formula(ws, f"D{r + 2}", Sym(f"MAX({tpot}{first}:{tpot}{last})"),
                float(np.max(np.asarray(vals["tpot_seconds"]))), style.FORMULA, "0.000")
    ctx.put(ws, f"E{r + 1}", "x = max_concurrency (sequences the KV budget holds); y from 0 to the largest value",
            style.NOTE)
    ctx.put(ws, f"A{r + 3}", "TPOT target")
    ctx.put(ws, f"B{r + 3}", CONCURRENCIES[0], None, "#,##0")
    ctx.put(ws, f"B{r + 4}", CONCURRENCIES[-1], None, "#,##0")
    for k in (0, 1):
        ctx.formula(ws, f"D{r + 3 + k}", Sym(xname("tpot_target")), float(ctx.values["tpot_target"]), style.FORMULA,
                    "0.000")
    ctx.put(ws, f"E{r + 3}", "y = tpot_target across the axis", style.NOTE)
    xs = Reference(ws, min_col=FIRST_COL, min_row=first, max_row=last)
    col_of = {c: FIRST_COL + 1 + j for j, c in enumerate(cols)}
    kv_rows = (rows["kv_x"], rows["kv_x"] + 1)
    throughput = _chart("Output tokens/s vs concurrency (flat: the KV cache is full, the rest queue)",
                        "Output tokens/s (one replica)", "#,##0")
    s = Series(Reference(ws, min_col=col_of["tokens_per_second"], min_row=first, max_row=last), xs,
               title=plan.LINE_BY_NAME["tokens_per_second"].label)
    s.marker.symbol = "circle"
    s.graphicalProperties.line.solidFill = "4472C4"
    s.smooth = False
    throughput.series.append(s)
    _band_series(ws, throughput, "tokens_per_second", col_of, (first, last), xs, "9DC3E6")
    throughput.series.append(_marker(ws, kv_rows, kv_rows, 2, 3, "KV-capacity plateau (max_concurrency)", "C00000"))
    latency = _chart("TPOT vs concurrency (the dashed level is the TPOT target)", "Seconds per output token",
                     "0.000")
    s = Series(Reference(ws, min_col=col_of["tpot_seconds"], min_row=first, max_row=last), xs,
               title=plan.LINE_BY_NAME["tpot_seconds"].label)
    s.marker.symbol = "circle"
    s.graphicalProperties.line.solidFill = "ED7D31"
    s.smooth = False
    latency.series.append(s)
    _band_series(ws, latency, "tpot_seconds", col_of, (first, last), xs, "F8CBAD")
    latency.series.append(_marker(ws, kv_rows, kv_rows, 2, 4, "KV-capacity plateau (max_concurrency)", "C00000"))
    t_rows = (rows["target"], rows["target"] + 1)
    latency.series.append(_marker(ws, t_rows, t_rows, 2, 4, "TPOT target", "70AD47"))
    ws.add_chart(throughput, f"A{r + 7}")
    ws.add_chart(latency, f"H{r + 7}")

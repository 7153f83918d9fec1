"""The Load sheet: the plan at every candidate concurrency, the chosen one, and throughput and TPOT charts.

Each row of its table is the plan's own lines at concurrency = the row's value (live formulas over the
Plan's named inputs, the concurrency from the row's first cell).  The rows are the candidates of
:mod:`inference_ledger.graph.concurrency`: the most the deployment holds (min of the KV plateau
``max_concurrency`` and the engine's ``max_running_sequences``), then the fixed family below it.  A row
qualifies when it meets both targets within the KV cache and the engine limit; ``concurrency_auto`` is
the largest qualifying row (a MAX over a column), which the Plan's concurrency takes while its Override is
blank, so a target, the GPU or the prompt length edited on Plan moves the chosen concurrency and the bill.
Throughput flattens where the KV cache stops admitting sequences (``effective_concurrency``) and TPOT
climbs with the batch and its prompt chunks.  Two native scatter charts plot them; a dashed vertical
line marks ``max_concurrency`` and a dashed horizontal line the ``tpot_target``; light dotted lines the error
band of throughput and TPOT (about 80% of new measurements should fall inside).  The package writer fills
every series' cache from the cells' cached values (:func:`inference_ledger.workbook.package.fill_chart_caches`).

Also :func:`binding_limit_row`, the Plan's line saying which limit binds (KV cache, max_num_seqs, TPOT
target, compute, or none).
"""

from __future__ import annotations

import numpy as np
from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.chart.data_source import StrData, StrRef, StrVal
from openpyxl.chart.text import Text
from openpyxl.chart.title import Title
from openpyxl.utils import get_column_letter

from inference_ledger.graph import concurrency as choice
from inference_ledger.graph import plan
from inference_ledger.formulas import serving
from inference_ledger.core.refs import absolute, max_of
from inference_ledger.core.sheetfuncs import concat, ge, where

from . import style
from .cells import verdict_code
from .context import Ctx

#: The lines the charts plot, the lines a candidate's test reads, and the bill at each candidate.
TARGETS = ("tokens_per_second", "tpot_seconds")
#: Each plotted line's error band (inference_ledger/graph/band_lines.py), drawn as two light dotted lines around it.
BANDS = {"tokens_per_second": ("tokens_per_second_low", "tokens_per_second_high"),
         "tpot_seconds": ("tpot_seconds_low", "tpot_seconds_high")}
BAND_WORDS = "band: about 80% of new measurements should fall inside"
COLUMNS = TARGETS + choice.TESTS + ("gpus_for_qps", "monthly_cost_qps") \
    + tuple(n for pair in BANDS.values() for n in pair if n in plan.LINE_BY_NAME)
#: The x axis of the charts: the candidate family's range.
X_RANGE = (min(choice.FAMILY), max(choice.FAMILY))
#: Rows the charts take above the table.
CHART_ROWS = 19
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
    ctx.formula(ws, f"B{r}", serving.limit_words(ctx.quantity("binding_limit")), style.FORMULA)
    ws.merge_cells(f"B{r}:C{r}")
    ctx.put_beside(ws, f"E{r}", "What caps the replica at this concurrency: the KV cache (the rest queue), the engine's "
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


#: What a chart's title says after the verdict's words when the plan does not start: no replica runs its curves.
UNSTARTED_TITLE = ": no replica runs these curves (Plan)"
#: A title read from a cell at the size of the Summary cost chart's typed title.
TITLE_POINTS = 11


def chart_title(ctx: Ctx, ws, coord: str, title: str) -> Title:
    """A chart title read from a cell that ``coord`` on ``ws`` gets: ``title`` while the plan starts (verdict >= 1),
    else the verdict's words and why the curves describe nothing; a formula, so the title follows the Plan's
    inputs, and its cached text is the title a mail preview shows."""
    ctx.formula(ws, coord, where(ge(verdict_code(ctx), 1), title, concat(ctx.name("verdict_words"), UNSTARTED_TITLE)),
                style.NOTE)
    return cell_title(ctx, ws.title, coord)


def cell_title(ctx: Ctx, sheet: str, coord: str) -> Title:
    """A chart title that reads one cell, with the cell's value as its cache (what a viewer that does not
    recalculate shows)."""
    cache = StrData(ptCount=1, pt=[StrVal(idx=0, v=str(ctx.held(sheet, coord)))])
    return Title(tx=Text(strRef=StrRef(f=absolute(sheet, coord, always_quote=True), strCache=cache)), overlay=False,
                 txPr=style.axis_text(TITLE_POINTS, bold=True))


def _chart(title: Title, y_title: str, y_fmt: str) -> ScatterChart:
    chart = ScatterChart(scatterStyle="lineMarker")   # ECMA-376 requires c:scatterStyle (openpyxl omits it)
    chart.title = title
    chart.style = 2
    chart.x_axis.title = "Concurrency (requests in flight), log scale"
    chart.y_axis.title = y_title
    chart.x_axis.scaling.logBase = 2
    chart.x_axis.scaling.min, chart.x_axis.scaling.max = X_RANGE
    chart.y_axis.scaling.min = 0
    chart.y_axis.numFmt = y_fmt
    chart.x_axis.numFmt = "#,##0"
    chart.x_axis.delete = chart.y_axis.delete = False
    chart.height, chart.width = 9, 14
    chart.legend.position = "b"
    return chart


#: The candidate table's own columns after the plan's lines: (name, label, unit, function of the row's cells).
CHOICE_COLUMNS = (
    ("holds", "Held: KV cache and engine limit", "1/0", lambda q: choice.holds(q("concurrency"), q("kv_fits"),
                                                                               q("max_running_sequences"))),
    ("meets", "Qualifies: held, both targets met", "1/0", lambda q: choice.meets(q("ttft_ok"), q("tpot_ok"),
                                                                                q("holds"))),
    ("qualifying", "Concurrency if it qualifies", "sequences", lambda q: q("concurrency") * q("meets")),
    ("tpot_alone", "Concurrency if held and TPOT met", "sequences",
     lambda q: q("concurrency") * q("tpot_ok") * q("holds")),
    ("ttft_alone", "Concurrency if held and TTFT met", "sequences",
     lambda q: q("concurrency") * q("ttft_ok") * q("holds")),
)
#: The choice over the table: (defined name, label, column whose MAX it is, function of that MAX).
CHOICE_ROWS = (
    ("concurrency_best", "Largest candidate meeting the targets (0 = none)", "qualifying", lambda m: m),
    ("concurrency_auto", "Concurrency auto (at least 1)", "qualifying", choice.chosen),
    ("concurrency_best_tpot", "Largest held candidate meeting the TPOT target", "tpot_alone", lambda m: m),
    ("concurrency_best_ttft", "Largest held candidate meeting the TTFT target", "ttft_alone", lambda m: m),
)


#: The charts' titles while the plan starts, by the label of their cell on the Load sheet (Chart titles).
CHART_TITLES = {"Throughput chart": "Output tokens/s vs concurrency (flat: the KV cache is full, the rest queue)",
                "TPOT chart": "TPOT vs concurrency (the dashed level is the TPOT target)",
                "Summary chart": "Output tokens/s and TPOT vs concurrency (log scale), one replica"}


def _line_series(ws, chart: ScatterChart, target: str, col_of: dict[str, int], rows: tuple[int, int], xs,
                 colors: tuple[str, str]) -> None:
    """The plan line ``target`` over concurrency as a line with circles in ``colors[0]``, then its band in
    ``colors[1]``."""
    s = Series(Reference(ws, min_col=col_of[target], min_row=rows[0], max_row=rows[1]), xs,
               title=plan.LINE_BY_NAME[target].label)
    s.marker.symbol = "circle"
    s.graphicalProperties.line.solidFill = colors[0]
    s.smooth = False
    chart.series.append(s)
    _band_series(ws, chart, target, col_of, rows, xs, colors[1])


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
    """The plan at every candidate concurrency (plan formulas), the choice, and throughput and TPOT charts."""
    ws = ctx.new_sheet("Load", "Candidate concurrencies: throughput, TPOT, TTFT and the bill under load",
                       {"A": 14}, tab="ED7D31")
    ctx.put(ws, "A3", "Each row is the plan at concurrency = column A (steady state, the Plan's batching): the most "
            "the deployment holds (KV cache, engine batch limit), then round(2^(k/4)) below it. The Plan runs at the "
            "largest row that qualifies unless its concurrency Override holds a number. Chart dotted lines: the error "
            f"{BAND_WORDS} (docs/accuracy.md).", style.NOTE)
    cols = varying_columns(COLUMNS)
    got = choice.choose(ctx.inputs)
    vals = dict(got["candidate_values"])
    cands = np.asarray(got["candidates"], dtype=float)
    mrs = float(ctx.values["max_running_sequences"])
    vals["concurrency"], vals["max_running_sequences"] = cands, mrs
    for name, _, _, fn in CHOICE_COLUMNS:
        vals[name] = fn(lambda n: vals[n])
    # the choice, above the table
    r = 5
    ctx.put(ws, f"A{r}", "Concurrency the plan runs at", style.SECTION)
    charts_at = r + len(CHOICE_ROWS) + 2           # the two charts between the choice and the table
    first = charts_at + CHART_ROWS + 2
    last = first + len(cands) - 1
    extra = [c[0] for c in CHOICE_COLUMNS]
    where_col = {"concurrency": _col(0)} | {c: _col(1 + j) for j, c in enumerate(cols + extra)}
    choice_top = r
    # the table (written before the choice above it: the choice reads its cells)
    r = first - 2
    ctx.put(ws, f"A{r}", "Concurrency", style.HEADER)
    labels = [plan.LINE_BY_NAME[c].label for c in cols] + [c[1] for c in CHOICE_COLUMNS]
    units = [plan.LINE_BY_NAME[c].unit for c in cols] + [c[2] for c in CHOICE_COLUMNS]
    for j, (label, unit) in enumerate(zip(labels, units)):
        ctx.put(ws, f"{_col(1 + j)}{r}", label, style.HEADER)
        ctx.put(ws, f"{_col(1 + j)}{r + 1}", style.shown_as(unit), style.NOTE)
        ws.column_dimensions[_col(1 + j)].width = 16
    ctx.put(ws, f"A{r + 1}", "sequences", style.NOTE)
    for i, b in enumerate(cands):
        r = first + i
        if i == 0:   # the most the deployment holds: live, from the Plan's KV plateau and engine limit
            ctx.formula(ws, f"A{r}", choice.cap(ctx.quantity("max_concurrency"), ctx.quantity("max_running_sequences")),
                        style.FORMULA, "#,##0")
            ctx.define("concurrency_cap", ws, f"A{r}")
        else:
            ctx.put(ws, f"A{r}", int(b), style.CONSTANT, "#,##0")
        ref = lambda n, r=r: (ctx.at(ws, f"{where_col[n]}{r}", fix="col") if n in where_col  # noqa: E731
                              else ctx.quantity(n))
        for c in cols:
            line = plan.LINE_BY_NAME[c]
            v = float(np.asarray(vals[c])[i])   # the plan over the candidates, this row's
            ctx.formula(ws, f"{where_col[c]}{r}", plan.expression(line, ref, value=v), style.FORMULA,
                        style.number_format(line.unit, v))
        for name, _, unit, fn in CHOICE_COLUMNS:
            v = float(np.asarray(vals[name])[i])
            ctx.formula(ws, f"{where_col[name]}{r}", fn(ref), style.FORMULA, style.number_format(unit, v))
    last = r
    for k, (name, label, col, fn) in enumerate(CHOICE_ROWS):
        rr = choice_top + 1 + k
        ctx.put(ws, f"A{rr}", label)
        ctx.formula(ws, f"D{rr}", fn(max_of(ctx.span(ws, f"{where_col[col]}{first}", f"{where_col[col]}{last}"))),
                    style.FORMULA, "#,##0")
        ctx.define(name, ws, f"D{rr}")
    # markers: the KV plateau (x = max_concurrency, y from 0 to the largest value) and the TPOT target (a level line)
    r = last + 2
    ctx.put(ws, f"A{r}", "Markers", style.SECTION)
    tok, tpot = where_col["tokens_per_second"], where_col["tpot_seconds"]
    rows = {"kv_x": r + 1, "target": r + 3}
    ctx.put(ws, f"A{r + 1}", "KV plateau")
    for k in (0, 1):
        ctx.formula(ws, f"B{r + 1 + k}", ctx.quantity("max_concurrency"), style.FORMULA, "#,##0")
    ctx.put(ws, f"C{r + 1}", 0, None, style.number_format("tokens/s"))
    ctx.formula(ws, f"C{r + 2}", max_of(ctx.span(ws, f"{tok}{first}", f"{tok}{last}")), style.FORMULA, "#,##0")
    ctx.put(ws, f"D{r + 1}", 0, None, style.number_format("s"))
    ctx.formula(ws, f"D{r + 2}", max_of(ctx.span(ws, f"{tpot}{first}", f"{tpot}{last}")), style.FORMULA, "0.000")
    ctx.put(ws, f"E{r + 1}", "x = max_concurrency (sequences the KV budget holds); y from 0 to the largest value",
            style.NOTE)
    ctx.put(ws, f"A{r + 3}", "TPOT target")
    ctx.put(ws, f"B{r + 3}", X_RANGE[0], None, "#,##0")
    ctx.put(ws, f"B{r + 4}", X_RANGE[1], None, "#,##0")
    for k in (0, 1):
        ctx.formula(ws, f"D{r + 3 + k}", ctx.quantity("tpot_target"), style.FORMULA, "0.000")
    ctx.put(ws, f"E{r + 3}", "y = tpot_target across the axis", style.NOTE)
    ctx.put(ws, f"A{r + 6}", "Chart titles", style.SECTION)
    titles = {}
    for j, (label, t) in enumerate(CHART_TITLES.items()):
        ctx.put(ws, f"A{r + 7 + j}", label)
        titles[label] = chart_title(ctx, ws, f"B{r + 7 + j}", t)
    xs = Reference(ws, min_col=FIRST_COL, min_row=first, max_row=last)
    col_of = {c: FIRST_COL + 1 + j for j, c in enumerate(cols)}
    kv_rows = (rows["kv_x"], rows["kv_x"] + 1)
    throughput = _chart(titles["Throughput chart"], "Output tokens/s (one replica)", "#,##0")
    _line_series(ws, throughput, "tokens_per_second", col_of, (first, last), xs, ("4472C4", "9DC3E6"))
    throughput.series.append(_marker(ws, kv_rows, kv_rows, 2, 3, "KV-capacity plateau (max_concurrency)", "C00000"))
    latency = _chart(titles["TPOT chart"], "Seconds per output token", "0.000")
    _line_series(ws, latency, "tpot_seconds", col_of, (first, last), xs, ("ED7D31", "F8CBAD"))
    latency.series.append(_marker(ws, kv_rows, kv_rows, 2, 4, "KV-capacity plateau (max_concurrency)", "C00000"))
    t_rows = (rows["target"], rows["target"] + 1)
    latency.series.append(_marker(ws, t_rows, t_rows, 2, 4, "TPOT target", "70AD47"))
    ws.add_chart(throughput, f"A{charts_at}")
    ws.add_chart(latency, f"H{charts_at}")

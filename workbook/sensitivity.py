"""The Sensitivity sheet: what drives the cost and the GPU count, as a grid and two tornado charts.

Each key input (``KEY_INPUTS``) is moved down and up by ``sensitivity_step`` (an input
cell, 20% by default), one grid column per case.  A case column holds the moved input
and, one row each, the plan lines the outputs need that depend on it, each rendered by
:func:`inference_ledger.graph.plan.render` with the moved input and the column's own lines as cell
references (every other quantity is the Plan's defined name).  So no cell re-evaluates
the plan: each is one plan line, and a line the input does not touch is not repeated.

The outputs: the cheapest $ per million output tokens (``best_cost_per_million_output_tokens``),
the GPUs for today's target QPS (``gpus_for_qps``) and the GPUs needed in the last month
of the Forecast (target QPS grown over the horizon, plus the headroom).  The swing of an
input is |output at +step - output at -step|; a rank (SUMPRODUCT counts of larger
swings, ties broken by row order) sorts them for the tornado charts with INDEX/MATCH.
"""

from __future__ import annotations

from typing import Any

from openpyxl.chart import BarChart, Reference, Series
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.pagebreak import Break

from inference_ledger.formulas import finance_forecast
from inference_ledger.graph import plan
from inference_ledger.core.expr import Sym
from inference_ledger.core.sheetfuncs import abs_
from inference_ledger.core.refs import index, match

from . import style
from .cells import line_expression
from .context import Ctx
from .printing import chart_box, last_row_under

SHEET = "Sensitivity"
#: The key inputs, the step and the outputs (the library's: plan --json has the same grid).
KEY_INPUTS, STEP = finance_forecast.SENSITIVITY_INPUTS, finance_forecast.SENSITIVITY_STEP
#: (key, label, unit) of the outputs; the first and the last get a tornado chart.
OUTPUTS = finance_forecast.SENSITIVITY_OUTPUTS
TORNADO = ("best_cost_per_million_output_tokens", "gpus_at_horizon")
FIRST_CASE_COL = 4  # D; C holds the base case


def _closure(names) -> list[str]:
    """Plan lines the named lines need (themselves included), in plan order."""
    need: set[str] = set()
    todo = [n for n in names if n in plan.LINE_BY_NAME]
    while todo:
        n = todo.pop()
        if n in need:
            continue
        need.add(n)
        todo += [d for d in plan.dependencies(n) if d in plan.LINE_BY_NAME]
    return [l.name for l in plan.LINES if l.name in need]


def grid_lines() -> list[str]:
    """The lines a case column may recompute: those the outputs need that depend on some key input."""
    return [n for n in _closure(["best_cost_per_million_output_tokens", "gpus_for_qps", "qps_per_replica"])
            if any(plan.depends_on(n, k) for k in KEY_INPUTS)]


def case_values(values: dict, name: str, factor: float, months: int) -> dict[str, Any]:
    """The plan's lines with one input multiplied by factor (inference_ledger.finance_forecast.sensitivity_case)."""
    v = finance_forecast.sensitivity_case(values, plan.evaluate, [i.name for i in plan.INPUTS], name, factor)
    return {"lines": {n: _num(v[n]) for n in grid_lines()}}


def _num(v):
    return v.item() if hasattr(v, "item") else v


def add_sensitivity_sheet(wb, ctx: Ctx) -> None:
    """Add the Sensitivity sheet (a workbook sheet builder)."""
    n = ctx.forecast_months
    # a fleet's figures (cost, GPUs): a plan that does not fit says no fleet runs them, as the Cost sheet does
    ws = ctx.new_sheet(SHEET, ctx.fleet_title("Sensitivity: what drives cost and GPUs"), {"A": 44, "B": 12, "C": 13},
                       tab="C00000")
    ctx.put(ws, "A3", "Each key input moved down and up by the step, one column per case; each row below the moved "
            "input is one plan line recomputed in that column (only the lines the input changes). The swings are "
            "ranked for the tornado charts.", style.NOTE)
    ws.merge_cells("A3:Q3")
    ctx.put(ws, "A5", "Step (+/-)")
    ctx.put(ws, "B5", STEP, style.INPUT, "0%")
    ctx.define("sensitivity_step", ws, "B5")
    ctx.put_beside(ws, "C5", "Each key input is multiplied by (1 - step) and (1 + step).", style.NOTE)
    ws.merge_cells("C5:J5")
    lines = grid_lines()
    head, moved_row = 7, 8
    row_of = {name: moved_row + 1 + k for k, name in enumerate(lines)}
    out_row = {k: moved_row + len(lines) + 2 + j for j, (k, _l, _u) in enumerate(OUTPUTS)}
    cases = [(name, sign) for name in KEY_INPUTS for sign in (-1, 1)]
    ctx.put(ws, f"A{head}", "Case", style.HEADER)
    ctx.put(ws, f"B{head}", "Unit", style.HEADER)
    ctx.put(ws, f"C{head}", "Base (Plan)", style.HEADER)
    ctx.put(ws, f"A{moved_row}", "Input moved (its value in the case)")
    for name in lines:
        q = plan.LINE_BY_NAME[name]
        ctx.put(ws, f"A{row_of[name]}", q.label)
        ctx.put(ws, f"B{row_of[name]}", style.shown_as(q.unit), style.NOTE)
        v = _num(ctx.values[name])
        ctx.formula(ws, f"C{row_of[name]}", ctx.quantity(name), style.FORMULA, style.number_format(q.unit, v))
    ctx.put(ws, f"A{out_row[OUTPUTS[0][0]] - 1}", "Outputs", style.SECTION)
    months = ctx.name("forecast_months", n)
    for k, label, unit in OUTPUTS:
        ctx.put(ws, f"A{out_row[k]}", label)
        ctx.put(ws, f"B{out_row[k]}", style.shown_as(unit), style.NOTE)
        ctx.formula(ws, f"C{out_row[k]}", _output(k, ctx.quantity, months), style.FORMULA, style.number_format(unit))
    for j, (name, sign) in enumerate(cases):
        c = get_column_letter(FIRST_CASE_COL + j)
        ws.column_dimensions[c].width = 13
        label = f"{plan.INPUT_BY_NAME[name].label} {'-' if sign < 0 else '+'}step"
        ctx.put(ws, f"{c}{head}", label, style.HEADER)
        vals = case_values(ctx.values, name, 1 + sign * STEP, n)
        step = ctx.name("sensitivity_step")
        unit = plan.INPUT_BY_NAME[name].unit
        ctx.formula(ws, f"{c}{moved_row}", ctx.quantity(name) * (1 + step if sign > 0 else 1 - step),
                    style.FORMULA, style.number_format(unit))
        own = {ln for ln in lines if plan.depends_on(ln, name)}

        def ref(q: str, c=c, own=own, name=name) -> Sym:
            if q == name:
                return ctx.at(ws, f"{c}{moved_row}")
            return ctx.at(ws, f"{c}{row_of[q]}") if q in own else ctx.quantity(q)

        for ln in lines:   # in evaluation order: a line reads the case's lines above it
            coord = f"{c}{row_of[ln]}"
            if ln in own:
                v = vals["lines"][ln]   # the plan with the input moved
                ctx.formula(ws, coord, line_expression(ctx, ln, ref, vals["lines"]), style.FORMULA,
                            style.number_format(plan.LINE_BY_NAME[ln].unit, v))
        for k, _label, unit in OUTPUTS:
            ctx.formula(ws, f"{c}{out_row[k]}", _output(k, ref, months), style.FORMULA, style.number_format(unit))
    # printed: each tornado's tables and chart start a page (its chart under its tables, in the first page's
    # columns), so no chart is cut by a page's edge
    r = max(out_row.values()) + 3
    for k, label, unit in OUTPUTS:
        if k in TORNADO:
            ws.row_breaks.append(Break(id=r - 1))
            r = _tornado(ctx, ws, r, k, label, unit, out_row[k]) + 3


class _ByName:
    """A reference function as a mapping (the formula side of finance_forecast.sensitivity_outputs)."""

    def __init__(self, ref):
        self._ref = ref

    def __getitem__(self, name: str) -> Sym:
        return self._ref(name)


def _output(key: str, ref, months: Sym) -> Sym:
    """An output's formula with quantities from ref (a name -> Sym): the library's outputs of the grid."""
    return finance_forecast.sensitivity_outputs(_ByName(ref), months)[key]


def _tornado(ctx: Ctx, ws, r: int, key: str, label: str, unit: str, out_row: int) -> int:
    """Swings of one output, their rank, the sorted table and the tornado chart; returns the last row used."""
    ctx.put(ws, f"A{r}", f"Swings: {label}", style.SECTION)
    r += 1
    for k, h in enumerate(("Input", "Output at -step", "Output at +step", "Swing |+ - -|", "Rank")):
        ctx.put(ws, f"{get_column_letter(1 + k)}{r}", h, style.HEADER)
    first = r + 1
    last = first + len(KEY_INPUTS) - 1
    fmt = style.number_format(unit)
    for i, name in enumerate(KEY_INPUTS):
        rr = first + i
        lo_col = get_column_letter(FIRST_CASE_COL + 2 * i)
        hi_col = get_column_letter(FIRST_CASE_COL + 2 * i + 1)
        ctx.put(ws, f"A{rr}", plan.INPUT_BY_NAME[name].label)
        ctx.formula(ws, f"B{rr}", ctx.at(ws, f"{lo_col}{out_row}"), style.FORMULA, fmt)
        ctx.formula(ws, f"C{rr}", ctx.at(ws, f"{hi_col}{out_row}"), style.FORMULA, fmt)
        ctx.formula(ws, f"D{rr}", abs_(ctx.at(ws, f"C{rr}") - ctx.at(ws, f"B{rr}")), style.FORMULA, fmt)
    for i in range(len(KEY_INPUTS)):
        rr = first + i
        # the rank: swings above this one, plus the equal ones up to it (ties in sheet order)
        rank = finance_forecast.swing_rank(ctx.span(ws, f"D{first}", f"D{last}", fix="both"),
                                  ctx.span(ws, f"D{first}", f"D{rr}", fix="both", fix_last=""), ctx.at(ws, f"D{rr}"))
        ctx.formula(ws, f"E{rr}", rank, style.FORMULA, "0")
    # sorted for the chart: largest swing first (rank k found with INDEX/MATCH)
    r = last + 2
    for k, h in enumerate(("Input (sorted by swing)", "Change at -step", "Change at +step", "Rank")):
        ctx.put(ws, f"{get_column_letter(1 + k)}{r}", h, style.HEADER)
    top = r
    ctx.put(ws, f"E{r}", "Base", style.HEADER)
    ctx.formula(ws, f"F{r}", ctx.at(ws, f"C{out_row}"), style.FORMULA, fmt)
    base = ctx.at(ws, f"F{top}", fix="both")
    col = lambda c: ctx.span(ws, f"{c}{first}", f"{c}{last}", fix="both")  # noqa: E731
    for k in range(1, len(KEY_INPUTS) + 1):
        r += 1
        ctx.put(ws, f"D{r}", k, style.CONSTANT, "0")
        pos = match(ctx.at(ws, f"D{r}", fix="col"), col("E"))
        ctx.formula(ws, f"A{r}", index(col("A"), pos), style.FORMULA)
        ctx.formula(ws, f"B{r}", index(col("B"), pos) - base, style.FORMULA, fmt)
        ctx.formula(ws, f"C{r}", index(col("C"), pos) - base, style.FORMULA, fmt)
    chart = BarChart()
    chart.type, chart.grouping, chart.overlap = "bar", "clustered", 100
    chart.title = f"Tornado: {label}"
    chart.y_axis.title = "change from the base"
    for col, title, color in ((2, "Input - step", "4472C4"), (3, "Input + step", "ED7D31")):
        s = Series(Reference(ws, min_col=col, min_row=top + 1, max_row=r), title=title)
        s.graphicalProperties.solidFill = color
        chart.series.append(s)
    chart.set_categories(Reference(ws, min_col=1, min_row=top + 1, max_row=r))
    chart.x_axis.scaling.orientation = "maxMin"
    chart.x_axis.tickLblPos = "low"  # the input names at the left edge, clear of the bars
    chart.y_axis.numFmt = fmt
    chart.height, chart.width = 8, 14
    chart.legend.position = "b"
    chart.x_axis.delete = chart.y_axis.delete = False
    # under its sorted table: beside the tables (column H) it crossed the first page's edge and printed half on
    # each page
    chart.anchor = f"A{r + 2}"
    ws.add_chart(chart)
    return last_row_under(ws, chart_box(ws, chart)[3])

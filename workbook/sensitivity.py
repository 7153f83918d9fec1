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

from inference_ledger.formulas import finance
from inference_ledger.graph import plan
from inference_ledger.core.expr import Sym, abs_

from . import style
from .context import Ctx, xname

SHEET = "Sensitivity"
KEY_INPUTS = ("bw_efficiency", "output_tokens", "input_tokens", "concurrency", "price_per_gpu_hour", "utilization",
              "growth")
STEP = 0.2
#: (key, label, unit) of the outputs; the first and the last get a tornado chart.
OUTPUTS = (("best_cost_per_million_output_tokens", "Cheapest $/Mtok", "$/Mtok"),
           ("gpus_for_qps", "GPUs for the target QPS", "GPUs"),
           ("gpus_at_horizon", "GPUs needed in the last forecast month", "GPUs"))
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


def horizon_gpus(target_qps, growth, months, headroom, qps_per_replica, gpus_per_replica):
    """GPUs needed in the last month of the forecast (the Forecast sheet's formula, at its last month)."""
    return finance.gpus_for_load(finance.grown(target_qps, growth, months), headroom, qps_per_replica,
                                 gpus_per_replica)


def case_values(values: dict, name: str, factor: float, months: int) -> dict[str, Any]:
    """The outputs with one input multiplied by factor (the plan re-evaluated in Python)."""
    inputs = {i.name: values[i.name] for i in plan.INPUTS}
    inputs[name] = values[name] * factor
    v = plan.evaluate(inputs, validate=False)
    out = {k: _num(v[k]) for k, _l, _u in OUTPUTS if k in v}
    out["gpus_at_horizon"] = _num(horizon_gpus(v["target_qps"], v["growth"], months, v["headroom_target"],
                                               v["qps_per_replica"], v["gpus_per_replica"]))
    out["moved"] = inputs[name]
    out["lines"] = {n: _num(v[n]) for n in grid_lines()}
    return out


def _num(v):
    return v.item() if hasattr(v, "item") else v


def add_sensitivity_sheet(wb, ctx: Ctx) -> None:
    """Add the Sensitivity sheet (a workbook sheet builder)."""
    n = ctx.forecast_months
    ws = ctx.new_sheet(SHEET, "Sensitivity: what drives the cost and the GPU count", {"A": 44, "B": 12, "C": 13},
                       tab="C00000")
    ctx.put(ws, "A3", "Each key input moved down and up by the step, one column per case; each row below the moved "
            "input is one plan line recomputed in that column (only the lines the input changes). The swings are "
            "ranked for the tornado charts.", style.NOTE)
    ws.merge_cells("A3:Q3")
    ctx.put(ws, "A5", "Step (+/-)")
    ctx.put(ws, "B5", STEP, style.INPUT, "0%")
    ctx.define("sensitivity_step", ws, "B5")
    ctx.put(ws, "C5", "Each key input is multiplied by (1 - step) and (1 + step).", style.NOTE)
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
        ctx.formula(ws, f"C{row_of[name]}", Sym(xname(name)), v, style.FORMULA, style.number_format(q.unit, v))
    ctx.put(ws, f"A{out_row[OUTPUTS[0][0]] - 1}", "Outputs", style.SECTION)
    base = {k: _num(ctx.values[k]) for k, _l, _u in OUTPUTS if k in ctx.values}
    base["gpus_at_horizon"] = _num(horizon_gpus(*(ctx.values[k] for k in ("target_qps", "growth")), n,
                                                *(ctx.values[k] for k in ("headroom_target", "qps_per_replica",
                                                                           "gpus_per_replica"))))
    for k, label, unit in OUTPUTS:
        ctx.put(ws, f"A{out_row[k]}", label)
        ctx.put(ws, f"B{out_row[k]}", style.shown_as(unit), style.NOTE)
        expr = _output(k, lambda q: Sym(xname(q)))
        ctx.formula(ws, f"C{out_row[k]}", expr, base[k], style.FORMULA, style.number_format(unit))
    results: dict[tuple[str, int], dict] = {}
    for j, (name, sign) in enumerate(cases):
        c = get_column_letter(FIRST_CASE_COL + j)
        ws.column_dimensions[c].width = 13
        label = f"{plan.INPUT_BY_NAME[name].label} {'-' if sign < 0 else '+'}step"
        ctx.put(ws, f"{c}{head}", label, style.HEADER)
        vals = case_values(ctx.values, name, 1 + sign * STEP, n)
        results[(name, sign)] = vals
        step = Sym("sensitivity_step")
        unit = plan.INPUT_BY_NAME[name].unit
        ctx.formula(ws, f"{c}{moved_row}", Sym(xname(name)) * (1 + step if sign > 0 else 1 - step), vals["moved"],
                    style.FORMULA, style.number_format(unit))
        own = {ln for ln in lines if plan.depends_on(ln, name)}

        def ref(q: str, c=c, own=own, name=name) -> str:
            if q == name:
                return f"{c}{moved_row}"
            return f"{c}{row_of[q]}" if q in own else xname(q)

        for ln in lines:
            coord = f"{c}{row_of[ln]}"
            if ln in own:
                formula, _ = plan.render(ln, ref)
                v = vals["lines"][ln]
                ctx.formula(ws, coord, formula, v, style.FORMULA, style.number_format(plan.LINE_BY_NAME[ln].unit, v))
        for k, _label, unit in OUTPUTS:
            ctx.formula(ws, f"{c}{out_row[k]}", _output(k, lambda q: Sym(ref(q))), vals[k], style.FORMULA,
                        style.number_format(unit))
    r = max(out_row.values()) + 3
    for k, label, unit in OUTPUTS:
        if k in TORNADO:
            r = _tornado(ctx, ws, r, k, label, unit, out_row[k], base[k], results) + 3


def _output(key: str, ref) -> Sym:
    """An output's formula with quantities from ref (a name -> Sym)."""
    if key == "gpus_at_horizon":
        return horizon_gpus(ref("target_qps"), ref("growth"), Sym("forecast_months"), ref("headroom_target"),
                            ref("qps_per_replica"), ref("gpus_per_replica"))
    return ref(key)


def _tornado(ctx: Ctx, ws, r: int, key: str, label: str, unit: str, out_row: int, base: float, results) -> int:
    """Swings of one output, their rank, the sorted table and the tornado chart; returns the last row used."""
    ctx.put(ws, f"A{r}", f"Swings: {label}", style.SECTION)
    r += 1
    for k, h in enumerate(("Input", "Output at -step", "Output at +step", "Swing |+ - -|", "Rank")):
        ctx.put(ws, f"{get_column_letter(1 + k)}{r}", h, style.HEADER)
    first = r + 1
    last = first + len(KEY_INPUTS) - 1
    fmt = style.number_format(unit)
    swings = []
    for i, name in enumerate(KEY_INPUTS):
        rr = first + i
        lo_col = get_column_letter(FIRST_CASE_COL + 2 * i)
        hi_col = get_column_letter(FIRST_CASE_COL + 2 * i + 1)
        lo, hi = results[(name, -1)][key], results[(name, 1)][key]
        ctx.put(ws, f"A{rr}", plan.INPUT_BY_NAME[name].label)
        ctx.formula(ws, f"B{rr}", Sym(f"{lo_col}{out_row}"), lo, style.FORMULA, fmt)
        ctx.formula(ws, f"C{rr}", Sym(f"{hi_col}{out_row}"), hi, style.FORMULA, fmt)
        ctx.formula(ws, f"D{rr}", abs_(Sym(f"C{rr}") - Sym(f"B{rr}")), abs(hi - lo), style.FORMULA, fmt)
        swings.append(abs(hi - lo))
    ranks = []
    for i in range(len(KEY_INPUTS)):
        rr = first + i
        rank = sum(s > swings[i] for s in swings) + sum(s == swings[i] for s in swings[:i + 1])
        ranks.append(rank)
        expr = Sym(f"SUMPRODUCT(($D${first}:$D${last}>D{rr})*1)+SUMPRODUCT(($D${first}:D{rr}=D{rr})*1)")
        ctx.formula(ws, f"E{rr}", expr, rank, style.FORMULA, "0")
    # sorted for the chart: largest swing first (rank k found with INDEX/MATCH)
    r = last + 2
    for k, h in enumerate(("Input (sorted by swing)", "Change at -step", "Change at +step", "Rank")):
        ctx.put(ws, f"{get_column_letter(1 + k)}{r}", h, style.HEADER)
    top = r
    ctx.put(ws, f"E{r}", "Base", style.HEADER)
    ctx.formula(ws, f"F{r}", Sym(f"C{out_row}"), base, style.FORMULA, fmt)
    base_ref = f"$F${top}"
    for k in range(1, len(KEY_INPUTS) + 1):
        r += 1
        i = ranks.index(k)
        name = KEY_INPUTS[i]
        ctx.put(ws, f"D{r}", k, style.CONSTANT, "0")
        pos = f"MATCH($D{r},$E${first}:$E${last},0)"
        ctx.formula(ws, f"A{r}", Sym(f"INDEX($A${first}:$A${last},{pos})"), plan.INPUT_BY_NAME[name].label, style.FORMULA)
        ctx.formula(ws, f"B{r}", Sym(f"INDEX($B${first}:$B${last},{pos})-{base_ref}"),
                    results[(name, -1)][key] - base, style.FORMULA, fmt)
        ctx.formula(ws, f"C{r}", Sym(f"INDEX($C${first}:$C${last},{pos})-{base_ref}"),
                    results[(name, 1)][key] - base, style.FORMULA, fmt)
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
    ws.add_chart(chart, f"H{top - len(KEY_INPUTS) - 2}")
    return r

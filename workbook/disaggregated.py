"""The Disaggregated sheet: a prefill pool and a decode pool, each with its own layout, as live formulas.

Each pool is the plan itself, written again for that pool: every line that depends on the layout
(``tp``, ``pp``, ``ep``, ``dp_attention``) or the batch (``concurrency``) is rendered by
:func:`inference_ledger.graph.plan.render` with those names pointing at this sheet's column and every other
name at the Plan sheet, so the formulas are the plan's own (one definition).  Three columns:

* **Prefill pool**: one prompt per DP-attention rank (concurrency = dp_attention);
* **Decode pool, batch 1**: gives the largest batch that fits and meets the TPOT target (serving_concurrency);
* **Decode pool at that batch**: the pool's TPOT and throughput.

Below them, :mod:`inference_ledger.graph.disaggregated`'s formulas: KV transfer, requests per second per instance,
instances for the target QPS (xPyD), GPUs, TTFT and the monthly bill.  The layout cells start at the Plan's layout.
"""

from __future__ import annotations

from typing import Any

from inference_ledger.graph import disaggregated, plan
from inference_ledger.core.refs import cell
from inference_ledger.core.expr import Sym
from inference_ledger.core.sheetfuncs import maximum

from . import style
from .cells import line_expression, unit_text
from .context import Ctx

LAYOUT = disaggregated.POOL_LAYOUT
LOCAL = (*LAYOUT, "batching", "concurrency")
COLUMNS = {"prefill": "B", "decode1": "C", "decode": "D"}
FIRST = 7


def _closure() -> list[plan.Line]:
    """The lines that depend, directly or not, on the layout or the batch, in evaluation order."""
    hit, out = set(LOCAL), []
    for line in plan.EVALUATION_ORDER:
        if any(p in hit for p in line.params):
            hit.add(line.name)
            out.append(line)
    return out


def _num(v: Any) -> float:
    return float(v.item() if hasattr(v, "item") else v)


def disaggregated_sheet(wb, ctx: Ctx) -> None:
    ws = ctx.new_sheet("Disaggregated", "Disaggregated prefill and decode pools (xPyD)",
                       {"A": 44, "B": 18, "C": 18, "D": 18, "E": 12, "F": 36}, tab="70AD47")
    ctx.put(ws, "A3", "Yellow cells are each pool's layout (they start at the Plan's). Every other row is a plan line "
            "for that pool: its formula is the Plan's, reading this column for the layout and the batch and the "
            "Plan sheet for everything else. Totals at the bottom.", style.NOTE)
    ws.merge_cells("A3:F3")
    for col, head in zip("ABCDEF", ["Quantity", "Prefill pool", "Decode pool, batch 1", "Decode pool at serving batch",
                                    "Unit", "Name"]):
        ctx.put(ws, f"{col}5", head, style.HEADER)
    lines = _closure()
    row = {n: FIRST + k for k, n in enumerate(LOCAL)}
    row |= {l.name: FIRST + len(LOCAL) + k for k, l in enumerate(lines)}

    # the values Python computes for each column: the Plan's inputs with this column's layout and batch
    layout = {k: ctx.inputs[k] for k in LAYOUT}
    pre, dec = {"batching": disaggregated.PREFILL_BATCHING}, {"batching": disaggregated.DECODE_BATCHING}
    p_in = dict(ctx.inputs) | layout | pre | {"concurrency": layout["dp_attention"]}
    d1_in = dict(ctx.inputs) | layout | dec | {"concurrency": 1}
    d1 = plan.evaluate(d1_in, validate=False)
    # at least one sequence, as inference_ledger.graph.disaggregated.decode_pool sizes it (a pool that holds none does
    # not fit: its verdict says so, and the totals stay finite)
    d_in = dict(ctx.inputs) | layout | dec | {"concurrency": maximum(d1["serving_concurrency"], 1)}
    values = {"prefill": plan.evaluate(p_in, validate=False), "decode1": d1, "decode": plan.evaluate(d_in, validate=False)}

    for key, col in COLUMNS.items():
        def ref(name: str, col=col) -> Sym:
            return ctx.at(ws, f"{col}{row[name]}") if name in row else ctx.quantity(name)
        for name in LAYOUT:
            coord = f"{col}{row[name]}"
            if key == "decode":       # the same layout as the batch-1 column
                ctx.formula(ws, coord, ctx.at(ws, f"C{row[name]}"), style.FORMULA, "0")
            else:
                ctx.put(ws, coord, int(layout[name]), style.INPUT, "0")
        coord = f"{col}{row['batching']}"      # prefill as prompts arrive; decode steps carry no prompt chunks
        ctx.put(ws, coord, int(values[key]["batching"]), style.CONSTANT, "0")
        batch = {"prefill": lambda: ctx.at(ws, f"B{row['dp_attention']}"), "decode1": None,
                 "decode": lambda: maximum(ctx.at(ws, f"C{row['serving_concurrency']}"), 1)}[key]
        coord = f"{col}{row['concurrency']}"
        if batch is None:
            ctx.put(ws, coord, 1, style.CONSTANT, "0")
        else:
            ctx.formula(ws, coord, batch(), style.FORMULA, "0")
        for line in lines:
            ctx.formula(ws, f"{col}{row[line.name]}", line_expression(ctx, line, ref, values[key]), style.FORMULA,
                        style.number_format(line.unit, _num(values[key][line.name])))
    for name in LOCAL:
        inp = plan.INPUT_BY_NAME[name]
        ctx.put(ws, f"A{row[name]}", inp.label)
        ctx.put_beside(ws, f"E{row[name]}", unit_text(inp.unit, ws[f"B{row[name]}"].number_format))
        ctx.put(ws, f"F{row[name]}", name, style.NOTE)
    for line in lines:
        ctx.put(ws, f"A{row[line.name]}", line.label)
        fmts = [ws[f"{c}{row[line.name]}"].number_format for c in "BCD"]
        shown_units = {unit_text(line.unit, f) for f in fmts}   # units once: blank when a column's format says it
        ctx.put_beside(ws, f"E{row[line.name]}", "" if "" in shown_units else unit_text(line.unit, fmts[0]))
        ctx.put(ws, f"F{row[line.name]}", line.name, style.NOTE)
    _totals(ctx, ws, FIRST + len(row) + 1, row, values)
    ws.freeze_panes = "B6"


def _totals(ctx: Ctx, ws, r: int, row: dict[str, int], values: dict[str, dict[str, Any]]) -> None:
    """KV transfer, pool sizes, GPUs, TTFT and cost: :func:`inference_ledger.graph.disaggregated.totals` over the
    columns."""
    ctx.put(ws, f"A{r}", "Both pools", style.SECTION)
    p, d1, d = values["prefill"], values["decode1"], values["decode"]
    numbers = disaggregated.totals(p.__getitem__, d1.__getitem__, d.__getitem__, d.__getitem__)
    own = {name: r + k for k, name in enumerate(numbers, start=1)}

    def column(col: str):
        return lambda name: ctx.at(ws, f"{col}{row[name]}") if name in row else ctx.quantity(name)

    # a total that reads another total reads its cell (carrying the value the same totals give it)
    formulas = disaggregated.totals(column("B"), column("C"), column("D"), ctx.quantity,
                                    cell=lambda name: cell(f"B{own[name]}", _num(numbers[name].value)))
    for name, (label, unit, formula) in formulas.items():
        k, v = own[name], _num(numbers[name].value)
        ctx.put(ws, f"A{k}", label)
        ctx.formula(ws, f"B{k}", formula, style.FORMULA, style.number_format(unit, v))
        ctx.put_beside(ws, f"E{k}", unit_text(unit, ws[f"B{k}"].number_format))   # units once
        ctx.put(ws, f"F{k}", name, style.NOTE)
        ctx.define(name, ws, f"B{k}")

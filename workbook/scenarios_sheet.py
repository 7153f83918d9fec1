"""The Scenarios sheet: the what-if grid, one scenario per row, every column a live formula.

The rows themselves (the defaults and a user's CSV) come from :mod:`workbook.scenarios`.
"""

from __future__ import annotations

from openpyxl.styles import Alignment, Font
from openpyxl.utils import get_column_letter

from inference_ledger import plan, resolve, verdict
from inference_ledger.expr import Sym

from . import style
from .cells import (SELECTOR_NAMES, bars, flag_rules, list_validation, named, py_value, quantity_format, shown,
                    verdict_rules)
from .context import Ctx
from .scenarios import Scenario
from .tables import SELECTORS, lookup


def scenario_inputs(ctx: Ctx, sc: Scenario) -> tuple[dict[str, str], dict[str, float], set[str]]:
    """(choices, inputs, names whose value is the row's own) of one scenario row, through the resolver.

    A row's own values: what the scenario sets, and the engine's defaults for the row's
    GPU and TP (unless the build was given that number).  Catalog inputs are lookups;
    everything else follows the Plan sheet.
    """
    follow = {k: v for k, v in ctx.inputs.items()
              if k not in resolve.FROM_CATALOG and (k not in ctx.engine_inputs or k in ctx.explicit)}
    try:
        r = resolve.resolve(sc.model, sc.gpu, weight_dtype=sc.weight_dtype or None, kv_dtype=sc.kv_dtype or "bf16",
                            engine=ctx.engine, extra_models=ctx.tables["Models"].rows, numbers=follow | sc.inputs)
    except resolve.ChoiceError as e:
        raise resolve.ChoiceError(e.option, f"scenario {sc.label!r}: {e}") from None
    choice = {"model": r.model.id, "gpu": r.gpu.id, "weight_dtype": r.weight_dtype, "kv_dtype": r.kv_dtype}
    own = set(sc.inputs) | {n for n in ctx.engine_inputs if n not in ctx.explicit}
    return choice, dict(r.inputs), own


#: Results the Scenarios grid repeats right after each row's choices (the printed part).
SCENARIO_KEY = ("total_bytes_per_gpu", "usable_bytes_per_gpu", "headroom_bytes_per_gpu", "gpus_needed",
                "max_concurrency", "ttft_seconds", "tpot_seconds", "tokens_per_second_per_gpu",
                "cost_per_million_output_tokens", "kv_fits", "ttft_ok", "tpot_ok")


def scenarios_sheet(wb, ctx: Ctx) -> None:
    ws = ctx.new_sheet("Scenarios", "Scenarios: what-if grid", {"A": 40, "B": 20}, tab="70AD47")
    ctx.put(ws, "A3", "One scenario per row. Add one by copying the last row down, then change its yellow cells. "
            "Inputs a row does not set follow the Plan sheet (=name formulas); green cells are catalog lookups. "
            "Key results come first; every input and ledger line follows to the right.", style.NOTE)
    ws.merge_cells("A3:R3")
    group_row, label_row, unit_row, name_row, first = 5, 6, 7, 8, 9
    sel_cols = ["C", "D", "E", "F"]
    rows = [scenario_inputs(ctx, sc) for sc in ctx.scenarios]
    set_by_rows = [i.name for i in plan.INPUTS if any(i.name in own for _, _, own in rows)]
    scenario_set = [n for n in set_by_rows if any(n in sc.inputs for sc in ctx.scenarios)]
    engine_set = [n for n in set_by_rows if n not in scenario_set]
    key = [n for n in SCENARIO_KEY if n in plan.LINE_BY_NAME]
    order = scenario_set + ["key:" + n for n in key] + engine_set + \
        [i.name for i in plan.INPUTS if i.name not in set_by_rows] + [l.name for l in plan.LINES]
    cols = {name: get_column_letter(7 + k) for k, name in enumerate(order)}
    last_col = 6 + len(order)
    key_first, key_last = cols["key:" + key[0]], cols["key:" + key[-1]]
    # headers
    quantity = lambda n: plan.LINE_BY_NAME.get(n) or plan.INPUT_BY_NAME[n]  # noqa: E731
    heads = [("A", "Scenario", "", ""), ("B", "Verdict", "", "")]
    heads += [(col, label, "id", SELECTOR_NAMES[k]) for col, (k, label, _) in zip(sel_cols, SELECTORS)]
    for name in order:
        q = quantity(name.removeprefix("key:"))
        heads.append((cols[name], q.label, shown(q.unit, py_value(ctx.values[q.name])), q.name))
    for col, label, unit, name in heads:
        ctx.put(ws, f"{col}{label_row}", label, style.HEADER)
        ctx.put(ws, f"{col}{unit_row}", unit, style.NOTE).alignment = Alignment(wrap_text=False)
        c = ctx.put(ws, f"{col}{name_row}", name, style.NOTE)
        c.alignment, c.font = Alignment(wrap_text=False, shrink_to_fit=True), Font(size=7, color="808080")
    ws.row_dimensions[label_row].height = 54
    ctx.put(ws, f"A{group_row}", "Scenario", style.SECTION)
    ctx.put(ws, f"C{group_row}", "Choices", style.SECTION)
    if scenario_set:
        ctx.put(ws, f"{cols[scenario_set[0]]}{group_row}", "Set per row", style.SECTION)
    if engine_set:
        ctx.put(ws, f"{cols[engine_set[0]]}{group_row}", f"{ctx.engine} defaults for the row's GPU and TP", style.SECTION)
    ctx.put(ws, f"{key_first}{group_row}", "Key results (copies of the ledger columns)", style.SECTION)
    rest = [i.name for i in plan.INPUTS if i.name not in set_by_rows]
    if rest:
        ctx.put(ws, f"{cols[rest[0]]}{group_row}", "Other inputs (green: catalog lookup; white: =the Plan's input)", style.SECTION)
    prev = None
    for line in plan.LINES:
        if line.ledger != prev:
            ctx.put(ws, f"{cols[line.name]}{group_row}", line.ledger.capitalize() + " ledger", style.SECTION)
            prev = line.ledger
    for k in range(3, last_col + 1):
        ws.column_dimensions[get_column_letter(k)].width = 13
    ws.freeze_panes = f"C{first}"
    for k, (sc, (choice, inputs, own)) in enumerate(zip(ctx.scenarios, rows)):
        r = first + k
        vals = plan.evaluate(inputs)
        ref = lambda n, r=r: f"${cols[n]}{r}"  # noqa: E731
        key_refs = {sel: f"${col}{r}" for sel, col in zip(SELECTOR_NAMES, sel_cols)}
        ctx.put(ws, f"A{r}", sc.label, style.INPUT)
        ctx.formula(ws, f"B{r}", verdict.words(Sym(ref("verdict"))), verdict.words_of(vals["verdict"]), style.FORMULA)
        for (sel, label, sheet), col in zip(SELECTORS, sel_cols):
            ctx.put(ws, f"{col}{r}", choice[sel], style.INPUT)
        for inp in plan.INPUTS:
            coord = f"{cols[inp.name]}{r}"
            fmt = quantity_format(inp.name, inp.unit, inputs[inp.name])
            lk = lookup(inp.name, ctx.tables, key_refs, choice)
            if inp.name in own or inp.name in set_by_rows:  # the row's own value (another row's column: the Plan's)
                ctx.put(ws, coord, inputs[inp.name], style.INPUT, fmt)
            elif lk is not None:
                ctx.formula(ws, coord, lk[0], inputs[inp.name], style.LOOKUP, fmt)
            else:
                ctx.formula(ws, coord, Sym(named(inp.name)), inputs[inp.name], style.FORMULA, fmt)
        for line in plan.LINES:
            formula, _ = plan.render(line, ref)
            v = py_value(vals[line.name])
            ctx.formula(ws, f"{cols[line.name]}{r}", formula, v, style.FORMULA, quantity_format(line.name, line.unit, v))
        for n in key:
            v = py_value(vals[n])
            ctx.formula(ws, f"{cols['key:' + n]}{r}", Sym(ref(n)), v, style.FORMULA,
                        quantity_format(n, plan.LINE_BY_NAME[n].unit, v))
    last = first + len(ctx.scenarios) - 1
    # dropdowns and conditional formats cover room for copied rows
    room = last + 200
    for (sel, label, sheet), col in zip(SELECTORS, sel_cols):
        dv = list_validation(ctx.tables[sheet], label)
        ws.add_data_validation(dv)
        dv.add(f"{col}{first}:{col}{room}")
    verdict_rules(ws, f"B{first}:B{room}", f"${cols['verdict']}{first}")
    for name in [l.name for l in plan.LINES if l.ledger == "fit" and l.unit == "1/0"]:
        for col in [cols[name]] + ([cols["key:" + name]] if "key:" + name in cols else []):
            flag_rules(ws, f"{col}{first}:{col}{room}", f"{col}{first}")
    for col in (cols["total_bytes_per_gpu"], cols["key:total_bytes_per_gpu"]):
        bars(ws, f"{col}{first}:{col}{room}")
    ws.auto_filter.ref = f"A{label_row}:{get_column_letter(last_col)}{last}"
    ws.print_area = f"A1:{key_last}{last}"
    ws.print_title_rows = f"{label_row}:{unit_row}"


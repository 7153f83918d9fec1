"""The Scenarios sheet: the what-if grid, one scenario per row, every column a live formula.

A row reads left to right in groups: the choice (model, GPU, formats, engine by name, TP),
the workload, memory per GPU, speed, cost and the verdict.  Every other input and ledger
line the row's formulas refer to follows in a collapsed column group ("Detail"), so a
copied row stays complete and live; lines no shown column needs (the what-if TP columns, the
finance lines: see the TCO and Sensitivity sheets) are left out.  The rows themselves (the defaults and a user's CSV)
come from :mod:`inference_ledger.workbook.scenarios`.
"""

from __future__ import annotations

from openpyxl.styles import Alignment, Font
from openpyxl.utils import column_index_from_string, get_column_letter
from openpyxl.worksheet.properties import Outline

from inference_ledger.catalogs import engines
from inference_ledger.graph import plan, resolve, verdict
from inference_ledger.graph.bills import billed
from inference_ledger.core.args import LedgerInputError, echo
from inference_ledger.core.refs import cell
from inference_ledger.core.expr import NOVALUE

from . import style
from .cells import (SELECTOR_NAMES, bars, bill, flag_rules, line_expression, list_validation, py_value,
                    quantity_format, shown, verdict_rules)
from .context import Ctx
from .scenarios import Scenario
from .tables import ENGINE_LOOKUPS, KERNEL_INPUTS, SELECTORS, lookup


def inherited_engine(build_engine: str, gpu: str) -> str:
    """The engine of a row that names none: the build's, unless it does not run on the row's GPU (TensorRT-LLM on an
    AMD row of the built-in list): then the default engine, which runs on any, and the row's engine cell says so."""
    try:
        off = resolve.engine_problem(engines.get_engine(build_engine), resolve.find_gpu(gpu)) if gpu else None
    except LedgerInputError:
        return build_engine   # an unknown GPU: the resolver refuses it in its own words
    return engines.DEFAULT_ENGINE if off else build_engine


def scenario_inputs(ctx: Ctx, sc: Scenario) -> tuple[dict[str, str], dict[str, float], set[str]]:
    """(choices, inputs, names whose value is the row's own) of one scenario row, through the resolver.

    A row's own values: what the scenario sets, and the engine's defaults for the row's
    GPU and TP (unless the build was given that number).  Catalog and engine inputs are
    lookups; everything else follows the Plan sheet.
    """
    follow = {k: v for k, v in ctx.inputs.items() if k not in resolve.FROM_CATALOG and k not in ENGINE_LOOKUPS
              and k not in KERNEL_INPUTS and (k not in ctx.engine_inputs or k in ctx.explicit)}
    try:
        r = resolve.resolve(sc.model, sc.gpu, weight_dtype=sc.weight_dtype or None, kv_dtype=sc.kv_dtype or "bf16",
                            engine=sc.engine or inherited_engine(ctx.engine, sc.gpu),
                            extra_models=ctx.tables["Models"].rows, numbers=follow | sc.inputs)
    except LedgerInputError as e:   # the row's own refusal, named by its file and line when it has them
        where = f"{sc.where}: " if sc.where else ""
        raise resolve.ChoiceError(getattr(e, "option", "scenarios"),
                                  f"{where}scenario {echo(sc.label)}: {e}") from None
    choice = {"model": r.model.id, "gpu": r.gpu.id, "weight_dtype": r.weight_dtype, "kv_dtype": r.kv_dtype,
              "engine": r.engine}
    own = set(sc.inputs) | {n for n in ctx.engine_inputs if n not in ctx.explicit}
    return choice, dict(r.inputs), own


#: The rows' costs are at the GPU costs catalog's price of each row's own GPU: a price typed into the Plan's override
#: is for the Plan's plan, not the rows' (a row sets its own with a price_per_gpu_hour column).
COST_GROUP = "Cost (catalog price of the row's GPU)"
#: Column labels that say where a row's value comes from.
LABELS = {"price_per_gpu_hour": "Price per GPU-hour (GPUs catalog; the Plan's override does not apply)"}
#: The grid's visible groups, left to right: (group header, columns); a column is a dropdown choice
#: (inference_ledger.workbook.tables.SELECTORS), a plan input or a plan line.
GROUPS = (
    ("Choice", ("model", "gpu", "weight_dtype", "kv_dtype", "engine", "tp", "pp", "ep", "dp_attention")),
    ("Workload", ("input_tokens", "output_tokens", "concurrency")),
    ("Memory per GPU", ("weights_bytes_per_gpu", "kv_bytes_per_gpu", "workspace_bytes_per_gpu", "total_bytes_per_gpu",
                        "usable_bytes_per_gpu", "headroom_bytes_per_gpu", "max_concurrency")),
    ("Speed", ("ttft_open_seconds", "ttft_seconds", "tpot_seconds", "tokens_per_second_per_gpu")),
    (COST_GROUP, ("price_per_gpu_hour", "gpus_per_replica", "cost_per_million_output_tokens", "gpus_for_qps",
                  "monthly_cost_qps")),
    ("Verdict", ("verdict", "fits", "ttft_ok", "tpot_ok")),
)
#: Rows of the grid's header and its first scenario.
GROUP_ROW, LABEL_ROW, UNIT_ROW, NAME_ROW, FIRST = 5, 6, 7, 8, 9
#: Scenario label and verdict words come first; the groups start in column C.
FIRST_GROUP_COL = 3


def needed(lines: list[str]) -> set[str]:
    """The lines given and every input and line they use, directly or through other lines."""
    out: set[str] = set()
    todo = list(lines)
    while todo:
        n = todo.pop()
        if n not in out:
            out.add(n)
            todo.extend(plan.dependencies(n) if n in plan.LINE_BY_NAME else ())
    return out


def _layout(ctx: Ctx, set_by_rows: list[str]) -> tuple[list[tuple[str, list[str]]], int]:
    """(group header, column keys) in sheet order, and how many groups are visible (the rest are the detail)."""
    sel = {k for k, _, _ in SELECTORS}
    known = set(plan.NAMES) | sel
    visible = [(g, [n for n in names if n in known]) for g, names in GROUPS]
    shown = {n for _, names in visible for n in names}
    extra = [n for n in set_by_rows if n not in shown and n not in ctx.engine_inputs]
    if extra:
        visible.insert(2, ("Also set per row", extra))
        shown |= set(extra)
    need = needed([n for n in shown if n in plan.LINE_BY_NAME])
    engine_set = [n for n in set_by_rows if n not in shown and n in need]
    detail = [(f"Detail: {ctx.engine} defaults for the row's GPU and TP", engine_set),
              ("Other inputs (green: catalog or engine lookup; white: =the Plan's input)",
               [i.name for i in plan.INPUTS if i.name in need and i.name not in shown and i.name not in engine_set])]
    rest = [l for l in plan.LINES if l.name in need and l.name not in shown]
    for ledger in dict.fromkeys(l.ledger for l in rest):  # one part per ledger, lines in plan order
        detail.append((ledger.capitalize() + " ledger", [l.name for l in rest if l.ledger == ledger]))
    return [(g, names) for g, names in visible + detail if names], len([v for v in visible if v[1]])


def scenarios_sheet(wb, ctx: Ctx) -> None:
    ws = ctx.new_sheet("Scenarios", "Scenarios: what-if grid", {"A": 40, "B": 24}, tab="70AD47")
    ctx.put(ws, "A3", "One scenario per row. Add one by copying the last row down, then change its yellow cells "
            "(model, GPU, formats and engine are dropdowns). Inputs a row does not set follow the Plan sheet; green "
            "cells are catalog lookups for the row's own model and GPU (an override typed on Plan does not apply: "
            "costs are at the catalog price). Every other input and ledger line is in the Detail group (click + to show).",
            style.NOTE)
    ws.merge_cells("A3:R3")
    rows = [scenario_inputs(ctx, sc) for sc in ctx.scenarios]
    set_by_rows = [i.name for i in plan.INPUTS if any(i.name in own for _, _, own in rows)]
    groups, n_visible = _layout(ctx, set_by_rows)
    cols, group_cols = {}, []
    for g, names in groups:
        group_cols.append((g, get_column_letter(FIRST_GROUP_COL + len(cols))))
        for n in names:
            cols[n] = get_column_letter(FIRST_GROUP_COL + len(cols))
    last_col = FIRST_GROUP_COL + len(cols) - 1
    last_visible = column_index_from_string(group_cols[n_visible][1]) - 1 if n_visible < len(groups) else last_col
    sel_cols = {k: cols[k] for k, _, _ in SELECTORS}
    # headers: group, label, unit, name (the name a formula or test finds the column by)
    labels = {k: (label, "id") for k, label, _ in SELECTORS}
    heads = [("A", "Scenario", "", ""), ("B", "Verdict", "", "")]
    for n, col in cols.items():
        if n in labels:
            heads.append((col, labels[n][0], "id", SELECTOR_NAMES[n]))
        else:
            q = plan.LINE_BY_NAME.get(n) or plan.INPUT_BY_NAME[n]
            heads.append((col, LABELS.get(n, q.label), shown(q.unit, py_value(ctx.values[n])), n))
    for col, label, unit, name in heads:
        ctx.put(ws, f"{col}{LABEL_ROW}", label, style.HEADER)
        ctx.put(ws, f"{col}{UNIT_ROW}", unit, style.NOTE).alignment = Alignment(wrap_text=False)
        c = ctx.put(ws, f"{col}{NAME_ROW}", name, style.NOTE)
        c.alignment, c.font = Alignment(wrap_text=False, shrink_to_fit=True), Font(size=7, color="808080")
    ws.row_dimensions[LABEL_ROW].height = 54
    ctx.put(ws, f"A{GROUP_ROW}", "Scenario", style.SECTION)
    for g, col in group_cols:
        ctx.put(ws, f"{col}{GROUP_ROW}", g, style.SECTION)
    # a dropdown's column holds its sheet's longest id on one line ('qwen3-235b-a22b' wrapped at a hyphen and was
    # cut at the row's height)
    id_width = {col: max([13] + [len(e.id) + 2 for e in ctx.tables[sheet].rows]) for (key, _, sheet), col in
                zip(SELECTORS, sel_cols.values())}
    for k in range(FIRST_GROUP_COL, last_col + 1):
        dim = ws.column_dimensions[get_column_letter(k)]
        dim.width = id_width.get(get_column_letter(k), 13)
        if k > last_visible:  # the detail: one collapsed outline group
            dim.outline_level, dim.hidden = 1, True
    ws.sheet_properties.outlinePr = Outline(summaryBelow=True, summaryRight=False)
    ws.freeze_panes = f"C{FIRST}"
    for k, (sc, (choice, inputs, own)) in enumerate(zip(ctx.scenarios, rows)):
        _scenario_row(ctx, ws, FIRST + k, sc, choice, inputs, own, cols, sel_cols, set_by_rows)
    last = FIRST + len(ctx.scenarios) - 1
    # dropdowns and conditional formats cover room for copied rows
    room = last + 200
    for sel, label, sheet in SELECTORS:
        dv = list_validation(ctx.tables[sheet], label)
        ws.add_data_validation(dv)
        dv.add(f"{sel_cols[sel]}{FIRST}:{sel_cols[sel]}{room}")
    verdict_rules(ws, f"B{FIRST}:B{room}", cell(f"{cols['verdict']}{FIRST}", fix="col"))
    for name in [l.name for l in plan.LINES if l.ledger == "fit" and l.unit == "1/0" and l.name in cols]:
        col = cols[name]
        flag_rules(ws, f"{col}{FIRST}:{col}{room}", f"{col}{FIRST}")
    col = cols["total_bytes_per_gpu"]
    bars(ws, f"{col}{FIRST}:{col}{room}")
    ws.auto_filter.ref = f"A{LABEL_ROW}:{get_column_letter(last_col)}{last}"
    ws.print_area = f"A1:{get_column_letter(last_visible)}{last}"
    ws.print_title_rows = f"{LABEL_ROW}:{UNIT_ROW}"


def _scenario_row(ctx: Ctx, ws, r: int, sc: Scenario, choice, inputs, own, cols, sel_cols, set_by_rows) -> None:
    """One scenario: its choices and own inputs typed, the rest lookups or the Plan's, every line a formula."""
    vals = plan.evaluate(inputs)
    ref = lambda n: ctx.at(ws, f"{cols[n]}{r}", fix="col")  # noqa: E731
    ctx.put(ws, f"A{r}", sc.label, style.INPUT)
    for sel, col in sel_cols.items():
        ctx.put(ws, f"{col}{r}", choice[sel], style.INPUT)
    key_refs = {sel: ctx.at(ws, f"{col}{r}", fix="col") for sel, col in sel_cols.items()}
    key_refs |= {n: ref(n) for n in ("tp", "ep") if n in cols}  # the Kernels sheet's key reads the row's layout
    for inp in [i for i in plan.INPUTS if i.name in cols]:
        coord = f"{cols[inp.name]}{r}"
        fmt = quantity_format(inp.name, inp.unit, inputs[inp.name])
        lk = lookup(inp.name, ctx.tables, key_refs, choice)
        if inp.name in own or inp.name in set_by_rows:  # the row's own value (another row's column: the Plan's)
            ctx.put(ws, coord, inputs[inp.name], style.INPUT, fmt)
        elif lk is not None:   # a Kernels row's value: the resolver's (the row's inputs)
            found = lk[0] if lk[0].value is not NOVALUE else lk[0].at(inputs[inp.name])
            ctx.formula(ws, coord, found, style.LOOKUP, fmt)
        else:
            ctx.formula(ws, coord, ctx.quantity(inp.name), style.FORMULA, fmt)
    # the verdict first: every bill of the row reads it
    for line in sorted((l for l in plan.LINES if l.name in cols), key=lambda l: l.name != "verdict"):
        expr = line_expression(ctx, line, ref, vals)
        fmt = quantity_format(line.name, line.unit, py_value(vals[line.name]))
        if line.name in billed(cols):   # a row that does not start has no bill: the verdict's words instead
            expr = bill(ref("verdict"), expr)
        ctx.formula(ws, f"{cols[line.name]}{r}", expr, style.FORMULA, fmt)
    ctx.formula(ws, f"B{r}", verdict.words(ref("verdict")), style.FORMULA)

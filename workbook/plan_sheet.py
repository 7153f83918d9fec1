"""The Plan sheet: the verdict, the choices, the headline, every input (with overrides) and the results.

Its two charts and their data are in :mod:`inference_ledger.workbook.plan_charts`.
"""

from __future__ import annotations

from typing import Sequence

from openpyxl.styles import Alignment, Font
from openpyxl.worksheet.pagebreak import Break
from openpyxl.utils import column_index_from_string, get_column_letter

from inference_ledger.catalogs import bands
from inference_ledger.graph import concurrency, plan, summary, verdict
from inference_ledger.graph.bills import needs_a_replica
from inference_ledger.core.expr import NOVALUE
from inference_ledger.core.refs import count_of
from inference_ledger.core.sheetfuncs import eq, isblank, where
from inference_ledger.core.units import CONSTANTS

from . import checks, style
from .cells import (LEDGER_SHEETS, SELECTOR_NAMES, bars, bill, code_words, unit_text, flag_rules, header,
                    line_expression, line_row, list_validation, named, numeric_validation, py_value, quantity_format,
                    scale, second_view, section, shown, verdict_code, verdict_rules, verdict_words)
from .context import Ctx
from .load_chart import binding_limit_row
from .plan_charts import plan_charts
from .tables import SELECTORS, lookup

#: Every named constant the workbook shows (the ledger's and the checks' tolerance).
WORKBOOK_CONSTANTS = tuple(CONSTANTS) + (checks.CHECK_TOLERANCE, verdict.VERDICT_INVALID)
#: Ledger lines the Plan's summary repeats (in this order, those that exist).
SUMMARY = ("weights_bytes_per_gpu", "kv_bytes_per_gpu", "workspace_bytes_per_gpu", "total_bytes_per_gpu",
           "usable_bytes_per_gpu", "headroom_bytes_per_gpu", "gpus_needed", "kv_capacity_tokens", "max_concurrency",
           "flops_request", "ttft_seconds", "tpot_floor_seconds", "tpot_seconds", "ridge_batch",
           "tokens_per_second", "tokens_per_second_per_gpu")
#: The handful a buyer reads first (top left of Plan).
HEADLINE = ("total_bytes_per_gpu", "ttft_open_seconds", "ttft_seconds", "tpot_seconds", "tokens_per_second_per_gpu",
            "cost_per_million_output_tokens")
#: The Plan's one monthly bill and the demand input it is for, side by side under the headline: the peak
#: fleet, as TCO, Forecast and `recommend` size it.  The average-load bill (requests_per_day -> gpus_total
#: -> monthly_cost, what `plan` and `email` print) is on the Cost sheet with every other cost line.
DEMAND_INPUT = "target_qps"
#: The input group of the model's figures, and how the count of those overridden reads beside its title.
MODEL_GROUP = "model"
FIGURES_GIVEN_FORMAT = '0" overridden"'
BILL = ("gpus_for_qps", "monthly_cost_qps")
#: The headline and bill figures with an error band (inference_ledger/graph/band_lines.py): line -> (low, high) lines.
BANDED = {name: (f"{name}_low", f"{name}_high") for name in
          ("ttft_seconds", "tpot_seconds", "tokens_per_second", "cost_per_million_output_tokens", "gpus_for_qps",
           "monthly_cost_qps")}

#: An input group's title where capitalising its name would misspell it ("Gpu").
GROUP_TITLES = {"gpu": "GPU"}


#: What the engine dropdown changes, and what the build filled for it.
ENGINE_NOTE = ("Dropdown of the Engines sheet: its KV budget rule and fixed memory are looked up by name; its "
               "defaults for this GPU and TP (memory fraction, batch limits, NCCL) were filled when built "
               "(`build --engine ...`) and stay editable.")
#: Plan rows: the verdict and the choices at the top beside the charts, then inputs | results.
PLAN_TOP, PLAN_BODY = 5, 26


#: Zero-based column of the printed page break between the inputs and the results (G).
RESULTS_BREAK = 6
#: The last printed column (the results' notes); the chart data beyond it are not printed.
PRINTED_LAST_COLUMN = "K"

def plan_sheet(wb, ctx: Ctx) -> None:
    ws = ctx.new_sheet("Plan", "Plan", {"A": 36, "B": 16, "C": 13, "D": 12, "E": 62, "F": 2,
                                        "G": 34, "H": 16, "I": 12, "J": 11, "K": 56}, tab="FFC000")
    ctx.put(ws, "A3", "Yellow cells are inputs (pick the model, GPU and formats below the verdict); green cells come "
            "from the catalogs: type a number in Override to replace one. Every line's formula is on Memory, "
            "Compute, Bandwidth and Cost.", style.NOTE)
    ws.merge_cells("A3:E3")   # the inputs' printed page (A:E); the results (G:K) print on the next
    r = _plan_verdict(ctx, ws, PLAN_TOP) + 1
    section(ctx, ws, f"A{r}", "Choose")
    r += 1
    for key, label, sheet in SELECTORS:
        coord = f"B{r}"
        ctx.put(ws, f"A{r}", label)
        ctx.put(ws, coord, ctx.choice[key], style.INPUT)
        ctx.define(SELECTOR_NAMES[key], ws, coord)
        dv = list_validation(ctx.tables[sheet], label)
        ws.add_data_validation(dv)
        dv.add(coord)
        ctx.put(ws, f"C{r}", "id")
        ctx.put_beside(ws, f"E{r}", ENGINE_NOTE if key == "engine" else
                f"Dropdown of the {sheet} sheet's ids (add a row there to extend it).", style.NOTE)
        r += 1
    section(ctx, ws, f"A{r + 1}", "Headline")
    r = _refs_block(ctx, ws, r + 1, "A", HEADLINE) + 2
    section(ctx, ws, f"A{r}", "Monthly bill for the peak demand")
    _input_row(ctx, ws, r + 1, plan.INPUT_BY_NAME[DEMAND_INPUT])
    r = _concurrency_used_rows(ctx, ws, r + 2)
    r = _refs_block(ctx, ws, r, "A", BILL) + 2
    body = max(PLAN_BODY, _band_block(ctx, ws, r) + 3)
    plan_charts(ctx, ws, PLAN_TOP)
    r = body
    section(ctx, ws, f"A{r}", "Inputs")
    r += 1
    header(ctx, ws, r, 1, ["Input", "Value", "Unit", "Override", "What it is"])
    group, rows = None, {}
    # each group's inputs together (their titles were repeated down the sheet), in plan.INPUT_GROUPS' order
    order = {g: k for k, g in enumerate(plan.INPUT_GROUPS)}
    for inp in sorted((i for i in plan.INPUTS if i.name != DEMAND_INPUT), key=lambda i: order[i.group]):
        r += 1
        if inp.group != group:
            group = inp.group
            ctx.put(ws, f"A{r}", GROUP_TITLES.get(group, group.capitalize())).font = \
                Font(italic=True, bold=True, color="1F3864")
            rows[group] = [r]
            r += 1
        _input_row(ctx, ws, r, inp)
        rows[group].append(r)
    _figures_given(ctx, ws, rows[MODEL_GROUP])
    r += 2
    section(ctx, ws, f"A{r}", "Named constants")
    r += 1
    header(ctx, ws, r, 1, ["Constant", "Value", "Unit", "", "Why"])
    for const in WORKBOOK_CONSTANTS:
        r += 1
        ctx.put(ws, f"A{r}", const.name)
        ctx.put(ws, f"B{r}", float(const), style.CONSTANT, style.number_format("", float(const)))
        ctx.put_beside(ws, f"C{r}", const.unit)
        ctx.put_beside(ws, f"E{r}", const.doc, style.NOTE)
        ctx.define(const.name, ws, f"B{r}")
    _plan_results(ctx, ws, body)
    ws.print_area = f"A1:{PRINTED_LAST_COLUMN}{ws.max_row}"
    ws.col_breaks.append(Break(id=RESULTS_BREAK))   # printed: the inputs (A:E) on one page, the results (G:K) on the next
    # the results end well above the inputs: a row break under their last row ends their pages there (without it
    # LibreOffice's fit-to-width pass can count one more results page and print it empty, headerless)
    results_end = max(c.row for row in ws.iter_rows(min_col=RESULTS_BREAK + 1,
                                                   max_col=column_index_from_string(PRINTED_LAST_COLUMN)) for c in row
                      if c.value is not None)
    if results_end < ws.max_row:
        ws.row_breaks.append(Break(id=results_end))



def _concurrency_used_rows(ctx: Ctx, ws, r: int) -> int:
    """The concurrency the bill is sized at and which limit chose it (rows r, r + 1, r + 2); returns the last row.

    ``concurrency_used`` is the Plan's concurrency: its Override when one is typed, else the Load sheet's
    ``concurrency_auto`` (the largest candidate meeting the targets)."""
    v = ctx.values
    ctx.put(ws, f"A{r}", "Concurrency the bill is sized at")
    ctx.formula(ws, f"B{r}", ctx.quantity("concurrency"), style.FORMULA, "#,##0")
    ctx.put_beside(ws, f"C{r}", shown("sequences"))
    ctx.define("concurrency_used", ws, f"B{r}")
    ctx.put_beside(ws, f"E{r}", "Sequences per model copy: the largest meeting the TTFT and TPOT targets within the KV cache "
            "and the engine's batch limit (Load sheet), unless a number is typed in the concurrency's Override.",
            style.NOTE)
    requested = where(isblank(ctx.name("concurrency_override")), 0, 1)
    code = concurrency.reason(requested, ctx.name("concurrency_best"), ctx.name("concurrency_cap"),
                              ctx.quantity("max_concurrency"), ctx.quantity("max_running_sequences"),
                              ctx.name("concurrency_best_tpot"), ctx.name("concurrency_best_ttft"))
    ctx.put(ws, f"A{r + 1}", "Reason code")
    # the Load sheet's choice is further on: the code is the one the plan's choice gives (inference_ledger.concurrency)
    ctx.formula(ws, f"B{r + 1}", code.at(py_value(v["concurrency_reason"])), style.FORMULA, "0")
    ctx.put_beside(ws, f"C{r + 1}", "code")
    ctx.define("concurrency_reason", ws, f"B{r + 1}")
    ctx.put_beside(ws, f"E{r + 1}", "0 requested, 1 KV cache, 2 engine batch limit, 3 TPOT target, 4 TTFT target, "
            "5 none meets the targets (1 used).", style.NOTE)
    ctx.put(ws, f"A{r + 2}", "Chosen by")
    ctx.formula(ws, f"B{r + 2}", concurrency.reason_words(ctx.name("concurrency_reason")), style.FORMULA)
    ws.merge_cells(f"B{r + 2}:C{r + 2}")
    return r + 2


def _figures_given(ctx: Ctx, ws, rows: Sequence[int]) -> None:
    """Beside the model group's title: in the Override column how many of the model's figures are overridden
    (``model_figures_given``), and the words the Summary's first sentence puts after the model's id
    (``model_overridden``)."""
    title, first, last = rows[0], rows[1], rows[-1]
    coord = f"D{title}"
    ctx.formula(ws, coord, count_of(ctx.span(ws, f"D{first}", f"D{last}")), style.NOTE, FIGURES_GIVEN_FORMAT)
    ctx.define(named("model_figures_given"), ws, coord)
    ctx.formula(ws, f"E{title}", summary.figures_overridden(ctx.at(ws, coord)), style.NOTE)
    ctx.define(named("model_overridden"), ws, f"E{title}")


def _input_row(ctx: Ctx, ws, r: int, inp: plan.Input) -> None:
    """label | value (typed, or a catalog lookup) | unit | override | what it is, and the input's defined name."""
    if inp.name == "concurrency":
        return _concurrency_row(ctx, ws, r, inp)
    coord = f"B{r}"
    ctx.put(ws, f"A{r}", inp.label)
    fmt = quantity_format(inp.name, inp.unit, ctx.inputs[inp.name])
    ctx.put_beside(ws, f"C{r}", unit_text(inp.unit, fmt, ctx.inputs[inp.name]))
    ctx.put_beside(ws, f"E{r}", inp.doc, style.NOTE)
    lk = lookup(inp.name, ctx.tables, SELECTOR_NAMES, ctx.choice)
    typed = coord if lk is None else f"D{r}"          # the cell a user types into: value or override
    dv = numeric_validation(inp, typed)
    ws.add_data_validation(dv)
    dv.add(typed)
    if lk is None:
        ctx.put(ws, coord, ctx.inputs[inp.name], style.INPUT, fmt)
        if inp.name == "requests_per_day":   # flagged beside the input (a finding on Checks; `plan` takes it)
            ok = checks.average_within_peak
            ctx.formula(ws, f"D{r}", where(ok(ctx.at(ws, coord), ctx.quantity("target_qps")), "",
                                           checks.AVERAGE_ABOVE_PEAK_FLAG), style.NOTE)
            ws[f"D{r}"].font = Font(color=style.RED[1], bold=True)
    else:
        ctx.put(ws, typed, ctx.overrides.get(inp.name), style.INPUT, fmt)
        found = lk[0] if lk[0].value is not NOVALUE else lk[0].at(ctx.inputs[inp.name])  # a Kernels row: the resolver's
        ctx.formula(ws, coord, where(isblank(ctx.at(ws, typed)), found, ctx.at(ws, typed)), style.LOOKUP, fmt)
    if inp.unit == "code":
        code_words(ctx, ws, f"C{r}", inp.name, coord)   # the code's words beside the code (read from it)
    also = second_view(inp.name, inp.unit, ctx.inputs[inp.name]) if inp.unit == "s" else None
    if also is not None and not ws[f"C{r}"].value:   # a duration's second view where its unit would be, as a line's
        ctx.formula(ws, f"C{r}", also.convert(ctx.at(ws, coord)), style.FORMULA, also.format)   # Also: 15.0 µs
    ctx.define(named(inp.name), ws, coord)


def _concurrency_row(ctx: Ctx, ws, r: int, inp: plan.Input) -> None:
    """The concurrency: its Override (a number typed, or blank for auto), else the Load sheet's concurrency_auto."""
    typed = f"D{r}"
    ctx.put(ws, f"A{r}", inp.label)
    ctx.put_beside(ws, f"C{r}", shown(inp.unit, ctx.inputs[inp.name]))
    ctx.put_beside(ws, f"E{r}", "Blank Override: auto, the largest concurrency meeting the TTFT and TPOT targets within the "
            "KV cache and the engine's batch limit (Load sheet); type a number to use it as given. " + inp.doc,
            style.NOTE)
    dv = numeric_validation(inp, typed)
    ws.add_data_validation(dv)
    dv.add(typed)
    ctx.put(ws, typed, ctx.explicit.get(inp.name), style.INPUT, "#,##0")
    # concurrency_auto is on the Load sheet, further on: the plan's choice is its value
    ctx.formula(ws, f"B{r}", where(isblank(ctx.at(ws, typed)), ctx.name("concurrency_auto", ctx.inputs[inp.name]),
                                   ctx.at(ws, typed)), style.LOOKUP, "#,##0")
    ctx.define(named(inp.name), ws, f"B{r}")
    ctx.define("concurrency_override", ws, typed)


def _band_block(ctx: Ctx, ws, r: int) -> int:
    """Rows label | low | unit | high | why: the headline and bill figures' bands; returns the last row used."""
    section(ctx, ws, f"A{r}", "Band: about 80% of new measurements should fall inside")
    r += 1
    header(ctx, ws, r, 1, ["Figure", "Low", "Unit", "High", "How the band is drawn"])
    first = r + 1
    for name, (lo, hi) in BANDED.items():
        if lo not in plan.LINE_BY_NAME or hi not in plan.LINE_BY_NAME:
            continue
        r += 1
        q = plan.LINE_BY_NAME[name]
        ctx.put(ws, f"A{r}", q.label)
        for col, line in (("B", lo), ("D", hi)):
            value = py_value(ctx.values[line])
            expr = ctx.quantity(line)
            if needs_a_replica(line):   # no replica, so no band, for a plan that does not start
                expr = bill(verdict_code(ctx), expr)
            ctx.formula(ws, f"{col}{r}", expr, style.FORMULA, quantity_format(line, q.unit, value))
        ctx.put_beside(ws, f"C{r}", unit_text(q.unit, ws[f"B{r}"].number_format, scale(name, q.unit, ctx.values[name])))
    ctx.put_beside(ws, f"E{first}", "The figure x the 10th and 90th percentiles of measured / predicted over published load "
            f"rows of this deployment's segment ({bands.SEGMENT_WORDS}), each held out from what "
            "predicts it: the Band multiplier inputs below (docs/accuracy.md). GPUs and cost follow the tokens/s band.",
            style.NOTE)
    return r


def _plan_verdict(ctx: Ctx, ws, r: int) -> int:
    """The verdict and the 1/0 fit lines, top left; returns the last row used."""
    section(ctx, ws, f"A{r}", "Verdict")
    r += 1
    ctx.put(ws, f"A{r}", "Memory per GPU, then targets")
    ctx.formula(ws, f"B{r}", verdict_words(ctx), style.FORMULA)
    ctx.define("verdict_words", ws, f"B{r}")   # what other sheets say when the plan does not start
    ws.merge_cells(f"B{r}:C{r}")
    verdict_rules(ws, f"B{r}:C{r}", named("verdict"))
    ctx.put_beside(ws, f"E{r}", "Green fits the requested concurrency and meets the targets; amber runs but misses a target or "
            "queues part of the concurrency; red does not start (code 0), or an input breaks a rule (code -1, "
            "\"invalid input\": the rule is named, and listed on the Checks sheet).", style.NOTE)
    r += 1
    binding_limit_row(ctx, ws, r)
    ws[f"B{r}"].alignment = Alignment(wrap_text=True, vertical="top")   # its words run long: wrap, never cut
    for line in [l for l in plan.LINES if l.ledger == "fit"]:
        r += 1
        coord = line_row(ctx, ws, r, "A", line)
        if line.name == "verdict":   # the plan's code, unless a typed input breaks a rule (inference_ledger.workbook.checks)
            ctx.formula(ws, coord, where(eq(ctx.name("checks_pass", ctx.checks_pass), 1),
                                         line_expression(ctx, line, named), verdict.VERDICT_INVALID), style.FORMULA)
            verdict_rules(ws, coord, coord)
        elif line.unit == "1/0":   # pass/fail colours only on pass/fail cells (a code is neither)
            flag_rules(ws, coord, coord)
    return r


def _refs_block(ctx: Ctx, ws, r: int, col: str, names: Sequence[str]) -> int:
    """Rows label | =name | unit | also | ledger sheet below row r; returns the last row."""
    c0 = ord(col) - ord("A")
    L = lambda k: get_column_letter(c0 + 1 + k)  # noqa: E731
    for name in names:
        if name not in plan.LINE_BY_NAME and name not in plan.INPUT_BY_NAME:
            continue
        r += 1
        q = plan.LINE_BY_NAME.get(name) or plan.INPUT_BY_NAME[name]
        ctx.put(ws, f"{L(0)}{r}", q.label)
        value = py_value(ctx.values[name])
        fmt = quantity_format(name, q.unit, value)
        if needs_a_replica(name):   # a plan that does not start has no bill, no throughput: the verdict's words
            ctx.formula(ws, f"{L(1)}{r}", bill(verdict_code(ctx), ctx.quantity(name)), style.FORMULA, fmt)
        else:
            ctx.formula(ws, f"{L(1)}{r}", ctx.quantity(name), style.FORMULA, fmt)
        ctx.put_beside(ws, f"{L(2)}{r}", unit_text(q.unit, fmt, scale(name, q.unit, value)))
        also = second_view(name, q.unit, value)
        if also:
            view = also.convert(ctx.at(ws, f"{L(1)}{r}"))
            if needs_a_replica(name):   # the value cell holds the verdict's words then: so does its second view
                view = bill(verdict_code(ctx), view)
            ctx.formula(ws, f"{L(3)}{r}", view, style.FORMULA, also.format)
        ctx.put_beside(ws, f"{L(4)}{r}", dict(LEDGER_SHEETS).get(getattr(q, "ledger", ""), "Plan: Inputs"))
    return r



def _plan_results(ctx: Ctx, ws, r: int) -> None:
    """Summary of the ledgers, and every ledger without a sheet of its own (finance), right of the inputs."""
    section(ctx, ws, f"G{r}", "Summary of the ledgers")
    r += 1
    header(ctx, ws, r, 7, ["Quantity", "Value", "Unit", "Also", "Ledger sheet"])
    top = r
    r = _refs_block(ctx, ws, r, "G", SUMMARY) + 2
    # memory use at a glance: bars over weights, KV, workspace, total and usable per GPU (0 to the largest)
    listed = [n for n in SUMMARY if n in plan.LINE_BY_NAME or n in plan.INPUT_BY_NAME]
    rows = [top + 1 + k for k, n in enumerate(listed)
            if (plan.LINE_BY_NAME.get(n) or plan.INPUT_BY_NAME[n]).unit == "B"][:5]
    if rows:
        bars(ws, f"H{rows[0]}:H{rows[-1]}")
    # any ledger without a sheet of its own (finance, and whatever a later plan adds)
    on_sheets = {k for k, _ in LEDGER_SHEETS} | {"fit"}
    for ledger in dict.fromkeys(l.ledger for l in plan.LINES if l.ledger not in on_sheets):
        section(ctx, ws, f"G{r}", ledger.capitalize())
        r += 1
        header(ctx, ws, r, 7, ["Line", "Value", "Unit", "Also", "Why"])
        for line in [l for l in plan.LINES if l.ledger == ledger]:
            r += 1
            line_row(ctx, ws, r, "G", line)
        r += 2


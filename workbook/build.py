"""Build the inference-ledger workbook: live, portable formulas that need no Python.

Every computed cell comes from one definition:

* ledger lines from :func:`inference_ledger.plan.render` (a defined name per quantity on the Plan
  and ledger sheets; same-row cells such as ``$K9`` in the Scenarios grid);
* catalog-derived inputs from :func:`workbook.tables.lookup` (INDEX/MATCH into the
  GPUs, Models and Dtypes sheets);
* checks from :mod:`workbook.checks`, written with the :mod:`inference_ledger.expr` helpers.

Each is also evaluated in Python while the sheet is written, and
:mod:`workbook.package` stores those results as the cells' cached values, so a mail
preview shows the numbers that Excel or LibreOffice recompute on open.

Extending: the workbook is the list :data:`SHEET_BUILDERS` of ``builder(wb, ctx)``
functions run in order (see :mod:`workbook.context`).  Another module adds a sheet by
passing ``extra_sheets=[my_builder]`` to :func:`build_workbook` (appended after the
built-in sheets) or by registering it with :func:`register_sheet`.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np
from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference, ScatterChart, Series
from openpyxl.formatting.rule import ColorScaleRule, DataBarRule, FormulaRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation

from inference_ledger import __version__, catalog, engines, plan, resolve, verdict
from inference_ledger.args import LedgerInputError
from inference_ledger.expr import Sym, where
from inference_ledger.files import check_target, write_bytes
from inference_ledger.finance import finance_options
from inference_ledger.units import BYTES_PER_GIB, CONSTANTS, MS_PER_S, VERDICT_MEETS

from . import checks
from .calibration import add_calibration_sheet
from .load_chart import binding_limit_row, load_sheet, varying_columns
from . import style
from .forecast import add_forecast_sheet
from .sensitivity import add_sensitivity_sheet
from .tco import add_tco_sheet, finance_checks
from .context import Ctx, SheetBuilder, absolute, xname
from .package import package
from .scenarios import DEFAULT_SCENARIOS, Scenario, read_scenarios
from .tables import FIELD_ROW, FIRST_ROW, HEADER_ROW, SELECTORS, TABLE_ROWS, UNIT_ROW, Table, load_tables, lookup

#: Defined names of the four dropdown choices.
SELECTOR_NAMES = {"model": "model_id", "gpu": "gpu_id", "weight_dtype": "weight_dtype", "kv_dtype": "kv_dtype"}
DEFAULT_CHOICE = {"model": "llama-3.1-70b", "gpu": "h100-sxm", "weight_dtype": None, "kv_dtype": "bf16"}
#: Every named constant the workbook shows (the ledger's and the checks' tolerance).
WORKBOOK_CONSTANTS = tuple(CONSTANTS) + (checks.CHECK_TOLERANCE,)
#: Decode batch sizes of the Plan's step-time table (powers of two: the roofline turns on a log axis).
BATCH_SIZES = tuple(2 ** k for k in range(11))
#: Plan lines the batch table plots: step time floor, expected step time.
BATCH_TARGETS = ("tpot_floor_seconds", "tpot_seconds", "tokens_per_second_per_gpu")
#: Ledger lines the Plan's summary repeats (in this order, those that exist).
SUMMARY = ("weights_bytes_per_gpu", "kv_bytes_per_gpu", "workspace_bytes_per_gpu", "total_bytes_per_gpu",
           "usable_bytes_per_gpu", "headroom_bytes_per_gpu", "gpus_needed", "kv_capacity_tokens", "max_concurrency",
           "flops_request", "ttft_seconds", "tpot_floor_seconds", "tpot_seconds", "ridge_batch",
           "tokens_per_second", "tokens_per_second_per_gpu")
#: The handful a buyer reads first (top left of Plan).
HEADLINE = ("total_bytes_per_gpu", "ttft_seconds", "tpot_seconds", "tokens_per_second_per_gpu",
            "cost_per_million_output_tokens", "gpus_total")
TITLE = "inference-ledger: LLM inference memory, compute and bandwidth plan"
DESCRIPTION = ("How many GPUs, how fast, what it costs: the memory, compute and bandwidth ledgers of one LLM "
               "generation as live, portable formulas (no macros, no add-in).")
LEDGER_SHEETS = (("memory", "Memory"), ("compute", "Compute"), ("bandwidth", "Bandwidth"))


# --- rendering helpers ---------------------------------------------------------------------


def _num(v):
    return v.item() if hasattr(v, "item") else v


#: Workbook defined name of a plan quantity (its own name, see workbook.context.xname).
named = xname


# --- sheet pieces ----------------------------------------------------------------------------


def _header(ctx: Ctx, ws, row: int, col: int, labels: Sequence[str]) -> None:
    for i, text in enumerate(labels):
        ctx.put(ws, f"{get_column_letter(col + i)}{row}", text, style.HEADER)


def _section(ctx: Ctx, ws, coord: str, text: str) -> None:
    ctx.put(ws, coord, text, style.SECTION)


def _shown(unit: str, value: float | None = None) -> str:
    return style.shown_as(unit, value)


@functools.lru_cache(maxsize=None)
def _catalog_range() -> dict[str, tuple[float, float]]:
    """Smallest non-zero and largest magnitude of every plan quantity over the catalog's models (default GPU)."""
    out: dict[str, tuple[float, float]] = {}
    gpu = catalog.get_gpu(DEFAULT_CHOICE["gpu"])
    for m in catalog.load_models():
        try:
            inputs = resolve.plan_inputs(m, gpu)
            values = {**inputs, **plan.evaluate(inputs)}
        except LedgerInputError:
            continue
        for k, v in values.items():
            if isinstance(v, (int, float, np.number)) and not isinstance(v, bool) and float(v) != 0:
                lo, hi = out.get(k, (math.inf, 0.0))
                out[k] = (min(lo, abs(float(v))), max(hi, abs(float(v))))
    return out


def _scale(name: str, unit: str, value):
    """The value a quantity's format is chosen for, so the format follows the line, not the model picked.

    MoE kernel padding is 0 for a dense model and gigabytes for gpt-oss-120b: bytes are
    formatted for their largest value over the catalog (GB, with GiB beside it); seconds
    for their smallest (scientific when some model's is under a millisecond).
    """
    if not isinstance(value, (int, float, np.number)) or isinstance(value, bool):
        return value
    lo, hi = _catalog_range().get(name, (math.inf, 0.0))
    v = abs(float(value))
    if unit == "B":
        return max(v, hi)
    if unit == "s":
        return min(x for x in (v, lo) if x > 0) if (v > 0 or lo < math.inf) else v
    return value


def _fmt(name: str, unit: str, value) -> str:
    return style.number_format(unit, _scale(name, unit, value))


def _also(unit: str, value: float):
    """A second, human view of a base-unit value: (conversion of a Sym or number, unit) or None."""
    if unit == "s":
        return (lambda x: x * MS_PER_S), "ms"
    if unit == "B" and abs(value) >= 1e6:
        return (lambda x: x / BYTES_PER_GIB), "GiB"
    return None


#: Excel's limits on data-validation texts (characters): input title, input message, error title, error message.
TITLE_MAX, PROMPT_MAX, ERROR_MAX = 32, 255, 225


def short_title(label: str) -> str:
    """A label within Excel's 32-character title: without its parenthesis, else cut at a word with an ellipsis."""
    if len(label) <= TITLE_MAX:
        return label
    bare = label.split(" (")[0].strip()
    if len(bare) <= TITLE_MAX:
        return bare
    words = bare.split()
    while len(" ".join(words)) > TITLE_MAX - 1 or words[-1] in ("in", "of", "per", "at", "to", "for", "the", "and"):
        words.pop()
    return " ".join(words) + "\u2026"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "\u2026"


def _numeric_validation(inp: plan.Input, coord: str) -> DataValidation:
    """The rule the CLI applies (inference_ledger.args): between lo and hi, lo excluded where the argument excludes it.

    Excel's "between" includes both ends; a whole number above lo starts at lo + 1, and
    a decimal above lo is a custom rule on the cell itself.
    """
    a = inp.arg
    lo_txt = ">=" if a.lo_inclusive else ">"
    if a.lo_inclusive or a.integer:
        lo = a.lo if a.lo_inclusive else a.lo + 1
        dv = DataValidation(type="whole" if a.integer else "decimal", operator="between",
                            formula1=f"{lo:.15G}", formula2=f"{a.hi:.15G}", allow_blank=True)
    else:
        dv = DataValidation(type="custom", allow_blank=True,
                            formula1=f"AND(ISNUMBER({coord}),{coord}>{a.lo:.15G},{coord}<={a.hi:.15G})")
    dv.showInputMessage = dv.showErrorMessage = True
    dv.promptTitle = short_title(inp.label)
    full = "" if dv.promptTitle == inp.label else f"{inp.label}. "
    dv.prompt = _clip(f"{full}Allowed: {lo_txt} {a.lo:g} and <= {a.hi:g} {inp.unit}. {inp.doc}", PROMPT_MAX)
    dv.errorTitle = "Out of range"
    dv.error = _clip(f"{inp.name} must be {a.allowed()} ({inp.unit})", ERROR_MAX)
    return dv


def _list_validation(table: Table, label: str) -> DataValidation:
    dv = DataValidation(type="list", formula1=table.ids, allow_blank=False)
    dv.showInputMessage = dv.showErrorMessage = True
    dv.promptTitle = short_title(label)
    dv.prompt = f"Pick from the {table.sheet} sheet; a row added there appears here."
    dv.errorTitle = "Not in the catalog"
    dv.error = f"Pick an id from the {table.sheet} sheet (or add a row there first)."
    return dv


# --- sheets -----------------------------------------------------------------------------------


def start_sheet(wb, ctx: Ctx) -> None:
    ws = ctx.new_sheet("Start", TITLE, {"A": 34, "B": 30, "C": 100}, tab="1F3864")
    r = 4
    _section(ctx, ws, f"A{r}", "What this workbook answers")
    r += 1
    ctx.put(ws, f"A{r}", "For one LLM on one GPU type: does it fit (memory per GPU: weights + KV cache at peak "
            "concurrency + workspace), how fast is it (TTFT from prefill compute, TPOT from decode bandwidth), "
            "what does it serve and cost. Every number is a live formula: change an input and Excel or LibreOffice "
            "recalculates with nothing else installed.", style.NOTE)
    ws.merge_cells(f"A{r}:C{r}")
    ws.row_dimensions[r].height = 42
    r += 2
    _section(ctx, ws, f"A{r}", "How to use it")
    steps = ("Plan: pick the model, the GPU and the weight and KV formats in the yellow dropdowns.",
             "Plan: set TP (GPUs per model copy), prompt and output tokens, and peak concurrent sequences.",
             "Plan: adjust memory utilization, efficiencies, price and the daily request forecast if you know better.",
             "Read the verdict and charts on Plan; each line's formula and reason is on Memory, Compute, Bandwidth.",
             "Compare options on Scenarios (copy the last row to add one); keep the master check at 1.",
             "Own or rent: TCO (cost per used GPU-hour), Forecast (what to buy month by month, NPV), "
             "Sensitivity (what drives the cost); their inputs are Plan's Finance group.")
    for i, s in enumerate(steps, 1):
        r += 1
        ctx.put(ws, f"A{r}", f"Step {i}")
        ctx.put(ws, f"B{r}", s)
    r += 2
    _section(ctx, ws, f"A{r}", "Legend")
    for name, _f, _fill, _b, text in style.STYLES:
        r += 1
        ctx.put(ws, f"A{r}", name.replace("IL ", ""), name)
        ctx.put(ws, f"B{r}", text)
    for fill, text in ((style.GREEN, f"{verdict.WORDS[3]}: the engine's KV budget holds the requested concurrency, TTFT and TPOT "
                                 "meet their targets"),
                       (style.AMBER, f"{verdict.WORDS[2]} / {verdict.WORDS[1]}: it runs, but a target is missed or the rest of the "
                                 "sequences queue"),
                       (style.RED, f"{verdict.WORDS[0]}: the engine refuses to start (weights + workspace + one sequence's KV over "
                               "its budget; and any 1/0 flag at 0)")):
        r += 1
        c = ctx.put(ws, f"A{r}", "Verdict")
        c.fill, c.font = PatternFill("solid", fgColor=fill[0]), Font(color=fill[1], bold=True)
        ctx.put(ws, f"B{r}", text)
    r += 2
    _section(ctx, ws, f"A{r}", "Units")
    units = ("Values are stored in base units (bytes, seconds, FLOP, FLOP/s, B/s); number formats only change "
             "how they look.",
             "GB = 1e9 bytes (decimal, as vendors market memory); GiB = 2^30 bytes (binary, what CUDA, torch and "
             "vLLM logs print, often labelled 'GB'). An '80 GB' H100 is 79.19 GiB at runtime.",
             "TB/s and TFLOP/s are 1e12; FLOP/s are dense (vendors headline the 2x sparse figure).",
             "Latencies are seconds; the 'also' column shows milliseconds (x MS_PER_S).")
    for u in units:
        r += 1
        ctx.put(ws, f"B{r}", u, style.NOTE)
    r += 2
    _section(ctx, ws, f"A{r}", "About")
    facts = (("Version", f"inference-ledger {ctx.version}"),
             ("Build date", ctx.build_date.strftime("%Y-%m-%d")),
             ("Method", "Inference Resource Accounting (seed article); KV = 2 x L x K x H x bytes per token "
                        "(the seed's own table drops the factor 2); FLOPs ~ 2N per token (Kaplan et al. 2020)."),
             ("Sources", "Per row on the GPUs, Models and Dtypes sheets (datasheets, Hugging Face config.json)."),
             ("Formulas", "Only portable functions (IF, MIN, MAX, INDEX, MATCH, ROUNDUP, INT, LOG, ...): Excel 2016+, "
                          "Excel 365, LibreOffice, Google Sheets. No macros, no external links."))
    for k, v in facts:
        r += 1
        ctx.put(ws, f"A{r}", k)
        ctx.put(ws, f"B{r}", v, style.NOTE)
    r += 2
    _section(ctx, ws, f"A{r}", "Master check")
    r += 1
    ctx.formula(ws, f"A{r}", Sym("master_check"), ctx.master_value, style.CHECK, "0")
    ctx.put(ws, f"B{r}", "1 when every check on the Checks sheet passes.")
    for row in range(4, r + 1):
        if ws[f"B{row}"].value:
            ws.merge_cells(f"B{row}:C{row}")


#: Plan rows: the verdict and the choices at the top beside the charts, then inputs | results.
PLAN_TOP, PLAN_BODY = 5, 26


def plan_sheet(wb, ctx: Ctx) -> None:
    ws = ctx.new_sheet("Plan", "Plan", {"A": 36, "B": 16, "C": 13, "D": 12, "E": 62, "F": 2,
                                        "G": 34, "H": 16, "I": 12, "J": 11, "K": 56}, tab="FFC000")
    ctx.put(ws, "A3", "Yellow cells are inputs (pick the model, GPU and formats below the verdict); green cells come "
            "from the catalogs: type a number in Override to replace one. Every line's formula is on Memory, "
            "Compute and Bandwidth.", style.NOTE)
    ws.merge_cells("A3:K3")
    keys = SELECTOR_NAMES
    r = _plan_verdict(ctx, ws, PLAN_TOP) + 1
    _section(ctx, ws, f"A{r}", "Choose")
    r += 1
    for key, label, sheet in SELECTORS:
        coord = f"B{r}"
        ctx.put(ws, f"A{r}", label)
        ctx.put(ws, coord, ctx.choice[key], style.INPUT)
        ctx.define(keys[key], ws, coord)
        dv = _list_validation(ctx.tables[sheet], label)
        ws.add_data_validation(dv)
        dv.add(coord)
        ctx.put(ws, f"C{r}", "id")
        ctx.put(ws, f"E{r}", f"Dropdown of the {sheet} sheet's ids (add a row there to extend it).", style.NOTE)
        r += 1
    ctx.put(ws, f"A{r}", "Serving engine")
    ctx.put(ws, f"B{r}", ctx.engine)
    ctx.put(ws, f"E{r}", "Its defaults for this GPU and TP filled the Engine inputs below when the workbook was "
            "built (`inference-ledger build --engine ...`); they stay editable.", style.NOTE)
    r += 1
    _section(ctx, ws, f"A{r + 1}", "Headline")
    body = max(PLAN_BODY, _refs_block(ctx, ws, r + 1, "A", HEADLINE) + 3)
    _plan_charts(ctx, ws, PLAN_TOP)
    r = body
    _section(ctx, ws, f"A{r}", "Inputs")
    r += 1
    _header(ctx, ws, r, 1, ["Input", "Value", "Unit", "Override", "What it is"])
    group = None
    for inp in plan.INPUTS:
        r += 1
        if inp.group != group:
            group = inp.group
            ctx.put(ws, f"A{r}", group.capitalize()).font = Font(italic=True, bold=True, color="1F3864")
            r += 1
        coord = f"B{r}"
        ctx.put(ws, f"A{r}", inp.label)
        ctx.put(ws, f"C{r}", _shown(inp.unit, ctx.inputs[inp.name]))
        ctx.put(ws, f"E{r}", inp.doc, style.NOTE)
        fmt = _fmt(inp.name, inp.unit, ctx.inputs[inp.name])
        lk = lookup(inp.name, ctx.tables, keys, ctx.choice)
        typed = coord if lk is None else f"D{r}"          # the cell a user types into: value or override
        dv = _numeric_validation(inp, typed)
        ws.add_data_validation(dv)
        dv.add(typed)
        if lk is None:
            ctx.put(ws, coord, ctx.inputs[inp.name], style.INPUT, fmt)
        else:
            formula = where(Sym(f"ISBLANK({typed})"), lk[0], Sym(typed))
            ctx.formula(ws, coord, formula, ctx.inputs[inp.name], style.LOOKUP, fmt)
            ctx.put(ws, typed, ctx.overrides.get(inp.name), style.INPUT, fmt)
        ctx.define(named(inp.name), ws, coord)
    r += 2
    _section(ctx, ws, f"A{r}", "Named constants")
    r += 1
    _header(ctx, ws, r, 1, ["Constant", "Value", "Unit", "", "Why"])
    for const in WORKBOOK_CONSTANTS:
        r += 1
        ctx.put(ws, f"A{r}", const.name)
        ctx.put(ws, f"B{r}", float(const), style.CONSTANT, "General")
        ctx.put(ws, f"C{r}", const.unit)
        ctx.put(ws, f"E{r}", const.doc, style.NOTE)
        ctx.define(const.name, ws, f"B{r}")
    _plan_results(ctx, ws, body)
    ws.print_area = f"A1:K{ws.max_row}"


def _line_row(ctx: Ctx, ws, r: int, col: str, line: plan.Line) -> str:
    """label | value | unit | also | explanation, starting at col (G on Plan, A on ledger sheets)."""
    c0 = ord(col) - ord("A")
    L = lambda k: get_column_letter(c0 + 1 + k)  # noqa: E731
    coord = f"{L(1)}{r}"
    formula, _ = plan.render(line, named)
    ctx.put(ws, f"{L(0)}{r}", line.label)
    value = _num(ctx.values[line.name])
    ctx.formula(ws, coord, formula, value, style.FORMULA, _fmt(line.name, line.unit, value))
    ctx.put(ws, f"{L(2)}{r}", _shown(line.unit, _scale(line.name, line.unit, value)))
    also = _also(line.unit, _scale(line.name, line.unit, value))
    if also:
        conv, unit = also
        ctx.formula(ws, f"{L(3)}{r}", conv(Sym(coord)), _num(conv(ctx.values[line.name])), style.FORMULA,
                    style.number_format(unit))
    ctx.put(ws, f"{L(4)}{r}", line.doc, style.NOTE)
    ctx.define(named(line.name), ws, coord)
    return coord


def _verdict_rules(ws, rng: str, code: str) -> None:
    """The verdict's colours from its code (a reference of the range's first row): 3 green, 2 or 1 amber, 0 red."""
    meets = VERDICT_MEETS.name
    for cond, c in ((f"{code}={meets}", style.GREEN),
                    (f"AND(ISNUMBER({code}),{code}>=1,{code}<{meets})", style.AMBER),
                    (f"AND(ISNUMBER({code}),{code}=0)", style.RED)):
        ws.conditional_formatting.add(rng, FormulaRule(formula=[cond], stopIfTrue=True,
                                                       fill=PatternFill("solid", fgColor=c[0], bgColor=c[0]),
                                                       font=Font(color=c[1], bold=True)))


def _flag_rules(ws, rng: str, first: str) -> None:
    """A 1/0 fit line: green at 1, red at 0."""
    for cond, c in ((f"{first}=1", style.GREEN), (f"AND(ISNUMBER({first}),{first}=0)", style.RED)):
        ws.conditional_formatting.add(rng, FormulaRule(formula=[cond], fill=PatternFill("solid", fgColor=c[0],
                                                                                        bgColor=c[0]),
                                                       font=Font(color=c[1], bold=True)))


def _plan_verdict(ctx: Ctx, ws, r: int) -> int:
    """The verdict and the 1/0 fit lines, top left; returns the last row used."""
    _section(ctx, ws, f"A{r}", "Verdict")
    r += 1
    ctx.put(ws, f"A{r}", "Memory per GPU, then targets")
    ctx.formula(ws, f"B{r}", verdict.words(Sym(named("verdict"))), verdict.words_of(ctx.values["verdict"]), style.FORMULA)
    ws.merge_cells(f"B{r}:C{r}")
    _verdict_rules(ws, f"B{r}:C{r}", named("verdict"))
    ctx.put(ws, f"E{r}", "Green fits the requested concurrency and meets the targets; amber runs but misses a target or "
            "queues part of the concurrency; red does not start (the verdict code below).", style.NOTE)
    r += 1
    binding_limit_row(ctx, ws, r)
    for line in [l for l in plan.LINES if l.ledger == "fit"]:
        r += 1
        coord = _line_row(ctx, ws, r, "A", line)
        (_verdict_rules if line.name == "verdict" else _flag_rules)(ws, coord, coord)
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
        value = _num(ctx.values[name])
        ctx.formula(ws, f"{L(1)}{r}", Sym(named(name)), value, style.FORMULA, _fmt(name, q.unit, value))
        ctx.put(ws, f"{L(2)}{r}", _shown(q.unit, _scale(name, q.unit, value)))
        also = _also(q.unit, _scale(name, q.unit, value))
        if also:
            ctx.formula(ws, f"{L(3)}{r}", also[0](Sym(f"{L(1)}{r}")), _num(also[0](ctx.values[name])), style.FORMULA,
                        style.number_format(also[1]))
        ctx.put(ws, f"{L(4)}{r}", dict(LEDGER_SHEETS + (("cost", "Plan: Cost"),)).get(getattr(q, "ledger", ""),
                                                                                   "Plan: Inputs"))
    return r


def _bars(ws, rng: str) -> None:
    """Data bars from 0 to the largest, over a pale colour scale: Gnumeric ignores data bars, not colour scales."""
    ws.conditional_formatting.add(rng, ColorScaleRule(start_type="num", start_value=0, start_color="FFFFFF",
                                                      end_type="max", end_color="DDEBF7"))
    ws.conditional_formatting.add(rng, DataBarRule(start_type="num", start_value=0, end_type="max", color="5B9BD5"))


def _plan_results(ctx: Ctx, ws, r: int) -> None:
    """Summary of the three ledgers and the cost lines, right of the inputs."""
    _section(ctx, ws, f"G{r}", "Summary of the ledgers")
    r += 1
    _header(ctx, ws, r, 7, ["Quantity", "Value", "Unit", "Also", "Ledger sheet"])
    top = r
    r = _refs_block(ctx, ws, r, "G", SUMMARY) + 2
    # memory use at a glance: bars over weights, KV, workspace, total and usable per GPU (0 to the largest)
    rows = [k for k in range(top + 1, r - 1) if ws[f"I{k}"].value == _shown("B")][:5]
    if rows:
        _bars(ws, f"H{rows[0]}:H{rows[-1]}")
    # cost, and any ledger a later plan adds that has no sheet of its own
    shown = {k for k, _ in LEDGER_SHEETS} | {"fit"}
    for ledger in dict.fromkeys(l.ledger for l in plan.LINES if l.ledger not in shown):
        _section(ctx, ws, f"G{r}", ledger.capitalize())
        r += 1
        _header(ctx, ws, r, 7, ["Line", "Value", "Unit", "Also", "Why"])
        for line in [l for l in plan.LINES if l.ledger == ledger]:
            r += 1
            _line_row(ctx, ws, r, "G", line)
        r += 2


def _plan_charts(ctx: Ctx, ws, top: int) -> None:
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
    _section(ctx, ws, f"{_col(0)}{r}", "Chart data: memory per GPU")
    r += 1
    parts = (("Weights", "weights_bytes_per_gpu"), ("KV cache at peak", "kv_bytes_per_gpu"),
             ("Workspace", "workspace_bytes_per_gpu"), ("Capacity", None))
    cats = (("Planned use", None), ("Usable (x utilization)", "usable_bytes_per_gpu"),
            ("Physical (runtime)", "gpu_memory_bytes"))
    _header(ctx, ws, r, CHART_DATA_COL, ["Bar"] + [p[0] for p in parts])
    top = r
    fmt = style.number_format("B")
    for i, (cat, cap) in enumerate(cats):
        r += 1
        ctx.put(ws, f"{_col(0)}{r}", cat)
        for j, (_, name) in enumerate(parts):
            coord = f"{_col(1 + j)}{r}"
            src = name if i == 0 else (cap if name is None else None)
            if src:
                ctx.formula(ws, coord, Sym(named(src)), _num(ctx.values[src]), style.FORMULA, fmt)
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
    _section(ctx, ws, f"{_col(0)}{r}", "Chart data: decode step vs batch (plan formulas at concurrency = batch)")
    r += 1
    cols = _batch_columns()
    _header(ctx, ws, r, CHART_DATA_COL, ["Batch (sequences)"] + [plan.LINE_BY_NAME[c].label for c in cols])
    r += 1
    for j, c in enumerate(cols):
        ctx.put(ws, f"{_col(1 + j)}{r}", _shown(plan.LINE_BY_NAME[c].unit), style.NOTE)
    ctx.put(ws, f"{_col(0)}{r}", "sequences", style.NOTE)
    first = r + 1
    batch = np.array(BATCH_SIZES, dtype=float)
    vals = plan.evaluate({**ctx.inputs, "concurrency": batch})
    where_col = {"concurrency": _col(0)} | {c: _col(1 + j) for j, c in enumerate(cols)}
    for i, b in enumerate(BATCH_SIZES):
        r = first + i
        ctx.put(ws, f"{_col(0)}{r}", b, style.INPUT, "#,##0")
        ref = lambda n, r=r: f"${where_col[n]}{r}" if n in where_col else named(n)  # noqa: E731
        for c in cols:
            line = plan.LINE_BY_NAME[c]
            formula, _ = plan.render(line, ref)
            ctx.formula(ws, f"{where_col[c]}{r}", formula, float(np.asarray(vals[c])[i]), style.FORMULA,
                        style.number_format(line.unit, float(np.asarray(vals[c])[i])))
    last = r
    # the ridge marker: a vertical line at the batch where decode turns compute-bound
    y = BATCH_TARGETS[1]
    r += 2
    x0, x1 = f"{_col(1)}{r}", f"{_col(1)}{r + 1}"
    ctx.put(ws, f"{_col(0)}{r}", "Ridge marker (x, y)")
    ctx.formula(ws, x0, Sym(named("ridge_batch")), _num(ctx.values["ridge_batch"]), style.FORMULA, "#,##0")
    ctx.put(ws, f"{_col(2)}{r}", 0, None, style.number_format("s"))
    ctx.formula(ws, x1, Sym(x0), _num(ctx.values["ridge_batch"]), style.FORMULA, "#,##0")
    ymax = float(np.max(np.asarray(vals[y])))
    ctx.formula(ws, f"{_col(2)}{r + 1}", Sym(f"MAX({where_col[y]}{first}:{where_col[y]}{last})"), ymax,
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


def ledger_sheet(ledger: str, title: str) -> SheetBuilder:
    def build(wb, ctx: Ctx) -> None:
        ws = ctx.new_sheet(title, f"{title} ledger", {"A": 36, "B": 18, "C": 13, "D": 12, "E": 80, "F": 30},
                           tab="4472C4")
        ctx.put(ws, "A3", "One line per row: the formula refers to named quantities (click a value to read it); "
                "inputs live on the Plan sheet.", style.NOTE)
        ws.merge_cells("A3:F3")
        _header(ctx, ws, 5, 1, ["Line", "Value", "Unit", "Also", "Why (one sentence)", "Name"])
        ws.freeze_panes = "A6"
        r = 6
        for line in [l for l in plan.LINES if l.ledger == ledger]:
            _line_row(ctx, ws, r, "A", line)
            ctx.put(ws, f"F{r}", named(line.name), style.NOTE)
            r += 1
    build.__name__ = f"{ledger}_sheet"
    return build


# --- scenarios ---------------------------------------------------------------------------------


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
        heads.append((cols[name], q.label, _shown(q.unit, _num(ctx.values[q.name])), q.name))
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
            fmt = _fmt(inp.name, inp.unit, inputs[inp.name])
            lk = lookup(inp.name, ctx.tables, key_refs, choice)
            if inp.name in own or inp.name in set_by_rows:  # the row's own value (another row's column: the Plan's)
                ctx.put(ws, coord, inputs[inp.name], style.INPUT, fmt)
            elif lk is not None:
                ctx.formula(ws, coord, lk[0], inputs[inp.name], style.LOOKUP, fmt)
            else:
                ctx.formula(ws, coord, Sym(named(inp.name)), inputs[inp.name], style.FORMULA, fmt)
        for line in plan.LINES:
            formula, _ = plan.render(line, ref)
            v = _num(vals[line.name])
            ctx.formula(ws, f"{cols[line.name]}{r}", formula, v, style.FORMULA, _fmt(line.name, line.unit, v))
        for n in key:
            v = _num(vals[n])
            ctx.formula(ws, f"{cols['key:' + n]}{r}", Sym(ref(n)), v, style.FORMULA,
                        _fmt(n, plan.LINE_BY_NAME[n].unit, v))
    last = first + len(ctx.scenarios) - 1
    # dropdowns and conditional formats cover room for copied rows
    room = last + 200
    for (sel, label, sheet), col in zip(SELECTORS, sel_cols):
        dv = _list_validation(ctx.tables[sheet], label)
        ws.add_data_validation(dv)
        dv.add(f"{col}{first}:{col}{room}")
    _verdict_rules(ws, f"B{first}:B{room}", f"${cols['verdict']}{first}")
    for name in [l.name for l in plan.LINES if l.ledger == "fit" and l.unit == "1/0"]:
        for col in [cols[name]] + ([cols["key:" + name]] if "key:" + name in cols else []):
            _flag_rules(ws, f"{col}{first}:{col}{room}", f"{col}{first}")
    for col in (cols["total_bytes_per_gpu"], cols["key:total_bytes_per_gpu"]):
        _bars(ws, f"{col}{first}:{col}{room}")
    ws.auto_filter.ref = f"A{label_row}:{get_column_letter(last_col)}{last}"
    ws.print_area = f"A1:{key_last}{last}"
    ws.print_title_rows = f"{label_row}:{unit_row}"


# --- checks ------------------------------------------------------------------------------------


def _check_namespace(ctx: Ctx):
    models = ctx.tables["Models"]
    heads = Sym(models.index_match(SELECTOR_NAMES["model"], "num_attention_heads").text)
    refs = {n: Sym(named(n)) for n in plan.NAMES} | {"attention_heads": heads}
    vals = {**ctx.values, "attention_heads": models.value(ctx.choice["model"], "num_attention_heads")}
    return refs, vals


def check_rows(ctx: Ctx) -> list[tuple[str, str, str, Any, Any]]:
    """(group, label, doc, formula Sym, value) of every check, in sheet order."""
    refs, vals = _check_namespace(ctx)
    rows = []
    for chk in checks.SEED_CHECKLIST:
        group = "Seed checklist" if chk.counts else "Findings (not in the master check)"
        rows.append((group, chk.label, chk.doc, checks.one_zero(chk(refs)), int(checks.one_zero(chk(vals)))))
    for chk in checks.PLAN_INTEGRITY:
        rows.append(("Integrity", chk.label, chk.doc, checks.one_zero(chk(refs)), int(checks.one_zero(chk(vals)))))
    for key, label, sheet in SELECTORS:
        t = ctx.tables[sheet]
        found = Sym(f"IF(ISNUMBER(MATCH({SELECTOR_NAMES[key]},{t.ids},0)),1,0)")
        rows.append(("Integrity", f"{label} is in the {sheet} catalog", "The dropdown choice matches a catalog id.",
                     found, int(any(e.id == ctx.choice[key] for e in t.rows))))
    rows += finance_checks(ctx)
    for sheet, field in checks.POSITIVE_FIELDS:
        t = ctx.tables[sheet]
        if not t.has(field):
            continue
        col = get_column_letter(t.field_index(field) + 1)
        rng = absolute(sheet, f"{col}{FIRST_ROW}:{col}{FIRST_ROW + TABLE_ROWS - 1}")
        ok = all((getattr(e, field) or 0) > 0 for e in t.rows)
        rows.append(("Integrity", f"{sheet}: {field} positive in every row",
                     "Catalog values are physical quantities: none may be zero or negative.",
                     Sym(f'IF(COUNTIFS({rng},"<=0")=0,1,0)'), int(ok)))
    return rows


def checks_sheet(wb, ctx: Ctx) -> None:
    ws = ctx.new_sheet("Checks", "Checks", {"A": 26, "B": 70, "C": 10, "D": 80}, tab="7F7F7F")
    ctx.put(ws, "A3", "Each check is 1 (pass) or 0 (fail). The master check is the lowest of them and shows on "
            "every sheet. Findings describe the plan and are not counted.", style.NOTE)
    ws.merge_cells("A3:D3")
    _header(ctx, ws, 5, 1, ["Group", "Check", "Result", "What it verifies"])
    r = 5
    counted: list[str] = []
    for group, label, doc, formula, value in check_rows(ctx):
        r += 1
        ctx.put(ws, f"A{r}", group)
        ctx.put(ws, f"B{r}", label, style.NOTE)
        ctx.formula(ws, f"C{r}", formula, value, style.CHECK, "0")
        _flag_rules(ws, f"C{r}", f"C{r}")
        ctx.put(ws, f"D{r}", doc, style.NOTE)
        if not group.startswith("Findings"):
            counted.append(f"C{r}")
    r += 2
    _section(ctx, ws, f"A{r}", "Plan inputs in range (ranges from inference_ledger.args)")
    r += 1
    _header(ctx, ws, r, 1, ["Input", "Value", "In range", "Allowed"])
    for col, text in (("E", "Min"), ("F", "Min allowed (1/0)"), ("G", "Max"), ("H", "Whole (1/0)")):
        ctx.put(ws, f"{col}{r}", text, style.HEADER)
    for col in "EFGH":
        ws.column_dimensions[col].width = 12
    for inp in plan.INPUTS:
        r += 1
        a = inp.arg
        ctx.put(ws, f"A{r}", inp.name)
        v = ctx.inputs[inp.name]
        ctx.formula(ws, f"B{r}", Sym(named(inp.name)), v, style.FORMULA, _fmt(inp.name, inp.unit, v))
        ctx.put(ws, f"E{r}", a.lo, style.CONSTANT, "General")
        ctx.put(ws, f"F{r}", int(a.lo_inclusive), style.CONSTANT, "0")
        ctx.put(ws, f"G{r}", a.hi, style.CONSTANT, "General")
        ctx.put(ws, f"H{r}", int(a.integer), style.CONSTANT, "0")
        cells = [Sym(f"{c}{r}") for c in "BEFGH"]
        ctx.formula(ws, f"C{r}", checks.in_range(*cells), int(checks.in_range(v, a.lo, int(a.lo_inclusive), a.hi, int(a.integer))),
                    style.CHECK, "0")
        _flag_rules(ws, f"C{r}", f"C{r}")
        ctx.put(ws, f"D{r}", f"{a.allowed()} ({inp.unit})", style.NOTE)
        counted.append(f"C{r}")
    r += 2
    ctx.put(ws, f"A{r}", "Master check", style.SECTION)
    ctx.formula(ws, f"C{r}", Sym("MIN(" + ",".join(_runs(counted)) + ")"), ctx.master_value, style.CHECK, "0")
    _flag_rules(ws, f"C{r}", f"C{r}")
    ctx.define("master_check", ws, f"C{r}")


def _runs(cells: Sequence[str]) -> list[str]:
    """Cells of one column as ranges of consecutive rows: C6, C7, C8, C10 -> C6:C8, C10."""
    out: list[list[int]] = []
    col = cells[0][0]
    for row in (int(c[1:]) for c in cells):
        if out and row == out[-1][1] + 1:
            out[-1][1] = row
        else:
            out.append([row, row])
    return [f"{col}{a}:{col}{b}" if a != b else f"{col}{a}" for a, b in out]


def master_value(ctx: Ctx) -> int:
    vals = [v for g, _l, _d, _f, v in check_rows(ctx) if not g.startswith("Findings")]
    for inp in plan.INPUTS:
        a = inp.arg
        vals.append(int(checks.in_range(ctx.inputs[inp.name], a.lo, int(a.lo_inclusive), a.hi, int(a.integer))))
    return int(min(vals))


# --- catalogs ----------------------------------------------------------------------------------


#: Catalog text columns shown wrapped in a wide column (sources and notes run long).
WIDE_FIELDS = ("source", "notes", "price_source", "provenance")


def catalog_sheet(sheet: str) -> SheetBuilder:
    def build(wb, ctx: Ctx) -> None:
        t = ctx.tables[sheet]
        ws = ctx.new_sheet(sheet, t.title, tab="A5A5A5")
        ctx.put(ws, "A3", f"Add a row at the bottom (keep the field ids in row {FIELD_ROW}): it appears in the Plan and "
                "Scenarios dropdowns. Values in base units (bytes, B/s, FLOP/s); formats show GB, TB/s, TFLOP/s.",
                style.NOTE)
        ws.merge_cells("A3:L3")
        ncol = len(t.columns)
        last_col = get_column_letter(ncol)
        end = FIRST_ROW + TABLE_ROWS - 1
        for j, col in enumerate(t.columns):
            L = get_column_letter(j + 1)
            ctx.put(ws, f"{L}{FIELD_ROW}", col.field, style.NOTE)
            ctx.put(ws, f"{L}{HEADER_ROW}", col.label, style.HEADER)
            sample = next((v for e in t.rows if isinstance(v := t.value(e.id, col.field), (int, float))), None)
            ctx.put(ws, f"{L}{UNIT_ROW}", _shown(col.unit, sample), style.NOTE)
            ws.column_dimensions[L].width = 48 if col.field in WIDE_FIELDS else max(11, min(24, len(col.label) + 2))
        cells = {c.field: get_column_letter(k + 1) for k, c in enumerate(t.columns)}
        for i, entry in enumerate(t.rows):
            r = FIRST_ROW + i
            for j, col in enumerate(t.columns):
                coord = f"{get_column_letter(j + 1)}{r}"
                value = t.value(entry.id, col.field)
                fmt = style.number_format(col.unit, value if isinstance(value, (int, float)) else None)
                if col.field in t.formulas:
                    expr = t.formulas[col.field](lambda f, r=r: Sym(f"{cells[f]}{r}"))
                    ctx.formula(ws, coord, expr, value, style.FORMULA, fmt)
                else:
                    c = ctx.put(ws, coord, value, style.INPUT, fmt)
                    if col.field in WIDE_FIELDS:
                        c.alignment = Alignment(wrap_text=True, vertical="top")
        ctx.define(t.ids, ws, f"A{FIRST_ROW}:A{end}")
        ctx.define(t.table, ws, f"A{FIRST_ROW}:{last_col}{end}")
        ctx.define(t.fields_name, ws, f"A{FIELD_ROW}:{last_col}{FIELD_ROW}")
        ws.freeze_panes = f"B{FIRST_ROW}"
        ws.auto_filter.ref = f"A{HEADER_ROW}:{last_col}{FIRST_ROW + len(t.rows) - 1}"
        ws.print_title_rows = f"{HEADER_ROW}:{UNIT_ROW}"
        ws.print_area = f"A1:{last_col}{FIRST_ROW + len(t.rows) - 1}"
    build.__name__ = f"{sheet.lower()}_sheet"
    return build


#: The workbook, sheet by sheet, in display order.
SHEET_BUILDERS: list[SheetBuilder] = [
    start_sheet,
    plan_sheet,
    *[ledger_sheet(k, t) for k, t in LEDGER_SHEETS],
    scenarios_sheet,
    load_sheet,
    add_tco_sheet,
    add_forecast_sheet,
    add_sensitivity_sheet,
    checks_sheet,
    add_calibration_sheet,
    catalog_sheet("GPUs"),
    catalog_sheet("Models"),
    catalog_sheet("Dtypes"),
    catalog_sheet("GPU costs"),
]


def register_sheet(builder: SheetBuilder, after: Optional[str] = None) -> None:
    """Add a sheet builder (after the builder named ``after``, else at the end)."""
    names = [b.__name__ for b in SHEET_BUILDERS]
    SHEET_BUILDERS.insert(names.index(after) + 1 if after in names else len(SHEET_BUILDERS), builder)


# --- entry point -------------------------------------------------------------------------------


def resolve_build(model=None, gpu=None, weight_dtype=None, kv_dtype=None, *, config=None, context=None,
                  engine=None, numbers: Optional[Mapping[str, Any]] = None) -> resolve.Resolved:
    """The workbook's plan as the resolver gives it; a model or GPU not given is the default one."""
    if model is None and config is None:
        model = DEFAULT_CHOICE["model"]
    return resolve.resolve(model, DEFAULT_CHOICE["gpu"] if gpu is None else gpu, weight_dtype=weight_dtype,
                           kv_dtype=DEFAULT_CHOICE["kv_dtype"] if kv_dtype is None else kv_dtype,
                           engine=engine or engines.DEFAULT_ENGINE, context=context, config=config, numbers=numbers)


def build_date(tables: Mapping[str, Table]) -> datetime:
    """SOURCE_DATE_EPOCH when set (reproducible builds), else the newest catalog date."""
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    if sde:
        return datetime.fromtimestamp(int(sde), tz=timezone.utc).replace(tzinfo=None)
    dates = []
    for t in tables.values():
        for e in t.rows:
            d = str(getattr(e, "date", "") or "")
            try:
                dates.append(datetime.strptime(d[:10], "%Y-%m-%d"))
            except ValueError:
                continue
    return max(dates) if dates else datetime(2026, 1, 1)


def make_context(model=None, gpu=None, weight_dtype=None, kv_dtype=None, *, config=None, context=None,
                 engine=None, scenarios: Optional[Sequence[Scenario] | str | os.PathLike] = None,
                 forecast_months: Optional[int] = None, currency: Optional[str] = None,
                 currency_symbol: Optional[str] = None, **numbers) -> Ctx:
    """The plan the workbook opens on, assembled as ``inference-ledger plan`` does.

    Catalog lookups and defaults, then the engine's defaults for this GPU and TP
    (:func:`inference_ledger.resolve.resolve`), then the numbers given.  Takes what
    :func:`inference_ledger.cli.build.build_options` collects: ``config`` (a
    config.json whose model joins the Models sheet and is selected), ``context`` (prompt
    + output tokens), ``engine``, ``scenarios`` (a CSV path or Scenario rows) and plan
    input names; None means "not given".
    """
    r = resolve_build(model, gpu, weight_dtype, kv_dtype, config=config, context=context, engine=engine,
                      numbers=numbers)
    explicit, inputs = r.explicit, r.inputs
    tables = load_tables()
    if config is not None:
        # the sheet may be mailed: name the file, not where it lives on this machine
        m = dataclasses.replace(r.model, source=f"config.json given to the build ({Path(config).name})")
        models = tables["Models"]
        models.rows = [e for e in models.rows if e.id != m.id] + [m]
    choice = {"model": r.model.id, "gpu": r.gpu.id, "weight_dtype": r.weight_dtype, "kv_dtype": r.kv_dtype}
    eng = engines.get_engine(r.engine)
    if scenarios is None:
        scenarios = DEFAULT_SCENARIOS
    elif isinstance(scenarios, (str, os.PathLike)):
        scenarios = read_scenarios(scenarios)
    over = {k: v for k, v in explicit.items() if lookup(k, tables, SELECTOR_NAMES, choice) is not None}
    ctx = Ctx(wb=None, tables=tables, choice=choice, inputs=inputs, overrides=over, values=plan.evaluate(inputs),
              scenarios=tuple(scenarios), build_date=build_date(tables), version=__version__, engine=eng.id,
              engine_inputs=tuple(n for n in plan.NAMES if n in _engine_names(eng)),
              explicit=explicit)
    ctx.forecast_months, ctx.currency_code, ctx.currency_symbol = finance_options(forecast_months, currency,
                                                                                   currency_symbol)
    ctx.master_value = master_value(ctx)
    return ctx


def _engine_names(eng) -> set[str]:
    """Plan inputs an engine sets (its defaults depend on the GPU and TP, so rows get their own)."""
    return set(engines.engine_inputs(eng, gpu_memory_bytes=plan.INPUT_BY_NAME["gpu_memory_bytes"].default))


def _fit_rows(ws) -> None:
    """Give rows of wrapped text the height their lines need (openpyxl leaves 15 pt, and text overlaps)."""
    merged = {str(m).split(":")[0]: m for m in ws.merged_cells.ranges}
    default = 8.43
    for row in ws.iter_rows():
        need = 0
        for c in row:
            if not isinstance(c.value, str) or c.value.startswith("=") or not c.alignment.wrap_text:
                continue
            m = merged.get(c.coordinate)
            cols = range(m.min_col, m.max_col + 1) if m else [c.column]
            width = sum(ws.column_dimensions[get_column_letter(k)].width or default for k in cols)
            size = (c.font.sz or 11) if c.font else 11
            per_line = max(1.0, width * 11.0 / size * 1.15)
            need = max(need, -(-len(c.value) // int(per_line)))
        if need > 1:
            r = row[0].row
            ws.row_dimensions[r].height = max(ws.row_dimensions[r].height or 0, 13.5 * need)
            for c in row:  # labels and values line up with the first line of the wrapped text
                if c.value is not None and c.alignment.vertical != "top":
                    c.alignment = Alignment(vertical="top", wrap_text=c.alignment.wrap_text,
                                            horizontal=c.alignment.horizontal)


def render_workbook(ctx: Ctx, extra_sheets: Iterable[SheetBuilder] = (), template: bool = False) -> bytes:
    wb = Workbook()
    wb.remove(wb.active)
    ctx.wb = wb
    style.register(wb)
    style.set_currency(ctx.currency_code, ctx.currency_symbol)
    try:
        for builder in list(SHEET_BUILDERS) + list(extra_sheets):
            builder(wb, ctx)
    finally:
        style.set_currency("USD", "$")
    for ws in wb.worksheets:
        _fit_rows(ws)
    wb.active = 1  # open on Plan
    for ws in wb.worksheets:
        ws.sheet_view.tabSelected = ws.title == "Plan"
    wb.calculation.fullCalcOnLoad = True
    p = wb.properties
    p.creator = "inference-ledger"
    p.lastModifiedBy = "inference-ledger"
    p.title = TITLE
    p.subject = "LLM inference capacity plan: GPUs, latency, throughput and cost"
    p.description = DESCRIPTION
    p.keywords = "LLM inference, KV cache, GPU memory, TPOT, TTFT"
    p.created = p.modified = ctx.build_date
    p.lastPrinted = None
    raw = io.BytesIO()
    wb.save(raw)
    return package(raw.getvalue(), ctx.cached, ctx.build_date, template=template)


def build_workbook(path: str | os.PathLike = "inference-ledger.xlsx", *, extra_sheets: Iterable[SheetBuilder] = (),
                   template: Optional[bool] = None, **options) -> tuple[Path, dict[str, Any]]:
    """Write the workbook atomically; return its path and the Plan's evaluated values.

    options: model, gpu, weight_dtype, kv_dtype, scenarios (a sequence of Scenario), and
    any plan input name (tp=2, concurrency=32 ...) to override its default or catalog value.
    A path ending in .xltx is written as an Excel template.
    """
    check_target(path, "xlsx")   # a wrong name or a target that must not be replaced fails before any work
    path = Path(path)
    if template is None:
        template = path.suffix.lower() == ".xltx"
    ctx = make_context(**options)
    data = render_workbook(ctx, extra_sheets, template=template)
    write_bytes(path, data, "xlsx")
    return path, {k: _num(v) for k, v in ctx.values.items()}

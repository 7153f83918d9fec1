"""What every sheet uses: headers, sections, number scaling and formats, validations, names, row heights.

This module sits below the sheet modules (start, plan_sheet, ledgers, scenarios_sheet,
checks, catalogs ...) and imports none of them, so any sheet can use it without a loop.
"""

from __future__ import annotations

import functools
import math
import os
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np
from openpyxl.formatting.rule import ColorScaleRule, DataBarRule, FormulaRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation

from inference_ledger.catalogs import catalog, catalog_facts, engines
from inference_ledger.graph import plan, resolve, verdict
from inference_ledger.core.args import LedgerInputError, echo
from inference_ledger.core.refs import bound, name as defined_name, reference
from inference_ledger.core.expr import Sym
from inference_ledger.core.sheetfuncs import and_, concat, eq, ge, gt, isnumber, le, lt, where
from inference_ledger.core import unit_registry
from inference_ledger.core.units import VERDICT_MEETS, conversion

from . import style
from .context import Ctx, xname
from .tables import Table

#: Defined names of the dropdown choices (inference_ledger.workbook.tables.SELECTORS).
SELECTOR_NAMES = {"model": "model_id", "gpu": "gpu_id", "weight_dtype": "weight_dtype", "kv_dtype": "kv_dtype",
                  "engine": "engine_id"}
DEFAULT_CHOICE = {"model": catalog_facts.DEFAULT_MODEL, "gpu": catalog_facts.DEFAULT_GPU, "weight_dtype": None,
                  "kv_dtype": "bf16", "engine": engines.DEFAULT_ENGINE}

#: The ledgers that have a sheet of their own: (ledger, sheet title).
LEDGER_SHEETS = (("memory", "Memory"), ("compute", "Compute"), ("bandwidth", "Bandwidth"), ("cost", "Cost"))


# --- rendering helpers ---------------------------------------------------------------------


def py_value(v):
    return v.item() if hasattr(v, "item") else v


#: Workbook defined name of a plan quantity (its own name, see inference_ledger.workbook.context.xname).
named = xname


# --- sheet pieces ----------------------------------------------------------------------------


def header(ctx: Ctx, ws, row: int, col: int, labels: Sequence[str]) -> None:
    for i, text in enumerate(labels):
        ctx.put(ws, f"{get_column_letter(col + i)}{row}", text, style.HEADER)


def section(ctx: Ctx, ws, coord: str, text: str) -> None:
    ctx.put(ws, coord, text, style.SECTION)


def shown(unit: str, value: float | None = None) -> str:
    return style.shown_as(unit, value)


def unit_text(unit: str, fmt: str, value: float | None = None) -> str:
    """A unit column's text: empty where the number format already shows the unit or the word (units once)."""
    text = shown(unit, value)
    if unit in ("1/0", "code") or (text and fmt.endswith(f' {text.split()[0]}"')):
        return ""
    return text


def code_words(ctx: Ctx, ws, coord: str, name: str, at: str) -> None:
    """The words of the code in ``at`` written into ``coord`` (a live formula), if the code has words."""
    codes = plan.CODES.get(name)   # its words: dual, like the lines (a number to formulas, the words beside it)
    if codes is not None:
        ctx.formula(ws, coord, codes.render(ctx.at(ws, at)), style.FORMULA)


@functools.lru_cache(maxsize=None)
def _catalog_range() -> dict[str, tuple[float, float]]:
    """Smallest non-zero and largest magnitude of every plan quantity over the catalog's models (default GPU)."""
    out: dict[str, tuple[float, float]] = {}
    gpu = catalog.get_gpu(DEFAULT_CHOICE["gpu"])
    for m in catalog.load_models():
        try:
            # with the default engine's figures for that GPU, the kernel tables' included
            inputs = resolve.with_engine(resolve.plan_inputs(m, gpu), gpu_id=gpu.id, heads=m.num_attention_heads)
            values = {**inputs, **plan.evaluate(inputs)}
        except LedgerInputError:
            continue
        for k, v in values.items():
            if isinstance(v, (int, float, np.number)) and not isinstance(v, bool) and float(v) != 0:
                lo, hi = out.get(k, (math.inf, 0.0))
                out[k] = (min(lo, abs(float(v))), max(hi, abs(float(v))))
    return out


def scale(name: str, unit: str, value):
    """The value a quantity's format is chosen for, so the format follows the line, not the model picked.

    MoE kernel padding is 0 for a dense model and gigabytes for gpt-oss-120b: bytes are
    formatted for their largest value over the catalog (GB, with GiB beside it); seconds
    for their smallest (scientific when some model's is under a millisecond).
    """
    if not isinstance(value, (int, float, np.number)) or isinstance(value, bool):
        return value
    lo, hi = _catalog_range().get(name, (math.inf, 0.0))
    v = abs(float(value))
    if unit in ("B", "FLOP"):   # formatted for their largest value over the catalog (GB; TFLOP, else GFLOP)
        return max(v, hi)
    if unit == "s":
        return min(x for x in (v, lo) if x > 0) if (v > 0 or lo < math.inf) else v
    return value


def quantity_format(name: str, unit: str, value) -> str:
    return style.number_format(unit, scale(name, unit, value))


class View(NamedTuple):
    """The 'Also' column's view of a value: its conversion (of a Sym or number), the unit and the Excel format."""

    convert: Callable[[Any], Any]
    unit: str
    format: str


def second_view(name: str, unit: str, value) -> View | None:
    """A quantity's second view (unit_formats.csv ``also`` rows), chosen for the line, not the model (:func:`scale`):
    a bounded row (µs) only where the line's largest over the catalog is under it too (a 16 ms TPOT floor stays ms)
    and the line does not grow with the load (the catalog is read at one concurrency; a step's KV reads grow)."""
    view, seen = unit_registry.also(unit, scale(name, unit, value)), _catalog_range().get(name, (0, math.inf))
    loaded = name in plan.LINE_BY_NAME and plan.depends_on(name, "concurrency")
    if view and view.below and (seen[1] >= view.below or loaded):
        view = unit_registry.also(unit, view.below)     # the next row up (ms)
    return None if view is None else View(conversion(unit, view.in_), view.in_, view.format)


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


def numeric_validation(inp: plan.Input, coord: str) -> DataValidation:
    """The rule the CLI applies (inference_ledger.core.args): between lo and hi, lo excluded where the argument excludes
    it.

    Excel's "between" includes both ends; a whole number above lo starts at lo + 1, and
    a decimal above lo is a custom rule on the cell itself.
    """
    a = inp.arg
    lo_txt = ">=" if a.lo_inclusive else ">"
    if a.lo_inclusive or a.integer:
        lo = a.lo if a.lo_inclusive else a.lo + 1
        dv = DataValidation(type="whole" if a.integer else "decimal", operator="between",
                            formula1=bound(lo).text, formula2=bound(a.hi).text, allow_blank=True)
    else:
        c = reference(coord)
        dv = DataValidation(type="custom", allow_blank=True,
                            formula1=and_(isnumber(c), gt(c, bound(a.lo)), le(c, bound(a.hi))).text)
    dv.showInputMessage = dv.showErrorMessage = True
    dv.promptTitle = short_title(inp.label)
    full = "" if dv.promptTitle == inp.label else f"{inp.label}. "
    dv.prompt = _clip(f"{full}Allowed: {lo_txt} {a.lo:g} and <= {a.hi:g} {inp.unit}. {inp.doc}", PROMPT_MAX)
    dv.errorTitle = "Out of range"
    dv.error = _clip(f"{inp.name} must be {a.allowed()} ({inp.unit})", ERROR_MAX)
    return dv


def list_validation(table: Table, label: str) -> DataValidation:
    dv = DataValidation(type="list", formula1=table.ids, allow_blank=False)
    dv.showInputMessage = dv.showErrorMessage = True
    dv.promptTitle = short_title(label)
    dv.prompt = f"Pick from the {table.sheet} sheet; a row added there appears here."
    dv.errorTitle = "Not in the catalog"
    dv.error = f"Pick an id from the {table.sheet} sheet (or add a row there first)."
    return dv


def line_row(ctx: Ctx, ws, r: int, col: str, line: plan.Line) -> str:
    """label | value | unit | also | explanation, starting at col (G on Plan, A on ledger sheets)."""
    c0 = ord(col) - ord("A")
    L = lambda k: get_column_letter(c0 + 1 + k)  # noqa: E731
    coord = f"{L(1)}{r}"
    ctx.put(ws, f"{L(0)}{r}", line.label)
    value = py_value(ctx.values[line.name])
    fmt = quantity_format(line.name, line.unit, value)
    ctx.formula(ws, coord, line_expression(ctx, line), style.FORMULA, fmt)
    ctx.put_beside(ws, f"{L(2)}{r}", unit_text(line.unit, fmt, scale(line.name, line.unit, value)))
    also = second_view(line.name, line.unit, value)
    if line.unit == "code" and line.name in plan.CODES:   # the words where the unit and second view would be
        code_words(ctx, ws, f"{L(2)}{r}", line.name, coord)
        ws[f"{L(2)}{r}"].alignment = Alignment(wrap_text=True, vertical="top")
        ws.merge_cells(f"{L(2)}{r}:{L(3)}{r}")
    elif also:
        ctx.formula(ws, f"{L(3)}{r}", also.convert(ctx.at(ws, coord)), style.FORMULA, also.format)
    ctx.put_beside(ws, f"{L(4)}{r}", line.doc, style.NOTE)
    ctx.define(named(line.name), ws, coord)
    return coord


def line_expression(ctx: Ctx, line: plan.Line | str, ref=None, values=None) -> Sym:
    """A plan line's expression over the workbook's references (``ref``: the Plan's names unless given), carrying
    its value from the plan's evaluation of the same line (``values``: the plan's unless given)."""
    line = plan.LINE_BY_NAME[line] if isinstance(line, str) else line
    v = (ctx.values if values is None else values)[line.name]
    return plan.expression(line, ctx.ref if ref is None else ref, ctx.family_candidates, value=py_value(v))


def bill(code, value):
    """A bill's cell: the number when the plan starts (verdict >= 1), else the verdict's words ("does not fit";
    "invalid input" for the workbook's -1).  A Sym code renders the IF (Excel evaluates only the branch taken)."""
    if isinstance(code, Sym) or isinstance(value, Sym):
        return where(ge(code, 1), value, where(lt(code, 0), verdict.INVALID_WORDS, verdict.WORDS[verdict.DOES_NOT_FIT]))
    return value if float(code) >= 1 else verdict.words_of(float(code))


def verdict_code(ctx: Ctx) -> Sym:
    """The Plan's verdict code as the workbook computes it (-1 when a rule is broken)."""
    return defined_name(named("verdict"), ctx.verdict_code)


def verdict_words(ctx: Ctx) -> Sym:
    """The Plan's verdict in words: the invalid-input words name the first broken rule."""
    code = verdict_code(ctx)
    return where(lt(code, 0), concat(verdict.INVALID_WORDS + ": ", ctx.name("rule_broken", ctx.rule_broken)),
                 verdict.words(code))


def verdict_rules(ws, rng: str, code: str) -> None:
    """The verdict's colours from its code (a reference of the range's first row): 3 green, 2 or 1 amber, 0 (does
    not fit) or below (invalid input) red."""
    code = reference(code)
    for cond, c in ((eq(code, VERDICT_MEETS), style.GREEN),
                    (and_(isnumber(code), ge(code, 1), lt(code, VERDICT_MEETS)), style.AMBER),
                    (and_(isnumber(code), lt(code, 1)), style.RED)):
        ws.conditional_formatting.add(rng, FormulaRule(formula=[cond.text], stopIfTrue=True,
                                                       fill=PatternFill("solid", fgColor=c[0], bgColor=c[0]),
                                                       font=Font(color=c[1], bold=True)))


def flag_rules(ws, rng: str, first: str) -> None:
    """A 1/0 fit line: green at 1, red at 0."""
    first = reference(first)
    for cond, c in ((eq(first, 1), style.GREEN), (and_(isnumber(first), eq(first, 0)), style.RED)):
        ws.conditional_formatting.add(rng, FormulaRule(formula=[cond.text], fill=PatternFill("solid", fgColor=c[0],
                                                                                        bgColor=c[0]),
                                                       font=Font(color=c[1], bold=True)))



def bars(ws, rng: str) -> None:
    """Data bars from 0 to the largest, over a pale colour scale: Gnumeric ignores data bars, not colour scales."""
    ws.conditional_formatting.add(rng, ColorScaleRule(start_type="num", start_value=0, start_color="FFFFFF",
                                                      end_type="max", end_color="DDEBF7"))
    ws.conditional_formatting.add(rng, DataBarRule(start_type="num", start_value=0, end_type="max", color="5B9BD5"))


#: SOURCE_DATE_EPOCH's range: the dates a zip file (an .xlsx is one) records, 1980-01-01 to 2107-12-31.
SOURCE_DATE_RANGE = (315532800, 4354819198)


def source_date(text: str) -> datetime:
    """The date of SOURCE_DATE_EPOCH (seconds since 1970-01-01 UTC), or one line naming it and its range."""
    lo, hi = SOURCE_DATE_RANGE
    try:
        n = int(text.strip())
    except ValueError:
        n = None
    if n is None or not lo <= n <= hi:
        raise ValueError(f"SOURCE_DATE_EPOCH must be a whole number of seconds since 1970-01-01 UTC, from {lo} "
                         f"(1980-01-01) to {hi} (2107-12-31), the dates a zip file records (got {echo(text)})")
    return datetime.fromtimestamp(n, tz=timezone.utc).replace(tzinfo=None)


def build_date(tables: Mapping[str, Table]) -> datetime:
    """SOURCE_DATE_EPOCH when set (reproducible builds), else the newest catalog date."""
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    if sde:
        return source_date(sde)
    dates = []
    for t in tables.values():
        for e in t.rows:
            d = str(getattr(e, "date", "") or "")
            try:
                dates.append(datetime.strptime(d[:10], "%Y-%m-%d"))
            except ValueError:
                continue
    return max(dates) if dates else datetime(2026, 1, 1)


#: Lines a row of wrapped text grows to at most: a longer quote or source shows its first lines on screen and
#: paper (the cell holds all of it), so one catalog row never fills a page.
ROW_LINES_MAX = 8


def fit_rows(ws, cached: Mapping[tuple[str, str], object] = {}, blocks: Sequence = ()) -> None:  # noqa: B006
    """Give rows of wrapped text the height their lines need (openpyxl leaves 15 pt, and text overlaps).

    A formula's text is its cached value (``cached``: the build's (sheet, cell) -> value, read only); a row of a
    number block (``blocks``: the sheet's :class:`inference_ledger.workbook.context.NumberBlock`) that wraps is
    written as cells, which then line up with the wrapped text as every other cell of the row does."""
    merged = {str(m).split(":")[0]: m for m in ws.merged_cells.ranges}
    default = 8.43
    wraps: dict[tuple | None, bool] = {}   # wrap_text of each distinct style array (read once, not per cell)
    last = ws.max_column
    every = range(1, last + 1)
    columns: dict[tuple, list[int]] = {}   # the columns of a row that are cells, by the blocks it is in
    for r in range(1, ws.max_row + 1):   # ws.iter_rows(), less the cells of number blocks (never cells)
        key = tuple(k for k, b in enumerate(blocks) if r in b.rows)
        if key not in columns:
            columns[key] = [col for col in every if not any(blocks[k].holds(r, col) for k in key)] or [1]
        row = [ws.cell(r, col) for col in columns[key]]
        need = 0
        for c in row:
            text = c.value
            if isinstance(text, str) and text.startswith("="):
                text = cached.get((ws.title, c.coordinate))
            if not isinstance(text, str):
                continue
            key = tuple(c._style) if c._style is not None else None
            if key not in wraps:
                wraps[key] = bool(c.alignment.wrap_text)
            if not wraps[key]:
                continue
            m = merged.get(c.coordinate)
            cols = range(m.min_col, m.max_col + 1) if m else [c.column]
            width = sum(ws.column_dimensions[get_column_letter(k)].width or default for k in cols)
            size = (c.font.sz or 11) if c.font else 11
            need = min(ROW_LINES_MAX, max(need, style.text_lines(text, width, size, bool(c.font and c.font.b))))
        if need > 1:
            r = row[0].row
            for b in blocks:
                if r in b.rows:
                    b.to_cells(ws, r)
                    row = [ws.cell(r, col) for col in range(1, last + 1)]
            ws.row_dimensions[r].height = max(ws.row_dimensions[r].height or 0, style.LINE_POINTS * need)
            for c in row:  # labels and values line up with the first line of the wrapped text
                if c.value is not None and c.alignment.vertical != "top":
                    c.alignment = Alignment(vertical="top", wrap_text=c.alignment.wrap_text,
                                            horizontal=c.alignment.horizontal, indent=c.alignment.indent)

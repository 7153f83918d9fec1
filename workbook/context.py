"""What every sheet builder shares: the workbook, the plan, and the cached-value ledger.

A sheet builder is a function ``builder(wb, ctx)`` that adds its sheet(s) with
:meth:`Ctx.new_sheet` and writes cells only through :meth:`Ctx.put` (values), :meth:`Ctx.number_block` (a large block of constant
numbers) and :meth:`Ctx.formula` (an expression of :mod:`inference_ledger.expr`: its formula and the value it
computes, from one definition).  A formula reads other cells through :meth:`Ctx.at`, :meth:`Ctx.span`
and :meth:`Ctx.name`, references that carry the value the referenced cell holds, so no sheet module
types formula text or computes a cell's value beside its formula.  The package step then writes every
formula's cached value, so a builder that forgets one fails the build instead of mailing a blank.
"""

from __future__ import annotations

import copy
import functools
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Mapping, Optional, Sequence

from openpyxl.styles import Alignment
from openpyxl.utils import get_column_letter
from openpyxl.utils.cell import range_boundaries
from openpyxl.utils.exceptions import IllegalCharacterError
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.worksheet import Worksheet

from inference_ledger.graph import verdict
from inference_ledger.core.expr import ExpressionHasNoValue
from inference_ledger.core.refs import cell, name as defined_name, reference, span
from inference_ledger.core.expr import NOVALUE, Sym, XLError
from inference_ledger.core.sheetfuncs import concat, eq, ge, lt, where
from inference_ledger.core.refs import absolute

from . import style
from .tables import Table

#: The master check's words (row 2 of every sheet).
ALL_PASS = "All checks pass (Checks sheet)"
CHECK_FAILS = "A CHECK FAILS: see the Checks sheet"
VERDICT_FAILS = "MASTER CHECK FAILS: the verdict is not \"fits, meets targets\" (Plan)"
#: The longest of them: the row-2 link to the Summary goes right of it (workbook/printing.py).
MASTER_WORDS_LONGEST = max(len(w) for w in (ALL_PASS, CHECK_FAILS, VERDICT_FAILS))

# Names Excel would read as a cell (A1, XFD1048576) or R1C1 reference (R, C, R1C1, RC2).
_CELL_LIKE = re.compile(r"^([A-Za-z]{1,3}[0-9]+|[RrCc]|[Rr][0-9]*[Cc][0-9]*|[Rr][0-9]+|[Cc][0-9]+)$")
#: The one prefix a name gets when it would otherwise read as a reference.
NAME_PREFIX = "n_"


@functools.lru_cache(maxsize=None)
def _position(coord: str) -> tuple[int, int]:
    """(row, column) of one cell's reference such as "B7" (what ``ws[coord]`` parses at every call)."""
    min_col, min_row, max_col, max_row = range_boundaries(coord)
    if ":" in coord or min_col is None or min_row is None:
        raise ValueError(f"{coord!r} is not one cell's reference")
    return min_row, min_col


def xname(name: str) -> str:
    """Workbook defined name of a plan quantity: its own name unless that reads as a reference."""
    if _CELL_LIKE.match(name) or name.upper() in ("TRUE", "FALSE"):
        return NAME_PREFIX + name
    return name


@dataclass
class NumberBlock:
    """Constant numbers in the rows below a row of cells: ``rows`` maps a row number to its values from column
    ``first_col`` on; each column's cells take the style of the cell above them in ``first_row`` (a cell
    written through openpyxl)."""
    first_row: int
    first_col: int
    width: int
    rows: dict[int, tuple[float, ...]]

    def holds(self, row: int, col: int) -> bool:
        """Whether the block writes the cell at (row, col)."""
        return row in self.rows and self.first_col <= col < self.first_col + self.width

    def to_cells(self, ws: Worksheet, row: int) -> None:
        """Write one of the block's rows as openpyxl cells after all (a row whose cells a later step restyles)."""
        for j, v in enumerate(self.rows.pop(row)):
            c = ws.cell(row, self.first_col + j, v)
            c._style = copy.copy(ws.cell(self.first_row, self.first_col + j)._style)


@dataclass
class Ctx:
    wb: Any
    tables: dict[str, Table]
    choice: dict[str, str]  # selector -> chosen id (model, gpu, weight_dtype, kv_dtype)
    inputs: dict[str, float]  # plan inputs as the Plan sheet holds them
    overrides: dict[str, float]  # user overrides of catalog-derived inputs
    values: dict[str, Any]  # inference_ledger.graph.plan.evaluate(inputs)
    scenarios: tuple
    build_date: datetime
    version: str
    engine: str = ""  # serving engine whose defaults fill the engine inputs (inference_ledger.catalogs.engines)
    engine_inputs: tuple[str, ...] = ()  # the inputs the engine sets per GPU and TP (not looked up by name)
    explicit: dict[str, float] = field(default_factory=dict)  # every input the user gave a number for
    master_value: int = 1
    checks_pass: int = 1  # every counted check and range rule passes (inference_ledger.workbook.checks_sheet.standing)
    rule_broken: str = ""  # the first broken rule's words when one is
    currency_code: str = "USD"  # the currency every money format shows (amounts are not converted)
    currency_symbol: str = "$"
    forecast_months: int = 36  # columns of the Forecast sheet's timeline
    cached: dict[tuple[str, str], Any] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    #: Each family's columns (plan.FAMILIES: the TP degrees of the largest node in the GPUs table), and where each
    #: member sits at each candidate (flat name tp_candidates.4.fits -> sheet reference;
    #: inference_ledger.workbook.ledgers).
    family_candidates: dict[str, tuple[float, ...]] = field(default_factory=dict)
    family_cells: dict[str, str] = field(default_factory=dict)
    #: sheet title -> its blocks of constant numbers the package step writes straight into the sheet's XML
    #: (:meth:`number_block`)
    blocks: dict[str, list[NumberBlock]] = field(default_factory=dict)

    def ref(self, name: str) -> str:
        """Where a formula finds a quantity: a family table's cell, else the quantity's defined name."""
        return self.family_cells.get(name) or xname(name)

    @property
    def verdict_code(self) -> float:
        """The Plan's verdict code as the workbook computes it: the plan's, or -1 when a rule is broken."""
        return float(self.values["verdict"]) if self.checks_pass else verdict.INVALID_INPUT

    # --- sheets ------------------------------------------------------------------
    def new_sheet(self, title: str, heading: str | Sym, widths: Mapping[str, float] = (),
                  tab: Optional[str] = None) -> Worksheet:
        """A sheet with its title and the master check in row 2 (inference_ledger.workbook.printing sets up every
        sheet's printing)."""
        ws = self.wb.create_sheet(title)
        if tab:
            ws.sheet_properties.tabColor = tab
        ws.sheet_view.showGridLines = False
        if isinstance(heading, Sym):   # a title that follows the plan (a fleet's ledger: Ctx.fleet_title)
            self.formula(ws, "A1", heading, style.TITLE)
        else:
            self.put(ws, "A1", heading, style.TITLE)
        self.master_status(ws, "A2")
        for col, w in dict(widths).items():
            ws.column_dimensions[col].width = w
        return ws

    def master_status(self, ws: Worksheet, coord: str) -> None:
        """The master check in words: all pass; a check fails; or every check passes but the verdict is not
        "fits, meets targets" (a plan that does not fit never reads "All checks pass")."""
        self.formula(ws, coord, where(eq(self.name("master_check", self.master_value), 1), ALL_PASS,
                                      where(eq(self.name("checks_pass", self.checks_pass), 1), VERDICT_FAILS,
                                            CHECK_FAILS)), style.CHECK)

    def fleet_title(self, title: str) -> Sym:
        """The title over a fleet's figures: as it is while the plan starts, else saying that no fleet runs them (or
        that an input is invalid), as cells.bill says in each bill's cell."""
        code = self.name("verdict", self.verdict_code)
        return concat(title, where(ge(code, 1), "", where(lt(code, 0), f": {verdict.INVALID_WORDS}", verdict.NO_FLEET)))

    # --- cells -------------------------------------------------------------------
    def put_beside(self, ws: Worksheet, coord: str, text: str, style: Optional[str] = None) -> None:
        """Text in the cell after a right-aligned value (a unit, a note), indented off it: "576 elements", not
        "576elements"."""
        c = self.put(ws, coord, text, style)
        c.alignment = Alignment(horizontal="left", indent=1, vertical=c.alignment.vertical,
                                wrap_text=c.alignment.wrap_text)

    def put(self, ws: Worksheet, coord: str, value: Any, style: Optional[str] = None, fmt: Optional[str] = None,
            *, is_formula: bool = False):
        """A cell's value; a string is always a text cell (a label '=HYPERLINK(..)' stays text), unless is_formula."""
        c = ws._get_cell(*_position(coord))   # ws[coord], its reference parsed once per process
        try:
            c.value = value
        except IllegalCharacterError:
            raise ValueError(f"{ws.title}!{coord}: the text {value!r} has a control character a worksheet "
                             "cannot hold") from None
        if isinstance(value, str) and not is_formula:
            c.data_type = "s"
        if style:
            # openpyxl looks a named style up by scanning the workbook's list of names: once per name per
            # workbook, then each cell gets a copy of its style array (what ``c.style = style`` assigns)
            wb, arrays = self.__dict__.get("_named_style_arrays", (None, None))
            if wb is not ws.parent:
                arrays = {}
                self.__dict__["_named_style_arrays"] = (ws.parent, arrays)
            if style in arrays:
                c._style = type(arrays[style])(arrays[style])
            else:
                c.style = style
                arrays[style] = type(c._style)(c._style)
        if fmt:
            c.number_format = fmt
        return c

    def number_block(self, ws: Worksheet, row: int, col: int, rows: Sequence[Sequence[float]], style: Optional[str],
                     fmts: Sequence[Optional[str]]) -> None:
        """Rows of constant numbers from (row, col) down, column j in number format ``fmts[j]``: the first row is
        written as cells (:meth:`put`) and the rows below it go straight into the sheet's XML with that row's
        styles (:mod:`inference_ledger.workbook.package`), the same bytes as a cell each at a fraction of the
        cost (openpyxl spends tens of microseconds per cell: the Kernels sheet holds tens of thousands).

        Column widths count every row (:func:`inference_ledger.workbook.printing.fit_columns`); the rows below
        the first must have no other cell at or right of ``col``."""
        rows = tuple(tuple(float(v) for v in r) for r in rows)
        if not rows:
            return
        if any(len(r) != len(fmts) for r in rows):
            raise ValueError(f"{ws.title}: every row of a number block has {len(fmts)} values")
        if not all(math.isfinite(v) for r in rows for v in r):
            raise ValueError(f"{ws.title}: a number block holds finite numbers only")
        for j, (v, fmt) in enumerate(zip(rows[0], fmts)):
            self.put(ws, f"{get_column_letter(col + j)}{row}", v, style, fmt)
        if len(rows) > 1:
            below = {row + k: r for k, r in enumerate(rows[1:], start=1)}
            self.blocks.setdefault(ws.title, []).append(NumberBlock(row, col, len(fmts), below))

    def formula(self, ws: Worksheet, coord: str, expr: Sym, style: str = style.FORMULA,
                fmt: Optional[str] = None):
        """A formula cell from one expression: its formula, and the value it computes (the cached value the
        package writes)."""
        if not isinstance(expr, Sym):
            raise TypeError(f"{ws.title}!{coord}: a formula cell takes an expression (inference_ledger.expr), "
                            f"not {type(expr).__name__}")
        value = expr.value
        if hasattr(value, "item"):
            value = value.item()
        if value is NOVALUE or value is None or isinstance(value, XLError):
            raise ExpressionHasNoValue(f"{ws.title}!{coord}: no value for {expr.formula()} ({value!r})")
        self.cached[(ws.title, coord)] = value
        return self.put(ws, coord, expr.formula(), style, fmt, is_formula=True)

    # --- references that carry the value of what they reference -----------------------------------
    def held(self, sheet: str, coord: str) -> Any:
        """The value a cell holds: a formula's cached value, else what was put there (None: blank)."""
        if (sheet, coord) in self.cached:
            return self.cached[(sheet, coord)]
        return self.wb[sheet][coord].value

    def at(self, ws: Worksheet | str, coord: str, fix: str = "", qualified: bool = False) -> Sym:
        """A reference to a cell already written (``fix``: '$' on 'col', 'row' or 'both'; ``qualified``: with its
        sheet's name, for a formula on another sheet), carrying the value it holds."""
        sheet = ws if isinstance(ws, str) else ws.title
        return cell(coord, self.held(sheet, coord), sheet=sheet if qualified else None, fix=fix)

    def span(self, ws: Worksheet | str, first: str, last: str, fix: str = "", fix_last: Optional[str] = None,
             qualified: bool = False) -> Sym:
        """A range of cells already written (first..last, row by row), carrying their values."""
        sheet = ws if isinstance(ws, str) else ws.title
        c0, r0, c1, r1 = range_boundaries(f"{first}:{last}")
        vals = [self.held(sheet, f"{get_column_letter(c)}{r}") for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]
        return span(cell(first, sheet=sheet if qualified else None, fix=fix),
                      cell(last, fix=fix if fix_last is None else fix_last), vals)

    def name(self, name: str, value: Any = NOVALUE) -> Sym:
        """A reference to a plan quantity or defined name, carrying its value: the cell(s) it names when already
        written, else the plan's value, else ``value`` (a name defined further on: the master check)."""
        ref = self.names.get(name)
        if ref is not None:
            sheet, cells = ref.rsplit("!", 1)
            sheet = sheet[1:-1].replace("''", "'") if sheet.startswith("'") else sheet
            cells = cells.replace("$", "")
            if ":" in cells:
                a, b = cells.split(":")
                got = self.span(sheet, a, b).value
            else:
                got = self.held(sheet, cells)
            return defined_name(name, got)
        fam = self.family_cells.get(name)
        if fam is not None:
            sheet, c = fam.rsplit("!", 1)
            sheet = sheet[1:-1].replace("''", "'") if sheet.startswith("'") else sheet
            return reference(fam, self.held(sheet, c.replace("$", "")))
        for source in (self.values, self.inputs):
            if name in source:
                return defined_name(xname(name), source[name])
        return defined_name(xname(name), value)

    @property
    def q(self) -> "Quantities":
        """Every plan quantity as an attribute: ``ctx.q.target_qps`` is :meth:`quantity` ``("target_qps")``."""
        return Quantities(self)

    def quantity(self, name: str) -> Sym:
        """A plan quantity's reference (ref: its family table cell, else its defined name) with the plan's value."""
        v = self.values.get(name, self.inputs.get(name, NOVALUE))
        fam = self.family_cells.get(name)
        return reference(fam, v) if fam else defined_name(xname(name), v)

    def define(self, name: str, ws: Worksheet, coord: str) -> str:
        """A workbook-scoped defined name for one cell or range ('$'-absolute)."""
        if name in self.names:
            raise ValueError(f"defined name {name!r} used twice")
        ref = absolute(ws.title, coord)
        self.wb.defined_names[name] = DefinedName(name, attr_text=ref)
        self.names[name] = ref
        return name



class Quantities:
    """Plan quantities by attribute, each a reference carrying the plan's value (the formula side of a row written
    with ``p.name`` attributes, as :class:`workbook.calibration._Names` gives the numbers)."""

    def __init__(self, ctx: Ctx):
        self._ctx = ctx

    def __getattr__(self, name: str) -> Sym:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._ctx.quantity(name)


SheetBuilder = Callable[[Any, Ctx], None]

"""What every sheet builder shares: the workbook, the plan, and the cached-value ledger.

A sheet builder is a function ``builder(wb, ctx)`` that adds its sheet(s) with
:meth:`Ctx.new_sheet` and writes cells only through :meth:`Ctx.put` (values) and
:meth:`Ctx.formula` (formulas, with the value Python computed for them).  The
package step then writes every formula's cached value, so a builder that forgets one
fails the build instead of mailing a blank.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Mapping, Optional

from openpyxl.utils.exceptions import IllegalCharacterError
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.worksheet import Worksheet

from inference_ledger.graph import verdict
from inference_ledger.core.expr import Sym, eq, where

from . import style
from .tables import Table

#: The master check's words (row 2 of every sheet).
ALL_PASS = "All checks pass (Checks sheet)"
CHECK_FAILS = "A CHECK FAILS: see the Checks sheet"
VERDICT_FAILS = "Master check 0: the plan is not \"fits, meets targets\" (verdict on Plan)"

# Names Excel would read as a cell (A1, XFD1048576) or R1C1 reference (R, C, R1C1, RC2).
_CELL_LIKE = re.compile(r"^([A-Za-z]{1,3}[0-9]+|[RrCc]|[Rr][0-9]*[Cc][0-9]*|[Rr][0-9]+|[Cc][0-9]+)$")
#: The one prefix a name gets when it would otherwise read as a reference.
NAME_PREFIX = "n_"


def xname(name: str) -> str:
    """Workbook defined name of a plan quantity: its own name unless that reads as a reference."""
    if _CELL_LIKE.match(name) or name.upper() in ("TRUE", "FALSE"):
        return NAME_PREFIX + name
    return name


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

    def ref(self, name: str) -> str:
        """Where a formula finds a quantity: a family table's cell, else the quantity's defined name."""
        return self.family_cells.get(name) or xname(name)

    @property
    def verdict_code(self) -> float:
        """The Plan's verdict code as the workbook computes it: the plan's, or -1 when a rule is broken."""
        return float(self.values["verdict"]) if self.checks_pass else verdict.INVALID_INPUT

    # --- sheets ------------------------------------------------------------------
    def new_sheet(self, title: str, heading: str, widths: Mapping[str, float] = (),
                  tab: Optional[str] = None) -> Worksheet:
        """A sheet with its title and the master check in row 2 (inference_ledger.workbook.printing sets up every
        sheet's printing)."""
        ws = self.wb.create_sheet(title)
        if tab:
            ws.sheet_properties.tabColor = tab
        ws.sheet_view.showGridLines = False
        self.put(ws, "A1", heading, style.TITLE)
        self.master_status(ws, "A2")
        for col, w in dict(widths).items():
            ws.column_dimensions[col].width = w
        return ws

    def master_status(self, ws: Worksheet, coord: str) -> None:
        """The master check in words: all pass; a check fails; or every check passes but the verdict is not
        "fits, meets targets" (a plan that does not fit never reads "All checks pass")."""
        def words(master, checks):
            return where(eq(master, 1), ALL_PASS, where(eq(checks, 1), VERDICT_FAILS, CHECK_FAILS))
        self.formula(ws, coord, words(Sym("master_check"), Sym("checks_pass")),
                     words(self.master_value, self.checks_pass), style.CHECK)

    # --- cells -------------------------------------------------------------------
    def put(self, ws: Worksheet, coord: str, value: Any, style: Optional[str] = None, fmt: Optional[str] = None,
            *, is_formula: bool = False):
        """A cell's value; a string is always a text cell (a label '=HYPERLINK(..)' stays text), unless is_formula."""
        c = ws[coord]
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

    def formula(self, ws: Worksheet, coord: str, expr: Sym | str, value: Any, style: str = style.FORMULA,
                fmt: Optional[str] = None):
        """A formula cell and the value it computes (the cached value the package writes)."""
        text = expr.formula() if isinstance(expr, Sym) else expr
        if not text.startswith("="):
            text = "=" + text
        if hasattr(value, "item"):
            value = value.item()
        if value is None:
            raise ValueError(f"{ws.title}!{coord}: no value for {text}")
        self.cached[(ws.title, coord)] = value
        return self.put(ws, coord, text, style, fmt, is_formula=True)

    def define(self, name: str, ws: Worksheet, coord: str) -> str:
        """A workbook-scoped defined name for one cell or range ('$'-absolute)."""
        if name in self.names:
            raise ValueError(f"defined name {name!r} used twice")
        ref = absolute(ws.title, coord)
        self.wb.defined_names[name] = DefinedName(name, attr_text=ref)
        self.names[name] = ref
        return name


def absolute(sheet: str, coord: str) -> str:
    def one(c):
        m = re.match(r"([A-Z]+)([0-9]+)$", c)
        return f"${m.group(1)}${m.group(2)}"

    quoted = f"'{sheet}'" if re.search(r"[^A-Za-z0-9_]", sheet) else sheet
    return quoted + "!" + ":".join(one(c) for c in coord.split(":"))


SheetBuilder = Callable[[Any, Ctx], None]

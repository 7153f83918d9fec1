"""References, lookups and aggregates: the spreadsheet's addressing half of the expressions of
:mod:`inference_ledger.core.expr`.

A defined name, a cell, a range and the absolute text of a defined name's target carry the value of what they
point at, so a formula over them still computes (the dual evaluation and the bare-number guard stay in the
expression module: these helpers build :class:`~inference_ledger.core.expr.Sym` through it).  The lookups
(INDEX/MATCH/IFERROR) and the aggregates over ranges (SUM, MIN, MAX, COUNT, MEDIAN, SUMPRODUCT, COUNTIFS) compute
as LibreOffice and Excel do: texts and blanks skipped, the first error value returned.
"""

from __future__ import annotations

import math
import operator
import re
from typing import Any

import numpy as np

from inference_ledger.core.expr import NA, NOVALUE, NUM, Sym, XLError, _call, _literal, _plain, is_sym, value_of

__all__ = [
    "name",
    "cell",
    "span",
    "absolute",
    "iferror",
    "index",
    "match",
    "sum_of",
    "min_of",
    "max_of",
    "count_of",
    "median_of",
    "sumproduct",
    "count_if",
    "template_cell",
    "reference",
    "bound",
    "ROW_MARK",
]


# --- references ----------------------------------------------------------------------------------------------

_NAME = re.compile(r"^[A-Za-z_\\][A-Za-z0-9_.]*$")
_COORD = re.compile(r"^([A-Z]{1,3})([0-9]+)$")


def name(defined: str, value: Any = NOVALUE) -> Sym:
    """A reference to a workbook defined name (or a named constant), carrying the value of what it names."""
    if not _NAME.match(defined):
        raise ValueError(f"name(): {defined!r} is not a defined name")
    return Sym(defined, value=_plain(value))


def _quoted(sheet: str) -> str:
    return "'" + sheet.replace("'", "''") + "'" if re.search(r"[^A-Za-z0-9_]", sheet) else sheet


def _coord_text(coord: str, fix: str) -> str:
    m = _COORD.match(coord)
    if m is None or fix not in ("", "col", "row", "both"):
        raise ValueError(f"cell(): {coord!r} is not a cell like C5 (fix: '', 'col', 'row' or 'both')")
    c, r = m.groups()
    return ("$" if fix in ("col", "both") else "") + c + ("$" if fix in ("row", "both") else "") + r


def cell(coord: str, value: Any = NOVALUE, *, sheet: str | None = None, fix: str = "") -> Sym:
    """A reference to one cell (``C5``; ``fix`` 'col' $C5, 'row' C$5, 'both' $C$5), on ``sheet`` when given,
    carrying the value the cell holds."""
    text = _coord_text(coord, fix)
    return Sym(text if sheet is None else _quoted(sheet) + "!" + text, value=_plain(value))


#: What stands for the row number in a row template (a shared formula written once for every row of a table).
ROW_MARK = "\x00"


def template_cell(col: str, fix_col: bool = True) -> Sym:
    """A cell of column ``col`` in the row a row template is written to ($C and :data:`ROW_MARK`)."""
    if not re.match(r"^[A-Z]{1,3}$", col):
        raise ValueError(f"template_cell(): {col!r} is not a column")
    return Sym(("$" if fix_col else "") + col + ROW_MARK)


def span(first: Sym, last: Sym, values: Any = NOVALUE) -> Sym:
    """A range from one cell reference to another (``$D$5:D9``; the sheet is the first cell's), carrying the
    values of its cells in order (an array: comparisons and arithmetic over it go cell by cell, as in SUMPRODUCT)."""
    tail = last.text.split("!")[-1]
    return Sym(first.text + ":" + tail, value=NOVALUE if values is NOVALUE else _array(values))


def _array(values: Any) -> np.ndarray:
    vals = list(values)
    if all(isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)) for v in vals):
        return np.asarray(vals, dtype=float)
    return np.asarray(vals, dtype=object)


def absolute(sheet: str, coord: str, always_quote: bool = False) -> str:
    """The '$'-absolute reference text of a cell or range on a sheet (a defined name's target): 'Plan'!$B$5."""
    quoted = "'" + sheet.replace("'", "''") + "'" if always_quote else _quoted(sheet)
    return quoted + "!" + ":".join(_coord_text(c, "both") for c in coord.split(":"))


_REFERENCE = re.compile(r"^(?:(?:'[^']+'|[A-Za-z_][\w.]*)!)?\$?[A-Z]{1,3}\$?[0-9]+(?::\$?[A-Z]{1,3}\$?[0-9]+)?$")


def reference(ref: Any, value: Any = NOVALUE) -> Sym:
    """A reference given as an expression (returned as it is) or as the text of one: a defined name (tpot_seconds),
    a cell or range (B5, $C9, 'Plan'!$B$5:$B$9); anything else is refused (a reference is never a formula)."""
    if isinstance(ref, Sym):
        return ref
    if not isinstance(ref, str) or not (_NAME.match(ref) or _REFERENCE.match(ref)):
        raise ValueError(f"reference(): {ref!r} is not a defined name or a cell reference")
    return Sym(ref, value=_plain(value))


def bound(x: float) -> Sym:
    """A number typed into a rule that states a range, not into a plan formula (a data validation's bound: the
    argument's own lo and hi); plan formulas refuse bare numbers (:class:`HardCodedConstant`)."""
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"bound(): {x!r} is not a finite number")
    return Sym(f"{v:.15G}", value=v)


# --- lookups and errors --------------------------------------------------------------------------------------


def iferror(x: Any, alt: Any) -> Any:
    """IFERROR(x, alt): alt where x is an error value."""
    if is_sym(x, alt):
        out = _call("IFERROR", x, alt)
        v = value_of(x)
        out.value = value_of(alt) if isinstance(v, XLError) else v
        return out
    return alt if isinstance(x, XLError) else x


def _cells(v: Any) -> list:
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v.ravel()]
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return [_plain(v)]


def match(key: Any, rng: Any) -> Any:
    """MATCH(key, rng, 0): the 1-based position of the first cell equal to key (texts without case), else #N/A."""
    if is_sym(key, rng):
        return _call("MATCH", key, rng, 0, fn=lambda k, r, _z: match(k, r))
    for i, v in enumerate(_cells(rng), start=1):
        if isinstance(v, str) and isinstance(key, str):
            if v.lower() == key.lower():
                return i
        elif v is not None and not isinstance(v, (str, XLError)) and not isinstance(key, str) and v == key:
            return i
    return NA


def index(rng: Any, row: Any, col: Any = None) -> Any:
    """INDEX(rng, row[, col]): the cell at a 1-based position (of a column or row of cells; a table's value, when
    it carries one, is a list of rows); #REF!-like positions outside the range are #N/A."""
    if is_sym(rng, row, col):
        args = (rng, row) if col is None else (rng, row, col)
        return _call("INDEX", *args, fn=lambda *v: index(*v))
    if isinstance(row, XLError) or isinstance(col, XLError):
        return row if isinstance(row, XLError) else col
    cells = rng if col is not None else _cells(rng)
    try:
        k = int(row)
        got = cells[k - 1] if k >= 1 else NA
        if col is not None:
            c = int(col)
            got = got[c - 1] if c >= 1 else NA
    except (IndexError, TypeError, ValueError):
        return NA
    return _plain(got)


# --- aggregates over ranges (numbers only: texts and blanks are skipped, as the spreadsheet does) ----------------


def _numbers(*ranges: Any) -> Any:
    out = []
    for r in ranges:
        for v in _cells(r):
            if isinstance(v, XLError):
                return v
            if isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)):
                out.append(float(v))
    return out


def _aggregate(name: str, fn, empty: Any):
    def agg(*ranges: Any) -> Any:
        if is_sym(*ranges):
            return _call(name, *ranges, fn=agg)
        nums = _numbers(*ranges)
        if isinstance(nums, XLError):
            return nums
        return fn(nums) if nums else empty

    agg.__name__ = name.lower() + "_of"
    agg.__doc__ = f"{name}(ranges...) over the numbers of its ranges (texts and blanks skipped)."
    return agg


sum_of = _aggregate("SUM", lambda xs: math.fsum(xs), 0.0)
min_of = _aggregate("MIN", min, 0.0)
max_of = _aggregate("MAX", max, 0.0)
count_of = _aggregate("COUNT", lambda xs: float(len(xs)), 0.0)
median_of = _aggregate("MEDIAN", lambda xs: float(np.median(xs)), NUM)


def sumproduct(*arrays: Any) -> Any:
    """SUMPRODUCT(a, b, ...): the sum of the cell-by-cell products (a text or blank cell counts 0)."""
    if is_sym(*arrays):
        return _call("SUMPRODUCT", *arrays, fn=sumproduct)
    cols = [_cells(a) for a in arrays]
    for c in cols:
        for v in c:
            if isinstance(v, XLError):
                return v

    def num(v):
        if isinstance(v, (bool, np.bool_)):
            return float(v)
        return float(v) if isinstance(v, (int, float, np.number)) else 0.0
    return math.fsum(math.prod(num(v) for v in row) for row in zip(*cols))


_CRITERIA = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "=": operator.eq}


def count_if(rng: Any, op: str, crit: Any) -> Any:
    """COUNTIFS(rng, "<op><crit>"): how many numbers of the range compare so (crit 0 or 1, or a named constant's
    text is not allowed: the criterion is a text)."""
    if op not in _CRITERIA:
        raise ValueError(f"count_if(): op must be one of {sorted(_CRITERIA)}")
    if is_sym(rng):
        c = _literal(crit)
        return _call("COUNTIFS", rng, op + c, fn=lambda r, _c: count_if(r, op, crit))
    nums = _numbers(rng)
    if isinstance(nums, XLError):
        return nums
    return float(sum(1 for v in nums if _CRITERIA[op](v, float(crit))))

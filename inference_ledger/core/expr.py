"""One definition, two evaluations: numbers (Python/numpy) and Excel formula text.

Every ledger formula in :mod:`inference_ledger.formulas.ledger` is written once, as ordinary Python
arithmetic plus the handful of helpers below (``maximum``, ``ceil``, ``where`` ...).

* Called with numbers or numpy arrays it computes the answer (the CLI, the Excel
  functions, the cached values in the workbook).
* Called with :class:`Sym` arguments it returns a :class:`Sym` whose ``text`` is the
  same formula as a portable Excel expression (the workbook's cell formulas).

Named constants (:class:`Const`) are floats that also carry a name, so the K-and-V
factor is ``2`` to Python and ``KV_FACTOR`` (a labelled cell) to Excel.  A bare
numeric literal other than 0 or 1 inside a rendered formula raises
:class:`HardCodedConstant`: that is the FAST "no constants in formulas" rule,
enforced when the workbook is generated rather than reviewed by eye.

Only functions that Excel 2016, LibreOffice 7.4 and Google Sheets all evaluate are
emitted: MAX, MIN, ROUNDUP, INT, IF, AND, OR, LOG, INDEX, MATCH.
"""

from __future__ import annotations

import math
import operator
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np

__all__ = [
    "Const",
    "Sym",
    "HardCodedConstant",
    "is_sym",
    "maximum",
    "minimum",
    "ceil",
    "floor",
    "where",
    "ge",
    "gt",
    "le",
    "lt",
    "eq",
    "and_",
    "or_",
    "log",
    "log10",
    "mod",
    "abs_",
    "isnumber",
    "isblank",
    "concat",
    "text",
    "PORTABLE_FUNCTIONS",
    "NOVALUE",
    "XLError",
    "value_of",
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
    "one_zero",
    "literal",
    "template_cell",
    "reference",
    "bound",
    "ROW_MARK",
    "ExpressionHasNoValue",
]

# Functions the generated formulas may use (checked by a test over every formula).
PORTABLE_FUNCTIONS = frozenset(
    {"MAX", "MIN", "ROUNDUP", "INT", "IF", "AND", "OR", "LOG", "INDEX", "MATCH",
     "SUM", "SUMPRODUCT", "SUMIFS", "IFERROR", "ROUNDDOWN", "CEILING", "ABS",
     "COUNTA", "COUNTIFS", "ISNUMBER", "NOT", "ROUND", "TEXT", "COUNT", "MEDIAN",
     "AVERAGE", "POWER", "ISBLANK", "LEN", "MOD"}
)

# Operator precedence of the rendered Excel text (higher binds tighter).
_ATOM, _POW, _MUL, _ADD, _CMP = 100, 50, 40, 30, 10

# Literals allowed inside formulas: identities, not assumptions.
_ALLOWED_LITERALS = (0.0, 1.0)


class HardCodedConstant(ValueError):
    """A numeric literal other than 0/1 reached an Excel formula."""


class Const(float):
    """A named constant: a float to Python, a defined name to Excel."""

    name: str
    doc: str
    unit: str

    def __new__(cls, value: float, name: str, doc: str = "", unit: str = ""):
        self = super().__new__(cls, value)
        self.name = name
        self.doc = doc
        self.unit = unit
        return self

    def __reduce__(self):  # keep pickling/copying sane
        return (Const, (float(self), self.name, self.doc, self.unit))

    def __repr__(self) -> str:
        return f"Const({float(self)!r}, {self.name!r})"


def _literal(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return "TRUE" if x else "FALSE"
    v = float(x)
    if v not in _ALLOWED_LITERALS:
        raise HardCodedConstant(
            f"numeric literal {x!r} inside an Excel formula; use a named Const instead"
        )
    return "1" if v == 1.0 else "0"


def _as_sym(x: Any) -> "Sym":
    if isinstance(x, Sym):
        return x
    if isinstance(x, Const):
        return Sym(x.name, value=float(x))
    if isinstance(x, str):
        return Sym('"' + x.replace('"', '""') + '"', value=x)
    return Sym(_literal(x), value=x.item() if hasattr(x, "item") else x)


def is_sym(*xs: Any) -> bool:
    return any(isinstance(x, Sym) for x in xs)


def _wrap(s: "Sym", min_prec: int, strict: bool = False) -> str:
    if s.prec < min_prec or (strict and s.prec == min_prec):
        return "(" + s.text + ")"
    return s.text


_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "^": operator.pow,
        "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "=": operator.eq}


def _binary(a: Any, op: str, b: Any, prec: int, left_assoc_only: bool = False) -> "Sym":
    sa, sb = _as_sym(a), _as_sym(b)
    # Excel evaluates ^ left to right (2^3^2 = 64), so a right-hand ^ also needs parens.
    strict_right = left_assoc_only or op == "^"
    out = Sym(_wrap(sa, prec) + op + _wrap(sb, prec, strict=strict_right), prec)
    if op in "+-*/^":
        out.value = _apply(_OPS[op], sa.value, sb.value, arithmetic=True)
    else:
        out.value = _apply(lambda x, y: _compare(_OPS[op], x, y), sa.value, sb.value)
    return out


def _compare(pyop, x, y):
    """A comparison as a spreadsheet makes it: a blank is 0 beside a number and "" beside a text; texts compare
    without case; a text is greater than any number."""
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return pyop(x, y)
    if x is None:
        x = "" if isinstance(y, str) else 0.0
    if y is None:
        y = "" if isinstance(x, str) else 0.0
    if isinstance(x, str) and isinstance(y, str):
        return pyop(x.lower(), y.lower())
    if isinstance(x, str) != isinstance(y, str):  # a text ranks above every number
        return pyop(1 if isinstance(x, str) else 0, 1 if isinstance(y, str) else 0)
    return pyop(x, y)


class _NoValue:
    """The value of an expression whose operands carry none (a bare reference)."""

    def __repr__(self) -> str:
        return "NOVALUE"

    def __bool__(self):
        return False


#: What :attr:`Sym.value` is when an operand carries no value.
NOVALUE = _NoValue()


class XLError:
    """An Excel error value as the Python side of an expression computes it (#N/A, #DIV/0!, #VALUE!, #NUM!)."""

    __slots__ = ("code",)

    def __init__(self, code: str):
        self.code = code

    def __repr__(self) -> str:
        return f"XLError({self.code!r})"

    def __eq__(self, other):
        return isinstance(other, XLError) and other.code == self.code

    def __hash__(self):
        return hash(self.code)


NA, DIV0, VALUE, NUM = XLError("#N/A"), XLError("#DIV/0!"), XLError("#VALUE!"), XLError("#NUM!")


class ExpressionHasNoValue(ValueError):
    """An expression written into a cell without the value it computes (an operand carried none)."""


class Sym:
    """An Excel expression under construction, and the value it computes when its operands carry values.

    ``text`` is the formula (without '='); ``value`` is what the same expression gives in Python over its
    operands' values (:data:`NOVALUE` when an operand carries none): every helper of this module computes both,
    so a workbook cell writes the formula and its cached value from one expression."""

    __slots__ = ("text", "prec", "value")
    __array_priority__ = 1000  # numpy defers to our operators

    def __init__(self, text: str, prec: int = _ATOM, value: Any = NOVALUE):
        self.text = text
        self.prec = prec
        self.value = value

    def __repr__(self) -> str:
        return f"Sym({self.text!r})" if self.value is NOVALUE else f"Sym({self.text!r}, value={self.value!r})"

    def formula(self) -> str:
        return "=" + self.text

    def at(self, value: Any) -> "Sym":
        """The same formula carrying ``value``: what the one definition's numeric evaluation gave for it (a plan
        line's value from the plan, a catalog lookup's from the catalog)."""
        return Sym(self.text, self.prec, _plain(value))

    # arithmetic -----------------------------------------------------------------
    def __add__(self, o):
        return _binary(self, "+", o, _ADD)

    def __radd__(self, o):
        return _binary(o, "+", self, _ADD)

    def __sub__(self, o):
        return _binary(self, "-", o, _ADD, left_assoc_only=True)

    def __rsub__(self, o):
        return _binary(o, "-", self, _ADD, left_assoc_only=True)

    def __mul__(self, o):
        return _binary(self, "*", o, _MUL)

    def __rmul__(self, o):
        return _binary(o, "*", self, _MUL)

    def __truediv__(self, o):
        return _binary(self, "/", o, _MUL, left_assoc_only=True)

    def __rtruediv__(self, o):
        return _binary(o, "/", self, _MUL, left_assoc_only=True)

    def __pow__(self, o):
        return _binary(self, "^", o, _POW)

    def __rpow__(self, o):
        return _binary(o, "^", self, _POW)

    def __neg__(self):
        # Excel binds unary minus tighter than ^, so always parenthesise the operand.
        return Sym("-(" + self.text + ")", _MUL, _apply(operator.neg, self.value, arithmetic=True))

    def __bool__(self):
        raise TypeError("a symbolic Excel expression has no truth value; use where()")


def _call(name: str, *args: Any, fn: Any = None) -> Sym:
    """NAME(args): ``fn`` computes its value over the arguments' values (none when an argument has none)."""
    syms = [_as_sym(a) for a in args]
    out = Sym(name + "(" + ",".join(s.text for s in syms) + ")")
    if fn is not None:
        out.value = _apply(fn, *(s.value for s in syms))
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _apply(fn: Any, *vals: Any, arithmetic: bool = False) -> Any:
    """fn over operand values as a spreadsheet computes it: no value when one has none, the first error value
    propagates, a blank is 0 in arithmetic, a text in arithmetic is #VALUE!, a division by zero #DIV/0!."""
    if any(v is NOVALUE for v in vals):
        return NOVALUE
    for v in vals:
        if isinstance(v, XLError):
            return v
    if arithmetic:
        if any(isinstance(v, str) for v in vals):
            return VALUE
        vals = tuple(0.0 if v is None else v for v in vals)
    try:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return _plain(fn(*vals))
    except ZeroDivisionError:
        return DIV0
    except (TypeError, ValueError, OverflowError):
        return VALUE


def value_of(x: Any) -> Any:
    """The value an operand carries: a Sym's value, a constant's float, else the operand itself."""
    if isinstance(x, Sym):
        return x.value
    if isinstance(x, Const):
        return float(x)
    return _plain(x)


def _num(x: Any):
    """Plain float for scalars, ndarray for arrays (keeps scalar calls scalar)."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (list, tuple)):
        return np.asarray(x, dtype=float)
    return x


def _snap(x):
    """Snap values within 1e-12 (relative) of an integer onto it.

    Excel and LibreOffice round to about 15 significant digits before ROUNDUP/INT,
    so 2.0000000000000004 rounds up to 2 there.  Doing the same here keeps Python
    and the spreadsheet on the same side of every integer boundary.
    """
    if isinstance(x, np.ndarray):
        r = np.round(x)
        close = np.abs(x - r) <= 1e-12 * np.maximum(np.abs(x), 1.0)
        return np.where(close, r, x)
    r = round(x)
    return float(r) if abs(x - r) <= 1e-12 * max(abs(x), 1.0) else x


def _scalar_or_array(v):
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    return v


def maximum(*xs):
    if is_sym(*xs):
        return _call("MAX", *xs, fn=maximum)
    if any(isinstance(x, np.ndarray) for x in xs):
        out = np.asarray(xs[0], dtype=float)
        for x in xs[1:]:
            out = np.maximum(out, x)
        return out
    return max(float(x) for x in xs)


def minimum(*xs):
    if is_sym(*xs):
        return _call("MIN", *xs, fn=minimum)
    if any(isinstance(x, np.ndarray) for x in xs):
        out = np.asarray(xs[0], dtype=float)
        for x in xs[1:]:
            out = np.minimum(out, x)
        return out
    return min(float(x) for x in xs)


def ceil(x):
    """Round up to a whole number (Excel ROUNDUP(x,0); x >= 0 in every use)."""
    if is_sym(x):
        return _call("ROUNDUP", x, 0, fn=lambda v, _z: ceil(v))
    x = _num(x)
    if isinstance(x, np.ndarray):
        return np.ceil(_snap(x))
    return float(math.ceil(_snap(float(x))))


def floor(x):
    """Round down to a whole number (Excel INT)."""
    if is_sym(x):
        return _call("INT", x, fn=floor)
    x = _num(x)
    if isinstance(x, np.ndarray):
        return np.floor(_snap(x))
    return float(math.floor(_snap(float(x))))


def log(x, base):
    if is_sym(x, base):
        return _call("LOG", x, base, fn=log)
    x = _num(x)
    if isinstance(x, np.ndarray):
        return np.log(x) / np.log(float(base))
    return math.log(float(x)) / math.log(float(base))


def log10(x):
    """LOG(x): the base-10 logarithm (Excel's, LibreOffice's and Gnumeric's LOG with one argument)."""
    if is_sym(x):
        return _call("LOG", x, fn=log10)
    with np.errstate(divide="ignore", invalid="ignore"):   # as numpy: -inf at 0, NaN below (an untaken branch)
        return _scalar_or_array(np.log10(np.asarray(_num(x), dtype=float)))


def where(cond, a, b):
    """IF(cond, a, b)."""
    if is_sym(cond, a, b):
        out = _call("IF", cond, a, b)
        c = value_of(cond)
        if c is NOVALUE or isinstance(c, XLError):
            out.value = c
        else:
            try:
                taken = bool(c if not isinstance(c, str) else VALUE)
            except (TypeError, ValueError):
                taken = None
            out.value = VALUE if taken is None or isinstance(c, str) else value_of(a if taken else b)
        return out
    if any(isinstance(v, np.ndarray) for v in (cond, a, b)):
        return np.where(cond, a, b)
    return a if cond else b


def _cmp(op: str, pyop):
    def f(a, b):
        if is_sym(a, b):
            return _binary(a, op, b, _CMP, left_assoc_only=True)
        return pyop(_num(a), _num(b))

    f.__name__ = {"<=": "le", ">=": "ge", "<": "lt", ">": "gt", "=": "eq"}[op]
    return f


ge = _cmp(">=", lambda a, b: a >= b)
gt = _cmp(">", lambda a, b: a > b)
le = _cmp("<=", lambda a, b: a <= b)
lt = _cmp("<", lambda a, b: a < b)
eq = _cmp("=", lambda a, b: a == b)


def and_(*cs):
    if is_sym(*cs):
        return _call("AND", *cs, fn=and_)
    if any(isinstance(c, np.ndarray) for c in cs):
        return np.logical_and.reduce([np.asarray(c, dtype=bool) for c in cs])
    return all(bool(c) for c in cs)


def or_(*cs):
    if is_sym(*cs):
        return _call("OR", *cs, fn=or_)
    if any(isinstance(c, np.ndarray) for c in cs):
        return np.logical_or.reduce([np.asarray(c, dtype=bool) for c in cs])
    return any(bool(c) for c in cs)


def mod(a, b):
    """MOD(a, b): the remainder (same sign as b, as in Excel and Python)."""
    if is_sym(a, b):
        return _call("MOD", a, b, fn=mod)
    return _num(a) % _num(b)


def abs_(x):
    """ABS(x)."""
    if is_sym(x):
        return _call("ABS", x, fn=abs_)
    return abs(_num(x))


def isnumber(x):
    """ISNUMBER(x): True for a number (not text, not a blank cell)."""
    if is_sym(x):
        out = _call("ISNUMBER", x)
        v = value_of(x)
        out.value = v if v is NOVALUE else isnumber(v)
        return out
    return isinstance(x, (int, float, np.number)) and not isinstance(x, bool)


def isblank(x):
    """ISBLANK(x): True for an empty cell (None in Python)."""
    if is_sym(x):
        out = _call("ISBLANK", x)
        v = value_of(x)
        out.value = v if v is NOVALUE else isblank(v)
        return out
    return x is None


def concat(*parts):
    """a & b & ...: text joined (a number joins as Python's str; format it with :func:`text` first)."""
    if is_sym(*parts):
        # & binds looser than + and tighter than =; a joined text inside another join needs no parentheses
        syms = [_as_sym(p) for p in parts]
        return Sym("&".join(_wrap(s, _ADD + 1) for s in syms), _ADD + 1,
                   _apply(lambda *vs: concat(*vs), *(s.value for s in syms)))
    return "".join(p if isinstance(p, str) else "" if p is None else
                   ("TRUE" if p else "FALSE") if isinstance(p, (bool, np.bool_)) else f"{float(p):g}" for p in parts)


#: The number formats :func:`text` evaluates in Python as Excel's TEXT does: thousands separators, a fixed
#: number of decimals, an optional percent sign (no literals: join units with :func:`concat`).
_TEXT_FORMAT = re.compile(r"^(#,##)?0(?:\.(0+))?(%?)$")


def text(x, fmt: str):
    """TEXT(x, fmt) for the formats '0', '#,##0', '#,##0.00', '0.0%' ...: the same text in Python and in Excel.

    A value that is not a finite number reads "n/a" in Python (Excel shows its error value)."""
    m = _TEXT_FORMAT.match(fmt)
    if m is None:
        raise ValueError(f"text(): format {fmt!r} is not one of 0, #,##0, #,##0.0..., 0%, 0.0%...")
    if is_sym(x):
        return _call("TEXT", x, fmt, fn=lambda v, _f: text(v, fmt))
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "n/a"
    if not math.isfinite(v):
        return "n/a"
    if m.group(3):
        v *= 100
    places = len(m.group(2) or "")
    d = Decimal(repr(v)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    if d == 0:
        d = abs(d)  # Excel shows 0, not -0
    out = f"{d:,.{places}f}" if m.group(1) else f"{d:.{places}f}"
    return out + m.group(3)


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


def literal(x: Any) -> Sym:
    """0, 1, TRUE, FALSE or a text as an expression (the only literals a formula may hold)."""
    return _as_sym(x)


def one_zero(cond: Any) -> Any:
    """IF(cond, 1, 0): a condition as the 1/0 a check cell holds."""
    return where(cond, 1, 0)

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
        return Sym(x.name)
    if isinstance(x, str):
        return Sym('"' + x.replace('"', '""') + '"')
    return Sym(_literal(x))


def is_sym(*xs: Any) -> bool:
    return any(isinstance(x, Sym) for x in xs)


def _wrap(s: "Sym", min_prec: int, strict: bool = False) -> str:
    if s.prec < min_prec or (strict and s.prec == min_prec):
        return "(" + s.text + ")"
    return s.text


def _binary(a: Any, op: str, b: Any, prec: int, left_assoc_only: bool = False) -> "Sym":
    sa, sb = _as_sym(a), _as_sym(b)
    # Excel evaluates ^ left to right (2^3^2 = 64), so a right-hand ^ also needs parens.
    strict_right = left_assoc_only or op == "^"
    return Sym(_wrap(sa, prec) + op + _wrap(sb, prec, strict=strict_right), prec)


class Sym:
    """An Excel expression under construction."""

    __slots__ = ("text", "prec")
    __array_priority__ = 1000  # numpy defers to our operators

    def __init__(self, text: str, prec: int = _ATOM):
        self.text = text
        self.prec = prec

    def __repr__(self) -> str:
        return f"Sym({self.text!r})"

    def formula(self) -> str:
        return "=" + self.text

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
        return Sym("-(" + self.text + ")", _MUL)

    def __bool__(self):
        raise TypeError("a symbolic Excel expression has no truth value; use where()")


def _call(name: str, *args: Any) -> Sym:
    return Sym(name + "(" + ",".join(_as_sym(a).text for a in args) + ")")


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
        return _call("MAX", *xs)
    if any(isinstance(x, np.ndarray) for x in xs):
        out = np.asarray(xs[0], dtype=float)
        for x in xs[1:]:
            out = np.maximum(out, x)
        return out
    return max(float(x) for x in xs)


def minimum(*xs):
    if is_sym(*xs):
        return _call("MIN", *xs)
    if any(isinstance(x, np.ndarray) for x in xs):
        out = np.asarray(xs[0], dtype=float)
        for x in xs[1:]:
            out = np.minimum(out, x)
        return out
    return min(float(x) for x in xs)


def ceil(x):
    """Round up to a whole number (Excel ROUNDUP(x,0); x >= 0 in every use)."""
    if is_sym(x):
        return _call("ROUNDUP", x, 0)
    x = _num(x)
    if isinstance(x, np.ndarray):
        return np.ceil(_snap(x))
    return float(math.ceil(_snap(float(x))))


def floor(x):
    """Round down to a whole number (Excel INT)."""
    if is_sym(x):
        return _call("INT", x)
    x = _num(x)
    if isinstance(x, np.ndarray):
        return np.floor(_snap(x))
    return float(math.floor(_snap(float(x))))


def log(x, base):
    if is_sym(x, base):
        return _call("LOG", x, base)
    x = _num(x)
    if isinstance(x, np.ndarray):
        return np.log(x) / np.log(float(base))
    return math.log(float(x)) / math.log(float(base))


def log10(x):
    """LOG(x): the base-10 logarithm (Excel's, LibreOffice's and Gnumeric's LOG with one argument)."""
    if is_sym(x):
        return _call("LOG", x)
    with np.errstate(divide="ignore", invalid="ignore"):   # as numpy: -inf at 0, NaN below (an untaken branch)
        return _scalar_or_array(np.log10(np.asarray(_num(x), dtype=float)))


def where(cond, a, b):
    """IF(cond, a, b)."""
    if is_sym(cond, a, b):
        return _call("IF", cond, a, b)
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
        return _call("AND", *cs)
    if any(isinstance(c, np.ndarray) for c in cs):
        return np.logical_and.reduce([np.asarray(c, dtype=bool) for c in cs])
    return all(bool(c) for c in cs)


def or_(*cs):
    if is_sym(*cs):
        return _call("OR", *cs)
    if any(isinstance(c, np.ndarray) for c in cs):
        return np.logical_or.reduce([np.asarray(c, dtype=bool) for c in cs])
    return any(bool(c) for c in cs)


def mod(a, b):
    """MOD(a, b): the remainder (same sign as b, as in Excel and Python)."""
    if is_sym(a, b):
        return _call("MOD", a, b)
    return _num(a) % _num(b)


def abs_(x):
    """ABS(x)."""
    if is_sym(x):
        return _call("ABS", x)
    return abs(_num(x))


def isnumber(x):
    """ISNUMBER(x): True for a number (not text, not a blank cell)."""
    if is_sym(x):
        return _call("ISNUMBER", x)
    return isinstance(x, (int, float, np.number)) and not isinstance(x, bool)


def isblank(x):
    """ISBLANK(x): True for an empty cell (None in Python)."""
    if is_sym(x):
        return _call("ISBLANK", x)
    return x is None


def concat(*parts):
    """a & b & ...: text joined (a number joins as Python's str; format it with :func:`text` first)."""
    if is_sym(*parts):
        # & binds looser than + and tighter than =; a joined text inside another join needs no parentheses
        return Sym("&".join(_wrap(_as_sym(p), _ADD + 1) for p in parts), _ADD + 1)
    return "".join(p if isinstance(p, str) else f"{float(p):g}" for p in parts)


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
        return _call("TEXT", x, fmt)
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

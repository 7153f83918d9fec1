"""The spreadsheet functions of the expressions of :mod:`inference_ledger.core.expr`: MAX, MIN, ROUNDUP, INT,
LOG, IF, the comparisons, AND, OR, MOD, ABS, ISNUMBER, ISBLANK, concatenation and TEXT.

Each computes on numbers and numpy arrays as the spreadsheet does (integers snapped as Excel rounds to 15 digits
before ROUNDUP and INT) and, given a :class:`~inference_ledger.core.expr.Sym`, renders the same call as formula
text through the expression module (which keeps the dual evaluation and refuses bare numbers in formulas).
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np

from inference_ledger.core.expr import (_ADD, _CMP, NOVALUE, VALUE, Sym, XLError, _apply, _as_sym, _binary, _call,
                                        _wrap, is_sym, value_of)

__all__ = [
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
    "starts_with",
    "concat",
    "text",
    "one_zero",
    "literal",
]


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


def _extreme(name: str, pyname: str, elementwise, scalar):
    """MAX or MIN: the Excel call over expressions, elementwise over arrays, the plain extreme over numbers."""
    def fn(*xs):
        if is_sym(*xs):
            return _call(name, *xs, fn=fn)
        if any(isinstance(x, np.ndarray) for x in xs):
            out = np.asarray(xs[0], dtype=float)
            for x in xs[1:]:
                out = elementwise(out, x)
            return out
        return scalar(float(x) for x in xs)
    fn.__name__ = fn.__qualname__ = pyname
    fn.__doc__ = f"{name}(x, ...), elementwise over arrays."
    return fn


maximum = _extreme("MAX", "maximum", np.maximum, max)
minimum = _extreme("MIN", "minimum", np.minimum, min)


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


def _logical(name: str, arrays, scalars):
    """The logical function ``name``(c, ...): ``arrays`` (a numpy reduction) elementwise over arrays, ``scalars``
    (all or any) over plain truth values, the call over formulas."""
    def f(*cs):
        if is_sym(*cs):
            return _call(name, *cs, fn=f)
        if any(isinstance(c, np.ndarray) for c in cs):
            return arrays(np.broadcast_arrays(*(np.asarray(c, dtype=bool) for c in cs)))   # shapes broadcast
        return scalars(bool(c) for c in cs)

    f.__name__ = name.lower() + "_"
    return f


and_ = _logical("AND", np.logical_and.reduce, all)
or_ = _logical("OR", np.logical_or.reduce, any)


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


def _is(name: str, test, x):
    """The information function ``name``(x): ``test`` of a value, or the call of a formula carrying its value's."""
    if is_sym(x):
        out = _call(name, x)
        v = value_of(x)
        out.value = v if v is NOVALUE else test(v)
        return out
    return test(x)


def isnumber(x):
    """ISNUMBER(x): True for a number (not text, not a blank cell)."""
    return _is("ISNUMBER", lambda v: isinstance(v, (int, float, np.number)) and not isinstance(v, bool), x)


def isblank(x):
    """ISBLANK(x): True for an empty cell (None in Python)."""
    return _is("ISBLANK", lambda v: v is None, x)


def starts_with(x, prefix: str):
    """LEFT(x, LEN(prefix)) = prefix: whether a text starts with a prefix (no count in the formula: LEN counts it).
    A spreadsheet's = compares texts without regard to case, and so does the Python side."""
    if is_sym(x):
        quoted = _as_sym(prefix).text
        return Sym(f"LEFT({_as_sym(x).text},LEN({quoted}))={quoted}", _CMP,
                   _apply(lambda v: starts_with(v, prefix), _as_sym(x).value))
    return str(x).lower().startswith(prefix.lower())


def concat(*parts):
    """a & b & ...: text joined (a number joins as Python's str; format it with :func:`text` first)."""
    if is_sym(*parts):
        # & binds looser than + and tighter than =; a joined text inside another join needs no parentheses
        syms = [_as_sym(p) for p in parts]
        items: list[str] = []
        for t in (_wrap(s, _ADD + 1) for s in syms):
            if items and _ends_in_literal(items[-1]) and _starts_with_literal(t):
                items[-1] = items[-1][:-1] + t[1:]   # "GB"&" of " is written "GB of ": the same text, shorter
            else:
                items.append(t)
        return Sym("&".join(items), _ADD + 1, _apply(lambda *vs: concat(*vs), *(s.value for s in syms)))
    return "".join(p if isinstance(p, str) else "" if p is None else
                   ("TRUE" if p else "FALSE") if isinstance(p, (bool, np.bool_)) else f"{float(p):g}" for p in parts)


def _ends_in_literal(t: str) -> bool:
    """Whether a join's item ends with a text literal that is itself an item of the join ("a"&"b" yes, a+"b" no)."""
    if not t.endswith('"'):
        return False
    i = len(t) - 2
    while i >= 0:                       # back to the literal's opening quote; "" inside it is an escaped quote
        if t[i] == '"':
            if i > 0 and t[i - 1] == '"':
                i -= 2
                continue
            return i == 0 or t[i - 1] == "&"
        i -= 1
    return False


def _starts_with_literal(t: str) -> bool:
    """Whether a join's item starts with a text literal that is itself an item of the join."""
    if not t.startswith('"'):
        return False
    i = 1
    while i < len(t):                   # on to the literal's closing quote
        if t[i] == '"':
            if i + 1 < len(t) and t[i + 1] == '"':
                i += 2
                continue
            return i == len(t) - 1 or t[i + 1] == "&"
        i += 1
    return False


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


def literal(x: Any) -> Sym:
    """0, 1, TRUE, FALSE or a text as an expression (the only literals a formula may hold)."""
    return _as_sym(x)


def one_zero(cond: Any) -> Any:
    """IF(cond, 1, 0): a condition as the 1/0 a check cell holds."""
    return where(cond, 1, 0)

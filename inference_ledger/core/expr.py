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
emitted (:data:`PORTABLE_FUNCTIONS`).  The spreadsheet functions themselves (MAX, ROUNDUP, IF, the comparisons,
TEXT ...) are in :mod:`inference_ledger.core.sheetfuncs`; references, lookups and aggregates (cells, ranges,
defined names, INDEX/MATCH/IFERROR, SUM/MEDIAN/SUMPRODUCT/COUNTIFS) in :mod:`inference_ledger.core.refs`.  Both
build their expressions through this module, so the dual evaluation and the bare-number guard stay here.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

__all__ = [
    "Const",
    "Sym",
    "HardCodedConstant",
    "is_sym",
    "PORTABLE_FUNCTIONS",
    "NOVALUE",
    "XLError",
    "value_of",
    "ExpressionHasNoValue",
]

# Functions the generated formulas may use (checked by a test over every formula).
PORTABLE_FUNCTIONS = frozenset(
    {"MAX", "MIN", "ROUNDUP", "INT", "IF", "AND", "OR", "LOG", "INDEX", "MATCH",
     "SUM", "SUMPRODUCT", "SUMIFS", "IFERROR", "ROUNDDOWN", "CEILING", "ABS",
     "COUNTA", "COUNTIFS", "ISNUMBER", "NOT", "ROUND", "TEXT", "COUNT", "MEDIAN",
     "AVERAGE", "POWER", "ISBLANK", "LEN", "LEFT", "MOD"}
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


def _operator(op: str, prec: int, left_assoc_only: bool = False) -> tuple[Any, Any]:
    """The two methods of a binary operator on :class:`Sym`: ``self op o`` and the reflected ``o op self``."""

    def forward(self: "Sym", o: Any) -> "Sym":
        return _binary(self, op, o, prec, left_assoc_only)

    def reflected(self: "Sym", o: Any) -> "Sym":
        return _binary(o, op, self, prec, left_assoc_only)

    return forward, reflected


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

    # arithmetic: each operator and its reflected form (2 * Sym) -------------------
    __add__, __radd__ = _operator("+", _ADD)
    __sub__, __rsub__ = _operator("-", _ADD, left_assoc_only=True)
    __mul__, __rmul__ = _operator("*", _MUL)
    __truediv__, __rtruediv__ = _operator("/", _MUL, left_assoc_only=True)
    __pow__, __rpow__ = _operator("^", _POW)

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

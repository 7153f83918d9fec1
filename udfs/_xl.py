"""Excel semantics for the worksheet functions in :mod:`udfs.excel` (no xlwings here).

* **Broadcasting.**  Every argument is one cell or a range (xlwings hands over a 2-D
  list, a bare scalar for an omitted optional argument).  Shapes combine the way numpy
  and Excel's array arithmetic both do: a single cell goes everywhere, a column with a
  row gives a table, equal shapes pair up, anything else is an error.  The ledger
  formula then runs once, as numpy, over the whole block.
* **Blanks** take the argument's default; a blank required argument is an error.
* **Bad input** never raises: each bad element becomes an error value in its own cell,
  whose message names the argument and the allowed range (:meth:`inference_ledger.core.args.Arg.check`).
  A call-wide problem (ranges that do not broadcast, a ragged range) is one error cell.
* **Error values** depend on the host (:func:`error_value`):

  - Office.js (xlwings Lite, xlwings Server): an Excel ``ErrorCellValue`` dict,
    ``{"type": "Error", "errorType": "Value", "message": ...}``.  xlwings passes dicts
    through ``prepare_xl_data_element`` untouched and registers its functions with
    ``allowErrorForDataTypeAny``, so the cell is a real ``#VALUE!``.  Excel's per-cell
    error values (``Excel.ValueErrorCellValue``) have no text field: the message rides
    in the payload, and only a whole-call ``CustomFunctions.Error`` (thrown by the
    add-in's JavaScript when the Python call fails) could show one; failing the whole
    call would blank a 10,000-row spill for one bad cell, so that is not used.
  - Classic COM add-in (Windows) and plain Python: the text ``"#VALUE! <message>"``.
    The COM bridge writes Python strings as text, so the reason is readable in the cell
    itself; any arithmetic on it (``=A1*2``) gives Excel's own ``#VALUE!``.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from itertools import chain
from typing import Any, Callable, Optional, Sequence

import numpy as np

from inference_ledger.core.args import Arg, LedgerInputError, echo, undefined

#: Excel error kinds used here: Office.js ``errorType`` -> the worksheet's error text.
ERROR_TEXT = {"Value": "#VALUE!", "NotAvailable": "#N/A"}


def on_office_js() -> bool:
    """True inside xlwings Lite (Pyodide) or xlwings Server: the switch xlwings itself uses."""
    return sys.platform == "emscripten" or os.environ.get("XLWINGS_ON_SERVER") == "true"


#: Longest message an error cell carries (the user's values in it are cut to args.ECHO_LIMIT characters already).
MESSAGE_LIMIT = 500


def error_value(message: str, kind: str = "Value") -> Any:
    """The error cell for this host (see the module docstring); a message is one line of at most MESSAGE_LIMIT."""
    message = str(message)
    if len(message) > MESSAGE_LIMIT:
        message = message[:MESSAGE_LIMIT - 3] + "..."
    if on_office_js():
        return {"type": "Error", "errorType": kind, "message": message}
    return f"{ERROR_TEXT[kind]} {message}"


@dataclass(frozen=True)
class Param:
    """One worksheet-function argument: its name, its :class:`Arg` and its default (None = required)."""

    name: str
    arg: Arg
    default: Optional[float]

    def doc(self) -> str:
        blank = "required" if self.default is None else f"blank = {_num(self.default)}"
        return f"{self.arg.doc} [{self.arg.unit}]; {self.arg.allowed()}; {blank}"


class NotAvailable(Exception):
    """A worksheet function's answer that does not exist for these arguments (not a wrong input): ``#N/A``, saying
    why (the message)."""


class CallError(LedgerInputError):
    """The call as a whole is wrong (shapes, a ragged range): one error cell."""


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _block(name: str, value: Any) -> np.ndarray:
    """An argument as a 2-D array: float when it is all numbers, else object."""
    if isinstance(value, np.ndarray):
        block = value
    elif isinstance(value, (list, tuple)):
        try:
            block = np.array(value, dtype=float if _numbers_only(value) else object)
        except ValueError:
            raise CallError(f"{name}: a range must be rectangular") from None
    else:
        block = np.array(value, dtype=float if type(value) in (float, int) else object)
    if block.ndim > 2:
        raise CallError(f"{name}: expected one cell or a range, got {block.ndim} dimensions")
    return block.reshape((1,) * (2 - block.ndim) + block.shape)


def _numbers_only(value: list | tuple) -> bool:
    """One pass over the cells decides the fast path.  Booleans are not numbers here
    (as in Arg.check), though numpy would read them as 0/1."""
    rows = value if value and isinstance(value[0], (list, tuple)) else [value]
    try:
        return set(map(type, chain.from_iterable(rows))) <= {float, int}
    except TypeError:  # a ragged mix of cells and rows
        return False


def _values(p: Param, block: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """Floats with blanks defaulted, and {flat index: message} for the bad elements."""
    if block.dtype != object:
        return _checked(p.arg, block.astype(float, copy=False), {})
    cells = block.ravel()
    number = np.fromiter((type(v) in (float, int) for v in cells), bool, cells.size)
    x = np.full(cells.size, np.nan)
    x[number] = cells[number].astype(float)
    errors: dict[int, str] = {}
    for i in np.flatnonzero(~number):  # blanks, text, booleans: one by one
        v = cells[i]
        if v is None or v == "":
            if p.default is None:
                errors[int(i)] = f"{p.name} is required: {p.arg.allowed()}"
            else:
                x[i] = p.default
            continue
        try:
            x[i] = p.arg.check(v)
        except LedgerInputError as e:
            errors[int(i)] = str(e)
    return _checked(p.arg, x.reshape(block.shape), errors)


def _checked(a: Arg, x: np.ndarray, errors: dict[int, str]) -> tuple[np.ndarray, dict[int, str]]:
    """Add the out-of-range and NaN elements of ``x`` (vectorized) to ``errors``."""
    low = (x < a.lo) if a.lo_inclusive else (x <= a.lo)
    bad = np.isnan(x) | low | (x > a.hi)
    if a.integer:
        bad |= x != np.floor(x)
    for i in np.flatnonzero(bad):
        if int(i) not in errors:
            try:
                a.check(x.flat[i])
            except LedgerInputError as e:
                errors[int(i)] = str(e)
    return x, errors


def broadcast_call(fn: Callable[..., Any], params: Sequence[Param], values: Sequence[Any]) -> list[list[Any]]:
    """Evaluate ``fn`` once over the broadcast block of ``values``; a 2-D list of results."""
    try:
        return _broadcast_call(fn, params, values)
    except LedgerInputError as e:
        return [[error_value(str(e))]]
    except Exception as e:  # the worksheet boundary: a cell error, never a traceback
        return [[error_value(f"{fn.__name__} failed: {type(e).__name__}: {e}")]]


def _broadcast_call(fn, params, values):
    blocks = [_block(p.name, v) for p, v in zip(params, values)]
    try:
        shape = np.broadcast_shapes(*(b.shape for b in blocks))
    except ValueError:
        sizes = ", ".join(f"{p.name} {b.shape[0]}x{b.shape[1]}" for p, b in zip(params, blocks) if b.size > 1)
        raise CallError(
            f"ranges do not match ({sizes}): give single cells, or ranges of one size, or one row with one column"
        ) from None
    arrays, bad = [], np.zeros(shape, dtype=bool)
    messages = np.full(shape, None, dtype=object)
    for p, b in zip(params, blocks):
        x, errors = _values(p, b)
        arrays.append(np.broadcast_to(x, shape))
        if errors:
            m = np.full(b.shape, None, dtype=object)
            for i, msg in errors.items():
                m.flat[i] = msg
            m = np.broadcast_to(m, shape)
            first = (m != None) & ~bad  # noqa: E711 (elementwise)
            messages[first], bad = m[first], bad | first
    with np.errstate(all="ignore"):
        result = np.broadcast_to(np.asarray(fn(*arrays), dtype=float), shape)
    undefined = ~np.isfinite(result) & ~bad
    for i in np.flatnonzero(undefined):
        messages.flat[i] = _undefined(fn, params, [a.flat[i] for a in arrays])
    bad |= undefined
    if not bad.any():
        return result.tolist()
    out = result.astype(object)
    out[bad] = [error_value(m) for m in messages[bad]]
    return out.tolist()


def _undefined(fn: Callable[..., Any], params: Sequence[Param], row: Sequence[float]) -> str:
    """Why a checked element still has no finite answer (:func:`inference_ledger.core.args.undefined`)."""
    return undefined(fn, [p.arg for p in params], row)


def elementwise_call(fn: Callable[..., Any], names: Sequence[str], values: Sequence[Any],
                     optional: Sequence[str] = ()) -> list[list[Any]]:
    """Text-keyed lookups (catalog ids and fields): broadcast like :func:`broadcast_call`,
    call ``fn`` per element.  Blank is an error (None for the ``optional`` names), ``None``
    from ``fn`` is ``#N/A``."""
    try:
        blocks = [_block(n, v).astype(object) for n, v in zip(names, values)]
        try:
            cells = np.broadcast_arrays(*blocks)
        except ValueError:
            raise CallError("ranges do not match: give single cells, or ranges of one size") from None
    except LedgerInputError as e:
        return [[error_value(str(e))]]
    out = np.empty(cells[0].shape, dtype=object)
    for i in range(out.size):
        args = [c.flat[i] for c in cells]
        args = [None if (a is None or a == "") and n in optional else a for n, a in zip(names, args)]
        blank = [n for n, a in zip(names, args) if (a is None or a == "") and n not in optional]
        if blank:
            out.flat[i] = error_value(f"{blank[0]} is required")
            continue
        try:
            v = fn(*args)
        except LedgerInputError as e:
            out.flat[i] = error_value(str(e))
            continue
        except NotAvailable as e:
            out.flat[i] = error_value(str(e), "NotAvailable")
            continue
        except Exception as e:  # the worksheet boundary: a cell error, never a traceback
            out.flat[i] = error_value(f"{type(e).__name__}: {e}")
            continue
        if v is None or (isinstance(v, float) and math.isnan(v)):
            given = ", ".join(f"{n}={echo(a)}" for n, a in zip(names, args))
            out.flat[i] = error_value(f"no value for {given}", "NotAvailable")
        else:
            out.flat[i] = ", ".join(v) if isinstance(v, tuple) else v
    return out.tolist()

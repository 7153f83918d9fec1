"""The ledger's public Python functions: each formula of :mod:`inference_ledger.formulas.ledger` and
:mod:`inference_ledger.formulas.whatif`, with its arguments checked as the Excel function of the same name checks them.

``from udfs import kv_bytes`` (the seed's four and every other one here) and ``inference_ledger.kv_bytes`` are these.
A bad argument raises ValueError (:class:`inference_ledger.core.args.LedgerInputError`) with the words the Excel cell
shows: out of range, NaN or infinite, a bool or text, or a zero that divides.  Arrays are checked elementwise and
broadcast as numpy does.  The plan graph calls the unchecked formulas (numbers, numpy arrays, formula expressions);
``fn.pure`` is the formula itself.

    >>> kv_bytes(80, 8, 128, 4096)
    1342177280.0
    >>> kv_bytes(80, 8, 128, -4096)
    Traceback (most recent call last):
    ...
    inference_ledger.core.args.LedgerInputError: seq_len must be a whole number >= 0 and <= 1000000000 (got -4096)
"""

from __future__ import annotations

import inspect

from inference_ledger.formulas import ledger, whatif
from inference_ledger.core.args import ARGS, checked


def _public(module) -> dict:
    """The module's own functions whose every argument has a row in the argument table."""
    return {n: checked(f) for n, f in vars(module).items()
            if inspect.isfunction(f) and f.__module__ == module.__name__ and not n.startswith("_")
            and all(p in ARGS for p in inspect.signature(f).parameters)}


FUNCTIONS = _public(ledger) | _public(whatif)
globals().update(FUNCTIONS)
__all__ = sorted(FUNCTIONS)

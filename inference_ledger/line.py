"""A plan line: one plain function whose parameter names are the inputs and lines it uses.

    @line("Weights per GPU", "B", MEMORY, "Tensor parallelism splits every weight matrix ...")
    def weights_bytes_per_gpu(weights_bytes, tp, moe_padding_bytes_per_gpu):
        return ledger.per_gpu(weights_bytes, tp) + moe_padding_bytes_per_gpu

The function's name is the line's name (its ``plan --json`` key, its workbook defined
name); its parameters are its dependencies, read with :mod:`inspect`.  Called with
numbers or numpy arrays it computes the line; called with :class:`inference_ledger.expr.Sym`
references it returns the line's Excel formula (the dual evaluation of
:mod:`inference_ledger.expr`).  A newcomer goes from a name in a cell, the CLI table or
the JSON to its definition in one hop.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

MEMORY, COMPUTE, BANDWIDTH, COST, FIT, FINANCE = "memory", "compute", "bandwidth", "cost", "fit", "finance"
ACCURACY = "accuracy"  # the error bands of the headline figures (inference_ledger/band_lines.py)


@dataclass(frozen=True)
class Line:
    """One computed line of a ledger."""

    name: str
    label: str
    unit: str
    ledger: str  # memory | compute | bandwidth | cost | fit | finance | accuracy
    doc: str
    fn: Callable[..., Any] = field(repr=False)
    params: tuple[str, ...] = ()

    def __call__(self, values: Any) -> Any:
        """The line over a mapping of quantities (numbers, arrays or Sym references)."""
        return self.fn(*(values[p] for p in self.params))


def line(label: str, unit: str, ledger: str, doc: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make a function a plan line (it stays a plain function; ``fn.plan_line`` describes it)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        params = tuple(inspect.signature(fn).parameters)
        fn.plan_line = Line(fn.__name__, label, unit, ledger, doc, fn, params)
        return fn

    return deco


def lines_of(module: ModuleType) -> tuple[Line, ...]:
    """The lines a module defines, in definition order."""
    return tuple(f.plan_line for f in vars(module).values()
                 if callable(f) and getattr(f, "__module__", None) == module.__name__ and hasattr(f, "plan_line"))

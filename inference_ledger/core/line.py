"""A plan line: one plain function whose parameter names are the inputs and lines it uses.

    @line("Weights per GPU", "B", MEMORY, "Tensor parallelism splits every weight matrix ...")
    def weights_bytes_per_gpu(weights_bytes, tp, moe_padding_bytes_per_gpu):
        return ledger.per_gpu(weights_bytes, tp) + moe_padding_bytes_per_gpu

The function's name is the line's name (its ``plan --json`` key, its workbook defined
name); its parameters are its dependencies, read with :mod:`inspect`.  Called with
numbers or numpy arrays it computes the line; called with :class:`inference_ledger.core.expr.Sym`
references it returns the line's Excel formula (the dual evaluation of
:mod:`inference_ledger.core.expr`).  A newcomer goes from a name in a cell, the CLI table or
the JSON to its definition in one hop.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Mapping

import numpy as np

MEMORY, COMPUTE, BANDWIDTH, COST, FIT, FINANCE = "memory", "compute", "bandwidth", "cost", "fit", "finance"
ACCURACY = "accuracy"  # the error bands of the headline figures (inference_ledger/graph/band_lines.py)


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


class Family:
    """A group of lines instantiated over a parameter: the same sub-graph at each candidate value.

    Its members are plain functions, like lines, whose parameters name the family's parameter
    (its value at the candidate), another member (at the same candidate) or a plan quantity.
    One definition per member, whatever the number of candidates:

        TP_FIT = Family("tp_candidates", "Fit at each TP degree of one node", "tp", "gpus_per_node",
                        whatif.tp_candidates, whatif.tp_candidate_formula, "...")

        @TP_FIT.member("Weights per GPU", "B", MEMORY, "...")
        def weights_bytes_per_gpu(tp, weights_bytes):    # tp: the candidate, not the plan's TP
            return weights_bytes / tp

    Its value is nested, ``{"1": {"tp": 1, "weights_bytes_per_gpu": ...}, "2": {...}}`` (the
    ``plan --json`` keys), the candidates following the ``bound`` input (``candidates_of``; over
    numpy arrays, the largest element's, and a consumer masks those beyond each element's own).
    Called with :class:`inference_ledger.core.expr.Sym` references a member renders one table cell:
    the workbook writes a family as a table, one column per candidate, whose value is
    ``candidate_formula(candidate)`` (named constants only, e.g. TP_BASE*TP_BASE for 4).
    """

    def __init__(self, name: str, label: str, param: str, bound: str, candidates_of: Callable[[float], tuple],
                 candidate_formula: Callable[[float], Any], doc: str):
        self.name, self.label, self.param, self.bound, self.doc = name, label, param, bound, doc
        self.candidates_of, self.candidate_formula = candidates_of, candidate_formula
        self.members: list[Line] = []

    def member(self, label: str, unit: str, ledger: str, doc: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Make a function a member of this family (it stays a plain function; ``fn.family_line`` describes it)."""

        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            fn.family_line = Line(fn.__name__, label, unit, ledger, doc, fn, tuple(inspect.signature(fn).parameters))
            self.members.append(fn.family_line)
            return fn

        return deco

    @property
    def member_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.members)

    @property
    def params(self) -> tuple[str, ...]:
        """The quantities outside the family its members read, and the bound."""
        inside = {self.param, *self.member_names}
        out = [self.bound] + [p for m in self.members for p in m.params if p not in inside]
        return tuple(dict.fromkeys(out))

    def candidates(self, bound: Any) -> tuple[float, ...]:
        """The candidate values for a bound (a number, or an array: its largest element's)."""
        return tuple(float(c) for c in self.candidates_of(float(np.max(bound))))

    @staticmethod
    def key(candidate: Any) -> str:
        """The nested key of a candidate: "4" for TP 4."""
        return f"{float(candidate):g}"

    def at(self, values: Any, candidate: Any) -> dict[str, Any]:
        """The members at one candidate, over a mapping of quantities (numbers, arrays or Sym references)."""
        out: dict[str, Any] = {self.param: candidate}
        for m in self.members:
            out[m.name] = m.fn(*(out[p] if p in out else values[p] for p in m.params))
        return out

    def evaluate(self, values: Any, candidates: Any = None) -> dict[str, dict[str, Any]]:
        """Every candidate's members, keyed by :meth:`key` (the candidates follow ``values[bound]`` unless given)."""
        cands = self.candidates(values[self.bound]) if candidates is None else candidates
        return {self.key(c): self.at(values, c) for c in cands}

    def flat_name(self, candidate: Any, member: str) -> str:
        """A table column's name for one member at one candidate: ``tp_candidates.4.fits``."""
        return f"{self.name}.{self.key(candidate)}.{member}"

    def flatten(self, value: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """The nested value as ``flat_name`` keys (sweep columns)."""
        return {f"{self.name}.{k}.{m}": v for k, row in value.items() for m, v in row.items()}

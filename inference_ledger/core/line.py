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

Two declarations make the same plain function without a ``def`` that only forwards: :func:`derived`, a formula
under the plan's names, and :data:`product` (:data:`total`, :data:`ratio`, :data:`difference`), a line whose whole
formula is one operation over other quantities.
"""

from __future__ import annotations

import functools
import inspect
import operator
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Mapping, Optional

import numpy as np

from inference_ledger.core.sheetfuncs import ceil

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


def derived(name: str, formula: Callable[..., Any], label: str, unit: str, ledger: str, doc: str, /,
            **rename: Optional[str]) -> Callable[..., Any]:
    """A line that IS a formula under the plan's names: one declaration instead of a wrapper that forwards.

        kv_bytes_per_gpu = derived("kv_bytes_per_gpu", ledger.per_gpu, "KV per GPU at peak", "B", MEMORY,
                                   "Peak KV divided by the KV split.", total="kv_bytes_peak", shards="kv_shards")

    The line's parameters are the formula's, in its order, each renamed by ``rename`` (formula parameter -> plan
    quantity; one not named keeps its name, one renamed to ``None`` keeps the formula's default).  The result is a
    plain function over the line's parameters (numbers, arrays or Sym references, positional or by keyword) whose
    ``plan_line`` describes it and ``formula`` is the formula; bind it to a module variable of the same name, where
    :func:`lines_of` finds it.
    """
    sig = inspect.signature(formula)
    unknown = sorted(set(rename) - set(sig.parameters))
    if unknown:
        raise TypeError(f"line {name}: {formula.__name__} has no parameter {', '.join(unknown)}")
    left = [p for p, q in sig.parameters.items() if rename.get(p, p) is None and q.default is inspect.Parameter.empty]
    if left:
        raise TypeError(f"line {name}: {formula.__name__}'s {', '.join(left)} has no default to keep")
    kept = tuple(p for p in sig.parameters if rename.get(p, p) is not None)
    params = tuple(rename.get(p, p) for p in kept)
    if len(set(params)) != len(params):
        raise TypeError(f"line {name}: two parameters of {formula.__name__} read the same quantity")
    positional = tuple(p for p, q in sig.parameters.items()
                       if q.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)[:len(kept)] == kept
    # kept parameters that lead the formula's own, in its order, pass through positionally (the common case, and
    # the plan evaluates thousands of lines); otherwise by keyword, skipping the defaults kept
    body = formula if positional else (lambda *args: formula(**dict(zip(kept, args, strict=True))))
    fn = _line_function(name, params, body, (label, unit, ledger, doc), sys._getframe(1).f_globals["__name__"])
    fn.formula = formula
    return fn


def _line_function(name: str, params: tuple[str, ...], body: Callable[..., Any], about: tuple[str, str, str, str],
                   module: str) -> Callable[..., Any]:
    """A plain function of ``params`` (positional or by keyword) that computes ``body(*params)`` and whose
    ``plan_line`` is the line ``name`` (``about``: its label, unit, ledger and doc), as if defined in ``module``."""
    line_sig = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params])

    def fn(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = line_sig.bind(*args, **kwargs).args
        return body(*args)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module
    fn.__doc__ = about[3]
    fn.__signature__ = line_sig
    fn.plan_line = Line(name, *about, fn, params)
    return fn


def _folded(kind: str, op: Callable[[Any, Any], Any], sign: str,
            finish: Optional[Callable[[Any], Any]] = None) -> Callable[..., Callable[..., Any]]:
    """The declaration of a line whose whole formula is its operands joined by one operator, left to right (then
    ``finish`` applied to the result, where given)."""

    def declare(name: str, operands: tuple[str, ...], label: str, unit: str, ledger: str, doc: str, /
                ) -> Callable[..., Any]:
        if len(operands) < 2 or len(set(operands)) != len(operands):
            raise TypeError(f"line {name}: a {kind} takes two or more different quantities, not {operands!r}")
        body = (lambda *xs: functools.reduce(op, xs)) if finish is None \
            else (lambda *xs: finish(functools.reduce(op, xs)))
        return _line_function(name, tuple(operands), body, (label, unit, ledger, doc),
                              sys._getframe(1).f_globals["__name__"])

    declare.__name__ = declare.__qualname__ = kind
    declare.__doc__ = (f"A line that is ``operands`` joined by {sign}, left to right as Python reads ``a {sign} b "
                       f"{sign} c``{'' if finish is None else f', then {finish.__name__}()'} (the same number and the "
                       "same Excel formula as that ``@line`` function), in one declaration; bind it to a module "
                       "variable of the same name, as a :func:`derived` line.")
    return declare


#: Lines whose whole formula is one operation over other quantities, declared in one statement instead of a
#: decorated function that only returns it:
#:
#:     gpus_per_replica = product("gpus_per_replica", ("gpus_per_stage", "pp"), "GPUs per replica", "GPUs", COST,
#:                                "GPUs per stage x PP stages: one copy of the model.")
#:
#: is ``def gpus_per_replica(gpus_per_stage, pp): return gpus_per_stage * pp`` with its ``@line``.
product, total, ratio, difference = (_folded("product", operator.mul, "*"), _folded("total", operator.add, "+"),
                                     _folded("ratio", operator.truediv, "/"),
                                     _folded("difference", operator.sub, "-"))
#: A ratio rounded up to a whole number (servers for some GPUs, forward passes for some tokens): ``ceil(a / b)``.
ratio_up = _folded("ratio_up", operator.truediv, "/", ceil)


def lines_of(module: ModuleType) -> tuple[Line, ...]:
    """The lines a module defines, in definition order (its ``@line`` functions, :func:`derived` lines and lines
    declared by :data:`product`, :data:`total`, :data:`ratio`, :data:`difference` or :data:`ratio_up`)."""
    out = []
    for var, f in vars(module).items():
        if callable(f) and getattr(f, "__module__", None) == module.__name__ and hasattr(f, "plan_line"):
            if f.plan_line.name != var:
                raise TypeError(f"{module.__name__}.{var} is the line {f.plan_line.name}: bind a line to its own name")
            out.append(f.plan_line)
    return tuple(out)


def shown_with_readers(lines: tuple[Line, ...], placed: tuple[Line, ...]) -> tuple[Line, ...]:
    """``lines`` in their order, each of ``placed`` just before the first line that reads it (else just after the last
    one it reads): a line written on a formula module's function shows where the plan uses it, not in a block of its
    module's lines."""
    out = list(lines)
    for p in placed:
        readers = [i for i, l in enumerate(out) if p.name in l.params]
        reads = [i for i, l in enumerate(out) if l.name in p.params]
        out.insert(readers[0] if readers else (reads[-1] + 1 if reads else len(out)), p)
    return tuple(out)


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

"""What a plan that does not start has none of: its bills, and the figures of a running replica.

A plan whose verdict is "does not fit" (code 0: not one sequence fits the engine's KV budget) starts no replica, so
it has no bill (money, or a fleet size that follows from what fits) and no figure of a running replica (a
benchmark's TTFT, tokens/s, the bands).  One definition for every adapter: the Plan and Scenarios sheets and the
sweep show the verdict's words in the bills' cells (:func:`inference_ledger.workbook.cells.bill`), as ``plan --json``
gives null and the Excel function ``PLAN`` #N/A for them (:func:`inference_ledger.io.report.without_a_bill`); the Plan
sheet and the Summary also word the replica figures.  TPOT stays, one sequence's step.
"""

from __future__ import annotations

import functools
from typing import Iterable

from inference_ledger.graph import plan

#: Units of a bill besides money: fleet sizes.
BILL_UNITS = ("GPUs", "replicas", "servers")

#: Figures of a running replica (a benchmark's TTFT, tokens/s, the bands): no replica, no figure, as for a bill and
#: as the Summary's key numbers say (TPOT stays: one sequence's step).
REPLICA_FIGURES = frozenset({"ttft_open_seconds", "ttft_seconds", "ttft_seconds_low", "ttft_seconds_high",
                             "tokens_per_second", "tokens_per_second_low", "tokens_per_second_high",
                             "tokens_per_second_per_gpu", "tpot_seconds_low", "tpot_seconds_high"})


@functools.lru_cache(maxsize=None)
def is_bill(name: str) -> bool:
    """A plan line that is a bill: money or a fleet size that follows from what fits (the KV budget's
    max_concurrency)."""
    ln = plan.LINE_BY_NAME.get(name)
    return bool(ln) and (ln.unit.startswith("$") or ln.unit in BILL_UNITS) and plan.depends_on(ln, "max_concurrency")


def needs_a_replica(name: str) -> bool:
    """A bill or a running replica's figure."""
    return is_bill(name) or name in REPLICA_FIGURES


def billed(names: Iterable[str]) -> set[str]:
    """The bills among these lines and every one of them that reads a bill (in a workbook each shows the verdict's
    words when its row does not start: an IF evaluates only the branch taken, so no cell reads a text)."""
    return set(_billed(frozenset(names)))


@functools.lru_cache(maxsize=None)
def _billed(names: frozenset[str]) -> frozenset[str]:
    """billed() of one set of line names (the Scenarios sheet asks for each cell of its rows)."""
    out: set[str] = set()
    for ln in plan.EVALUATION_ORDER:
        if ln.name in names and (is_bill(ln.name) or any(p in out for p in ln.params)):
            out.add(ln.name)
    return frozenset(out)


@functools.lru_cache(maxsize=None)
def all_billed() -> frozenset[str]:
    """Every plan line that is a bill or reads one: what a sweep row or a Scenarios row that does not start shows the
    verdict's words for, and ``plan --json`` null."""
    return _billed(frozenset(ln.name for ln in plan.LINES))

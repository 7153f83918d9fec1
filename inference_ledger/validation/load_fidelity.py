"""The plan against published serving under load (``inference_ledger/data/measured_load.csv``).

Each row of :mod:`inference_ledger.catalogs.load_measurements` is resolved like any other choice (model, GPU,
formats, engine, TP) with its regime as ``batching``, its batch as the concurrency and its request
shape; the plan's steady-state lines are compared with what the source printed:

* ``output_tok_s``: ``benchmark_tokens_per_second`` (what the row's benchmark run measures: N requests at its
  concurrency, at most the steady state) x replicas (gpus / tp) against the deployment's output tokens/s;
* ``tpot_ms``: ``tpot_seconds`` against the mean TPOT (or the mean ITL where only that is printed);
* ``ttft_ms``: ``ttft_seconds`` (queueing included) against the mean TTFT.

One set of defaults for every row; nothing here knows a measured value before comparing with it.
A blank engine is the default engine; a blank KV format is BF16 (the plan's default).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np

from inference_ledger.graph import plan
from inference_ledger.validation.accuracy import RelativeError, RowSet, measured_metrics, row_inputs
from inference_ledger.catalogs.load_measurements import REGIMES, LoadRow, load_measured_load

#: metric -> label (unit)
METRICS = {"output_tok_s": "Output tokens/s under load", "tpot_ms": "TPOT under load (ms)",
           "ttft_ms": "TTFT under load (ms)"}


@dataclass(frozen=True)
class LoadCheck(RelativeError):
    row: str
    metric: str
    regime: str
    measured: float
    predicted: float


def row_values(row: LoadRow) -> dict:
    """The plan's values for one load row."""
    return plan.evaluate(row_inputs(row))


def compare(rows: Optional[Iterable[LoadRow]] = None) -> list[LoadCheck]:
    """Every predicted-vs-measured figure of the load rows (the shipped file by default): the plan evaluated once
    over all of them (numpy arrays, :class:`~inference_ledger.validation.accuracy.RowSet`), each row's inputs as
    :func:`row_values` resolves and checks them (tests/test_accuracy.py: the arrays equal the plan row by row)."""
    rows = list(load_measured_load() if rows is None else rows)
    if not rows:
        return []
    rs = RowSet(rows, as_planned=True)
    predicted = rs.predict(np.arange(len(rows)), {})
    return [LoadCheck(r.id, metric, r.regime, measured, float(predicted[metric][k]))
            for k, r in enumerate(rows) for metric, measured in measured_metrics(r).items() if measured is not None]


@dataclass(frozen=True)
class LoadSummary:
    metric: str
    regime: str
    n: int
    median_abs_error: float
    median_error: float  # signed: > 0 means the plan is optimistic for throughput, pessimistic for latency


def summarize(checks: list[LoadCheck]) -> list[LoadSummary]:
    """Per metric and regime (and 'all'): rows, median |error| and median signed error."""
    out = []
    for metric in METRICS:
        for regime in (*REGIMES, "all"):
            cs = [c for c in checks if c.metric == metric and regime in (c.regime, "all")]
            if cs:
                out.append(LoadSummary(metric, regime, len(cs), statistics.median(abs(c.error) for c in cs),
                                       statistics.median(c.error for c in cs)))
    return out

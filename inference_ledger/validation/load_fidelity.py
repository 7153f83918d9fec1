"""The plan against published serving under load (``inference_ledger/data/measured_load.csv``).

Each row of :mod:`inference_ledger.catalogs.load_measurements` is resolved like any other choice (model, GPU,
formats, engine, TP) with its regime as ``batching``, its batch as the concurrency and its request
shape; the plan's steady-state lines are compared with what the source printed:

* ``output_tok_s``: ``benchmark_tokens_per_second`` (what the row's benchmark run measures: N requests at its
  concurrency, at most the steady state) x replicas (gpus / tp) against the deployment's output tokens/s;
* ``tpot_ms``: ``tpot_seconds`` against the mean TPOT (or the mean ITL where only that is printed);
* ``ttft_ms``: ``ttft_seconds`` (queueing included) against the mean TTFT;
* ``ttft_median_ms``: ``steady_ttft_seconds`` + ``queue_seconds`` against the median TTFT, where the source prints one
  and the median request is a steady-state one (:func:`median_ttft`).

One set of defaults for every row; nothing here knows a measured value before comparing with it.
A blank engine is the default engine; a blank KV format is BF16 (the plan's default).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np

from inference_ledger.graph import plan
from inference_ledger.validation.accuracy import RelativeError, RowSet, measured_metrics, row_inputs, source_of
from inference_ledger.catalogs.load_measurements import REGIMES, LoadRow, load_measured_load
from inference_ledger.core.units import MS_PER_S

#: metric -> label (unit)
METRICS = {"output_tok_s": "Output tokens/s under load", "tpot_ms": "TPOT under load (ms)",
           "ttft_ms": "TTFT under load (ms)", "ttft_median_ms": "TTFT of the median request (ms)"}


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


def median_ttft(rows: Optional[Iterable[LoadRow]] = None) -> list[LoadCheck]:
    """The plan's steady-state TTFT against the median TTFT the source prints (``ttft_median_ms``).

    A closed loop's clients start together: its first min(B, N) requests arrive as one wave (``wave_ttft_seconds``),
    every later one with its lockstep group after a finished request, and waits for a slot when more clients than
    slots (``steady_ttft_seconds`` + ``queue_seconds``).  Where that first wave is under half of the run's N
    requests, the median request is a later one; its TTFT is compared (a run whose wave is half of it or more is
    left out).  The mean of such a run also carries its first wave and its tail; the median does not."""
    rows = [r for r in (load_measured_load() if rows is None else rows) if r.ttft_median_ms is not None]
    if not rows:
        return []
    v = RowSet(rows, as_planned=True).values(np.arange(len(rows)), {}, ("effective_concurrency", "benchmark_requests",
                                                                        "steady_ttft_seconds", "queue_seconds"))
    n = v["benchmark_requests"]
    later = 2 * np.minimum(v["effective_concurrency"], n) < n
    predicted = (v["steady_ttft_seconds"] + v["queue_seconds"]) * MS_PER_S
    return [LoadCheck(r.id, "ttft_median_ms", r.regime, r.ttft_median_ms, float(predicted[k]))
            for k, r in enumerate(rows) if later[k]]


def checks(rows: Optional[Iterable[LoadRow]] = None) -> list[LoadCheck]:
    """Every figure ``validate``'s load table summarizes: :func:`compare` and :func:`median_ttft`."""
    rows = list(load_measured_load() if rows is None else rows)
    return compare(rows) + median_ttft(rows)


def median_ttft_table(rows: Optional[Iterable[LoadRow]] = None) -> list[list[str]]:
    """Per source and over all of them: the runs :func:`median_ttft` compares, the plan's median abs. and median
    signed error on their median TTFT, and on the same runs' mean TTFT (``ttft_ms``)."""
    rows = list(load_measured_load() if rows is None else rows)
    source = {r.id: source_of(r) for r in rows}
    med = median_ttft(rows)
    compared = {c.row for c in med}
    mean = {c.row: c for c in compare([r for r in rows if r.id in compared]) if c.metric == "ttft_ms"}
    out = [["source", "runs", "median TTFT: median abs. error", "median error", "mean TTFT: median abs. error",
            "median error"]]
    for group in ["all", *sorted({source[c.row] for c in med})]:
        cs = [c for c in med if group in ("all", source[c.row])]
        line = [group, str(len(cs))]
        for errors in ([c.error for c in cs], [mean[c.row].error for c in cs]):
            line += [f"{statistics.median(abs(e) for e in errors):.1%}", f"{statistics.median(errors):+.1%}"]
        out.append(line)
    return out


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

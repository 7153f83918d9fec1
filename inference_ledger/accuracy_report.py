"""What ``validate`` reports about the load rows' held-out figures: summaries, bands, coverage and tables.

The figures come from :func:`inference_ledger.accuracy.study`; the bands written here are what
:mod:`inference_ledger.bands` reads when a plan is resolved.
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import io
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .accuracy import METRICS, MIN_FIT_ROWS, MIN_FIT_SOURCES, PLAN_USES_FIT, Figure, Study
from .bands import (BAND_HEADER, BAND_QUANTILES, BAND_SHARE_WORDS, BANDS_CSV, MIN_BAND_ROWS, SEGMENT_CHAIN, Band, level_key, pick)
from .files import write_with
from .load_measurements import MEASURED_LOAD_CSV

# ----------------------------------------------------------------------------------------------------------------
# summaries
# ----------------------------------------------------------------------------------------------------------------

#: How the left-out figures are grouped in the table, in this order.
BREAKDOWNS = (("source", "source"), ("engine family", "engine_family"), ("GPU vendor", "gpu_vendor"),
              ("dense/MoE", "architecture"), ("regime", "regime"))


@dataclass(frozen=True)
class Group:
    breakdown: str      # 'all', 'source', 'engine family', ...
    name: str
    metric: str
    n: int
    median_abs_error: float
    median_error: float


def median_abs_error(figs: Sequence[Figure]) -> float:
    return statistics.median(abs(f.error) for f in figs)


def groups(figs: Sequence[Figure]) -> list[Group]:
    """Median |error| and median error per metric: over all figures, then per source, engine family, GPU vendor,
    dense/MoE and regime."""
    out = []
    for metric in METRICS:
        fm = [f for f in figs if f.metric == metric]
        if not fm:
            continue
        out.append(Group("all", "all", metric, len(fm), median_abs_error(fm), statistics.median(f.error for f in fm)))
        for label, attr in BREAKDOWNS:
            for name in sorted({getattr(f, attr) for f in fm}):
                fs = [f for f in fm if getattr(f, attr) == name]
                out.append(Group(label, name, metric, len(fs), median_abs_error(fs),
                                 statistics.median(f.error for f in fs)))
    return out


# ----------------------------------------------------------------------------------------------------------------
# bands
# ----------------------------------------------------------------------------------------------------------------


def quantiles(ratios: Sequence[float]) -> tuple[float, float, float]:
    """(low, median, high): the band's percentiles of the ratios (numpy's linear interpolation)."""
    lo, mid, hi = np.percentile(np.asarray(ratios, dtype=float), (BAND_QUANTILES[0], 50.0, BAND_QUANTILES[1]))
    return float(lo), float(mid), float(hi)


def bands(figs: Sequence[Figure]) -> list[Band]:
    """Every segment (at every level of :data:`SEGMENT_CHAIN`) with at least :data:`MIN_BAND_ROWS` figures of a
    metric, and the all-rows band of every metric whatever its count."""
    out = []
    for metric in METRICS:
        fm = [f for f in figs if f.metric == metric]
        if not fm:
            continue
        for level in SEGMENT_CHAIN:
            keys = sorted({level_key(f.segment(), level) for f in fm})
            for key in keys:
                fs = [f for f in fm if level_key(f.segment(), level) == key]
                if len(fs) >= MIN_BAND_ROWS or not level:
                    lo, mid, hi = quantiles([f.ratio for f in fs])
                    out.append(Band(*key, metric, len(fs), len({f.source for f in fs}), lo, mid, hi))
    return out


@dataclass(frozen=True)
class Coverage:
    metric: str
    n: int
    inside: float          # share of left-out figures inside a band drawn without their source
    median_width: float    # median high / low of those bands


def coverage(figs: Sequence[Figure]) -> list[Coverage]:
    """For each left-out figure, the band of its segment drawn from the *other* sources' left-out figures: the share
    inside and the median high/low (how a band built this way does on a source it has never seen)."""
    out = []
    for metric in METRICS:
        fm = [f for f in figs if f.metric == metric]
        if not fm:
            continue
        inside, widths = [], []
        for s in sorted({f.source for f in fm}):
            others = [f for f in figs if f.source != s]
            if not any(f.metric == metric for f in others):
                continue
            table = bands(others)
            for f in fm:
                if f.source == s:
                    b = pick(table, metric, f.segment())
                    inside.append(b.low <= f.ratio <= b.high)
                    widths.append(b.high / b.low)
        if inside:
            out.append(Coverage(metric, len(inside), sum(inside) / len(inside), statistics.median(widths)))
    return out


def data_fingerprint(path: Path = MEASURED_LOAD_CSV) -> str:
    """The first 12 hex digits of the load file's SHA-256: which data a band table came from."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def bands_csv(table: Sequence[Band], n_rows: int, n_sources: int, fingerprint: str, date: str) -> str:
    buf = io.StringIO()
    buf.write("# Error bands of the plan's figures: percentiles of measured / predicted over the held-out figures of\n"
              "# inference_ledger/data/measured_load.csv (the plan as it runs; inference_ledger/accuracy.py says how\n"
              "# each figure is held out from what it is predicted with). Written by\n"
              "# `inference-ledger validate --write-bands`; read when a plan is resolved (nothing is refitted then).\n"
              f"# date {date}; data measured_load.csv sha256 {fingerprint} ({n_rows} rows, {n_sources} sources).\n"
              f"# low/high: the {BAND_QUANTILES[0]:g}th/{BAND_QUANTILES[1]:g}th percentile, so {BAND_SHARE_WORDS}.\n"
              f"# A segment (engine_family x gpu_vendor x architecture, '*' = any) is listed when it holds at least\n"
              f"# {MIN_BAND_ROWS} figures of the metric; a plan uses its own segment, else the first listed parent\n"
              "# (engine family dropped, then dense/MoE, then the vendor); the all-rows band is always listed.\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(BAND_HEADER)
    for b in table:
        w.writerow([b.engine_family, b.gpu_vendor, b.architecture, b.metric, b.n, b.sources,
                    f"{b.low:.4f}", f"{b.median:.4f}", f"{b.high:.4f}"])
    return buf.getvalue()


def write_bands(st: Study, path: Path | str = BANDS_CSV, date: Optional[str] = None) -> Path:
    text = bands_csv(bands(st.served), len(st.rowset), len(set(st.rowset.sources)), data_fingerprint(),
                     date or _dt.date.today().isoformat())

    def fill(tmp: str) -> None:
        Path(tmp).write_text(text, encoding="utf-8")

    return write_with(path, "csv", fill, "--write-bands")


# ----------------------------------------------------------------------------------------------------------------
# tables (lists of text rows; the CLI renders them as text, markdown or CSV)
# ----------------------------------------------------------------------------------------------------------------

SHORT = {"output_tok_s": "output tokens/s", "tpot_ms": "TPOT", "ttft_ms": "TTFT"}


def loso_table(st: Study) -> list[list[str]]:
    """Per breakdown and group, per metric: figures, median |error| left out (fitted on the other sources) and with
    the plan's defaults (not fitted on these rows), and the median signed error of what the plan runs."""
    head = ["breakdown", "group", "metric", "figures", "left out: median abs. error",
            "defaults: median abs. error", "plan: median error"]
    lo = {(g.breakdown, g.name, g.metric): g for g in groups(st.left_out)}
    de = {(g.breakdown, g.name, g.metric): g for g in groups(st.defaults)}
    plan_groups = lo if PLAN_USES_FIT else de
    body = []
    for key, g in lo.items():
        d = de.get(key)
        body.append([g.breakdown, g.name, SHORT[g.metric], str(g.n), f"{g.median_abs_error:.1%}",
                     f"{d.median_abs_error:.1%}" if d else "-", f"{plan_groups[key].median_error:+.1%}"])
    order = ["all"] + [b for b, _ in BREAKDOWNS]
    body.sort(key=lambda r: (order.index(r[0]), list(SHORT.values()).index(r[2])))
    return [head] + body


def coverage_table(st: Study) -> list[list[str]]:
    head = ["metric", "figures", "inside the band", "median high/low"]
    return [head] + [[SHORT[c.metric], str(c.n), f"{c.inside:.0%}", f"{c.median_width:.2f}"]
                     for c in coverage(st.served)]


def fitted_table(st: Study) -> list[list[str]]:
    head = ["parameter", "scope", "value", "default", "fitted on"]
    body = []
    for f in st.fitted:
        p = f.parameter
        n_src = f"{len(f.sources)} source{'s' if len(f.sources) != 1 else ''}"
        on = (f"{f.rows} rows of {n_src}" if f.fitted else
              f"not fitted (default kept): {f.rows} rows of {n_src}, fewer than {MIN_FIT_ROWS} figures or "
              f"{MIN_FIT_SOURCES} sources")
        body.append([p.name, f"{p.by} = {p.group}" if p.by != "*" else "all", f"{f.value:.4g}", f"{f.default:.4g}",
                     on])
    return [head] + body


def in_sample_table(st: Study) -> list[list[str]]:
    head = ["metric", "figures", "IN-SAMPLE median abs. error (fitted on every source, for reference only)"]
    return [head] + [[SHORT[g.metric], str(g.n), f"{g.median_abs_error:.1%}"]
                     for g in groups(st.in_sample) if g.breakdown == "all"]


def headline(st: Study) -> dict[str, float]:
    """metric -> median |error| of what the plan runs, over every held-out figure."""
    return {g.metric: g.median_abs_error for g in groups(st.served) if g.breakdown == "all"}

"""What ``validate`` reports about the load rows' held-out figures: summaries, bands, coverage and tables.

The figures come from :func:`inference_ledger.validation.accuracy.study`; the bands written here are what
:mod:`inference_ledger.catalogs.bands` reads when a plan is resolved.
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

from inference_ledger.validation.accuracy import METRICS, MIN_FIT_ROWS, MIN_FIT_SOURCES, PLAN_USES_FIT, Figure, Study
from inference_ledger.catalogs.bands import (BAND_HEADER, BAND_QUANTILES, BAND_SHARE_WORDS, BANDS_CSV, FITTED_CSV,
                                             FITTED_HEADER, MIN_BAND_ROWS, MIN_BAND_SOURCES, SEGMENT_CHAIN,
                                             SEGMENT_WORDS, Band, level_key)
from inference_ledger.core.files import write_with
from inference_ledger.catalogs.load_measurements import MEASURED_LOAD_CSV

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


def weighted_percentile(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    """The q-th percentile of weighted values: sorted, each value sits at the middle of its weight's share of the
    cumulative weight, (w_1 + ... + w_i - w_i / 2) / W, linear between those positions and flat beyond the ends.
    With equal weights it is the Hazen percentile (position (i - 1/2) / n)."""
    order = np.argsort(np.asarray(values, dtype=float), kind="stable")
    v = np.asarray(values, dtype=float)[order]
    w = np.asarray(weights, dtype=float)[order]
    pos = (np.cumsum(w) - w / 2) / w.sum()
    return float(np.interp(q / 100, pos, v))


def quantiles(figs: Sequence[Figure]) -> tuple[float, float, float]:
    """(low, median, high): the band's percentiles of measured / predicted, each source weighing the same (each
    figure 1 / its source's figures): a plan's next deployment is a new source, not one more row of the largest."""
    counts: dict[str, int] = {}
    for f in figs:
        counts[f.source] = counts.get(f.source, 0) + 1
    ratios, weights = [f.ratio for f in figs], [1 / counts[f.source] for f in figs]
    lo, mid, hi = (weighted_percentile(ratios, weights, q) for q in (BAND_QUANTILES[0], 50.0, BAND_QUANTILES[1]))
    return lo, mid, hi


def bands(figs: Sequence[Figure]) -> list[Band]:
    """Every segment (at every level of :data:`SEGMENT_CHAIN`) with at least :data:`MIN_BAND_ROWS` figures of a
    metric from at least :data:`MIN_BAND_SOURCES` sources, and the all-rows band of every metric whatever its
    count."""
    out = []
    for metric in METRICS:
        fm = [f for f in figs if f.metric == metric]
        if not fm:
            continue
        for level in SEGMENT_CHAIN:
            keys = sorted({level_key(f.segment(), level) for f in fm})
            for key in keys:
                fs = [f for f in fm if level_key(f.segment(), level) == key]
                n_sources = len({f.source for f in fs})
                if (len(fs) >= MIN_BAND_ROWS and n_sources >= MIN_BAND_SOURCES) or not level:
                    lo, mid, hi = quantiles(fs)
                    out.append(Band(*key, metric, len(fs), n_sources, lo, mid, hi))
    return out


@dataclass(frozen=True)
class Coverage:
    metric: str
    source: str            # 'all' or one source
    n: int
    inside: float          # share of held-out figures inside a band drawn without their source
    median_width: float    # median high / low of those bands


#: Ways to segment the bands, each checked on the held-out figures as the shipped one is (the accuracy page's
#: comparison): words, the levels a figure's band is looked up at (Figure attributes, narrowest first, down to all
#: rows) and the fewest sources a segment needs for a band of its own.  The first is the shipped scheme.
SEGMENTATIONS = (
    ("engine family (shipped)", SEGMENT_CHAIN, MIN_BAND_SOURCES),
    ("the same, segments of 4 sources or more", SEGMENT_CHAIN, 4),
    ("engine family x GPU vendor x dense/MoE", (("engine_family", "gpu_vendor", "architecture"),
                                                ("gpu_vendor", "architecture"), ("gpu_vendor",), ()), MIN_BAND_SOURCES),
    ("engine family x dense/MoE", (("engine_family", "architecture"), ("engine_family",), ()), MIN_BAND_SOURCES),
    ("dense/MoE", (("architecture",), ()), MIN_BAND_SOURCES),
    ("regime x engine family", (("regime", "engine_family"), ("regime",), ()), MIN_BAND_SOURCES),
    ("regime", (("regime",), ()), MIN_BAND_SOURCES),
    ("none (all rows)", ((),), MIN_BAND_SOURCES),
)


def coverage(figs: Sequence[Figure], per_source: bool = False, chain: Sequence[Sequence[str]] = SEGMENT_CHAIN,
             min_sources: int = MIN_BAND_SOURCES) -> list[Coverage]:
    """For each held-out figure, the band of its segment drawn from the *other* sources' figures: the share inside
    and the median high/low (how a band built this way does on a source it has never seen); per metric, and per
    metric and source with ``per_source``.  A figure's band is its segment's at the first level of ``chain`` that
    holds :data:`MIN_BAND_ROWS` of the other sources' figures from ``min_sources`` sources, all rows at the last
    (what :func:`bands` lists and :func:`~inference_ledger.catalogs.bands.pick` takes, with the shipped chain)."""
    out = []
    for metric in METRICS:
        fm = [f for f in figs if f.metric == metric]
        if not fm:
            continue
        checked: list[tuple[str, bool, float]] = []
        for s in sorted({f.source for f in fm}):
            others = [f for f in fm if f.source != s]
            if not others:
                continue
            drawn: dict[tuple, Optional[tuple[float, float]]] = {}
            for f in fm:
                if f.source != s:
                    continue
                for level in chain:
                    key = (tuple(level), tuple(getattr(f, a) for a in level))
                    if key not in drawn:
                        fs = [g for g in others if tuple(getattr(g, a) for a in level) == key[1]]
                        listed = (len(fs) >= MIN_BAND_ROWS and len({g.source for g in fs}) >= min_sources) or not level
                        drawn[key] = quantiles(fs)[::2] if listed else None
                    if drawn[key] is not None:
                        lo, hi = drawn[key]
                        break
                checked.append((s, lo <= f.ratio <= hi, hi / lo))
        groups = [("all", checked)] + ([(s, [c for c in checked if c[0] == s]) for s in sorted({c[0] for c in checked})]
                                       if per_source else [])
        for name, cs in groups:
            if cs:
                out.append(Coverage(metric, name, len(cs), sum(c[1] for c in cs) / len(cs),
                                    statistics.median(c[2] for c in cs)))
    return out


def segmentation_table(st: Study) -> list[list[str]]:
    """Each of :data:`SEGMENTATIONS` held out source by source: per metric, the share of figures inside a band drawn
    without their source and the median high/low."""
    head = ["segments"] + [f"{SHORT[m]}: {what}" for m in METRICS for what in ("inside", "high/low")]
    body = []
    for words, chain, min_sources in SEGMENTATIONS:
        cov = {c.metric: c for c in coverage(st.served, chain=chain, min_sources=min_sources)}
        body.append([words] + [x for m in METRICS for x in ((f"{cov[m].inside:.0%}", f"{cov[m].median_width:.2f}")
                                                             if m in cov else ("", ""))])
    return [head] + body


#: The accuracy targets the held-out figures are read against: metric -> (median |error| at most, per source at most)
TARGETS = {"output_tok_s": (0.15, 0.20), "tpot_ms": (0.15, None), "ttft_ms": (0.30, None)}
#: ... and the tokens/s band: share of held-out figures inside at least, median high/low at most
BAND_TARGET = (0.75, 1.6)


def data_fingerprint(path: Path = MEASURED_LOAD_CSV) -> str:
    """The first 12 hex digits of the load file's SHA-256: which data a band table came from."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def bands_csv(table: Sequence[Band], n_rows: int, n_sources: int, fingerprint: str, date: str) -> str:
    buf = io.StringIO()
    buf.write("# Error bands of the plan's figures: percentiles of measured / predicted over the held-out figures of\n"
              "# inference_ledger/data/measured_load.csv (the plan as it runs; inference_ledger/validation/accuracy.py\n"
              "# says how each figure is held out from what it is predicted with). Written by\n"
              "# `inference-ledger validate --write-bands`; read when a plan is resolved (nothing is refitted then).\n"
              f"# date {date}; data measured_load.csv sha256 {fingerprint} ({n_rows} rows, {n_sources} sources).\n"
              f"# low/high: the {BAND_QUANTILES[0]:g}th/{BAND_QUANTILES[1]:g}th percentile (each source weighing the same),\n"
              f"# so {BAND_SHARE_WORDS}.\n"
              f"# A segment ({SEGMENT_WORDS}; '*' = any) is listed when it holds at least\n"
              f"# {MIN_BAND_ROWS} figures of the metric from {MIN_BAND_SOURCES} sources or more; a plan uses its own segment,\n"
              "# else the all-rows band, which is always listed.\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(BAND_HEADER)
    for b in table:
        w.writerow([b.engine_family, b.gpu_vendor, b.architecture, b.metric, b.n, b.sources,
                    f"{b.low:.4f}", f"{b.median:.4f}", f"{b.high:.4f}"])
    return buf.getvalue()


def write_fitted(st: Study, path: Path | str = FITTED_CSV, date: Optional[str] = None) -> Path:
    text = fitted_csv(st, data_fingerprint(), date or _dt.date.today().isoformat())
    return write_with(path, "csv", lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), "--write-bands")


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
    head = ["metric", "source", "figures", "inside the band", "median high/low"]
    return [head] + [[SHORT[c.metric], c.source, str(c.n), f"{c.inside:.0%}", f"{c.median_width:.2f}"]
                     for c in coverage(st.served, per_source=True)]


def targets_table(st: Study) -> list[list[str]]:
    """The plan's held-out figures against the accuracy targets (met: yes/NO)."""
    head = ["held-out figure", "measured here", "target", "met"]
    g = {(x.breakdown, x.name, x.metric): x for x in groups(st.served)}
    body = []
    for metric, (overall, per_source) in TARGETS.items():
        a = g.get(("all", "all", metric))
        if a is None:
            continue
        body.append([f"{SHORT[metric]}, median abs. error, all rows", f"{a.median_abs_error:.1%}", f"<= {overall:.0%}",
                     "yes" if a.median_abs_error <= overall else "NO"])
        if per_source is not None:
            worst = max((x for x in g.values() if x.breakdown == "source" and x.metric == metric),
                        key=lambda x: x.median_abs_error)
            body.append([f"{SHORT[metric]}, worst source ({worst.name})", f"{worst.median_abs_error:.1%}",
                         f"<= {per_source:.0%}", "yes" if worst.median_abs_error <= per_source else "NO"])
    c = next((c for c in coverage(st.served) if c.metric == "output_tok_s"), None)
    if c is not None:
        body.append(["tokens/s figures inside their band", f"{c.inside:.1%}", f">= {BAND_TARGET[0]:.0%}",
                     "yes" if c.inside >= BAND_TARGET[0] else "NO"])
        body.append(["tokens/s band, median high/low", f"{c.median_width:.2f}", f"<= {BAND_TARGET[1]:g}",
                     "yes" if c.median_width <= BAND_TARGET[1] else "NO"])
    return [head] + body


def fitted_table(st: Study) -> list[list[str]]:
    head = ["parameter", "scope", "value", "default", "fitted on", "plans use it"]
    body = []
    for f in st.fitted:
        p = f.parameter
        n_src = f"{len(f.sources)} source{'s' if len(f.sources) != 1 else ''}"
        on = (f"{f.rows} rows of {n_src}" if f.fitted else
              f"not fitted (default kept): {f.rows} rows of {n_src}, fewer than {MIN_FIT_ROWS} figures or "
              f"{MIN_FIT_SOURCES} sources")
        body.append([p.name, f"{p.by} = {p.group}" if p.by != "*" else "all", f"{f.value:.4g}", f"{f.default:.4g}",
                     on, "yes" if f.fitted and PLAN_USES_FIT else "no (the default)"])
    return [head] + body


def in_sample_table(st: Study) -> list[list[str]]:
    head = ["metric", "figures", "IN-SAMPLE median abs. error (fitted on every source, for reference only)"]
    return [head] + [[SHORT[g.metric], str(g.n), f"{g.median_abs_error:.1%}"]
                     for g in groups(st.in_sample) if g.breakdown == "all"]


def headline(st: Study) -> dict[str, float]:
    """metric -> median |error| of what the plan runs, over every held-out figure."""
    return {g.metric: g.median_abs_error for g in groups(st.served) if g.breakdown == "all"}


def fitted_csv(st: Study, fingerprint: str, date: str) -> str:
    """The fitted parameters (on every source) as recorded data: value, default, what each was fitted on."""
    buf = io.StringIO()
    buf.write("# Declared parameters of inference_ledger/validation/accuracy.py fitted on every source_group of\n"
              "# inference_ledger/data/measured_load.csv (coarse grid search, median |log(predicted/measured)| of output\n"
              "# tokens/s and TPOT, each source weighing the same). Written by `inference-ledger validate --write-bands`.\n"
              f"# date {date}; data measured_load.csv sha256 {fingerprint} ({len(st.rowset)} rows, "
              f"{len(st.sources)} sources).\n"
              "# fitted 0: too few figures or sources in its scope (the default is kept). applied 1: resolved plans of its\n"
              "# scope use the value (accuracy.PLAN_USES_FIT); 0: recorded only, plans run the default.\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(FITTED_HEADER)
    for f in st.fitted:
        p = f.parameter
        w.writerow([p.name, p.by, p.group, f"{f.value:.6g}", f"{f.default:.6g}", int(f.fitted),
                    int(f.fitted and PLAN_USES_FIT), f.rows, "|".join(f.sources),
                    "" if f.loss != f.loss else f"{f.loss:.4f}"])
    return buf.getvalue()

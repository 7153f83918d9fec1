"""Accuracy as it generalizes: a few fitted parameters, leave-one-source-out errors, and error bands.

The load rows of :mod:`inference_ledger.load_measurements` come from a handful of independent sources (a source is
the file's ``source_group``: one team with one harness, whatever documents it published; see :func:`source_of`).
A number that was tuned on a source says little about the next deployment, so every error this module reports as
the headline is *left out*: for each source, the declared parameters are fitted on every other source and the left-out
source is predicted with them.

* **Parameters** (:data:`PARAMETERS`): a short declared list of plan inputs with a physical meaning (the share of the
  HBM bandwidth a decode step streams weights at, per GPU vendor; the engine's fixed time per step, per engine
  family; ...).  Each is fitted by a coarse grid search, one parameter at a time (two passes), minimising the median
  ``|log(predicted / measured)|`` over the output tokens/s and TPOT of the rows in its scope (each source weighing
  the same), never per row.  A parameter whose scope has fewer than :data:`MIN_FIT_ROWS` training figures or
  :data:`MIN_FIT_SOURCES` sources keeps its default.  Names the plan does
  not have are skipped, so the list works on whatever step model the plan runs.
* **Held out twice**: the plan runs its sourced defaults unless :data:`PLAN_USES_FIT` (not fitted on any load row),
  so its own figures are held out too; ``validate`` prints both, and the plan's ("served") figures set the bands.
* **Bands** (:mod:`inference_ledger.bands`): per segment (engine family x GPU vendor x dense/MoE, thin segments
  falling back to a parent) the 10th and 90th percentiles of ``measured / predicted`` (numpy's default linear
  interpolation between order statistics) over the served figures: about 80% of new measurements should fall inside
  ``predicted x [low, high]``.  :func:`coverage` checks that on each source with bands drawn from the others.  They
  are data (``inference_ledger/data/error_bands.csv``, written by ``inference-ledger validate --write-bands``), read
  when a plan is resolved: nothing is refitted at plan time.
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import io
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

from . import catalog, engines, plan, resolve
from .bands import (BAND_HEADER, BAND_QUANTILES, BAND_SHARE_WORDS, BANDS_CSV, MIN_BAND_ROWS, SEGMENT_CHAIN,
                    SEGMENT_FIELDS, Band, level_key, pick, segment_of)
from .load_measurements import MEASURED_LOAD_CSV, LoadRow, load_measured_load
from .units import MS_PER_S

#: measured figure -> label (the load rows' metrics; TPOT falls back to the mean ITL where only that is printed)
METRICS = {"output_tok_s": "Output tokens/s under load", "tpot_ms": "TPOT under load",
           "ttft_ms": "TTFT under load"}
#: What the parameters are fitted on (TTFT under load is mostly queueing: reported and banded, not fitted).
FIT_METRICS = ("output_tok_s", "tpot_ms")
#: A parameter needs this many training figures in its scope to be fitted (else it keeps its default).
MIN_FIT_ROWS = 6
#: ... from at least this many sources: a parameter is never tuned to one source.
MIN_FIT_SOURCES = 2


# ----------------------------------------------------------------------------------------------------------------
# what a row is: its source and its segment
# ----------------------------------------------------------------------------------------------------------------


def source_of(row: LoadRow) -> str:
    """The independent source a row is held out with: its ``source_group`` (team + harness: documents of one group
    are left out together, so a sibling document cannot leak the held-out harness), else its ``source_key``, else the
    publisher of its URL (``github.com/<owner>/<repo>`` for GitHub, the host otherwise, without ``www.``)."""
    for attr in ("source_group", "source_key"):
        key = getattr(row, attr, "") or ""
        if key:
            return key
    m = re.match(r"\s*https?://(?:www\.)?([^/\s]+)/?([^/\s]*)/?([^/\s#?]*)", row.source)
    if not m:
        return row.source.split(" ")[0]
    host, owner, repo = m.groups()
    return f"{host}/{owner}/{repo}" if host == "github.com" else host


def row_segment(row: LoadRow) -> dict[str, str]:
    return segment_of(catalog.get_model(row.model_id).num_experts, row.gpu_id, row.engine_id)


# ----------------------------------------------------------------------------------------------------------------
# the declared parameters
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Parameter:
    """A plan input fitted per group of rows: ``by`` is a segment field (or ``*``: every row), ``group`` its value."""

    name: str
    by: str
    group: str
    grid: tuple[float, ...]
    why: str


def _geom(lo: float, hi: float, n: int) -> tuple[float, ...]:
    return tuple(float(x) for x in np.geomspace(lo, hi, n))


def _lin(lo: float, hi: float, n: int) -> tuple[float, ...]:
    return tuple(float(x) for x in np.linspace(lo, hi, n))


_BW = "share of the HBM bandwidth a decode step streams the weights at (the vendor's GEMM/GEMV kernels)"
_COMPUTE = "share of dense peak a compute-bound decode step reaches (the vendor's GEMM kernels at large M)"
_PREFILL = "share of dense peak a prefill reaches (the vendor's GEMM and attention kernels)"
_STEP = "fixed time per decode step outside the layers (scheduler, sampling, launch): the engine's own"
#: The declared parameters, fitted in this order.  Physical meaning and range first; never one per row.
PARAMETERS: tuple[Parameter, ...] = (
    Parameter("bw_efficiency", "gpu_vendor", "NVIDIA", _geom(0.35, 0.95, 25), _BW),
    Parameter("bw_efficiency", "gpu_vendor", "AMD", _geom(0.2, 0.95, 25), _BW),
    Parameter("decode_compute_efficiency", "gpu_vendor", "NVIDIA", _geom(0.15, 0.9, 25), _COMPUTE),
    Parameter("decode_compute_efficiency", "gpu_vendor", "AMD", _geom(0.1, 0.9, 25), _COMPUTE),
    Parameter("prefill_efficiency", "gpu_vendor", "NVIDIA", _geom(0.1, 0.9, 25), _PREFILL),
    Parameter("prefill_efficiency", "gpu_vendor", "AMD", _geom(0.1, 0.9, 25), _PREFILL),
    Parameter("step_overhead_seconds", "engine_family", "vllm", _lin(0.0, 6e-3, 25), _STEP),
    Parameter("step_overhead_seconds", "engine_family", "sglang", _lin(0.0, 6e-3, 25), _STEP),
    Parameter("step_overhead_seconds", "engine_family", "trtllm", _lin(0.0, 6e-3, 25), _STEP),
)


def declared_parameters() -> tuple[Parameter, ...]:
    """The declared parameters that are inputs of the plan as it stands."""
    return tuple(p for p in PARAMETERS if p.name in plan.INPUT_BY_NAME)


@dataclass(frozen=True)
class Fitted:
    """A fitted parameter and what it was fitted on."""

    parameter: Parameter
    value: float
    default: float
    fitted: bool          # False: too few training figures in its scope, the default is kept
    rows: int             # training rows in its scope
    sources: tuple[str, ...]
    loss: float           # median |log(predicted/measured)| at the value (training figures of its scope)


# ----------------------------------------------------------------------------------------------------------------
# the rows, resolved once and evaluated vectorised
# ----------------------------------------------------------------------------------------------------------------


def row_inputs(row: LoadRow) -> dict:
    """The plan's inputs for one load row (its deployment, regime, batch and request shape)."""
    numbers = {"tp": row.tp, "concurrency": row.batch, "input_tokens": row.input_tokens,
               "output_tokens": row.output_tokens}
    return resolve.resolve(row.model_id, row.gpu_id, weight_dtype=row.weight_dtype or None,
                           kv_dtype=row.kv_dtype or "bf16", engine=row.engine_id or engines.DEFAULT_ENGINE,
                           batching=row.regime, numbers=numbers).inputs


def predicted_metrics(values, replicas) -> dict:
    """The plan's figures in the rows' units: deployment output tokens/s (per replica x replicas), TPOT and TTFT in ms."""
    return {"output_tok_s": values["tokens_per_second"] * replicas, "tpot_ms": values["tpot_seconds"] * MS_PER_S,
            "ttft_ms": values["ttft_seconds"] * MS_PER_S}


def measured_metrics(row: LoadRow) -> dict[str, Optional[float]]:
    return {"output_tok_s": row.deployment_tok_s, "tpot_ms": row.tpot_ms if row.tpot_ms is not None else row.itl_ms,
            "ttft_ms": row.ttft_ms}


class RowSet:
    """Load rows resolved once; :meth:`predict` evaluates the plan over numpy arrays, one call per deployment group
    (GPU x engine), with some inputs replaced per row."""

    def __init__(self, rows: Sequence[LoadRow]):
        self.rows = list(rows)
        if not self.rows:
            raise ValueError("no load rows to evaluate")
        inputs = [row_inputs(r) for r in self.rows]
        self.keys = tuple(inputs[0])
        self.base = {k: np.array([float(i[k]) for i in inputs]) for k in self.keys}
        self.replicas = np.array([r.gpus / r.tp for r in self.rows], dtype=float)
        group = [(r.gpu_id, r.engine_id) for r in self.rows]
        names = sorted(set(group))
        self.group = np.array([names.index(g) for g in group])
        self.n_groups = len(names)
        self.sources = np.array([source_of(r) for r in self.rows])
        seg = [row_segment(r) for r in self.rows]
        self.segment = {f: np.array([s[f] for s in seg]) for f in SEGMENT_FIELDS}
        self.measured = {m: np.array([np.nan if (x := measured_metrics(r)[m]) is None else x for r in self.rows])
                         for m in METRICS}

    def __len__(self) -> int:
        return len(self.rows)

    def predict(self, idx: np.ndarray, overrides: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Predicted figures of rows ``idx`` (repeats allowed) with inputs replaced by ``overrides`` (aligned to idx)."""
        out = {m: np.full(len(idx), np.nan) for m in METRICS}
        gi = self.group[idx]
        for g in np.unique(gi):
            pos = np.nonzero(gi == g)[0]
            rows = idx[pos]
            vals = {k: a[rows] for k, a in self.base.items()}
            for k, a in overrides.items():
                vals[k] = np.asarray(a, dtype=float)[pos]
            v = plan.evaluate(vals, validate=False)
            for m, a in predicted_metrics(v, self.replicas[rows]).items():
                out[m][pos] = np.asarray(a, dtype=float)
        return out

    def scope(self, p: Parameter) -> np.ndarray:
        return np.ones(len(self), bool) if p.by == "*" else self.segment[p.by] == p.group


def _abs_log(pred: np.ndarray, meas: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(np.log(pred / meas))


def _source_weighted_median(errors: np.ndarray, sources: np.ndarray) -> float:
    """The median of the finite errors with each source weighing the same in all (1/its figures per figure), so one
    large source cannot set a parameter alone; inf when there is none."""
    ok = np.isfinite(errors)
    if not ok.any():
        return math.inf
    e, s = errors[ok], sources[ok]
    names, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    w = 1.0 / counts[inverse]
    order = np.argsort(e, kind="stable")
    cum = np.cumsum(w[order])
    return float(e[order][np.searchsorted(cum, cum[-1] / 2)])


def fit(rs: RowSet, train: np.ndarray, params: Sequence[Parameter] | None = None,
        passes: int = 2) -> tuple[list[Fitted], dict[str, np.ndarray]]:
    """Fit the declared parameters on the rows where ``train`` is True.

    Returns the fitted parameters and the per-row input values they give (every row of a parameter's scope, trained
    on or not, takes its value; the others keep their resolved input)."""
    params = declared_parameters() if params is None else tuple(params)
    current = {p.name: rs.base[p.name].copy() for p in params}
    result: dict[int, Fitted] = {}
    all_idx = np.arange(len(rs))
    for _ in range(passes):
        for k, p in enumerate(params):
            in_scope = rs.scope(p)
            rows = all_idx[in_scope & train]
            n_fig = sum(int(np.isfinite(rs.measured[m][rows]).sum()) for m in FIT_METRICS)
            default = float(np.median(rs.base[p.name][in_scope])) if in_scope.any() else math.nan
            if n_fig < MIN_FIT_ROWS or len(set(rs.sources[rows])) < MIN_FIT_SOURCES:
                result[k] = Fitted(p, default, default, False, len(rows), tuple(sorted(set(rs.sources[rows]))),
                                   math.nan)
                continue
            grid = np.asarray(p.grid, dtype=float)
            idx = np.repeat(rows, len(grid))
            ov = {name: a[idx] for name, a in current.items()}
            ov[p.name] = np.tile(grid, len(rows))
            pred = rs.predict(idx, ov)
            e = np.concatenate([_abs_log(pred[m], rs.measured[m][idx]).reshape(len(rows), len(grid))
                                for m in FIT_METRICS], axis=0)
            src = np.concatenate([rs.sources[rows]] * len(FIT_METRICS))
            loss = np.array([_source_weighted_median(col, src) for col in e.T])
            best = int(np.argmin(loss))
            current[p.name][in_scope] = grid[best]
            result[k] = Fitted(p, float(grid[best]), default, True, len(rows),
                               tuple(sorted(set(rs.sources[rows]))), float(loss[best]))
    return [result[k] for k in sorted(result)], current


# ----------------------------------------------------------------------------------------------------------------
# leave one source out
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """One measured figure of one row and the plan's prediction of it (left out: fitted without the row's source)."""

    row: str
    source: str
    metric: str
    engine_family: str
    gpu_vendor: str
    architecture: str
    regime: str
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured

    @property
    def ratio(self) -> float:
        """measured / predicted: what a band multiplies a prediction by."""
        return self.measured / self.predicted

    def segment(self) -> dict[str, str]:
        return {"engine_family": self.engine_family, "gpu_vendor": self.gpu_vendor, "architecture": self.architecture}


def _figures(rs: RowSet, rows: np.ndarray, pred: dict[str, np.ndarray]) -> list[Figure]:
    out = []
    for j, i in enumerate(rows):
        r = rs.rows[i]
        for m in METRICS:
            meas, p = rs.measured[m][i], pred[m][j]
            if np.isfinite(meas) and np.isfinite(p) and p > 0:
                out.append(Figure(r.id, str(rs.sources[i]), m, str(rs.segment["engine_family"][i]),
                                  str(rs.segment["gpu_vendor"][i]), str(rs.segment["architecture"][i]), r.regime,
                                  float(meas), float(p)))
    return out


#: Whether the plan runs the fitted values.  It does not: it runs its sourced defaults (efficiencies.csv,
#: engines.csv), which were not fitted on the load rows, so each of its figures is already held out.  On the set as it
#: stands the fit, left out source by source, does worse than those defaults (``validate`` prints both); the fit is
#: reported until it does better, and the bands describe what the plan runs (:attr:`Study.served`).
PLAN_USES_FIT = False


@dataclass
class Study:
    """Everything ``validate`` reports about the load rows: left-out, in-sample and default-input figures."""

    rowset: RowSet
    left_out: list[Figure]     # each source predicted with the parameters fitted on the other sources
    in_sample: list[Figure]    # every row with the parameters fitted on every source (labelled in-sample, never a headline)
    defaults: list[Figure]     # the plan's own inputs, nothing fitted on these rows
    fitted: list[Fitted]       # fitted on every source
    per_source_fit: dict[str, list[Fitted]]

    @property
    def served(self) -> list[Figure]:
        """The held-out figures of the plan as it runs: what its bands and headline errors come from."""
        return self.left_out if PLAN_USES_FIT else self.defaults

    @property
    def served_words(self) -> str:
        return ("fitted on the other sources, each source left out" if PLAN_USES_FIT else
                "the plan's sourced defaults, not fitted on these rows")

    @property
    def sources(self) -> list[str]:
        return sorted(set(self.rowset.sources))


def study(rows: Optional[Iterable[LoadRow]] = None, params: Sequence[Parameter] | None = None) -> Study:
    """Fit on all sources but one, predict that one, for every source; plus the all-source fit and the defaults."""
    rs = RowSet(list(load_measured_load() if rows is None else rows))
    every = np.arange(len(rs))
    left_out: list[Figure] = []
    per_source: dict[str, list[Fitted]] = {}
    for s in sorted(set(rs.sources)):
        held = rs.sources == s
        fitted, values = fit(rs, ~held, params)
        per_source[s] = fitted
        rows = every[held]
        left_out += _figures(rs, rows, rs.predict(rows, {k: a[rows] for k, a in values.items()}))
    fitted, values = fit(rs, np.ones(len(rs), bool), params)
    in_sample = _figures(rs, every, rs.predict(every, values))
    defaults = _figures(rs, every, rs.predict(every, {}))
    order = {r.id: k for k, r in enumerate(rs.rows)}
    left_out.sort(key=lambda f: (order[f.row], list(METRICS).index(f.metric)))
    return Study(rs, left_out, in_sample, defaults, fitted, per_source)


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
    from .files import write_with
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

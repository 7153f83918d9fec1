"""Accuracy as it generalizes: a few fitted parameters, leave-one-source-out errors, and error bands.

The load rows of :mod:`inference_ledger.catalogs.load_measurements` come from a handful of independent sources (a source
is the file's ``source_group``: one team with one harness, whatever documents it published; see :func:`source_of`).
A number that was tuned on a source says little about the next deployment, so every error this module reports as the
headline is *left out*: for each source, the declared parameters are fitted on every other source and the left-out
source is predicted with them.

* **Parameters** (:data:`PARAMETERS`): a short declared list of plan inputs with a physical meaning (the share of the
  HBM bandwidth a decode step streams weights at, per GPU vendor; the engine's fixed time per step, per engine family;
  ...).  Each is fitted by a coarse grid search, one parameter at a time (two passes), minimising the median
  ``|log(predicted / measured)|`` over the output tokens/s and TPOT of the rows in its scope (each source weighing the
  same), never per row.  A parameter whose scope has fewer than :data:`MIN_FIT_ROWS` training figures or
  :data:`MIN_FIT_SOURCES` sources keeps its default.  Names the plan does not have are skipped, so the list works on
  whatever step model the plan runs.
* **Held out twice**: the plan runs its sourced defaults unless :data:`PLAN_USES_FIT` (not fitted on any load row), so
  its own figures are held out too; ``validate`` prints both, and the plan's ("served") figures set the bands.
* **Bands** (:mod:`inference_ledger.catalogs.bands`): per segment (``bands.SEGMENT_WORDS``, segments with too few
  figures or a single source falling back to all rows) the 10th and 90th percentiles of ``measured / predicted`` over
  the served figures, each source weighing the same (:func:`accuracy_report.weighted_percentile`): about 80% of new
  measurements should fall inside ``predicted x [low, high]``.  :func:`coverage` checks that on each source with bands
  drawn from the others.  They are data (``inference_ledger/data/error_bands.csv``, written by ``inference-ledger
  validate --write-bands``), read when a plan is resolved: nothing is refitted at plan time.
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

import numpy as np

from inference_ledger.catalogs import catalog, engines
from inference_ledger.graph import plan, resolve
from inference_ledger.catalogs.bands import SEGMENT_FIELDS, segment_of, unfitted
from inference_ledger.catalogs.load_measurements import LoadRow, load_measured_load
from inference_ledger.core.units import MS_PER_S

#: measured figure -> label (the load rows' metrics; TPOT falls back to the mean ITL where only that is printed)
METRICS = {"output_tok_s": "Output tokens/s under load", "tpot_ms": "TPOT under load",
           "ttft_ms": "TTFT under load"}
#: the plan lines those figures are predicted from (:func:`predicted_metrics`)
METRIC_LINES = ("benchmark_tokens_per_second", "benchmark_tpot_seconds", "ttft_seconds")
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


def _grid(space, lo: float, hi: float, n: int) -> tuple[float, ...]:
    """n grid values from lo to hi, spaced by ``space`` (np.geomspace or np.linspace)."""
    return tuple(float(x) for x in space(lo, hi, n))


_BW = "share of the HBM bandwidth a decode step streams the weights at (the vendor's GEMM/GEMV kernels)"
_COMPUTE = "share of dense peak a compute-bound decode step reaches (the vendor's GEMM kernels at large M)"
_PREFILL = "share of dense peak a prefill reaches (the vendor's GEMM and attention kernels)"
_STEP = "fixed time per decode step outside the layers (scheduler, sampling, launch): the engine's own"
_LAYER = "time per layer per forward pass of the kernels the measured tables do not hold: the engine's fusion"
_ROOF_LAYER = ("time per layer per decode step of kernel floors and launches where the GPU has no measured tables (the "
               "roofline fallback): the vendor's kernel floors")
#: The declared parameters, fitted in this order.  Physical meaning and range first; never one per row.
PARAMETERS: tuple[Parameter, ...] = (
    Parameter("bw_efficiency", "gpu_vendor", "NVIDIA", _grid(np.geomspace, 0.35, 0.95, 25), _BW),
    Parameter("bw_efficiency", "gpu_vendor", "AMD", _grid(np.geomspace, 0.2, 0.95, 25), _BW),
    Parameter("decode_compute_efficiency", "gpu_vendor", "NVIDIA", _grid(np.geomspace, 0.15, 0.9, 25), _COMPUTE),
    Parameter("decode_compute_efficiency", "gpu_vendor", "AMD", _grid(np.geomspace, 0.1, 0.9, 25), _COMPUTE),
    Parameter("prefill_efficiency", "gpu_vendor", "NVIDIA", _grid(np.geomspace, 0.1, 0.9, 25), _PREFILL),
    Parameter("prefill_efficiency", "gpu_vendor", "AMD", _grid(np.geomspace, 0.1, 0.9, 25), _PREFILL),
    Parameter("layer_overhead_seconds", "gpu_vendor", "NVIDIA", _grid(np.linspace, 0.0, 3e-4, 25), _ROOF_LAYER),
    Parameter("layer_overhead_seconds", "gpu_vendor", "AMD", _grid(np.linspace, 0.0, 3e-4, 25), _ROOF_LAYER),
    Parameter("step_overhead_seconds", "engine_family", "vllm", _grid(np.linspace, 0.0, 6e-3, 25), _STEP),
    Parameter("step_overhead_seconds", "engine_family", "sglang", _grid(np.linspace, 0.0, 6e-3, 25), _STEP),
    Parameter("step_overhead_seconds", "engine_family", "trtllm", _grid(np.linspace, 0.0, 6e-3, 25), _STEP),
    # the kernel-table step model's per-layer remainder (norms, rotary, activation: kernels its tables do not hold)
    Parameter("kernel_layer_overhead_seconds", "engine_family", "vllm", _grid(np.linspace, 0.0, 6e-5, 25), _LAYER),
    Parameter("kernel_layer_overhead_seconds", "engine_family", "sglang", _grid(np.linspace, 0.0, 6e-5, 25), _LAYER),
    Parameter("kernel_layer_overhead_seconds", "engine_family", "trtllm", _grid(np.linspace, 0.0, 6e-5, 25), _LAYER),
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
    """The plan's inputs for one load row (its deployment, regime, batch, request shape and the engine settings its
    source states: ``engine_args``, max_model_len going to the resolver, the rest as plan inputs)."""
    settings = row.engine_settings
    max_model_len = settings.pop("max_model_len", None)
    # tp is the row's GPUs per replica; under DP attention they are dp_attention ranks of tp / dp_attention each
    numbers = {"tp": row.tp / settings.get("dp_attention", 1), "concurrency": row.batch,
               "input_tokens": row.input_tokens, "output_tokens": row.output_tokens, **settings}
    if row.requests is not None:  # the run's N where the source prints it (else the benchmark tools' default)
        numbers["benchmark_requests"] = row.requests
    if row.fixed_lengths is not None:  # whether its requests share one length (else the plan's default)
        numbers["benchmark_fixed_lengths"] = row.fixed_lengths
    return resolve.resolve(row.model_id, row.gpu_id, weight_dtype=row.weight_dtype or None,
                           kv_dtype=row.kv_dtype or "bf16", engine=row.engine_id or engines.DEFAULT_ENGINE,
                           batching=row.regime, numbers=numbers,
                           max_model_len=None if max_model_len is None else int(max_model_len)).inputs


def predicted_metrics(values, replicas) -> dict:
    """The plan's figures in the rows' units: deployment output tokens/s (what the benchmark of the row measures, per
    replica x replicas), TPOT and TTFT in ms."""
    return {"output_tok_s": values["benchmark_tokens_per_second"] * replicas, "tpot_ms": values["benchmark_tpot_seconds"] * MS_PER_S,
            "ttft_ms": values["ttft_seconds"] * MS_PER_S}


def measured_metrics(row: LoadRow) -> dict[str, Optional[float]]:
    return {"output_tok_s": row.deployment_tok_s, "tpot_ms": row.tpot_ms if row.tpot_ms is not None else row.itl_ms,
            "ttft_ms": row.ttft_ms}


def _is_number(x) -> bool:
    try:
        float(x)
    except (TypeError, ValueError):
        return False
    return True


class RowSet:
    """Load rows resolved once; :meth:`predict` evaluates the plan over numpy arrays, one call per group of rows that
    share their inputs that are not numbers (every shipped row's are numbers: one call), with some inputs replaced
    per row."""

    def __init__(self, rows: Sequence[LoadRow], as_planned: bool = False):
        """``as_planned``: each row's inputs as a plan resolves and checks them; else the defaults a fit starts from."""
        self.rows = list(rows)
        if not self.rows:
            raise ValueError("no load rows to evaluate")
        with contextlib.nullcontext() if as_planned else unfitted():  # unfitted: the sourced defaults, whatever the
            inputs = [row_inputs(r) for r in self.rows]                # plan applies
        for i in inputs if as_planned else ():
            plan.validate_inputs(i)
        self.keys = tuple(inputs[0])
        numeric = {k for k in self.keys if all(_is_number(i.get(k)) for i in inputs)}
        self.base = {k: np.array([float(i[k]) for i in inputs]) for k in self.keys if k in numeric}
        # inputs that are not numbers (a table, a name) cannot be stacked: rows sharing them form one group (the GPU
        # and engine are numbers here: its catalog figures and kernel inputs, so rows of every GPU stack together)
        self.fixed = [{k: i[k] for k in self.keys if k not in numeric} for i in inputs]
        self.replicas = np.array([r.gpus / r.tp for r in self.rows], dtype=float)
        group = [repr(sorted(f.items())) for f in self.fixed]
        names = sorted(set(group))
        self.group = np.array([names.index(g) for g in group])
        self.sources = np.array([source_of(r) for r in self.rows])
        seg = [row_segment(r) for r in self.rows]
        self.segment = {f: np.array([s[f] for s in seg]) for f in SEGMENT_FIELDS}
        self.measured = {m: np.array([np.nan if (x := measured_metrics(r)[m]) is None else x for r in self.rows])
                         for m in METRICS}

    def __len__(self) -> int:
        return len(self.rows)

    def values(self, idx: np.ndarray, overrides: dict[str, np.ndarray],
               lines: Sequence[str]) -> dict[str, np.ndarray]:
        """The plan's ``lines`` for rows ``idx`` (repeats allowed), inputs replaced by ``overrides`` (as idx)."""
        out = {k: np.full(len(idx), np.nan) for k in lines}
        gi = self.group[idx]
        for g in np.unique(gi):   # one vectorised evaluation per group of rows
            pos = np.nonzero(gi == g)[0]
            rows = idx[pos]
            v = plan.evaluate({**self.fixed[rows[0]], **{k: a[rows] for k, a in self.base.items()},
                               **{k: np.asarray(a, dtype=float)[pos] for k, a in overrides.items()}}, validate=False)
            for k in lines:
                out[k][pos] = np.asarray(v[k], dtype=float)
        return out

    def predict(self, idx: np.ndarray, overrides: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Predicted figures of rows ``idx`` (repeats allowed) with inputs replaced by ``overrides`` (aligned to idx)."""
        return predicted_metrics(self.values(idx, overrides, METRIC_LINES), self.replicas[idx])

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


class RelativeError:
    """What a record of a ``measured`` figure and the plan's ``predicted`` one says of the plan."""

    @property
    def error(self) -> float:
        """(predicted - measured) / measured: > 0 the plan predicts more than was measured."""
        return (self.predicted - self.measured) / self.measured


@dataclass(frozen=True)
class Figure(RelativeError):
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


#: Whether plans run the fitted values.  They do not (yet): they run their sourced defaults (efficiencies.csv,
#: engines.csv), which were not fitted on the load rows, so each of their figures is already held out.  ``validate``
#: prints both columns and says which does better on the set as it stands (on the first 90 rows the left-out fit was
#: worse; on the 307-row set it is better on every metric).  Applying it moves every plan's numbers, so it is a
#: decision of its own: set True and run ``python tests/test_accuracy.py``; the fitted rows are then marked applied (a
#: resolved plan of their scope takes them) and the bands come from the fit's left-out figures (:attr:`Study.served`).
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

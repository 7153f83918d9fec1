"""The fit behind ``inference-ledger calibrate``: observations, the plan's predictions of them, and a bounded
least-squares fit of the named plan inputs the data moves and tells apart (see
:mod:`inference_ledger.validation.calibrate`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from inference_ledger.graph import plan
from inference_ledger.io.benchfiles import Record


@dataclass(frozen=True)
class Param:
    """A plan input a calibration may fit."""

    name: str          # the plan input (inference_ledger.graph.plan.INPUTS)
    group: str         # benchmark | startup: which records measure it
    lo: float
    hi: float
    what: str          # what in the data pins it


#: The plan inputs calibrate may fit, in the order it tries them (one list: rename here when the step model's
#: inputs change; a name the plan does not have is dropped).  Bounds keep a fit physical; each is also checked
#: against the input's own range.
DECLARED: tuple[Param, ...] = (
    Param("bw_efficiency", "benchmark", 0.05, 1.0, "TPOT at low concurrency (weight streaming)"),
    Param("decode_compute_efficiency", "benchmark", 0.05, 1.0,
          "TPOT growth with concurrency (prompt chunks and decode tokens computing together)"),
    Param("kv_read_efficiency", "benchmark", 0.05, 1.0, "TPOT growth with concurrency (attention reading the KV cache)"),
    Param("prefill_efficiency", "benchmark", 0.02, 1.0, "TTFT before the KV cache fills"),
    Param("gpu_memory_utilization", "benchmark", 0.3, 0.99,
          "where throughput stops growing with concurrency (the KV budget that holds the sequences)"),
    Param("step_overhead_seconds", "benchmark", 0.0, 0.05, "TPOT at low concurrency (fixed time per step)"),
    # the step priced per operation from measured kernel tables (where the GPU has them)
    Param("mlp_kernel_seconds_per_token", "benchmark", 0.0, 1e-3,
          "TPOT growth with concurrency (the MLP GEMMs' time per token: decode and prompt-chunk tokens)"),
    Param("decode_attention_kernel_seconds_per_kv_token", "benchmark", 0.0, 1e-6,
          "TPOT growth with concurrency (decode attention's time per KV token read)"),
    Param("mlp_kernel_floor_seconds", "benchmark", 0.0, 0.01, "TPOT at low concurrency (the MLP GEMMs' floor)"),
    Param("kernel_layer_overhead_seconds", "benchmark", 0.0, 1e-3,
          "TPOT at low concurrency (element-wise work per layer)"),
    Param("cuda_context_bytes", "startup", 0.0, 16 * 2**30, "KV cache tokens of the start-up logs (memory outside "
          "PyTorch the engine subtracts)"),
    Param("nccl_bytes", "startup", 0.0, 16 * 2**30, "KV cache tokens of start-up logs at TP > 1 against TP 1 "
          "(NCCL / custom all-reduce buffers)"),
)
FITTABLE: tuple[Param, ...] = tuple(p for p in DECLARED if p.name in plan.INPUT_BY_NAME)
PARAM_BY_NAME = {p.name: p for p in FITTABLE}
#: What each record kind is compared on: (plan line, the record's attribute, words).
METRICS = {
    "benchmark": (("tokens_per_second", "output_tokens_per_second", "output tokens/s"),
                  ("tpot_seconds", "tpot_seconds", "TPOT"),
                  ("ttft_seconds", "ttft_mean_seconds", "TTFT")),
    "startup": (("kv_capacity_tokens", "kv_cache_tokens", "KV cache tokens"),
                ("kv_cache_budget_bytes_per_gpu", "kv_cache_bytes", "KV cache memory")),
}
#: Weight of each plan line's residuals in the fit.  TTFT under load also holds the prefill's contention with
#: the decode steps, which the step model does not price: it informs the prefill efficiency without pulling the
#: step-time inputs away from what throughput and TPOT measure.
WEIGHTS = {"tokens_per_second": 1.0, "tpot_seconds": 1.0, "ttft_seconds": 0.25, "kv_capacity_tokens": 1.0,
           "kv_cache_budget_bytes_per_gpu": 1.0}
#: Kinds whose metrics are alternatives (the first the record states is used: KV memory only without KV tokens).
FIRST_ONLY = {"startup"}
#: A residual column this small (ln change per ln change of the parameter) means the data does not move it.
SENSITIVITY_MIN = 1e-3
#: A column whose part not explained by the parameters fitted before it is under this share is not separable.
SEPARABLE_MIN = 0.05
#: Outliers: residual more than this many median absolute deviations from the median of its figure ...
OUTLIER_MADS = 3.0
#: ... and more than this (ln, ~5%) from it: closer than benchmark-to-benchmark noise is never an outlier.
OUTLIER_FLOOR = 0.05
#: GPU memory a log states may differ this much from the catalog GPU's runtime memory (driver and ECC reserve).
MEMORY_TOLERANCE = 0.02
#: Model fields that must agree for a file's model to count as the same shapes.
SHAPES = ("num_layers", "hidden_size", "num_attention_heads", "kv_heads", "head_dim", "intermediate_size",
          "num_experts", "experts_per_token", "mla_latent_dim", "sliding_layers", "window", "moe_layers")


@dataclass
class Observation:
    record: int        # index into the records
    file: str
    kind: str          # benchmark | startup
    line: str          # plan line
    words: str
    measured: float


@dataclass
class FileResult:
    file: str
    residuals: dict[str, float]          # words -> ln(pred / measured)
    loo: dict[str, float] = field(default_factory=dict)   # the same, predicted by a fit without this file
    outlier: bool = False


@dataclass
class GroupFit:
    kind: str
    points: int
    fitted: dict[str, float]
    defaults: dict[str, float]
    left: dict[str, str]                 # parameter -> why it stayed at its default
    files: list[FileResult]
    thin: bool
    rms_before: float
    rms_after: float


def observations(records: Sequence[Record]) -> list[Observation]:
    out = []
    for i, r in enumerate(records):
        for line, attr, words in METRICS[r.kind]:
            v = getattr(r, attr)
            if v is not None and v > 0:
                out.append(Observation(i, r.path, r.kind, line, words, float(v)))
                if r.kind in FIRST_ONLY:
                    break
    return out


class Model_:
    """Predictions of every observation at given parameter values, by one vectorised plan evaluation."""

    def __init__(self, inputs: list[dict[str, Any]], obs: list[Observation], held: Mapping[str, float]):
        self.obs = obs
        self.rows = sorted({o.record for o in obs})
        self.index = {r: k for k, r in enumerate(self.rows)}
        self.base = {name: np.array([float(inputs[r][name]) for r in self.rows]) for name in inputs[0]}
        for k, v in held.items():
            self.base[k] = np.full(len(self.rows), float(v))
        self.meas = np.array([o.measured for o in obs])
        self.weights = np.array([WEIGHTS.get(o.line, 1.0) for o in obs])

    def predict(self, params: Mapping[str, float]) -> np.ndarray:
        return self.predict_many([params])[0]

    def predict_many(self, variants: Sequence[Mapping[str, float]]) -> np.ndarray:
        """Predictions for several parameter sets in one plan evaluation (the rows tiled once per set)."""
        n, k = len(self.rows), len(variants)
        vals = {name: np.tile(a, k) for name, a in self.base.items()}
        for name in {key for v in variants for key in v}:
            col = vals[name].copy()
            for j, v in enumerate(variants):
                if name in v:
                    col[j * n:(j + 1) * n] = float(v[name])
            vals[name] = col
        out = plan.evaluate(vals, validate=False)
        pick = np.array([self.index[o.record] for o in self.obs])
        return np.array([[float(np.asarray(out[o.line])[j * n + pick[i]]) for i, o in enumerate(self.obs)]
                         for j in range(k)])

    def errors(self, params: Mapping[str, float]) -> np.ndarray:
        """ln(predicted / measured) of every observation."""
        return self.errors_many([params])[0]

    def errors_many(self, variants: Sequence[Mapping[str, float]]) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.log(self.predict_many(variants) / self.meas)
        return np.where(np.isfinite(r), r, 10.0)

    def residuals(self, params: Mapping[str, float]) -> np.ndarray:
        """The errors, weighted as the fit sees them (:data:`WEIGHTS`)."""
        return self.errors(params) * self.weights

    def residuals_many(self, variants: Sequence[Mapping[str, float]]) -> np.ndarray:
        return self.errors_many(variants) * self.weights


def _scale(p: Param, default: float) -> float:
    return max(abs(default), p.hi * 0.01, 1e-12)


def _jacobian(model: Model_, names: Sequence[str], x: np.ndarray, scales: np.ndarray, r0: np.ndarray) -> np.ndarray:
    if not names:
        return np.zeros((len(r0), 0))
    hs = [0.05 * max(abs(x[j]), 0.1) for j in range(len(names))]
    variants = []
    for j, h in enumerate(hs):
        xp = x.copy()
        xp[j] += h
        variants.append(dict(zip(names, xp * scales)))
    rp = model.residuals_many(variants)
    return np.array([(rp[j] - r0) / hs[j] for j in range(len(names))]).T


def fit(model: Model_, names: Sequence[str], start: Mapping[str, float], iterations: int = 40) -> dict[str, float]:
    """Bounded Levenberg-Marquardt on the named parameters (others at their held values)."""
    if not names:
        return {}
    ps = [PARAM_BY_NAME[n] for n in names]
    scales = np.array([_scale(p, start[p.name]) for p in ps])
    lo = np.array([max(p.lo, plan.INPUT_BY_NAME[p.name].arg.lo) for p in ps]) / scales
    hi = np.array([min(p.hi, plan.INPUT_BY_NAME[p.name].arg.hi) for p in ps]) / scales
    x = np.clip(np.array([start[n] for n in names]) / scales, lo, hi)
    r = model.residuals(dict(zip(names, x * scales)))
    cost, lam = float(r @ r), 1e-2
    for _ in range(iterations):
        J = _jacobian(model, names, x, scales, r)
        A, g = J.T @ J, J.T @ r
        improved = False
        for _try in range(12):
            step = np.linalg.solve(A + lam * np.diag(np.diag(A) + 1e-9), -g)
            xn = np.clip(x + step, lo, hi)
            rn = model.residuals(dict(zip(names, xn * scales)))
            cn = float(rn @ rn)
            if cn < cost:
                x, r, lam, improved = xn, rn, max(lam / 3, 1e-7), True
                if cost - cn < 1e-6 * max(cost, 1e-30):
                    cost = cn
                    return {n: float(v) for n, v in zip(names, x * scales)}
                cost = cn
                break
            lam *= 4
        if not improved:
            break
    return {n: float(v) for n, v in zip(names, x * scales)}


def select(model: Model_, candidates: Sequence[Param], defaults: Mapping[str, float],
           max_params: int) -> tuple[list[str], dict[str, str]]:
    """The candidates the data moves and tells apart (greedy, in FITTABLE order), and why the rest stay."""
    names = [p.name for p in candidates]
    scales = np.array([_scale(p, defaults[p.name]) for p in candidates])
    x = np.array([defaults[n] for n in names]) / scales
    r0 = model.residuals(dict(zip(names, x * scales)))
    J = _jacobian(model, names, x, scales, r0)
    chosen: list[int] = []
    left: dict[str, str] = {}
    for j, p in enumerate(candidates):
        col = J[:, j] * max(abs(x[j]), 0.1)          # ln-residual change per relative change of the parameter
        norm = float(np.linalg.norm(col))
        if norm < SENSITIVITY_MIN:
            left[p.name] = "the data does not move it"
            continue
        if chosen:
            B = np.array([J[:, k] * max(abs(x[k]), 0.1) for k in chosen]).T
            coef, *_ = np.linalg.lstsq(B, col, rcond=None)
            rest = float(np.linalg.norm(col - B @ coef))
            if rest < SEPARABLE_MIN * norm:
                near = names[chosen[int(np.argmax(np.abs(coef) * np.linalg.norm(B, axis=0)))]]
                left[p.name] = f"the data cannot tell it apart from {near}"
                continue
        if len(chosen) >= max_params:
            left[p.name] = f"more parameters than the {max_params} points can fit"
            continue
        chosen.append(j)
    return [names[j] for j in chosen], left


def _mad_outliers(values: Sequence[float]) -> list[bool]:
    if len(values) < 3:
        return [False] * len(values)
    med = float(np.median(values))
    mad = float(np.median(np.abs(np.array(values) - med)))
    return [abs(v - med) > max(OUTLIER_MADS * mad, OUTLIER_FLOOR) for v in values]


def _fit_group(kind: str, inputs: list[dict[str, Any]], records: Sequence[Record], held: Mapping[str, float],
               candidates: Sequence[Param], leave_one_out: bool = True) -> Optional[GroupFit]:
    obs = [o for o in observations(records) if o.kind == kind]
    if not obs:
        return None
    defaults = {p.name: float(inputs[obs[0].record][p.name]) for p in candidates}
    model = Model_(inputs, obs, held)
    names, left = select(model, candidates, defaults, max_params=len(obs))
    start = {**defaults}
    fitted = fit(model, names, start)
    allp = {**defaults, **fitted}
    r_before = model.errors(defaults)
    r_after = model.errors(allp)
    files = list(dict.fromkeys(o.file for o in obs))
    results = []
    for f in files:
        res = {o.words: float(r_after[k]) for k, o in enumerate(obs) if o.file == f}
        results.append(FileResult(f, res))
    # leave one file out: refit the same parameters on the others, predict the one left out
    if leave_one_out and len(files) > 1 and names:
        for fr in results:
            keep = [k for k, o in enumerate(obs) if o.file != fr.file]
            sub = Model_(inputs, [obs[k] for k in keep], held)
            p_loo = fit(sub, names, {**defaults, **fitted})
            r_loo = model.errors({**defaults, **p_loo})
            fr.loo = {o.words: float(r_loo[k]) for k, o in enumerate(obs) if o.file == fr.file}
    bad = set()
    for line in dict.fromkeys(o.line for o in obs):      # each measured figure against its own spread
        ks = [k for k, o in enumerate(obs) if o.line == line]
        bad |= {obs[k].file for k, b in zip(ks, _mad_outliers([float(r_after[k]) for k in ks])) if b}
    for fr in results:
        fr.outlier = fr.file in bad
    rms = lambda r: float(np.sqrt(np.mean(r ** 2)))  # noqa: E731
    return GroupFit(kind, len(obs), fitted, {n: defaults[n] for n in defaults}, left, results,
                    thin=len(obs) < 2 * max(1, len(names)), rms_before=rms(r_before), rms_after=rms(r_after))

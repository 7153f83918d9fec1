"""Calibration: fit the few named plan inputs your own measurements pin down, and say which they are.

Input: records read by :mod:`inference_ledger.benchfiles` (benchmark runs and engine start-up logs) of *one*
deployment (model, GPU, layout, formats, engine) chosen as ``plan`` chooses it, through the one resolver.
Every record becomes the plan's inputs at that record's workload (prompt and output tokens, client
concurrency; for a start-up log its ``max_model_len`` and memory utilization), and the plan's own lines
predict what the record measured:

* a benchmark run: ``tokens_per_second`` (output tokens/s), ``tpot_seconds`` (mean TPOT, or AIPerf's ITL) and
  ``ttft_seconds`` (mean TTFT, queueing included);
* a start-up log: ``kv_capacity_tokens`` (the KV cache tokens the engine logged).

The residual of an observation is ln(predicted / measured).  :data:`FITTABLE` lists the plan inputs a fit may
move, each with what measures it; a parameter is *fitted* only when the data moves it (its residual column is
not ~0) and it can be told apart from those fitted before it (its column is not ~parallel to theirs); the
others stay at their defaults and the report says why.  The fit is a bounded Levenberg-Marquardt least squares
over the residuals (numpy only).  Start-up logs are fitted first (they pin the KV budget); benchmark runs
then fit the step-time inputs with that budget held.

The report states, per fitted group: the points (observations), the parameters fitted, "thin" when the points
are fewer than twice the parameters, the residual of every file, the outliers (a residual more than 3 median
absolute deviations from the median), and a leave-one-out check: refit on every file but one, predict the
one left out.
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from inference_ledger import catalog, plan, resolve
from inference_ledger.benchfiles import BadFile, Record, Run, Startup
from inference_ledger.catalog import Model


@dataclass(frozen=True)
class Param:
    """A plan input a calibration may fit."""

    name: str          # the plan input (inference_ledger.plan.INPUTS)
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
#: Outliers: residual more than this many median absolute deviations from the median.
OUTLIER_MADS = 3.0
#: GPU memory a log states may differ this much from the catalog GPU's runtime memory (driver and ECC reserve).
MEMORY_TOLERANCE = 0.02
#: Model fields that must agree for a file's model to count as the same shapes.
SHAPES = ("num_layers", "hidden_size", "num_attention_heads", "kv_heads", "head_dim", "intermediate_size",
          "num_experts", "experts_per_token", "mla_latent_dim", "sliding_layers", "window", "moe_layers")


class CalibrationError(ValueError):
    """The files do not belong together or with the deployment chosen (a wrong input: exit 2)."""


@dataclass
class Deployment:
    """The choice every record is predicted at (plan's options, through the resolver)."""

    model: Optional[str] = None
    config: Optional[str] = None
    gpu: Optional[str] = None
    weight_dtype: Optional[str] = None
    kv_dtype: str = "bf16"
    engine: str = "vllm"
    numbers: dict[str, float] = field(default_factory=dict)   # tp, pp, ep and any plan input given

    def resolve(self, **more: Any) -> resolve.Resolved:
        numbers = {**self.numbers, **{k: v for k, v in more.items() if k != "max_model_len"}}
        return resolve.resolve(model=self.model, config=self.config, gpu=self.gpu, weight_dtype=self.weight_dtype,
                               kv_dtype=self.kv_dtype, engine=self.engine, numbers=numbers,
                               max_model_len=more.get("max_model_len"))


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


@dataclass
class Calibration:
    deployment: Deployment
    resolved: resolve.Resolved
    records: list[Record]
    accepted: list[str]                  # lines about the model ids accepted
    groups: list[GroupFit]
    date: str

    @property
    def values(self) -> dict[str, float]:
        return {k: float(v) for g in self.groups for k, v in g.fitted.items()}

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(r.path for r in self.records))


# ----------------------------------------------------------------------------------------
# do the files belong together, and with the deployment?
# ----------------------------------------------------------------------------------------


def _catalog_model(name: str) -> Optional[Model]:
    try:
        return catalog.get_model(name)
    except (KeyError, ValueError):
        return None


def _same_shapes(a: Model, b: Model) -> bool:
    return all(getattr(a, f) == getattr(b, f) for f in SHAPES)


def check_models(records: Sequence[Record], chosen: Optional[Model]) -> list[str]:
    """Lines naming each model id the files state and how it was taken; CalibrationError for other shapes."""
    lines: list[str] = []
    seen: dict[str, Optional[Model]] = {}
    for r in records:
        if r.model and r.model not in seen:
            seen[r.model] = _catalog_model(r.model)
    known = {name: m for name, m in seen.items() if m is not None}
    names = list(known)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if not _same_shapes(known[a], known[b]):
                fa = next(r.path for r in records if r.model == a)
                fb = next(r.path for r in records if r.model == b)
                raise CalibrationError(f"mixed models: {fa} measured {a} ({known[a].id}), {fb} measured {b} "
                                       f"({known[b].id}), which has other shapes: calibrate one deployment at a time")
    for name, m in seen.items():
        path = next(r.path for r in records if r.model == name)
        if chosen is None:
            lines.append(f"{path} names model {name}; no --model or --config given, the plan's numbers are used")
        elif m is None:
            lines.append(f"{path}: model {name} is not in the catalog: taken to be {chosen.id}, as --model says")
        elif m.id == chosen.id:
            continue
        elif _same_shapes(m, chosen):
            lines.append(f"{path}: model {name} ({m.id}) has the shapes of {chosen.id}: accepted")
        else:
            diff = next(f for f in SHAPES if getattr(m, f) != getattr(chosen, f))
            raise CalibrationError(f"{path} measured {name} ({m.id}, {diff} {getattr(m, diff)}), not "
                                   f"{chosen.id} ({diff} {getattr(chosen, diff)}): give --model {m.id} or "
                                   f"leave the file out")
    return lines


def check_layout(records: Sequence[Record], inputs: Mapping[str, Any], gpu: Optional[catalog.Gpu]) -> None:
    """Refuse a file that states another TP/PP/EP or another GPU (its name, or its memory) than the one chosen."""
    for r in records:
        for key, opt in (("tp", "--tp"), ("pp", "--pp"), ("ep", "--ep")):
            v = getattr(r, key, None)
            if v is not None and int(v) != int(inputs[key]):
                raise CalibrationError(f"{r.path} ran {key.upper()} {v}, the deployment has {key.upper()} "
                                       f"{int(inputs[key])}: give {opt} {v} or leave the file out")
        stated = getattr(r, "gpu_memory_bytes", None)
        if stated:
            have = float(inputs["gpu_memory_bytes"])
            if abs(stated / have - 1) > MEMORY_TOLERANCE:
                what = gpu.id if gpu is not None else "the deployment's GPU"
                raise CalibrationError(f"{r.path} ran on a GPU with {stated / 2**30:.2f} GiB; {what} has "
                                       f"{have / 2**30:.2f} GiB: give the --gpu it ran on (or --gpu-memory)")
        name = getattr(r, "gpu", None)
        if name and gpu is not None:
            try:
                other = catalog.get_gpu(name)
            except (KeyError, ValueError):
                other = None
            if other is not None and other.id != gpu.id:
                raise CalibrationError(f"{r.path} ran on {name} ({other.id}), not {gpu.id}: give --gpu {other.id}")


# ----------------------------------------------------------------------------------------
# records -> plan inputs, predictions
# ----------------------------------------------------------------------------------------


def _workload(r: Run) -> dict[str, float]:
    if r.input_tokens is None or r.output_tokens is None:
        raise BadFile(r.path, "input_sequence_length" if "AIPerf" in r.tool else "total_input_tokens",
                      "the run does not say its prompt and output lengths")
    conc = r.concurrency
    if conc is None:
        if r.request_rate is not None and math.isinf(r.request_rate) and r.completed:
            conc = float(r.completed)        # every request sent at once
        else:
            raise BadFile(r.path, "max_concurrency", "the run states no client concurrency (an open-loop request "
                                                     "rate cannot be calibrated on)")
    return {"input_tokens": max(1.0, round(r.input_tokens)), "output_tokens": max(2.0, round(r.output_tokens)),
            "concurrency": max(1.0, float(conc))}


def record_inputs(dep: Deployment, rec: Record) -> dict[str, Any]:
    """The plan inputs that predict one record (the resolver's rules applied)."""
    if isinstance(rec, Run):
        return dep.resolve(**_workload(rec)).inputs
    more: dict[str, Any] = {}
    if rec.gpu_memory_utilization is not None:
        more["gpu_memory_utilization"] = rec.gpu_memory_utilization
    if rec.max_num_batched_tokens is not None:
        more["max_num_batched_tokens"] = float(rec.max_num_batched_tokens)
    if rec.max_model_len is not None:
        more["max_model_len"] = int(rec.max_model_len)
    more.update({"input_tokens": 1.0, "output_tokens": 1.0, "concurrency": 1.0})
    return dep.resolve(**more).inputs


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
    if mad == 0:
        return [abs(v - med) > 1e-9 for v in values] if len(set(round(v, 12) for v in values)) > 1 else \
            [False] * len(values)
    return [abs(v - med) > OUTLIER_MADS * mad for v in values]


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
    flags = _mad_outliers(list(r_after))
    bad = {obs[k].file for k, b in enumerate(flags) if b}
    for fr in results:
        fr.outlier = fr.file in bad
    rms = lambda r: float(np.sqrt(np.mean(r ** 2)))  # noqa: E731
    return GroupFit(kind, len(obs), fitted, {n: defaults[n] for n in defaults}, left, results,
                    thin=len(obs) < 2 * max(1, len(names)), rms_before=rms(r_before), rms_after=rms(r_after))


def calibrate(records: Sequence[Record], dep: Deployment, *, today: Optional[str] = None,
              leave_one_out: bool = True) -> Calibration:
    """Fit the deployment's named parameters to the records (see the module doc)."""
    if not records:
        raise CalibrationError("no measured records to calibrate on")
    base = dep.resolve()
    accepted = check_models(records, base.model)
    check_layout(records, base.inputs, base.gpu)
    engines_seen = {r.engine for r in records if isinstance(r, Startup)}
    if len(engines_seen) > 1:
        raise CalibrationError(f"the logs come from {' and '.join(sorted(engines_seen))}: calibrate one engine at a time")
    inputs = [record_inputs(dep, r) for r in records]
    groups: list[GroupFit] = []
    held: dict[str, float] = {}
    has_logs = any(isinstance(r, Startup) for r in records)
    for kind in ("startup", "benchmark"):
        cands = [p for p in FITTABLE if p.group == kind and p.name not in dep.numbers
                 and not (kind == "benchmark" and has_logs and p.name == "gpu_memory_utilization")]
        g = _fit_group(kind, inputs, records, held, cands, leave_one_out)
        if g is not None:
            if kind == "benchmark" and has_logs:
                g.left["gpu_memory_utilization"] = "the KV budget comes from the start-up logs"
            for n in dep.numbers:
                if n in PARAM_BY_NAME and PARAM_BY_NAME[n].group == kind:
                    g.left[n] = "given on the command line"
            groups.append(g)
            held.update(g.fitted)
    return Calibration(dep, base, list(records), accepted, groups,
                       today or _dt.date.today().isoformat())


# ----------------------------------------------------------------------------------------
# the report and the profile file
# ----------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{(math.exp(x) - 1) * 100:+.1f}%"


def _value(name: str, v: float) -> str:
    from inference_ledger.report import human

    return human(v, plan.INPUT_BY_NAME[name].unit)


def report(cal: Calibration) -> str:
    """The words calibrate prints: what it fitted, what it left and why, residuals, outliers, leave-one-out."""
    d = cal.resolved.describe()
    out = [f"Calibrated {d['model'] or 'the given model'} on {d['gpu'] or 'the given GPU'}, TP "
           f"{int(cal.resolved.inputs['tp'])}, engine {d['engine']}, from {len(cal.files)} file(s)."]
    out += [f"  {line}" for line in cal.accepted]
    for g in cal.groups:
        kind = "benchmark runs" if g.kind == "benchmark" else "start-up logs"
        out.append(f"{kind.capitalize()}: {g.points} measured points, {len(g.fitted)} parameter(s) fitted.")
        for n, v in g.fitted.items():
            p = PARAM_BY_NAME[n]
            edge = " [at its bound: the data asks for more than the step model allows]" \
                if math.isclose(v, p.hi, rel_tol=1e-6) or (p.lo > 0 and math.isclose(v, p.lo, rel_tol=1e-6)) else ""
            out.append(f"  fitted {n} = {_value(n, v)} (default {_value(n, g.defaults[n])}): {p.what}{edge}")
        for n, why in g.left.items():
            out.append(f"  left {n} at its default: {why}")
        if g.thin:
            out.append(f"  thin data: {g.points} points for {len(g.fitted)} parameter(s) (fewer than twice as many); "
                       "measure more runs before trusting these values")
        out.append(f"  RMS residual {g.rms_before * 100:.1f}% before, {g.rms_after * 100:.1f}% after")
        for fr in g.files:
            res = ", ".join(f"{w} {_pct(x)}" for w, x in fr.residuals.items())
            loo = ", ".join(f"{w} {_pct(x)}" for w, x in fr.loo.items())
            flag = "  OUTLIER (over 3 median absolute deviations)" if fr.outlier else ""
            out.append(f"  {fr.file}: {res}" + (f"; left out: {loo}" if loo else "") + flag)
    return "\n".join(out)


PROFILE_HEADER = "name,value,default,unit,fitted_on"


def _sha(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return "unreadable"


#: What a profile keeps of each measured record (the Calibration sheet shows them against the predictions).
MEASURED_KEYS = ("concurrency", "input_tokens", "output_tokens", "max_model_len", "gpu_memory_utilization",
                 "tokens_per_second", "tpot_seconds", "ttft_seconds", "kv_capacity_tokens")


def _measured(rec: Record) -> dict[str, float]:
    """A record's workload and measured figures under the plan's names."""
    out: dict[str, float] = {}
    if isinstance(rec, Run):
        out.update(_workload(rec))
    else:
        for k in ("max_model_len", "gpu_memory_utilization"):
            if getattr(rec, k) is not None:
                out[k] = float(getattr(rec, k))
    for line, attr, _ in METRICS[rec.kind]:
        v = getattr(rec, attr)
        if v is not None and line in MEASURED_KEYS:
            out[line] = float(v)
    return out


def _measured_line(rec: Record) -> str:
    m = _measured(rec)
    return f"file={rec.path.replace(' ', '%20')} kind={rec.kind} " + " ".join(f"{k}={m[k]:.10g}" for k in
                                                                                 MEASURED_KEYS if k in m)


def profile_csv(cal: Calibration) -> str:
    """The profile in the project's commented-CSV style: sources, date, and what each value was fitted on."""
    d = cal.resolved.describe()
    inp = cal.resolved.inputs
    buf = io.StringIO()
    buf.write("# Calibration profile: plan inputs fitted on your measurements by `inference-ledger calibrate`.\n")
    buf.write("# Use it with --profile on plan, build, sweep and recommend: these values replace the defaults,\n")
    buf.write("# options you give still win. One row per fitted plan input.\n")
    buf.write(f"# date: {cal.date}\n")
    buf.write(f"# deployment: model={d['model'] or ''} gpu={d['gpu'] or ''} tp={int(inp['tp'])} pp={int(inp['pp'])} "
              f"ep={int(inp['ep'])} weight_dtype={d['weight_dtype'] or ''} kv_dtype={d['kv_dtype']} "
              f"engine={d['engine']}\n")
    for f in cal.files:
        buf.write(f"# source: {f} (sha256 {_sha(f)})\n")
    for g in cal.groups:
        for n, why in g.left.items():
            buf.write(f"# not fitted: {n} ({why})\n")
        if g.thin:
            buf.write(f"# thin data: {g.points} points for {len(g.fitted)} parameter(s) of the {g.kind} fit\n")
    for rec in cal.records:
        buf.write(f"# measured: {_measured_line(rec)}\n")
    buf.write("#   name       the plan input (inference_ledger/plan.py INPUTS)\n")
    buf.write("#   value      the fitted value, base units; default: the value it replaces for this deployment\n")
    buf.write("#   fitted_on  what measured it: the points, files and residual of the fit\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(PROFILE_HEADER.split(","))
    for g in cal.groups:
        nfiles = len(g.files)
        for n, v in g.fitted.items():
            w.writerow([n, f"{v:.10g}", f"{g.defaults[n]:.10g}", plan.INPUT_BY_NAME[n].unit,
                        f"{PARAM_BY_NAME[n].what}: {g.points} points of {nfiles} {g.kind} file(s), RMS residual "
                        f"{g.rms_after * 100:.1f}%"])
    return buf.getvalue()


@dataclass
class Profile:
    """A profile file read back: fitted plan inputs, the files they came from, the deployment they were fitted on."""

    path: str
    values: dict[str, float]
    sources: list[str]
    deployment: dict[str, str]
    date: str
    measured: list[dict[str, Any]] = field(default_factory=list)   # each record's workload and measured figures

    def describe(self) -> dict[str, Any]:
        return {"note": "calibrated from your measurements", "profile": self.path, "date": self.date,
                "files": self.sources, "fitted_on": self.deployment, "values": dict(self.values)}


def read_profile(path: str | os.PathLike) -> Profile:
    """A profile CSV, every row checked against its plan input's range; BadFile naming the row otherwise."""
    from inference_ledger.benchfiles import read_text

    p = os.fspath(path)
    text = read_text(p)
    sources, dep, date, measured = [], {}, "", []
    body = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            c = s[1:].strip()
            if c.startswith("source:"):
                sources.append(c[len("source:"):].split(" (sha256")[0].strip())
            elif c.startswith("deployment:"):
                dep = dict(kv.split("=", 1) for kv in c[len("deployment:"):].split() if "=" in kv)
            elif c.startswith("date:"):
                date = c[len("date:"):].strip()
            elif c.startswith("measured:"):
                row: dict[str, Any] = {}
                for kv in c[len("measured:"):].split():
                    k, _, v = kv.partition("=")
                    if k in ("file", "kind"):
                        row[k] = v.replace("%20", " ")
                    elif k in MEASURED_KEYS:
                        try:
                            row[k] = float(v)
                        except ValueError:
                            raise BadFile(p, "measured", f"{k}={v!r} is not a number") from None
                measured.append(row)
        elif s:
            body.append(line)
    if not body or body[0].replace(" ", "") != PROFILE_HEADER:
        raise BadFile(p, "header", f"not a calibration profile (expected the header {PROFILE_HEADER!r}; write one "
                                   "with `inference-ledger calibrate`)")
    values: dict[str, float] = {}
    for n, row in enumerate(csv.DictReader(io.StringIO("\n".join(body))), 1):
        name = (row.get("name") or "").strip()
        if name not in plan.INPUT_BY_NAME:
            raise BadFile(p, f"row {n}, column 'name'", f"{name!r} is not a plan input")
        try:
            v = float(row.get("value") or "")
        except ValueError:
            raise BadFile(p, f"row {n} ({name}), column 'value'", f"{row.get('value')!r} is not a number") from None
        try:
            values[name] = plan.INPUT_BY_NAME[name].arg.check(v)
        except ValueError as e:
            raise BadFile(p, f"row {n} ({name}), column 'value'", str(e)) from None
    return Profile(p, values, sources, dep, date, measured)


def with_profile(profile: Optional[Profile], numbers: Mapping[str, Any]) -> dict[str, Any]:
    """Plan numbers with a profile's values beneath the ones given (given options win)."""
    out = dict(numbers)
    if profile is not None:
        for k, v in profile.values.items():
            if out.get(k) is None:
                out[k] = v
    return out

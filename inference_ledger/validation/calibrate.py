"""Calibration: fit the few named plan inputs your own measurements pin down, and say which they are.

Input: records read by :mod:`inference_ledger.io.benchfiles` (benchmark runs and engine start-up logs) of *one*
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

import datetime as _dt
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from inference_ledger.catalogs import catalog
from inference_ledger.formulas import engine_ledger, ledger
from inference_ledger.graph import resolve
from inference_ledger.io.benchfiles import BadFile, Record, Run, Startup
from inference_ledger.validation.calibrate_fit import (DECLARED, FITTABLE, MEMORY_TOLERANCE, METRICS, PARAM_BY_NAME,
                                                       SHAPES, WEIGHTS, GroupFit, Param, _fit_group)
from inference_ledger.catalogs.catalog import Model
from inference_ledger.core.sheetfuncs import and_, eq, gt, where
from inference_ledger.core.refs import count_of, median_of
from inference_ledger.core.units import MS_PER_S

__all__ = ["DECLARED", "FITTABLE", "METRICS", "PARAM_BY_NAME", "WEIGHTS", "Param", "Calibration", "CalibrationError",
           "Deployment", "calibrate", "check_layout", "check_models", "record_inputs"]


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
        # the fit calibrates the roofline's named efficiencies: the step is priced on them, not on the published
        # kernel tables (kernel_tables 0; a profile carries the same, calibrate_profile.with_profile)
        numbers = {"kernel_tables": 0, **self.numbers, **{k: v for k, v in more.items() if k != "max_model_len"}}
        return resolve.resolve(model=self.model, config=self.config, gpu=self.gpu, weight_dtype=self.weight_dtype,
                               kv_dtype=self.kv_dtype, engine=self.engine, numbers=numbers,
                               max_model_len=more.get("max_model_len"))


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
    if dep.numbers.get("tp") is None and all(getattr(r, "tp", None) is None for r in records):
        # the plan's TP default (the seed's 70B on 4 GPUs) is a what-if, not what the benchmark ran: a fit against it
        # fits another deployment (an 8B measured on one H100 fitted an 8% compute efficiency at TP 4)
        raise CalibrationError(f"no file says the tensor-parallel degree it ran at: give --tp (--tp 1 for one GPU; "
                               f"without it the plan's default TP {int(base.inputs['tp'])} would be fitted)")
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


# --- the Calibration sheet's formulas: one measured run back-solved, and the medians that feed the plan -----------
# ``p`` is the plan's quantities by attribute (numbers, or the workbook's references); times in ms as measured.

def step_bytes(p, batch, context):
    """Weights once per GPU + each sequence's KV at its context, split over the KV shards."""
    kv_seq = ledger.kv_sequence_bytes(p.kv_elements_per_token_layer, p.kv_bytes, p.num_layers, context,
                                 p.sliding_layers, p.window)
    return p.weights_read_bytes / p.tp + batch * kv_seq / p.kv_shards


def overhead_ms(p, batch):
    """The plan's off-roofline time at this batch: TP all-reduces (the plan's count per pass, of a rank's share of the
    batch) + per-layer and per-step overhead."""
    ar = engine_ledger.allreduce_seconds(p.tp, p.tp_allreduces_per_pass, p.allreduce_latency_seconds,
                                         batch / p.dp_attention * p.hidden_size * p.unquantized_bytes,
                                         p.interconnect_bw)
    return (ar + p.decode_overhead_seconds) * MS_PER_S


def bw_fraction(p, bytes_, overhead, tpot_ms):
    """Bandwidth fraction that reproduces the measured TPOT: bytes / (BW x (TPOT - overhead))."""
    return bytes_ / (p.hbm_bw * (tpot_ms - overhead) / MS_PER_S)


def tpot_predicted_ms(p, bytes_, overhead, batch):
    flops = ledger.forward_flops(p.active_params, batch) / p.tp
    return ledger.decode_step_seconds(bytes_, flops, p.hbm_bw, p.peak_flops, p.bw_efficiency,
                                 p.decode_compute_efficiency) * MS_PER_S + overhead


def prefill_efficiency(p, prompt, ttft_ms):
    """Compute efficiency that reproduces the measured TTFT: FLOPs / (peak x TP x TTFT)."""
    return ledger.prefill_flops(p.active_params, prompt) / (p.peak_flops * p.tp * ttft_ms / MS_PER_S)


def ttft_predicted_ms(p, prompt):
    return ledger.compute_seconds(ledger.prefill_flops(p.active_params, prompt), p.peak_flops, p.prefill_efficiency,
                             p.tp) * MS_PER_S


def median_or_blank(runs):
    """The median of the runs that have a figure, "" when none has (the sheet's summary row)."""
    return where(gt(count_of(runs), 0), median_of(runs), "")


def calibrated(use, runs, uncalibrated):
    """The value the plan takes: the runs' median when ``use`` is 1 and a run has a figure, else ``uncalibrated``."""
    return where(and_(eq(use, 1), gt(count_of(runs), 0)), median_of(runs), uncalibrated)

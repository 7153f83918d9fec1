"""Recommendations: the deployments that meet a QPS, TTFT and TPOT target, cheapest per month first.

For each GPU, TP degree and format the plan already knows the answer in closed form:
the most sequences in flight that fit in memory *and* keep TPOT within its target
(``serving_concurrency`` = min(``max_concurrency``, ``tpot_max_batch``)).  QPS per replica,
B / (TTFT + T x TPOT(B)), grows with B, so that concurrency needs the fewest replicas.
The plan is evaluated a second time at it (vectorized over every candidate) to get the
QPS per replica, the replicas and GPUs for the target, the headroom and the monthly bill.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from inference_ledger import engines, plan, verdict
from inference_ledger.sweep import SweepSpec, Table, build_sweep, evaluate_block

TARGETS = {"qps": "target_qps", "ttft": "ttft_target", "tpot": "tpot_target"}


@dataclass(frozen=True)
class Recommendation:
    labels: dict[str, str]          # model, gpu, weight_dtype, kv_dtype
    inputs: dict[str, float]        # the row's plan inputs (concurrency = serving concurrency)
    values: dict[str, Any]          # every plan input and line


def recommend(model: Sequence[str], gpu: Sequence[str], *, tp: Sequence[int] = (1, 2, 4, 8),
              weight_dtype: Sequence[str] = ("native", "fp8"), kv_dtype: Sequence[str] = ("bf16",),
              engine: str = engines.DEFAULT_ENGINE, fixed: dict[str, float]) -> tuple[list[Recommendation], Table]:
    """Every candidate that meets the targets in ``fixed``, cheapest per month first; and the candidates' table."""
    fixed = dict(fixed)
    input_tokens = fixed.pop("input_tokens", plan.INPUT_BY_NAME["input_tokens"].default)
    output_tokens = fixed.setdefault("output_tokens", plan.INPUT_BY_NAME["output_tokens"].default)
    spec = SweepSpec(model=model, gpu=gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                     context=[int(input_tokens + output_tokens)], concurrency=[1], engine=engine, fixed=fixed)
    table = build_sweep(spec, max_rows=10**7)
    found: list[Recommendation] = []
    for labels, inputs in table.blocks():
        best = evaluate_block(table, inputs)["serving_concurrency"]
        keep = np.flatnonzero(best >= 1)
        at_best = {k: np.asarray(v)[keep] for k, v in inputs.items()} | {"concurrency": best[keep]}
        v = evaluate_block(table, at_best)
        ok = v["verdict"] == verdict.MEETS_TARGETS
        for j in np.flatnonzero(ok):
            i = keep[j]
            found.append(Recommendation({k: labels[k][i] for k in labels},
                                        {k: float(a[j]) for k, a in at_best.items()},
                                        {k: a[j].item() if hasattr(a[j], "item") else a[j] for k, a in v.items()}))
    found.sort(key=lambda r: (r.values["monthly_cost_qps"], r.values["gpus_for_qps"], -r.values["qps_headroom"]))
    return found, table


def plans_table(found: Sequence[Recommendation], candidates: Table) -> Table:
    """The recommendations as rows of live formulas (same columns as a sweep)."""
    def blocks():
        yield ({k: [r.labels[k] for r in found] for k, _ in candidates.labels},
               {n: np.array([r.inputs[n] for r in found]) for n in candidates.row_inputs})
    return Table(candidates.labels, candidates.row_inputs, candidates.fixed, len(found), blocks, candidates.skipped,
                 sheet="Plans")


def summary(r: Recommendation) -> dict[str, Any]:
    v = r.values
    return {**r.labels, "tp": int(v["tp"]), "gpus": int(v["gpus_for_qps"]), "replicas": int(v["replicas_for_qps"]),
            "concurrency": int(v["concurrency"]), "qps_per_replica": v["qps_per_replica"],
            "qps_capacity": v["qps_capacity"], "qps_headroom": v["qps_headroom"], "ttft_seconds": v["ttft_seconds"],
            "tpot_seconds": v["tpot_seconds"], "price_per_gpu_hour": v["price_per_gpu_hour"],
            "monthly_gpu_hours": v["monthly_gpu_hours_qps"], "monthly_cost": v["monthly_cost_qps"]}

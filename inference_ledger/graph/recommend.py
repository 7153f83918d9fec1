"""Recommendations: the deployments that meet a QPS, TTFT and TPOT target, cheapest per month first.

For each GPU, layout and format the plan runs at the concurrency ``plan`` itself uses by default:
the largest that meets the TTFT and TPOT targets within the KV cache and the engine's batch limit
(:mod:`inference_ledger.graph.concurrency`, the plan's lines over a family of candidate concurrencies).
QPS per replica, B / (TTFT + (T - 1) x TPOT(B)), grows with B, so that concurrency needs the fewest
replicas.  The plan at it (vectorized over every candidate row) gives the QPS per replica, the
replicas and GPUs for the target, the headroom and the monthly bill: the same bill as ``plan``.

Layouts: with a GPU budget (``max_gpus``) the search goes past one node: TP within
the node times PP stages, and for mixture-of-experts models wide expert parallelism with
data-parallel attention (:func:`layouts`).  :func:`cheapest_of_each_kind` keeps one plan per
model, GPU and replica size, with the reason it is the cheapest of its kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from inference_ledger.graph import concurrency, plan, resolve, verdict
from inference_ledger.catalogs import catalog, engines
from inference_ledger.catalogs.catalog import Gpu, Model
from inference_ledger.graph.sweep import SweepSpec, Table, build_sweep, evaluate_block, family_candidates

TARGETS = {"qps": "target_qps", "ttft": "ttft_target", "tpot": "tpot_target"}
#: The layout inputs besides TP, at their defaults (one node, no EP, no DP attention).
LAYOUT = ("pp", "ep", "dp_attention")
DEFAULT_MAX_GPUS = 64


@dataclass(frozen=True)
class Recommendation:
    labels: dict[str, str]          # model, gpu, weight_dtype, kv_dtype
    inputs: dict[str, float]        # the row's plan inputs (concurrency = serving concurrency)
    values: dict[str, Any]          # every plan input and line
    why: str = field(default="", compare=False)   # why it is the cheapest of its kind (cheapest_of_each_kind)


def _powers_of_two(limit: int) -> list[int]:
    return [2 ** k for k in range(0, max(int(limit), 1).bit_length()) if 2 ** k <= limit]


def layouts(model: Model, gpu: Gpu, tps: Sequence[int], max_gpus: int) -> list[dict[str, int]]:
    """The layouts the search tries for a model on a GPU, each one the resolver accepts, at most max_gpus GPUs.

    * TP alone within a node; across nodes the largest TP of one node x PP stages (powers of two), the split
      vLLM's distributed-serving guide gives ("tensor parallel size = GPUs per node, pipeline parallel size =
      number of nodes");
    * for a MoE model, wide expert parallelism over a stage of S GPUs (S a power of two from 2): DP attention
      on every GPU (TP 1, SGLang/DeepSeek) or TP within the node times DP across nodes (vLLM), EP = S.
    """
    out = []
    node_tps = [tp for tp in tps if resolve.tp_problem(model, gpu, tp) is None and tp <= max_gpus]
    for tp in node_tps:
        out.append({"tp": tp, "pp": 1, "ep": 1, "dp_attention": 1})
    if node_tps:
        tp = max(node_tps)
        for pp in _powers_of_two(max_gpus // tp)[1:]:
            out.append({"tp": tp, "pp": pp, "ep": 1, "dp_attention": 1})
    if model.num_experts:
        for stage in _powers_of_two(max_gpus)[1:]:
            for tp in sorted({1, min(gpu.gpus_per_node, stage)}):
                if stage % tp or resolve.tp_problem(model, gpu, tp):
                    continue
                out.append({"tp": tp, "pp": 1, "ep": stage, "dp_attention": stage // tp})
    ok = [lay for lay in out if resolve.layout_problem(model, lay["pp"], lay["ep"], lay["dp_attention"], lay["tp"])
          is None]
    return [dict(t) for t in dict.fromkeys(tuple(sorted(lay.items())) for lay in ok)]


def layout_words(v: dict[str, Any]) -> str:
    """'TP 8 x PP 2', 'TP 1 x DP 16, EP 16': the layout of a plan in words."""
    parts = [f"TP {int(v['tp'])}"] + [f"{k} {int(v[n])}" for k, n in (("DP", "dp_attention"), ("PP", "pp"))
                                      if v.get(n, 1) > 1]
    return " x ".join(parts) + (f", EP {int(v['ep'])}" if v.get("ep", 1) > 1 else "")


def _search(model: Sequence[str], gpu: Sequence[str], tp: Sequence[int], fixed: dict[str, float],
            max_gpus: Optional[int]) -> list[tuple[list[str], list[int], dict[str, float]]]:
    """(models, tps, layout inputs) per sweep to run: the given layout only, or every layout of the search."""
    if max_gpus is None or any(k in fixed for k in LAYOUT):
        return [(list(model), list(tp), {})]
    groups: dict[tuple, tuple[list[str], set[int]]] = {}
    models = [resolve.find_model(m) for m in (list(model) or [""])]
    gpus = [resolve.find_gpu(g) for g in (list(gpu) or [""])]
    for m in models:
        for g in gpus:
            for lay in layouts(m, g, tp, max_gpus):
                key = (m.id, lay["pp"], lay["ep"], lay["dp_attention"])
                groups.setdefault(key, ([m.id], set()))[1].add(lay["tp"])
    return [(ms, sorted(tps), {"pp": k[1], "ep": k[2], "dp_attention": k[3]}) for k, (ms, tps) in groups.items()] \
        or [(list(model), list(tp), {})]


def recommend(model: Sequence[str], gpu: Sequence[str], *, tp: Sequence[int] = (1, 2, 4, 8),
              weight_dtype: Sequence[str] = ("native", "fp8"), kv_dtype: Sequence[str] = ("bf16",),
              engine: str = engines.DEFAULT_ENGINE, fixed: dict[str, float],
              max_gpus: Optional[int] = None) -> tuple[list[Recommendation], Table]:
    """Every candidate that meets the targets in ``fixed``, cheapest per month first; and the candidates' table.

    ``max_gpus`` None: the TP degrees given, on one node (and any pp/ep/dp_attention in ``fixed``);
    a number: every layout of :func:`layouts` up to that many GPUs per replica.
    """
    fixed = dict(fixed)
    input_tokens = fixed.pop("input_tokens", plan.INPUT_BY_NAME["input_tokens"].default)
    output_tokens = fixed.setdefault("output_tokens", plan.INPUT_BY_NAME["output_tokens"].default)
    tables = []
    for models, tps, lay in _search(model, gpu, tp, fixed, max_gpus):
        spec = SweepSpec(model=models, gpu=gpu, tp=tps, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                         context=[int(input_tokens + output_tokens)], concurrency=[1], engine=engine,
                         fixed=fixed | lay)
        tables.append(build_sweep(spec, max_rows=10**7))
    table = _merged(tables)
    found: list[Recommendation] = []
    for t in tables:
        extra = {k: t.fixed[k] for k in table.row_inputs if k in t.fixed}
        for labels, inputs in t.blocks():
            v = evaluate_block(t, inputs, auto=True)   # every row at the concurrency it runs at (one rule)
            at_best = dict(inputs) | {"concurrency": v["concurrency_used"]}
            for i in np.flatnonzero(v["verdict"] == verdict.MEETS_TARGETS):
                found.append(Recommendation({k: labels[k][i] for k in labels},
                                            {k: float(a[i]) for k, a in at_best.items()} | extra,
                                            {k: a[i].item() if hasattr(a[i], "item") else a[i] for k, a in v.items()}))
    found.sort(key=lambda r: (r.values["monthly_cost_qps"], r.values["gpus_for_qps"], -r.values["qps_headroom"]))
    return found, table


def _merged(tables: Sequence[Table]) -> Table:
    """One table over several sweeps: inputs that differ between them become row inputs."""
    if len(tables) == 1:
        return tables[0]
    first = tables[0]
    rows = {n for t in tables for n in t.row_inputs}
    rows |= {k for k, v in first.fixed.items() if any(t.fixed.get(k, v) != v for t in tables[1:])}
    row_inputs = tuple(i.name for i in plan.INPUTS if i.name in rows)
    fixed = {k: v for k, v in first.fixed.items() if k not in rows}
    skipped = [s for t in tables for s in t.skipped]
    cands = {f.name: max((family_candidates(t)[f.name] for t in tables), key=len) for f in plan.FAMILIES}
    return Table(first.labels, row_inputs, fixed, sum(t.n_rows for t in tables), lambda: iter(()), skipped,
                 candidates=cands)


def cheapest_of_each_kind(found: Sequence[Recommendation]) -> list[Recommendation]:
    """One plan per model, GPU and GPUs per replica (the cheapest; same-cost ties keep the fewest GPUs), each with
    why: how many plans of its kind met the targets, the runner-up, and whether fewer GPUs per replica could."""
    kinds: dict[tuple, list[Recommendation]] = {}
    for r in found:
        kinds.setdefault((r.labels["model"], r.labels["gpu"], int(r.values["gpus_per_replica"])), []).append(r)
    sizes: dict[tuple, list[int]] = {}
    for (m, g, n) in kinds:
        sizes.setdefault((m, g), []).append(n)
    out = []
    for (m, g, n), plans in kinds.items():
        best = plans[0]
        why = f"cheapest of {len(plans)} {n}-GPU {g} plan{'s' if len(plans) > 1 else ''} meeting the targets"
        if len(plans) > 1:
            nxt, cost = plans[1], best.values["monthly_cost_qps"]
            spare = [f"{p.values['qps_headroom']:.0%}" for p in (nxt, best)]   # as shown: a tie is the same words
            why += f"; next: {layout_words(nxt.values)} {nxt.labels['weight_dtype']} at " + (
                f"${nxt.values['monthly_cost_qps']:,.0f}/month" if nxt.values["monthly_cost_qps"] != cost else
                f"the same cost and QPS headroom ({spare[0]})" if spare[0] == spare[1] else
                f"the same cost with less QPS headroom ({spare[0]} vs {spare[1]})")
        if n == min(sizes[(m, g)]):
            why += f"; the smallest {g} replica that meets them"
        out.append(Recommendation(best.labels, best.inputs, best.values, why))
    return out


def plans_table(found: Sequence[Recommendation], candidates: Table) -> Table:
    """The recommendations as rows of live formulas (same columns as a sweep)."""
    def blocks():
        yield ({k: [r.labels[k] for r in found] for k, _ in candidates.labels},
               {n: np.array([r.inputs[n] for r in found]) for n in candidates.row_inputs})
    return Table(candidates.labels, candidates.row_inputs, candidates.fixed, len(found), blocks, candidates.skipped,
                 sheet="Plans", candidates=candidates.candidates)


def summary(r: Recommendation) -> dict[str, Any]:
    v = r.values
    return {**r.labels, "tp": int(v["tp"]), "pp": int(v["pp"]), "ep": int(v["ep"]),
            "dp_attention": int(v["dp_attention"]), "gpus_per_replica": int(v["gpus_per_replica"]),
            "nodes_per_replica": int(v["nodes_per_replica"]), "layout": layout_words(v),
            "gpus": int(v["gpus_for_qps"]), "replicas": int(v["replicas_for_qps"]),
            "concurrency": int(v["concurrency"]), "qps_per_replica": v["qps_per_replica"],
            "qps_capacity": v["qps_capacity"], "qps_headroom": v["qps_headroom"],
            "ttft_open_seconds": v["ttft_open_seconds"], "ttft_seconds": v["ttft_seconds"],
            "tpot_seconds": v["tpot_seconds"], "price_per_gpu_hour": v["price_per_gpu_hour"],
            "price_placeholder": catalog.placeholder_price(r.labels.get("gpu"), v["price_per_gpu_hour"]),
            "monthly_gpu_hours": v["monthly_gpu_hours_qps"], "monthly_cost": v["monthly_cost_qps"], "why": r.why}

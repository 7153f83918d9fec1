"""A plan as people read it (a table with human units) and as scripts read it (JSON).

Both take the dict :func:`inference_ledger.graph.plan.evaluate` returns.  The table groups the lines by
ledger (memory, compute, bandwidth, cost, fit) after the inputs, and prints bytes in GB
(1e9) and GiB (2**30), both labelled, times in ms, FLOPs in TFLOP.  The JSON is flat,
snake_case, in base units: every plan input and every plan line under its own name (a family of lines
nested by candidate),
1/0 lines as true/false, plus the catalog ids it was built from and a ``units`` map.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional

import numpy as np

from inference_ledger.catalogs import catalog, engines
from inference_ledger.graph import bills, concurrency, resolve, verdict
from inference_ledger.formulas import finance_forecast, kernels, step_lines
from inference_ledger.graph.plan import CODES, FAMILIES, INPUT_BY_NAME, INPUT_GROUPS, INPUTS, LINE_BY_NAME, LINES, evaluate
from inference_ledger.core import unit_registry

LEDGERS = ("memory", "compute", "bandwidth", "cost", "fit", "finance", "accuracy")


def unit_of(name: str) -> str:
    q = LINE_BY_NAME.get(name) or INPUT_BY_NAME.get(name)
    return q.unit if q is not None else ""


def _num(v: Any) -> Optional[float]:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def without_a_bill(values: Mapping[str, Any]) -> frozenset[str]:
    """The keys a plan that does not start has no figure for (:func:`inference_ledger.graph.bills.all_billed`: its
    bills and the lines that read one, as a sweep row words them) with the forecast and the sensitivity grid; nothing
    when it starts (or has no verdict)."""
    if _num(values.get("verdict")) != verdict.DOES_NOT_FIT:
        return frozenset()
    return bills.all_billed() | frozenset(FORECAST_UNITS) | {"sensitivity"}


def _json_value(name: str, v: Any, unit: Optional[str] = None) -> Any:
    x = _num(v)
    if x is None:
        return None
    if (unit_of(name) if unit is None else unit) == "1/0":
        return bool(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def plan_json(values: Mapping[str, Any], *, model: Optional[str] = None, gpu: Optional[str] = None,
              weight_dtype: Optional[str] = None, kv_dtype: Optional[str] = None,
              engine: Optional[str] = None) -> dict[str, Any]:
    """The stable JSON of a plan: base units, snake_case keys, every input and line.

    ``fits`` and the other 1/0 lines are booleans; whole numbers are integers; a value
    that cannot be computed (e.g. a division by zero throughput) is null, and so is every bill of a plan that does not
    start (:func:`without_a_bill`: money, fleet sizes, what reads them, the forecast and the sensitivity grid).
    """
    out: dict[str, Any] = {"model": model, "gpu": gpu, "weight_dtype": weight_dtype, "kv_dtype": kv_dtype,
                           "engine": engine}
    for q in (*INPUTS, *LINES):
        if q.name in values:
            out[q.name] = _json_value(q.name, values[q.name])
    for fam in FAMILIES:   # nested by candidate: {"1": {"tp": 1, "fits": true, ...}, "2": {...}}
        if fam.name in values:
            units = {fam.param: unit_of(fam.param)} | {m.name: m.unit for m in fam.members}
            out[fam.name] = {k: {m: _json_value(m, v, units[m]) for m, v in row.items()}
                             for k, row in values[fam.name].items()}
    out.update(code_words(values))
    if "concurrency_used" in values:   # the concurrency the plan runs at, and which limit chose it
        out["concurrency_used"] = _json_value("concurrency", values["concurrency_used"])
        out["concurrency_reason"] = _json_value("concurrency_reason", values["concurrency_reason"])
        out["concurrency_reason_words"] = concurrency.reason_words(values["concurrency_reason"])
    if "tpot_seconds" in values and "kernel_tables" in values:
        out.update(step_ops(values, model=model, gpu=gpu, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                            engine=engine))
    fc = forecast_of(values)
    out.update({k: v if isinstance(v, str) else _json_value(k, v, FORECAST_UNITS[k]) for k, v in fc.items()})
    if fc:   # the sensitivity grid: {output: {input: {"low", "high", "swing", "rank"}}}, the Sensitivity sheet's
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            grid = finance_forecast.sensitivity(values, evaluate, [i.name for i in INPUTS])
        out["sensitivity"] = {k: (v if not isinstance(v, dict) else
                                  {i: {m: (_json_value(k, x, "") if m != "rank" else x) for m, x in row.items()}
                                   for i, row in v.items()})
                              for k, v in grid.items()}
    out["units"] = {q.name: q.unit for q in (*INPUTS, *LINES) if q.name in values}
    out["units"] |= {k: FORECAST_UNITS[k] for k in fc}
    if fc:
        out["units"]["sensitivity"] = {"step": "fraction", "months": "months"} | {
            k: unit for k, _l, unit in finance_forecast.SENSITIVITY_OUTPUTS}
    out["units"] |= {f.name: {f.param: unit_of(f.param)} | {m.name: m.unit for m in f.members}
                     for f in FAMILIES if f.name in values}
    out.update({k: None for k in without_a_bill(values) if k in out})   # no replica, no bill
    return out


#: The units of the forecast's keys (inference_ledger.finance_forecast.FORECAST_SUMMARY), forecast_months first.
FORECAST_UNITS = {"forecast_months": "months"} | {name: unit for name, _l, unit, _f in finance_forecast.FORECAST_SUMMARY}


def forecast_of(values: Mapping[str, Any], months: int = 0) -> dict[str, Any]:
    """The forecast's conclusions (the Forecast sheet's summary: NPV of buying and of renting, the verdict ...) of one
    plan (scalar values with every input the timeline reads), else nothing."""
    try:
        if any(np.ndim(values[k]) for k in ("target_qps", "qps_per_replica", "gpus_per_replica")):
            return {}
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return finance_forecast.forecast(values, months)
    except KeyError:
        return {}


def step_ops(values: Mapping[str, Any], *, model: Optional[str] = None, gpu: Optional[str] = None,
             weight_dtype: Optional[str] = None, kv_dtype: Optional[str] = None,
             engine: Optional[str] = None) -> dict[str, Any]:
    """``kernel_source`` and the per-operation times of one decode step and one prefill, each with its source:
    {"decode_ops": {operation: {"seconds": ..., "source": ...}}, "prefill_ops": {...}}."""
    measured = int(_num(values["kernel_priced"]) or 0) == 1
    sources: dict[str, str] = {}
    if measured and gpu:
        try:
            heads = catalog.get_model(model).num_attention_heads if model else None
        except (KeyError, ValueError, LookupError):
            heads = None
        eng = engines.get_engine(engine or engines.DEFAULT_ENGINE)
        _, sources = resolve.engine_kernel_inputs(values, gpu, eng, heads, weight_dtype, kv_dtype or "bf16")
    overhead = "data/efficiencies.csv (per-layer and per-step overhead)"
    traffic = "; + each token's residual-add/RMSNorm and gated-activation traffic at HBM bandwidth x bw_efficiency " \
        "(NVIDIA aiconfigurator-core 0.12.0's add_norm and act_gate element-wise ops)"
    fixed = {"elementwise": overhead + (traffic if measured else ""),
             "eager_launch": "what dispatching the layers eager (no CUDA graph) adds beyond the kernels: data/engines.csv "
                             "cuda_graphs, cuda_graph_max_batch_by_tp, eager_seconds_per_layer / _moe_layer "
                             "(sgl-project/sglang#1401)",
             "parallel": "EP all-to-all, DP-attention gather/scatter and PP hand-offs "
                         "(inference_ledger/formulas/parallel.py)",
             "prefill_stall": "whole-prompt prefills an engine without chunked prefill runs between decode steps "
                              "(Sarathi-Serve, arXiv:2403.02310)",
             "scheduler": "the engine's scheduler CPU time per sequence when it does not overlap the GPU "
                          "(data/engines.csv overlap_scheduling, scheduler_seconds_per_sequence)"}
    op_source = {"attention": "decode_attention", "linear": "qkv"}
    passes = _num(values.get("kv_read_passes")) or 1
    extra_passes = f"; x {passes:g} passes over each KV head (a decode kernel that is not GQA-aware for this query " \
        "group reads it once per query head: data/engines.csv gqa_decode)" if passes > 1 else ""

    what_if = "; the plan's HBM bandwidth, peak or model size is not the one its tables stand for (a what-if)" \
        if int(_num(values["kernel_tables"]) or 0) == 1 and not measured else ""
    link_bound = (_num(values.get("allreduce_seconds_per_byte")) or 0) \
        > (_num(values.get("allreduce_kernel_seconds_per_byte")) or 0)

    def ops(table: Mapping[str, str], common: Mapping[str, str], prefill: bool) -> dict[str, Any]:
        out = {}
        for op, name in {**table, **common}.items():
            if name not in values:
                continue
            if op in fixed:
                src = fixed[op]
            elif not measured:
                src = f"{kernels.FALLBACK}: bytes / (HBM bandwidth x efficiency), FLOPs / (peak x efficiency) " \
                      "(data/efficiencies.csv)" + what_if
            else:
                key = "prefill_attention" if (prefill and op == "attention") else op_source.get(op, op)
                src = sources.get(key, kernels.MEASURED)
            if op == "attention" and not prefill:
                src += extra_passes
            if op == "allreduce" and measured and link_bound:
                src += "; at the ring bound of the interconnect bandwidth (a slower link than the tables' system)"
            out[op] = {"seconds": _json_value(name, values[name]), "source": src}
        return out

    return {"kernel_source": kernels.MEASURED if measured else kernels.FALLBACK,
            "decode_ops": ops(step_lines.DECODE_OPS if measured else step_lines.DECODE_OPS_ROOFLINE,
                              step_lines.DECODE_OPS_COMMON, False),
            "prefill_ops": ops(step_lines.PREFILL_OPS if measured else step_lines.PREFILL_OPS_ROOFLINE,
                               step_lines.PREFILL_OPS_COMMON, True)}


def code_words(values: Mapping[str, Any]) -> dict[str, str]:
    """``<name>_words``: the words of every coded quantity in the values (plan.CODES), as JSON and =PLAN give them."""
    return {f"{q}_words": c.render(_num(values[q])) for q, c in CODES.items()
            if q in values and _num(values[q]) is not None}


def shown(name: str, v: Any, unit: str) -> str:
    """One value of the text plan: a coded quantity as its words and its number ('compute (4)'), else :func:`human`."""
    c, x = CODES.get(name), _num(v)
    return f"{c.render(x)} ({x:g})" if c is not None and x is not None else human(v, unit)


def human(v: Any, unit: str) -> str:
    """One value in human units, labelled (GB = 1e9 B and GiB = 2**30 B side by side; inference_ledger.core.unit_registry)."""
    x = _num(v)
    return "n/a" if x is None else unit_registry.text(x, unit)


def plan_table(values: Mapping[str, Any], *, title: str = "", show_inputs: bool = True) -> str:
    """The plan as text: inputs by group, then the ledgers (finance last), one labelled line each."""
    rows: list[tuple[str, str, str]] = []  # (label, value, json key); label '' + value = section title

    def section(name: str) -> None:
        rows.append(("", name, ""))

    if show_inputs:
        for group in INPUT_GROUPS:
            items = [i for i in INPUTS if i.group == group and i.name in values]
            if items:
                section(f"inputs: {group}")
                rows.extend((i.label, shown(i.name, values[i.name], i.unit), i.name) for i in items)
    if "concurrency_used" in values:
        section("concurrency the plan runs at")
        rows.append(("Concurrency used", human(values["concurrency_used"], "sequences"), "concurrency_used"))
        rows.append(("Chosen by", concurrency.reason_words(values["concurrency_reason"]), "concurrency_reason_words"))
    unfit = _num(values.get("verdict")) == verdict.DOES_NOT_FIT
    for ledger in LEDGERS:
        items = [l for l in LINES if l.ledger == ledger and l.name in values]
        if items:
            section(f"{ledger} ledger" + (verdict.NO_FLEET if unfit and ledger in verdict.FLEET_LEDGERS else ""))
            rows.extend((l.label, shown(l.name, values[l.name], l.unit), l.name) for l in items)
    for fam in FAMILIES:   # one row per member at each candidate
        if fam.name in values:
            section(f"{fam.label[0].lower()}{fam.label[1:]} ({fam.name})")
            for k, row in values[fam.name].items():
                rows.extend((f"{m.label} at {fam.param.upper()} {k}", human(row[m.name], m.unit),
                             fam.flat_name(k, m.name)) for m in fam.members)
    lw = max(len(r[0]) for r in rows if r[0])
    vw = max(len(r[1]) for r in rows if r[0] and r[2] not in CODES)   # a code's longer words run on, not widen all
    lines = [title, "=" * len(title)] if title else []
    for label, value, key in rows:
        if not label:
            lines.append(f"\n[{value}]")
        else:
            lines.append(f"  {label:<{lw}}  {value:>{vw}}  {key}")
    if any(l.ledger == "accuracy" and l.name in values for l in LINES):
        lines.append("\nBands (accuracy ledger): about 80% of new measurements should fall inside low-high "
                     "(docs/accuracy.md).")
    lines.append("\nGB = 1e9 bytes, GiB = 2^30 bytes; FLOP/s are dense; the right column is the --json key.")
    return "\n".join(lines).lstrip("\n")

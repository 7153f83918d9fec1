"""`plan --disaggregated` and `recommend --disaggregated`: prefill and decode pools (xPyD) as text or JSON.

A thin layer over :mod:`inference_ledger.graph.disaggregated`: the decode pool takes the plan's own layout
options (``--tp --pp --ep --dp-attention``), the prefill pool ``--prefill-tp`` and friends (default: the same).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional

import click

from inference_ledger.catalogs import catalog
from inference_ledger.graph import disaggregated, resolve
from inference_ledger.graph.summary import model_words
from inference_ledger.graph.plan import INPUT_BY_NAME
from inference_ledger.graph.recommend import layout_words, layouts
from inference_ledger.io.report import human

def pools_text(pools: disaggregated.Pools, title: str = "") -> str:
    """The two pools side by side, then the KV transfer and the totals."""
    s = pools.summary()
    p, d = s["prefill"], s["decode"]
    rows = [("", "prefill pool", "decode pool"),
            ("layout", layout_words(p["layout"]), layout_words(d["layout"])),
            ("GPUs (nodes) per instance", f"{p['gpus_per_instance']} ({p['nodes_per_instance']})",
             f"{d['gpus_per_instance']} ({d['nodes_per_instance']})"),
            ("instances", str(p["instances"]), str(d["instances"])),
            ("requests/s per instance", f"{p['requests_per_second_per_instance']:.2f}",
             f"{d['requests_per_second_per_instance']:.2f}"),
            ("tokens/s per GPU", f"{p['input_tokens_per_second_per_gpu']:,.0f} in",
             f"{d['output_tokens_per_second_per_gpu']:,.0f} out"),
            ("prefill / TPOT", human(p["ttft_service_seconds"], "s"), human(d["tpot_seconds"], "s")),
            ("batch", "1 prompt per DP rank", str(d["concurrency"]))]
    w0, w1 = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
    lines = [title, "=" * len(title)] if title else []
    lines += [f"{a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
    lines += ["", f"KV transfer per request: {human(s['kv_transfer_bytes'], 'B')} in {human(s['kv_transfer_seconds'], 's')}",
              f"TTFT (prefill + KV transfer): {human(s['ttft_seconds'], 's')}",
              f"{s['xpyd']}: {int(s['gpus'])} GPUs, ${s['monthly_cost']:,.0f}/month; "
              + ("meets the targets" if s["meets_targets"] else "misses a target")]
    return "\n".join(lines)


def plan_disaggregated(options: Mapping[str, Any], prefill: Mapping[str, Optional[float]], as_json: bool) -> str:
    """What `plan --disaggregated` prints, from plan's options (model, GPU, formats, numbers)."""
    o = dict(options)
    model = catalog.model_from_config(o.pop("config")) if o.get("config") else o.pop("model", None)
    o.pop("config", None)
    gpu, wd, kd, engine, context = (o.pop(k, None) for k in ("gpu", "weight_dtype", "kv_dtype", "engine", "context"))
    numbers = {k: v for k, v in o.items() if v is not None}
    decode = {k: int(numbers.pop(k)) for k in disaggregated.POOL_LAYOUT if k in numbers}
    pre = decode | {name.removeprefix("prefill_"): int(v) for name, v in prefill.items() if v is not None}
    try:
        if context is not None:
            out = numbers.get("output_tokens", INPUT_BY_NAME["output_tokens"].default)
            numbers["input_tokens"] = resolve.input_tokens_of(context, out)
        pools = disaggregated.disaggregate(model, gpu, pre, decode, weight_dtype=wd, kv_dtype=kd or "bf16",
                                           engine=engine, numbers=numbers)
        # what the pools were resolved to: the default model and GPU when none is named, as for `plan`
        r = resolve.resolve(model, gpu, weight_dtype=wd, kv_dtype=kd or "bf16", engine=engine, numbers=numbers | decode)
    except resolve.ChoiceError as e:
        raise click.BadParameter(str(e), param_hint="'--" + e.option.replace("_", "-") + "'") from None
    desc = r.describe()
    if as_json:
        return json.dumps(pools.summary() | {"model": desc["model"], "gpu": desc["gpu"]}, indent=2)
    gpu_words = desc["gpu_name"] or "a GPU given by its figures"
    return pools_text(pools, f"{model_words(r.inputs, desc)} on {gpu_words}, disaggregated prefill and decode")


def recommend_disaggregated(models, gpus, tps, weight_dtypes, kv_dtype, engine, fixed, max_gpus,
                            aggregated) -> list[dict[str, Any]]:
    """The cheapest disaggregated deployment per model, GPU and format, beside the cheapest aggregated plan of the
    same model and GPU (``aggregated``: recommend's plans)."""
    out = []
    for mid in models:
        m = resolve.find_model(mid)
        for gid in gpus:
            g = resolve.find_gpu(gid)
            lays = layouts(m, g, tps, max_gpus)
            for wd in dict.fromkeys(resolve.weight_format(m, w).id for w in weight_dtypes):
                pools = disaggregated.cheapest(m, g, lays, weight_dtype=wd, kv_dtype=kv_dtype, engine=engine,
                                               numbers=fixed) if lays else None
                if pools is None:
                    continue
                agg = [r for r in aggregated if r.labels["model"] == m.id and r.labels["gpu"] == g.id]
                s = pools.summary() | {"model": m.id, "gpu": g.id, "weight_dtype": wd}
                if agg:
                    best = min(r.values["monthly_cost_qps"] for r in agg)
                    s["aggregated_monthly_cost"] = best
                    s["cost_vs_aggregated"] = s["monthly_cost"] / best
                out.append(s)
    return sorted(out, key=lambda s: s["monthly_cost"])


def disaggregated_text(rows) -> str:
    head = ["GPU", "weights", "xPyD", "prefill", "decode", "GPUs", "TTFT", "$/month", "vs aggregated"]
    body = []
    for s in rows:
        p, d = s["prefill"], s["decode"]
        vs = f"{s['cost_vs_aggregated']:.2f}x aggregated" if "cost_vs_aggregated" in s else "no aggregated plan"
        body.append([s["gpu"], s["weight_dtype"], s["xpyd"], f"{p['instances']} x {layout_words(p['layout'])}",
                     f"{d['instances']} x {layout_words(d['layout'])}", str(int(s["gpus"])), human(s["ttft_seconds"], "s"),
                     f"${s['monthly_cost']:,.0f}", vs])
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *body])

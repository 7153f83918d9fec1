"""The Disaggregated sheet (issue 12): a prefill pool and a decode pool, each with its own layout, as live formulas.

Each pool is the plan itself, written again for that pool: every line that depends on the layout
(``tp``, ``pp``, ``ep``, ``dp_attention``) or the batch (``concurrency``) is rendered by
:func:`inference_ledger.plan.render` with those names pointing at this sheet's column and every other
name at the Plan sheet, so the formulas are the plan's own (one definition).  Three columns:

* **Prefill pool**: one prompt per DP-attention rank (concurrency = dp_attention);
* **Decode pool, batch 1**: gives the largest batch that fits and meets the TPOT target (serving_concurrency);
* **Decode pool at that batch**: the pool's TPOT and throughput.

Below them, :mod:`inference_ledger.disaggregated`'s formulas: KV transfer, requests per second per instance,
instances for the target QPS (xPyD), GPUs, TTFT and the monthly bill.  The layout cells start at the Plan's layout.
"""

from __future__ import annotations

from typing import Any

from inference_ledger import disaggregated, ledger, plan
from inference_ledger.expr import Sym, and_, ge, le, where

from . import style
from .context import Ctx, xname

LAYOUT = disaggregated.POOL_LAYOUT
LOCAL = (*LAYOUT, "batching", "concurrency")
COLUMNS = {"prefill": "B", "decode1": "C", "decode": "D"}
FIRST = 7


def _closure() -> list[plan.Line]:
    """The lines that depend, directly or not, on the layout or the batch, in evaluation order."""
    hit, out = set(LOCAL), []
    for line in plan.EVALUATION_ORDER:
        if any(p in hit for p in line.params):
            hit.add(line.name)
            out.append(line)
    return out


def _num(v: Any) -> float:
    return float(v.item() if hasattr(v, "item") else v)


def disaggregated_sheet(wb, ctx: Ctx) -> None:
    ws = ctx.new_sheet("Disaggregated", "Disaggregated prefill and decode pools (xPyD)",
                       {"A": 44, "B": 18, "C": 18, "D": 18, "E": 12, "F": 36}, tab="70AD47")
    ctx.put(ws, "A3", "Yellow cells are each pool's layout (they start at the Plan's). Every other row is a plan line "
            "for that pool: its formula is the Plan's, reading this column for the layout and the batch and the "
            "Plan sheet for everything else. Totals at the bottom.", style.NOTE)
    ws.merge_cells("A3:F3")
    for col, head in zip("ABCDEF", ["Quantity", "Prefill pool", "Decode pool, batch 1", "Decode pool at serving batch",
                                    "Unit", "Name"]):
        ctx.put(ws, f"{col}5", head, style.HEADER)
    lines = _closure()
    row = {n: FIRST + k for k, n in enumerate(LOCAL)}
    row |= {l.name: FIRST + len(LOCAL) + k for k, l in enumerate(lines)}

    # the values Python computes for each column: the Plan's inputs with this column's layout and batch
    layout = {k: ctx.inputs[k] for k in LAYOUT}
    pre, dec = {"batching": disaggregated.PREFILL_BATCHING}, {"batching": disaggregated.DECODE_BATCHING}
    p_in = dict(ctx.inputs) | layout | pre | {"concurrency": layout["dp_attention"]}
    d1_in = dict(ctx.inputs) | layout | dec | {"concurrency": 1}
    d1 = plan.evaluate(d1_in, validate=False)
    d_in = dict(ctx.inputs) | layout | dec | {"concurrency": d1["serving_concurrency"]}
    values = {"prefill": plan.evaluate(p_in, validate=False), "decode1": d1, "decode": plan.evaluate(d_in, validate=False)}

    for key, col in COLUMNS.items():
        def ref(name: str, col=col) -> str:
            return f"{col}{row[name]}" if name in row else xname(name)
        for name in LAYOUT:
            coord = f"{col}{row[name]}"
            if key == "decode":       # the same layout as the batch-1 column
                ctx.formula(ws, coord, Sym(f"C{row[name]}"), values[key][name], style.FORMULA, "0")
            else:
                ctx.put(ws, coord, int(layout[name]), style.INPUT, "0")
        coord = f"{col}{row['batching']}"      # prefill as prompts arrive; decode steps carry no prompt chunks
        ctx.put(ws, coord, int(values[key]["batching"]), style.CONSTANT, "0")
        batch = {"prefill": Sym(f"B{row['dp_attention']}"), "decode1": None,
                 "decode": Sym(f"C{row['serving_concurrency']}")}[key]
        coord = f"{col}{row['concurrency']}"
        if batch is None:
            ctx.put(ws, coord, 1, style.CONSTANT, "0")
        else:
            ctx.formula(ws, coord, batch, values[key]["concurrency"], style.FORMULA, "0")
        for line in lines:
            formula, _ = plan.render(line, ref)
            ctx.formula(ws, f"{col}{row[line.name]}", formula, _num(values[key][line.name]), style.FORMULA,
                        style.number_format(line.unit, _num(values[key][line.name])))
    for name in LOCAL:
        inp = plan.INPUT_BY_NAME[name]
        ctx.put(ws, f"A{row[name]}", inp.label)
        ctx.put(ws, f"E{row[name]}", inp.unit)
        ctx.put(ws, f"F{row[name]}", name, style.NOTE)
    for line in lines:
        ctx.put(ws, f"A{row[line.name]}", line.label)
        ctx.put(ws, f"E{row[line.name]}", line.unit)
        ctx.put(ws, f"F{row[line.name]}", line.name, style.NOTE)
    _totals(ctx, ws, FIRST + len(row) + 1, row, values)
    ws.freeze_panes = "B6"


def _totals(ctx: Ctx, ws, r: int, row: dict[str, int], values: dict[str, dict[str, Any]]) -> None:
    """KV transfer, pool sizes, GPUs, TTFT and cost: inference_ledger.disaggregated's formulas over the columns."""
    ctx.put(ws, f"A{r}", "Both pools", style.SECTION)
    p, d = values["prefill"], values["decode"]

    def cell(col: str, name: str) -> Sym:
        return Sym(f"{col}{row[name]}") if name in row else Sym(xname(name))

    def at(name: str) -> Sym:
        return Sym(xname(name))

    P, D = (lambda n: cell("B", n)), (lambda n: cell("D", n))
    items: list[tuple[str, str, str, Any, Any]] = []   # (name, label, unit, formula, value)

    def add(name, label, unit, formula, value):
        items.append((name, label, unit, formula, value))
        return Sym(f"B{r + len(items)}")

    senders_f = ledger.kv_shards(at("kv_heads"), P("tp"), at("mla_latent_dim")) * P("pp")
    senders_v = ledger.kv_shards(p["kv_heads"], p["tp"], p["mla_latent_dim"]) * p["pp"]
    senders = add("kv_senders", "GPUs sending a prompt's KV", "GPUs", senders_f, senders_v)
    kvb_v = disaggregated.kv_transfer_bytes(p["kv_bytes_per_token"], p["input_tokens"])
    kvb = add("kv_transfer_bytes", "KV transfer per request", "B",
              disaggregated.kv_transfer_bytes(P("kv_bytes_per_token"), at("input_tokens")), kvb_v)
    kvs_v = disaggregated.kv_transfer_seconds(kvb_v, senders_v, p["scaleout_bw"], p["scaleout_latency_seconds"])
    kvs = add("kv_transfer_seconds", "KV transfer time", "s",
              disaggregated.kv_transfer_seconds(kvb, senders, at("scaleout_bw"), at("scaleout_latency_seconds")), kvs_v)
    ttft_v = p["ttft_seconds"] + kvs_v
    ttft = add("disagg_ttft_seconds", "TTFT (prefill + KV transfer)", "s", P("ttft_seconds") + kvs, ttft_v)
    rp_v = disaggregated.prefill_requests_per_second(p["dp_attention"], p["pp"], p["ttft_service_seconds"])
    rp = add("prefill_requests_per_second", "Requests/s per prefill instance", "requests/s",
             disaggregated.prefill_requests_per_second(P("dp_attention"), P("pp"), P("ttft_service_seconds")), rp_v)
    rd_v = disaggregated.decode_requests_per_second(d["concurrency"], d["output_tokens"], d["tpot_seconds"])
    rd = add("decode_requests_per_second", "Requests/s per decode instance", "requests/s",
             disaggregated.decode_requests_per_second(D("concurrency"), at("output_tokens"), D("tpot_seconds")), rd_v)
    np_v, nd_v = disaggregated.instances(d["target_qps"], rp_v), disaggregated.instances(d["target_qps"], rd_v)
    n_p = add("prefill_instances", "Prefill instances (x of xPyD)", "instances",
              disaggregated.instances(at("target_qps"), rp), np_v)
    n_d = add("decode_instances", "Decode instances (y of xPyD)", "instances",
              disaggregated.instances(at("target_qps"), rd), nd_v)
    gpus_v = np_v * p["gpus_per_replica"] + nd_v * d["gpus_per_replica"]
    gpus = add("disagg_gpus", "GPUs, both pools", "GPUs", n_p * P("gpus_per_replica") + n_d * D("gpus_per_replica"),
               gpus_v)
    add("disagg_monthly_cost", "Monthly GPU cost, both pools", "$/month", ledger.monthly_cost(at("price_per_gpu_hour"),
                                                                                              gpus),
        ledger.monthly_cost(p["price_per_gpu_hour"], gpus_v))
    meets_v = int(ttft_v <= p["ttft_target"] and d["tpot_seconds"] <= d["tpot_target"] and d["concurrency"] >= 1
                  and p["max_concurrency"] >= p["dp_attention"])
    meets_f = where(and_(le(ttft, at("ttft_target")), le(D("tpot_seconds"), at("tpot_target")),
                         ge(cell("C", "serving_concurrency"), 1), ge(P("max_concurrency"), P("dp_attention"))), 1, 0)
    add("disagg_meets_targets", "Meets TTFT and TPOT targets", "1/0", meets_f, meets_v)
    for k, (name, label, unit, formula, value) in enumerate(items, start=1):
        ctx.put(ws, f"A{r + k}", label)
        ctx.formula(ws, f"B{r + k}", formula, _num(value), style.FORMULA, style.number_format(unit, _num(value)))
        ctx.put(ws, f"E{r + k}", unit)
        ctx.put(ws, f"F{r + k}", name, style.NOTE)
        ctx.define(name, ws, f"B{r + k}")

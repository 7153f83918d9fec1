"""Disaggregated serving: a prefill pool and a decode pool, each with its own layout (xPyD).

Prefill instances turn prompts into KV caches and first tokens; the KV moves over the scale-out
network to a decode instance, which streams the output tokens (DistServe, Zhong et al. 2024,
arXiv:2401.09670; Splitwise, Patel et al. 2024; DeepSeek's inference system, open-infra-index day 6;
SGLang and vLLM PD disaggregation).  Each pool is one plan of :mod:`inference_ledger.graph.plan` under the
resolver, so every rule and formula is the plan's own:

* a prefill instance runs one prompt per DP-attention rank and pipeline stage at a time: it turns
  ``dp_attention x pp / TTFT`` prompts a second;
* the prompt's KV cache (``kv_bytes_per_token x input_tokens``) leaves every GPU that holds a share of it
  in parallel, over the scale-out network: ``latency + bytes / (shards x scaleout_bw)``;
* a decode instance holds the most sequences that fit in memory and meet the TPOT target (the plan's
  ``serving_concurrency``) and finishes ``B / (T x TPOT)`` requests a second (Little's law);
* pool sizes are the whole instances that cover the target QPS; TTFT = prefill + KV transfer.

The functions below are the formulas (numbers or :class:`~inference_ledger.core.expr.Sym`); :func:`disaggregate`
evaluates both pools for a choice, and :func:`cheapest` searches the layouts of
:func:`inference_ledger.graph.recommend.layouts` for each pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

from inference_ledger.catalogs import engines
from inference_ledger.formulas import ledger, serving
from inference_ledger.graph import concurrency, plan, plan_lines, resolve
from inference_ledger.core.sheetfuncs import and_, ceil, ge, maximum, where
from inference_ledger.core.units import BATCHING_STATIC

POOL_LAYOUT = ("tp", "pp", "ep", "dp_attention")


def prefill_requests_per_second(dp_attention, pp, ttft_seconds):
    """Prompts a prefill instance finishes a second: one per DP rank and pipeline stage per prefill time."""
    return dp_attention * pp / ttft_seconds


def kv_transfer_bytes(kv_bytes_per_token, input_tokens):
    """KV cache of one prompt, every layer: what prefill hands to decode."""
    return kv_bytes_per_token * input_tokens


def kv_transfer_seconds(kv_transfer_bytes_, kv_senders, scaleout_bw, latency_seconds):
    """Latency + the prompt's KV over the scale-out NICs of the GPUs holding its shares."""
    return latency_seconds + kv_transfer_bytes_ / (kv_senders * scaleout_bw)


def decode_requests_per_second(concurrency, output_tokens, tpot_seconds):
    """Requests a decode instance finishes a second: B sequences, each T steps of TPOT (Little's law)."""
    return concurrency / (output_tokens * tpot_seconds)


def instances(target_qps, requests_per_second):
    """Whole instances covering the target (at least one)."""
    return maximum(ceil(target_qps / requests_per_second), 1)


@dataclass(frozen=True)
class Pools:
    """Both pools of one disaggregated deployment, and what they add up to."""

    prefill: dict[str, Any]          # the prefill plan's values (one instance)
    decode: dict[str, Any]           # the decode plan's values (one instance, at its serving concurrency)
    numbers: dict[str, float]        # kv transfer, rates, instances, GPUs, TTFT, cost (see summary)

    @property
    def meets(self) -> bool:
        return bool(self.numbers["meets_targets"])

    def summary(self) -> dict[str, Any]:
        def pool(v, n, rate):
            return {"layout": {k: int(v[k]) for k in POOL_LAYOUT}, "gpus_per_instance": int(v["gpus_per_replica"]),
                    "nodes_per_instance": int(v["nodes_per_replica"]), "instances": int(n),
                    "requests_per_second_per_instance": rate}
        n = self.numbers
        return {"xpyd": f"{int(n['prefill_instances'])}P{int(n['decode_instances'])}D",
                "prefill": pool(self.prefill, n["prefill_instances"], n["prefill_requests_per_second"])
                # a prompt's prefill time, what the pool's rate and the TTFT are built on (its plan's benchmark
                # TTFT, ttft_seconds, is a closed loop of clients this pool never sees)
                | {"ttft_service_seconds": self.prefill["ttft_service_seconds"],
                   "input_tokens_per_second_per_gpu": n["prefill_input_tokens_per_second_per_gpu"]},
                "decode": pool(self.decode, n["decode_instances"], n["decode_requests_per_second"])
                | {"concurrency": int(self.decode["concurrency"]), "tpot_seconds": self.decode["tpot_seconds"],
                   "output_tokens_per_second_per_gpu": n["decode_output_tokens_per_second_per_gpu"]},
                **{k: n[k] for k in ("kv_transfer_bytes", "kv_transfer_seconds", "ttft_seconds", "gpus",
                                     "monthly_cost", "meets_targets")}}


#: Batching codes of the pools: prefill as prompts arrive (continuous), decode steps without prompt chunks (static).
PREFILL_BATCHING, DECODE_BATCHING = serving.BATCHING.code("continuous"), int(BATCHING_STATIC)


def _pool(model, gpu, layout: Mapping[str, int], numbers: Mapping[str, Any], **choice) -> dict[str, Any]:
    return plan.evaluate(resolve.resolve(model, gpu, numbers=dict(numbers) | dict(layout), **choice).inputs)


def disaggregate(model: str, gpu: str, prefill_layout: Mapping[str, int], decode_layout: Mapping[str, int], *,
                 weight_dtype: Optional[str] = None, kv_dtype: str = "bf16", engine: str = engines.DEFAULT_ENGINE,
                 numbers: Optional[Mapping[str, Any]] = None) -> Pools:
    """Both pools for a model on a GPU (every rule through the resolver; ChoiceError as for `plan`)."""
    numbers = {k: v for k, v in (numbers or {}).items() if v is not None}
    choice = {"weight_dtype": weight_dtype, "kv_dtype": kv_dtype, "engine": engine}
    # the prefill pool serves one prompt per DP rank as it arrives (continuous); the decode pool's steps carry no
    # prompt chunks (its prompts were prefilled elsewhere): in the plan's terms, a static batch
    try:
        p = prefill_pool(model, gpu, prefill_layout, numbers, **choice)
    except resolve.ChoiceError as e:  # a prefill layout of its own is named as the prefill pool's setting
        if e.option in POOL_LAYOUT and e.option in prefill_layout and \
                prefill_layout[e.option] != decode_layout.get(e.option):
            raise resolve.ChoiceError("prefill_" + e.option, str(e)) from None
        raise
    d0, d = decode_pool(model, gpu, decode_layout, numbers, **choice)
    return Pools(p, d, _totals(p, d0, d))


def prefill_pool(model, gpu, layout: Mapping[str, int], numbers: Mapping[str, Any], **choice) -> dict[str, Any]:
    """The prefill pool's plan: one prompt per DP-attention rank, prefilled as it arrives."""
    return _pool(model, gpu, layout, dict(numbers) | {"concurrency": layout.get("dp_attention", 1),
                                                      "batching": PREFILL_BATCHING}, **choice)


def decode_pool(model, gpu, layout: Mapping[str, int], numbers: Mapping[str, Any],
                **choice) -> tuple[dict[str, Any], dict[str, Any]]:
    """The decode pool's plan at batch 1 and at its serving batch (the largest that fits, meets the TPOT
    target and the schedulers run), its steps without prompt chunks."""
    numbers = dict(numbers) | {"batching": DECODE_BATCHING}
    d0 = _pool(model, gpu, layout, numbers | {"concurrency": 1}, **choice)
    best = max(float(d0["serving_concurrency"]), 1.0)
    return d0, _pool(model, gpu, layout, numbers | {"concurrency": best}, **choice)


class Total(NamedTuple):
    """One total of both pools: its label and unit, stated where :func:`totals` computes it, and its value."""

    label: str
    unit: str
    value: Any


def totals(p: Callable[[str], Any], d1: Callable[[str], Any], d: Callable[[str], Any], at: Callable[[str], Any],
           cell: Optional[Callable[[str], Any]] = None) -> dict[str, Total]:
    """Every total of both pools by name, in order, from the prefill pool ``p``, the decode pool at batch 1 ``d1``
    and at its serving batch ``d``, and the shared inputs ``at`` (each a quantity by name: numbers, or Sym
    references for the workbook's cells).  A total the next ones use is read as the number itself, or through
    ``cell`` (its own cell on the sheet).  The workbook's Disaggregated sheet writes one row each (defined name =
    name, with its label and unit), ``Pools.numbers`` holds their values by name."""
    out: dict[str, Total] = {}

    def put(name, label, unit, value):
        out[name] = Total(label, unit, value)
        return cell(name) if cell else value

    senders = put("kv_senders", "GPUs sending a prompt's KV", "GPUs",
                  ledger.kv_shards(at("kv_heads"), p("tp"), at("mla_latent_dim")) * p("pp"))
    kv_bytes = put("kv_transfer_bytes", "KV transfer per request", "B",
                   kv_transfer_bytes(p("kv_bytes_per_token"), at("input_tokens")))
    kv_seconds = put("kv_transfer_seconds", "KV transfer time", "s",
                     kv_transfer_seconds(kv_bytes, senders, at("scaleout_bw"), at("scaleout_latency_seconds")))
    ttft = put("disagg_ttft_seconds", "TTFT (prefill + KV transfer)", "s", p("ttft_service_seconds") + kv_seconds)
    rate_p = put("prefill_requests_per_second", "Requests/s per prefill instance", "requests/s",
                 prefill_requests_per_second(p("dp_attention"), p("pp"), p("ttft_service_seconds")))
    rate_d = put("decode_requests_per_second", "Requests/s per decode instance", "requests/s",
                 decode_requests_per_second(d("concurrency"), at("output_tokens"), d("tpot_seconds")))
    put("prefill_input_tokens_per_second_per_gpu", "Prefill input tokens/s per GPU", "tokens/s",
        rate_p * at("input_tokens") / p("gpus_per_replica"))
    put("decode_output_tokens_per_second_per_gpu", "Decode output tokens/s per GPU", "tokens/s",
        rate_d * at("output_tokens") / d("gpus_per_replica"))
    n_p = put("prefill_instances", "Prefill instances (x of xPyD)", "instances", instances(at("target_qps"), rate_p))
    n_d = put("decode_instances", "Decode instances (y of xPyD)", "instances", instances(at("target_qps"), rate_d))
    gpus = put("disagg_gpus", "GPUs, both pools", "GPUs", n_p * p("gpus_per_replica") + n_d * d("gpus_per_replica"))
    put("disagg_monthly_cost", "Monthly GPU cost, both pools", "$/month",
        ledger.monthly_cost(at("price_per_gpu_hour"), gpus))
    # the plan's own target tests and rule, over the two pools: the decode pool holds a batch of one and the
    # prefill pool a prompt per DP rank
    held = where(and_(ge(d1("serving_concurrency"), 1), ge(p("max_concurrency"), p("dp_attention"))), 1, 0)
    put("disagg_meets_targets", "Meets TTFT and TPOT targets", "1/0",
        concurrency.meets(plan_lines.ttft_ok(ttft, at("ttft_target"), p("max_concurrency")),
                          plan_lines.tpot_ok(d("tpot_seconds"), at("tpot_target"), d("max_concurrency")), held))
    return out


#: ``Pools.numbers`` keys of the totals the sheet names ``disagg_*`` (the rest keep their names).
NUMBERS_KEY = {"disagg_ttft_seconds": "ttft_seconds", "disagg_gpus": "gpus", "disagg_monthly_cost": "monthly_cost",
               "disagg_meets_targets": "meets_targets"}


def _totals(p: Mapping[str, Any], d1: Mapping[str, Any], d: Mapping[str, Any]) -> dict[str, float]:
    values = totals(p.__getitem__, d1.__getitem__, d.__getitem__, d.__getitem__)
    return {NUMBERS_KEY.get(k, k): float(t.value) for k, t in values.items()}


def cheapest(model: str, gpu: str, layouts: Sequence[Mapping[str, int]], *, weight_dtype: Optional[str] = None,
             kv_dtype: str = "bf16", engine: str = engines.DEFAULT_ENGINE,
             numbers: Optional[Mapping[str, Any]] = None) -> Optional[Pools]:
    """The cheapest disaggregated deployment over the layouts: the prefill layout with the fewest pool GPUs whose
    TTFT (prefill + KV transfer) meets the target, with the decode layout with the fewest pool GPUs (None: none)."""
    numbers = {k: v for k, v in (numbers or {}).items() if v is not None}
    best_p, best_d = None, None
    for lay in layouts:
        pools = disaggregate(model, gpu, lay, lay, weight_dtype=weight_dtype, kv_dtype=kv_dtype, engine=engine,
                             numbers=numbers)
        n = pools.numbers
        p_ok = pools.prefill["max_concurrency"] >= lay.get("dp_attention", 1) and \
            n["ttft_seconds"] <= pools.decode["ttft_target"]
        d_ok = pools.decode["serving_concurrency"] >= 1 and pools.decode["tpot_seconds"] <= pools.decode["tpot_target"]
        p_gpus = n["prefill_instances"] * pools.prefill["gpus_per_replica"]
        d_gpus = n["decode_instances"] * pools.decode["gpus_per_replica"]
        if p_ok and (best_p is None or p_gpus < best_p[0]):
            best_p = (p_gpus, lay)
        if d_ok and (best_d is None or d_gpus < best_d[0]):
            best_d = (d_gpus, lay)
    if best_p is None or best_d is None:
        return None
    return disaggregate(model, gpu, best_p[1], best_d[1], weight_dtype=weight_dtype, kv_dtype=kv_dtype, engine=engine,
                        numbers=numbers)

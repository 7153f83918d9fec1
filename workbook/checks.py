"""Live checks: the seed's practical checklist and the workbook's integrity checks.

Each check is one expression over named plan quantities, written with the
:mod:`inference_ledger.expr` helpers, so the same definition renders the Checks sheet's formula and
computes its cached value.  A check is 1 (pass) or 0 (fail); the master check is the
minimum of them all and is shown on every sheet.

The checklist items restate a ledger identity from its parts (total = weights + KV +
workspace ...): in a live model they catch a formula that has been typed over.
Findings (decode bandwidth-bound, prefill compute-bound) describe the plan and do not
count towards the master check: a plan at a large batch is compute-bound by design.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from inference_ledger import ledger
from inference_ledger.expr import Const, Sym, abs_, and_, eq, floor, ge, gt, le, lt, mod, or_, where

CHECK_TOLERANCE = Const(1e-9, "CHECK_TOLERANCE", "relative tolerance of the identity checks (floating-point rounding)",
                        "fraction")


def close(a, b):
    """a equals b within CHECK_TOLERANCE (b > 0): |a - b| <= b x tolerance."""
    return le(abs_(a - b), b * CHECK_TOLERANCE)


def one_zero(cond):
    return where(cond, 1, 0)


@dataclass(frozen=True)
class Check:
    label: str
    doc: str
    fn: Callable[[Any], Any]  # namespace of quantities (+ .attention_heads) -> condition
    counts: bool = True  # False: a finding, shown but outside the master check


SEED_CHECKLIST: tuple[Check, ...] = (
    Check("All three memory items (weights + KV + workspace) are accounted; never weights only",
          "Weights, KV and workspace per GPU are all positive and the total per GPU is their sum.",
          lambda v: and_(gt(v.weights_bytes_per_gpu, 0), gt(v.kv_bytes_per_gpu, 0), gt(v.workspace_bytes_per_gpu, 0),
                         close(v.total_bytes_per_gpu,
                               v.weights_bytes_per_gpu + v.kv_bytes_per_gpu + v.workspace_bytes_per_gpu))),
    Check("KV planned for peak concurrent context (not average), GQA config confirmed",
          "Peak KV = KV per sequence at input + output tokens x peak concurrency; the model's query heads are a "
          "whole multiple of its KV heads.",
          lambda v: and_(close(v.kv_bytes_peak, v.kv_bytes_per_sequence * v.concurrency),
                         eq(v.context_tokens, v.input_tokens + v.output_tokens),
                         eq(mod(v.attention_heads, v.kv_heads), 0))),
    Check("Decode bottleneck verified with bandwidth (TPOT >= weight bytes / HBM bandwidth), not peak FLOPs",
          "The TPOT floor is at least the time to read each GPU's share of the active weights once.",
          lambda v: ge(v.tpot_floor_seconds + v.tpot_floor_seconds * CHECK_TOLERANCE, v.weights_read_bytes / v.tp / v.hbm_bw)),
    Check("Prefill and decode estimated separately: prefill is compute-bound, decode is bandwidth-bound",
          "TTFT comes from prefill FLOPs at the prefill efficiency, TPOT from the decode roofline; both positive.",
          lambda v: and_(close(v.prefill_seconds, ledger.compute_seconds(v.prefill_flops, v.peak_flops,
                                                                    v.prefill_efficiency, v.tp)),
                         gt(v.tpot_seconds, 0))),
    Check("Quantization gains recomputed: weight format cuts the weight ledger",
          "Weights use the weight bytes, the modules left unquantized count at BF16.",
          lambda v: close(v.weights_bytes, ledger.weights_bytes_mixed(v.num_params, v.quantized_params,
                                                                      v.weight_bytes, v.unquantized_bytes))),
    Check("Quantization gains recomputed: KV format cuts the cache ledger",
          "The KV cache uses the KV bytes, never the weight bytes.",
          lambda v: close(v.kv_bytes_per_token, v.kv_elements_per_token_layer * v.kv_bytes * v.num_layers)),
    Check("Finding: decode is bandwidth-bound at this concurrency",
          "Peak concurrency is below the roofline ridge batch (informational: not part of the master check).",
          lambda v: lt(v.concurrency, v.ridge_batch), counts=False),
    Check("Finding: prefill is compute-bound for this prompt",
          "The prompt is longer than the ridge batch, so prefill FLOPs outweigh weight reads (informational).",
          lambda v: gt(v.input_tokens, v.ridge_batch), counts=False),
)

PLAN_INTEGRITY: tuple[Check, ...] = (
    Check("TP valid for the KV heads", "KV heads split evenly over TP, or TP is a multiple of them (or MLA).",
          lambda v: or_(ge(v.mla_latent_dim, 1), eq(mod(v.kv_heads, v.tp), 0), eq(mod(v.tp, v.kv_heads), 0))),
    Check("Active parameters <= total parameters", "A token cannot use more weights than the model has.",
          lambda v: and_(le(v.active_params, v.num_params), le(v.quantized_params, v.num_params),
                         le(v.active_quantized_params, v.active_params))),
    Check("Sliding-window layers <= layers", "Only existing layers can use a window.",
          lambda v: le(v.sliding_layers, v.num_layers)),
)

#: Catalog columns that must be positive in every row: (sheet, field).
POSITIVE_FIELDS = (
    ("GPUs", "memory_bytes"), ("GPUs", "memory_runtime_bytes"), ("GPUs", "hbm_bw"), ("GPUs", "bf16_flops"),
    ("Models", "num_params"), ("Models", "active_params"), ("Models", "num_layers"), ("Models", "kv_heads"),
    ("Models", "head_dim"), ("Dtypes", "bits"),
)


def in_range(x, lo, lo_inclusive, hi, whole):
    """1 when x is within [lo or (lo, hi], and whole when it must be."""
    return one_zero(and_(or_(gt(x, lo), and_(eq(lo_inclusive, 1), eq(x, lo))), le(x, hi),
                         or_(eq(whole, 0), eq(floor(x), x))))

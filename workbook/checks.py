"""Live checks: the seed's practical checklist and the workbook's integrity checks.

Each check is one expression over named plan quantities, written with the
:mod:`inference_ledger.core.expr` helpers, so the same definition renders the Checks sheet's formula and
computes its cached value.  A check is 1 (pass) or 0 (fail).  The Plan's verdict reads them
all: one at 0 makes it "invalid input" and names the first broken rule; the master check is 1 only when every
check passes and the verdict is "fits, meets targets", and is shown on every sheet
(inference_ledger.workbook.checks_sheet).

The checklist items restate a ledger identity from its parts (total = weights + KV +
workspace ...): in a live model they catch a formula that has been typed over.
Findings (decode bandwidth-bound, prefill compute-bound) describe the plan and do not
count towards the master check: a plan at a large batch is compute-bound by design.

The Checks sheet (:func:`inference_ledger.workbook.checks_sheet.checks_sheet`) lists them with the plan inputs' range
checks, and :func:`inference_ledger.workbook.checks_sheet.standing` is what the build caches for the verdict and the
master check.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable


from inference_ledger.formulas import ledger
from inference_ledger.graph import plan, rules
from inference_ledger.core.expr import Const
from inference_ledger.core.sheetfuncs import abs_, and_, eq, floor, ge, gt, isnumber, le, lt, mod, one_zero, or_
from inference_ledger.core.refs import count_if, name as defined_name
from inference_ledger.core.units import SECONDS_PER_DAY

from .cells import SELECTOR_NAMES
from .context import Ctx
from .tables import FIRST_ROW, TABLE_ROWS
from .tco import finance_checks

CHECK_TOLERANCE = Const(1e-9, "CHECK_TOLERANCE", "relative tolerance of the identity checks (floating-point rounding)",
                        "fraction")


def close(a, b):
    """a equals b within CHECK_TOLERANCE (b > 0): |a - b| <= b x tolerance."""
    return le(abs_(a - b), b * CHECK_TOLERANCE)


@dataclass(frozen=True)
class Check:
    label: str
    doc: str
    fn: Callable[..., Any]  # parameters named like plan quantities (or attention_heads) -> condition
    counts: bool = True  # False: a finding, shown but outside the master check

    def __call__(self, values: Any) -> Any:
        """The condition over a mapping of quantities (numbers, or Sym references to render it)."""
        return self.fn(*(values[p] for p in inspect.signature(self.fn).parameters))


# --- the seed's checklist, each a plain function of the plan quantities it reads ------------------


def memory_items_accounted(weights_bytes_per_gpu, kv_bytes_per_gpu, workspace_bytes_per_gpu, total_bytes_per_gpu):
    return and_(gt(weights_bytes_per_gpu, 0), gt(kv_bytes_per_gpu, 0), gt(workspace_bytes_per_gpu, 0),
                close(total_bytes_per_gpu, weights_bytes_per_gpu + kv_bytes_per_gpu + workspace_bytes_per_gpu))


def kv_at_peak_and_gqa(kv_bytes_peak, kv_bytes_per_sequence, concurrency, context_tokens, input_tokens, output_tokens,
                       attention_heads, kv_heads):
    return and_(close(kv_bytes_peak, kv_bytes_per_sequence * concurrency),
                eq(context_tokens, input_tokens + output_tokens), eq(mod(attention_heads, kv_heads), 0))


def decode_floor_is_bandwidth(tpot_floor_seconds, weights_read_bytes, tp, hbm_bw):
    return ge(tpot_floor_seconds + tpot_floor_seconds * CHECK_TOLERANCE, weights_read_bytes / tp / hbm_bw)


def prefill_and_decode_apart(prefill_seconds, prefill_flops, peak_flops, prefill_efficiency, tp, tpot_seconds):
    return and_(close(prefill_seconds, ledger.compute_seconds(prefill_flops, peak_flops, prefill_efficiency, tp)),
                gt(tpot_seconds, 0))


def weight_format_in_weights(weights_bytes, num_params, quantized_params, weight_bytes, unquantized_bytes):
    return close(weights_bytes, ledger.weights_bytes_mixed(num_params, quantized_params, weight_bytes,
                                                           unquantized_bytes))


def kv_format_in_kv(kv_bytes_per_token, kv_elements_per_token_layer, kv_bytes, num_layers):
    return close(kv_bytes_per_token, kv_elements_per_token_layer * kv_bytes * num_layers)


def decode_bandwidth_bound(concurrency, ridge_batch):
    return lt(concurrency, ridge_batch)


def prefill_compute_bound(input_tokens, ridge_batch):
    return gt(input_tokens, ridge_batch)


SEED_CHECKLIST: tuple[Check, ...] = (
    Check("All three memory items (weights + KV + workspace) are accounted; never weights only",
          "Weights, KV and workspace per GPU are all positive and the total per GPU is their sum.",
          memory_items_accounted),
    Check("KV planned for peak concurrent context (not average), GQA config confirmed",
          "Peak KV = KV per sequence at input + output tokens x peak concurrency; the model's query heads are a "
          "whole multiple of its KV heads.", kv_at_peak_and_gqa),
    Check("Decode bottleneck verified with bandwidth (TPOT >= weight bytes / HBM bandwidth), not peak FLOPs",
          "The TPOT floor is at least the time to read each GPU's share of the active weights once.",
          decode_floor_is_bandwidth),
    Check("Prefill and decode estimated separately: prefill is compute-bound, decode is bandwidth-bound",
          "TTFT comes from prefill FLOPs at the prefill efficiency, TPOT from the decode roofline; both positive.",
          prefill_and_decode_apart),
    Check("Quantization gains recomputed: weight format cuts the weight ledger",
          "Weights use the weight bytes, the modules left unquantized count at BF16.", weight_format_in_weights),
    Check("Quantization gains recomputed: KV format cuts the cache ledger",
          "The KV cache uses the KV bytes, never the weight bytes.", kv_format_in_kv),
    Check("Finding: decode is bandwidth-bound at this concurrency",
          "Peak concurrency is below the roofline ridge batch (informational: not part of the master check).",
          decode_bandwidth_bound, counts=False),
    Check("Finding: prefill is compute-bound for this prompt",
          "The prompt is longer than the ridge batch, so prefill FLOPs outweigh weight reads (informational).",
          prefill_compute_bound, counts=False),
)


# --- integrity of the plan's inputs ------------------------------------------------------------

#: The words of the requests-per-day finding (its Checks row and the flag beside the input on Plan).
AVERAGE_ABOVE_PEAK_FINDING = "Finding: the average load (requests per day) is within the peak QPS"
AVERAGE_ABOVE_PEAK_FLAG = "average above the peak QPS"


#: The resolver's rules (inference_ledger.graph.rules): between model inputs, TP within the node and the heads, the
#: PP/EP/DP-attention layout; each rendered from its one definition, in the order the resolver applies them.
RESOLVER_RULE_CHECKS: tuple[Check, ...] = tuple(
    Check(r.label, r.doc, r.condition)
    for r in dict.fromkeys((rules.NODE_RULE, *rules.HEADS_RULES, *rules.MODEL_RULES, *rules.LAYOUT_RULES)))

PLAN_INTEGRITY: tuple[Check, ...] = RESOLVER_RULE_CHECKS + (
    *(Check(r.label, r.doc, r.condition) for r in rules.INPUT_RULES),
)

def average_within_peak(requests_per_day, target_qps):
    """The daily average (requests per day / 86,400 s) is no more than the peak the fleet is sized for."""
    return le(requests_per_day / SECONDS_PER_DAY, target_qps)


#: Findings about the plan's inputs: shown (and flagged on Plan), outside the master check, since `plan` takes them.
INPUT_FINDINGS: tuple[Check, ...] = (
    Check(AVERAGE_ABOVE_PEAK_FINDING, "Requests per day / 86,400 s <= the target (peak) QPS: an average above the "
          "peak sizes the average-load bill (Cost sheet, Forecast base) larger than the peak fleet.",
          average_within_peak, counts=False),
)

#: Catalog columns that must be positive in every row: (sheet, field).
POSITIVE_FIELDS = (
    ("GPUs", "memory_bytes"), ("GPUs", "memory_runtime_bytes"), ("GPUs", "hbm_bw"), ("GPUs", "bf16_flops"),
    ("Models", "num_params"), ("Models", "active_params"), ("Models", "num_layers"), ("Models", "kv_heads"),
    ("Models", "head_dim"), ("Dtypes", "bits"),
)


def in_range(x, lo, lo_inclusive, hi, whole):
    """1 when x is a number within [lo or (lo, hi], and whole when it must be (a text or a blank is not)."""
    return one_zero(and_(isnumber(x), or_(gt(x, lo), and_(eq(lo_inclusive, 1), eq(x, lo))), le(x, hi),
                         or_(eq(whole, 0), eq(floor(x), x))))


# --- the Checks sheet ----------------------------------------------------------------------


def _check_namespace(ctx: Ctx):
    models = ctx.tables["Models"]
    heads = models.value(ctx.choice["model"], "num_attention_heads")
    refs = {n: ctx.quantity(n) for n in plan.NAMES} | {
        "attention_heads": models.index_match(SELECTOR_NAMES["model"], "num_attention_heads").at(heads)}
    vals = {**ctx.values, "attention_heads": heads}
    return refs, vals


def engine_vendor_check(ctx: Ctx) -> tuple[str, str, str, Any, int]:
    """The resolver's engine rule (rules.engine_runs_on) over the Engines and GPUs sheets: a counted check, so an
    engine typed onto a GPU it does not run on makes the verdict "invalid input", as `plan` refuses it."""
    eng = defined_name(SELECTOR_NAMES["engine"], ctx.choice["engine"])
    gpu = defined_name(SELECTOR_NAMES["gpu"], ctx.choice["gpu"])
    ok = one_zero(rules.engine_runs_on(ctx.tables["Engines"].index_match(eng, "gpu_vendors"),
                                       ctx.tables["GPUs"].index_match(gpu, "vendor")))
    return ("Integrity", rules.ENGINE_VENDOR_LABEL, "TensorRT-LLM runs on NVIDIA GPUs only and ATOM on AMD ones (the "
            "Engines sheet's gpu_vendors); vLLM and SGLang on any.", ok, int(ok.value))


def check_rows(ctx: Ctx) -> list[tuple[str, str, str, Any, Any]]:
    """(group, label, doc, formula Sym, value) of every check, in sheet order."""
    refs, vals = _check_namespace(ctx)
    rows = []
    for chk in SEED_CHECKLIST:
        group = "Seed checklist" if chk.counts else "Findings (not in the master check)"
        rows.append((group, chk.label, chk.doc, one_zero(chk(refs)), int(one_zero(chk(vals)))))
    for chk in PLAN_INTEGRITY:
        rows.append(("Integrity", chk.label, chk.doc, one_zero(chk(refs)), int(one_zero(chk(vals)))))
    for chk in INPUT_FINDINGS:
        rows.append(("Findings (not in the master check)", chk.label, chk.doc, one_zero(chk(refs)),
                     int(one_zero(chk(vals)))))
    rows += finance_checks(ctx)
    rows.append(engine_vendor_check(ctx))
    for sheet, field in POSITIVE_FIELDS:
        t = ctx.tables[sheet]
        if not t.has(field):
            continue
        ok = one_zero(eq(count_if(t.column_span(field, FIRST_ROW, TABLE_ROWS), "<=", 0), 0))
        rows.append(("Integrity", f"{sheet}: {field} positive in every row",
                     "Catalog values are physical quantities: none may be zero or negative.", ok, int(ok.value)))
    return rows

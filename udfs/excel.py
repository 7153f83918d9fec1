"""The ledger as Excel worksheet functions, through xlwings: the module users point xlwings at.

One module serves both Excel integrations unchanged:

* classic xlwings add-in (Windows): set ``UDF Modules`` to ``udfs.excel`` and click
  *Import Functions*;
* xlwings Lite (Office.js, Pyodide): ``inference-ledger`` in requirements.txt and
  ``from udfs.excel import *`` in main.py.

Decorators come from ``xlwings`` itself, so they register on Windows, on xlwings Server /
Lite (``XLWINGS_ON_SERVER``, Pyodide), and are plain pass-throughs anywhere else: there
every function is an ordinary Python function returning a 2-D list.  Nothing here needs
xlwings PRO at run time, and no argument is named ``caller`` (a reserved name in classic
xlwings).

Each function is generated from one row of :data:`REGISTRY` (ledger function, Excel
name, one-line description); argument names, order and defaults are the ledger
function's, argument docs and allowed ranges come from :data:`udfs.args.ARGS`.  Every
argument is requested as a 2-D range (``ndim=2``: xlwings would otherwise flatten a
one-column range into a list and lose its orientation) and the call broadcasts like
Excel, vectorized: ``=KV_BYTES(80, 8, 128, A2:A10001)`` is one numpy evaluation that
spills 10,000 rows.  Blank cells take the default shown in the argument's doc.

Bad input never raises: it is an error value in its own cell whose message names the
argument and the allowed range.  On Office.js (Lite/Server) that is a real ``#VALUE!``
(an Excel ``ErrorCellValue`` dict); in the classic COM add-in, where xlwings writes Python
strings as text, it is the text ``"#VALUE! <argument> must be ..."``.  Details in
:mod:`udfs._xl`.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import xlwings as xw

from inference_ledger import catalog, ledger, resolve, whatif
from inference_ledger.args import ARGS
from udfs._xl import Param, broadcast_call, elementwise_call

CATEGORY = "inference-ledger"

#: (ledger function, Excel name, one-line description).  One line adds a function.
REGISTRY: tuple[tuple[Callable[..., Any], str, str], ...] = (
    # the seed's four
    (ledger.kv_bytes, "KV_BYTES", "KV cache of one sequence in bytes: 2 x layers x KV heads x head dim x tokens x bytes per element."),
    (ledger.weights_bytes, "WEIGHTS_BYTES", "Resident weight bytes: parameters x bytes per parameter."),
    (ledger.flops_request, "FLOPS_REQUEST", "FLOPs of one request: 2 x parameters x (prompt + generated tokens)."),
    (ledger.decode_tpot, "DECODE_TPOT", "Bandwidth floor of one decode step in seconds: parameters x bytes / HBM bandwidth."),
    # precision
    (ledger.bytes_per_element, "BYTES_PER_ELEMENT", "Bytes per element of a number format including group scales: (bits + scale bits / group) / 8."),
    (ledger.weights_bytes_mixed, "WEIGHTS_BYTES_MIXED", "Weight bytes when only some parameters are quantized (the rest stay at unquantized_bytes)."),
    # KV cache
    (ledger.kv_bytes_per_token, "KV_BYTES_PER_TOKEN", "KV bytes one token adds across all layers: 2 x layers x KV heads x head dim x bytes (GQA)."),
    (ledger.kv_bytes_per_token_mla, "KV_BYTES_PER_TOKEN_MLA", "KV bytes per token of multi-head latent attention (DeepSeek): layers x (latent + RoPE dim) x bytes."),
    (ledger.kv_bytes_windowed, "KV_BYTES_WINDOWED", "KV bytes of one sequence when some layers use sliding-window attention (capped at the window)."),
    (ledger.kv_shards, "KV_SHARDS", "Ways the KV cache splits under tensor parallelism: min(TP, KV heads); 1 for an MLA latent."),
    # memory
    (ledger.memory_total_bytes, "MEMORY_TOTAL_BYTES", "Memory to hold: weights + KV per sequence x concurrency + workspace, in bytes."),
    (ledger.usable_bytes, "USABLE_BYTES", "Bytes the engine may use on one GPU: GPU memory x utilization."),
    (ledger.gpus_needed, "GPUS_NEEDED", "Fewest GPUs holding the total bytes, as a valid tensor-parallel degree (a power of two)."),
    (ledger.kv_capacity_tokens, "KV_CAPACITY_TOKENS", "KV tokens that fit in what weights and workspace leave of one GPU (whole, >= 0)."),
    (ledger.max_concurrency, "MAX_CONCURRENCY", "Sequences of a given context that fit in the KV capacity (whole)."),
    # compute
    (ledger.prefill_flops, "PREFILL_FLOPS", "Prefill FLOPs of one prompt: 2 x active parameters x prompt tokens."),
    (ledger.compute_seconds, "COMPUTE_SECONDS", "Seconds to do some FLOPs on some GPUs at a fraction of dense peak FLOP/s."),
    (ledger.ridge_batch, "RIDGE_BATCH", "Roofline ridge: the decode batch at which FLOPs catch up with weight reads."),
    # bandwidth
    (ledger.decode_bytes_per_step, "DECODE_BYTES_PER_STEP", "Bytes one decode step reads: active weights once + every sequence's KV once."),
    (ledger.decode_step_seconds, "DECODE_STEP_SECONDS", "Roofline decode step time: max(bytes / bandwidth, FLOPs / peak), each at its efficiency."),
    (ledger.tokens_per_second, "TOKENS_PER_SECOND", "Output tokens per second of a batch decoding together: batch / TPOT."),
    # cost
    (ledger.cost_per_hour, "COST_PER_HOUR", "Dollars per hour of some GPUs."),
    (ledger.cost_per_million_output_tokens, "COST_PER_MILLION_OUTPUT_TOKENS", "Dollars per million output tokens at full use of the GPUs."),
    (ledger.required_tokens_per_second, "REQUIRED_TOKENS_PER_SECOND", "Average output tokens per second that a daily request forecast needs."),
    (ledger.replicas_needed, "REPLICAS_NEEDED", "Whole model copies that serve a token rate (at least one)."),
    (ledger.monthly_cost, "MONTHLY_COST", "GPU bill for a month (730 h) of provisioned GPUs, in dollars."),
    (ledger.monthly_tokens, "MONTHLY_TOKENS", "Output tokens a month of the request forecast generates."),
    (ledger.fits, "FITS", "1 when the per-GPU total fits in the usable memory, else 0."),
    # what QPS, and the closed-form inverses
    (whatif.qps_per_replica, "QPS_PER_REPLICA", "Requests per second one replica sustains at a concurrency (Little's law): B / (TTFT + T x TPOT)."),
    (whatif.monthly_gpu_hours, "MONTHLY_GPU_HOURS", "GPU-hours a month of provisioned GPUs bills: GPUs x 730 h."),
    (whatif.tpot_max_batch, "TPOT_MAX_BATCH", "Largest decode batch whose roofline step time meets the TPOT target (0 = none)."),
    (whatif.max_context_tokens, "MAX_CONTEXT_TOKENS", "Longest context per sequence whose KV fits the budget at a concurrency (0 = none)."),
    (whatif.max_sequences, "MAX_SEQUENCES", "Most sequences of one context whose KV fits the budget: floor(budget / KV per sequence)."),
    (whatif.min_gpus_to_fit, "MIN_GPUS_TO_FIT", "Fewest GPUs (a power-of-two TP degree) holding the weights and a load's KV (0 = none)."),
)


def _signature(params: list[Param]) -> inspect.Signature:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature(
        [inspect.Parameter(p.name, kind, default=inspect.Parameter.empty if p.default is None else p.default) for p in params]
    )


def _register(call: Callable[..., Any], excel_name: str, description: str, docs: dict[str, str]) -> Callable[..., Any]:
    """Name, document and decorate a generated function (xlwings reads its signature)."""
    call.__name__ = call.__qualname__ = excel_name
    call.__module__ = __name__
    call.__doc__ = description
    for name, doc in docs.items():
        call = xw.arg(name, ndim=2, doc=doc)(call)
    return xw.func(category=CATEGORY)(call)


def excel_function(fn: Callable[..., Any], excel_name: str, description: str) -> Callable[..., Any]:
    """A worksheet function over ``fn``: same arguments and defaults, 2-D ranges in and out."""
    params = [
        Param(name, ARGS[name], None if p.default is inspect.Parameter.empty else p.default)
        for name, p in inspect.signature(fn).parameters.items()
    ]
    signature = _signature(params)

    def call(*values):
        bound = signature.bind(*values)
        bound.apply_defaults()
        return broadcast_call(fn, params, bound.args)

    call.__signature__ = signature
    return _register(call, excel_name, description, {p.name: p.doc() for p in params})


def lookup_function(fn: Callable[..., Any], excel_name: str, description: str, docs: dict[str, str]) -> Callable[..., Any]:
    """A worksheet function over a catalog lookup taking text (ids, field names)."""

    def call(*values):
        return elementwise_call(fn, list(docs), values)

    call.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in docs]
    )
    return _register(call, excel_name, description, docs)


def _dtype_bytes(dtype):
    return catalog.get_dtype(dtype).bytes_per_element


LOOKUPS = (
    lookup_function(_dtype_bytes, "DTYPE_BYTES", "Bytes per element of a number format by name (bf16 2, fp8 1, int4 with g128 scales 0.515625).",
                    {"dtype": "Format name or alias: fp32, bf16, fp16, fp8, int8, int4, mxfp4, ... (udfs/data/dtypes.csv)"}),
    lookup_function(resolve.gpu_spec, "GPU_SPEC", "One datasheet value of a GPU from the catalog, in base units (bytes, B/s, FLOP/s, $).",
                    {"gpu_id": "GPU id or alias: h100-sxm, H100, h200, mi300x, ... (udfs/data/gpus.csv)",
                     "field": "Field name: memory_runtime_bytes, hbm_bw, bf16_flops, fp8_flops, price_per_gpu_hour, ..."}),
    lookup_function(resolve.model_spec, "MODEL_SPEC", "One fact about a model from its config.json, or kv_bytes_per_token / weights_bytes.",
                    {"model_id": "Model id, alias or Hugging Face repo: llama-3.1-70b, meta-llama/Llama-3.1-70B, ...",
                     "field": "Field name: num_params, active_params, num_layers, kv_heads, head_dim, kv_bytes_per_token, weights_bytes, ..."}),
)

FUNCTIONS = tuple(excel_function(fn, name, description) for fn, name, description in REGISTRY) + LOOKUPS
globals().update({f.__name__: f for f in FUNCTIONS})
__all__ = [f.__name__ for f in FUNCTIONS]

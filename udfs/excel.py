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
function's, argument docs and allowed ranges come from :data:`inference_ledger.core.args.ARGS`.  Every
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

import contextlib
import inspect
from typing import Any, Callable

import xlwings as xw

from inference_ledger.catalogs import catalog, engines
from inference_ledger.formulas import kernels, ledger, whatif
from inference_ledger.graph import plan, resolve
from inference_ledger.graph import concurrency as choose_concurrency
from inference_ledger.io import report
from inference_ledger.core.args import ARGS, Arg, LedgerInputError, echo
from inference_ledger.validation.calibrate_profile import ProfileRowError, profile_values
from udfs._xl import NotAvailable, Param, broadcast_call, elementwise_call, error_value

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
    (ledger.kv_capacity_tokens_usable, "KV_CAPACITY_TOKENS_USABLE", "Seed form: KV tokens in what weights and workspace leave of the usable memory (= KV_CAPACITY_TOKENS under vLLM)."),
    (ledger.sequences_in_kv_tokens, "SEQUENCES_IN_KV_TOKENS", "Seed form: sequences of a context in some KV tokens, every layer full (MAX_CONCURRENCY also counts windows)."),
    # compute
    (ledger.prefill_flops, "PREFILL_FLOPS", "Prefill FLOPs of one prompt: 2 x active parameters x prompt tokens."),
    (ledger.compute_seconds, "COMPUTE_SECONDS", "Seconds to do some FLOPs on some GPUs at a fraction of dense peak FLOP/s."),
    (ledger.ridge_batch, "RIDGE_BATCH", "Roofline ridge: the decode batch at which FLOPs catch up with weight reads."),
    # bandwidth
    (ledger.decode_bytes_per_step, "DECODE_BYTES_PER_STEP", "Bytes one decode step reads: active weights once + every sequence's KV once."),
    (ledger.decode_step_seconds, "DECODE_STEP_SECONDS", "Roofline decode step time: max(bytes / bandwidth, FLOPs / peak), each at its efficiency."),
    (ledger.batch_tokens_per_second, "BATCH_TOKENS_PER_SECOND", "Output tokens per second of a batch decoding together: batch / TPOT (the steady state of a replica: =PLAN(model, gpu, \"tokens_per_second\"))."),
    # cost
    (ledger.cost_per_hour, "COST_PER_HOUR", "Dollars per hour of some GPUs."),
    (ledger.cost_per_million_output_tokens, "COST_PER_MILLION_OUTPUT_TOKENS", "Dollars per million output tokens at full use of the GPUs."),
    (ledger.required_tokens_per_second, "REQUIRED_TOKENS_PER_SECOND", "Average output tokens per second that a daily request forecast needs."),
    (ledger.replicas_needed, "REPLICAS_NEEDED", "Whole model copies that serve a token rate (at least one)."),
    (ledger.monthly_cost, "MONTHLY_COST", "GPU bill for a month (730 h) of provisioned GPUs, in dollars."),
    (ledger.monthly_tokens, "MONTHLY_TOKENS", "Output tokens a month of the request forecast generates."),
    (ledger.fits_usable, "FITS_USABLE", "Seed form: 1 when the per-GPU total fits in the usable memory, else 0 (FITS uses the engine's KV budget)."),
    # what QPS, and the closed-form inverses
    (whatif.qps_per_replica, "QPS_PER_REPLICA", "Requests per second one replica sustains at a concurrency (Little's law): B / (TTFT + (T - 1) x TPOT), the plan's qps_per_replica."),
    (whatif.monthly_gpu_hours, "MONTHLY_GPU_HOURS", "GPU-hours a month of provisioned GPUs bills: GPUs x 730 h."),
    (whatif.tpot_max_batch_roofline, "TPOT_MAX_BATCH_ROOFLINE", "Largest batch whose roofline step (no fixed overheads) meets the TPOT target (0 = none)."),
    (whatif.max_context_tokens, "MAX_CONTEXT_TOKENS", "Longest context per sequence whose KV fits the budget at a concurrency (0 = none)."),
    (whatif.max_sequences, "MAX_SEQUENCES", "Most sequences of one context whose KV fits the budget: floor(budget / KV per sequence)."),
    (whatif.min_gpus_closed_form, "MIN_GPUS_CLOSED_FORM", "Seed form: fewest GPUs (a power of two) holding weights and a load's KV at a fixed overhead (0 = none)."),
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
    return _broadcast_function(fn, params, excel_name, description)


def _broadcast_function(fn: Callable[..., Any], params: list[Param], excel_name: str,
                        description: str) -> Callable[..., Any]:
    """The worksheet function over ``fn`` taking ``params`` (defaults applied), 2-D ranges in and out."""
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
                    {"dtype": "Format name or alias: fp32, bf16, fp16, fp8, int8, int4, mxfp4, ... (inference_ledger/data/dtypes.csv)"}),
    lookup_function(resolve.gpu_spec, "GPU_SPEC", "One datasheet value of a GPU from the catalog, in base units (bytes, B/s, FLOP/s, $).",
                    {"gpu_id": "GPU id or alias: h100-sxm, H100, h200, mi300x, ... (inference_ledger/data/gpus.csv)",
                     "field": "Field name: memory_runtime_bytes, hbm_bw, bf16_flops, fp8_flops, price_per_gpu_hour, ..."}),
    lookup_function(resolve.model_spec, "MODEL_SPEC", "One fact about a model from its config.json, or kv_bytes_per_token / weights_bytes.",
                    {"model_id": "Model id, alias or Hugging Face repo: llama-3.1-70b, meta-llama/Llama-3.1-70B, ...",
                     "field": "Field name: num_params, active_params, num_layers, kv_heads, head_dim, kv_bytes_per_token, weights_bytes, ..."}),
)


# --- plan lines and the whole plan ---------------------------------------------------------------


def _quantity(name: str) -> Param:
    """A plan quantity as an argument: an input with its range and default, or a line (required, any number)."""
    if name in plan.INPUT_BY_NAME:
        i = plan.INPUT_BY_NAME[name]
        return Param(name, i.arg, i.default)
    ln = plan.LINE_BY_NAME[name]
    return Param(name, Arg(name, f"Plan line {name}: {ln.label}", ln.unit, -1e30, 1e30), None)


def line_function(line_name: str, description: str) -> Callable[..., Any]:
    """A worksheet function that IS a plan line: its function over the quantities it uses (lines required
    first, then inputs, which default to the plan's defaults)."""
    ln = plan.LINE_BY_NAME[line_name]
    params = [_quantity(n) for n in ln.params]
    params = [p for p in params if p.default is None] + [p for p in params if p.default is not None]
    names = [p.name for p in params]

    def fn(*xs):
        return ln.fn(**dict(zip(names, xs)))

    fn.__name__ = line_name
    return _broadcast_function(fn, params, line_name.upper(), description)


#: Plan lines whose Excel function is the line itself (the others of the same name call the same formula).
LINE_FUNCTIONS = (
    line_function("fits", "1 when the peak KV per GPU fits the engine's KV budget, else 0 (the plan's fit test)."),
    line_function("kv_capacity_tokens", "Whole KV tokens the engine's KV budget holds per GPU (>= 0)."),
    line_function("max_concurrency", "Whole sequences of this context the engine's KV budget holds (sliding windows included)."),
    line_function("tpot_max_batch", "Largest batch whose expected TPOT (roofline, all-reduces, fixed overheads) meets the target."),
)

#: Choices PLAN takes besides model, gpu and the key: plan inputs (numbers) and formats/engine (text).
PLAN_NUMBERS = ("tp", "concurrency", "input_tokens", "output_tokens", "pp", "ep", "dp_attention")
PLAN_TEXTS = ("weight_dtype", "kv_dtype", "engine", "batching")
#: Keys of plan --json that are not plan quantities.
PLAN_LABELS = ("model", "gpu", "weight_dtype", "kv_dtype", "engine", *(f"{q}_words" for q in plan.CODES),
               "concurrency_reason_words", "kernel_source")
#: Keys of plan --json for the concurrency the plan runs at (numbers).
PLAN_CONCURRENCY = ("concurrency_used", "concurrency_reason")


#: The plans of the worksheet-function call running, by their choices: PLAN over a row of keys asks for one plan once
#: per key, and it is evaluated once (kept for that call only, so a changed catalog is always read again).
_CALL_PLANS: list[dict] = []


@contextlib.contextmanager
def _plans_kept_for_the_call():
    _CALL_PLANS.append({})
    try:
        yield
    finally:
        _CALL_PLANS.pop()


def _plan_values(model, gpu, tp, concurrency, input_tokens, output_tokens, weight_dtype, kv_dtype, engine, pp=None,
                 ep=None, dp_attention=None, batching=None, profile=None):
    """The plan's values and labels (read only)."""
    key = (model, gpu, tp, concurrency, input_tokens, output_tokens, weight_dtype, kv_dtype, engine, pp, ep,
           dp_attention, batching, tuple(sorted((profile or {}).items())))
    kept = _CALL_PLANS[-1] if _CALL_PLANS else None
    try:
        if kept is not None and key in kept:
            return kept[key]
    except TypeError:   # a choice that is not a plain value: evaluated each time
        kept = None
    got = _evaluated_plan(model, gpu, tp, concurrency, input_tokens, output_tokens, weight_dtype, kv_dtype, engine, pp,
                          ep, dp_attention, batching, profile)
    if kept is not None:
        kept[key] = got
    return got


def _evaluated_plan(model, gpu, tp, concurrency, input_tokens, output_tokens, weight_dtype, kv_dtype, engine, pp, ep,
                    dp_attention, batching, profile):
    numbers = {"tp": tp, "concurrency": concurrency, "input_tokens": input_tokens, "output_tokens": output_tokens,
               "pp": pp, "ep": ep, "dp_attention": dp_attention}
    requested = None if choose_concurrency.is_auto(concurrency) else concurrency   # blank or "auto": chosen
    numbers["concurrency"] = requested
    numbers = {**(profile or {}), **{k: v for k, v in numbers.items() if v is not None}}
    r = resolve.resolve(model, gpu, weight_dtype=weight_dtype, kv_dtype=kv_dtype or "bf16",
                        engine=engine or engines.DEFAULT_ENGINE, numbers=numbers, batching=batching)
    values = choose_concurrency.evaluate(r.inputs, requested)
    d = r.describe()
    labels = {k: d[k] for k in PLAN_LABELS[:5]} | report.code_words({**r.inputs, **values}) | {
        "concurrency_reason_words": values["concurrency_reason_words"],
        "kernel_source": kernels.KERNEL_SOURCES[int(values["kernel_priced"])]}
    return values, labels


def plan_value(model, gpu, key, tp=None, concurrency=None, input_tokens=None, output_tokens=None,
               weight_dtype=None, kv_dtype=None, engine=None, pp=None, ep=None, dp_attention=None, batching=None,
               profile=None):
    """One plan --json key of the plan for a model on a GPU (through the resolver, like `plan`); ``profile``: fitted
    plan inputs by name (``plan --profile``), beneath the choices given."""
    model, gpu = ("" if model is None else model), ("" if gpu is None else gpu)
    k = "" if key is None else str(key).strip().lower()
    if not k:
        raise LedgerInputError("key is empty: give a plan --json key (fits, verdict, tpot_seconds, ...)")
    family = k.split(".")
    if len(family) == 3 and family[0] in plan.FAMILY_BY_NAME:   # a family's member at a candidate: tp_candidates.4.fits
        fam = plan.FAMILY_BY_NAME[family[0]]
        if family[2] not in (fam.param, *fam.member_names):
            raise LedgerInputError(f"unknown plan key {echo(key)}: {fam.name} has {', '.join(fam.member_names)}")
        values, _ = _plan_values(model, gpu, tp, concurrency, input_tokens, output_tokens, weight_dtype, kv_dtype,
                                 engine, pp, ep, dp_attention, batching, profile)
        at = values[fam.name]
        if family[1] not in at:
            raise LedgerInputError(f"plan key {echo(key)}: this GPU's node offers {fam.param} "
                                   f"{', '.join(at)} ({fam.bound} {values[fam.bound]:g})")
        return float(at[family[1]][family[2]])
    if k not in plan.NAMES and k not in PLAN_LABELS and k not in PLAN_CONCURRENCY and k not in report.FORECAST_UNITS:
        close = [n for n in plan.NAMES if k and k in n][:3]
        hint = f": did you mean {', '.join(close)}?" if close else " (keys: the names plan --json prints)"
        raise LedgerInputError(f"unknown plan key {echo(key)}{hint}")
    values, labels = _plan_values(model, gpu, tp, concurrency, input_tokens, output_tokens, weight_dtype, kv_dtype,
                                  engine, pp, ep, dp_attention, batching, profile)
    if k in report.without_a_bill(values):   # a bill of a plan that does not start: #N/A, as JSON's null
        raise NotAvailable(f"no {k}: the plan does not fit, so no replica starts")
    if k in report.FORECAST_UNITS:   # the forecast's conclusions (plan --json's forecast_* keys)
        v = report.forecast_of(values)[k]
        return v if isinstance(v, str) else float(v)
    return labels[k] if k in labels else float(values[k])


def min_gpus_to_fit(model, gpu, tp=None, concurrency=None, input_tokens=None, output_tokens=None,
                    weight_dtype=None, kv_dtype=None, engine=None):
    """The plan line min_gpus_to_fit (the engine's defaults, e.g. SGLang's memory fraction, follow the plan's TP)."""
    return plan_value(model, gpu, "min_gpus_to_fit", tp, concurrency, input_tokens, output_tokens, weight_dtype,
                      kv_dtype, engine)


_CHOICE_DOCS = {
    "model": "Model id, alias or Hugging Face repo: llama-3.1-70b, ... (a column of models works)",
    "gpu": "GPU id or alias: h100-sxm, h200, mi300x, ... (a column or row of GPUs works)",
    "tp": "Tensor-parallel degree [GPUs]; blank = the plan's default (4)",
    "concurrency": "Peak concurrent sequences; blank or auto = the largest meeting the TTFT and TPOT targets",
    "input_tokens": "Prompt tokens per request; blank = the plan's default (1024)",
    "output_tokens": "Output tokens per request; blank = the plan's default (512)",
    "weight_dtype": "Weight format: bf16, fp8, int4, ...; blank = the checkpoint's",
    "kv_dtype": "KV-cache format: bf16, fp8, ...; blank = bf16",
    "engine": "Serving engine and version: vllm, sglang, trtllm (current) or vllm-0.9, sglang-0.4, trtllm-1.0, ... (engines.csv); blank = vllm",
    "pp": "Pipeline stages; blank = 1",
    "ep": "Expert-parallel degree (divides the experts and TP x DP attention); blank = 1",
    "dp_attention": "Attention data-parallel ranks (MoE models); blank = 1",
    "batching": "Batching: continuous or static; blank = continuous",
    "profile": "Calibration profile: a range of (plan input, value) rows, e.g. calibration_profile on the Calibration "
               "sheet of a workbook built with --profile; blank = none",
}


def _choice_function(fn: Callable[..., Any], excel_name: str, description: str, docs: dict[str, str],
                     required: int) -> Callable[..., Any]:
    names = list(docs)
    whole = "profile" in names          # a range read as a whole (name, value rows), never broadcast

    def call(*values):
        values = list(values) + [None] * (len(names) - len(values))
        if not whole:
            with _plans_kept_for_the_call():
                return elementwise_call(fn, names, values, optional=names)  # blank ids: the resolver's own message
        try:
            prof = profile_values(values[-1] if isinstance(values[-1], list) else [])
        except ProfileRowError as e:
            return [[error_value(f"profile {e}")]]
        with _plans_kept_for_the_call():
            return elementwise_call(lambda *a: fn(*a, profile=prof), names[:-1], values[:-1], optional=names[:-1])

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    call.__signature__ = inspect.Signature([inspect.Parameter(n, kind, default=inspect.Parameter.empty if k < required
                                                              else None) for k, n in enumerate(names)])
    return _register(call, excel_name, description, docs)


_PLAN_ARGS = ("tp", "concurrency", "input_tokens", "output_tokens", "weight_dtype", "kv_dtype", "engine")
PLAN_FUNCTIONS = (
    _choice_function(plan_value, "PLAN", "Any plan line or input by its plan --json key, for a model on a GPU "
                     "(as `inference-ledger plan` computes it; #N/A for a bill, the money or fleet a plan that does not fit "
                     "would need, as plan --json's null).",
                     {"model": _CHOICE_DOCS["model"], "gpu": _CHOICE_DOCS["gpu"],
                      "key": "A plan --json key: fits, verdict, kv_capacity_tokens, tpot_seconds, monthly_cost, ... (nested: tp_candidates.4.fits)"}
                     | {n: _CHOICE_DOCS[n] for n in (*_PLAN_ARGS, "pp", "ep", "dp_attention", "batching", "profile")}, 3),
    _choice_function(min_gpus_to_fit, "MIN_GPUS_TO_FIT", "Fewest GPUs (TP 1, 2, 4, ... up to the GPU's "
                     "gpus_per_node) whose engine KV budget holds this load: the plan line (0 = none does).",
                     {n: _CHOICE_DOCS[n] for n in ("model", "gpu", *_PLAN_ARGS)}, 2),
)

FUNCTIONS = tuple(excel_function(fn, name, description) for fn, name, description in REGISTRY) + LOOKUPS \
    + LINE_FUNCTIONS + PLAN_FUNCTIONS
globals().update({f.__name__: f for f in FUNCTIONS})
__all__ = [f.__name__ for f in FUNCTIONS]

"""The plan: every ledger line, in order, as one graph of named quantities.

This is the single description of a deployment plan that every adapter shares:

* ``evaluate(inputs)`` computes it in Python (the CLI's ``plan``, cached values in
  the workbook, sweeps over numpy arrays);
* ``render(line, ref)`` writes the same line as an Excel formula, with ``ref`` saying
  where each named quantity lives (a defined name on the Plan sheet, or a cell of
  the same row in the Scenarios grid).

A line's formula is a call into :mod:`udfs.ledger` (or trivial arithmetic over other
lines), written once.  The workbook, the CLI and the Excel functions agree because
they evaluate the same lines, and the LibreOffice tests prove it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional

import numpy as np

from . import ledger as L
from .args import ARGS, Arg, LedgerInputError
from .expr import Sym, where, le, ge, and_
from .units import BYTES_PER_GIB, FLOPS_PER_PARAM


@dataclass(frozen=True)
class Input:
    """A named input of the plan, with its validation range and default."""

    name: str
    label: str
    unit: str
    default: Optional[float]
    doc: str
    group: str  # model | precision | gpu | deployment | workload | efficiency | cost | target
    arg: Arg


@dataclass(frozen=True)
class Line:
    """One computed line of a ledger."""

    name: str
    label: str
    unit: str
    ledger: str  # memory | compute | bandwidth | cost | fit
    doc: str
    fn: Callable[[Any], Any] = field(repr=False)


def _inp(name, label, unit, default, doc, group, lo=None, hi=None, integer=None, lo_inclusive=None, arg=None):
    base = ARGS.get(arg or name)
    if base is None:
        base = Arg(name, doc, unit, 0.0, 1e18)
    kw = {}
    if lo is not None:
        kw["lo"] = lo
    if hi is not None:
        kw["hi"] = hi
    if integer is not None:
        kw["integer"] = integer
    if lo_inclusive is not None:
        kw["lo_inclusive"] = lo_inclusive
    a = Arg(name, doc, unit, kw.get("lo", base.lo), kw.get("hi", base.hi),
            kw.get("lo_inclusive", base.lo_inclusive), kw.get("integer", base.integer), default)
    return Input(name, label, unit, default, doc, group, a)


GIB = float(BYTES_PER_GIB)

INPUTS: tuple[Input, ...] = (
    # model (from the Models catalog)
    _inp("num_params", "Total parameters", "params", 70e9, "All weights, every expert included: what memory holds.", "model"),
    _inp("active_params", "Active parameters per token", "params", 70e9, "Weights used for one token (MoE: routed + shared experts); drives FLOPs and bytes read.", "model"),
    _inp("quantized_params", "Parameters in quantizable layers", "params", 70e9, "Weights the weight dtype applies to (linear layers); the rest (embeddings, norms, routers) stay BF16.", "model", lo=0, lo_inclusive=True, arg="num_params"),
    _inp("active_quantized_params", "Active parameters in quantizable layers", "params", 70e9, "The quantizable share of the active parameters.", "model", lo=0, lo_inclusive=True, arg="num_params"),
    _inp("num_layers", "Layers", "layers", 80, "Transformer blocks (num_hidden_layers).", "model"),
    _inp("kv_heads", "KV heads", "heads", 8, "Key/value heads per layer; GQA makes this smaller than the query heads.", "model"),
    _inp("head_dim", "Head dimension", "elements", 128, "Width of one attention head.", "model"),
    _inp("mla_latent_dim", "MLA latent width (0 = none)", "elements", 0, "DeepSeek MLA caches kv_lora_rank + qk_rope_head_dim per layer instead of 2*K*H.", "model", arg="kv_lora_rank"),
    _inp("sliding_layers", "Sliding-window layers", "layers", 0, "Layers whose KV is capped at the window.", "model"),
    _inp("window", "Sliding window", "tokens", 0, "Tokens a sliding-window layer keeps.", "model"),
    # precision
    _inp("weight_bytes", "Weight bytes per parameter", "B/param", 2, "From the weight dtype, group scales included (BF16 2, FP8 1, INT4 g128 0.515625).", "precision"),
    _inp("unquantized_bytes", "Bytes per unquantized parameter", "B/param", 2, "Embeddings, norms and routers stay in BF16 when the linear layers are quantized.", "precision", arg="weight_bytes"),
    _inp("kv_bytes", "KV bytes per element", "B", 2, "From the KV-cache dtype (BF16 2, FP8 1, INT4 0.5).", "precision"),
    # GPU (from the GPUs catalog)
    _inp("gpu_memory_bytes", "GPU memory (runtime)", "B", 79.1875 * GIB, "Memory as CUDA/torch report it, below the marketing figure (an 80 GB H100 is 79.19 GiB).", "gpu"),
    _inp("hbm_bw", "HBM bandwidth", "B/s", 3.35e12, "Peak memory bandwidth of one GPU (datasheet).", "gpu"),
    _inp("peak_flops", "Dense peak FLOP/s", "FLOP/s", 989e12, "Dense tensor throughput at the compute dtype; vendors headline sparse (2x).", "gpu"),
    # deployment
    _inp("tp", "Tensor-parallel degree", "GPUs", 4, "GPUs one copy of the model is split across.", "deployment"),
    _inp("gpu_memory_utilization", "GPU memory utilization", "fraction", 0.9, "Share of GPU memory the engine may use (vLLM gpu_memory_utilization, default 0.9).", "deployment"),
    _inp("workspace_bytes_per_gpu", "Workspace per GPU", "B", 2 * GIB, "Activations at the prefill chunk, CUDA graphs, NCCL and allocator slack; vLLM logs 1.3 GiB activation + 1.8 GiB non-torch for 8B on TP1.", "deployment", arg="workspace_bytes"),
    # workload
    _inp("input_tokens", "Input tokens per request", "tokens", 1024, "Prompt length S.", "workload", lo=1),
    _inp("output_tokens", "Output tokens per request", "tokens", 512, "Generated length T.", "workload", lo=1),
    _inp("concurrency", "Peak concurrent sequences", "sequences", 16, "Sequences in flight at the peak: plan KV for this, not the average.", "workload", lo=1),
    # efficiency
    _inp("prefill_efficiency", "Prefill compute efficiency", "fraction", 0.5, "Achieved share of dense peak in prefill; the seed assumes ~50% (MFU of large GEMMs).", "efficiency", arg="efficiency"),
    _inp("bw_efficiency", "Decode bandwidth efficiency", "fraction", 0.8, "Achieved share of peak HBM bandwidth when streaming weights; STREAM-like kernels reach ~80-90% on H100.", "efficiency", arg="efficiency"),
    _inp("decode_compute_efficiency", "Decode compute efficiency", "fraction", 0.5, "Achieved share of dense peak in large-batch decode GEMMs.", "efficiency", arg="efficiency"),
    # cost
    _inp("price_per_gpu_hour", "Price per GPU-hour", "$/GPU-h", 2.5, "What one GPU costs for an hour (list, reserved or internal rate).", "cost"),
    _inp("requests_per_day", "Requests per day", "requests/day", 1_000_000, "Forecast load for the monthly bill.", "cost"),
    # targets
    _inp("ttft_target", "TTFT target", "s", 0.5, "Time to first token the service promises.", "target", arg="seconds"),
    _inp("tpot_target", "TPOT target", "s", 0.05, "Time per output token the service promises.", "target", arg="seconds"),
)

INPUT_BY_NAME: dict[str, Input] = {i.name: i for i in INPUTS}


def _lines() -> tuple[Line, ...]:
    M, C, B, K, F = "memory", "compute", "bandwidth", "cost", "fit"
    return (
        # --- memory -------------------------------------------------------------
        Line("weights_bytes", "Weights", "B", M,
             "Resident weights: quantized layers at the weight dtype, the rest at BF16 (seed: W = N x bytes).",
             lambda v: L.weights_bytes_mixed(v.num_params, v.quantized_params, v.weight_bytes, v.unquantized_bytes)),
        Line("weights_bytes_per_gpu", "Weights per GPU", "B", M,
             "Tensor parallelism splits every weight matrix evenly over the TP GPUs.",
             lambda v: L.per_gpu(v.weights_bytes, v.tp)),
        Line("kv_elements_per_token_layer", "KV elements per token per layer", "elements", M,
             "2 x KV heads x head dim (K and V), or the MLA latent width when the model has one.",
             lambda v: L.kv_elements_per_token_layer(v.kv_heads, v.head_dim, v.mla_latent_dim)),
        Line("kv_bytes_per_token", "KV per token", "B/token", M,
             "Seed: 2 x L x K x H x bytes; every layer counted (engines size their KV pool this way).",
             lambda v: v.kv_elements_per_token_layer * v.kv_bytes * v.num_layers),
        Line("kv_shards", "KV split across GPUs", "x", M,
             "KV heads split over TP, replicated once TP exceeds them; an MLA latent is not split.",
             lambda v: L.kv_shards(v.kv_heads, v.tp, v.mla_latent_dim)),
        Line("kv_bytes_per_token_per_gpu", "KV per token per GPU", "B/token", M,
             "KV per token divided by the KV split.",
             lambda v: L.per_gpu(v.kv_bytes_per_token, v.kv_shards)),
        Line("context_tokens", "Context per sequence", "tokens", M,
             "Peak context a sequence holds: input + output tokens.",
             lambda v: v.input_tokens + v.output_tokens),
        Line("kv_bytes_per_sequence", "KV per sequence at full context", "B", M,
             "Full layers hold the whole context, sliding-window layers at most the window.",
             lambda v: L.kv_sequence_bytes(v.kv_elements_per_token_layer, v.kv_bytes, v.num_layers,
                                           v.context_tokens, v.sliding_layers, v.window)),
        Line("kv_bytes_peak", "KV at peak concurrency", "B", M,
             "Planned for the peak number of concurrent sequences at full context, not the average.",
             lambda v: v.kv_bytes_per_sequence * v.concurrency),
        Line("kv_bytes_per_gpu", "KV per GPU at peak", "B", M,
             "Peak KV divided by the KV split.",
             lambda v: L.per_gpu(v.kv_bytes_peak, v.kv_shards)),
        Line("total_bytes_per_gpu", "Total per GPU", "B", M,
             "Weights + KV + workspace on each GPU: all three, never weights only.",
             lambda v: L.memory_total_bytes(v.weights_bytes_per_gpu, v.kv_bytes_per_sequence / v.kv_shards,
                                            v.concurrency, v.workspace_bytes_per_gpu)),
        Line("usable_bytes_per_gpu", "Usable memory per GPU", "B", M,
             "GPU memory x gpu_memory_utilization: what the engine lets itself use.",
             lambda v: L.usable_bytes(v.gpu_memory_bytes, v.gpu_memory_utilization)),
        Line("headroom_bytes_per_gpu", "Headroom per GPU", "B", M,
             "Usable memory left after weights, KV and workspace (negative = does not fit).",
             lambda v: v.usable_bytes_per_gpu - v.total_bytes_per_gpu),
        Line("memory_total_bytes", "Total memory, all GPUs", "B", M,
             "Weights + peak KV + one workspace per GPU.",
             lambda v: L.memory_total_bytes(v.weights_bytes, v.kv_bytes_per_sequence, v.concurrency,
                                            v.workspace_bytes_per_gpu * v.tp)),
        Line("gpus_needed", "GPUs needed (memory)", "GPUs", M,
             "Fewest GPUs, as a power-of-two TP degree, whose usable memory holds weights + peak KV.",
             lambda v: L.gpus_needed(v.weights_bytes + v.kv_bytes_peak, v.gpu_memory_bytes,
                                     v.gpu_memory_utilization, v.workspace_bytes_per_gpu)),
        Line("kv_capacity_tokens", "KV tokens that fit", "tokens", M,
             "Whole tokens of KV that fit per GPU in what the utilization leaves after weights and workspace.",
             lambda v: L.kv_capacity_tokens(v.gpu_memory_bytes, v.gpu_memory_utilization, v.weights_bytes_per_gpu,
                                            v.workspace_bytes_per_gpu, v.kv_bytes_per_token_per_gpu)),
        Line("max_concurrency", "Max concurrency at this context", "sequences", M,
             "Whole sequences of this context that the KV capacity holds.",
             lambda v: L.max_concurrency(v.kv_capacity_tokens, v.context_tokens)),
        # --- compute ------------------------------------------------------------
        Line("flops_request", "FLOPs per request", "FLOP", C,
             "Seed: 2N x S + 2N x T with N the active parameters.",
             lambda v: L.flops_request(v.active_params, v.input_tokens, v.output_tokens)),
        Line("prefill_flops", "Prefill FLOPs", "FLOP", C,
             "2 x N_active x S: the whole prompt in one parallel pass.",
             lambda v: L.prefill_flops(v.active_params, v.input_tokens)),
        Line("prefill_seconds", "Prefill time (TTFT floor)", "s", C,
             "Prefill FLOPs over TP GPUs at dense peak x prefill efficiency: compute-bound.",
             lambda v: L.compute_seconds(v.prefill_flops, v.peak_flops, v.prefill_efficiency, v.tp)),
        Line("weights_read_bytes", "Weight bytes read per decode step", "B", B,
             "Every active weight is read from HBM once per step (MoE reads only the routed experts).",
             lambda v: L.weights_bytes_mixed(v.active_params, v.active_quantized_params, v.weight_bytes,
                                             v.unquantized_bytes)),
        Line("ridge_batch", "Compute-bound from batch", "sequences", C,
             "Roofline ridge: batch where 2 x N x B FLOPs take as long as reading the weights.",
             lambda v: L.ridge_batch(v.peak_flops, v.hbm_bw, v.weights_read_bytes / v.active_params)),
        Line("decode_flops_per_step_per_gpu", "Decode FLOPs per step per GPU", "FLOP", C,
             "2 x N_active per sequence in the batch, split over TP.",
             lambda v: L.forward_flops(v.active_params, v.concurrency) / v.tp),
        # --- bandwidth ----------------------------------------------------------
        Line("decode_bytes_per_step_per_gpu", "Bytes read per decode step per GPU", "B", B,
             "Weights once per step + every sequence's KV, each split over its GPUs.",
             lambda v: L.decode_bytes_per_step(v.weights_read_bytes / v.tp,
                                               v.kv_bytes_per_sequence / v.kv_shards, v.concurrency)),
        Line("tpot_floor_seconds", "TPOT floor", "s", B,
             "Roofline at 100%: max(bytes / BW, FLOPs / peak). Seed: TPOT >= weight bytes / HBM bandwidth.",
             lambda v: L.decode_step_seconds(v.decode_bytes_per_step_per_gpu, v.decode_flops_per_step_per_gpu,
                                             v.hbm_bw, v.peak_flops)),
        Line("tpot_seconds", "TPOT expected", "s", B,
             "The same roofline at achievable bandwidth and compute efficiencies.",
             lambda v: L.decode_step_seconds(v.decode_bytes_per_step_per_gpu, v.decode_flops_per_step_per_gpu,
                                             v.hbm_bw, v.peak_flops, v.bw_efficiency, v.decode_compute_efficiency)),
        Line("ttft_seconds", "TTFT expected", "s", C,
             "Prefill time at the prefill efficiency (queueing not included).",
             lambda v: v.prefill_seconds),
        Line("tokens_per_second", "Output tokens/s (one replica)", "tokens/s", B,
             "Concurrency / TPOT: every sequence in the batch gets a token each step.",
             lambda v: L.tokens_per_second(v.concurrency, v.tpot_seconds)),
        Line("tokens_per_second_per_gpu", "Output tokens/s per GPU", "tokens/s", B,
             "Replica throughput over its TP GPUs.",
             lambda v: v.tokens_per_second / v.tp),
        Line("request_seconds", "Request latency", "s", B,
             "TTFT + output tokens x TPOT.",
             lambda v: v.ttft_seconds + v.output_tokens * v.tpot_seconds),
        # --- cost ---------------------------------------------------------------
        Line("cost_per_hour", "Cost per hour (one replica)", "$/h", K,
             "Price per GPU-hour x TP GPUs.",
             lambda v: L.cost_per_hour(v.price_per_gpu_hour, v.tp)),
        Line("cost_per_million_output_tokens", "Cost per million output tokens", "$/Mtok", K,
             "Hourly cost over an hour of output at full concurrency.",
             lambda v: L.cost_per_million_output_tokens(v.price_per_gpu_hour, v.tp, v.tokens_per_second)),
        Line("required_tokens_per_second", "Output tokens/s the forecast needs", "tokens/s", K,
             "Requests per day x output tokens / 86,400 (daily average).",
             lambda v: L.required_tokens_per_second(v.requests_per_day, v.output_tokens)),
        Line("replicas_needed", "Replicas for the forecast", "replicas", K,
             "Whole model copies to serve the forecast's token rate (at least one).",
             lambda v: L.replicas_needed(v.required_tokens_per_second, v.tokens_per_second)),
        Line("gpus_total", "GPUs for the forecast", "GPUs", K,
             "Replicas x TP.",
             lambda v: v.replicas_needed * v.tp),
        Line("monthly_cost", "Monthly GPU cost", "$/month", K,
             "GPUs for the forecast x price x 730 h.",
             lambda v: L.monthly_cost(v.price_per_gpu_hour, v.gpus_total)),
        # --- fit ----------------------------------------------------------------
        Line("fits", "Fits in memory", "1/0", F,
             "1 when weights + KV + workspace per GPU <= memory x utilization.",
             lambda v: L.fits(v.total_bytes_per_gpu, v.usable_bytes_per_gpu)),
        Line("kv_fits", "KV holds the peak concurrency", "1/0", F,
             "1 when the KV capacity holds the peak concurrency at full context.",
             lambda v: where(le(v.concurrency, v.max_concurrency), 1, 0)),
        Line("ttft_ok", "TTFT meets target", "1/0", F,
             "1 when expected TTFT <= target.",
             lambda v: where(le(v.ttft_seconds, v.ttft_target), 1, 0)),
        Line("tpot_ok", "TPOT meets target", "1/0", F,
             "1 when expected TPOT <= target.",
             lambda v: where(le(v.tpot_seconds, v.tpot_target), 1, 0)),
    )


LINES: tuple[Line, ...] = _lines()
LINE_BY_NAME: dict[str, Line] = {l.name: l for l in LINES}
NAMES: tuple[str, ...] = tuple(i.name for i in INPUTS) + tuple(l.name for l in LINES)


class _Values:
    """Attribute access over a dict, for evaluating line lambdas on numbers."""

    __slots__ = ("_d",)

    def __init__(self, d):
        object.__setattr__(self, "_d", d)

    def __getattr__(self, name):
        try:
            return self._d[name]
        except KeyError:
            raise AttributeError(f"plan quantity {name!r} is not defined before use") from None


class _Refs:
    """Attribute access that returns Excel references and records what was used."""

    def __init__(self, ref: Callable[[str], str]):
        self._ref = ref
        self.used: list[str] = []

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in INPUT_BY_NAME and name not in LINE_BY_NAME:
            raise AttributeError(f"unknown plan quantity {name!r}")
        self.used.append(name)
        return Sym(self._ref(name))


def defaults() -> dict[str, float]:
    return {i.name: i.default for i in INPUTS}


def validate_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Check every input against its range; raise LedgerInputError naming the first bad one.

    Arrays are checked elementwise (all elements must pass)."""
    out: dict[str, Any] = {}
    for i in INPUTS:
        if i.name not in inputs:
            raise LedgerInputError(f"{i.name} is missing")
        v = inputs[i.name]
        if isinstance(v, np.ndarray):
            flat = v.ravel()
            for x in flat:
                i.arg.check(x)
            out[i.name] = v.astype(float)
        else:
            out[i.name] = i.arg.check(v)
    # cross-field rules
    _cross_checks(out)
    return out


def _cross_checks(v: Mapping[str, Any]) -> None:
    def bad(mask):
        return bool(np.any(mask))

    if bad(np.asarray(v["active_params"]) > np.asarray(v["num_params"])):
        raise LedgerInputError("active_params must be <= num_params")
    if bad(np.asarray(v["quantized_params"]) > np.asarray(v["num_params"])):
        raise LedgerInputError("quantized_params must be <= num_params")
    if bad(np.asarray(v["active_quantized_params"]) > np.asarray(v["active_params"])):
        raise LedgerInputError("active_quantized_params must be <= active_params")
    if bad(np.asarray(v["sliding_layers"]) > np.asarray(v["num_layers"])):
        raise LedgerInputError("sliding_layers must be <= num_layers")


def evaluate(inputs: Mapping[str, Any], validate: bool = True) -> dict[str, Any]:
    """Compute every line from the inputs (numbers or equally shaped numpy arrays)."""
    vals = dict(validate_inputs(inputs) if validate else inputs)
    ns = _Values(vals)
    with np.errstate(divide="ignore", invalid="ignore"):
        for line in LINES:
            vals[line.name] = line.fn(ns)
    return vals


def render(line: Line | str, ref: Callable[[str], str]) -> tuple[str, list[str]]:
    """Excel formula text (with leading '=') of a line, and the quantities it uses."""
    if isinstance(line, str):
        line = LINE_BY_NAME[line]
    refs = _Refs(ref)
    expr = line.fn(refs)
    if not isinstance(expr, Sym):  # a line that is a plain copy of an input, e.g. ttft = prefill
        raise TypeError(f"line {line.name} did not render to a formula")
    return expr.formula(), refs.used


def dependencies(line: Line | str) -> list[str]:
    _, used = render(line, lambda n: n)
    return list(dict.fromkeys(used))


def plan_keys() -> Iterable[str]:
    return NAMES

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

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional

import numpy as np

from . import ledger as L
from . import engines as E
from . import whatif as Q
from . import finance as FI
from .expr import minimum
from .args import ARGS, Arg, LedgerInputError
from .expr import Sym, where, le, ge, and_
from .expr import floor, maximum
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
    _inp("active_params", "Active parameters per token", "params", 70e9, "Weights one token multiplies (MoE: routed + shared experts; never the input embedding table, a one-row gather); drives FLOPs and bytes read.", "model"),
    _inp("quantized_params", "Parameters in quantizable layers", "params", 70e9, "Weights the weight dtype applies to (linear layers); the rest (embeddings, norms, routers) stay BF16.", "model", lo=0, lo_inclusive=True, arg="num_params"),
    _inp("active_quantized_params", "Active parameters in quantizable layers", "params", 70e9, "The quantizable share of the active parameters.", "model", lo=0, lo_inclusive=True, arg="num_params"),
    _inp("num_layers", "Layers", "layers", 80, "Transformer blocks (num_hidden_layers).", "model"),
    _inp("kv_heads", "KV heads", "heads", 8, "Key/value heads per layer; GQA makes this smaller than the query heads.", "model"),
    _inp("head_dim", "Head dimension", "elements", 128, "Width of one attention head.", "model"),
    _inp("mla_latent_dim", "MLA latent width (0 = none)", "elements", 0, "DeepSeek MLA caches kv_lora_rank + qk_rope_head_dim per layer instead of 2*K*H.", "model", arg="kv_lora_rank"),
    _inp("sliding_layers", "Sliding-window layers", "layers", 0, "Layers whose KV is capped at the window.", "model"),
    _inp("window", "Sliding window", "tokens", 0, "Tokens a sliding-window layer keeps.", "model"),
    _inp("hidden_size", "Hidden size", "elements", 8192, "Width of the residual stream (hidden_size): the activations and all-reduce messages of every token.", "model", lo=1, hi=1e6, integer=True),
    _inp("intermediate_size", "MLP / expert width", "elements", 28672, "intermediate_size of the MLP (of one expert for a MoE): the widest activation of a prefill chunk.", "model", lo=1, hi=1e7, integer=True),
    _inp("vocab_size", "Vocabulary", "tokens", 128256, "Logits per sequence: the sampler's working set is max_num_seqs x vocab.", "model", lo=1, hi=1e8, integer=True),
    _inp("num_experts", "Routed experts (0 = dense)", "experts", 0, "Experts per MoE layer; their matrices are padded to the MoE kernel's tile.", "model", lo=0, hi=1e5, integer=True),
    _inp("experts_per_token", "Experts per token (0 = dense)", "experts", 0, "Routed experts a token visits: each keeps its own MLP activations in prefill.", "model", lo=0, hi=1e4, integer=True),
    # precision
    _inp("weight_bytes", "Weight bytes per parameter", "B/param", 2, "From the weight dtype, group scales included (BF16 2, FP8 1, INT4 g128 0.515625).", "precision"),
    _inp("unquantized_bytes", "Bytes per unquantized parameter", "B/param", 2, "Embeddings, norms and routers stay in BF16 when the linear layers are quantized.", "precision", arg="weight_bytes"),
    _inp("kv_bytes", "KV bytes per element", "B", 2, "From the KV-cache dtype (BF16 2, FP8 1, INT4 0.5).", "precision"),
    # GPU (from the GPUs catalog)
    _inp("gpu_memory_bytes", "GPU memory (runtime)", "B", 79.1875 * GIB, "Memory as CUDA/torch report it, below the marketing figure (an 80 GB H100 is 79.19 GiB).", "gpu"),
    _inp("hbm_bw", "HBM bandwidth", "B/s", 3.35e12, "Peak memory bandwidth of one GPU (datasheet).", "gpu"),
    _inp("peak_flops", "Dense peak FLOP/s", "FLOP/s", 989e12, "Dense tensor throughput at the compute dtype; vendors headline sparse (2x).", "gpu"),
    _inp("interconnect_bw", "Interconnect bandwidth", "B/s", 450e9, "GPU-to-GPU link bandwidth per direction (NVLink 4: 450 GB/s; PCIe Gen4 x16: 32 GB/s): the bytes of each TP all-reduce.", "gpu", lo=0, hi=1e14, lo_inclusive=False),
    # deployment
    _inp("tp", "Tensor-parallel degree", "GPUs", 4, "GPUs one copy of the model is split across.", "deployment"),
    _inp("gpu_memory_utilization", "GPU memory utilization", "fraction", 0.9, "Share of GPU memory the engine may use (vLLM gpu_memory_utilization, default 0.9).", "deployment"),
    # engine (udfs/data/engines.csv via udfs.engines.engine_inputs; defaults: vLLM V1 on an H100)
    _inp("kv_budget_rule", "Engine KV budget rule", "code", 1, "How the engine sizes its KV cache: 1 vLLM (utilization x total - weights - activations - non-torch), 2 SGLang (mem_fraction_static x (total - non-torch) - weights), 3 TensorRT-LLM (fraction x memory free after weights).", "engine", lo=1, hi=3, integer=True),
    _inp("max_num_batched_tokens", "Prefill chunk (max_num_batched_tokens)", "tokens", 8192, "Tokens the engine's memory profile runs in one forward pass: vLLM V1 8192 on >=70 GiB GPUs (2048 on smaller and A100), V0 max(max_model_len, 2048).", "engine", lo=1, hi=1e8, integer=True),
    _inp("max_num_seqs", "Sequences per step (max_num_seqs)", "sequences", 1024, "Sequences the engine batches; its profile samples one logits row each (vLLM V1: 1024 on >=70 GiB GPUs, else 256).", "engine", lo=1, hi=1e6, integer=True),
    _inp("sampler_bytes_per_logit", "Sampler bytes per logit", "B", 40, "Bytes the sampler keeps per logits element at its peak: vLLM V1's top-k/top-p path holds ~10 FP32-sized copies (logits, sort values + int64 indices, softmax, cumsum, noise).", "engine", lo=0, hi=1e3),
    _inp("cuda_context_bytes", "CUDA context (non-torch, TP 1)", "B", 0.35 * GIB, "Memory outside PyTorch's allocator at TP 1: CUDA context and cuBLAS workspace; vLLM logs non_torch_memory 0.35 GiB (RTX 3090, vllm#10517).", "engine", lo=0, hi=1e12),
    _inp("nccl_bytes", "NCCL buffers (TP > 1)", "B", 1.79 * GIB, "Extra non-torch memory when TP > 1: NVLink-SHARP buffers on NVSwitch systems (vLLM log: TP2 3.58 vs TP1 1.79 GiB on H100); ~64 MiB of ring buffers over PCIe.", "engine", lo=0, hi=1e12),
    _inp("moe_pad_hidden", "MoE kernel tile: hidden", "elements", 256, "MXFP4 MoE kernels pad each expert's hidden dimension to this multiple (vLLM: 256).", "engine", lo=1, hi=1e5, integer=True),
    _inp("moe_pad_intermediate", "MoE kernel tile: intermediate", "elements", 128, "MXFP4 MoE kernels pad each expert's intermediate dimension (per GPU) to this multiple (vLLM: 128).", "engine", lo=1, hi=1e5, integer=True),
    # workload
    _inp("input_tokens", "Input tokens per request", "tokens", 1024, "Prompt length S.", "workload", lo=1),
    _inp("output_tokens", "Output tokens per request", "tokens", 512, "Generated length T.", "workload", lo=1),
    _inp("concurrency", "Peak concurrent sequences", "sequences", 16, "Sequences in flight at the peak: plan KV for this, not the average.", "workload", lo=1),
    # efficiency
    _inp("prefill_efficiency", "Prefill compute efficiency", "fraction", 0.5, "Achieved share of dense peak in prefill; the seed assumes ~50% (MFU of large GEMMs).", "efficiency", arg="efficiency"),
    _inp("bw_efficiency", "Decode bandwidth efficiency", "fraction", 0.8, "Achieved share of peak HBM bandwidth when streaming weights; STREAM-like kernels reach ~80-90% on H100.", "efficiency", arg="efficiency"),
    _inp("decode_compute_efficiency", "Decode compute efficiency", "fraction", 0.5, "Achieved share of dense peak in large-batch decode GEMMs.", "efficiency", arg="efficiency"),
    _inp("allreduce_latency_seconds", "All-reduce latency", "s", 15e-6, "Fixed cost of one small TP all-reduce (launch + synchronise over NVLink, ~10-20 us for NCCL/custom all-reduce); two per layer per decode step.", "efficiency", lo=0, hi=1),
    _inp("layer_overhead_seconds", "Per-layer kernel overhead", "s", 20e-6, "Fixed time per layer per decode step beyond streaming weights: ~10 small kernels (norms, rotary, attention, activation) at a few us each.", "efficiency", lo=0, hi=1),
    _inp("step_overhead_seconds", "Per-step overhead", "s", 0.2e-3, "Fixed time per decode step outside the layers: embedding, LM head launch, sampling and scheduling.", "efficiency", lo=0, hi=10),
    # cost
    _inp("price_per_gpu_hour", "Price per GPU-hour", "$/GPU-h", 2.5, "What one GPU costs for an hour (list, reserved or internal rate).", "cost"),
    _inp("requests_per_day", "Requests per day", "requests/day", 1_000_000, "Forecast load for the monthly bill.", "cost"),
    # targets
    _inp("ttft_target", "TTFT target", "s", 0.5, "Time to first token the service promises.", "target", arg="seconds"),
    _inp("tpot_target", "TPOT target", "s", 0.05, "Time per output token the service promises.", "target", arg="seconds"),
    _inp("target_qps", "Target QPS", "requests/s", 20, "Requests per second the service must sustain at peak (sizes replicas by Little's law).", "target", arg="qps"),
    # finance: own vs rent, and the timeline's growth (udfs.finance; GPU rows from udfs/data/gpu_costs.csv)
    _inp("server_price_per_gpu", "Server price per GPU", "$/GPU", 33750, "A whole server's price / its GPUs (GPU costs sheet: DGX H100 ~$270k / 8, SemiAnalysis 2023).", "finance", lo=0, hi=1e8, lo_inclusive=False),
    _inp("gpu_power_w", "GPU power (TDP)", "W", 700, "Board power of one GPU at work (datasheet TDP; GPU costs sheet).", "finance", lo=0, hi=1e5),
    _inp("server_power_w_per_gpu", "Rest of the server per GPU", "W", 575, "CPUs, NICs, fans per GPU: (server max - GPUs x TDP) / GPUs; DGX H100 (10.2 kW - 8 x 700 W) / 8.", "finance", lo=0, hi=1e5),
    _inp("gpus_per_server", "GPUs per server", "GPUs", 8, "GPUs in one server: purchases come in whole servers (HGX / DGX: 8).", "finance", lo=1, hi=1024, integer=True),
    _inp("depreciation_years", "Depreciation years", "years", 5, "Years the capex is recovered over (servers are commonly depreciated over 4-6 years).", "finance", lo=0, hi=50, lo_inclusive=False),
    _inp("cost_of_capital", "Cost of capital", "fraction/year", 0.08, "Yearly rate the capex is financed at (WACC): the annuity and the timeline's NPV use it.", "finance", lo=0, hi=1, lo_inclusive=False),
    _inp("pue", "PUE", "x", 1.4, "Facility power / IT power (The Green Grid); Uptime Institute 2023 survey average 1.58, hyperscale ~1.1.", "finance", lo=1, hi=5),
    _inp("electricity_price", "Electricity price", "$/kWh", 0.08, "Price of a kWh at the facility (US EIA 2023 industrial average ~8 cents/kWh).", "finance", lo=0, hi=10),
    _inp("hosting_per_kw_month", "Hosting per kW-month", "$/kW-month", 150, "Colocation charge per kW of IT load per month, power excluded (CBRE data-center trends: ~$150-250/kW-month).", "finance", lo=0, hi=1e5),
    _inp("support_fraction", "Support and software per year", "fraction/year", 0.1, "Support contracts and software per year as a share of capex (NVIDIA DGX support list ~20% of base price a year; OEM less).", "finance", lo=0, hi=1),
    _inp("utilization", "Utilization", "fraction", 0.6, "Share of the hours an owned or reserved GPU does useful work (on demand and spot bill only used hours).", "finance", lo=0, hi=1, lo_inclusive=False),
    _inp("reserved_1y_discount", "1-year reserved discount", "fraction", 0.3, "Off on demand for a 1-year commitment (RunPod H100 reserved $1.94 vs $2.69: 28%; providers quote 30-55%).", "finance", lo=0, hi=0.99),
    _inp("reserved_3y_discount", "3-year reserved discount", "fraction", 0.45, "Off on demand for a 3-year commitment (the upper half of the 30-55% providers quote, computingpower.org 2026).", "finance", lo=0, hi=0.99),
    _inp("spot_discount", "Spot discount", "fraction", 0.6, "Off on demand on spot / preemptible capacity (50-80% quoted; interruptible).", "finance", lo=0, hi=0.99),
    _inp("use_spot", "Count spot in the cheapest option", "1/0", 0, "1 = spot may be the cheapest option (only for work that survives interruption).", "finance", lo=0, hi=1, integer=True),
    _inp("growth", "Demand growth per month", "fraction/month", 0.05, "Compound monthly growth of the target QPS and requests per day (Forecast sheet).", "finance", lo=-0.5, hi=5),
    _inp("headroom_target", "Headroom over the peak", "fraction", 0.2, "Spare capacity the forecast provisions above each month's peak QPS.", "finance", lo=0, hi=10),
    _inp("lead_time_months", "Server lead time", "months", 3, "Months from order to service: purchases arrive no earlier.", "finance", lo=0, hi=120, integer=True),
    _inp("servers_owned_start", "Servers owned at the start", "servers", 0, "Servers already in service in month 1.", "finance", lo=0, hi=1e6, integer=True),
)

INPUT_BY_NAME: dict[str, Input] = {i.name: i for i in INPUTS}


def _lines() -> tuple[Line, ...]:
    M, C, B, K, F = "memory", "compute", "bandwidth", "cost", "fit"
    return (
        # --- memory -------------------------------------------------------------
        Line("weights_bytes", "Weights", "B", M,
             "Resident weights: quantized layers at the weight dtype, the rest at BF16 (seed: W = N x bytes).",
             lambda v: L.weights_bytes_mixed(v.num_params, v.quantized_params, v.weight_bytes, v.unquantized_bytes)),
        Line("moe_padding_bytes_per_gpu", "MoE kernel padding per GPU", "B", M,
             "Experts padded to the MoE kernel's tile: L x E x 3 x (padded - actual hidden x intermediate / TP) x bytes.",
             lambda v: E.moe_padding_bytes_per_gpu(v.num_layers, v.num_experts, v.hidden_size, v.intermediate_size, v.tp,
                                                   v.moe_pad_hidden, v.moe_pad_intermediate, v.weight_bytes)),
        Line("weights_bytes_per_gpu", "Weights per GPU", "B", M,
             "Tensor parallelism splits every weight matrix evenly over the TP GPUs; plus any MoE kernel padding.",
             lambda v: L.per_gpu(v.weights_bytes, v.tp) + v.moe_padding_bytes_per_gpu),
        Line("prefill_activation_bytes_per_gpu", "Prefill chunk activations per GPU", "B", M,
             "max_num_batched_tokens x bytes x ((3 + routed experts) x hidden + 3 x experts x intermediate / TP): the MLP's live tensors.",
             lambda v: E.prefill_activation_bytes(v.max_num_batched_tokens, v.hidden_size, v.intermediate_size,
                                                  v.experts_per_token, v.unquantized_bytes, v.tp)),
        Line("sampler_activation_bytes_per_gpu", "Sampler working set per GPU", "B", M,
             "max_num_seqs x vocab x sampler bytes per logit: the profile samples one logits row per sequence.",
             lambda v: E.sampler_activation_bytes(v.max_num_seqs, v.vocab_size, v.sampler_bytes_per_logit)),
        Line("activation_peak_bytes_per_gpu", "Activation peak per GPU", "B", M,
             "The larger of the prefill chunk and the sampler (they run one after the other in the engine's profile).",
             lambda v: E.activation_peak_bytes(v.prefill_activation_bytes_per_gpu, v.sampler_activation_bytes_per_gpu)),
        Line("non_torch_bytes_per_gpu", "Non-torch memory per GPU", "B", M,
             "CUDA context, plus NCCL buffers when TP > 1.",
             lambda v: E.non_torch_bytes(v.cuda_context_bytes, v.nccl_bytes, v.tp)),
        Line("workspace_bytes_per_gpu", "Workspace per GPU", "B", M,
             "Activation peak + non-torch memory: what the engine keeps beside weights and KV.",
             lambda v: v.activation_peak_bytes_per_gpu + v.non_torch_bytes_per_gpu),
        Line("kv_cache_budget_bytes_per_gpu", "KV cache budget per GPU (engine)", "B", M,
             "The engine's documented rule (kv_budget_rule); negative means the engine refuses to start.",
             lambda v: E.kv_budget_bytes(v.kv_budget_rule, v.gpu_memory_bytes, v.gpu_memory_utilization,
                                         v.weights_bytes_per_gpu, v.activation_peak_bytes_per_gpu,
                                         v.non_torch_bytes_per_gpu)),
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
             "What the engine's KV budget has left after the peak KV (negative = does not fit); under vLLM's rule this is usable memory - total.",
             lambda v: v.kv_cache_budget_bytes_per_gpu - v.kv_bytes_per_gpu),
        Line("memory_total_bytes", "Total memory, all GPUs", "B", M,
             "Weights + peak KV + one workspace per GPU.",
             lambda v: L.memory_total_bytes(v.weights_bytes, v.kv_bytes_per_sequence, v.concurrency,
                                            v.workspace_bytes_per_gpu * v.tp)),
        Line("gpus_needed", "GPUs needed (seed rule)", "GPUs", M,
             "Fewest GPUs, as a power-of-two TP degree, whose usable memory holds weights + peak KV.",
             lambda v: L.gpus_needed(v.weights_bytes + v.kv_bytes_peak, v.gpu_memory_bytes,
                                     v.gpu_memory_utilization, v.workspace_bytes_per_gpu)),
        Line("kv_capacity_tokens", "KV tokens that fit", "tokens", M,
             "Whole tokens of KV the engine's KV budget holds per GPU (its log: 'GPU KV cache size: N tokens').",
             lambda v: maximum(floor(v.kv_cache_budget_bytes_per_gpu / v.kv_bytes_per_token_per_gpu), 0)),
        Line("max_concurrency", "Max concurrency at this context", "sequences", M,
             "Whole sequences of this context the KV budget holds: KV budget / KV per sequence per GPU (sliding windows included).",
             lambda v: Q.max_sequences(v.kv_cache_budget_bytes_per_gpu, v.kv_bytes_per_sequence / v.kv_shards)),
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
        Line("allreduce_seconds_per_step", "TP all-reduce time per step", "s", B,
             "2 all-reduces per layer x (latency + 2 (TP-1)/TP x batch x hidden x bytes / interconnect); 0 at TP 1.",
             lambda v: E.allreduce_seconds(v.tp, v.num_layers, v.allreduce_latency_seconds,
                                           v.concurrency * v.hidden_size * v.unquantized_bytes, v.interconnect_bw)),
        Line("decode_overhead_seconds", "Decode overhead per step", "s", B,
             "Layers x per-layer kernel overhead + per-step overhead.",
             lambda v: E.decode_overhead_seconds(v.num_layers, v.layer_overhead_seconds, v.step_overhead_seconds)),
        Line("tpot_seconds", "TPOT expected", "s", B,
             "Roofline at achievable bandwidth and compute efficiencies + TP all-reduces + per-layer and per-step overhead.",
             lambda v: L.decode_step_seconds(v.decode_bytes_per_step_per_gpu, v.decode_flops_per_step_per_gpu,
                                             v.hbm_bw, v.peak_flops, v.bw_efficiency, v.decode_compute_efficiency)
             + v.allreduce_seconds_per_step + v.decode_overhead_seconds),
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
             "1 when the peak KV per GPU fits the engine's KV budget (weights, activations and non-torch taken out; a negative budget never fits).",
             lambda v: L.fits(v.kv_bytes_per_gpu, v.kv_cache_budget_bytes_per_gpu)),
        Line("kv_fits", "KV holds the peak concurrency", "1/0", F,
             "1 when the KV capacity holds the peak concurrency at full context.",
             lambda v: where(le(v.concurrency, v.max_concurrency), 1, 0)),
        Line("ttft_ok", "TTFT meets target", "1/0", F,
             "1 when expected TTFT <= target.",
             lambda v: where(le(v.ttft_seconds, v.ttft_target), 1, 0)),
        Line("tpot_ok", "TPOT meets target", "1/0", F,
             "1 when expected TPOT <= target.",
             lambda v: where(le(v.tpot_seconds, v.tpot_target), 1, 0)),
        # --- what QPS, and the inverses (udfs.whatif) -----------------------------
        Line("max_context_tokens", "Longest context that fits at this concurrency", "tokens", M,
             "Inverse of the memory ledger for the context: the KV budget shared by the sequences (sliding-window layers included).",
             lambda v: Q.max_context_tokens(v.kv_cache_budget_bytes_per_gpu, v.concurrency, v.kv_bytes_per_token_per_gpu,
                                            v.num_layers, v.sliding_layers, v.window)),
        *(Line(f"fits_tp{n}", f"Fits at TP {n}", "1/0", F,
               f"The fit test with the model split over {n} GPU(s): weights, activations, NCCL buffers and KV recomputed at TP {n}.",
               lambda v, k=k: at(v, "tp", Q.tp_candidates(v.tp)[k]).fits)
          for k, n in enumerate((1, 2, 4, 8))),
        Line("min_gpus_to_fit", "Fewest GPUs that fit (engine budget)", "GPUs", M,
             "Smallest TP degree within one 8-GPU node whose GPUs hold this load (0 = none does).",
             lambda v: Q.first_fit(Q.tp_candidates(v.tp), (v.fits_tp1, v.fits_tp2, v.fits_tp4, v.fits_tp8))),
        Line("decode_fixed_seconds", "Fixed decode time per step", "s", B,
             "The part of a step that does not grow with the batch: all-reduce latencies + per-layer and per-step overhead.",
             lambda v: v.decode_overhead_seconds + E.allreduce_seconds(v.tp, v.num_layers, v.allreduce_latency_seconds,
                                                                       0, v.interconnect_bw)),
        Line("allreduce_seconds_per_sequence", "All-reduce time per sequence", "s", B,
             "What each sequence adds to a step's all-reduces: its ring bytes over the interconnect.",
             lambda v: E.allreduce_seconds(v.tp, v.num_layers, 0, v.hidden_size * v.unquantized_bytes, v.interconnect_bw)),
        Line("tpot_max_batch", "Largest batch meeting the TPOT target", "sequences", B,
             "Inverse of the expected TPOT: the most sequences per step with expected TPOT <= target (0 = none).",
             lambda v: Q.tpot_max_batch(v.tpot_target - v.decode_fixed_seconds, v.weights_read_bytes / v.tp,
                                        v.kv_bytes_per_sequence / v.kv_shards
                                        + v.allreduce_seconds_per_sequence * v.hbm_bw * v.bw_efficiency,
                                        v.decode_flops_per_step_per_gpu / v.concurrency
                                        + v.allreduce_seconds_per_sequence * v.peak_flops * v.decode_compute_efficiency,
                                        v.hbm_bw, v.peak_flops, v.bw_efficiency, v.decode_compute_efficiency)),
        Line("serving_concurrency", "Concurrency meeting memory and TPOT", "sequences", B,
             "The most sequences in flight that both fit in memory and meet the TPOT target.",
             lambda v: minimum(v.max_concurrency, v.tpot_max_batch)),
        Line("qps_per_replica", "QPS per replica", "requests/s", B,
             "Little's law: concurrency / (TTFT + output tokens x TPOT).",
             lambda v: Q.qps_per_replica(v.concurrency, v.ttft_seconds, v.output_tokens, v.tpot_seconds)),
        Line("replicas_for_qps", "Replicas for the target QPS", "replicas", K,
             "Whole model copies whose QPS covers the target (at least one).",
             lambda v: L.replicas_needed(v.target_qps, v.qps_per_replica)),
        Line("gpus_for_qps", "GPUs for the target QPS", "GPUs", K,
             "Replicas x TP.",
             lambda v: v.replicas_for_qps * v.tp),
        Line("qps_capacity", "QPS the replicas sustain", "requests/s", K,
             "Replicas x QPS per replica.",
             lambda v: v.replicas_for_qps * v.qps_per_replica),
        Line("qps_headroom", "QPS headroom", "fraction", K,
             "Capacity over target, minus one: the spare share of the provisioned QPS.",
             lambda v: v.qps_capacity / v.target_qps - 1),
        Line("monthly_gpu_hours_qps", "Monthly GPU-hours for the target QPS", "GPU-h/month", K,
             "GPUs for the target QPS x 730 h.",
             lambda v: Q.monthly_gpu_hours(v.gpus_for_qps)),
        Line("monthly_cost_qps", "Monthly cost for the target QPS", "$/month", K,
             "GPUs for the target QPS x price x 730 h.",
             lambda v: L.monthly_cost(v.price_per_gpu_hour, v.gpus_for_qps)),
        # --- finance: own vs rent (udfs.finance) -----------------------------------
        Line("power_kw_per_gpu", "IT power per GPU", "kW", "finance", "GPU TDP + its share of the server, in kW.", lambda v: FI.power_kw(v.gpu_power_w, v.server_power_w_per_gpu)),
        Line("capital_recovery_factor", "Capital recovery factor", "1/year", "finance", "Annuity per 1 of capex: r / (1 - (1 + r)^-years).", lambda v: FI.capital_recovery_factor(v.cost_of_capital, v.depreciation_years)),
        Line("owned_fixed_cost_per_gpu_year", "Owned GPU: fixed cost per year", "$/GPU-year", "finance", "Capex x CRF + capex x support share + kW x hosting x 12: paid whether the GPU works or not.", lambda v: FI.owned_fixed_cost_per_year(v.server_price_per_gpu, v.capital_recovery_factor, v.support_fraction, v.power_kw_per_gpu, v.hosting_per_kw_month)),
        Line("owned_energy_cost_per_gpu_hour", "Owned GPU: energy per working hour", "$/GPU-h", "finance", "kW x PUE x price per kWh.", lambda v: FI.energy_cost_per_hour(v.power_kw_per_gpu, v.pue, v.electricity_price)),
        Line("owned_cost_per_gpu_hour", "Owned cost per used GPU-hour", "$/GPU-h", "finance", "Fixed cost / (8760 h x utilization) + energy.", lambda v: FI.owned_cost_per_gpu_hour(v.owned_fixed_cost_per_gpu_year, v.owned_energy_cost_per_gpu_hour, v.utilization)),
        Line("owned_cost_per_million_output_tokens", "Owned cost per million output tokens", "$/Mtok", "finance", "The plan's $/Mtok at the owned cost per used GPU-hour.", lambda v: FI.cost_per_million_tokens(v.owned_cost_per_gpu_hour, v.tp, v.tokens_per_second)),
        Line("breakeven_utilization", "Break-even utilization (own vs on demand)", "fraction", "finance", "Utilization above which owning costs less per used hour than on demand; negative or over 100%: never.", lambda v: FI.breakeven_utilization(v.owned_fixed_cost_per_gpu_year, v.owned_energy_cost_per_gpu_hour, v.price_per_gpu_hour)),
        Line("owned_beats_rent", "Owning beats on demand", "1/0", "finance", "1 when the utilization reaches the break-even.", lambda v: FI.own_beats_rent(v.utilization, v.breakeven_utilization)),
        Line("owned_running_cost_per_gpu_month", "Owned GPU: running cash per month", "$/month", "finance", "Support / 12 + kW x hosting + energy x 730 h x utilization: what it costs once bought.", lambda v: FI.running_cost_per_month(v.server_price_per_gpu, v.support_fraction, v.power_kw_per_gpu, v.hosting_per_kw_month, v.owned_energy_cost_per_gpu_hour, v.utilization)),
        Line("payback_months", "Months of use for owning to pay back", "months", "finance", "Server price / (on-demand bill - running cash) per month at this utilization; undiscounted; negative: never.", lambda v: FI.payback_months(v.server_price_per_gpu, v.owned_running_cost_per_gpu_month, v.price_per_gpu_hour, v.utilization)),
        Line("reserved_1y_price_per_gpu_hour", "1-year reserved rate", "$/GPU-h", "finance", "On demand x (1 - 1-year discount), paid for every hour.", lambda v: FI.discounted(v.price_per_gpu_hour, v.reserved_1y_discount)),
        Line("reserved_3y_price_per_gpu_hour", "3-year reserved rate", "$/GPU-h", "finance", "On demand x (1 - 3-year discount), paid for every hour.", lambda v: FI.discounted(v.price_per_gpu_hour, v.reserved_3y_discount)),
        Line("spot_price_per_gpu_hour", "Spot rate", "$/GPU-h", "finance", "On demand x (1 - spot discount), paid per used hour; interruptible.", lambda v: FI.discounted(v.price_per_gpu_hour, v.spot_discount)),
        Line("reserved_1y_cost_per_gpu_hour", "1-year reserved per used GPU-hour", "$/GPU-h", "finance", "Reserved rate / utilization.", lambda v: FI.committed_cost_per_used_hour(v.reserved_1y_price_per_gpu_hour, v.utilization)),
        Line("reserved_3y_cost_per_gpu_hour", "3-year reserved per used GPU-hour", "$/GPU-h", "finance", "Reserved rate / utilization.", lambda v: FI.committed_cost_per_used_hour(v.reserved_3y_price_per_gpu_hour, v.utilization)),
        Line("best_cost_per_gpu_hour", "Cheapest cost per used GPU-hour", "$/GPU-h", "finance", "The least of on demand, 1- and 3-year reserved, owned (and spot when counted).", lambda v: FI.cheapest_option(v.price_per_gpu_hour, v.reserved_1y_cost_per_gpu_hour, v.reserved_3y_cost_per_gpu_hour, v.owned_cost_per_gpu_hour, v.spot_price_per_gpu_hour, v.use_spot)),
        Line("best_cost_per_million_output_tokens", "Cheapest cost per million output tokens", "$/Mtok", "finance", "The plan's $/Mtok at the cheapest cost per used GPU-hour.", lambda v: FI.cost_per_million_tokens(v.best_cost_per_gpu_hour, v.tp, v.tokens_per_second)),
        Line("owned_monthly_cost_qps", "Monthly cost of owning the QPS fleet", "$/month", "finance", "GPUs for the target QPS x (fixed cost / 12 + energy x 730 h x utilization).", lambda v: FI.monthly_fleet_cost(v.gpus_for_qps, v.owned_fixed_cost_per_gpu_year, v.owned_energy_cost_per_gpu_hour, v.utilization)),
    )


LINES: tuple[Line, ...] = _lines()
LINE_BY_NAME: dict[str, Line] = {l.name: l for l in LINES}
NAMES: tuple[str, ...] = tuple(i.name for i in INPUTS) + tuple(l.name for l in LINES)


class _At:
    """The plan's quantities with one input set to another value (see :func:`at`)."""

    def __init__(self, v, name: str, value):
        self._v, self._name, self._value, self._memo = v, name, value, {}

    def __getattr__(self, n):
        if n.startswith("_"):
            raise AttributeError(n)
        if n == self._name:
            return self._value
        if n in LINE_BY_NAME and _depends_on(n, self._name):
            if n not in self._memo:
                self._memo[n] = LINE_BY_NAME[n].fn(self)
            return self._memo[n]
        return getattr(self._v, n)


def at(v, name: str, value):
    """``v`` with input ``name`` set to ``value``: lines that depend on it are recomputed (inlined
    in a rendered formula), every other quantity reads as usual.  ``at(v, "tp", 2).fits`` asks
    "would it fit at TP 2" inside one cell formula: no Goal Seek, no iteration."""
    return _At(v, name, value)


@functools.lru_cache(maxsize=None)
def _depends_on(line: str, name: str) -> bool:
    return any(d == name or (d in LINE_BY_NAME and _depends_on(d, name)) for d in dependencies(line))


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

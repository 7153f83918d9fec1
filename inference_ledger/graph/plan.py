"""The plan: its inputs (with units, defaults and ranges) and its lines, as one graph of named quantities.

Each line is a plain function (:mod:`inference_ledger.graph.plan_lines`, the formulas' ``*_lines`` modules) whose
parameters name the inputs and lines it uses; the graph comes from those signatures.  Every adapter shares it:
``evaluate(inputs)`` calls the functions in dependency order, a family of lines (the fit test at each TP degree) once
per candidate (``plan``, the workbook's cached values, sweeps over numpy arrays); ``render(line, ref)`` calls them
with Excel references for their formulas (``ref``: where each quantity lives).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional

import numpy as np

from inference_ledger.graph import band_lines, plan_lines, rules, verdict
from inference_ledger.catalogs import bands, catalog_facts, engines
from inference_ledger.formulas import (engine_ledger, finance, kernels, ledger, parallel, serving_lines,
                                       step_inverse_lines, step_lines, whatif_lines)
from inference_ledger.core.args import ARGS, Arg, LedgerInputError
from inference_ledger.core.codes import Codes, registered
from inference_ledger.core.expr import Sym
from inference_ledger.core.refs import reference
from inference_ledger.core.line import Family, Line, lines_of, shown_with_readers
from inference_ledger.formulas.serving import load_efficiencies
from inference_ledger.core.units import BYTES_PER_GIB


@dataclass(frozen=True)
class Input:
    """A named input of the plan, with its validation range and default."""

    name: str
    label: str
    unit: str
    default: Optional[float]
    doc: str
    group: str  # one of INPUT_GROUPS
    arg: Arg


#: The catalog facts of the default model on the default GPU (llama-3.1-70b on an h100-sxm, catalogs.catalog_facts):
#: the default of every input the catalog fills, so a plan with no model or GPU chosen is that one's.
CATALOG_DEFAULTS = catalog_facts.default_facts()
CATALOG = object()   #: an input's default that is the default model's or GPU's catalog fact of the same name


def _kernel_curve_inputs(*ops: tuple[str, str, str]) -> list:
    """Each operation's two measured-curve inputs (:func:`inference_ledger.formulas.kernels.op_input_names`): its floor
    and its time per unit, read by the resolver from data/kernels (0 and unused without tables)."""
    out = []
    for op, what, per in ops:
        floor, rate = kernels.op_input_names(op)
        where = " (M) at large M" if per == "token" else ""   # a GEMM's time per token is its slope at large M
        out += [_inp(floor, f"{what}: floor", "s", 0, f"Measured latency of the {what} at its smallest size "
                     "(data/kernels; 0 without tables).", "kernel", lo=0, hi=10),
                _inp(rate, f"{what}: time per {per}", "s/B" if per.endswith("byte") else "s", 0, f"Measured time of "
                     f"the {what} per {per}{where} (data/kernels; 0 without tables).", "kernel", lo=0, hi=10)]
    return out


def _inp(name, label, unit, default, doc, group, lo=None, hi=None, integer=None, lo_inclusive=None, arg=None):
    default = CATALOG_DEFAULTS[name] if default is CATALOG else default
    base = ARGS.get(arg or name) or Arg(name, doc, unit, 0.0, 1e18)
    kw = {k: v for k, v in (("lo", lo), ("hi", hi), ("integer", integer), ("lo_inclusive", lo_inclusive)) if v is not None}
    a = Arg(name, doc, unit, kw.get("lo", base.lo), kw.get("hi", base.hi),
            kw.get("lo_inclusive", base.lo_inclusive), kw.get("integer", base.integer), default)
    return Input(name, label, unit, default, doc, group, a)


GIB = float(BYTES_PER_GIB)
#: The default GPU's figures (its catalog row: an 80 GB H100 SXM is 79.19 GiB at runtime, NVLink 4) and the default TP.
DEFAULT_GPU_MEMORY, DEFAULT_INTERCONNECT = CATALOG_DEFAULTS["gpu_memory_bytes"], CATALOG_DEFAULTS["interconnect_bw"]
DEFAULT_TP = 4
#: The engine inputs' defaults: the default engine's row of inference_ledger/data/engines.csv for that GPU and TP
#: (one definition: `plan` without --gpu and the engine's own figures agree).
ENGINE = engines.engine_inputs(engines.DEFAULT_ENGINE, gpu_memory_bytes=DEFAULT_GPU_MEMORY,
                               interconnect_bw=DEFAULT_INTERCONNECT, gpu_id="", tp=DEFAULT_TP)
#: Band defaults: the default deployment's segment (the default engine on the default GPU, a dense model) of
#: inference_ledger/data/error_bands.csv; a resolved plan takes its own segment's.
BAND = bands.band_inputs(None, None, engines.DEFAULT_ENGINE)
_BAND_DOC = ("Multiplies the plan's {what}: the {q}th percentile of measured / predicted over the held-out published load rows "
             f"of the plan's segment ({bands.SEGMENT_WORDS}; data/error_bands.csv). About 80% of new "
             "measurements should fall inside the low-high band.")
#: Efficiency defaults, each with its source row in inference_ledger/data/efficiencies.csv.
EFF = {k: e.value for k, e in load_efficiencies().items()}

INPUTS: tuple[Input, ...] = (
    # model (from the Models catalog)
    _inp("num_params", "Total parameters", "params", CATALOG, "All weights, every expert included: what memory holds.", "model"),
    _inp("active_params", "Active parameters per token", "params", CATALOG, "Weights one token multiplies (MoE: routed + shared experts; never the input embedding table, a one-row gather); drives FLOPs and bytes read.", "model"),
    _inp("quantized_params", "Parameters in quantizable layers", "params", CATALOG, "Weights the weight dtype applies to (linear layers); the rest (embeddings, norms, routers) stay BF16.", "model", lo=0, lo_inclusive=True, arg="num_params"),
    _inp("active_quantized_params", "Active parameters in quantizable layers", "params", CATALOG, "The quantizable share of the active parameters.", "model", lo=0, lo_inclusive=True, arg="num_params"),
    _inp("num_layers", "Layers", "layers", CATALOG, "Transformer blocks (num_hidden_layers).", "model"),
    _inp("kv_heads", "KV heads", "heads", CATALOG, "Key/value heads per layer; GQA makes this smaller than the query heads.", "model"),
    _inp("num_attention_heads", "Attention heads", "heads", CATALOG, "Query heads per layer (num_attention_heads): heads / KV heads is the query group a GQA-aware decode kernel reads each KV head once for.", "model", lo=1, hi=1e5, integer=True),
    _inp("head_dim", "Head dimension", "elements", CATALOG, "Width of one attention head.", "model"),
    _inp("mla_latent_dim", "MLA latent width (0 = none)", "elements", CATALOG, "DeepSeek MLA caches kv_lora_rank + qk_rope_head_dim per layer instead of 2*K*H.", "model", arg="kv_lora_rank"),
    _inp("sliding_layers", "Sliding-window layers", "layers", CATALOG, "Layers whose KV is capped at the window.", "model"),
    _inp("window", "Sliding window", "tokens", CATALOG, "Tokens a sliding-window layer keeps.", "model"),
    _inp("hidden_size", "Hidden size", "elements", CATALOG, "Width of the residual stream (hidden_size): the activations and all-reduce messages of every token.", "model", lo=1, hi=1e6, integer=True),
    _inp("intermediate_size", "MLP / expert width", "elements", CATALOG, "intermediate_size of the MLP (of one expert for a MoE): the widest activation of a prefill chunk.", "model", lo=1, hi=1e7, integer=True),
    _inp("dense_intermediate_size", "Dense-layer MLP width (0 = the MLP width)", "elements", CATALOG, "A MoE model's dense layers' MLP width (DeepSeek-V3's first 3 layers 18,432; Llama-4 Maverick's intermediate_size_mlp 16,384); 0: intermediate_size.", "model", lo=0, hi=1e7, integer=True),
    _inp("shared_intermediate_size", "Shared-expert width per MoE layer (0 = none)", "elements", CATALOG, "Gate/up + down width of the shared experts every token of a MoE layer passes through (n_shared_experts x moe_intermediate_size; Llama-4: one expert's width).", "model", lo=0, hi=1e7, integer=True),
    _inp("vocab_size", "Vocabulary", "tokens", CATALOG, "Logits per sequence: the sampler's working set is max_num_seqs x vocab.", "model", lo=1, hi=1e8, integer=True),
    _inp("num_experts", "Routed experts (0 = dense)", "experts", CATALOG, "Experts per MoE layer; their matrices are padded to the MoE kernel's tile.", "model", lo=0, hi=1e5, integer=True),
    _inp("experts_per_token", "Experts per token (0 = dense)", "experts", CATALOG, "Routed experts a token visits: each keeps its own MLP activations in prefill.", "model", lo=0, hi=1e4, integer=True),
    _inp("moe_layers", "MoE layers (0 = dense)", "layers", CATALOG, "Layers whose MLP is routed experts (DeepSeek's first layers and Llama-4 Maverick's every other layer are dense): what expert parallelism splits.", "model", lo=0, hi=1e4, integer=True),
    # precision
    _inp("weight_bytes", "Weight bytes per parameter", "B/param", CATALOG, "From the weight dtype, group scales included (BF16 2, FP8 1, INT4 g128 0.515625).", "precision"),
    _inp("unquantized_bytes", "Bytes per unquantized parameter", "B/param", CATALOG, "Embeddings, norms and routers stay in BF16 when the linear layers are quantized.", "precision", arg="weight_bytes"),
    _inp("moe_kernel_pads", "MoE kernels pad the experts", "1/0", CATALOG, "From the weight dtype: 1 when its MoE kernels pad each expert to the engine's tile (MXFP4), 0 when they run the experts at their own shapes (BF16, FP8).", "precision", arg="weight_dtype", lo=0, hi=1, integer=True),
    _inp("kv_bytes", "KV bytes per element", "B", CATALOG, "From the KV-cache dtype (BF16 2, FP8 1, INT4 0.5).", "precision"),
    # GPU (from the GPUs catalog)
    _inp("gpu_memory_bytes", "GPU memory (runtime)", "B", CATALOG, "Memory as CUDA/torch report it, below the marketing figure (an 80 GB H100 is 79.19 GiB).", "gpu"),
    _inp("hbm_bw", "HBM bandwidth", "B/s", CATALOG, "Peak memory bandwidth of one GPU (datasheet).", "gpu"),
    _inp("peak_flops", "Dense peak FLOP/s", "FLOP/s", CATALOG, "Dense tensor throughput at the compute dtype; vendors headline sparse (2x).", "gpu"),
    _inp("gpus_per_node", "GPUs per node", "GPUs", CATALOG, "GPUs one node of this GPU's platform holds (8 on HGX/OAM baseboards): tensor parallelism stays within it.", "gpu", lo=1, hi=1024, integer=True),
    _inp("scaleout_bw", "Scale-out bandwidth per GPU", "B/s", CATALOG, "Network bandwidth per GPU per direction between nodes (400 Gb/s InfiniBand NDR = 50 GB/s): PP hand-offs, EP all-to-all and KV transfers that leave the node.", "gpu", lo=0, hi=1e14, lo_inclusive=False),
    _inp("interconnect_bw", "Interconnect bandwidth", "B/s", CATALOG, "GPU-to-GPU link bandwidth per direction (NVLink 4: 450 GB/s; PCIe Gen4 x16: 32 GB/s): the bytes of each TP all-reduce.", "gpu", lo=0, hi=1e14, lo_inclusive=False),
    # deployment
    _inp("tp", "Tensor-parallel degree", "GPUs", DEFAULT_TP, "GPUs each layer's attention heads and dense matrices are split across (within one node).", "deployment"),
    _inp("pp", "Pipeline stages", "stages", 1, "Pipeline-parallel degree: the layers split into this many stages, each on its own tp x dp_attention GPUs (vLLM/SGLang --pipeline-parallel-size).", "deployment", lo=1, hi=256, integer=True),
    _inp("ep", "Expert-parallel degree", "GPUs", 1, "GPUs of a stage that hold whole experts (1 = experts split like dense layers); must divide the experts and the stage's GPUs.", "deployment", lo=1, hi=4096, integer=True),
    _inp("redundant_experts", "Redundant experts (EPLB)", "experts", 0, "Extra copies of hot experts per MoE layer that expert-parallel load balancing places (DeepSeek: 32; SGLang --ep-num-redundant-experts, vLLM --num-redundant-experts): EP divides routed + redundant experts.", "deployment", lo=0, hi=1e5, integer=True),
    _inp("dp_attention", "Attention data-parallel ranks", "ranks", 1, "DP-attention ranks per stage, each with its own sequences and attention weights, sharing the MoE layers (SGLang --enable-dp-attention, vLLM --data-parallel-size with expert parallelism).", "deployment", lo=1, hi=4096, integer=True),
    _inp("allreduce_through_host", "All-reduces through host memory (1 yes, 0 no)", "1/0", 0, "1: the GPUs have no peer-to-peer path (PCIe without P2P, GPUs in separate containers), so NCCL passes every TP all-reduce through host memory and vLLM's custom all-reduce is off (its log: 'Custom allreduce is disabled because your platform lacks GPU P2P capability'); 0: NVLink or PCIe peer-to-peer.", "deployment", lo=0, hi=1, integer=True),
    _inp("batching", "Batching (1 continuous, 2 static)", "code", 1, "1 continuous: a client keeps the concurrency in flight and new prompts are prefilled in chunks between decode steps (vLLM, SGLang, TensorRT-LLM in-flight batching); 2 static: one batch prefilled, then decoded together (plan --batching continuous|static).", "deployment", lo=1, hi=2, integer=True),
    _inp("gpu_memory_utilization", "GPU memory utilization", "fraction", ENGINE["gpu_memory_utilization"], "Share of GPU memory the engine may use (vLLM gpu_memory_utilization, default 0.9).", "deployment"),
    # engine (data/engines.csv via catalogs.engines.engine_inputs; defaults: vLLM V1 on an H100)
    _inp("kv_budget_rule", "Engine KV budget rule", "code", ENGINE["kv_budget_rule"], "How the engine sizes its KV cache: 1 vLLM (utilization x total - weights - activations - non-torch), 2 SGLang (mem_fraction_static x (total - non-torch) - weights), 3 TensorRT-LLM (fraction x memory free after weights).", "engine", lo=1, hi=3, integer=True),
    _inp("max_num_batched_tokens", "Prefill chunk (max_num_batched_tokens)", "tokens", ENGINE["max_num_batched_tokens"], "Tokens the engine's memory profile runs in one forward pass: vLLM V1 8192 on >=70 GiB GPUs (2048 on smaller and A100), V0 max(max_model_len, 2048).", "engine", lo=1, hi=1e8, integer=True),
    _inp("max_num_seqs", "Sequences per step (max_num_seqs)", "sequences", ENGINE["max_num_seqs"], "Sequences the engine batches; its profile samples one logits row each (vLLM V1: 1024 on >=70 GiB GPUs, else 256).", "engine", lo=1, hi=1e6, integer=True),
    _inp("sampler_bytes_per_logit", "Sampler bytes per logit", "B", ENGINE["sampler_bytes_per_logit"], "Bytes the sampler keeps per logits element at its peak in the engine's memory profile (engines.csv: vLLM 0.19 20 B; vLLM 0.9's top-k/top-p path 40 B: logits, sort values + int64 indices, softmax, cumsum, noise).", "engine", lo=0, hi=1e3),
    _inp("cuda_context_bytes", "CUDA context (non-torch, TP 1)", "B", ENGINE["cuda_context_bytes"], "Memory outside PyTorch's allocator at TP 1 that the engine's budget subtracts (engines.csv: vLLM 0.19 counts only the cuBLAS workspace, 162 MiB; vLLM 0.9 logs non_torch_memory 0.35 GiB, vllm#10517).", "engine", lo=0, hi=1e12),
    _inp("nccl_bytes", "NCCL buffers (TP > 1)", "B", ENGINE["nccl_bytes"], "Extra non-torch memory when TP > 1 that the budget subtracts (engines.csv): NVLink-SHARP buffers on NVSwitch systems (vLLM 0.9 log: TP2 3.58 vs TP1 1.79 GiB on H100), ~64 MiB of ring buffers over PCIe; vLLM 0.19 snapshots after NCCL starts (0).", "engine", lo=0, hi=1e12),
    _inp("moe_pad_hidden", "MoE kernel tile: hidden", "elements", ENGINE["moe_pad_hidden"], "MXFP4 MoE kernels pad each expert's hidden dimension to this multiple. 256, with 128 for the intermediate, reproduces vLLM's measured load of gpt-oss-120b on one H100 (65.97 GiB, vllm#23278); vLLM's own rule is per kernel backend (Blackwell FlashInfer 256, Marlin 256, Hopper Triton none).", "engine", lo=1, hi=1e5, integer=True),
    _inp("moe_pad_intermediate", "MoE kernel tile: intermediate", "elements", ENGINE["moe_pad_intermediate"], "MXFP4 MoE kernels pad each expert's intermediate dimension (per GPU) to this multiple. 128, with 256 for the hidden, reproduces vLLM's measured load of gpt-oss-120b on one H100 (65.97 GiB, vllm#23278); vLLM's own rule is per kernel backend (Blackwell FlashInfer 256, Marlin 128, Hopper Triton 64).", "engine", lo=1, hi=1e5, integer=True),
    # workload
    _inp("input_tokens", "Input tokens per request", "tokens", 1024, "Prompt length S.", "workload", lo=1),
    _inp("output_tokens", "Output tokens per request", "tokens", 512, "Generated length T.", "workload", lo=1),
    _inp("benchmark_requests", "Requests per benchmark run", "requests", 1000, "N, the requests a serving benchmark sends at the concurrency (vLLM benchmarks/benchmark_serving.py and vllm bench serve --num-prompts default 1000; SGLang bench_serving --num-prompts default 1000): ttft_seconds is their mean TTFT.", "workload", lo=1, hi=1e9, integer=True),
    _inp("benchmark_fixed_lengths", "Benchmark lengths fixed (1 yes, 0 drawn)", "1/0", 1, "1: every request of the benchmark has the same prompt and output lengths (vllm bench serve's random dataset at its default --random-range-ratio 0 with --ignore-eos; SGLang bench_serving --random-range-ratio 1); 0: lengths drawn per request (InferenceX's --random-range-ratio 0.8), so a cycle's requests finish apart and a wave does not come back.", "workload", lo=0, hi=1, integer=True),
    _inp("concurrency", "Peak concurrent sequences", "sequences", 16, "Sequences in flight at the peak: plan KV for this, not the average.", "workload", lo=1),
    # efficiency
    _inp("prefill_efficiency", "Prefill compute efficiency", "fraction", EFF["prefill_efficiency"], "Achieved share of dense peak in prefill; the seed assumes ~50% (MFU of large GEMMs). Prices the prefill on the roofline (a GPU without measured kernel tables) and prefill attention on a GPU without attention tables (AMD). Source: data/efficiencies.csv.", "efficiency", arg="efficiency"),
    _inp("bw_efficiency", "Weight-streaming efficiency", "fraction", EFF["bw_efficiency"], "Achieved share of peak HBM bandwidth when a decode step streams the weights (75-78% measured on an H200 in bf16). Prices the weight reads on the roofline (a GPU without measured kernel tables); with tables, whose GEMMs read the weights, only the element-wise traffic. Source: data/efficiencies.csv.", "efficiency", arg="efficiency"),
    _inp("kv_read_efficiency", "KV-read efficiency", "fraction", EFF["kv_read_efficiency"], "Achieved share of peak HBM bandwidth when attention reads the KV cache (~90% when large, H200). Prices attention on the roofline and on a GPU without attention tables (AMD); measured attention tables otherwise. Source: data/efficiencies.csv.", "efficiency", arg="efficiency"),
    _inp("decode_compute_efficiency", "Compute efficiency at large batch", "fraction", EFF["decode_compute_efficiency"], "Achieved share of dense peak when a step's linear layers are compute-bound (large decode batch plus prefill chunks; 55-65% measured on an H200). Prices the step on the roofline only (a GPU without measured kernel tables). Source: data/efficiencies.csv.", "efficiency", arg="efficiency"),
    _inp("allreduce_latency_seconds", "All-reduce latency", "s", EFF["allreduce_latency_seconds"], "Fixed cost of one small TP all-reduce (launch + synchronise over NVLink, ~10-20 us for NCCL/custom all-reduce); two per layer per decode step.", "efficiency", lo=0, hi=1),
    _inp("host_allreduce_floor_seconds", "All-reduce floor through host memory", "s", EFF["host_allreduce_floor_seconds"], "Time of one small TP all-reduce that NCCL passes through host memory (its SHM transport: GPUs with no peer-to-peer path, nccl-tests all_reduce_perf on 2 GPUs). Prices every TP all-reduce's fixed part when allreduce_through_host is 1. Source: data/efficiencies.csv.", "efficiency", lo=0, hi=1),
    _inp("host_allreduce_bw", "All-reduce bus bandwidth through host memory", "B/s", EFF["host_allreduce_bw"], "Bus bandwidth of an all-reduce NCCL passes through host memory (nccl-tests busbw at MB messages, 2 GPUs): prices each TP all-reduce's bytes when allreduce_through_host is 1. Source: data/efficiencies.csv.", "efficiency", lo=0, hi=1e14, lo_inclusive=False),
    _inp("layer_overhead_seconds", "Per-layer kernel overhead", "s", EFF["layer_overhead_seconds"], "Fixed time per layer per decode step beyond streaming weights: ~10 small kernels (norms, rotary, attention, activation) at a few us each.", "efficiency", lo=0, hi=1),
    _inp("scaleout_latency_seconds", "Scale-out message latency", "s", EFF["scaleout_latency_seconds"], "Fixed cost of one message between GPUs of a parallel group (PP hand-off, one EP dispatch or combine): ~10 us (aiconfigurator p2p_latency).", "efficiency", lo=0, hi=1),
    _inp("step_overhead_seconds", "Per-step overhead", "s", EFF["step_overhead_seconds"], "Fixed time per decode step outside the layers: embedding, LM head launch, sampling and scheduling.", "efficiency", lo=0, hi=10),
    # kernels (formulas.kernels: each operation's measured floor and time per unit at the model's shapes, data/kernels)
    _inp("kernel_tables", "Kernel source (1 measured tables, 0 roofline)", "code", 0, "1: the step is priced per operation from the measured kernel tables of data/kernels (NVIDIA aiconfigurator-core's SILICON database; for AMD, ROCm/aiter's tuner tables and published all-reduce figures); 0: roofline fallback with the sourced efficiencies (a GPU, engine or weight format without tables).", "kernel", lo=0, hi=1, integer=True),
    _inp("kernel_hbm_bw", "HBM bandwidth the kernel tables were measured at", "B/s", 0, "The GPU's catalog bandwidth its kernel tables were measured at (0 without tables): a plan whose hbm_bw differs (a what-if) is priced on the roofline (kernel_priced).", "kernel", lo=0, hi=1e15),
    _inp("kernel_peak_flops", "Dense peak the kernel tables were measured at", "FLOP/s", 0, "The GPU's catalog dense peak at the weight format (0 without tables): a plan whose peak_flops differs (a what-if) is priced on the roofline (kernel_priced).", "kernel", lo=0, hi=1e18),
    _inp("kernel_active_params", "Active parameters the kernel tables' shapes stand for", "params", 0, "The model's catalog active parameters, whose shapes the kernel figures are read at (0 without tables): a plan whose active_params differs (a what-if on the model's size) is priced on the roofline (kernel_priced).", "kernel", lo=0, hi=1e15),
    _inp("chunked_prefill", "Chunked prefill (1 on, 0 whole prompts)", "1/0", ENGINE["chunked_prefill"], "1: the engine splits prompts into chunks that ride in the decode steps (vLLM V1, SGLang from 0.4); 0: each prompt runs whole as its own iteration and stalls the decoding sequences (TensorRT-LLM's enable_chunked_context off, vLLM V0 up to 32K max_model_len, SGLang 0.2-0.3; engines.csv).", "engine", lo=0, hi=1, integer=True),
    _inp("prefill_first", "Prompts before decodes (1 yes, 0 no)", "1/0", ENGINE["prefill_first"], "1: while prompts wait, the scheduler runs them before any decode step (SGLang's get_next_batch_to_run, 'Run prefill first if possible'; vLLM V0 without chunked prefill, 'Don't schedule decodes if prefills are scheduled'): the prompts a closed loop sends together decode and finish together; 0: running decodes first (vLLM V1, TensorRT-LLM's in-flight batching; engines.csv).", "engine", lo=0, hi=1, integer=True),
    _inp("kv_admission_reserve", "Output share reserved at admission", "fraction", ENGINE["kv_admission_reserve"], "Output tokens the scheduler reserves in the KV cache when it admits a request, as a share of its T: 1 reserves the whole S + T and never evicts (TensorRT-LLM's default GUARANTEED_NO_EVICT capacity policy); 0 admits on the prompt's blocks alone and preempts the newest running request when the cache runs out (vLLM); SGLang reserves new_token_ratio x the remaining output, 0.098 once the ratio has decayed (engines.csv).", "engine", lo=0, hi=1),
    _inp("overlap_scheduling", "Scheduler overlaps the GPU (1 yes, 0 no)", "1/0", ENGINE["overlap_scheduling"], "1: the engine prepares step n+1 on the CPU while the GPU runs step n (SGLang 0.4+, vLLM async scheduling by default after 0.11, TensorRT-LLM 1.0+ overlap scheduler): its CPU time hides under the step; 0: every step waits for it (engines.csv).", "engine", lo=0, hi=1, integer=True),
    _inp("scheduler_recv_interval", "Decode steps between the scheduler's reads of new requests", "steps", ENGINE["scheduler_recv_interval"], "I: the engine reads the requests that arrived only every I-th decode step, and at once after a prefill step (SGLang --scheduler-recv-interval, default 1: SchedulerRecvSkipper in sglang/srt/managers/scheduler_recv_skipper.py, sglang 0.5.6; vLLM and TensorRT-LLM read them before every step: 1; engines.csv). A request waits half a cycle on average: (I - 1) / 2 steps more in a closed loop, I / 2 steps arriving at random (admission_wait_seconds, ttft_open_seconds).", "engine", lo=1, hi=1e4, integer=True),
    _inp("scheduler_seconds_per_sequence", "Scheduler CPU time per sequence per step", "s", ENGINE["scheduler_seconds_per_sequence"], "CPU time the engine spends per running sequence per step (scheduling, input preparation, output processing): vLLM V1 21 us (5-6 ms at batch 256, vllm-project/vllm#10634, #11133), vLLM 0.4-0.5 106 us (vllm#6913), SGLang <= 10 us; added to the step only when the scheduler does not overlap (engines.csv).", "engine", lo=0, hi=1),
    _inp("cuda_graphs", "CUDA graphs (1 on, 0 eager)", "1/0", ENGINE["cuda_graphs"], "1: decode steps up to cuda_graph_max_batch sequences replay CUDA graphs; 0: every step dispatches its kernels eager through PyTorch (TensorRT-LLM's PyTorch backend 0.17-0.21: use_cuda_graph=False; engines.csv).", "engine", lo=0, hi=1, integer=True),
    _inp("cuda_graph_max_batch", "Largest CUDA-graph decode batch", "sequences", ENGINE["cuda_graph_max_batch"], "The largest decode batch the engine captures a graph for (vLLM V0 256, V1 512, SGLang 0.4 160, TensorRT-LLM as trtllm-bench runs it: the max batch; engines.csv); a larger batch runs eager.", "engine", lo=0, hi=1e6, integer=True),
    _inp("eager_seconds_per_layer", "Eager host time per dense layer", "s", ENGINE["eager_seconds_per_layer"], "CPU time to dispatch one dense decode layer eager through PyTorch: 257 us (Llama-3-8B, 8.23 ms eager over 32 layers, sgl-project/sglang#1401); an eager step lasts max(its kernels, this host time) (engines.csv).", "engine", lo=0, hi=1),
    _inp("eager_seconds_per_moe_layer", "Eager host time per MoE layer", "s", ENGINE["eager_seconds_per_moe_layer"], "CPU time to dispatch one MoE (MLA + routed experts) decode layer eager through PyTorch: 947 us (DeepSeek-Coder-V2-Lite, 4x its 6.22 ms CUDA-graph step, sgl-project/sglang#1401; engines.csv).", "engine", lo=0, hi=1),
    _inp("gqa_decode", "GQA-aware decode attention (1 any group, 0 none, N only N-head groups)", "code", ENGINE["gqa_decode"], "1: the decode attention kernel reads each KV head once for its query group (FlashAttention, FlashInfer, TensorRT-LLM's XQA from 1.0); 0: once per query head (vLLM 0.3's PagedAttention); N > 1: once only where a group holds N query heads, once per query head otherwise (TensorRT-LLM 0.9's XQA runs at 8 heads per KV head, other groups on the masked MHA kernel, one thread block per query head; engines.csv).", "engine", lo=0, hi=1024, integer=True),
    *_kernel_curve_inputs(("qkv", "QKV GEMM", "token"),
                          ("o", "attention output GEMM", "token"),
                          ("mlp", "dense layer's MLP gate/up + down GEMMs", "token"),
                          ("shared_mlp", "shared experts' gate/up + down GEMMs of a MoE layer", "token"),
                          ("lm_head", "LM-head GEMM", "token"),
                          ("decode_attention", "decode attention of one layer", "KV token read"),
                          ("prefill_attention", "causal attention of one prompt, one layer", "prompt length squared")),
    _inp("kernel_layer_overhead_seconds", "Element-wise work per layer (kernel tables)", "s", EFF["kernel_layer_overhead_seconds"], "Per layer per forward pass, the kernels the measured tables do not hold (norms, rotary, activation, residual adds): the table-priced step's counterpart of the per-layer overhead. Source: data/efficiencies.csv.", "efficiency", lo=0, hi=1),
    _inp("moe_kernel_launch_seconds", "Fused MoE kernel: one launch", "s", 0, "What a fused MoE kernel pays once per layer rather than once per expert: read off the measured fused-MoE curve (data/kernels/moe.csv) where it holds the model's shape, else the smallest measured GEMM pair's latency (data/kernels; 0 without tables).", "kernel", lo=0, hi=10),
    _inp("moe_kernel_table", "MoE experts priced from the fused-MoE table (1) or the GEMM table (0)", "code", 0, "1: the MoE layers' launch and expert figures are read off the measured fused-MoE curve of data/kernels/moe.csv (NVIDIA aiconfigurator-core) or moe_amd.csv (ROCm/aiter; a shape it lacks scaled from the nearest measured one by the expert bytes) and an expert's pair grows linearly in its tokens; 0: one expert's GEMMs from the GEMM table (a model shape, layout or dtype the MoE table lacks).", "kernel", lo=0, hi=1, integer=True),
    _inp("moe_expert_kernel_floor_seconds", "MoE: one touched expert's GEMM pair: floor", "s", 0, "One touched expert's gate/up + down GEMMs at one token, launch included: read off the measured fused-MoE curve (data/kernels/moe.csv) where it holds the model's shape, else the GEMM table's at one expert's shapes (data/kernels; 0 without tables).", "kernel", lo=0, hi=10),
    _inp("moe_expert_kernel_seconds_per_token", "MoE: one touched expert's GEMM pair: time per token", "s", 0, "One touched expert's gate/up + down GEMMs per token routed to it at large batch: read off the measured fused-MoE curve (data/kernels/moe.csv) where it holds the model's shape, else the GEMM table's (data/kernels; 0 without tables).", "kernel", lo=0, hi=10),
    *_kernel_curve_inputs(("allreduce", "TP all-reduce", "message byte")),
    # accuracy: the band multipliers of the plan's segment (inference_ledger/catalogs/bands.py)
    *(_inp(name, f"Band {side} multiplier: {what}", "x", BAND[name], _BAND_DOC.format(what=what, q=q), "accuracy",
           lo=0, hi=1e6, lo_inclusive=False, arg="efficiency")
      for what, pair in (("output tokens/s", ("band_low_tokens_per_second", "band_high_tokens_per_second")),
                         ("TPOT", ("band_low_tpot", "band_high_tpot")), ("TTFT", ("band_low_ttft", "band_high_ttft")))
      for side, name, q in (("low", pair[0], int(bands.BAND_QUANTILES[0])), ("high", pair[1], int(bands.BAND_QUANTILES[1])))),
    # cost
    _inp("price_per_gpu_hour", "Price per GPU-hour", "$/GPU-h", CATALOG, "What one GPU costs for an hour (list, reserved or internal rate).", "cost"),
    _inp("requests_per_day", "Requests per day", "requests/day", 1_000_000, "Average daily load: the Cost sheet's requests-per-day bill (monthly_cost) and the Forecast's average-to-peak ratio.", "cost"),
    # targets
    _inp("ttft_target", "TTFT target", "s", 0.5, "Time to first token the service promises.", "target", arg="seconds"),
    _inp("tpot_target", "TPOT target", "s", 0.05, "Time per output token the service promises.", "target", arg="seconds"),
    _inp("target_qps", "Target QPS", "requests/s", 20, "Requests per second the service must sustain at peak (sizes replicas by Little's law).", "target", arg="qps"),
    # finance: own vs rent, and the timeline's growth (formulas.finance; GPU rows from data/gpu_costs.csv)
    _inp("server_price_per_gpu", "Server price per GPU", "$/GPU", CATALOG, "A whole server's price / its GPUs (GPU costs sheet: DGX H100 ~$270k / 8, SemiAnalysis 2023).", "finance", lo=0, hi=1e8, lo_inclusive=False),
    _inp("gpu_power_w", "GPU power (TDP)", "W", CATALOG, "Board power of one GPU at work (datasheet TDP; GPU costs sheet).", "finance", lo=0, hi=1e5),
    _inp("server_power_w_per_gpu", "Rest of the server per GPU", "W", CATALOG, "CPUs, NICs, fans per GPU: (server max - GPUs x TDP) / GPUs; DGX H100 (10.2 kW - 8 x 700 W) / 8.", "finance", lo=0, hi=1e5),
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
#: the inputs' groups in the order they first appear: the order the Plan sheet and the plan table show them in
INPUT_GROUPS: tuple[str, ...] = tuple(dict.fromkeys(i.group for i in INPUTS))

#: Every line in display order: functions of the line modules, or formulas that are lines themselves, shown where used.
_SHOWN = (plan_lines, serving_lines, step_lines, step_inverse_lines, parallel, whatif_lines, finance, band_lines)
LINES: tuple[Line, ...] = shown_with_readers(sum(map(lines_of, _SHOWN), ()),
                                             lines_of(ledger) + lines_of(engine_ledger) + lines_of(verdict))
LINE_BY_NAME: dict[str, Line] = {l.name: l for l in LINES}
NAMES: tuple[str, ...] = tuple(i.name for i in INPUTS) + tuple(l.name for l in LINES)
#: Each coded input or line's Codes, registered beside its formula (core.codes): its words everywhere, as options take.
CODES: dict[str, Codes] = {q: c for q, c in registered().items() if q in NAMES}

#: Groups of lines instantiated over a parameter (inference_ledger.core.line.Family): one value per family, nested by
#: candidate (``plan --json``: tp_candidates: {"1": {...}, "2": {...}}), read by the lines that take it.
FAMILIES: tuple[Family, ...] = (whatif_lines.TP_CANDIDATES,)
FAMILY_BY_NAME: dict[str, Family] = {f.name: f for f in FAMILIES}


def _order(nodes) -> tuple:
    """Lines and families in an order where each comes after every quantity it uses (display order where it can)."""
    done = {i.name for i in INPUTS}
    known = done | {n.name for n in nodes}
    order, pending = [], list(nodes)
    while pending:
        ready = [l for l in pending if all(p in done for p in l.params)]
        if not ready:
            missing = {p for l in pending for p in l.params if p not in known}
            raise TypeError(f"plan lines use unknown quantities {sorted(missing)} or form a cycle: "
                            f"{[l.name for l in pending]}")
        for l in ready:
            order.append(l)
            done.add(l.name)
        pending = [l for l in pending if l.name not in done]
    return tuple(order)


def _evaluation_order() -> tuple[Line, ...]:
    """The lines alone in evaluation order: each after every line (and family) it uses."""
    read = tuple(f for f in FAMILIES if any(f.name in l.params for l in LINES))
    return tuple(n for n in _order(LINES + read) if isinstance(n, Line))


#: Lines and families in evaluation order (a family evaluates once: every candidate, every member).
STEPS: tuple = _order(LINES + FAMILIES)
EVALUATION_ORDER: tuple[Line, ...] = _evaluation_order()


def defaults() -> dict[str, float]:
    return {i.name: i.default for i in INPUTS}


def validate_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Check every input against its range (arrays elementwise); raise LedgerInputError naming the first bad one."""
    out: dict[str, Any] = {}
    for i in INPUTS:
        if i.name not in inputs:
            raise LedgerInputError(f"{i.name} is missing")
        v = inputs[i.name]
        if isinstance(v, np.ndarray):
            for x in v.ravel():
                i.arg.check(x)
            out[i.name] = v.astype(float)
        else:
            out[i.name] = i.arg.check(v)
    _cross_checks(out)
    return out


def _cross_checks(v: Mapping[str, Any]) -> None:
    """The rules between inputs (inference_ledger.graph.rules.INPUT_RULES), over numbers or arrays (every element)."""
    for rule in rules.INPUT_RULES:
        if not bool(np.all(rule.condition(*(np.asarray(v[p]) for p in rule.params)))):
            raise LedgerInputError(rule.message(v, ""))


def evaluate(inputs: Mapping[str, Any], validate: bool = True) -> dict[str, Any]:
    """Compute every line from the inputs (numbers or equally shaped numpy arrays)."""
    vals = dict(validate_inputs(inputs) if validate else inputs)
    with np.errstate(divide="ignore", invalid="ignore"):
        for step in STEPS:
            vals[step.name] = step.evaluate(vals) if isinstance(step, Family) else step(vals)
    return vals


def render(line: Line | str, ref: Callable[[str], str], candidates: Optional[Mapping[str, Iterable[float]]] = None,
           inline_candidate: bool = False) -> tuple[str, list[str]]:
    """Excel formula text (with leading '=') of a line, and the quantities it uses (:func:`expression`'s)."""
    line = LINE_BY_NAME[line] if isinstance(line, str) else line
    return expression(line, ref, candidates, inline_candidate).formula(), list(line.params)


def expression(line: Line | str, ref: Callable[[str], str], candidates: Optional[Mapping[str, Iterable[float]]] = None,
               inline_candidate: bool = False, value: Any = None) -> Sym:
    """The Excel expression of a line over the references ``ref`` gives (``value``: the line's value from the
    plan's evaluation, which the expression then carries: the cached value of a workbook cell).

    A family the line reads (``tp_candidates``) is a table: ``candidates[family]`` lists its columns, and each
    member at a candidate, and the candidate itself, is at ``ref`` of its flat name (``tp_candidates.4.fits``,
    ``tp_candidates.4.tp``: :meth:`inference_ledger.core.line.Family.flat_name`; ``inline_candidate``: the candidate as
    its formula of named constants instead)."""
    line = LINE_BY_NAME[line] if isinstance(line, str) else line
    args: list[Any] = []
    for p in line.params:
        fam = FAMILY_BY_NAME.get(p)
        if fam is None:
            args.append(reference(ref(p)))
        elif candidates is None or p not in candidates:
            raise TypeError(f"line {line.name} reads the family {p}: render it with candidates={{{p!r}: (...)}}")
        else:
            args.append({fam.key(c): {fam.param: fam.candidate_formula(c) if inline_candidate
                                      else reference(ref(fam.flat_name(c, fam.param)))}
                         | {m: reference(ref(fam.flat_name(c, m))) for m in fam.member_names} for c in candidates[p]})
    return _carrying(line.fn(*args), f"line {line.name}", value)


def _carrying(expr: Any, what: str, value: Any) -> Sym:
    """A rendered expression (carrying ``value`` when given); a line that computed a number instead is refused."""
    if not isinstance(expr, Sym):
        raise TypeError(f"{what} did not render to a formula")
    return expr if value is None else expr.at(value)


def render_member(name: str, ref: Callable[[str], str], inline_candidate: bool = False) -> tuple[str, list[str]]:
    """Excel formula text (with leading '=') of one family cell and the quantities it uses
    (:func:`member_expression`'s)."""
    expr, params = member_expression(name, ref, inline_candidate)
    return expr.formula(), params


def member_expression(name: str, ref: Callable[[str], str], inline_candidate: bool = False,
                      value: Any = None) -> tuple[Sym, list[str]]:
    """The Excel expression of one family cell (carrying ``value``, the plan's, when given), ``name`` its flat name
    (``tp_candidates.4.fits``), and the quantities it uses: the member's function with the family parameter and the fellow members at ``ref`` of their flat names
    (the same candidate's column) and every other quantity at ``ref(quantity)``; ``inline_candidate``: the candidate
    as its formula of named constants (a table without a cell for it, e.g. a sweep's)."""
    fam_name, cand, member = name.split(".")
    fam = FAMILY_BY_NAME[fam_name]
    m = {l.name: l for l in fam.members}[member]
    inside = {fam.param, *fam.member_names}

    def arg(p):
        if p == fam.param and inline_candidate:
            return fam.candidate_formula(float(cand))
        return reference(ref(f"{fam_name}.{cand}.{p}" if p in inside else p))

    return _carrying(m.fn(*(arg(p) for p in m.params)), f"family member {name}", value), list(m.params)


def render_key(key: str, ref: Callable[[str], str], candidates: Mapping[str, Iterable[float]]) -> str:
    """The formula of a table column by its key: a line or a family cell (its candidate inline)."""
    return key_expression(key, ref, candidates).formula()


def key_expression(key: str, ref: Callable[[str], Any], candidates: Mapping[str, Iterable[float]]) -> Sym:
    """The expression of a table column by its key (:func:`render_key`)."""
    return (member_expression(key, ref, inline_candidate=True)[0] if "." in key
            else expression(key, ref, candidates, inline_candidate=True))


def dependencies(line: Line | str) -> list[str]:
    """The inputs and lines a line uses: its function's parameters."""
    return list((LINE_BY_NAME[line] if isinstance(line, str) else line).params)


def depends_on(line: Line | str, name: str) -> bool:
    """Whether a line uses ``name`` (an input or a line), directly or through other lines."""
    return any(d == name or (d in LINE_BY_NAME and _line_uses(d, name)) for d in dependencies(line))


@functools.cache
def _line_uses(line: str, name: str) -> bool:
    """:func:`depends_on` of a plan line by name, once per pair (the lines are fixed at import; the workbook asks
    tens of thousands of times)."""
    return any(d == name or (d in LINE_BY_NAME and _line_uses(d, name)) for d in dependencies(line))


def plan_keys() -> Iterable[str]:
    return NAMES

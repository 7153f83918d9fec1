"""The engine's terms of the ledger: activations, non-torch memory, the KV budget rule, decode overheads.

An engine decides how much of a GPU the KV cache gets, and each documents its own rule
(the codes are the ``kv_budget_rule`` plan input; the engines' values are in
``inference_ledger/data/engines.csv``, read by :mod:`inference_ledger.catalogs.engines`):

1. **vLLM** profiles one forward pass at its batching limits, then gives the KV cache
   ``gpu_memory_utilization x total - weights - activation peak - non-torch memory``
   (vllm/v1/worker/gpu_worker.py ``determine_available_memory``; the V0 worker alike).
2. **SGLang** reserves ``mem_fraction_static`` of the memory it finds after CUDA/NCCL start
   for weights + KV; activations and CUDA graphs live in the rest
   (sglang/srt/model_executor/model_runner.py ``profile_max_num_token``).
3. **TensorRT-LLM** gives the KV cache ``free_gpu_memory_fraction`` of what is free once the
   engine, its activation buffers and the runtime are loaded (``KvCacheConfig``).

The activation peak is that of the engine's memory profile: one prefill chunk of
``max_num_batched_tokens`` tokens, whose widest point is the MLP (residual, normed input and
output: 3 hidden-wide tensors; gate+up and SiLU-and-mul outputs: 3 intermediate-wide ones,
per routed expert for a MoE), or the sampler over ``max_num_seqs`` logits rows, whichever is
larger (they run one after the other).  vLLM's own log checks it: Llama-3.1-8B on an RTX 3090
shows 2.07 GiB at 20,000 tokens and 2.99 GiB at 29,000, i.e. 110.6 KB/token =
2 B x (3 x 4,096 + 3 x 14,336).

Decode adds to the bandwidth roofline what keeps a GPU from it at batch 1: tensor-parallel
all-reduces (two per layer, Megatron-LM arXiv:1909.08053), the fixed cost of each layer's
small kernels, and the engine's per-step work (scheduling, sampling).

Every formula here is written with :mod:`inference_ledger.core.expr` helpers (numbers or numpy
arrays in, the same out; Sym in, Excel text out), so the plan renders it to the workbook.
"""

from __future__ import annotations

from inference_ledger.core.codes import Codes
from inference_ledger.core.line import BANDWIDTH, line
from inference_ledger.core.sheetfuncs import ceil, eq, gt, maximum, where
from inference_ledger.core.units import (ACT_HIDDEN_COPIES, ACT_MLP_COPIES, GLU_MATRICES,
                                         KV_RULE_SGLANG, KV_RULE_TRTLLM, KV_RULE_VLLM, RING_ALLREDUCE_FACTOR)

#: How an engine sizes its KV cache (the plan input ``kv_budget_rule``; engines.csv names each engine's).
KV_RULE = Codes("kv_budget_rule", [(KV_RULE_VLLM, "vLLM"), (KV_RULE_SGLANG, "SGLang"), (KV_RULE_TRTLLM, "TensorRT-LLM")])

def prefill_activation_bytes(tokens, hidden_size, intermediate_size, experts_per_token, act_bytes, tp):
    """Live activations at the MLP of one prefill chunk, on one GPU.

    tokens x bytes x ((3 + k_routed) x hidden + 3 x max(k, 1) x intermediate / TP):
    residual, normed input and MLP output (3 x hidden); gate+up (2 x I/TP) and the
    SiLU-and-mul output (I/TP), once per routed expert for a MoE, whose fused kernel also
    keeps one hidden-wide output per routed expert (k_routed = experts_per_token, 0 if dense).

    >>> prefill_activation_bytes(20000, 4096, 14336, 0, 2, 1) / 2**30   # RTX 3090 log: 2.07 GiB
    2.0599365234375
    """
    experts = maximum(experts_per_token, 1)
    per_token = (ACT_HIDDEN_COPIES + experts_per_token) * hidden_size \
        + ACT_MLP_COPIES * experts * intermediate_size / tp
    return tokens * act_bytes * per_token


def sampler_activation_bytes(max_num_seqs, vocab_size, sampler_bytes_per_logit):
    """The sampler's peak: one logits row per sequence, at the engine's bytes per logit."""
    return max_num_seqs * vocab_size * sampler_bytes_per_logit


def activation_peak_bytes(prefill_bytes, sampler_bytes):
    """The profile's peak: the forward pass and the sampler run one after the other."""
    return maximum(prefill_bytes, sampler_bytes)


def non_torch_bytes(cuda_context_bytes, nccl_bytes, tp):
    """Memory outside PyTorch's allocator: the CUDA context, plus NCCL buffers when TP > 1."""
    return cuda_context_bytes + where(gt(tp, 1), nccl_bytes, 0)


def moe_padding_bytes_per_gpu(num_layers, num_experts, hidden_size, intermediate_size, tp,
                              pad_hidden, pad_intermediate, weight_bytes, moe_kernel_pads):
    """Extra weight bytes when a MoE kernel pads each expert to its tile, on one GPU.

    pads x L x E x 3 x (ceil(H / p_h) p_h x ceil(I / (TP p_i)) p_i - H x I / TP) x bytes.  gpt-oss
    (H = I = 2,880) pads to 3,072 x 2,944 under vLLM's MXFP4 MoE: 9% more expert bytes.
    Zero for a dense model (no experts), for dims already on the tile, and where the weight format's MoE kernels
    run the experts at their own shapes (pads = 0: BF16/FP8 fused MoE, e.g. Qwen3-235B's 1,536-wide experts at
    TP 8 hold 192 rows).
    """
    padded = ceil(hidden_size / pad_hidden) * pad_hidden * ceil(intermediate_size / (tp * pad_intermediate)) * pad_intermediate
    return (moe_kernel_pads * num_layers * num_experts * GLU_MATRICES * (padded - hidden_size * intermediate_size / tp)
            * weight_bytes)


def kv_budget_rule_adjustment(rule, memory_fraction, weights_bytes_per_gpu, non_torch, workspace_bytes):
    """What an engine's rule adds to vLLM's KV budget (f x total - weights - workspace); 0 under vLLM's rule.

    rule 2 SGLang:       f x (total - non-torch) - weights = vLLM's + workspace - f x non-torch
    rule 3 TensorRT-LLM: f x (total - non-torch - weights - activations) = vLLM's + (1 - f) x (weights + workspace)
    (workspace = activations + non-torch).
    """
    return where(eq(rule, KV_RULE_SGLANG), workspace_bytes - memory_fraction * non_torch,
                 where(eq(rule, KV_RULE_TRTLLM), (1 - memory_fraction) * (weights_bytes_per_gpu + workspace_bytes), 0))


def kv_budget_bytes(rule, gpu_memory_bytes, memory_fraction, weights_bytes_per_gpu, activation_bytes, non_torch):
    """KV-cache bytes one GPU gets under the engine's rule (negative: the engine refuses to start).

    rule 1 vLLM:         f x total - weights - activation peak - non-torch
    rule 2 SGLang:       f x (total - non-torch) - weights
    rule 3 TensorRT-LLM: f x (total - non-torch - weights - activation peak)
    """
    workspace = activation_bytes + non_torch
    return memory_fraction * gpu_memory_bytes - weights_bytes_per_gpu - workspace + kv_budget_rule_adjustment(
        rule, memory_fraction, weights_bytes_per_gpu, non_torch, workspace)


def ring_share(gpus):
    """Bytes each GPU of a ring all-reduce sends per message byte: 2 (N-1)/N (reduce-scatter + all-gather)."""
    return RING_ALLREDUCE_FACTOR * (gpus - 1) / gpus


def through_host(seconds, allreduce_through_host, host_allreduce_floor_seconds):
    """An all-reduce's fixed cost on the plan's path: as given over peer-to-peer links, never below the host path's
    floor when NCCL passes it through host memory (its SHM transport: the GPUs have no peer-to-peer path)."""
    return maximum(seconds, allreduce_through_host * host_allreduce_floor_seconds)


def allreduce_seconds(tp, allreduces, latency_seconds, message_bytes, interconnect_bw):
    """Tensor-parallel all-reduce time of one decode step (0 at TP 1).

    all-reduces (2 per layer x L, Megatron-LM) x (latency + 2 (TP-1)/TP x message / link bandwidth): the ring's
    bytes, and a fixed launch-and-synchronise latency that dominates at small batch.
    """
    one = latency_seconds + ring_share(tp) * message_bytes / interconnect_bw
    return where(gt(tp, 1), allreduces * one, 0)


@line("Decode overhead per step", "s", BANDWIDTH,
      "Layers x per-layer kernel overhead + per-step overhead.")
def decode_overhead_seconds(num_layers, layer_overhead_seconds, step_overhead_seconds):
    """Time a decode step spends off the bandwidth roofline: L x per-layer kernels + per-step work."""
    return num_layers * layer_overhead_seconds + step_overhead_seconds

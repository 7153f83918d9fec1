"""Parallel layouts beyond one node: pipeline stages, expert parallelism, data-parallel attention.

The formulas of layouts beyond one node, each written once with :mod:`inference_ledger.core.expr` helpers (numbers in,
numbers out; :class:`~inference_ledger.core.expr.Sym` in, one Excel formula out).  A replica is

    gpus_per_replica = tp x dp_attention x pp

* **tp** splits every attention head group and dense matrix over GPUs of one node (Megatron-LM,
  Shoeybi et al. 2019, arXiv:1909.08053);
* **dp_attention** runs that many attention data-parallel ranks, each with its own sequences and its own
  copy of the attention weights, while the MoE layers spread over all ``tp x dp_attention`` GPUs of a
  stage (SGLang ``--enable-dp-attention``; vLLM ``--data-parallel-size`` with ``--enable-expert-parallel``;
  DeepSeek-V3 report arXiv:2412.19437 s3.4: "MLA/Shared Expert DP", "Routed Expert EP");
* **ep** places whole experts on that many of those GPUs (the rest of the stage splits each expert
  further, SGLang's moe_tp = tp / ep); expert weights per GPU are the stage's share either way;
* **pp** splits the layers into stages (GPipe, Huang et al. 2019, arXiv:1811.06965); in decode each stage
  holds a different micro-batch, so a token still crosses every stage in turn.

Time terms cross the scale-out network (``scaleout_bw`` per GPU, plus a fixed latency) when the
layout leaves a node, NVLink/xGMI (``interconnect_bw``) when it stays inside one.
"""

from __future__ import annotations

from inference_ledger.core.expr import ceil, gt, maximum, where
from inference_ledger.core.units import EP_PASSES, GLU_MATRICES


def expert_params(moe_layers, num_experts, hidden_size, intermediate_size):
    """Routed-expert parameters: MoE layers x experts x 3 x hidden x expert width (gate, up, down)."""
    return moe_layers * num_experts * GLU_MATRICES * hidden_size * intermediate_size


def weights_per_gpu(weights_bytes, expert_weights_bytes, resident_expert_bytes, tp, gpus_per_stage, pp):
    """Resident weights of one GPU: the stage's layers (1/pp); attention and dense parts split over TP
    (each DP-attention rank keeps its own copy), the resident routed experts (redundant copies included)
    split over every GPU of the stage."""
    return ((weights_bytes - expert_weights_bytes) / tp + resident_expert_bytes / gpus_per_stage) / pp


def nodes(gpus, gpus_per_node):
    """Whole nodes a replica occupies."""
    return ceil(gpus / gpus_per_node)


def seconds_per_byte(spans_nodes, scaleout_bw, interconnect_bw):
    """Transfer time of one byte: over the scale-out network when the group spans nodes, else NVLink/xGMI."""
    return where(spans_nodes, 1 / scaleout_bw, 1 / interconnect_bw)


def ep_seconds_per_byte(ep, gpus_per_node, scaleout_bw, interconnect_bw):
    """All-to-all time per byte a GPU sends: within a node over NVLink; across nodes the share bound for
    other nodes, 1 - node/EP, goes over the scale-out NIC (DeepEP: NVLink and RDMA in parallel)."""
    off_node = maximum(1 - gpus_per_node / ep, 0)
    return where(gt(ep, gpus_per_node), off_node / scaleout_bw, 1 / interconnect_bw)


def ep_bytes_per_token_layer(experts_per_token, hidden_size, unquantized_bytes):
    """Bytes one token moves per MoE layer: dispatch to and combine from its top-k experts, hidden wide."""
    return EP_PASSES * experts_per_token * hidden_size * unquantized_bytes


def ep_alltoall_seconds(ep, moe_layers, latency_seconds, tokens_per_gpu, bytes_per_token_layer, seconds_per_byte_):
    """EP dispatch + combine of one forward pass: per MoE layer two latencies plus the GPU's tokens x bytes
    over the link (0 without EP)."""
    one_layer = EP_PASSES * latency_seconds + tokens_per_gpu * bytes_per_token_layer * seconds_per_byte_
    return where(gt(ep, 1), moe_layers * one_layer, 0)


def pp_handoff_seconds(pp, latency_seconds, tokens, hidden_size, unquantized_bytes, seconds_per_byte_):
    """Stage-to-stage hand-off of one forward pass: pp - 1 hops, each a latency plus the tokens' hidden
    states (0 without PP)."""
    return (pp - 1) * (latency_seconds + tokens * hidden_size * unquantized_bytes * seconds_per_byte_)


def pp_bubble(pp, sequences_per_rank):
    """Share of stage time idle in decode: a stage waits when a DP rank has fewer sequences than stages
    (each stage holds one micro-batch; at least pp sequences keep the pipeline full)."""
    return maximum(1 - sequences_per_rank / pp, 0)

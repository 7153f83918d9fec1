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

The plan's lines (``@line``, :mod:`inference_ledger.core.line`) sit with the formulas: GPUs and nodes of a replica,
the expert share of the weights, and the time that crosses GPUs for pipeline stages and expert parallelism.  The
memory lines of :mod:`inference_ledger.graph.plan_lines` read ``gpus_per_stage`` and ``expert_weights_bytes`` from
here; TPOT adds ``parallel_seconds_per_step`` and TTFT ``prefill_parallel_seconds``.
"""

from __future__ import annotations

from inference_ledger.core.sheetfuncs import gt, maximum, where
from inference_ledger.core.line import BANDWIDTH, COMPUTE, COST, MEMORY, derived, line, product, ratio_up, total
from inference_ledger.core.units import DP_MLP_COLLECTIVES, EP_PASSES, GLU_MATRICES
from inference_ledger.formulas.engine_ledger import ring_share


gpus_per_stage = product("gpus_per_stage", ("tp", "dp_attention"), "GPUs per pipeline stage", "GPUs", COST,
    "TP x DP-attention ranks: the GPUs that hold one stage's layers (its MoE experts spread over all of them).")


gpus_per_replica = product("gpus_per_replica", ("gpus_per_stage", "pp"), "GPUs per replica", "GPUs", COST,
    "GPUs per stage x PP stages: one copy of the model.")


nodes_per_replica = ratio_up("nodes_per_replica", ("gpus_per_replica", "gpus_per_node"),
    "Nodes per replica", "nodes", COST,
    "Whole nodes of gpus_per_node GPUs (the NVLink/xGMI domain) one replica occupies.")


@line("Routed-expert parameters", "params", MEMORY,
      "MoE layers x experts x 3 x hidden x expert width: the weights expert parallelism spreads (0 for dense).")
def expert_params(moe_layers, num_experts, hidden_size, intermediate_size):
    """Routed-expert parameters: MoE layers x experts x 3 x hidden x expert width (gate, up, down)."""
    return moe_layers * num_experts * GLU_MATRICES * hidden_size * intermediate_size


expert_weights_bytes = product("expert_weights_bytes", ("expert_params", "weight_bytes"),
    "Routed-expert weights", "B", MEMORY,
    "Routed-expert parameters at the weight format (experts are quantized layers).")


@line("Resident routed-expert weights", "B", MEMORY,
      "Routed-expert weights x (experts + redundant copies) / experts: what the EP ranks hold (EPLB).")
def resident_expert_bytes(expert_weights_bytes, num_experts, redundant_experts):
    return expert_weights_bytes * (num_experts + redundant_experts) / maximum(num_experts, 1)


def weights_per_gpu(weights_bytes, expert_weights_bytes, resident_expert_bytes, tp, gpus_per_stage, pp):
    """Resident weights of one GPU: the stage's layers (1/pp); attention and dense parts split over TP
    (each DP-attention rank keeps its own copy), the resident routed experts (redundant copies included)
    split over every GPU of the stage."""
    return ((weights_bytes - expert_weights_bytes) / tp + resident_expert_bytes / gpus_per_stage) / pp


def pp_bubble(pp, sequences_per_rank):
    """Share of stage time idle in decode: a stage waits when a DP rank has fewer sequences than stages
    (each stage holds one micro-batch; at least pp sequences keep the pipeline full)."""
    return maximum(1 - sequences_per_rank / pp, 0)


@line("Pipeline idle share (decode)", "fraction", BANDWIDTH,
      "Share of a stage's time idle when a DP rank has fewer sequences in flight than PP stages (0 without PP).")
def pp_bubble_fraction(pp, effective_concurrency, dp_attention):
    return pp_bubble(pp, effective_concurrency / dp_attention)


def seconds_per_byte(spans_nodes, scaleout_bw, interconnect_bw):
    """Transfer time of one byte: over the scale-out network when the group spans nodes, else NVLink/xGMI."""
    return where(spans_nodes, 1 / scaleout_bw, 1 / interconnect_bw)


@line("Stage hand-off time per byte", "s/B", BANDWIDTH,
      "1 / scale-out bandwidth when the replica spans nodes, else 1 / NVLink bandwidth.")
def pp_seconds_per_byte(gpus_per_replica, gpus_per_node, scaleout_bw, interconnect_bw):
    return seconds_per_byte(gt(gpus_per_replica, gpus_per_node), scaleout_bw, interconnect_bw)


@line("EP all-to-all time per byte", "s/B", BANDWIDTH,
      "NVLink within a node; across nodes the off-node share (1 - node/EP) over the scale-out NIC.")
def ep_seconds_per_byte(ep, gpus_per_node, scaleout_bw, interconnect_bw):
    """All-to-all time per byte a GPU sends: within a node over NVLink; across nodes the share bound for
    other nodes, 1 - node/EP, goes over the scale-out NIC (DeepEP: NVLink and RDMA in parallel)."""
    off_node = maximum(1 - gpus_per_node / ep, 0)
    return where(gt(ep, gpus_per_node), off_node / scaleout_bw, 1 / interconnect_bw)


@line("EP bytes per token per MoE layer", "B", BANDWIDTH,
      "2 (dispatch + combine) x top-k x hidden x activation bytes.")
def ep_bytes_per_token_layer(experts_per_token, hidden_size, unquantized_bytes):
    """Bytes one token moves per MoE layer: dispatch to and combine from its top-k experts, hidden wide."""
    return EP_PASSES * experts_per_token * hidden_size * unquantized_bytes


def ep_alltoall_seconds(ep, dp_attention, moe_layers, latency_seconds, tokens_per_gpu, bytes_per_token_layer,
                        seconds_per_byte_):
    """EP dispatch + combine of one forward pass: per MoE layer two latencies plus the GPU's tokens x bytes
    over the link; 0 without EP, and 0 without attention DP, where every GPU already holds every token (after the
    attention's TP all-reduce) and the TP all-reduce after the layer combines the experts' outputs (vLLM
    FusedMoEParallelConfig.use_all2all_kernels: dp_size > 1 and use_ep; TensorRT-LLM's MoE all-to-all only under
    enable_attention_dp)."""
    one_layer = EP_PASSES * latency_seconds + tokens_per_gpu * bytes_per_token_layer * seconds_per_byte_
    return where(gt(ep, 1), where(gt(dp_attention, 1), moe_layers * one_layer, 0), 0)


def pp_handoff_seconds(pp, latency_seconds, tokens, hidden_size, unquantized_bytes, seconds_per_byte_):
    """Stage-to-stage hand-off of one forward pass: pp - 1 hops, each a latency plus the tokens' hidden
    states (0 without PP)."""
    return (pp - 1) * (latency_seconds + tokens * hidden_size * unquantized_bytes * seconds_per_byte_)


def dp_gather_scatter_seconds(dp_attention, ep, moe_layers, latency_seconds, hidden_size, unquantized_bytes, gpus,
                              seconds_per_byte_, tokens=0):
    """Attention DP with the experts split over the stage's GPUs (no EP): per MoE layer the ranks' tokens are
    all-gathered to every GPU before the experts and the output reduce-scattered back, each a latency plus
    (N - 1) / N of the gathered tokens' hidden states per GPU (a ring; the pair moves what one all-reduce does);
    0 without DP attention or with EP (whose all-to-all moves the tokens)."""
    one_layer = DP_MLP_COLLECTIVES * latency_seconds + ring_share(gpus) * tokens \
        * hidden_size * unquantized_bytes * seconds_per_byte_
    return where(gt(dp_attention, 1), where(gt(ep, 1), 0, moe_layers * one_layer), 0)


@line("Stage collective time per byte", "s/B", BANDWIDTH,
      "1 / scale-out bandwidth when a pipeline stage's TP x DP GPUs span nodes, else 1 / NVLink bandwidth.")
def stage_seconds_per_byte(gpus_per_stage, gpus_per_node, scaleout_bw, interconnect_bw):
    return seconds_per_byte(gt(gpus_per_stage, gpus_per_node), scaleout_bw, interconnect_bw)


#: The DP-attention gather/scatter's plan quantities (its tokens aside).
_DP_COLLECTIVE = dict(latency_seconds="allreduce_latency_seconds", gpus="gpus_per_stage",
                      seconds_per_byte_="stage_seconds_per_byte")

dp_collective_seconds_per_step = derived("dp_collective_seconds_per_step", dp_gather_scatter_seconds,
    "DP attention: MoE gather and scatter per decode step", "s", BANDWIDTH,
    "MoE layers x (2 latencies + 2 (N - 1) / N x the step's tokens x hidden x bytes x time per byte), N = the stage's "
    "TP x DP GPUs: the experts, split over all of them, see every rank's tokens; 0 without DP attention or with EP "
    "(its all-to-all instead). Priced on the link (no measured table at N GPUs).",
    tokens="step_tokens", **_DP_COLLECTIVE)

prefill_dp_collective_seconds = derived("prefill_dp_collective_seconds", dp_gather_scatter_seconds,
    "DP attention: one prompt's MoE gather and scatter", "s", COMPUTE,
    "dp_collective_seconds_per_step's terms for a lone prompt's tokens (its rank's; the others idle), added to TTFT.",
    tokens="input_tokens", **_DP_COLLECTIVE)

dp_collective_fixed_seconds = derived("dp_collective_fixed_seconds", dp_gather_scatter_seconds,
    "DP attention: MoE gather and scatter, fixed part", "s", BANDWIDTH,
    "dp_collective_seconds_per_step at no tokens: its latencies (for the inverse of TPOT).", tokens=None,
    **_DP_COLLECTIVE)


@line("EP all-to-all time per decode step", "s", BANDWIDTH,
      "MoE layers x (2 latencies + each GPU's share of the step's tokens x bytes per token x time per byte); 0 at "
      "EP 1 and without attention DP (every GPU holds every token; TP's all-reduce combines the experts).")
def ep_alltoall_seconds_per_step(ep, dp_attention, moe_layers, scaleout_latency_seconds, step_tokens,
                                 gpus_per_replica, ep_bytes_per_token_layer, ep_seconds_per_byte):
    return ep_alltoall_seconds(ep, dp_attention, moe_layers, scaleout_latency_seconds, step_tokens / gpus_per_replica,
                                        ep_bytes_per_token_layer, ep_seconds_per_byte)


@line("PP hand-off time per decode step", "s", BANDWIDTH,
      "(PP - 1) hops x (latency + a micro-batch's hidden states (the step's tokens) per DP rank over the link); 0 at "
      "PP 1.")
def pp_handoff_seconds_per_step(pp, scaleout_latency_seconds, step_tokens, dp_attention, hidden_size,
                                unquantized_bytes, pp_seconds_per_byte):
    return pp_handoff_seconds(pp, scaleout_latency_seconds, step_tokens / (pp * dp_attention), hidden_size,
                                       unquantized_bytes, pp_seconds_per_byte)


parallel_seconds_per_step = total("parallel_seconds_per_step", ("ep_alltoall_seconds_per_step",
                                                                "dp_collective_seconds_per_step",
                                                                "pp_handoff_seconds_per_step"),
    "Parallel communication per decode step", "s", BANDWIDTH,
    "EP all-to-all + DP-attention gather/scatter + PP hand-off, added to TPOT (not overlapped with compute: an "
    "upper bound).")


@line("Parallel communication in prefill", "s", COMPUTE,
      "One prompt's EP all-to-all (its tokens over its TP GPUs) + its DP-attention gather/scatter + its PP "
      "hand-offs, added to TTFT.")
def prefill_parallel_seconds(ep, dp_attention, moe_layers, scaleout_latency_seconds, input_tokens, tp,
                             ep_bytes_per_token_layer, ep_seconds_per_byte, pp, hidden_size, unquantized_bytes,
                             pp_seconds_per_byte, prefill_dp_collective_seconds):
    return ep_alltoall_seconds(ep, dp_attention, moe_layers, scaleout_latency_seconds, input_tokens / tp,
                                        ep_bytes_per_token_layer, ep_seconds_per_byte) \
        + pp_handoff_seconds(pp, scaleout_latency_seconds, input_tokens, hidden_size, unquantized_bytes,
                                      pp_seconds_per_byte) + prefill_dp_collective_seconds


@line("Parallel communication per step, fixed part", "s", BANDWIDTH,
      "The EP, DP-attention and PP terms of a decode step at no sequences: their latencies (for the inverse of "
      "TPOT).")
def parallel_fixed_seconds(ep, dp_attention, moe_layers, scaleout_latency_seconds, ep_bytes_per_token_layer,
                           ep_seconds_per_byte, pp, hidden_size, unquantized_bytes, pp_seconds_per_byte,
                           dp_collective_fixed_seconds):
    return ep_alltoall_seconds(ep, dp_attention, moe_layers, scaleout_latency_seconds, 0, ep_bytes_per_token_layer,
                                        ep_seconds_per_byte) \
        + pp_handoff_seconds(pp, scaleout_latency_seconds, 0, hidden_size, unquantized_bytes,
                                      pp_seconds_per_byte) + dp_collective_fixed_seconds


@line("Parallel communication per token", "s", BANDWIDTH,
      "What one more token of a step adds to its EP, DP-attention and PP transfers (for the inverse of TPOT).")
def parallel_seconds_per_token(parallel_seconds_per_step, parallel_fixed_seconds, step_tokens):
    return (parallel_seconds_per_step - parallel_fixed_seconds) / step_tokens

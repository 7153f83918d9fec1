"""The plan's lines for layouts beyond one node: GPUs and nodes of a replica, the expert share
of the weights, and the time that crosses GPUs for pipeline stages and expert parallelism.

Plain functions as in :mod:`inference_ledger.graph.plan_lines` (see :mod:`inference_ledger.core.line`); the formulas
are :mod:`inference_ledger.formulas.parallel`.  The memory lines of plan_lines read ``gpus_per_stage`` and
``expert_weights_bytes`` from here; TPOT adds ``parallel_seconds_per_step`` and TTFT
``prefill_parallel_seconds``.
"""

from __future__ import annotations

from inference_ledger.formulas import parallel
from inference_ledger.core.expr import gt, maximum
from inference_ledger.core.line import BANDWIDTH, COMPUTE, COST, MEMORY, line


@line("GPUs per pipeline stage", "GPUs", COST,
      "TP x DP-attention ranks: the GPUs that hold one stage's layers (its MoE experts spread over all of them).")
def gpus_per_stage(tp, dp_attention):
    return tp * dp_attention


@line("GPUs per replica", "GPUs", COST,
      "GPUs per stage x PP stages: one copy of the model.")
def gpus_per_replica(gpus_per_stage, pp):
    return gpus_per_stage * pp


@line("Nodes per replica", "nodes", COST,
      "Whole nodes of gpus_per_node GPUs (the NVLink/xGMI domain) one replica occupies.")
def nodes_per_replica(gpus_per_replica, gpus_per_node):
    return parallel.nodes(gpus_per_replica, gpus_per_node)


@line("Routed-expert parameters", "params", MEMORY,
      "MoE layers x experts x 3 x hidden x expert width: the weights expert parallelism spreads (0 for dense).")
def expert_params(moe_layers, num_experts, hidden_size, intermediate_size):
    return parallel.expert_params(moe_layers, num_experts, hidden_size, intermediate_size)


@line("Routed-expert weights", "B", MEMORY,
      "Routed-expert parameters at the weight format (experts are quantized layers).")
def expert_weights_bytes(expert_params, weight_bytes):
    return expert_params * weight_bytes


@line("Resident routed-expert weights", "B", MEMORY,
      "Routed-expert weights x (experts + redundant copies) / experts: what the EP ranks hold (EPLB).")
def resident_expert_bytes(expert_weights_bytes, num_experts, redundant_experts):
    return expert_weights_bytes * (num_experts + redundant_experts) / maximum(num_experts, 1)


@line("Pipeline idle share (decode)", "fraction", BANDWIDTH,
      "Share of a stage's time idle when a DP rank has fewer sequences in flight than PP stages (0 without PP).")
def pp_bubble_fraction(pp, effective_concurrency, dp_attention):
    return parallel.pp_bubble(pp, effective_concurrency / dp_attention)


@line("Stage hand-off time per byte", "s/B", BANDWIDTH,
      "1 / scale-out bandwidth when the replica spans nodes, else 1 / NVLink bandwidth.")
def pp_seconds_per_byte(gpus_per_replica, gpus_per_node, scaleout_bw, interconnect_bw):
    return parallel.seconds_per_byte(gt(gpus_per_replica, gpus_per_node), scaleout_bw, interconnect_bw)


@line("EP all-to-all time per byte", "s/B", BANDWIDTH,
      "NVLink within a node; across nodes the off-node share (1 - node/EP) over the scale-out NIC.")
def ep_seconds_per_byte(ep, gpus_per_node, scaleout_bw, interconnect_bw):
    return parallel.ep_seconds_per_byte(ep, gpus_per_node, scaleout_bw, interconnect_bw)


@line("EP bytes per token per MoE layer", "B", BANDWIDTH,
      "2 (dispatch + combine) x top-k x hidden x activation bytes.")
def ep_bytes_per_token_layer(experts_per_token, hidden_size, unquantized_bytes):
    return parallel.ep_bytes_per_token_layer(experts_per_token, hidden_size, unquantized_bytes)


@line("EP all-to-all time per decode step", "s", BANDWIDTH,
      "MoE layers x (2 latencies + each GPU's share of the step's tokens x bytes per token x time per byte); 0 at "
      "EP 1.")
def ep_alltoall_seconds_per_step(ep, moe_layers, scaleout_latency_seconds, step_tokens, gpus_per_replica,
                                 ep_bytes_per_token_layer, ep_seconds_per_byte):
    return parallel.ep_alltoall_seconds(ep, moe_layers, scaleout_latency_seconds, step_tokens / gpus_per_replica,
                                        ep_bytes_per_token_layer, ep_seconds_per_byte)


@line("PP hand-off time per decode step", "s", BANDWIDTH,
      "(PP - 1) hops x (latency + a micro-batch's hidden states (the step's tokens) per DP rank over the link); 0 at "
      "PP 1.")
def pp_handoff_seconds_per_step(pp, scaleout_latency_seconds, step_tokens, dp_attention, hidden_size,
                                unquantized_bytes, pp_seconds_per_byte):
    return parallel.pp_handoff_seconds(pp, scaleout_latency_seconds, step_tokens / (pp * dp_attention), hidden_size,
                                       unquantized_bytes, pp_seconds_per_byte)


@line("Parallel communication per decode step", "s", BANDWIDTH,
      "EP all-to-all + PP hand-off, added to TPOT (not overlapped with compute: an upper bound).")
def parallel_seconds_per_step(ep_alltoall_seconds_per_step, pp_handoff_seconds_per_step):
    return ep_alltoall_seconds_per_step + pp_handoff_seconds_per_step


@line("Parallel communication in prefill", "s", COMPUTE,
      "One prompt's EP all-to-all (its tokens over its TP GPUs) + its PP hand-offs, added to TTFT.")
def prefill_parallel_seconds(ep, moe_layers, scaleout_latency_seconds, input_tokens, tp, ep_bytes_per_token_layer,
                             ep_seconds_per_byte, pp, hidden_size, unquantized_bytes, pp_seconds_per_byte):
    return parallel.ep_alltoall_seconds(ep, moe_layers, scaleout_latency_seconds, input_tokens / tp,
                                        ep_bytes_per_token_layer, ep_seconds_per_byte) \
        + parallel.pp_handoff_seconds(pp, scaleout_latency_seconds, input_tokens, hidden_size, unquantized_bytes,
                                      pp_seconds_per_byte)


@line("Parallel communication per step, fixed part", "s", BANDWIDTH,
      "The EP and PP terms of a decode step at no sequences: their latencies (for the inverse of TPOT).")
def parallel_fixed_seconds(ep, moe_layers, scaleout_latency_seconds, ep_bytes_per_token_layer, ep_seconds_per_byte,
                           pp, hidden_size, unquantized_bytes, pp_seconds_per_byte):
    return parallel.ep_alltoall_seconds(ep, moe_layers, scaleout_latency_seconds, 0, ep_bytes_per_token_layer,
                                        ep_seconds_per_byte) \
        + parallel.pp_handoff_seconds(pp, scaleout_latency_seconds, 0, hidden_size, unquantized_bytes,
                                      pp_seconds_per_byte)


@line("Parallel communication per token", "s", BANDWIDTH,
      "What one more token of a step adds to its EP and PP transfers (for the inverse of TPOT).")
def parallel_seconds_per_token(parallel_seconds_per_step, parallel_fixed_seconds, step_tokens):
    return (parallel_seconds_per_step - parallel_fixed_seconds) / step_tokens

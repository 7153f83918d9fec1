"""The plan's what-if lines: closed-form inverses (longest context, fewest GPUs, largest batch) and QPS.

One declaration per line, like :mod:`inference_ledger.graph.plan_lines` (``derived`` for a formula under the plan's
names, ``@line`` for glue); the formulas they use are in :mod:`inference_ledger.formulas.whatif`.  The fit test at each TP degree of one node is spelt
out once, as the family ``TP_CANDIDATES`` instantiated at each TP degree of the GPU's node (weights,
workspace and KV budget as members), so every cell formula stays short enough to audit.
"""

from __future__ import annotations

from inference_ledger.formulas import engine_ledger, ledger, serving, whatif
from inference_ledger.core.sheetfuncs import eq, floor, le, maximum, minimum, where
from inference_ledger.core.line import BANDWIDTH, COST, FIT, MEMORY, Family, derived, line, product, ratio_up, total


@line("KV tokens per sequence at this concurrency", "tokens", MEMORY,
      "The engine's KV budget shared by the concurrent sequences, in all-layer tokens: budget / (B x KV per token "
      "per GPU).")
def kv_tokens_per_sequence(kv_cache_budget_bytes_per_gpu, concurrency, kv_bytes_per_token_per_gpu):
    return kv_cache_budget_bytes_per_gpu / (concurrency * kv_bytes_per_token_per_gpu)


max_context_tokens = derived("max_context_tokens", whatif.context_for_tokens,
    "Longest context that fits at this concurrency", "tokens", MEMORY,
    "Inverse of the memory ledger for the context: the KV budget shared by the sequences (sliding-window "
    "layers included).", tokens="kv_tokens_per_sequence")


# --- the fit test at each TP degree of one node: a family of named members, so no cell inlines the whole graph ---


def activation_at_tp(tp, max_num_batched_tokens, hidden_size, intermediate_size, experts_per_token, unquantized_bytes,
                     sampler_activation_bytes_per_gpu):
    """The engine profile's activation peak at a TP degree (the sampler does not split)."""
    prefill = engine_ledger.prefill_activation_bytes(max_num_batched_tokens, hidden_size, intermediate_size,
                                                     experts_per_token, unquantized_bytes, tp)
    return engine_ledger.activation_peak_bytes(prefill, sampler_activation_bytes_per_gpu)


#: The fit test at each TP degree one node offers (1, 2, 4, ... up to the GPU's gpus_per_node): each member is
#: written once, its ``tp`` the candidate; ``plan --json`` nests it (tp_candidates: {"1": {...}, "2": {...}}) and the
#: workbook writes it as a table, one column per candidate.
TP_CANDIDATES = Family(
    "tp_candidates", "Fit at each TP degree of one node", "tp", "gpus_per_node", whatif.tp_candidates,
    whatif.tp_candidate_formula,
    "The plan's memory ledger and fit test with the model split over each TP degree one node offers (the powers of "
    "two up to gpus_per_node): what min_gpus_to_fit chooses from.")


@TP_CANDIDATES.member("Weights per GPU", "B", MEMORY,
                      "Weights per GPU (MoE padding included) with the model split over this TP degree.")
def weights_bytes_per_gpu(tp, weights_bytes, num_layers, num_experts, hidden_size, intermediate_size, moe_pad_hidden,
                          moe_pad_intermediate, weight_bytes, moe_kernel_pads):
    return ledger.per_gpu(weights_bytes, tp) + engine_ledger.moe_padding_bytes_per_gpu(
        num_layers, num_experts, hidden_size, intermediate_size, tp, moe_pad_hidden, moe_pad_intermediate, weight_bytes,
        moe_kernel_pads)


@TP_CANDIDATES.member("Workspace per GPU", "B", MEMORY,
                      "Activation peak + non-torch memory with the model split over this TP degree.")
def workspace_bytes_per_gpu(tp, max_num_batched_tokens, hidden_size, intermediate_size, experts_per_token,
                            unquantized_bytes, sampler_activation_bytes_per_gpu, cuda_context_bytes, nccl_bytes):
    return activation_at_tp(tp, max_num_batched_tokens, hidden_size, intermediate_size, experts_per_token,
                            unquantized_bytes, sampler_activation_bytes_per_gpu) \
        + engine_ledger.non_torch_bytes(cuda_context_bytes, nccl_bytes, tp)


@TP_CANDIDATES.member("Engine rule adjustment per GPU", "B", MEMORY,
                      "kv_budget_rule_adjustment_bytes_per_gpu with the model split over this TP degree.")
def kv_budget_rule_adjustment_bytes_per_gpu(tp, kv_budget_rule, gpu_memory_utilization, weights_bytes_per_gpu,
                                            workspace_bytes_per_gpu, cuda_context_bytes, nccl_bytes):
    non_torch = engine_ledger.non_torch_bytes(cuda_context_bytes, nccl_bytes, tp)
    return engine_ledger.kv_budget_rule_adjustment(kv_budget_rule, gpu_memory_utilization, weights_bytes_per_gpu,
                                                   non_torch, workspace_bytes_per_gpu)


@TP_CANDIDATES.member("KV cache budget per GPU", "B", MEMORY,
                      "The engine's KV budget with the model split over this TP degree.")
def kv_cache_budget_bytes_per_gpu(usable_bytes_per_gpu, weights_bytes_per_gpu, workspace_bytes_per_gpu,
                                  kv_budget_rule_adjustment_bytes_per_gpu):
    return usable_bytes_per_gpu - weights_bytes_per_gpu - workspace_bytes_per_gpu \
        + kv_budget_rule_adjustment_bytes_per_gpu


@TP_CANDIDATES.member("Fits", "1/0", FIT,
                      "The fit test with the model split over this TP degree: the peak KV per GPU at that split "
                      "within that KV budget.")
def fits(tp, kv_bytes_peak, kv_heads, mla_latent_dim, kv_cache_budget_bytes_per_gpu):
    shards = ledger.kv_shards(kv_heads, tp, mla_latent_dim)
    return ledger.fits(ledger.per_gpu(kv_bytes_peak, shards), kv_cache_budget_bytes_per_gpu)


@TP_CANDIDATES.member("Fits within the node", "1/0", FIT,
                      "Fits, and this TP degree is within the GPU's node (gpus_per_node): a table column beyond the "
                      "node counts as not fitting.")
def fits_in_node(tp, gpus_per_node, fits):
    return where(le(tp, gpus_per_node), fits, 0)


@line("Fewest GPUs that fit (engine budget)", "GPUs", MEMORY,
      "Smallest TP degree of one node (1, 2, 4, ... up to gpus_per_node) whose GPUs hold this load: the first of "
      "tp_candidates that fits within the node (0 = none does).")
def min_gpus_to_fit(tp_candidates):
    at = list(tp_candidates.values())
    return whatif.first_fit([c["tp"] for c in at], [c["fits_in_node"] for c in at])


@line("Fixed decode time per step", "s", BANDWIDTH,
      "The part of a step that does not grow with the batch: all-reduce latencies + per-layer and per-step overhead.")
def decode_fixed_seconds(decode_overhead_seconds, tp, tp_allreduces_per_pass, allreduce_path_latency_seconds,
                         allreduce_link_bw, parallel_fixed_seconds):
    return decode_overhead_seconds + engine_ledger.allreduce_seconds(tp, tp_allreduces_per_pass,
                                                                     allreduce_path_latency_seconds, 0,
                                                                     allreduce_link_bw) \
        + parallel_fixed_seconds


@line("All-reduce time per token", "s", BANDWIDTH,
      "What each token of a step adds to its all-reduces: its ring bytes over the interconnect (a rank's share of them "
      "under attention DP, whose ranks all-reduce their own tokens).")
def allreduce_seconds_per_sequence(tp, tp_allreduces_per_pass, hidden_size, unquantized_bytes, dp_attention,
                                   allreduce_link_bw):
    return engine_ledger.allreduce_seconds(tp, tp_allreduces_per_pass, 0,
                                           hidden_size * unquantized_bytes / dp_attention, allreduce_link_bw)


@line("Step seconds per decoding sequence", "s", BANDWIDTH,
      "What one more decoding sequence adds to a step: its KV read (kv_read_bytes_per_sequence) / (BW x KV-read "
      "efficiency).")
def kv_seconds_per_sequence(kv_read_bytes_per_sequence, hbm_bw, kv_read_efficiency):
    return kv_read_bytes_per_sequence / (hbm_bw * kv_read_efficiency)


@line("Compute seconds per token", "s", BANDWIDTH,
      "What one more token of a step adds when compute-bound: 2 x N_active / the replica's GPUs / (peak x compute "
      "efficiency).")
def flops_seconds_per_token(active_params, gpus_per_replica, peak_flops, decode_compute_efficiency):
    return serving.step_flops(active_params, 1) / gpus_per_replica / (peak_flops * decode_compute_efficiency)


all_extra_expert_bytes = derived("all_extra_expert_bytes", serving.extra_expert_bytes,
    "Every routed expert beyond one token's", "B", BANDWIDTH,
    "MoE layers x (E - k) x 3 x hidden x intermediate x bytes: the most a step can add to the weight read.",
    distinct_experts="num_experts", num_layers="moe_layers")


@line("Weight streaming per step, every expert", "s", BANDWIDTH,
      "Active weights + every routed expert (an upper bound for MoE, exact for dense) / (BW x weight-streaming "
      "efficiency).")
def weight_seconds_all_experts(weights_read_bytes, routed_active_bytes, all_extra_expert_bytes, tp, gpus_per_stage,
                               hbm_bw, bw_efficiency):
    return serving.weight_read_per_gpu(weights_read_bytes, routed_active_bytes, all_extra_expert_bytes, tp,
                                       gpus_per_stage) / (hbm_bw * bw_efficiency)


#: The batch meeting the TPOT target on each bound of the roofline step (what tpot_max_batch takes the least of).
tpot_batch_bandwidth, tpot_batch_compute = (
    derived(f"tpot_batch_{bound}", formula, f"Batch meeting the TPOT target, {how}", "sequences", BANDWIDTH,
            f"Decode batch whose {step} step (prompt chunks, KV reads, all-reduces, fixed time) meets the target.",
            fixed_seconds="decode_fixed_seconds", allreduce_seconds_per_token="allreduce_seconds_per_sequence", **own)
    for bound, formula, how, step, own in (
        ("bandwidth", serving.tpot_batch_bandwidth, "streaming", "weight-streaming",
         {"weight_seconds": "weight_seconds_all_experts"}),
        ("compute", serving.tpot_batch_compute, "compute-bound", "compute-bound", {})))


@line("Largest batch meeting the TPOT target", "sequences", BANDWIDTH,
      "Inverse of the expected TPOT: the most decoding sequences (KV cap aside) meeting the target (0 = none; MoE: "
      "with every expert read, a lower bound): from the kernel tables' step, or the roofline's two bounds.")
def tpot_max_batch(kernel_priced, tpot_batch_kernel, tpot_batch_bandwidth, tpot_batch_compute):
    return maximum(floor(where(eq(kernel_priced, 1), tpot_batch_kernel,
                               minimum(tpot_batch_bandwidth, tpot_batch_compute))), 0)


@line("Concurrency meeting memory and TPOT", "sequences", BANDWIDTH,
      "The most sequences in flight that fit in memory, meet the TPOT target and the schedulers run.")
def serving_concurrency(max_concurrency, tpot_max_batch, max_running_sequences):
    return minimum(max_concurrency, tpot_max_batch, max_running_sequences)


ttft_slot_seconds = total("ttft_slot_seconds", ("ttft_service_seconds", "prefill_bound_ttft_seconds"),
    "TTFT a slot holds", "s", BANDWIDTH,
    "A lone prompt's service time + the wait for prefill room where the prompts outrun a chunking engine's token "
    "budget (each step takes at most its room of prompt tokens); no queueing.")


qps_per_replica = derived("qps_per_replica", whatif.qps_per_replica, "QPS per replica", "requests/s", BANDWIDTH,
    "Little's law over the slots: effective concurrency / (the TTFT a slot holds + (output tokens - 1) x TPOT).",
    concurrency="effective_concurrency", ttft_seconds="ttft_slot_seconds")


replicas_for_qps = derived("replicas_for_qps", ledger.replicas_needed, "Replicas for the target QPS", "replicas", COST,
    "Whole model copies whose QPS covers the target (at least one).",
    required_tokens_per_second="target_qps", tokens_per_second_per_replica="qps_per_replica")


gpus_for_qps = product("gpus_for_qps", ("replicas_for_qps", "gpus_per_replica"),
    "GPUs for the target QPS", "GPUs", COST,
    "Replicas x GPUs per replica.")


servers_for_qps = ratio_up("servers_for_qps", ("gpus_for_qps", "gpus_per_server"),
    "Servers for the target QPS", "servers", COST,
    "GPUs for the target QPS over GPUs per server, rounded up to whole servers.")


qps_capacity = product("qps_capacity", ("replicas_for_qps", "qps_per_replica"),
    "QPS the replicas sustain", "requests/s", COST,
    "Replicas x QPS per replica.")


@line("QPS headroom", "fraction", COST,
      "Capacity over target, minus one: the spare share of the provisioned QPS.")
def qps_headroom(qps_capacity, target_qps):
    return qps_capacity / target_qps - 1


monthly_gpu_hours_qps = derived("monthly_gpu_hours_qps", whatif.monthly_gpu_hours,
    "Monthly GPU-hours for the target QPS", "GPU-h/month", COST,
    "GPUs for the target QPS x 730 h.", num_gpus="gpus_for_qps")


monthly_cost_qps = derived("monthly_cost_qps", ledger.monthly_cost, "Monthly cost for the target QPS", "$/month", COST,
    "GPUs for the target QPS x price x 730 h.", num_gpus="gpus_for_qps")

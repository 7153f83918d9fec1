"""The plan's ledger lines: memory, compute, bandwidth, cost and fit, one declaration each.

Each is one line of the plan (see :mod:`inference_ledger.core.line`): its name is the line's name, its
parameters are the inputs and lines it uses.  A line that is a formula of :mod:`inference_ledger.formulas.ledger`
(the paper's formulas) or :mod:`inference_ledger.formulas.engine_ledger` (what the serving engine adds) under the
plan's names is declared with ``derived`` (no wrapper that forwards); one that is a product, sum, ratio or difference
of other lines with ``product``, ``total``, ``ratio`` or ``difference``; one that combines formulas or does other
arithmetic over other lines is an ``@line`` function; a formula that already has the line's name and parameters
carries its own ``@line`` where it is written (``kv_elements_per_token_layer``, ``prefill_flops``,
``required_tokens_per_second``, ``decode_overhead_seconds``, ``verdict``).  The same function computes the number and
writes the cell formula.  The what-if lines (inverses, QPS) are in :mod:`inference_ledger.formulas.whatif_lines`.
"""

from __future__ import annotations

from inference_ledger.formulas import engine_ledger, ledger, parallel, serving
from inference_ledger.core.sheetfuncs import and_, eq, floor, ge, le, maximum, where
from inference_ledger.core.line import BANDWIDTH, COMPUTE, COST, FIT, MEMORY, derived, difference, line, product, ratio, total
from inference_ledger.formulas import whatif


weights_bytes = derived("weights_bytes", ledger.weights_bytes_mixed, "Weights", "B", MEMORY,
    "Resident weights: quantized layers at the weight dtype, the rest at BF16 (seed: W = N x bytes).")


moe_padding_bytes_per_gpu = derived("moe_padding_bytes_per_gpu", engine_ledger.moe_padding_bytes_per_gpu,
    "MoE kernel padding per GPU", "B", MEMORY,
    "Experts padded to the MoE kernel's tile where the weight format's MoE kernels pad (MXFP4): "
    "pads x L x E x 3 x (padded - actual hidden x intermediate / TP) x bytes.",
    pad_hidden="moe_pad_hidden", pad_intermediate="moe_pad_intermediate")


@line("Weights per GPU", "B", MEMORY,
      "Tensor parallelism splits every weight matrix evenly over the TP GPUs (routed experts over every GPU of a "
      "stage, layers over the PP stages); plus any MoE kernel padding.")
def weights_bytes_per_gpu(weights_bytes, expert_weights_bytes, resident_expert_bytes, tp, gpus_per_stage, pp,
                          moe_padding_bytes_per_gpu):
    return parallel.weights_per_gpu(weights_bytes, expert_weights_bytes, resident_expert_bytes, tp, gpus_per_stage,
                                    pp) + moe_padding_bytes_per_gpu


prefill_activation_bytes_per_gpu = derived("prefill_activation_bytes_per_gpu", engine_ledger.prefill_activation_bytes,
    "Prefill chunk activations per GPU", "B", MEMORY,
    "max_num_batched_tokens x bytes x ((3 + routed experts) x hidden + 3 x experts x intermediate / TP): "
    "the MLP's live tensors.", tokens="max_num_batched_tokens", act_bytes="unquantized_bytes")


sampler_activation_bytes_per_gpu = derived("sampler_activation_bytes_per_gpu", engine_ledger.sampler_activation_bytes,
    "Sampler working set per GPU", "B", MEMORY,
    "max_num_seqs x vocab x sampler bytes per logit: the profile samples one logits row per sequence.")


activation_peak_bytes_per_gpu = derived("activation_peak_bytes_per_gpu", engine_ledger.activation_peak_bytes,
    "Activation peak per GPU", "B", MEMORY,
    "The larger of the prefill chunk and the sampler (they run one after the other in the engine's profile).",
    prefill_bytes="prefill_activation_bytes_per_gpu", sampler_bytes="sampler_activation_bytes_per_gpu")


non_torch_bytes_per_gpu = derived("non_torch_bytes_per_gpu", engine_ledger.non_torch_bytes,
    "Non-torch memory per GPU", "B", MEMORY,
    "CUDA context, plus NCCL buffers when TP > 1.")


workspace_bytes_per_gpu = total("workspace_bytes_per_gpu", ("activation_peak_bytes_per_gpu", "non_torch_bytes_per_gpu"),
    "Workspace per GPU", "B", MEMORY,
    "Activation peak + non-torch memory: what the engine keeps beside weights and KV.")


kv_budget_rule_adjustment_bytes_per_gpu = derived(
    "kv_budget_rule_adjustment_bytes_per_gpu", engine_ledger.kv_budget_rule_adjustment,
    "Engine rule adjustment per GPU", "B", MEMORY,
    "What the engine's KV budget rule adds to vLLM's (0 for vLLM; SGLang also leaves activations and part of the "
    "non-torch memory to the KV cache; TensorRT-LLM keeps back a share of what weights and workspace leave).",
    rule="kv_budget_rule", memory_fraction="gpu_memory_utilization", non_torch="non_torch_bytes_per_gpu",
    workspace_bytes="workspace_bytes_per_gpu")


@line("KV cache budget per GPU (engine)", "B", MEMORY,
      "The engine's documented rule (kv_budget_rule): usable memory - weights - workspace, plus the rule's "
      "adjustment; negative means the engine refuses to start.")
def kv_cache_budget_bytes_per_gpu(usable_bytes_per_gpu, weights_bytes_per_gpu, workspace_bytes_per_gpu,
                                  kv_budget_rule_adjustment_bytes_per_gpu):
    return usable_bytes_per_gpu - weights_bytes_per_gpu - workspace_bytes_per_gpu \
        + kv_budget_rule_adjustment_bytes_per_gpu


kv_bytes_per_token = product("kv_bytes_per_token", ("kv_elements_per_token_layer", "kv_bytes", "num_layers"),
    "KV per token", "B/token", MEMORY,
    "Seed: 2 x L x K x H x bytes; every layer counted (engines size their KV pool this way).")


@line("KV split across GPUs", "x", MEMORY,
      "KV heads split over TP, replicated once TP exceeds them (an MLA latent is not split); x DP-attention ranks "
      "(each holds its own sequences) x PP stages (each holds its layers).")
def kv_shards(kv_heads, tp, mla_latent_dim, dp_attention, pp):
    return ledger.kv_shards(kv_heads, tp, mla_latent_dim) * dp_attention * pp


kv_bytes_per_token_per_gpu = derived("kv_bytes_per_token_per_gpu", ledger.per_gpu,
    "KV per token per GPU", "B/token", MEMORY,
    "KV per token divided by the KV split.", total="kv_bytes_per_token", shards="kv_shards")


context_tokens = total("context_tokens", ("input_tokens", "output_tokens"), "Context per sequence", "tokens", MEMORY,
    "Peak context a sequence holds: input + output tokens.")


kv_bytes_per_sequence = derived("kv_bytes_per_sequence", ledger.kv_sequence_bytes,
    "KV per sequence at full context", "B", MEMORY,
    "Full layers hold the whole context, sliding-window layers at most the window.",
    kv_elements_layer="kv_elements_per_token_layer", context="context_tokens")


kv_bytes_peak = product("kv_bytes_peak", ("kv_bytes_per_sequence", "concurrency"),
    "KV at peak concurrency", "B", MEMORY,
    "Planned for the peak number of concurrent sequences at full context, not the average.")


kv_bytes_per_gpu = derived("kv_bytes_per_gpu", ledger.per_gpu, "KV per GPU at peak", "B", MEMORY,
    "Peak KV divided by the KV split.", total="kv_bytes_peak", shards="kv_shards")


@line("Total per GPU", "B", MEMORY,
      "Weights + KV + workspace on each GPU: all three, never weights only.")
def total_bytes_per_gpu(weights_bytes_per_gpu, kv_bytes_per_sequence, kv_shards, concurrency,
                        workspace_bytes_per_gpu):
    return ledger.memory_total_bytes(weights_bytes_per_gpu, kv_bytes_per_sequence / kv_shards, concurrency,
                                     workspace_bytes_per_gpu)


usable_bytes_per_gpu = derived("usable_bytes_per_gpu", ledger.usable_bytes, "Usable memory per GPU", "B", MEMORY,
    "GPU memory x gpu_memory_utilization: what the engine lets itself use.")


headroom_bytes_per_gpu = difference("headroom_bytes_per_gpu", ("kv_cache_budget_bytes_per_gpu", "kv_bytes_per_gpu"),
    "KV budget to spare per GPU", "B", MEMORY,
    "What the engine's KV budget has left after the peak KV (negative = does not fit); under vLLM's rule "
    "this is usable memory - total.")


@line("Total memory, all GPUs", "B", MEMORY,
      "Weights + peak KV + one workspace per GPU of the replica.")
def memory_total_bytes(weights_bytes, kv_bytes_per_sequence, concurrency, workspace_bytes_per_gpu, gpus_per_replica):
    return ledger.memory_total_bytes(weights_bytes, kv_bytes_per_sequence, concurrency,
                                     workspace_bytes_per_gpu * gpus_per_replica)


@line("GPUs needed (seed rule)", "GPUs", MEMORY,
      "Fewest GPUs, as a power-of-two TP degree, whose usable memory holds weights + peak KV.")
def gpus_needed(weights_bytes, kv_bytes_peak, gpu_memory_bytes, gpu_memory_utilization, workspace_bytes_per_gpu):
    return ledger.gpus_needed(weights_bytes + kv_bytes_peak, gpu_memory_bytes, gpu_memory_utilization,
                              workspace_bytes_per_gpu)


@line("KV tokens that fit", "tokens", MEMORY,
      "Whole tokens of KV the engine's KV budget holds per GPU (its log: 'GPU KV cache size: N tokens').")
def kv_capacity_tokens(kv_cache_budget_bytes_per_gpu, kv_bytes_per_token_per_gpu):
    return maximum(floor(kv_cache_budget_bytes_per_gpu / kv_bytes_per_token_per_gpu), 0)


@line("Max concurrency at this context", "sequences", MEMORY,
      "Whole sequences of this context the KV budget holds: KV budget / KV per sequence per GPU (sliding "
      "windows included).")
def max_concurrency(kv_cache_budget_bytes_per_gpu, kv_bytes_per_sequence, kv_shards):
    return whatif.max_sequences(kv_cache_budget_bytes_per_gpu, kv_bytes_per_sequence / kv_shards)


flops_request = derived("flops_request", ledger.flops_request, "FLOPs per request", "FLOP", COMPUTE,
    "Seed: 2N x S + 2N x T with N the active parameters.", num_params="active_params")


prefill_seconds = derived("prefill_seconds", ledger.compute_seconds, "Prefill time (TTFT floor)", "s", COMPUTE,
    "Prefill FLOPs over TP GPUs at dense peak x prefill efficiency: compute-bound.",
    flops="prefill_flops", efficiency="prefill_efficiency", num_gpus="tp")


weights_read_bytes = derived("weights_read_bytes", ledger.weights_bytes_mixed,
    "Weight bytes read per decode step", "B", BANDWIDTH,
    "Every active weight is read from HBM once per step (MoE reads only the routed experts).",
    num_params="active_params", quantized_params="active_quantized_params")


@line("Compute-bound from batch", "sequences", COMPUTE,
      "Roofline ridge: batch where 2 x N x B FLOPs take as long as reading the weights.")
def ridge_batch(peak_flops, hbm_bw, weights_read_bytes, active_params):
    return ledger.ridge_batch(peak_flops, hbm_bw, weights_read_bytes / active_params)


@line("Decode FLOPs per step per GPU", "FLOP", COMPUTE,
      "2 x N_active per decoding sequence (effective concurrency), split over the replica's GPUs (TP; DP-attention "
      "ranks and PP stages each work on their own sequences); prompt chunks not included.")
def decode_flops_per_step_per_gpu(active_params, effective_concurrency, gpus_per_replica):
    return ledger.forward_flops(active_params, effective_concurrency) / gpus_per_replica


decode_bytes_per_step_per_gpu = total("decode_bytes_per_step_per_gpu", ("decode_weight_bytes_per_gpu",
                                                                        "step_kv_bytes_per_gpu"),
    "Bytes read per decode step per GPU", "B", BANDWIDTH,
    "Weights a pure-decode step reads (MoE: every distinct expert of the decoding sequences' tokens; prompt chunks "
    "only add to a step) + every decoding sequence's KV at the decode context.")


tpot_floor_seconds = derived("tpot_floor_seconds", ledger.decode_step_seconds, "TPOT floor", "s", BANDWIDTH,
    "Roofline at 100% on the decode context S + T/2: max(bytes / BW, FLOPs / peak). Seed: TPOT >= weight bytes / "
    "HBM bandwidth.", bytes_moved="decode_bytes_per_step_per_gpu", flops="decode_flops_per_step_per_gpu",
    bw_efficiency=None, compute_efficiency=None)


@line("TP all-reduce time per step", "s", BANDWIDTH,
      "TP all-reduces per pass x (latency + 2 (TP-1)/TP x a rank's tokens per step x hidden x bytes / the all-reduce's "
      "link: the interconnect, or host memory without peer-to-peer); 0 at TP 1.")
def allreduce_seconds_per_step(tp, tp_allreduces_per_pass, allreduce_path_latency_seconds, rank_step_tokens,
                               hidden_size, unquantized_bytes, allreduce_link_bw):
    return engine_ledger.allreduce_seconds(tp, tp_allreduces_per_pass, allreduce_path_latency_seconds,
                                           rank_step_tokens * hidden_size * unquantized_bytes, allreduce_link_bw)


@line("Decode step's kernels", "s", BANDWIDTH,
      "The step's operations priced from the measured kernel tables (never below the TPOT floor), or on the roofline "
      "(linear layers + attention KV reads + TP all-reduces + per-layer and per-step overhead) where the GPU has no "
      "tables.")
def decode_gpu_seconds(kernel_priced, decode_kernel_seconds, tpot_floor_seconds, step_linear_seconds, step_kv_seconds,
                       allreduce_seconds_per_step, decode_overhead_seconds):
    roofline = step_linear_seconds + step_kv_seconds + allreduce_seconds_per_step + decode_overhead_seconds
    return where(eq(kernel_priced, 1), maximum(decode_kernel_seconds, tpot_floor_seconds), roofline)


@line("Decode: waiting for eager dispatch", "s", BANDWIDTH,
      "An eager step (no CUDA graph) lasts the longer of its kernels and the CPU time to dispatch them: what the host "
      "time adds beyond the kernels, max(eager host time - kernels, 0); 0 for a graphed step.")
def decode_eager_wait_seconds(eager_host_seconds_per_step, decode_gpu_seconds):
    return maximum(eager_host_seconds_per_step - decode_gpu_seconds, 0)


tpot_seconds = total("tpot_seconds", ("decode_gpu_seconds", "decode_eager_wait_seconds", "parallel_seconds_per_step",
                                      "prefill_stall_seconds", "scheduler_seconds_per_step"),
    "TPOT expected", "s", BANDWIDTH,
    "The mean step a sequence sees (steady state), at the effective concurrency with its share of prompt chunks: "
    "the step's kernels + the wait for eager dispatch (no CUDA graph) + EP/PP communication + whole-prompt prefill "
    "stalls + the scheduler CPU time a non-overlapping engine makes the GPU wait for.")


ttft_seconds = derived("ttft_seconds", serving.benchmark_ttft_seconds, "TTFT a benchmark reports", "s", COMPUTE,
    "As serving benchmarks report it: the mean over N requests of c clients started together (the first wave, "
    "then the lockstep groups of the steady state), never shorter than one step, + the wait for a slot. The TTFT "
    "target is checked on ttft_open_seconds.")


tokens_per_second = product("tokens_per_second", ("qps_per_replica", "output_tokens"),
    "Output tokens/s (one replica)", "tokens/s", BANDWIDTH,
    "QPS per replica x output tokens: the effective concurrency's T tokens per request cycle (steady state).")


benchmark_tokens_per_second = derived("benchmark_tokens_per_second", whatif.benchmark_tokens_per_second,
    "Output tokens/s a benchmark measures", "tokens/s", BANDWIDTH,
    "As serving benchmarks print it: N x T generated tokens over the run, to its last request: ROUNDUP(N / C) rounds "
    "of a request's latency (the benchmark's TTFT + (T - 1) x its TPOT), a one-round run (N <= C) longer by TTFT - the "
    "lone prompt's (its last first token); at most the steady state; static: the steady state.",
    tpot_seconds="benchmark_tpot_seconds")


tokens_per_second_per_gpu = ratio("tokens_per_second_per_gpu", ("tokens_per_second", "gpus_per_replica"),
    "Output tokens/s per GPU", "tokens/s", BANDWIDTH,
    "Replica throughput over its GPUs.")


@line("Request latency", "s", BANDWIDTH,
      "TTFT + output tokens x TPOT.")
def request_seconds(ttft_seconds, output_tokens, tpot_seconds):
    return ttft_seconds + output_tokens * tpot_seconds


cost_per_hour = derived("cost_per_hour", ledger.cost_per_hour, "Cost per hour (one replica)", "$/h", COST,
    "Price per GPU-hour x the replica's GPUs.", num_gpus="gpus_per_replica")


cost_per_million_output_tokens = derived("cost_per_million_output_tokens", ledger.cost_per_million_output_tokens,
    "Cost per million output tokens", "$/Mtok", COST,
    "Hourly cost over an hour of output at full concurrency.", num_gpus="gpus_per_replica")


replicas_needed = derived("replicas_needed", ledger.replicas_needed, "Replicas for the forecast", "replicas", COST,
    "Whole model copies to serve the forecast's token rate (at least one).",
    tokens_per_second_per_replica="tokens_per_second")


gpus_total = product("gpus_total", ("replicas_needed", "gpus_per_replica"), "GPUs for the forecast", "GPUs", COST,
    "Replicas x GPUs per replica.")


monthly_cost = derived("monthly_cost", ledger.monthly_cost, "Monthly GPU cost", "$/month", COST,
    "GPUs for the forecast x price x 730 h.", num_gpus="gpus_total")


fits = derived("fits", ledger.fits, "Fits in memory", "1/0", FIT,
    "1 when the peak KV per GPU fits the engine's KV budget (weights, activations and non-torch taken "
    "out; a negative budget never fits).",
    total_bytes_per_gpu="kv_bytes_per_gpu", usable_bytes_per_gpu="kv_cache_budget_bytes_per_gpu")


@line("KV holds the peak concurrency", "1/0", FIT,
      "1 when the KV capacity holds the peak concurrency at full context.")
def kv_fits(concurrency, max_concurrency):
    return where(le(concurrency, max_concurrency), 1, 0)


@line("TTFT meets target", "1/0", FIT,
      "1 when a replica runs (the KV budget holds one sequence) and the TTFT a service sees at its target QPS (open "
      "arrivals: the prompt's prefill + half a running step) <= target; a benchmark's first wave (ttft_seconds) is "
      "not what the promise is about.")
def ttft_ok(ttft_open_seconds, ttft_target, max_concurrency):
    """A plan that does not start meets no target, whatever one sequence's TTFT would be."""
    return where(and_(le(ttft_open_seconds, ttft_target), ge(max_concurrency, 1)), 1, 0)


@line("TPOT meets target", "1/0", FIT,
      "1 when a replica runs (the KV budget holds one sequence) and expected TPOT <= target.")
def tpot_ok(tpot_seconds, tpot_target, max_concurrency):
    """A plan that does not start meets no target, whatever one sequence's TPOT would be."""
    return where(and_(le(tpot_seconds, tpot_target), ge(max_concurrency, 1)), 1, 0)


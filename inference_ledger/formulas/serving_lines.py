"""The steady-state serving lines: effective concurrency, decode context, prefill mix, MoE distinct experts, the step.

One plain function per line, like :mod:`inference_ledger.graph.plan_lines`; the formulas (with their
sources and the queueing model) are in :mod:`inference_ledger.formulas.serving`.  The plan's existing keys
``tpot_seconds``, ``ttft_seconds``, ``tokens_per_second`` and ``qps_per_replica`` are computed from
these lines (their definitions stay in plan_lines / whatif_lines).
"""

from __future__ import annotations

from inference_ledger.formulas import ledger, serving
from inference_ledger.core.sheetfuncs import ceil, eq, maximum, where
from inference_ledger.core.line import BANDWIDTH, COMPUTE, FIT, MEMORY, line


@line("Mean context of the decode steps", "tokens", MEMORY,
      "S + T/2: step j of the T - 1 decode steps attends over S + j - 1 tokens. TPOT and its floor are priced here.")
def decode_context_tokens(input_tokens, output_tokens):
    return serving.decode_context(input_tokens, output_tokens)


@line("KV per sequence at the decode context", "B", MEMORY,
      "KV of one sequence at the mean decode context (sliding-window layers at most the window).")
def kv_bytes_per_sequence_decode(kv_elements_per_token_layer, kv_bytes, num_layers, decode_context_tokens,
                                 sliding_layers, window):
    return ledger.kv_sequence_bytes(kv_elements_per_token_layer, kv_bytes, num_layers, decode_context_tokens,
                                    sliding_layers, window)


@line("Sequences the schedulers run at most", "sequences", FIT,
      "max_num_seqs per scheduler x DP-attention ranks (each rank schedules its own sequences).")
def max_running_sequences(max_num_seqs, dp_attention):
    return max_num_seqs * dp_attention


@line("Effective concurrency", "sequences", FIT,
      "Sequences decoding together: min(requested concurrency, sequences the KV budget holds at full context, "
      "the schedulers' limit), at least 1; the rest queue.")
def effective_concurrency(concurrency, max_concurrency, max_running_sequences):
    return serving.effective_concurrency(concurrency, max_concurrency, max_running_sequences)


@line("Prompt tokens per other sequence per step", "tokens", COMPUTE,
      "Continuous batching: each other sequence starts a new S-token prompt every T steps, S / T per step; static: 0.")
def prompt_per_sequence(batching, input_tokens, output_tokens):
    return serving.prompt_per_sequence(batching, input_tokens, output_tokens)


@line("Prompt tokens per decode step", "tokens", COMPUTE,
      "The other sequences' prompts mixed into a step a sequence sees, in chunks: (B - 1) x S / T; 0 when the engine "
      "runs each prompt whole in its own iteration (chunked_prefill 0: the prefill stalls the step instead).")
def prefill_tokens_per_step(effective_concurrency, prompt_per_sequence, chunked_prefill):
    return (effective_concurrency - 1) * prompt_per_sequence * chunked_prefill


@line("Tokens per step", "tokens", COMPUTE,
      "Decode tokens (one per sequence) + prompt tokens mixed in.")
def step_tokens(effective_concurrency, prefill_tokens_per_step):
    return effective_concurrency + prefill_tokens_per_step


@line("Distinct experts per layer per step", "experts", BANDWIDTH,
      "E x (1 - (1 - k/E)^tokens): every expert any token of the step routes to is read (0 for a dense model).")
def moe_distinct_experts(num_experts, experts_per_token, step_tokens):
    return serving.distinct_experts(num_experts, experts_per_token, step_tokens)


@line("Routed experts read per step beyond one token's", "B", BANDWIDTH,
      "MoE layers x (distinct experts - k) x 3 x hidden x intermediate x bytes: what a batch adds to the weight read.")
def step_extra_expert_bytes(moe_distinct_experts, experts_per_token, moe_layers, hidden_size, intermediate_size,
                            weight_bytes, num_params, active_params):
    return serving.extra_expert_bytes(moe_distinct_experts, experts_per_token, moe_layers, hidden_size,
                                      intermediate_size, weight_bytes, num_params, active_params)


@line("One token's routed experts", "B", BANDWIDTH,
      "MoE layers x k x 3 x hidden x intermediate x bytes: the routed part of the active weights (0 dense).")
def routed_active_bytes(moe_layers, experts_per_token, hidden_size, intermediate_size, weight_bytes):
    return serving.routed_active_bytes(moe_layers, experts_per_token, hidden_size, intermediate_size, weight_bytes)


@line("Weights read per step per GPU", "B", BANDWIDTH,
      "Dense part of the active weights over TP + the routed experts the step touches over the stage's GPUs (EP, "
      "DP attention).")
def step_weight_bytes_per_gpu(weights_read_bytes, routed_active_bytes, step_extra_expert_bytes, tp, gpus_per_stage):
    return serving.weight_read_per_gpu(weights_read_bytes, routed_active_bytes, step_extra_expert_bytes, tp,
                                       gpus_per_stage)


@line("Distinct experts per layer per pure-decode step", "experts", BANDWIDTH,
      "E x (1 - (1 - k/E)^B): the experts a step of the decoding sequences alone routes to (no prompt tokens), what "
      "the TPOT floor reads: a step carrying prompt chunks only adds time.")
def decode_distinct_experts(num_experts, experts_per_token, effective_concurrency):
    return serving.distinct_experts(num_experts, experts_per_token, effective_concurrency)


@line("Routed experts read per pure-decode step beyond one token's", "B", BANDWIDTH,
      "MoE layers x (distinct experts of the decoding sequences - k) x 3 x hidden x intermediate x bytes.")
def decode_extra_expert_bytes(decode_distinct_experts, experts_per_token, moe_layers, hidden_size, intermediate_size,
                              weight_bytes, num_params, active_params):
    return serving.extra_expert_bytes(decode_distinct_experts, experts_per_token, moe_layers, hidden_size,
                                      intermediate_size, weight_bytes, num_params, active_params)


@line("Weights read per pure-decode step per GPU", "B", BANDWIDTH,
      "As the weights read per step, with the experts of the decoding sequences alone (what the TPOT floor reads).")
def decode_weight_bytes_per_gpu(weights_read_bytes, routed_active_bytes, decode_extra_expert_bytes, tp,
                                gpus_per_stage):
    return serving.weight_read_per_gpu(weights_read_bytes, routed_active_bytes, decode_extra_expert_bytes, tp,
                                       gpus_per_stage)


@line("KV read per step per GPU", "B", BANDWIDTH,
      "Every decoding sequence's KV at the decode context, over its KV split.")
def step_kv_bytes_per_gpu(kv_bytes_per_sequence_decode, kv_shards, effective_concurrency):
    return kv_bytes_per_sequence_decode / kv_shards * effective_concurrency


@line("FLOPs per step per GPU", "FLOP", COMPUTE,
      "2 x N_active x tokens per step (decode + prompt chunks), over the replica's GPUs.")
def step_flops_per_gpu(active_params, step_tokens, gpus_per_replica):
    return serving.step_flops(active_params, step_tokens) / gpus_per_replica


@line("Step is compute-bound", "1/0", COMPUTE,
      "1 when the step's FLOPs at the compute efficiency take longer than streaming its weights.")
def step_compute_bound(step_weight_bytes_per_gpu, step_flops_per_gpu, hbm_bw, peak_flops, bw_efficiency,
                       decode_compute_efficiency):
    return serving.compute_bound(step_weight_bytes_per_gpu, step_flops_per_gpu, hbm_bw, peak_flops, bw_efficiency,
                                 decode_compute_efficiency)


@line("Linear layers per step", "s", BANDWIDTH,
      "max(weights / (BW x weight-streaming efficiency), FLOPs / (peak x compute efficiency)).")
def step_linear_seconds(step_weight_bytes_per_gpu, step_flops_per_gpu, hbm_bw, peak_flops, bw_efficiency,
                        decode_compute_efficiency):
    return serving.linear_seconds(step_weight_bytes_per_gpu, step_flops_per_gpu, hbm_bw, peak_flops, bw_efficiency,
                                  decode_compute_efficiency)


@line("Attention KV reads per step", "s", BANDWIDTH,
      "KV read per step / (BW x KV-read efficiency): attention's own kernels, after the linear layers.")
def step_kv_seconds(step_kv_bytes_per_gpu, hbm_bw, kv_read_efficiency):
    return step_kv_bytes_per_gpu / (hbm_bw * kv_read_efficiency)


@line("Prompt tokens a TTFT waits for", "tokens", COMPUTE,
      "Continuous: the request's own prompt S; static: the whole batch's B x S.")
def prefill_batch_tokens(batching, effective_concurrency, input_tokens):
    return serving.prefill_batch_tokens(batching, effective_concurrency, input_tokens)


@line("Prefill chunks", "chunks", COMPUTE,
      "Forward passes the prompt tokens take at max_num_batched_tokens per pass.")
def prefill_chunks(prefill_batch_tokens, max_num_batched_tokens):
    return ceil(prefill_batch_tokens / max_num_batched_tokens)


@line("Distinct experts per layer per prefill chunk", "experts", BANDWIDTH,
      "E x (1 - (1 - k/E)^chunk tokens): a prefill chunk reads nearly every expert.")
def prefill_distinct_experts(num_experts, experts_per_token, prefill_batch_tokens, prefill_chunks):
    return serving.distinct_experts(num_experts, experts_per_token, prefill_batch_tokens / prefill_chunks)


@line("Routed experts a prefill chunk reads beyond one token's", "B", BANDWIDTH,
      "MoE layers x (distinct experts of a chunk - k) x 3 x hidden x intermediate x bytes.")
def prefill_extra_expert_bytes(prefill_distinct_experts, experts_per_token, moe_layers, hidden_size,
                               intermediate_size, weight_bytes, num_params, active_params):
    return serving.extra_expert_bytes(prefill_distinct_experts, experts_per_token, moe_layers, hidden_size,
                                      intermediate_size, weight_bytes, num_params, active_params)


@line("Weights read by the prefill", "B", BANDWIDTH,
      "Chunks x (dense part over TP + the experts a chunk touches over the stage's GPUs).")
def prefill_weight_bytes_per_gpu(prefill_chunks, weights_read_bytes, routed_active_bytes, prefill_extra_expert_bytes,
                                 tp, gpus_per_stage):
    return prefill_chunks * serving.weight_read_per_gpu(weights_read_bytes, routed_active_bytes,
                                                        prefill_extra_expert_bytes, tp, gpus_per_stage)


@line("Prefill on the roofline", "s", COMPUTE,
      "Roofline fallback of a prefill: max(weights read / (BW x e_w), 2 N_active x prompt tokens / TP / (peak x "
      "prefill efficiency)).")
def prefill_roofline_seconds(prefill_weight_bytes_per_gpu, active_params, prefill_batch_tokens, tp, hbm_bw,
                             peak_flops, bw_efficiency, prefill_efficiency):
    return serving.linear_seconds(prefill_weight_bytes_per_gpu, serving.step_flops(active_params, prefill_batch_tokens)
                                  / tp, hbm_bw, peak_flops, bw_efficiency, prefill_efficiency)


@line("TTFT without queueing", "s", COMPUTE,
      "Prefill of the prompt tokens a TTFT waits for: the sum of its operations priced from the measured kernel "
      "tables (never below 2 N_active x tokens / TP / peak), or on the roofline where the GPU has no tables; + its "
      "EP/PP communication.")
def ttft_service_seconds(kernel_tables, prefill_kernel_seconds, prefill_roofline_seconds, active_params,
                         prefill_batch_tokens, tp, peak_flops, prefill_parallel_seconds):
    measured = maximum(prefill_kernel_seconds, serving.step_flops(active_params, prefill_batch_tokens) / tp / peak_flops)
    return where(eq(kernel_tables, 1), measured, prefill_roofline_seconds) + prefill_parallel_seconds


@line("Wait for a slot", "s", COMPUTE,
      "Closed loop at the given concurrency: (concurrency - effective concurrency) / QPS per replica.")
def queue_seconds(concurrency, effective_concurrency, qps_per_replica):
    return serving.queue_seconds(concurrency, effective_concurrency, qps_per_replica)


@line("Binding limit", "code", FIT,
      "What caps the replica: 1 KV cache, 2 max_num_seqs, 3 TPOT target, 4 compute, 0 none (bandwidth-bound).")
def binding_limit(concurrency, max_concurrency, max_running_sequences, tpot_ok, step_compute_bound):
    return serving.binding_limit(concurrency, max_concurrency, max_running_sequences, tpot_ok, step_compute_bound)


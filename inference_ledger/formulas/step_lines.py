"""The step priced per operation from the measured kernel tables, its inverse, and TTFT as benchmarks report it.

One declaration per line, like :mod:`inference_ledger.formulas.serving_lines`; the formulas are in
:mod:`inference_ledger.formulas.serving` and the tables' figures (each operation's floor and time per unit, plan inputs)
come from :mod:`inference_ledger.formulas.kernels`.  ``tpot_seconds`` and ``ttft_service_seconds`` read
``decode_kernel_seconds`` and ``prefill_kernel_seconds`` where the step is priced from tables (``kernel_priced`` 1).
"""

from __future__ import annotations

from inference_ledger.formulas import serving
from inference_ledger.formulas.kernels import op_input_names
from inference_ledger.core.sheetfuncs import eq, gt, maximum, minimum, where
from inference_ledger.core.line import BANDWIDTH, COMPUTE, derived, line, product, ratio, total
from inference_ledger.core.units import ALLREDUCES_PER_LAYER, BATCHING_STATIC, FLOPS_PER_PARAM, STEP_RESIDUAL_DIVISOR

# ---------------------------------------------------------------------------------
# the step per operation from the kernel tables: decode_<op>_seconds one decode step (its decode tokens + any prompt
# chunks), prefill_<op>_seconds the prompt tokens a TTFT waits for, in chunks of max_num_batched_tokens; each a curve
# over its size with a measured floor and time per unit (plan inputs <op>_kernel_*: inference_ledger.formulas.kernels)
# ---------------------------------------------------------------------------------


def layer_gemm_seconds(num_layers, tokens, floor_seconds, seconds_per_token):
    """One GEMM of every layer at M tokens (a step's QKV or O projection): layers x ``serving.gemm_curve``."""
    return num_layers * serving.gemm_curve(tokens, floor_seconds, seconds_per_token)


def chunked_gemm_seconds(chunks, num_layers, tokens, floor_seconds, seconds_per_token):
    """That GEMM over a prefill's chunks, at M = the chunk's tokens: chunks x layers x ``serving.gemm_curve``."""
    return chunks * num_layers * serving.gemm_curve(tokens, floor_seconds, seconds_per_token)


def _gemm_lines(phase, formula, ledger, ops, **rename):
    """One line per GEMM operation of a phase (QKV, O): the phase's curve at its M, over the operation's own measured
    floor and time per token (``ops``: (operation, label, doc) each)."""
    lines = []
    for op, label, doc in ops:
        floor, rate = op_input_names(op)
        lines.append(derived(f"{phase}_{op}_seconds", formula, label, "s", ledger, doc, floor_seconds=floor,
                             seconds_per_token=rate, **rename))
    return tuple(lines)


rank_step_tokens = ratio("rank_step_tokens", ("step_tokens", "dp_attention"), "Tokens per step per attention rank",
    "tokens", COMPUTE, "Tokens per step / DP-attention ranks: the M of the attention's own GEMMs, which each rank runs "
    "over its own sequences with its own copy of the weights (all of the step's tokens without DP attention).")


decode_qkv_seconds, decode_o_seconds = _gemm_lines("decode", layer_gemm_seconds, BANDWIDTH, (
    ("qkv", "Decode: QKV projection", "Layers x QKV GEMM at M = a rank's tokens per step (measured table, "
     "kernels.gemm_curve)."),
    ("o", "Decode: attention output projection", "Layers x O GEMM at M = a rank's tokens per step.")),
    tokens="rank_step_tokens")


def _expert_lines(phase, tokens, distinct_experts, ledger, *label_docs):
    """A phase's expert GEMMs (a decode step's, a prefill chunk's), from its tokens and its distinct experts: the
    touched experts one GPU runs, each one's tokens (the M of its GEMMs) and its time beyond the fused kernel's launch
    (``label_docs``: the three lines' label and doc)."""
    (per_gpu, per_gpu_doc), (tokens_label, tokens_doc), (seconds_label, seconds_doc) = label_docs
    return (derived(f"{phase}_experts_per_gpu", serving.experts_per_gpu, per_gpu, "experts", BANDWIDTH, per_gpu_doc,
                    distinct_experts=distinct_experts),
            derived(f"{phase}_expert_tokens", serving.expert_tokens, tokens_label, "tokens", COMPUTE, tokens_doc,
                    tokens=tokens, distinct_experts=distinct_experts),
            derived(f"{phase}_expert_seconds", serving.expert_extra_seconds, seconds_label, "s", ledger, seconds_doc,
                    expert_tokens=f"{phase}_expert_tokens", floor_seconds="moe_expert_kernel_floor_seconds",
                    seconds_per_token="moe_expert_kernel_seconds_per_token", launch_seconds="moe_kernel_launch_seconds",
                    linear="moe_kernel_table"))


decode_experts_per_gpu, decode_expert_tokens, decode_expert_seconds = _expert_lines(
    "decode", "step_tokens", "moe_distinct_experts", BANDWIDTH,
    ("Experts per GPU per step", "Touched experts whose GEMMs one GPU runs in a step: every distinct expert's TP slice, "
     "or the GPU's share of whole experts under expert parallelism."),
    ("Tokens per touched expert per step", "Tokens per step x k / distinct experts: the M of each expert's GEMMs."),
    ("Decode: one expert beyond a launch", "One touched expert's gate/up + down GEMMs at its tokens (the fused MoE "
     "table's figures where it holds the shape, else the GEMM table's), less the launch a fused MoE kernel pays once."))


decode_mlp_seconds = derived("decode_mlp_seconds", serving.mlp_seconds, "Decode: MLP / expert GEMMs", "s", BANDWIDTH,
    "Gate/up + down GEMMs: dense layers at M = tokens per step; each MoE layer one fused kernel (a launch + every "
    "touched expert on the GPU).",
    tokens="step_tokens", floor_seconds="mlp_kernel_floor_seconds", seconds_per_token="mlp_kernel_seconds_per_token",
    launch_seconds="moe_kernel_launch_seconds", experts_per_gpu="decode_experts_per_gpu",
    expert_extra_seconds="decode_expert_seconds")


decode_lm_head_seconds = derived("decode_lm_head_seconds", serving.gemm_curve, "Decode: LM head", "s", BANDWIDTH,
    "The vocabulary GEMM over the decoding sequences (one sampled row each).",
    tokens="effective_concurrency", floor_seconds="lm_head_kernel_floor_seconds",
    seconds_per_token="lm_head_kernel_seconds_per_token")


@line("KV tokens attention reads per layer", "tokens", BANDWIDTH,
      "Decoding sequences per attention rank x the mean decode context (sliding-window layers at most the window), "
      "averaged over the layers, x the passes the decode kernel makes over each KV head (kv_read_passes).")
def decode_attention_kv_tokens(effective_concurrency, dp_attention, decode_context_tokens, num_layers, sliding_layers,
                               window, kv_read_passes):
    per_layer = ((num_layers - sliding_layers) * decode_context_tokens
                 + sliding_layers * minimum(decode_context_tokens, window)) / num_layers
    return effective_concurrency / dp_attention * per_layer * kv_read_passes


@line("Decode: attention", "s", BANDWIDTH,
      "Layers x decode attention (measured floor + time per KV token read), plus the attention of the prompt tokens "
      "the step carries (their share of one prompt's causal attention).")
def decode_attention_seconds(num_layers, decode_attention_kv_tokens, decode_attention_kernel_floor_seconds,
                             decode_attention_kernel_seconds_per_kv_token, prefill_tokens_per_step, input_tokens,
                             prefill_attention_kernel_floor_seconds, prefill_attention_kernel_seconds_per_token_squared):
    decode = serving.linear_curve(decode_attention_kv_tokens, decode_attention_kernel_floor_seconds,
                                  decode_attention_kernel_seconds_per_kv_token)
    prompt = serving.linear_curve(input_tokens * input_tokens, prefill_attention_kernel_floor_seconds,
                                  prefill_attention_kernel_seconds_per_token_squared)
    return num_layers * (decode + prefill_tokens_per_step / input_tokens * prompt)


@line("TP all-reduces per forward pass", "all-reduces", BANDWIDTH,
      "2 per layer, after the attention and after the MLP (Megatron-LM); under attention DP a MoE layer's second is "
      "the stage's gather/scatter instead (dp_collective_seconds_per_step): one per MoE layer.")
def tp_allreduces_per_pass(num_layers, moe_layers, dp_attention):
    return ALLREDUCES_PER_LAYER * num_layers - where(gt(dp_attention, 1), moe_layers, 0)


@line("Decode: TP all-reduces", "s", BANDWIDTH,
      "TP all-reduces per pass of a rank's tokens per step x hidden x bytes (measured NCCL / custom all-reduce); 0 at "
      "TP 1.")
def decode_allreduce_seconds(tp, tp_allreduces_per_pass, rank_step_tokens, hidden_size, unquantized_bytes,
                             allreduce_floor_seconds, allreduce_seconds_per_byte):
    one = serving.linear_curve(rank_step_tokens * hidden_size * unquantized_bytes, allreduce_floor_seconds,
                               allreduce_seconds_per_byte)
    return where(gt(tp, 1), tp_allreduces_per_pass * one, 0)


@line("Element-wise work: fixed part of a pass", "s", BANDWIDTH,
      "Layers x the floors of the element-wise kernels the tables do not hold (norms, rotary, activation, residual "
      "adds) + the per-step overhead (embedding, sampling, scheduling).")
def elementwise_fixed_seconds(num_layers, kernel_layer_overhead_seconds, step_overhead_seconds):
    return num_layers * kernel_layer_overhead_seconds + step_overhead_seconds


step_elementwise_seconds = product("step_elementwise_seconds", ("rank_step_tokens", "elementwise_seconds_per_token"),
    "Element-wise traffic per step", "s", BANDWIDTH, "A rank's tokens per step x element-wise time per token.")


decode_elementwise_seconds = total("decode_elementwise_seconds", ("elementwise_fixed_seconds", "step_elementwise_seconds"),
    "Decode: element-wise work and per-step overhead", "s", BANDWIDTH,
    "The element-wise kernels' floors and per-step overhead + their traffic for the step's tokens.")


decode_kernel_seconds = total("decode_kernel_seconds", ("decode_qkv_seconds", "decode_o_seconds", "decode_mlp_seconds",
                                                        "decode_shared_mlp_seconds", "decode_lm_head_seconds",
                                                        "decode_attention_seconds", "decode_allreduce_seconds",
                                                        "decode_elementwise_seconds"),
    "Decode step from the kernel tables", "s", BANDWIDTH,
    "Sum of the step's operations (QKV, O, MLP/experts, shared experts, LM head, attention, all-reduces, element-wise "
    "and per-step overhead).")


prefill_chunk_tokens = ratio("prefill_chunk_tokens", ("prefill_batch_tokens", "prefill_chunks"),
    "Prefill chunk tokens", "tokens", COMPUTE,
    "Prompt tokens per forward pass: the prompt tokens a TTFT waits for over its chunks.")


prefill_qkv_seconds, prefill_o_seconds = _gemm_lines("prefill", chunked_gemm_seconds, COMPUTE, (
    ("qkv", "Prefill: QKV projection", "Chunks x layers x QKV GEMM at M = chunk tokens."),
    ("o", "Prefill: attention output projection", "Chunks x layers x O GEMM at M = chunk tokens.")),
    chunks="prefill_chunks", tokens="prefill_chunk_tokens")


prefill_experts_per_gpu, prefill_expert_tokens, prefill_expert_seconds = _expert_lines(
    "prefill", "prefill_chunk_tokens", "prefill_distinct_experts", COMPUTE,
    ("Experts per GPU per prefill chunk", "Touched experts whose GEMMs one GPU runs in a prefill chunk."),
    ("Tokens per touched expert per prefill chunk",
     "Chunk tokens x k / distinct experts of the chunk: the M of each expert's GEMMs."),
    ("Prefill: one expert beyond a launch",
     "One touched expert's GEMM pair at its tokens per chunk, less the fused kernel's launch."))


@line("Prefill: MLP / expert GEMMs", "s", COMPUTE,
      "Chunks x (dense layers at M = chunk tokens; each MoE layer one fused kernel over its touched experts).")
def prefill_mlp_seconds(prefill_chunks, num_layers, moe_layers, prefill_chunk_tokens, mlp_kernel_floor_seconds,
                        mlp_kernel_seconds_per_token, moe_kernel_launch_seconds, prefill_experts_per_gpu,
                        prefill_expert_seconds):
    return prefill_chunks * serving.mlp_seconds(num_layers, moe_layers, prefill_chunk_tokens, mlp_kernel_floor_seconds,
                                                mlp_kernel_seconds_per_token, moe_kernel_launch_seconds,
                                                prefill_experts_per_gpu, prefill_expert_seconds)


@line("Prefill: attention", "s", COMPUTE,
      "Layers x prompts x one prompt's causal attention (measured floor + time per prompt length squared).")
def prefill_attention_seconds(num_layers, prefill_batch_tokens, input_tokens, prefill_attention_kernel_floor_seconds,
                              prefill_attention_kernel_seconds_per_token_squared):
    return num_layers * prefill_batch_tokens / input_tokens * serving.linear_curve(
        input_tokens * input_tokens, prefill_attention_kernel_floor_seconds,
        prefill_attention_kernel_seconds_per_token_squared)


@line("Prefill: TP all-reduces", "s", COMPUTE,
      "Chunks x TP all-reduces per pass of chunk tokens x hidden x bytes; 0 at TP 1.")
def prefill_allreduce_seconds(tp, prefill_chunks, tp_allreduces_per_pass, prefill_chunk_tokens, hidden_size,
                              unquantized_bytes, allreduce_floor_seconds, allreduce_seconds_per_byte):
    one = serving.linear_curve(prefill_chunk_tokens * hidden_size * unquantized_bytes, allreduce_floor_seconds,
                               allreduce_seconds_per_byte)
    return where(gt(tp, 1), prefill_chunks * tp_allreduces_per_pass * one, 0)


@line("Prefill: LM head and overhead", "s", COMPUTE,
      "One LM-head row per prompt + each chunk's element-wise floors and per-step overhead + the prompt tokens' "
      "element-wise traffic.")
def prefill_overhead_seconds(prefill_batch_tokens, input_tokens, prefill_chunks, elementwise_fixed_seconds,
                             elementwise_seconds_per_token, lm_head_kernel_floor_seconds,
                             lm_head_kernel_seconds_per_token):
    return serving.gemm_curve(prefill_batch_tokens / input_tokens, lm_head_kernel_floor_seconds,
                              lm_head_kernel_seconds_per_token) + prefill_chunks * elementwise_fixed_seconds \
        + prefill_batch_tokens * elementwise_seconds_per_token


prefill_kernel_seconds = total("prefill_kernel_seconds", ("prefill_qkv_seconds", "prefill_o_seconds",
                                                          "prefill_mlp_seconds", "prefill_shared_mlp_seconds",
                                                          "prefill_attention_seconds", "prefill_allreduce_seconds",
                                                          "prefill_overhead_seconds"),
    "Prefill from the kernel tables", "s", COMPUTE,
    "Sum of the prefill's operations.")


prefill_stall_seconds = derived("prefill_stall_seconds", serving.prefill_stall_seconds,
    "Whole-prompt prefill stalls per step", "s", BANDWIDTH,
    "(1 - chunked_prefill) x (B - 1) x prefill(S) / (T - 1), B a rank's sequences: an engine that runs each prompt "
    "as its own iteration stalls every decoding sequence (Sarathi-Serve, arXiv:2403.02310), DP-attention ranks each "
    "prefilling their own prompt in the same iteration; 0 when it chunks or in static batching.",
    effective_concurrency="rank_concurrency")


scheduler_seconds_per_step = derived("scheduler_seconds_per_step", serving.scheduler_seconds_per_step,
    "Scheduler CPU time the step waits for", "s", BANDWIDTH,
    "(1 - overlap_scheduling) x scheduler_seconds_per_sequence x sequences: an engine whose scheduler runs in step "
    "with the GPU leaves it idle while it schedules and processes outputs (engines.csv); 0 when it overlaps.")


@line("Eager host time per decode step", "s", BANDWIDTH,
      "0 when the step replays a CUDA graph (cuda_graphs 1 and each DP-attention rank's B / DP sequences <= "
      "cuda_graph_max_batch), else the CPU time to dispatch its layers eager: dense layers x eager_seconds_per_layer "
      "+ MoE layers x eager_seconds_per_moe_layer.")
def eager_host_seconds_per_step(cuda_graphs, cuda_graph_max_batch, effective_concurrency, dp_attention, num_layers,
                                moe_layers, eager_seconds_per_layer, eager_seconds_per_moe_layer):
    return serving.eager_host_seconds(cuda_graphs, cuda_graph_max_batch, effective_concurrency / dp_attention,
                                      num_layers, moe_layers, eager_seconds_per_layer, eager_seconds_per_moe_layer)


#: The step's operations and the line of each (the family the JSON's decode_ops / prefill_ops and the workbook
#: render): with measured tables, and on the roofline fallback.
DECODE_OPS = {"qkv": "decode_qkv_seconds", "o": "decode_o_seconds", "mlp": "decode_mlp_seconds",
              "shared_mlp": "decode_shared_mlp_seconds", "lm_head": "decode_lm_head_seconds",
              "attention": "decode_attention_seconds", "allreduce": "decode_allreduce_seconds",
              "elementwise": "decode_elementwise_seconds"}
PREFILL_OPS = {"qkv": "prefill_qkv_seconds", "o": "prefill_o_seconds", "mlp": "prefill_mlp_seconds",
               "shared_mlp": "prefill_shared_mlp_seconds", "attention": "prefill_attention_seconds",
               "allreduce": "prefill_allreduce_seconds", "elementwise": "prefill_overhead_seconds"}
DECODE_OPS_ROOFLINE = {"linear": "step_linear_seconds", "attention": "step_kv_seconds",
                       "allreduce": "allreduce_seconds_per_step", "elementwise": "decode_overhead_seconds"}
PREFILL_OPS_ROOFLINE = {"linear": "prefill_roofline_seconds"}
#: what every step adds after its operations, whichever way they are priced
DECODE_OPS_COMMON = {"eager_launch": "decode_eager_wait_seconds", "parallel": "parallel_seconds_per_step",
                     "prefill_stall": "prefill_stall_seconds", "scheduler": "scheduler_seconds_per_step"}
PREFILL_OPS_COMMON = {"parallel": "prefill_parallel_seconds"}


# ---------------------------------------------------------------------------------
# TTFT as serving benchmarks measure it (vllm bench serve / benchmark_serving.py --max-concurrency, SGLang
# bench_serving, AIPerf): c clients started together, N requests, the mean over them, queueing included
# ---------------------------------------------------------------------------------


@line("Prefill GEMMs per prompt token", "s", COMPUTE,
      "Layers x the measured time per token of QKV, O and the MLP (a MoE layer: its shared experts and its k experts, "
      "k / EP of them on a GPU under expert parallelism, each whole there): what each prompt token adds to a prefill.")
def prefill_seconds_per_prompt_token(num_layers, moe_layers, experts_per_token, ep, qkv_kernel_seconds_per_token,
                                     o_kernel_seconds_per_token, mlp_kernel_seconds_per_token,
                                     moe_expert_kernel_seconds_per_token, shared_mlp_kernel_seconds_per_token):
    return num_layers * (qkv_kernel_seconds_per_token + o_kernel_seconds_per_token) \
        + (num_layers - moe_layers) * mlp_kernel_seconds_per_token + moe_layers * (
            experts_per_token / ep * moe_expert_kernel_seconds_per_token + shared_mlp_kernel_seconds_per_token)


@line("Prefill all-reduce time per prompt token", "s", COMPUTE,
      "TP all-reduces per pass x the measured time per byte x hidden x activation bytes: what each prompt token adds "
      "to a prefill's TP all-reduces (their floors are paid once per chunk); 0 at TP 1.")
def prefill_allreduce_seconds_per_prompt_token(tp, tp_allreduces_per_pass, hidden_size, unquantized_bytes,
                                               allreduce_seconds_per_byte):
    return where(gt(tp, 1), tp_allreduces_per_pass * allreduce_seconds_per_byte * hidden_size
                 * unquantized_bytes, 0)


prefill_seconds_per_token = total("prefill_seconds_per_token", ("prefill_seconds_per_prompt_token",
    "prefill_allreduce_seconds_per_prompt_token", "elementwise_seconds_per_token"), "Prefill time per prompt token",
    "s", COMPUTE, "What each prompt token adds to a prefill on the kernel tables: its GEMMs', all-reduces' and element-wise "
    "kernels' time per token.")


@line("Prefill of each further prompt", "s", COMPUTE,
      "What one more S-token prompt adds to a prefill: its tokens at prefill_seconds_per_token + its attention "
      "(kernel tables), or 2 N_active S / TP / (peak x prefill efficiency) on the roofline.")
def prefill_seconds_per_extra_prompt(kernel_priced, prefill_seconds_per_token, num_layers, input_tokens,
                                     prefill_attention_kernel_seconds_per_token_squared, active_params, tp, peak_flops,
                                     prefill_efficiency):
    measured = prefill_seconds_per_token * input_tokens \
        + num_layers * prefill_attention_kernel_seconds_per_token_squared * input_tokens * input_tokens
    roofline = FLOPS_PER_PARAM * active_params * input_tokens / tp / (peak_flops * prefill_efficiency)
    return where(eq(kernel_priced, 1), measured, roofline)


prefill_chunk_fixed_seconds = derived("prefill_chunk_fixed_seconds", serving.chunk_fixed_seconds,
    "Fixed part of a prefill chunk", "s", COMPUTE,
    "What a lone prompt's chunk costs beyond a further prompt's work (its kernel floors: expert and dense weight "
    "reads, launches, all-reduce latencies; on the roofline the weight read beyond the FLOPs), per chunk of it.")


wave_extra_chunks = derived("wave_extra_chunks", serving.wave_extra_chunks,
    "Further chunks of a wave", "chunks", COMPUTE,
    "Forward passes a wave of a rank's share n of the effective concurrency's prompts takes beyond a lone prompt's: "
    "ROUNDUP(n S / max_num_batched_tokens) - the prompt's chunks, at least 0.", prompts="rank_concurrency")


wave_prefill_seconds = derived("wave_prefill_seconds", serving.wave_prefill_seconds, "Prefill of a wave", "s", COMPUTE,
    "A rank's share of the effective concurrency's prompts prefilled together (DP-attention ranks prefill theirs at "
    "the same time): one prompt's service time + each further prompt's work + each further chunk's fixed part.",
    prompts="rank_concurrency", extra_chunks="wave_extra_chunks", chunk_fixed="prefill_chunk_fixed_seconds")


wave_ttft_seconds = derived("wave_ttft_seconds", serving.wave_ttft_seconds, "Mean TTFT of a wave", "s", COMPUTE,
    "A benchmark's clients start together: each rank's n prompts prefilled as one wave; the mean request of it "
    "waits (n + 1) / 2n of it (all of it within one chunk); static: the batch's prefill.",
    prompts="rank_concurrency")


@line("TTFT at the target QPS", "s", COMPUTE,
      "Requests arriving one by one below capacity: the prompt's own prefill + half the scheduler's read cycle "
      "(scheduler_recv_interval steps, 1: the step running) + the step an overlapping scheduler has already prepared "
      "(overlap_scheduling x TPOT); no wave, no queue; static: the batch's prefill. ttft_ok checks the target on it.")
def ttft_open_seconds(batching, ttft_service_seconds, tpot_seconds, overlap_scheduling, scheduler_recv_interval):
    wait = scheduler_recv_interval * tpot_seconds / STEP_RESIDUAL_DIVISOR + overlap_scheduling * tpot_seconds
    return ttft_service_seconds + where(eq(batching, BATCHING_STATIC), 0, wait)


prefill_room_tokens = derived("prefill_room_tokens", serving.prefill_room_tokens,
    "Prompt-token room per step", "tokens", COMPUTE,
    "max_num_batched_tokens less the decode tokens a chunking engine schedules first (vLLM V1's scheduler: running "
    "requests, then waiting prompts in what is left of the token budget); the whole budget for an engine that runs "
    "prompts whole in their own iteration.", effective_concurrency="rank_concurrency")


@line("Prompts prefilled together in lockstep", "prompts", COMPUTE,
      "A benchmark's fixed-length closed loop keeps the prompts that got their first token in the same step together: "
      "min(B, max(1, room / S)) of a rank's B arrive and are prefilled together.  Lengths drawn per request dissolve "
      "the groups: a prompt then shares its prefill with the others that arrive while it runs, each of the B - 1 "
      "other clients sending one per cycle: 1 + (B - 1) x prefill / (prefill + (T - 1) x TPOT), at most the group.")
def lockstep_prompts(rank_concurrency, prefill_room_tokens, input_tokens, benchmark_fixed_lengths,
                     ttft_service_seconds, output_tokens, tpot_seconds):
    group = serving.lockstep_prompts(rank_concurrency, prefill_room_tokens, input_tokens)
    spread = 1 + (rank_concurrency - 1) * ttft_service_seconds / serving.cycle_seconds(ttft_service_seconds,
                                                                                      output_tokens, tpot_seconds)
    return where(eq(benchmark_fixed_lengths, 1), group, minimum(group, spread))


admission_wait_seconds = derived("admission_wait_seconds", serving.admission_wait_seconds,
    "Wait for the steps already under way", "s", COMPUTE,
    "A closed-loop request arrives after the engine launched its next step and waits for it, one more where the "
    "scheduler runs a step ahead, and half the rest of a read cycle of I = scheduler_recv_interval steps: "
    "(STEPS_RUNNING_AT_ARRIVAL + overlap_scheduling + (I - 1) / 2) x TPOT; 0 static.")


lockstep_ttft_seconds = derived("lockstep_ttft_seconds", serving.lockstep_ttft_seconds,
    "TTFT of a lockstep group", "s", COMPUTE,
    "The wait for the steps under way + the group's prefill (one prompt's service time + each further prompt's "
    "prefill) + a decode step for each step it rides (S / room of them, at least one); static: the batch's prefill.")


prefill_bound_ttft_seconds = derived("prefill_bound_ttft_seconds", serving.prefill_bound_ttft_seconds,
    "Wait for prefill room", "s", COMPUTE,
    "A chunking engine: when B x S prompt tokens per cycle need more steps than a request's T - 1 decode steps at "
    "room tokens a step, the difference in steps x TPOT is spent waiting (Little's law on the closed loop); 0 "
    "otherwise, and for whole-prompt engines (their prefills stall the decode steps instead).",
    effective_concurrency="rank_concurrency")


@line("TTFT of a benchmark's steady state", "s", COMPUTE,
      "A request after the first wave: its lockstep group's TTFT, or the wait for prefill room where the prompts "
      "outrun the room; the first wave's mean TTFT again where every cycle's prompts come back as one wave (a "
      "prefill-first scheduler and fixed lengths: prefill_first x benchmark_fixed_lengths = 1).")
def steady_ttft_seconds(lockstep_ttft_seconds, prefill_bound_ttft_seconds, prefill_first, benchmark_fixed_lengths,
                        wave_ttft_seconds):
    """A decode-first engine (vLLM V1) gives a wave's first prompt its second token while the later ones still
    prefill, so the wave's requests finish apart and come back in lockstep groups.  A scheduler that runs waiting
    prompts before any decode step (SGLang, vLLM V0 without chunked prefill) decodes the whole wave in the same steps
    once its prompts are in: with fixed lengths the wave finishes in one step and its clients send the next wave
    together, so every cycle waits as the first wave did.  Lengths drawn per request spread the finishes and the wave
    dissolves (a closed-loop simulation of both schedulers: tests/test_benchmark_ttft.py)."""
    return where(eq(prefill_first * benchmark_fixed_lengths, 1), wave_ttft_seconds,
                 maximum(lockstep_ttft_seconds, prefill_bound_ttft_seconds))

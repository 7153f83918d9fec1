"""The steady-state serving lines: effective concurrency, decode context, prefill mix, MoE distinct experts, the step.

One declaration per line, like :mod:`inference_ledger.graph.plan_lines` (``derived`` for a formula under the plan's
names, ``@line`` for glue); the formulas (with their sources and the queueing model) are in
:mod:`inference_ledger.formulas.serving`.  The plan's existing keys
``tpot_seconds``, ``ttft_seconds``, ``tokens_per_second`` and ``qps_per_replica`` are computed from
these lines (their definitions stay in plan_lines / whatif_lines).
"""

from __future__ import annotations

from inference_ledger.core.codes import Codes
from inference_ledger.formulas import admission, engine_ledger, kernels, ledger, serving, whatif
from inference_ledger.formulas.gemm_shapes import dense_width
from inference_ledger.formulas.step_lines import chunked_gemm_seconds, layer_gemm_seconds
from inference_ledger.core.sheetfuncs import and_, eq, gt, maximum, minimum, where
from inference_ledger.core.line import BANDWIDTH, COMPUTE, FIT, MEMORY, derived, line, product, ratio, ratio_up, total
from inference_ledger.core.units import ELEMENTWISE_GATE_ELEMENTS, ELEMENTWISE_NORM_ELEMENTS


decode_context_tokens = derived("decode_context_tokens", serving.decode_context,
    "Mean context of the decode steps", "tokens", MEMORY,
    "S + T/2: step j of the T - 1 decode steps attends over S + j - 1 tokens. TPOT and its floor are priced here.")


def _sequence_kv(name, context, label, doc):
    """The line of one sequence's KV at a context (sliding-window layers at most the window): the plan's
    kv_bytes_per_sequence at another context."""
    return derived(name, ledger.kv_sequence_bytes, label, "B", MEMORY, doc,
                   kv_elements_layer="kv_elements_per_token_layer", context=context)


kv_bytes_per_sequence_decode = _sequence_kv("kv_bytes_per_sequence_decode", "decode_context_tokens",
    "KV per sequence at the decode context",
    "KV of one sequence at the mean decode context (sliding-window layers at most the window).")


max_running_sequences = product("max_running_sequences", ("max_num_seqs", "dp_attention"),
    "Sequences the schedulers run at most", "sequences", FIT,
    "max_num_seqs per scheduler x DP-attention ranks (each rank schedules its own sequences).")


effective_concurrency = derived("effective_concurrency", serving.effective_concurrency,
    "Effective concurrency", "sequences", FIT,
    "Sequences decoding together: min(requested concurrency, sequences the KV budget holds at full context, "
    "the schedulers' limit), at least 1; the rest queue.",
    kv_limit="max_concurrency", max_num_seqs="max_running_sequences")


rank_concurrency = ratio("rank_concurrency", ("effective_concurrency", "dp_attention"),
    "Sequences per scheduler", "sequences", FIT,
    "Effective concurrency / DP-attention ranks: each rank schedules its own sequences and prefills its own prompts "
    "in its own token budget (the whole replica without DP attention).")


kv_admission_policy = derived("kv_admission_policy", admission.kv_admission_policy, "KV admission policy", "code", FIT,
    "1 guaranteed no evict (the whole S + T reserved at admission: TensorRT-LLM's default), 0 on demand (admitted on "
    "the prompt, the newest running request preempted when the KV cache runs out: vLLM, SGLang).")


admission_context_tokens = derived("admission_context_tokens", admission.admission_context,
    "Context a request is admitted at", "tokens", MEMORY,
    "S + reserve x T: the KV the scheduler counts a request for when it admits it (1: the whole S + T, TensorRT-LLM's "
    "GUARANTEED_NO_EVICT; 0: the prompt alone, vLLM, which preempts when the cache runs out).")


kv_bytes_per_sequence_admitted = _sequence_kv("kv_bytes_per_sequence_admitted", "admission_context_tokens",
    "KV per request at admission",
    "KV of one request at the context it is admitted at (sliding-window layers at most the window).")


@line("Requests the KV cache admits", "sequences", MEMORY,
      "Whole requests at their admission context the KV budget holds: KV budget / KV per request at admission per "
      "GPU. Equal to the max concurrency where the whole context is reserved.")
def admitted_sequences(kv_cache_budget_bytes_per_gpu, kv_bytes_per_sequence_admitted, kv_shards):
    return whatif.max_sequences(kv_cache_budget_bytes_per_gpu, kv_bytes_per_sequence_admitted / kv_shards)


decode_requests = derived("decode_requests", serving.effective_concurrency,
    "Requests admitted (running or preempted)", "sequences", FIT,
    "min(requested concurrency, requests the KV cache admits, the schedulers' limit), at least 1: the requests past "
    "their first token. The effective concurrency of them run each step; the rest wait, preempted, to resume.",
    kv_limit="admitted_sequences", max_num_seqs="max_running_sequences")


prompt_per_sequence = derived("prompt_per_sequence", serving.prompt_per_sequence,
    "Prompt tokens per other sequence per step", "tokens", COMPUTE,
    "Continuous batching: each other sequence starts a new S-token prompt every T steps, S / T per step; static: 0.")


@line("Prompt tokens per decode step", "tokens", COMPUTE,
      "The other sequences' prompts mixed into a step a sequence sees, in chunks: (B - 1) x S / T, at most the step's "
      "prompt-token room (the rest wait: prefill_bound_ttft_seconds); 0 when the engine runs each prompt whole in its "
      "own iteration (chunked_prefill 0: the prefill stalls the step instead).")
def prefill_tokens_per_step(effective_concurrency, prompt_per_sequence, chunked_prefill, prefill_room_tokens):
    return minimum((effective_concurrency - 1) * prompt_per_sequence, prefill_room_tokens) * chunked_prefill


step_tokens = total("step_tokens", ("effective_concurrency", "prefill_tokens_per_step"),
    "Tokens per step", "tokens", COMPUTE,
    "Decode tokens (one per sequence) + prompt tokens mixed in.")


def _extra_expert_bytes(name, distinct_experts, label, doc):
    """The line of what a step's (or a chunk's) distinct experts add to the weight read beyond one token's experts."""
    return derived(name, serving.extra_expert_bytes, label, "B", BANDWIDTH, doc, distinct_experts=distinct_experts,
                   num_layers="moe_layers")


def _experts_read(tokens, distinct, extra):
    """The experts a step routes its tokens to, and what they add to the weight read beyond one token's experts (the
    step with its prompt chunks; the pure-decode step): ``distinct`` and ``extra`` are each line's name, label, doc."""
    distinct_name, distinct_label, distinct_doc = distinct
    return (derived(distinct_name, serving.distinct_experts, distinct_label, "experts", BANDWIDTH, distinct_doc,
                    tokens=tokens),
            _extra_expert_bytes(extra[0], distinct_name, *extra[1:]))


moe_distinct_experts, step_extra_expert_bytes = _experts_read("step_tokens",
    ("moe_distinct_experts", "Distinct experts per layer per step",
     "E x (1 - (1 - k/E)^tokens): every expert any token of the step routes to is read (0 for a dense model)."),
    ("step_extra_expert_bytes", "Routed experts read per step beyond one token's",
     "MoE layers x (distinct experts - k) x 3 x hidden x intermediate x bytes: what a batch adds to the weight read."))


routed_active_bytes = derived("routed_active_bytes", serving.routed_active_bytes,
    "One token's routed experts", "B", BANDWIDTH,
    "MoE layers x k x 3 x hidden x intermediate x bytes: the routed part of the active weights (0 dense).")


step_weight_bytes_per_gpu = derived("step_weight_bytes_per_gpu", serving.weight_read_per_gpu,
    "Weights read per step per GPU", "B", BANDWIDTH,
    "Dense part of the active weights over TP + the routed experts the step touches over the stage's GPUs (EP, "
    "DP attention).", extra_expert_bytes="step_extra_expert_bytes")


decode_distinct_experts, decode_extra_expert_bytes = _experts_read("effective_concurrency",
    ("decode_distinct_experts", "Distinct experts per layer per pure-decode step",
     "E x (1 - (1 - k/E)^B): the experts a step of the decoding sequences alone routes to (no prompt tokens), what "
     "the TPOT floor reads: a step carrying prompt chunks only adds time."),
    ("decode_extra_expert_bytes", "Routed experts read per pure-decode step beyond one token's",
     "MoE layers x (distinct experts of the decoding sequences - k) x 3 x hidden x intermediate x bytes."))


decode_weight_bytes_per_gpu = derived("decode_weight_bytes_per_gpu", serving.weight_read_per_gpu,
    "Weights read per pure-decode step per GPU", "B", BANDWIDTH,
    "As the weights read per step, with the experts of the decoding sequences alone (what the TPOT floor reads).",
    extra_expert_bytes="decode_extra_expert_bytes")


@line("Decode passes over each KV head", "x", BANDWIDTH,
      "1 where the engine's decode attention reads each KV head once for its query group (gqa_decode 1, or the one "
      "group size its kernel takes); else once per query head: heads / KV heads (gqa_decode 0, or another group), "
      "never below 1.")
def kv_read_passes(gqa_decode, num_attention_heads, kv_heads):
    group = maximum(num_attention_heads / kv_heads, 1)
    return where(eq(gqa_decode, 1), 1, where(eq(gqa_decode, group), 1, group))


@line("KV read per decoding sequence per GPU", "B", BANDWIDTH,
      "A decoding sequence's KV at the decode context, over its KV split, x the decode kernel's passes over it.")
def kv_read_bytes_per_sequence(kv_bytes_per_sequence_decode, kv_shards, kv_read_passes):
    return kv_bytes_per_sequence_decode / kv_shards * kv_read_passes


step_kv_bytes_per_gpu = product("step_kv_bytes_per_gpu", ("kv_read_bytes_per_sequence", "effective_concurrency"),
    "KV read per step per GPU", "B", BANDWIDTH, "Every decoding sequence's KV read (kv_read_bytes_per_sequence).")


@line("FLOPs per step per GPU", "FLOP", COMPUTE,
      "2 x N_active x tokens per step (decode + prompt chunks), over the replica's GPUs.")
def step_flops_per_gpu(active_params, step_tokens, gpus_per_replica):
    return serving.step_flops(active_params, step_tokens) / gpus_per_replica


step_compute_bound = derived("step_compute_bound", serving.compute_bound, "Step is compute-bound", "1/0", COMPUTE,
    "1 when the step's FLOPs at the compute efficiency take longer than streaming its weights.",
    weight_bytes="step_weight_bytes_per_gpu", flops="step_flops_per_gpu", weight_efficiency="bw_efficiency",
    compute_efficiency="decode_compute_efficiency")


step_linear_seconds = derived("step_linear_seconds", serving.linear_seconds, "Linear layers per step", "s", BANDWIDTH,
    "max(weights / (BW x weight-streaming efficiency), FLOPs / (peak x compute efficiency)).",
    weight_bytes="step_weight_bytes_per_gpu", flops="step_flops_per_gpu", weight_efficiency="bw_efficiency",
    compute_efficiency="decode_compute_efficiency")


@line("Attention KV reads per step", "s", BANDWIDTH,
      "KV read per step / (BW x KV-read efficiency): attention's own kernels, after the linear layers.")
def step_kv_seconds(step_kv_bytes_per_gpu, hbm_bw, kv_read_efficiency):
    return step_kv_bytes_per_gpu / (hbm_bw * kv_read_efficiency)


@line("Element-wise bytes per token per GPU", "B", BANDWIDTH,
      "What the kernels besides the GEMMs and attention move per token on one GPU: every layer's two residual-add + "
      "RMSNorm passes over the whole hidden state (on every TP rank) and each dense layer's gated activation over its "
      "TP share, at the activations' bytes (aiconfigurator-core's add_norm and act_gate ops; a MoE layer's activation "
      "runs inside its fused kernel).")
def elementwise_bytes_per_token(num_layers, moe_layers, hidden_size, intermediate_size, dense_intermediate_size, tp,
                                unquantized_bytes):
    dense = dense_width(dense_intermediate_size, intermediate_size)
    return (num_layers * ELEMENTWISE_NORM_ELEMENTS * hidden_size
            + (num_layers - moe_layers) * ELEMENTWISE_GATE_ELEMENTS * dense / tp) * unquantized_bytes


@line("Element-wise time per token", "s", BANDWIDTH,
      "Element-wise bytes per token / (BW x weight-streaming efficiency): memory-bound kernels, priced as "
      "aiconfigurator-core prices its ElementWise ops (HBM bandwidth x an efficiency).")
def elementwise_seconds_per_token(elementwise_bytes_per_token, hbm_bw, bw_efficiency):
    return elementwise_bytes_per_token / (hbm_bw * bw_efficiency)


@line("All-reduce time per message byte", "s/B", BANDWIDTH,
      "The measured all-reduce's time per byte (kernel tables, the system they were measured on), never below a "
      "ring's 2 (TP-1)/TP of the message per GPU over the plan's interconnect bandwidth: a slower link than the "
      "measured one (PCIe, or host memory without peer-to-peer) sets the time.")
def allreduce_seconds_per_byte(tp, allreduce_kernel_seconds_per_byte, allreduce_link_bw):
    return maximum(allreduce_kernel_seconds_per_byte, engine_ledger.ring_share(tp) / allreduce_link_bw)


@line("All-reduce link bandwidth", "B/s", BANDWIDTH,
      "The interconnect per direction, or through host memory (no peer-to-peer) the slower of it and that path's "
      "bus bandwidth.")
def allreduce_link_bw(interconnect_bw, allreduce_through_host, host_allreduce_bw):
    return where(eq(allreduce_through_host, 1), minimum(interconnect_bw, host_allreduce_bw), interconnect_bw)


@line("All-reduce latency on the roofline", "s", BANDWIDTH,
      "One small all-reduce's fixed cost where the GPU has no kernel tables: the NVLink latency, or through host "
      "memory never below that path's floor.")
def allreduce_path_latency_seconds(allreduce_latency_seconds, allreduce_through_host, host_allreduce_floor_seconds):
    return engine_ledger.through_host(allreduce_latency_seconds, allreduce_through_host, host_allreduce_floor_seconds)


@line("All-reduce floor per call", "s", BANDWIDTH,
      "The measured all-reduce's floor (kernel tables), or through host memory (no peer-to-peer: NCCL's SHM "
      "transport, no custom all-reduce) never below that path's floor.")
def allreduce_floor_seconds(allreduce_kernel_floor_seconds, allreduce_through_host, host_allreduce_floor_seconds):
    return engine_ledger.through_host(allreduce_kernel_floor_seconds, allreduce_through_host, host_allreduce_floor_seconds)


_SHARED = dict(zip(("floor_seconds", "seconds_per_token"), kernels.op_input_names("shared_mlp")))


decode_shared_mlp_seconds = derived("decode_shared_mlp_seconds", layer_gemm_seconds, "Decode: shared-expert GEMMs",
    "s", BANDWIDTH, "Each MoE layer's shared experts (gate/up + down over TP, the GEMM table) at M = tokens per step: "
    "every token passes through them besides its routed experts; 0 without shared experts.",
    num_layers="moe_layers", tokens="step_tokens", **_SHARED)


prefill_shared_mlp_seconds = derived("prefill_shared_mlp_seconds", chunked_gemm_seconds, "Prefill: shared-expert GEMMs",
    "s", COMPUTE, "Chunks x each MoE layer's shared experts at M = chunk tokens; 0 without shared experts.",
    chunks="prefill_chunks", num_layers="moe_layers", tokens="prefill_chunk_tokens", **_SHARED)


prefill_batch_tokens = derived("prefill_batch_tokens", serving.prefill_batch_tokens,
    "Prompt tokens a TTFT waits for", "tokens", COMPUTE,
    "Continuous: the request's own prompt S; static: the whole batch's B x S.")


prefill_chunks = ratio_up("prefill_chunks", ("prefill_batch_tokens", "max_num_batched_tokens"),
    "Prefill chunks", "chunks", COMPUTE,
    "Forward passes the prompt tokens take at max_num_batched_tokens per pass.")


@line("Distinct experts per layer per prefill chunk", "experts", BANDWIDTH,
      "E x (1 - (1 - k/E)^chunk tokens): a prefill chunk reads nearly every expert.")
def prefill_distinct_experts(num_experts, experts_per_token, prefill_batch_tokens, prefill_chunks):
    return serving.distinct_experts(num_experts, experts_per_token, prefill_batch_tokens / prefill_chunks)


prefill_extra_expert_bytes = _extra_expert_bytes("prefill_extra_expert_bytes", "prefill_distinct_experts",
    "Routed experts a prefill chunk reads beyond one token's",
    "MoE layers x (distinct experts of a chunk - k) x 3 x hidden x intermediate x bytes.")


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


KERNEL_PRICED = Codes("kernel_priced", [(1, kernels.MEASURED), (0, kernels.FALLBACK)])
#: the input that says whether a GPU has tables reads in the same words
KERNEL_TABLES = Codes("kernel_tables", KERNEL_PRICED.members)
#: where the MoE layers' figures come from (kernels.plan_kernel_inputs sets it)
MOE_KERNEL_TABLE = Codes("moe_kernel_table", [(0, "GEMM table"), (1, "fused-MoE table")])


@line("Step priced from the kernel tables (1) or the roofline (0)", "code", BANDWIDTH,
      "1 when the GPU has measured kernel tables (kernel_tables 1), its HBM bandwidth and dense peak are the ones "
      "they were measured at and the model's active parameters the ones whose shapes they are read at; 0 prices the "
      "step on the roofline: a GPU without tables, or a what-if on a GPU's bandwidth or peak or on the model's size, "
      "which measured latencies cannot follow.")
def kernel_priced(kernel_tables, hbm_bw, kernel_hbm_bw, peak_flops, kernel_peak_flops, active_params,
                  kernel_active_params):
    return where(and_(eq(kernel_tables, 1), eq(hbm_bw, kernel_hbm_bw), eq(peak_flops, kernel_peak_flops),
                      eq(active_params, kernel_active_params)), 1, 0)


@line("TTFT without queueing", "s", COMPUTE,
      "Prefill of the prompt tokens a TTFT waits for: the sum of its operations priced from the measured kernel "
      "tables (never below 2 N_active x tokens / TP / peak), or on the roofline where the GPU has no tables; + its "
      "EP/PP communication.")
def ttft_service_seconds(kernel_priced, prefill_kernel_seconds, prefill_roofline_seconds, active_params,
                         prefill_batch_tokens, tp, peak_flops, prefill_parallel_seconds):
    measured = maximum(prefill_kernel_seconds, serving.step_flops(active_params, prefill_batch_tokens) / tp / peak_flops)
    return where(eq(kernel_priced, 1), measured, prefill_roofline_seconds) + prefill_parallel_seconds


queue_seconds = derived("queue_seconds", serving.queue_seconds, "Wait for admission", "s", COMPUTE,
    "Closed loop at the given concurrency: (concurrency - requests admitted) / QPS per replica.")


benchmark_tpot_seconds = derived("benchmark_tpot_seconds", admission.benchmark_tpot_seconds,
    "TPOT a benchmark measures", "s", BANDWIDTH,
    "TPOT x requests admitted / effective concurrency: the admitted requests share the running set's tokens "
    "(Little's law); the expected TPOT where every admitted request runs.")


binding_limit = derived("binding_limit", serving.binding_limit, "Binding limit", "code", FIT,
    "What caps the replica: 1 KV cache, 2 max_num_seqs, 3 TPOT target, 4 compute, 0 none (bandwidth-bound).",
    kv_limit="max_concurrency", max_num_seqs="max_running_sequences", compute_bound="step_compute_bound")


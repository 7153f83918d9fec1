"""Steady-state serving: what a replica does at a concurrency, as formulas.

Written with the :mod:`inference_ledger.core.expr` helpers like :mod:`inference_ledger.formulas.ledger`: each function
computes on numbers or numpy arrays and renders to one portable Excel formula.  The plan lines that use
them are in :mod:`inference_ledger.formulas.serving_lines`; the efficiencies they take are named inputs whose
defaults come from ``inference_ledger/data/efficiencies.csv`` (a source and a date on every row).

The model, and where each piece comes from:

* **Regimes.**  ``static``: one batch of B prompts is prefilled together, then decoded together (TensorRT-LLM's
  ``gptSessionBenchmark``, vLLM's ``benchmark_throughput`` with a fixed batch). ``continuous``: a client keeps C
  requests in flight against a continuous-batching server (Orca, Yu et al. OSDI'22; vLLM, Kwon et al. SOSP'23;
  ``benchmark_serving --max-concurrency C``).
* **Effective concurrency** B = min(C, sequences the KV budget holds, ``max_num_seqs``), at least 1 so the ledgers
  stay finite (the verdict says when not even one sequence fits).  Static batching reserves the full context S + T per
  sequence; a paged continuous engine holds a sequence's blocks as its context grows, so in steady state a sequence
  holds S + T/2 tokens on average.
* **Decode context.**  The step that emits output token j (j = 2 .. T) attends over S + j - 1 tokens; over the T - 1
  decode steps the mean is S + T/2.  TPOT (the mean step a sequence sees) and its floor are priced at that context, so
  the floor stays below a measured average step.
* **Prefill mix.**  With continuous batching every other sequence in flight starts a new request once per T output
  tokens, so each decode step a sequence sees carries (B - 1) x S / T prompt tokens in chunks (chunked prefill,
  Agrawal et al. OSDI'24 "Sarathi-Serve"); its own prompt is its TTFT.  Static batching mixes nothing.
* **MoE distinct experts.**  B tokens each routed to k of E experts at random touch E x (1 - (1 - k/E)^B) distinct
  experts per layer (expected value of a union of uniform draws); each expert touched is read once per step.  Shared
  experts are in the active parameters already. Measured on one H200
  (``shared/reference/h200-microbench/moe_decode.json``): the step time follows the distinct experts.
* **Step time.**  The linear layers stream the weights or run compute-bound, whichever is slower: max(weight bytes /
  (BW x weight-streaming efficiency), FLOPs / (peak x compute efficiency)); attention then reads the KV cache in its
  own kernels at the KV-read efficiency, and every step pays the per-layer and per-step overheads and the TP
  all-reduces (H200 microbenchmark: a decode step = GEMM part + attention part, ``gpu_microbench.json`` field
  ``decode``).
* **Queueing (closed, at the given concurrency, as the benchmarks run).**  C clients each send the
  next request when the last one finishes.  A request holds a slot for TTFT + (T - 1) x TPOT; B
  slots give the replica B / (TTFT + (T - 1) x TPOT) requests/s (Little's law).  The C - D clients
  not admitted (D = B unless the engine admits on the prompt: formulas.admission) wait (C - D) / QPS
  (Little's law on the queue), which is what a benchmark's TTFT shows once the KV cache is full.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inference_ledger.core import csvfile
from inference_ledger.core.codes import Codes
from inference_ledger.core.expr import is_sym
from inference_ledger.core.sheetfuncs import ceil, eq, floor, ge, gt, le, literal, log10, lt, maximum, minimum, where
from inference_ledger.core.units import (BATCHING_STATIC, FLOPS_PER_PARAM, GLU_MATRICES, LIMIT_COMPUTE, LIMIT_KV,
                                         LIMIT_MAX_NUM_SEQS, LIMIT_NONE, LIMIT_TPOT, MOE_SATURATION, RAMP_MEAN_DIVISOR,
                                         STEP_RESIDUAL_DIVISOR, STEPS_RUNNING_AT_ARRIVAL, KERNEL_GEMM_POWER)

EFFICIENCIES_CSV = Path(__file__).resolve().parents[1] / "data" / "efficiencies.csv"

#: Batching regimes by word, and their codes (the plan input ``batching``).
BATCHING = Codes("batching", [(1, "continuous"), (BATCHING_STATIC, "static")])
#: What binds a replica's concurrency (the line ``binding_limit``).
LIMIT = Codes("binding_limit", [(LIMIT_NONE, "none: the requested concurrency runs, bandwidth-bound"),
                                (LIMIT_KV, "KV cache"), (LIMIT_MAX_NUM_SEQS, "max_num_seqs"),
                                (LIMIT_TPOT, "TPOT target"), (LIMIT_COMPUTE, "compute")])


@dataclass(frozen=True)
class Efficiency:
    """One efficiency default with its source (a row of efficiencies.csv)."""

    name: str
    value: float
    gpu_family: str
    source: str
    date: str
    quote: str


def load_efficiencies(path: str | Path | None = None) -> dict[str, Efficiency]:
    """The efficiency defaults by input name (rows for every GPU family, ``*``)."""
    rows = csvfile.load(Efficiency, path if path is not None else EFFICIENCIES_CSV, key="name",
                        required=("name", "gpu_family", "source", "date", "quote"))
    return {e.name: e for e in rows if e.gpu_family == "*"}


batching_code, batching_word = BATCHING.code, BATCHING.word


# ---------------------------------------------------------------------------------
# concurrency and context
# ---------------------------------------------------------------------------------


def decode_context(input_tokens, output_tokens):
    """Mean context of the decode steps: S + T/2 (step j of 2..T attends over S + j - 1 tokens).

    A 1,024-token prompt with 512 outputs: 1,024 + 256 = 1,280 tokens."""
    return input_tokens + output_tokens / RAMP_MEAN_DIVISOR


def kv_sequences(kv_budget_bytes, kv_sequence_bytes_per_gpu):
    """Whole sequences a KV budget holds at some per-GPU KV per sequence (>= 0)."""
    return maximum(floor(kv_budget_bytes / kv_sequence_bytes_per_gpu), 0)


def effective_concurrency(concurrency, kv_limit, max_num_seqs):
    """Sequences decoding together: min(requested, KV budget, max_num_seqs), at least 1."""
    return maximum(minimum(concurrency, kv_limit, max_num_seqs), 1)


def prompt_per_sequence(batching, input_tokens, output_tokens):
    """Prompt tokens each other sequence mixes into a step: S / T continuous (a new prompt per T steps), 0 static."""
    return where(eq(batching, BATCHING_STATIC), 0, input_tokens / output_tokens)


def prefill_stall_seconds(chunked_prefill, effective_concurrency, prompt_per_sequence, input_tokens, output_tokens,
                          ttft_service_seconds):
    """What whole-prompt prefills add to the mean step a sequence sees when the engine does not chunk.

    Each of the B - 1 other sequences runs its S-token prompt as one iteration once per request, stalling every
    decoding sequence for that prefill (Sarathi-Serve's generation stalls, Agrawal et al. OSDI'24,
    arXiv:2403.02310): over a request's T - 1 decode steps a sequence sees (B - 1) prefills, so the mean step grows
    by (B - 1) x prefill(S) / (T - 1).  0 when the engine chunks (the prompt tokens ride in the decode steps) and in
    static batching (prompt_per_sequence 0)."""
    return (1 - chunked_prefill) * (effective_concurrency - 1) * prompt_per_sequence * output_tokens \
        / (input_tokens * maximum(output_tokens - 1, 1)) * ttft_service_seconds


def eager_host_seconds(cuda_graphs, cuda_graph_max_batch, batch, num_layers, moe_layers, seconds_per_layer,
                       seconds_per_moe_layer):
    """CPU time to dispatch a decode step's layers eager (PyTorch per-op dispatch and launches), 0 when the step
    replays a CUDA graph (graphs on and the batch within the largest captured one).  The GPU runs the step's kernels
    as they are launched, so an eager step lasts the longer of its kernels and this (sgl-project/sglang#1401: eager
    Llama-3-8B at batch 1 takes 8.23 ms against 7.35 ms with graphs, DeepSeek-Coder-V2-Lite 4x its 6.22 ms)."""
    host = (num_layers - moe_layers) * seconds_per_layer + moe_layers * seconds_per_moe_layer
    return where(eq(cuda_graphs, 1), where(le(batch, cuda_graph_max_batch), 0, host), host)


def scheduler_seconds_per_step(overlap_scheduling, scheduler_seconds_per_sequence, effective_concurrency):
    """The engine's CPU time per step that the GPU waits for: (1 - overlap) x CPU time per sequence x sequences.

    A scheduler that runs in step with the GPU (vLLM V0, vLLM V1 without async scheduling, SGLang before 0.4) leaves
    the GPU idle while it schedules, prepares inputs and processes outputs; that time grows with the running sequences,
    not the tokens (WukLab, 'Can Scheduling Overhead Dominate LLM Inference Performance?', 2024-09-10).  One that
    prepares step n+1 while the GPU runs step n (NanoFlow, arXiv:2408.12757; SGLang 0.4's zero-overhead scheduler)
    hides it.  64 sequences at 21 us without overlap: 1.3 ms per step."""
    return (1 - overlap_scheduling) * scheduler_seconds_per_sequence * effective_concurrency


# ---------------------------------------------------------------------------------
# kernels: one operation at a size, from its measured floor and time per unit (inference_ledger.formulas.kernels)
# ---------------------------------------------------------------------------------


def gemm_curve(tokens, floor_seconds, seconds_per_token):
    """A GEMM at M tokens: (a^p + (r M)^p)^(1/p), a its measured floor, r its measured time per token at large M,
    p = KERNEL_GEMM_POWER (inference_ledger.formulas.kernels)."""
    root = literal(1) / KERNEL_GEMM_POWER if is_sym(tokens, floor_seconds, seconds_per_token) else 1 / KERNEL_GEMM_POWER
    return (floor_seconds ** KERNEL_GEMM_POWER + (seconds_per_token * tokens) ** KERNEL_GEMM_POWER) ** root


def linear_curve(size, floor_seconds, seconds_per_unit):
    """An attention or all-reduce kernel at some size: a + r x (its measured floor plus its time per unit)."""
    return floor_seconds + seconds_per_unit * size


def experts_per_gpu(distinct_experts, ep, gpus_per_stage):
    """Touched experts whose GEMMs one GPU runs: every distinct expert's TP slice, or its share of whole experts
    under expert parallelism (at least one, so a dense model's lines stay finite)."""
    d = maximum(distinct_experts, 1)
    return where(gt(ep, 1), d / gpus_per_stage, d)


def expert_tokens(tokens, experts_per_token, distinct_experts):
    """Tokens each touched expert multiplies: tokens x k / distinct experts."""
    return tokens * experts_per_token / maximum(distinct_experts, 1)


def expert_extra_seconds(expert_tokens, floor_seconds, seconds_per_token, launch_seconds, linear):
    """One touched expert's GEMM pair beyond a launch: a fused MoE kernel pays the launch once per layer.  Read off
    the fused-MoE table (``linear`` 1) the pair grows linearly in its tokens (a + r x: the table's growth, within
    about 15% at its grid points); from the GEMM table, as a GEMM (:func:`gemm_curve`)."""
    curve = where(eq(linear, 1), linear_curve(expert_tokens, floor_seconds, seconds_per_token),
                  gemm_curve(expert_tokens, floor_seconds, seconds_per_token))
    return maximum(curve - launch_seconds, 0)


def mlp_seconds(num_layers, moe_layers, tokens, floor_seconds, seconds_per_token, launch_seconds, experts_per_gpu,
                expert_extra_seconds):
    """The MLP GEMMs of one forward pass: dense layers at M = tokens; each MoE layer one fused kernel (a launch +
    each touched expert's time beyond it)."""
    return (num_layers - moe_layers) * gemm_curve(tokens, floor_seconds, seconds_per_token) \
        + moe_layers * (launch_seconds + experts_per_gpu * expert_extra_seconds)


def binding_limit(concurrency, kv_limit, max_num_seqs, tpot_ok, compute_bound):
    """What caps the replica: 1 KV cache, 2 max_num_seqs, 3 TPOT target, 4 compute, 0 none (bandwidth-bound)."""
    return where(gt(concurrency, minimum(kv_limit, max_num_seqs)),
                 where(lt(kv_limit, max_num_seqs), LIMIT_KV, LIMIT_MAX_NUM_SEQS),
                 where(eq(tpot_ok, 0), LIMIT_TPOT, where(eq(compute_bound, 1), LIMIT_COMPUTE, LIMIT_NONE)))


limit_words = LIMIT.render


# ---------------------------------------------------------------------------------
# MoE
# ---------------------------------------------------------------------------------


def distinct_experts(num_experts, experts_per_token, tokens):
    """Expected distinct routed experts per layer when each of ``tokens`` picks k of E: E (1 - (1 - k/E)^tokens).

    Mixtral (E 8, k 2) at 64 tokens: 8 x (1 - 0.75^64) = 7.99999; 0 for a dense model (E = 0).  Every expert is
    touched (E) when k >= E, or when (1 - k/E)^tokens is below 10^-MOE_SATURATION: the guard is sized from the
    power's own logarithm, tokens x log10(1 - k/E), so the power that is computed never underflows (LibreOffice
    answers #NUM! for a result below about 1e-308: Mixtral's 0.75^tokens from about 2,461 tokens).  Each IF reads
    the logarithm only where k < E, so it is always finite; the share is capped at 1, so a power evaluated
    but not taken (Python evaluates both branches) is at most 1, never an overflow (an expert count typed on a
    dense model)."""
    hit = minimum(experts_per_token / maximum(num_experts, 1), 1)   # one token's share of the experts (at most all)
    return where(ge(hit, 1), num_experts,
                 where(lt(tokens * log10(1 - hit) + MOE_SATURATION, 0), num_experts,
                       num_experts * (1 - (1 - hit) ** tokens)))


def extra_expert_bytes(distinct_experts, experts_per_token, num_layers, hidden_size, intermediate_size, weight_bytes,
                       num_params, active_params):
    """Bytes of the routed experts a step reads beyond one token's k: L x (D - k) x 3 x hidden x intermediate x bytes,
    never more than the inactive parameters (every MoE layer counted, as the padding line does)."""
    per_layer = maximum(distinct_experts - experts_per_token, 0) * GLU_MATRICES * hidden_size * intermediate_size
    return minimum(num_layers * per_layer, num_params - active_params) * weight_bytes


def routed_active_bytes(moe_layers, experts_per_token, hidden_size, intermediate_size, weight_bytes):
    """Bytes of one token's k routed experts over the MoE layers (part of the active weights): L_moe x k x 3 x
    hidden x intermediate x bytes (0 for a dense model)."""
    return moe_layers * experts_per_token * GLU_MATRICES * hidden_size * intermediate_size * weight_bytes


def weight_read_per_gpu(weights_read_bytes, routed_active_bytes, extra_expert_bytes, tp, gpus_per_stage):
    """Weight bytes one GPU reads in a step: the dense part (attention, shared experts, embeddings) over TP; the
    routed experts it reads (one token's k + the extra the step touches) over every GPU of the stage, where expert
    parallelism or DP attention spreads them (gpus_per_stage = TP otherwise)."""
    return (weights_read_bytes - routed_active_bytes) / tp + (routed_active_bytes + extra_expert_bytes) / gpus_per_stage


# ---------------------------------------------------------------------------------
# the step
# ---------------------------------------------------------------------------------


def step_flops(active_params, tokens):
    """FLOPs of a step over some tokens (decode + prefill): 2 x N_active per token."""
    return FLOPS_PER_PARAM * active_params * tokens


def linear_seconds(weight_bytes, flops, hbm_bw, peak_flops, weight_efficiency, compute_efficiency):
    """The linear layers of a step: max(weights / (BW x e_w), FLOPs / (peak x e_c))."""
    return maximum(weight_bytes / (hbm_bw * weight_efficiency), flops / (peak_flops * compute_efficiency))


def compute_bound(weight_bytes, flops, hbm_bw, peak_flops, weight_efficiency, compute_efficiency):
    """1 when the linear layers of a step are compute-bound (FLOPs take longer than streaming the weights)."""
    return where(gt(flops / (peak_flops * compute_efficiency), weight_bytes / (hbm_bw * weight_efficiency)), 1, 0)


def prefill_batch_tokens(batching, effective_concurrency, input_tokens):
    """Prompt tokens one request's TTFT waits for: S continuous, the whole batch B x S static."""
    return where(eq(batching, BATCHING_STATIC), effective_concurrency * input_tokens, input_tokens)


def prefill_room_tokens(max_num_batched_tokens, chunked_prefill, effective_concurrency):
    """Prompt tokens one step has room for: a chunking engine schedules the running sequences' decode tokens first
    and fills what is left of its token budget with waiting prompts (vLLM V1 ``Scheduler.schedule``: "First, schedule
    the RUNNING requests", then "schedule the WAITING requests" while ``token_budget > 0``, the budget being
    max_num_batched_tokens; vllm/v1/core/sched/scheduler.py at 00024d3), so max_num_batched_tokens - B; an engine
    that runs prompts whole in their own iteration has its whole max_num_batched_tokens.  At least one token."""
    return maximum(max_num_batched_tokens - chunked_prefill * effective_concurrency, 1)


def lockstep_prompts(effective_concurrency, prefill_room_tokens, input_tokens):
    """Prompts whose prefill ends in the same step: as many whole S-token prompts as the room holds, at least one,
    at most the B in flight.

    A benchmark's closed loop with fixed lengths (``--random-range-ratio 1`` / ``--ignore-eos``) stays in lockstep:
    prompts that get their first token in the same step decode the same T - 1 steps, finish in the same step and
    their clients send the next prompts together, so every later request arrives with the same group."""
    return minimum(effective_concurrency, maximum(1, prefill_room_tokens / input_tokens))


def admission_wait_seconds(batching, overlap_scheduling, scheduler_recv_interval, tpot_seconds):
    """Steps a closed-loop request waits before the step that prefills it (continuous batching; 0 static).

    Its client sends it when its predecessor's last token arrives, which is after the engine has launched its next
    step: the engine reads new requests only between steps (vLLM V1 ``EngineCore.run_busy_loop``: the input queue,
    then a step; vllm/v1/engine/core.py at ac3cb2e2eca8), so the request waits for that whole running step
    (STEPS_RUNNING_AT_ARRIVAL).  An engine whose scheduler runs one step ahead (``overlap_scheduling`` 1) has also
    scheduled the step after it before the request arrives (vLLM's async scheduling, ``step_with_batch_queue``:
    "fulfilling the batch queue has a higher priority than getting model outputs", same file; SGLang's overlap event
    loop launches batch n+1 before it processes batch n's results), one more step.  One that reads new requests
    only every I-th decode step (``scheduler_recv_interval``: SGLang's SchedulerRecvSkipper, sglang 0.5.6) meets the
    request at a step uniformly placed in its cycle: (I - 1) / 2 more on average.  A decode step each: TPOT."""
    steps = STEPS_RUNNING_AT_ARRIVAL + overlap_scheduling + (scheduler_recv_interval - 1) / STEP_RESIDUAL_DIVISOR
    return where(eq(batching, BATCHING_STATIC), 0, steps * tpot_seconds)


def lockstep_ttft_seconds(batching, lockstep_prompts, input_tokens, prefill_room_tokens, ttft_service_seconds,
                          prefill_seconds_per_extra_prompt, tpot_seconds, admission_wait_seconds):
    """TTFT of a request that arrives with its lockstep group (the benchmark's steady state): the wait for the steps
    already running or scheduled when it arrives (:func:`admission_wait_seconds`) + the group's prefill (one prompt's
    service time + each further prompt's prefill work) + the steps it rides, each running the B decodes too (a
    decode step each): S / room of them for a prompt longer than the room, one at least (a prompt's first token comes
    out of an engine step).  Static batching: the batch's own prefill."""
    steps = maximum(1, input_tokens / prefill_room_tokens)
    group = ttft_service_seconds + (lockstep_prompts - 1) * prefill_seconds_per_extra_prompt
    return where(eq(batching, BATCHING_STATIC), ttft_service_seconds,
                 admission_wait_seconds + group + steps * tpot_seconds)


def prefill_bound_ttft_seconds(batching, chunked_prefill, effective_concurrency, input_tokens, output_tokens,
                               prefill_room_tokens, tpot_seconds):
    """TTFT when a chunking engine's prompts need more steps than a cycle has: each cycle the B clients send B x S
    prompt tokens and a step takes at most the room of them, so a cycle lasts at least B x S / room steps; beyond
    the T - 1 decode steps of a request the difference is spent waiting for prefill room (Little's law on the closed
    loop).  0 when the room absorbs the prompts, in static batching, and for an engine that runs prompts whole in
    their own iterations (their time is in the decode steps' stalls, prefill_stall_seconds)."""
    steps = effective_concurrency * input_tokens / prefill_room_tokens - (output_tokens - 1)
    return where(eq(batching, BATCHING_STATIC), 0, chunked_prefill * maximum(steps, 0) * tpot_seconds)


def chunk_fixed_seconds(ttft_service_seconds, prefill_seconds_per_extra_prompt, prefill_chunks):
    """The fixed part of one prefill chunk: what a lone prompt's chunks cost beyond a further prompt's per-token work
    (kernel floors paid once per forward pass: a MoE layer's expert weight reads, launches, all-reduce latencies; on
    the roofline, the weight read beyond the FLOPs), per chunk of the prompt; never below 0."""
    return maximum(ttft_service_seconds - prefill_seconds_per_extra_prompt, 0) / prefill_chunks


def wave_extra_chunks(prompts, input_tokens, max_num_batched_tokens, prefill_chunks):
    """Forward passes a wave of prompts takes beyond one prompt's: ceil(n S / budget) - the prompt's chunks (>= 0)."""
    return maximum(ceil(prompts * input_tokens / max_num_batched_tokens) - prefill_chunks, 0)


def wave_prefill_seconds(prompts, ttft_service_seconds, prefill_seconds_per_extra_prompt, extra_chunks, chunk_fixed):
    """Prefill of a wave of n prompts sent together: one prompt's service time plus each further prompt's prefill
    work, plus the fixed part of every chunk of max_num_batched_tokens the wave needs beyond the lone prompt's
    (:func:`chunk_fixed_seconds`: every forward pass pays its kernel floors again)."""
    return ttft_service_seconds + (prompts - 1) * prefill_seconds_per_extra_prompt + extra_chunks * chunk_fixed


def wave_ttft_seconds(batching, prompts, input_tokens, max_num_batched_tokens, ttft_service_seconds,
                      wave_prefill_seconds):
    """Mean TTFT of a wave of prompts sent together (a closed-loop benchmark's clients start together).

    The wave's prefill is :func:`wave_prefill_seconds`; prompt i of n is done once i x S of the n x S tokens have
    run, so the mean request waits (n + 1) / (2 n) of it, all of it when the wave fits one chunk of
    max_num_batched_tokens.  Static batching: the batch's own prefill (it is the wave already)."""
    n = prompts  # the effective concurrency: at least 1
    wave = wave_prefill_seconds
    share = maximum((n + 1) / (RAMP_MEAN_DIVISOR * n), minimum(1, max_num_batched_tokens / (n * input_tokens)))
    return where(eq(batching, BATCHING_STATIC), ttft_service_seconds, wave * share)


def benchmark_ttft_seconds(benchmark_requests, concurrency, effective_concurrency, wave_ttft_seconds,
                           steady_ttft_seconds, tpot_seconds, queue_seconds):
    """Mean TTFT over a benchmark's N requests: the first B arrive together (the wave); the others arrive with their
    lockstep group (``steady_ttft_seconds``); never shorter than one engine step; + the wait for a slot when more
    clients than slots: (C - B) / QPS for each request of a closed loop, half of it on average for the first C,
    which are sent at once (a benchmark of N <= C requests sends them all at once and then only drains)."""
    first = minimum(effective_concurrency, benchmark_requests)
    mean = (first * wave_ttft_seconds + (benchmark_requests - first) * steady_ttft_seconds) / benchmark_requests
    sent_at_once = minimum(concurrency, benchmark_requests) / (RAMP_MEAN_DIVISOR * benchmark_requests)
    return maximum(mean, tpot_seconds) + queue_seconds * (1 - sent_at_once)


def cycle_seconds(ttft_service_seconds, output_tokens, tpot_seconds):
    """How long a request holds its slot: TTFT + (T - 1) x TPOT."""
    return ttft_service_seconds + (output_tokens - 1) * tpot_seconds


def queue_seconds(concurrency, decode_requests, qps_per_replica):
    """Closed-loop wait for admission: (C - D) / QPS (Little's law on the C - D clients not admitted; 0 when all are;
    D: the requests admitted, :mod:`inference_ledger.formulas.admission`)."""
    return maximum(concurrency - decode_requests, 0) / qps_per_replica


def tpot_batch_bandwidth(tpot_target, fixed_seconds, weight_seconds, kv_seconds_per_sequence,
                         allreduce_seconds_per_token, parallel_seconds_per_token, prompt_per_sequence):
    """Batch where a weight-streaming step meets the TPOT target, less the step's fixed time.

    With p prompt tokens per extra sequence a step carries u = B (1 + p) - p tokens and takes
    max(W, u f) + B k + u a (weights W, compute f and all-reduce a per token (TP and EP/PP), KV k per sequence);
    streaming: W + B k + u a <= budget, so B <= (budget - W + p a) / (k + (1 + p) a)."""
    p, a, k = prompt_per_sequence, allreduce_seconds_per_token + parallel_seconds_per_token, kv_seconds_per_sequence
    return (tpot_target - fixed_seconds - weight_seconds + p * a) / (k + (1 + p) * a)


def tpot_batch_compute(tpot_target, fixed_seconds, flops_seconds_per_token, kv_seconds_per_sequence,
                       allreduce_seconds_per_token, parallel_seconds_per_token, prompt_per_sequence):
    """Batch where a compute-bound step meets the TPOT target, less the step's fixed time: u (f + a) + B k <= budget,
    so B <= (budget + p (f + a)) / ((1 + p)(f + a) + k)."""
    p, k = prompt_per_sequence, kv_seconds_per_sequence
    fa = flops_seconds_per_token + (allreduce_seconds_per_token + parallel_seconds_per_token)
    return (tpot_target - fixed_seconds + p * fa) / ((1 + p) * fa + k)

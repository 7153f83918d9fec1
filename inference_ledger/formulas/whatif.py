"""What QPS, and the inputs solved for: closed-form inverses of the memory and decode ledgers.

Written with the :mod:`inference_ledger.core.expr` helpers like :mod:`inference_ledger.formulas.ledger`, so each
function is one definition that computes on numbers/numpy arrays and renders to a portable Excel
formula (no Goal Seek, no macros, no iteration).  Base units: bytes, seconds, tokens.

QPS.  With continuous batching (Orca, Yu et al. OSDI'22; vLLM, Kwon et al. SOSP'23) a
replica keeps ``B`` sequences in flight; each request holds its slot for
``W = TTFT + (T - 1) x TPOT(B)`` (its first token, then T - 1 decode steps).  Little's law (``L = lambda x W``, Little 1961) gives the
request rate one replica sustains: ``lambda = B / W``.

Inverses.  Every ledger the plan uses is affine in the unknown or a max of affine
pieces, so the boundary has a closed form:

* memory per GPU ``W/tp + B x KV_seq(C)/shards + workspace <= usable`` solved for the
  context ``C`` (piecewise with sliding-window layers), the sequences ``B``, or ``tp``;
* decode step ``max((W_read/tp + B x KV_seq/shards) / (BW x e_bw), 2 N_a B / tp / (peak x e_c))
  <= TPOT target`` solved for the batch ``B``.

Each inverse returns the largest (or, for GPUs, smallest) whole value on the feasible
side of the boundary; the tests feed it back into :mod:`inference_ledger.graph.plan` and check that it
fits while one step further does not.
"""

from __future__ import annotations

from inference_ledger.core.sheetfuncs import ceil, eq, floor, gt, le, literal, log, maximum, minimum, where
from inference_ledger.core.refs import name
from inference_ledger.formulas.serving import cycle_seconds
from inference_ledger.core.units import BATCHING_STATIC, HOURS_PER_MONTH, TP_BASE

__all__ = [
    "qps_per_replica",
    "monthly_gpu_hours",
    "tpot_max_batch_roofline",
    "max_context_tokens",
    "context_for_tokens",
    "max_sequences",
    "min_gpus_closed_form",
    "tp_candidates",
    "tp_candidate_formula",
    "first_fit",
]


def qps_per_replica(concurrency, ttft_seconds, output_tokens, tpot_seconds):
    """Requests/s one replica sustains at a concurrency: B / (TTFT + (T - 1) x TPOT) (Little's law over B slots).

    A request holds its slot for its first token (TTFT) and then T - 1 decode steps of TPOT each
    (:func:`inference_ledger.formulas.serving.cycle_seconds`): TPOT as the serving benchmarks measure it,
    (latency - TTFT) / (output tokens - 1) (vllm-project/vllm vllm/benchmarks/serve.py, calculate_metrics).
    70B on 4 x H100 at B = 16, TTFT 0.2 s, T = 512, TPOT 0.03 s: 16 / (0.2 + 511 x 0.03) = 16 / 15.53 = 1.030 req/s.
    """
    return concurrency / cycle_seconds(ttft_seconds, output_tokens, tpot_seconds)


def benchmark_seconds(benchmark_requests, concurrency, output_tokens, ttft_seconds, tpot_seconds, ttft_service_seconds):
    """How long a closed-loop benchmark of N requests at concurrency C runs: until its last request has finished.

    vLLM's and SGLang's benchmark_serving time the run from the first request sent to the last output (all requests
    gathered, then the clock read) and print 'Output token throughput' as generated tokens / that duration.  Over
    several rounds (N > C) Little's law gives it: C clients each wait a request's latency (the benchmark's mean TTFT,
    first wave and queueing included, + (T - 1) x TPOT) before sending the next, ceil(N / C) rounds of it.  A run of
    N <= C requests is one round, and it lasts as long as its LAST request: the C prompts arrive together, their first
    tokens spread from the lone prompt's service time to the last one's, so the last TTFT is as far past the mean as
    the first is before it: the mean + max(mean - service, 0).
    Llama-70B-like, T = 100, TTFT 20 s (lone prompt 1 s), TPOT 0.1 s: N = 1,000 at C = 100, 10 rounds of
    20 + 9.9 = 299 s; N = C = 100, one round: 20 + 19 + 9.9 = 48.9 s."""
    rounds = ceil(benchmark_requests / concurrency)
    spread = where(le(rounds, 1), maximum(ttft_seconds - ttft_service_seconds, 0), 0)
    return rounds * cycle_seconds(ttft_seconds, output_tokens, tpot_seconds) + spread


def benchmark_tokens_per_second(batching, tokens_per_second, benchmark_requests, concurrency, output_tokens,
                                ttft_seconds, tpot_seconds, ttft_service_seconds):
    """Output tokens/s a closed-loop benchmark measures: N x T over its duration (:func:`benchmark_seconds`), never
    more than the replica's steady state (``tokens_per_second``), which leaves out the first wave and the queue that a
    short run (N near C, or few output tokens) mostly consists of.  Static batching: the batch itself (its TTFT is the
    batch's prefill already in the steady state).  N = 1,000, T = 100 over 299 s: 334 tokens/s; N = 100 over
    48.9 s: 204 tokens/s."""
    duration = benchmark_seconds(benchmark_requests, concurrency, output_tokens, ttft_seconds, tpot_seconds,
                                 ttft_service_seconds)
    return where(eq(batching, BATCHING_STATIC), tokens_per_second,
                 minimum(tokens_per_second, benchmark_requests * output_tokens / duration))


def monthly_gpu_hours(num_gpus):
    """GPU-hours a month of provisioned GPUs bills: GPUs x 730 h."""
    return num_gpus * HOURS_PER_MONTH


def tpot_max_batch_roofline(tpot_target, weights_read_bytes, kv_sequence_bytes, flops_per_sequence, hbm_bw, peak_flops,
                   bw_efficiency=1, compute_efficiency=1):
    """Largest decode batch whose roofline step time meets the TPOT target (0 = none does).

    The step reads the weights once and every sequence's KV once, and does
    2 N_active FLOPs per sequence (see :func:`inference_ledger.formulas.ledger.decode_step_seconds`), so
    TPOT(B) <= t holds exactly when both
    B <= (t x BW x e_bw - W_read) / KV_seq   and   B <= t x peak x e_c / FLOPs_seq.
    Bytes and FLOPs are those of one GPU (weights / TP, KV / KV shards, FLOPs / TP).
    """
    bandwidth_bound = (tpot_target * hbm_bw * bw_efficiency - weights_read_bytes) / kv_sequence_bytes
    compute_bound = tpot_target * peak_flops * compute_efficiency / flops_per_sequence
    return maximum(floor(minimum(bandwidth_bound, compute_bound)), 0)


def max_context_tokens(kv_budget_bytes, concurrency, kv_bytes_per_token_per_gpu, num_layers,
                       sliding_layers=0, window=0):
    """Longest context per sequence whose KV fits the budget at a concurrency (0 = none).

    A sequence of context C holds (L - L_s) x C + L_s x min(C, window) layer-tokens
    (:func:`inference_ledger.formulas.ledger.kv_sequence_bytes`).  With t = budget / (B x KV bytes per token,
    all layers), C = t while C stays within the window, else (L x t - L_s x window) / (L - L_s).
    When every layer slides (L_s = L) memory does not bound the context once a window
    fits; the second branch then returns a context that fits (a lower bound).
    """
    return context_for_tokens(kv_budget_bytes / (concurrency * kv_bytes_per_token_per_gpu), num_layers,
                              sliding_layers, window)


def context_for_tokens(tokens, num_layers, sliding_layers=0, window=0):
    """Longest context whose KV is ``tokens`` all-layer tokens per sequence (0 = none); see :func:`max_context_tokens`."""
    full_layers = maximum(num_layers - sliding_layers, 1)
    context = where(le(tokens, window), tokens, (num_layers * tokens - sliding_layers * window) / full_layers)
    return maximum(floor(context), 0)


def max_sequences(kv_budget_bytes, kv_bytes_per_sequence):
    """Most sequences of one context whose KV fits the budget: floor(budget / KV per sequence), per GPU."""
    return maximum(floor(kv_budget_bytes / kv_bytes_per_sequence), 0)


def min_gpus_closed_form(weights_bytes, kv_peak_bytes, fit_bytes_per_gpu, kv_max_shards):
    """Fewest GPUs (a power-of-two TP degree) holding the weights and a load's KV; 0 = no TP does.

    The seed's ledger, where each GPU keeps a fixed overhead beside weights and KV.  (The
    plan's engine model also moves activations and NCCL buffers with TP; its line
    ``min_gpus_to_fit`` tests each TP of one node, :func:`tp_candidates`, with :func:`first_fit` instead.)

    Per GPU: W / tp + KV / min(tp, S) <= A, where A is what one GPU offers after its
    workspace and S the most ways the KV splits (KV heads; 1 for an MLA latent, see
    :func:`inference_ledger.formulas.ledger.kv_shards`).  Since KV / min(tp, S) = max(KV / tp, KV / S), this is
    tp >= (W + KV) / A  and  tp >= W / (A - KV / S)  (and needs A > KV / S).
    """
    spare = fit_bytes_per_gpu - kv_peak_bytes / kv_max_shards
    feasible = gt(spare, 0)
    split_kv = weights_bytes / where(feasible, spare, 1)
    raw = maximum((weights_bytes + kv_peak_bytes) / fit_bytes_per_gpu, split_kv, 1)
    return where(feasible, TP_BASE ** ceil(log(raw, TP_BASE)), 0)


def tp_candidates(gpus_per_node):
    """The TP degrees one node offers: the powers of two up to its GPUs (a 4-GPU node: 1, 2, 4; an 8-GPU: 1, 2, 4, 8).

    TP splits the attention heads and the dense matrices, whose sizes are powers of two in every catalog model, so the
    engines' TP degrees are too (vLLM and SGLang refuse a TP that does not divide the heads).
    """
    n = float(gpus_per_node)
    if not n >= 1:
        raise ValueError(f"gpus_per_node must be >= 1, got {gpus_per_node!r}")
    out, c = [], 1.0
    while c <= n:
        out.append(c)
        c *= float(TP_BASE)
    return tuple(out)


def tp_candidate_formula(tp):
    """A TP candidate as a formula of named constants: 1, TP_BASE, TP_BASE*TP_BASE, ... (no bare numbers)."""
    out, c = literal(1), 1.0
    while c < float(tp):
        out, c = (name(TP_BASE.name, float(TP_BASE)) if c == 1.0 else out * TP_BASE), c * float(TP_BASE)
    if c != float(tp):
        raise ValueError(f"TP candidate {tp!r} is not a power of {TP_BASE:g}")
    return out


def first_fit(candidates, flags):
    """The first candidate whose flag is 1, else 0: IF(f1=1, c1, IF(f2=1, c2, ... 0))."""
    out = 0
    for c, f in reversed(list(zip(candidates, flags))):
        out = where(eq(f, 1), c, out)
    return out

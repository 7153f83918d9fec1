"""The three ledgers of one generation: memory, compute, bandwidth (and what they cost).

Each function is the single definition of its formula.  They take numbers or numpy
arrays (broadcast elementwise) and return the same; called with :class:`inference_ledger.core.expr.Sym`
arguments they return the Excel formula instead (see :mod:`inference_ledger.core.expr`).  So nothing
here may use ``if``/``max``/``math`` directly: branches are ``where``, rounding is
``ceil``/``floor``, and every constant is a named :class:`~inference_ledger.core.expr.Const`.

Base units in and out: bytes, seconds, FLOP, FLOP/s, bytes/s, tokens, dollars.

Notation follows the seed article ("Inference Resource Accounting"):
N parameters, L layers, K KV heads, H head dim, S input tokens, T output tokens,
b bytes per element, BW HBM bandwidth.

The seed's own KV table (28 KB and 160 KB per token; 115 MB, 655 MB, 917 MB, 5.2 GB)
drops the K/V factor 2 of its own formula; the values here are the formula's:
327,680 B/token for 80 layers x 8 KV heads x 128 x BF16, 1,342,177,280 B at 4K.
"""

from __future__ import annotations

from inference_ledger.core.line import COMPUTE, COST, MEMORY, line
from inference_ledger.core.sheetfuncs import ceil, floor, ge, gt, le, log, maximum, minimum, where
from inference_ledger.core.units import (BITS_PER_BYTE, DAYS_PER_MONTH, FLOPS_PER_PARAM, HOURS_PER_MONTH, KV_FACTOR,
                                         SECONDS_PER_DAY, SECONDS_PER_HOUR, TOKENS_PER_MILLION, TP_BASE)

# ---------------------------------------------------------------------------------
# The seed's four functions (names, argument order and defaults as published)
# ---------------------------------------------------------------------------------


def kv_bytes(num_layers, kv_heads, head_dim, seq_len, bytes_per=2):
    """KV cache of one sequence: 2 * L * K * H * S * b bytes (seed eq. "KV_per_token" x S).

    >>> kv_bytes(80, 8, 128, 4096)
    1342177280.0
    """
    return KV_FACTOR * num_layers * kv_heads * head_dim * seq_len * bytes_per


def weights_bytes(num_params, bytes_per=2):
    """Resident weights: W = N * b bytes (seed, Ledger One)."""
    return num_params * bytes_per


def flops_request(num_params, input_tokens, output_tokens):
    """FLOPs of one request: 2N*S + 2N*T (seed, Ledger Two; Kaplan et al. 2020 C_forward ~ 2N)."""
    return FLOPS_PER_PARAM * num_params * (input_tokens + output_tokens)


def decode_tpot(num_params, bytes_per, hbm_bw):
    """Bandwidth floor of one decode step in seconds: N * b / BW (seed, Ledger Three)."""
    return num_params * bytes_per / hbm_bw


# ---------------------------------------------------------------------------------
# Precision
# ---------------------------------------------------------------------------------


def bytes_per_element(bits, group_size=1, scale_bits=0):
    """Bytes per element including group scales: (bits + scale_bits / group) / 8.

    INT4 GPTQ/AWQ g128 with FP16 scales: (4 + 16/128) / 8 = 0.515625 B.
    MXFP4 (OCP MX v1.0, E8M0 scale per 32): (4 + 8/32) / 8 = 0.53125 B.
    """
    return (bits + scale_bits / group_size) / BITS_PER_BYTE


def weights_bytes_mixed(num_params, quantized_params, weight_bytes, unquantized_bytes=2):
    """Weights when only some modules are quantized (embeddings, norms, routers stay BF16).

    W = Q * b_q + (N - Q) * b_rest.  With Q = N this is the seed's N * b.
    """
    return quantized_params * weight_bytes + (num_params - quantized_params) * unquantized_bytes


# ---------------------------------------------------------------------------------
# KV cache
# ---------------------------------------------------------------------------------


def kv_bytes_per_token(num_layers, kv_heads, head_dim, bytes_per=2, mla_latent_dim=0):
    """KV bytes one token adds across all layers: 2 * L * K * H * b (GQA through K), or L * latent * b for MLA."""
    return kv_elements_per_token_layer(kv_heads, head_dim, mla_latent_dim) * bytes_per * num_layers


def kv_bytes_per_token_mla(num_layers, kv_lora_rank, qk_rope_head_dim, bytes_per=2):
    """Multi-head latent attention (DeepSeek-V2/V3) caches one compressed latent plus the
    decoupled RoPE key per layer: L * (d_c + d_R) * b (DeepSeek-V2, arXiv:2405.04434 s2.1).

    DeepSeek-V3: 61 * (512 + 64) * 2 = 70,272 B/token.
    """
    return num_layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per


@line("KV elements per token per layer", "elements", MEMORY,
      "2 x KV heads x head dim (K and V), or the MLA latent width when the model has one.")
def kv_elements_per_token_layer(kv_heads, head_dim, mla_latent_dim=0):
    """Cached elements per token per layer: the MLA latent if the model has one, else 2*K*H."""
    return where(ge(mla_latent_dim, 1), mla_latent_dim, KV_FACTOR * kv_heads * head_dim)


def kv_bytes_windowed(num_layers, kv_heads, head_dim, seq_len, bytes_per=2, sliding_layers=0, window=0):
    """KV of one sequence when some layers use sliding-window attention.

    Full layers hold all S tokens; sliding layers hold min(S, window) (Mistral-7B,
    Gemma-2 and gpt-oss alternate them).  With sliding_layers = 0 this is kv_bytes.
    """
    return kv_sequence_bytes(KV_FACTOR * kv_heads * head_dim, bytes_per, num_layers, seq_len, sliding_layers, window)


def kv_sequence_bytes(kv_elements_layer, kv_bytes, num_layers, context, sliding_layers=0, window=0):
    """KV of one sequence from the per-layer element count (GQA, MLA and windows in one)."""
    held = (num_layers - sliding_layers) * context + sliding_layers * minimum(context, window)
    return kv_elements_layer * kv_bytes * held


def kv_shards(kv_heads, tp, mla_latent_dim=0):
    """How many ways the KV cache splits under tensor parallelism.

    KV heads split across TP ranks; when TP > K each rank keeps a replica of one head,
    so the split is min(TP, K).  An MLA latent is not split at all (every rank holds it).
    """
    return where(ge(mla_latent_dim, 1), 1, minimum(tp, kv_heads))


# ---------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------


def memory_total_bytes(weights_bytes, kv_bytes_per_sequence, concurrency, workspace_bytes=0):
    """Seed's total: weights + KV planned for peak concurrent context + workspace."""
    return weights_bytes + kv_bytes_per_sequence * concurrency + workspace_bytes


def usable_bytes(gpu_memory_bytes, gpu_memory_utilization=0.9):
    """What the engine may use on one GPU (vLLM gpu_memory_utilization x total)."""
    return gpu_memory_bytes * gpu_memory_utilization


def gpus_needed(total_bytes, gpu_memory_bytes, gpu_memory_utilization=0.9, workspace_bytes=0):
    """Fewest GPUs holding total_bytes, as a valid tensor-parallel degree (a power of two).

    Each GPU offers memory x utilization - its own workspace.  A result above what the
    free memory allows is still a power of two: 3 GPUs' worth needs TP 4.
    Returns 0 when the workspace alone fills a GPU's usable memory: no count fits.
    """
    per_gpu = usable_bytes(gpu_memory_bytes, gpu_memory_utilization) - workspace_bytes
    raw = maximum(total_bytes / per_gpu, 1)
    return where(gt(per_gpu, 0), TP_BASE ** ceil(log(raw, TP_BASE)), 0)


def per_gpu(total, shards):
    """An amount split evenly over shards (weights / TP, KV / kv_shards)."""
    return total / shards


def kv_capacity_tokens_usable(gpu_memory_bytes, gpu_memory_utilization, weights_bytes_per_gpu, workspace_bytes_per_gpu,
                              kv_bytes_per_token_per_gpu):
    """The seed's simple form: KV tokens that fit in what is left of one GPU at the utilization (>= 0, whole).

    It equals the plan's ``kv_capacity_tokens`` under vLLM's rule; the plan line follows the engine's rule."""
    free = usable_bytes(gpu_memory_bytes, gpu_memory_utilization) - weights_bytes_per_gpu - workspace_bytes_per_gpu
    return maximum(floor(free / kv_bytes_per_token_per_gpu), 0)


def sequences_in_kv_tokens(kv_capacity_tokens, context):
    """The seed's simple form: sequences of a given context that fit in some KV tokens (whole; every layer full).

    The plan's ``max_concurrency`` divides the engine's KV budget by the KV of one sequence, sliding windows included."""
    return floor(kv_capacity_tokens / context)


# ---------------------------------------------------------------------------------
# Compute
# ---------------------------------------------------------------------------------


def forward_flops(active_params, tokens):
    """FLOPs of a forward pass over some tokens: 2 * N_active per token."""
    return FLOPS_PER_PARAM * active_params * tokens


@line("Prefill FLOPs", "FLOP", COMPUTE,
      "2 x N_active x S: the whole prompt in one parallel pass.")
def prefill_flops(active_params, input_tokens):
    """Prefill FLOPs of one prompt: 2 * N_active * S (attention's S^2 term left out, as in the seed)."""
    return forward_flops(active_params, input_tokens)


def compute_seconds(flops, peak_flops, efficiency=0.5, num_gpus=1):
    """Time to do flops on num_gpus at a fraction of dense peak (the seed assumes ~50%)."""
    return flops / (peak_flops * efficiency * num_gpus)


def ridge_batch(peak_flops, hbm_bw, bytes_per_param=2):
    """Roofline ridge: the decode batch where FLOPs catch up with weight reads.

    Step time is max(N*b/BW, 2*N*B/peak); they meet at B = peak * b / (2 * BW).
    H100 SXM in BF16: 989e12 * 2 / (2 * 3.35e12) ~ 295 sequences (KV reads ignored).
    """
    return peak_flops * bytes_per_param / (FLOPS_PER_PARAM * hbm_bw)


# ---------------------------------------------------------------------------------
# Bandwidth (decode)
# ---------------------------------------------------------------------------------


def decode_bytes_per_step(weights_read_bytes, kv_sequence_bytes, batch):
    """Bytes one decode step moves: every active weight once + every sequence's KV once."""
    return weights_read_bytes + kv_sequence_bytes * batch


def decode_step_seconds(bytes_moved, flops, hbm_bw, peak_flops, bw_efficiency=1, compute_efficiency=1):
    """Roofline step time: max(bytes / (BW * eff_bw), FLOPs / (peak * eff_c))."""
    return maximum(bytes_moved / (hbm_bw * bw_efficiency), flops / (peak_flops * compute_efficiency))


def batch_tokens_per_second(batch, tpot_seconds):
    """Output tokens per second of a batch decoding together: B / TPOT."""
    return batch / tpot_seconds


# ---------------------------------------------------------------------------------
# Cost
# ---------------------------------------------------------------------------------


def cost_per_hour(price_per_gpu_hour, num_gpus):
    return price_per_gpu_hour * num_gpus


def cost_per_million_output_tokens(price_per_gpu_hour, num_gpus, tokens_per_second):
    """$ per 1e6 output tokens at full use: price * GPUs / (tokens/s * 3600) * 1e6."""
    return cost_per_hour(price_per_gpu_hour, num_gpus) / (tokens_per_second * SECONDS_PER_HOUR) * TOKENS_PER_MILLION


@line("Output tokens/s the forecast needs", "tokens/s", COST,
      "Requests per day x output tokens / 86,400 (daily average).")
def required_tokens_per_second(requests_per_day, output_tokens):
    """Average output tokens/s a daily request forecast needs."""
    return requests_per_day * output_tokens / SECONDS_PER_DAY


def replicas_needed(required_tokens_per_second, tokens_per_second_per_replica):
    """Whole model copies to serve a token rate (at least one)."""
    return maximum(ceil(required_tokens_per_second / tokens_per_second_per_replica), 1)


def monthly_cost(price_per_gpu_hour, num_gpus):
    """GPU bill for a month of provisioned GPUs (730 h)."""
    return cost_per_hour(price_per_gpu_hour, num_gpus) * HOURS_PER_MONTH


def monthly_tokens(requests_per_day, output_tokens):
    """Output tokens a month of the forecast generates."""
    return requests_per_day * output_tokens * DAYS_PER_MONTH


def fits(total_bytes_per_gpu, usable_bytes_per_gpu):
    """1 when the per-GPU total fits in the usable memory, else 0."""
    return where(le(total_bytes_per_gpu, usable_bytes_per_gpu), 1, 0)


def fits_usable(total_bytes_per_gpu, usable_bytes_per_gpu):
    """The seed's simple fit test: 1 when weights + KV + workspace per GPU fit the usable memory.

    The plan's ``fits`` compares the peak KV with the engine's KV budget instead; under vLLM's rule
    the two agree."""
    return fits(total_bytes_per_gpu, usable_bytes_per_gpu)

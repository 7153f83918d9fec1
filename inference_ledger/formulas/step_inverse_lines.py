"""The largest batch meeting the TPOT target when the step is priced from the measured kernel tables: the inverse
of :mod:`inference_ledger.formulas.step_lines`' step (``tpot_seconds``), with the step's GEMMs summed into one curve and
MoE layers reading every expert (a bound).  One plain function per line, like
:mod:`inference_ledger.formulas.step_lines`.
"""

from __future__ import annotations

from inference_ledger.core.expr import is_sym
from inference_ledger.core.sheetfuncs import gt, literal, maximum, where
from inference_ledger.formulas import serving
from inference_ledger.core.line import BANDWIDTH, COMPUTE, derived, line, product
from inference_ledger.core.units import KERNEL_GEMM_POWER, ROUNDING_SHARE, TINY_SECONDS_SQUARED

# ---------------------------------------------------------------------------------
# the largest batch meeting the TPOT target when the step is priced from the kernel tables (the inverse of
# tpot_seconds, with the step's GEMMs summed into one curve and MoE layers reading every expert: a bound)
# ---------------------------------------------------------------------------------


def gemm_sum(num_layers, moe_layers, qkv, o, mlp, shared, moe_kernel_table, moe):
    """One figure (floor, or time per token) of a step's GEMMs summed over its layers: QKV and O in every layer, the
    MLP in the dense ones, the shared experts in the MoE ones, the MoE layers' routed experts where they follow a
    GEMM's curve (``moe_kernel_table`` 0; the fused-MoE table's are priced apart)."""
    return num_layers * (qkv + o) + (num_layers - moe_layers) * mlp + moe_layers * shared \
        + (1 - moe_kernel_table) * moe


@line("Experts per GPU, every expert touched", "experts", BANDWIDTH,
      "Routed experts whose GEMMs a GPU runs when a step touches every expert (0 for a dense model).")
def experts_per_gpu_all(num_experts, ep, gpus_per_stage):
    return where(gt(ep, 1), num_experts / gpus_per_stage, num_experts)


@line("Kernel step: MoE floors", "s", BANDWIDTH,
      "Each MoE layer's fused kernel over every expert on the GPU at one token: a launch + each expert's floor beyond it.")
def kernel_moe_floor_seconds(moe_layers, moe_kernel_launch_seconds, experts_per_gpu_all,
                             moe_expert_kernel_floor_seconds):
    return moe_layers * (moe_kernel_launch_seconds + experts_per_gpu_all * (moe_expert_kernel_floor_seconds
                                                                           - moe_kernel_launch_seconds))


def _gemms_at(figure, label, doc):
    """The line of the step's GEMMs summed at one figure of their curves (``floor_seconds``, ``seconds_per_token``)."""
    return derived(f"kernel_gemm_{figure}", gemm_sum, label, "s", BANDWIDTH, doc, qkv=f"qkv_kernel_{figure}",
                   o=f"o_kernel_{figure}", mlp=f"mlp_kernel_{figure}", shared=f"shared_mlp_kernel_{figure}",
                   moe=f"kernel_moe_{figure}")


kernel_gemm_floor_seconds = _gemms_at("floor_seconds", "Kernel step: GEMM floors",
    "The step's GEMMs at one token: layers x (QKV + O floors) + dense MLP and shared-expert floors + the MoE floors "
    "where the experts follow a GEMM's curve (the fused-MoE table's are linear: a fixed time).")


@line("Kernel step: MoE experts' time per token", "s", BANDWIDTH,
      "MoE layers x k experts' time per token, on this GPU's share of them (0 for a dense model).")
def kernel_moe_seconds_per_token(moe_layers, experts_per_token, num_experts, experts_per_gpu_all,
                                 moe_expert_kernel_seconds_per_token):
    return moe_layers * experts_per_token * experts_per_gpu_all / maximum(num_experts, 1) \
        * moe_expert_kernel_seconds_per_token


kernel_gemm_seconds_per_token = _gemms_at("seconds_per_token", "Kernel step: GEMM time per token",
    "Layers x (QKV + O time per token) + the dense MLP's and shared experts' per token + the experts' where they "
    "follow a GEMM's curve (from the GEMM table; the fused-MoE table's grow linearly: a per step token term).")


@line("Kernel step: fixed time", "s", BANDWIDTH,
      "What a step costs whatever the batch: attention and all-reduce floors, element-wise floors and per-step "
      "overhead, the LM head's floor, EP/PP latencies, the MoE floors priced from the fused-MoE table.")
def kernel_fixed_seconds(num_layers, tp, decode_attention_kernel_floor_seconds, tp_allreduces_per_pass,
                         allreduce_floor_seconds, elementwise_fixed_seconds, lm_head_kernel_floor_seconds,
                         parallel_fixed_seconds, moe_kernel_table, kernel_moe_floor_seconds):
    return num_layers * decode_attention_kernel_floor_seconds + elementwise_fixed_seconds \
        + where(gt(tp, 1), tp_allreduces_per_pass * allreduce_floor_seconds, 0) \
        + lm_head_kernel_floor_seconds + parallel_fixed_seconds + moe_kernel_table * kernel_moe_floor_seconds


@line("Kernel step: per other sequence's prompt", "s", BANDWIDTH,
      "What each other sequence's prompt adds to the mean step: its share of a prompt's attention when chunked, or "
      "its whole-prompt stall when not.")
def kernel_prompt_seconds_per_sequence(num_layers, chunked_prefill, prompt_per_sequence, input_tokens,
                                       output_tokens, prefill_attention_kernel_floor_seconds,
                                       prefill_attention_kernel_seconds_per_token_squared, ttft_service_seconds):
    attention = num_layers * serving.linear_curve(input_tokens * input_tokens, prefill_attention_kernel_floor_seconds,
                                                  prefill_attention_kernel_seconds_per_token_squared)
    stall = (1 - chunked_prefill) * output_tokens / maximum(output_tokens - 1, 1) * ttft_service_seconds
    return prompt_per_sequence / input_tokens * (chunked_prefill * attention + stall)


@line("Kernel step: per decoding sequence", "s", BANDWIDTH,
      "Each sequence's KV read (layers x time per KV token x its context) + its LM-head row + its prompt share.")
def kernel_seconds_per_sequence(num_layers, decode_attention_kv_tokens, effective_concurrency,
                                decode_attention_kernel_seconds_per_kv_token, lm_head_kernel_seconds_per_token,
                                kernel_prompt_seconds_per_sequence):
    return num_layers * decode_attention_kernel_seconds_per_kv_token * decode_attention_kv_tokens \
        / effective_concurrency + lm_head_kernel_seconds_per_token + kernel_prompt_seconds_per_sequence


@line("Kernel step: per step token", "s", BANDWIDTH,
      "Each token of a step's TP all-reduces (hidden x bytes each) and element-wise traffic (a rank's share of both "
      "under attention DP), EP/PP/DP traffic and experts priced from the fused-MoE table (linear in their tokens).")
def kernel_seconds_per_step_token(tp, tp_allreduces_per_pass, dp_attention, hidden_size, unquantized_bytes,
                                  allreduce_seconds_per_byte, elementwise_seconds_per_token,
                                  parallel_seconds_per_token, moe_kernel_table, kernel_moe_seconds_per_token):
    return (where(gt(tp, 1), tp_allreduces_per_pass * allreduce_seconds_per_byte * hidden_size
                  * unquantized_bytes, 0) + elementwise_seconds_per_token) / dp_attention \
        + parallel_seconds_per_token + moe_kernel_table * kernel_moe_seconds_per_token


@line("Kernel step: budget left for the batch", "s", BANDWIDTH,
      "TPOT target - fixed time + the prompt share one sequence does not pay + the all-reduce of the prompt tokens "
      "the first sequence does not bring.")
def kernel_batch_budget_seconds(tpot_target, kernel_fixed_seconds, kernel_prompt_seconds_per_sequence,
                                kernel_seconds_per_step_token, prompt_per_sequence, chunked_prefill):
    return tpot_target - kernel_fixed_seconds + kernel_prompt_seconds_per_sequence \
        + kernel_seconds_per_step_token * prompt_per_sequence * chunked_prefill


@line("Kernel step: time per added sequence", "s", BANDWIDTH,
      "What one more sequence adds outside the GEMMs: its own terms + its 1 + p step tokens' all-reduce.")
def kernel_batch_seconds_per_sequence(kernel_seconds_per_sequence, kernel_seconds_per_step_token,
                                      prompt_per_sequence, chunked_prefill):
    return kernel_seconds_per_sequence + kernel_seconds_per_step_token * (1 + prompt_per_sequence * chunked_prefill)


kernel_step_prompt_share = product("kernel_step_prompt_share", ("prompt_per_sequence", "chunked_prefill"),
    "Prompt tokens per other sequence in a step", "tokens", COMPUTE,
    "p of the kernel inverse: prompt tokens each other sequence brings to a step (0 when prompts run whole).")


# The batch B whose step sqrt(W^2 + (F u)^2) + B s meets a budget y0, with u = B c - p tokens per step (c = 1 + p):
# the GEMMs' curve (W their floors, F their time per token, KERNEL_GEMM_POWER = 2) plus what grows linearly with
# B (s per sequence, all-reduce per token folded in).  Squaring W^2 + F^2 u^2 = (y0 - s B)^2 gives
# A2 B^2 + 2 H B + A0 = 0 with A2 = F^2 c^2 - s^2, H = y0 s - F^2 c p, A0 = F^2 p^2 + W^2 - y0^2; the root on the
# decreasing side is -A0 / (H + sqrt(H^2 - A2 A0)) (stable as A2 -> 0).  Summing the GEMMs into one curve prices a
# step at most a few % under the sum of their own curves (Minkowski): the batch is an upper estimate by as much
# (within one sequence of a brute-force search on the catalog's dense models).



@line("Kernel inverse: A2", "s2", BANDWIDTH, "F^2 (1 + p)^2 - s^2.")
def tpot_batch_kernel_a2(kernel_gemm_seconds_per_token, kernel_batch_seconds_per_sequence, kernel_step_prompt_share):
    c = 1 + kernel_step_prompt_share
    return kernel_gemm_seconds_per_token * kernel_gemm_seconds_per_token * c * c \
        - kernel_batch_seconds_per_sequence * kernel_batch_seconds_per_sequence


@line("Kernel inverse: H", "s2", BANDWIDTH, "y0 s - F^2 (1 + p) p.")
def tpot_batch_kernel_h(kernel_gemm_seconds_per_token, kernel_batch_budget_seconds, kernel_batch_seconds_per_sequence,
                        kernel_step_prompt_share):
    return kernel_batch_budget_seconds * kernel_batch_seconds_per_sequence \
        - kernel_gemm_seconds_per_token * kernel_gemm_seconds_per_token * (1 + kernel_step_prompt_share) \
        * kernel_step_prompt_share


@line("Kernel inverse: A0", "s2", BANDWIDTH, "F^2 p^2 + W^2 - y0^2.")
def tpot_batch_kernel_a0(kernel_gemm_floor_seconds, kernel_gemm_seconds_per_token, kernel_batch_budget_seconds,
                         kernel_step_prompt_share):
    return (kernel_gemm_seconds_per_token * kernel_step_prompt_share) ** KERNEL_GEMM_POWER \
        + kernel_gemm_floor_seconds ** KERNEL_GEMM_POWER - kernel_batch_budget_seconds ** KERNEL_GEMM_POWER


@line("Batch meeting the TPOT target, kernel tables", "sequences", BANDWIDTH,
      "The batch whose table-priced step meets the target: the GEMM curve + the per-sequence terms = the budget, "
      "-A0 / (H + sqrt(H^2 - A2 A0)), the discriminant less its rounding noise (ROUNDING_SHARE x H^2); 0 when even "
      "one sequence misses the budget (TINY_SECONDS_SQUARED keeps it finite where every kernel figure is 0).")
def tpot_batch_kernel(kernel_gemm_floor_seconds, kernel_batch_budget_seconds, tpot_batch_kernel_a2,
                      tpot_batch_kernel_h, tpot_batch_kernel_a0):
    a2, h, a0 = tpot_batch_kernel_a2, tpot_batch_kernel_h, tpot_batch_kernel_a0
    root = literal(1) / KERNEL_GEMM_POWER if is_sym(a2, h, a0) else 1 / KERNEL_GEMM_POWER
    return where(gt(kernel_batch_budget_seconds, kernel_gemm_floor_seconds),
                 -a0 / (h + maximum(h * h - a2 * a0 - ROUNDING_SHARE * h * h, 0) ** root + TINY_SECONDS_SQUARED), 0)

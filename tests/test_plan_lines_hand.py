"""Plan lines that only their own sheet showed, checked against an independent figure (bench/mutate_lines.py
found them unpinned): a what-if column against a real plan at that TP, the fit flags at their edges, a
request's latency, the headroom, the expert bytes, the layout's prefill communication."""

from __future__ import annotations

import pytest

from inference_ledger.graph import plan, resolve


def plan_of(model, gpu, **numbers):
    return plan.evaluate(resolve.resolve(model, gpu, numbers=numbers).inputs)


@pytest.mark.parametrize("model,gpu", [("llama-3.1-70b", "h100-sxm"), ("gpt-oss-120b", "h100-sxm"),
                                       ("mixtral-8x7b", "a100-80gb")])
@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_what_if_tp_columns_are_the_plan_at_that_tp(model, gpu, n):
    at4 = plan_of(model, gpu, tp=4)
    other = plan_of(model, gpu, tp=n)
    column = at4["tp_candidates"][str(n)]   # the family's column at TP n, from the plan at TP 4
    assert column["tp"] == n
    assert column["weights_bytes_per_gpu"] == pytest.approx(other["weights_bytes_per_gpu"], rel=1e-12)
    assert column["workspace_bytes_per_gpu"] == pytest.approx(other["workspace_bytes_per_gpu"], rel=1e-12)
    assert column["kv_cache_budget_bytes_per_gpu"] == pytest.approx(other["kv_cache_budget_bytes_per_gpu"], rel=1e-12)


def test_flags_and_latency_by_hand():
    v = plan_of("llama-3.1-70b", "h100-sxm", tp=4)
    # a request: its first token, then T tokens at TPOT
    assert v["request_seconds"] == pytest.approx(v["ttft_seconds"] + 512 * v["tpot_seconds"])
    # KV budget left after the peak KV
    assert v["headroom_bytes_per_gpu"] == pytest.approx(v["kv_cache_budget_bytes_per_gpu"] - v["kv_bytes_per_gpu"])
    cap = int(v["max_concurrency"])
    assert plan_of("llama-3.1-70b", "h100-sxm", tp=4, concurrency=cap)["kv_fits"] == 1         # exactly full fits
    assert plan_of("llama-3.1-70b", "h100-sxm", tp=4, concurrency=cap + 1)["kv_fits"] == 0
    t = v["ttft_open_seconds"]  # the target is about the TTFT at the target QPS (open arrivals), not a benchmark's
    assert plan_of("llama-3.1-70b", "h100-sxm", tp=4, ttft_target=t)["ttft_ok"] == 1           # at the target: ok
    assert plan_of("llama-3.1-70b", "h100-sxm", tp=4, ttft_target=t * 0.999)["ttft_ok"] == 0


def test_expert_bytes_and_prefill_communication_by_hand():
    v = plan_of("deepseek-v3", "h100-sxm", tp=1, dp_attention=16, ep=16, concurrency=256)
    # 58 MoE layers x 256 experts x 3 x 7168 x 2048, FP8: 1 byte each
    assert v["expert_weights_bytes"] == 58 * 256 * 3 * 7168 * 2048
    # a 1024-token prompt: its EP dispatch + combine over 58 layers (half off the node at 50 GB/s), no PP hop
    per_layer = 2 * 10e-6 + 1024 * (2 * 8 * 7168 * 2) * 0.5 / 50e9
    assert v["prefill_parallel_seconds"] == pytest.approx(58 * per_layer)
    pp = plan_of("llama-3.1-405b", "h100-sxm", tp=8, pp=2)
    # one hop between the two nodes: 10 us + 1024 tokens x 16384 x 2 B at 50 GB/s
    assert pp["prefill_parallel_seconds"] == pytest.approx(10e-6 + 1024 * 16384 * 2 / 50e9)


def test_the_tpot_floor_turns_compute_bound_at_large_batch():
    v = plan_of("llama-3.1-8b", "h100-sxm", tp=1, concurrency=1024, batching=2, input_tokens=128, output_tokens=128)
    b = v["effective_concurrency"]
    # 2 x N_active x B FLOPs at the dense peak, against the bytes at full bandwidth: the larger bounds the step
    flops = 2 * v["active_params"] * b / v["peak_flops"]
    assert v["tpot_floor_seconds"] == pytest.approx(max(flops, v["decode_bytes_per_step_per_gpu"] / v["hbm_bw"]))
    assert flops > v["decode_bytes_per_step_per_gpu"] / v["hbm_bw"]      # compute-bound here


def test_mixtral_prefill_reads_every_expert_once_per_chunk():
    v = plan_of("mixtral-8x7b", "h100-sxm", tp=2, input_tokens=4096)
    per_expert = 3 * 4096 * 14336                                  # one expert's three matrices, parameters
    assert v["expert_weights_bytes"] == 32 * 8 * per_expert * 2     # BF16
    assert v["prefill_chunks"] == 1 and v["prefill_distinct_experts"] == pytest.approx(8)   # 4096 tokens: all 8
    extra = min(32 * 6 * per_expert, v["num_params"] - v["active_params"]) * 2
    assert v["prefill_extra_expert_bytes"] == pytest.approx(extra)
    assert v["prefill_weight_bytes_per_gpu"] == pytest.approx((v["weights_read_bytes"] + extra) / 2)

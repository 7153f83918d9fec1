"""Layouts beyond one node: PP, EP and DP attention, against hand-derived figures.

Every expected number is worked out here from the model card shapes and the catalog's published
figures (NVLink 450 GB/s, 400 Gb/s NDR = 50 GB/s per GPU), not read back from the code.
"""

from __future__ import annotations

import json

import pytest

from inference_ledger.graph import plan, resolve
from inference_ledger.cli import run
from inference_ledger.graph.recommend import cheapest_of_each_kind, recommend
from inference_ledger.graph.sweep import SweepSpec, build_sweep, evaluate_block
from udfs import excel


def plan_of(model, gpu, **numbers):
    return plan.evaluate(resolve.resolve(model, gpu, numbers=numbers).inputs)


def test_deepseek_v3_on_two_h100_nodes_fits_with_tp8_pp2():
    one_node = plan_of("deepseek-v3", "h100-sxm", tp=8)
    assert one_node["verdict"] == 0                       # 671B in FP8 does not fit 8 x 80 GB
    v = plan_of("deepseek-v3", "h100-sxm", tp=8, pp=2)
    assert (v["gpus_per_replica"], v["nodes_per_replica"]) == (16, 2)
    assert v["fits"] == 1
    # dense and expert weights alike: 1/8 of each layer (TP 8), half the layers (PP 2)
    assert v["weights_bytes_per_gpu"] == pytest.approx(v["weights_bytes"] / 16)
    # 58 MoE layers x 256 experts x 3 matrices x 7168 x 2048 (the V3 config)
    assert v["expert_params"] == 58 * 256 * 3 * 7168 * 2048 == 653_908_770_816
    # MLA latent: replicated under TP, split by the two stages' layers
    assert v["kv_shards"] == 2


def test_cli_done_when(capsys):
    with pytest.raises(SystemExit) as e:
        run(["plan", "--model", "deepseek-v3", "--gpu", "h100-sxm", "--tp", "8", "--pp", "2", "--json"])
    assert e.value.code in (0, None)
    doc = json.loads(capsys.readouterr().out)
    assert (doc["tp"], doc["pp"], doc["ep"], doc["gpus_per_replica"], doc["nodes_per_replica"]) == (8, 2, 1, 16, 2)
    assert doc["fits"] is True


def test_llama_405b_bf16_on_h100_needs_two_nodes():
    assert plan_of("llama-3.1-405b", "h100-sxm", tp=8)["verdict"] == 0
    v = plan_of("llama-3.1-405b", "h100-sxm", tp=8, pp=2, batching=2)   # static: a step carries the 16 sequences only
    assert v["fits"] == 1 and v["nodes_per_replica"] == 2
    # 8 KV heads split over TP 8, layers over 2 stages: 1/16 of the KV per GPU
    assert v["kv_bytes_per_gpu"] == pytest.approx(v["kv_bytes_peak"] / 16)
    # hand-off: 1 hop, 10 us + (16 sequences / 2 stages) x 16384 hidden x 2 B over 50 GB/s (two nodes)
    assert v["pp_handoff_seconds_per_step"] == pytest.approx(10e-6 + 8 * 16384 * 2 / 50e9)
    # cost counts all 16 GPUs of the replica
    assert v["cost_per_hour"] == pytest.approx(16 * 3.78)


def test_dp_attention_splits_the_mla_latent_and_shares_the_experts():
    tp8 = plan_of("deepseek-v3", "h200", tp=8, concurrency=64)
    dp8 = plan_of("deepseek-v3", "h200", tp=1, dp_attention=8, ep=8, concurrency=64, batching=2)
    assert tp8["kv_bytes_per_gpu"] == pytest.approx(tp8["kv_bytes_peak"])        # latent on every TP rank
    assert dp8["kv_bytes_per_gpu"] == pytest.approx(dp8["kv_bytes_peak"] / 8)    # each rank its own sequences
    w, e = dp8["weights_bytes"], dp8["expert_weights_bytes"]
    assert dp8["weights_bytes_per_gpu"] == pytest.approx((w - e) + e / 8)       # attention replicated, experts split
    assert dp8["gpus_per_replica"] == 8 and dp8["nodes_per_replica"] == 1
    # EP 8 within one HGX node: NVLink 450 GB/s; 64 sequences over 8 GPUs = 8 tokens each;
    # per MoE layer 2 x 10 us + 8 x (2 x top-8 x 7168 x 2 B) / 450 GB/s, over 58 MoE layers
    per_layer = 2 * 10e-6 + 8 * (2 * 8 * 7168 * 2) / 450e9
    assert dp8["ep_alltoall_seconds_per_step"] == pytest.approx(58 * per_layer)


def test_dp_attention_without_ep_gathers_and_scatters_every_moe_layer():
    """Attention DP with the experts split over all 8 GPUs: each of Qwen3-235B's 94 MoE layers all-gathers the
    ranks' tokens and reduce-scatters them back (4096 wide, BF16), over NVLink 450 GB/s, a 15 us latency each."""
    v = plan_of("qwen3-235b-a22b", "h200", tp=1, dp_attention=8, concurrency=64)
    tokens = v["step_tokens"]
    per_layer = 2 * 15e-6 + 2 * 7 / 8 * tokens * 4096 * 2 / 450e9
    assert v["dp_collective_seconds_per_step"] == pytest.approx(94 * per_layer)
    assert v["dp_collective_fixed_seconds"] == pytest.approx(94 * 2 * 15e-6)
    assert v["parallel_seconds_per_step"] == pytest.approx(94 * per_layer)    # no EP, no PP
    # a lone 1,024-token prompt (the default input) crosses the same collectives with its own tokens
    assert v["prefill_dp_collective_seconds"] == pytest.approx(94 * (2 * 15e-6 + 2 * 7 / 8 * 1024 * 4096 * 2 / 450e9))
    # with EP the all-to-all moves the tokens instead; without DP attention TP's all-reduces do
    assert plan_of("qwen3-235b-a22b", "h200", tp=1, dp_attention=8, ep=8, concurrency=64)[
        "dp_collective_seconds_per_step"] == 0
    assert plan_of("qwen3-235b-a22b", "h200", tp=8, concurrency=64)["dp_collective_seconds_per_step"] == 0


def test_attention_tp_inside_dp_ranks_all_reduces_a_ranks_tokens_once_per_moe_layer():
    """TP 2 inside each of 4 DP-attention ranks (SGLang --tp 8 --dp 4): a rank all-reduces its own tokens, over its 2
    GPUs, after the attention of each of Qwen3-235B's 94 (all MoE) layers; the MoE output goes through the stage's
    gather/scatter instead of a second all-reduce.  2 x 94 - 94 = 94 all-reduces of a rank's quarter of the step's
    tokens, each the measured floor + its bytes x the measured time per byte (4096 wide, BF16)."""
    v = plan.evaluate(resolve.resolve("qwen3-235b-a22b", "h200", engine="sglang",
                                      numbers=dict(tp=2, dp_attention=4, concurrency=64)).inputs)
    assert v["tp_allreduces_per_pass"] == 94
    assert v["rank_step_tokens"] == pytest.approx(v["step_tokens"] / 4)
    one = v["allreduce_kernel_floor_seconds"] + v["rank_step_tokens"] * 4096 * 2 * v["allreduce_kernel_seconds_per_byte"]
    assert v["decode_allreduce_seconds"] == pytest.approx(94 * one)
    # without attention DP the same 8 GPUs all-reduce twice per layer
    assert plan_of("qwen3-235b-a22b", "h200", tp=8, concurrency=64)["tp_allreduces_per_pass"] == 2 * 94


def test_ep_without_attention_dp_has_no_all_to_all():
    """TP 8 with EP 8 and no attention DP: every GPU holds every token after the attention's all-reduce, computes its
    own experts and the layer's TP all-reduce combines them (vLLM: all-to-all kernels only when dp_size > 1 and EP;
    TensorRT-LLM: the MoE all-to-all only under enable_attention_dp), so the step has TP's all-reduces and no
    dispatch/combine; with DP 8 the same experts need the all-to-all (58 MoE layers)."""
    tp = plan_of("deepseek-v3", "h200", tp=8, ep=8, concurrency=64)
    assert tp["ep_alltoall_seconds_per_step"] == 0 and tp["parallel_seconds_per_step"] == 0
    assert tp["prefill_parallel_seconds"] == 0 and tp["parallel_fixed_seconds"] == 0
    assert tp["decode_allreduce_seconds"] > 0
    dp = plan_of("deepseek-v3", "h200", tp=1, dp_attention=8, ep=8, concurrency=64)
    assert dp["parallel_fixed_seconds"] == pytest.approx(58 * 2 * 10e-6)


def test_ep_across_nodes_sends_the_off_node_share_over_the_nic():
    v = plan_of("deepseek-v3", "h100-sxm", tp=1, dp_attention=16, ep=16, concurrency=256, batching=2)
    assert v["nodes_per_replica"] == 2
    # half of each GPU's tokens go to the other node's experts, at 50 GB/s (400 Gb/s NDR)
    assert v["ep_seconds_per_byte"] == pytest.approx(0.5 / 50e9)
    per_layer = 2 * 10e-6 + (256 / 16) * (2 * 8 * 7168 * 2) * 0.5 / 50e9
    assert v["ep_alltoall_seconds_per_step"] == pytest.approx(58 * per_layer)
    # a prompt of 1024 tokens on one rank dispatches all its tokens
    assert v["prefill_parallel_seconds"] == pytest.approx(58 * (2 * 10e-6 + 1024 * (2 * 8 * 7168 * 2) * 0.5 / 50e9))


def test_nvl72_keeps_wide_tp_and_ep_on_nvlink():
    with pytest.raises(resolve.ChoiceError, match="spans more than one 8-GPU node"):
        resolve.resolve("deepseek-v3", "h100-sxm", numbers={"tp": 16})
    v = plan_of("deepseek-v3", "gb200", tp=16)                       # one NVL72 domain
    assert v["nodes_per_replica"] == 1
    w = plan_of("deepseek-v3", "gb200", tp=1, dp_attention=64, ep=64, concurrency=1024)
    assert w["ep_seconds_per_byte"] == pytest.approx(1 / 900e9)      # NVLink 5 inside the rack


def test_pipeline_idle_share():
    # 4 stages, 2 sequences in flight: half the stages wait; 8 sequences fill it
    assert plan_of("llama-3.1-70b", "h100-sxm", tp=2, pp=4, concurrency=2)["pp_bubble_fraction"] == 0.5
    assert plan_of("llama-3.1-70b", "h100-sxm", tp=2, pp=4, concurrency=8)["pp_bubble_fraction"] == 0
    assert plan_of("llama-3.1-70b", "h100-sxm", tp=2, pp=1, concurrency=1)["pp_bubble_fraction"] == 0


@pytest.mark.parametrize("numbers", [dict(tp=8, pp=2), dict(tp=1, dp_attention=16, ep=16), dict(tp=8, pp=2, ep=8)])
def test_tpot_max_batch_keeps_tpot_with_the_parallel_terms(numbers):
    """For a MoE model the closed form counts every expert read: a lower bound on the batch meeting the target."""
    base = dict(numbers, tpot_target=0.08)
    b = plan_of("deepseek-v3", "h100-sxm", **base)["tpot_max_batch"]
    assert b >= 1
    assert plan_of("deepseek-v3", "h100-sxm", concurrency=b, **base)["tpot_seconds"] <= 0.08 * (1 + 1e-9)


def test_tpot_max_batch_inverts_tpot_with_the_parallel_terms_for_a_dense_model():
    base = dict(tp=8, pp=2, tpot_target=0.05, batching=2)        # a batch below the KV cap (464 sequences)
    b = plan_of("llama-3.1-405b", "h100-sxm", **base)["tpot_max_batch"]
    assert 1 <= b < plan_of("llama-3.1-405b", "h100-sxm", **base)["max_concurrency"]
    assert plan_of("llama-3.1-405b", "h100-sxm", concurrency=b, **base)["tpot_seconds"] <= 0.05 * (1 + 1e-9)
    assert plan_of("llama-3.1-405b", "h100-sxm", concurrency=b + 1, **base)["tpot_seconds"] > 0.05


def test_without_a_layout_nothing_changes():
    # the defaults (pp = ep = dp_attention = 1) leave a one-node plan as it was: no parallel terms, TP GPUs
    v = plan_of("llama-3.1-70b", "h100-sxm", tp=4)
    assert (v["gpus_per_replica"], v["nodes_per_replica"], v["parallel_seconds_per_step"],
            v["prefill_parallel_seconds"]) == (4, 1, 0, 0)
    assert v["weights_bytes_per_gpu"] == pytest.approx(v["weights_bytes"] / 4)


def test_excel_plan_takes_the_layout():
    # PLAN(model, gpu, key, tp, concurrency, input, output, weight, kv, engine, pp, ep, dp_attention)
    assert excel.PLAN("deepseek-v3", "h100-sxm", "nodes_per_replica", 8, 16, 1024, 512, None, None, None, 2) == [[2.0]]
    assert excel.PLAN("deepseek-v3", "h100-sxm", "gpus_per_replica", 1, 16, 1024, 512, None, None, None, 1, 16,
                      16) == [[16.0]]


def test_recommend_finds_the_two_node_405b_plan():
    found, _ = recommend(["llama-3.1-405b"], ["h100-sxm"], weight_dtype=["bf16"], max_gpus=64,
                         fixed={"target_qps": 1})
    top = cheapest_of_each_kind(found)[0]
    # 811 GB of BF16 weights: no 8-GPU node holds them, two nodes at TP 8 x PP 2 do
    assert (int(top.values["tp"]), int(top.values["pp"]), int(top.values["gpus_per_replica"])) == (8, 2, 16)
    assert min(int(r.values["gpus_per_replica"]) for r in found) == 16


def test_a_sweep_takes_the_layout_for_every_row():
    table = build_sweep(SweepSpec(model=["deepseek-v3"], gpu=["h100-sxm", "h200"], tp=[8], concurrency=[1, 64],
                                  context=[2048], fixed={"pp": 2}))
    for labels, inputs in table.blocks():
        v = evaluate_block(table, inputs)
        assert set(v["gpus_per_replica"]) == {16} and set(v["nodes_per_replica"]) == {2}

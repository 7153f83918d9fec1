"""The fused-MoE kernel table (data/kernels/moe.csv) and the MoE layers priced from it
(inference_ledger.formulas.kernels).

Expected values are read straight from the shipped CSV with the csv module and derived by hand (the distinct-expert
count E (1 - (1 - k/E)^T) and the three-point line written out here), not through the module's own loader.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from inference_ledger.formulas import kernels, kernels_fused, serving, step_lines
from inference_ledger.graph import plan, resolve

from test_cli_rules import cli

DATA = Path(kernels.__file__).resolve().parents[1] / "data" / "kernels"
US = 1e-6
TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def _rows():
    with (DATA / "moe.csv").open() as fh:
        return list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))


def _row(gpu, engine, dtype, hidden, inter, topk, experts, tp, ep):
    got = [r for r in _rows() if gpu in r["gpu_ids"].split("|") and r["engine"] == engine and r["dtype"] == dtype
           and (int(r["hidden"]), int(r["inter"]), int(r["topk"]), int(r["experts"]), int(r["tp"]), int(r["ep"]))
           == (hidden, inter, topk, experts, tp, ep)]
    assert len(got) == 1, got
    return got[0]


def test_the_moe_table_names_its_source_and_version_and_stays_small():
    head = (DATA / "moe.csv").read_text().split("\n", 2)[:2]
    assert "aiconfigurator-core 0.12.0" in head[0] and "Apache-2.0" in head[0]
    rows = _rows()
    assert rows and all(r["source"].endswith("/moe_perf.parquet") and r["version"] for r in rows)
    assert all(f"/{r['engine']}/{r['version']}/" in r["source"] for r in rows)
    assert (DATA / "moe.csv").stat().st_size < 550_000   # seven NVIDIA GPUs
    assert "moe.csv" in (DATA / "NOTICE").read_text()
    # only the catalog's MoE shapes: DeepSeek-V3 (7,168 x 2,048, top-8 of 256), Qwen3-235B, Mixtral, gpt-oss, Llama 4
    shapes = {(int(r["hidden"]), int(r["inter"]), int(r["topk"]), int(r["experts"])) for r in rows}
    assert {(7168, 2048, 8, 256), (4096, 1536, 8, 128), (4096, 14336, 2, 8), (2880, 2880, 4, 128),
            (5120, 8192, 1, 16), (5120, 8192, 1, 128)} <= shapes


def test_moe_lookup_equals_the_table_at_grid_points_and_interpolates_log_log():
    r = _row("h200", "trtllm", "fp8", 4096, 1536, 8, 128, 8, 1)
    for t in TOKENS:
        s, src = kernels_fused.moe_seconds("h200", "trtllm", "fp8", t, 4096, 1536, 8, 128, 8, 1)
        assert s == pytest.approx(float(r[f"t{t}"]) * US, rel=1e-12)
        assert "h200_sxm/moe/trtllm/" in src and "moe_perf.parquet" in src
    # 362 tokens lie between the grid's 256 and 512: linear in log latency over log tokens
    f = (math.log(362) - math.log(256)) / (math.log(512) - math.log(256))
    lo, hi = float(r["t256"]), float(r["t512"])
    s, _ = kernels_fused.moe_seconds("h200", "trtllm", "fp8", 362, 4096, 1536, 8, 128, 8, 1)
    assert s == pytest.approx(math.exp(math.log(lo) + f * (math.log(hi) - math.log(lo))) * US, rel=1e-9)
    # expert parallelism reads the table's EP rows
    e = _row("h100-sxm", "vllm", "bfloat16", 4096, 1536, 8, 128, 1, 8)
    s, _ = kernels_fused.moe_seconds("h100-sxm", "vllm", "bf16", 64, 4096, 1536, 8, 128, 8, 8)
    assert s == pytest.approx(float(e["t64"]) * US, rel=1e-12)
    with pytest.raises(KeyError):   # GLM-4.5's shape is not measured
        kernels_fused.moe_seconds("h200", "vllm", "bf16", 64, 5120, 1536, 8, 160, 8, 1)


def _distinct(experts, topk, tokens):
    return experts * (1 - (1 - topk / experts) ** tokens)


def test_one_moe_decode_step_by_hand_from_the_table():
    # Qwen3-235B-A22B, FP8, TP 8 on H200 under TensorRT-LLM, 16 static sequences (no prompt chunks): 94 MoE layers of
    # a fused top-8-of-128 MoE, 4,096 x 1,536 per expert, each expert split over 8 GPUs
    r = resolve.resolve("qwen3-235b-a22b", "h200", weight_dtype="fp8", engine="trtllm", batching="static",
                        numbers={"tp": 8, "concurrency": 16, "input_tokens": 1024, "output_tokens": 256})
    v = plan.evaluate(r.inputs)
    assert v["kernel_tables"] == 1 and v["moe_kernel_table"] == 1 and v["step_tokens"] == 16
    row = _row("h200", "trtllm", "fp8", 4096, 1536, 8, 128, 8, 1)
    t = {n: float(row[f"t{n}"]) * US for n in TOKENS}
    # the line L + n (f + r x - L) through the table at T = 1, at the first grid T touching 95% of the experts
    # (E (1 - (1 - 8/128)^T) >= 121.6: T = 64) and at T = 16,384 (n = distinct experts, x = T k / distinct)
    mid = next(n for n in TOKENS if n > 1 and _distinct(128, 8, n) >= 0.95 * 128)
    assert mid == 64
    e = (t[mid] - t[1]) / (_distinct(128, 8, mid) - 8)
    launch = t[1] - 8 * e
    f = launch + e
    x_big = 16384 * 8 / _distinct(128, 8, 16384)
    r_tok = (launch + (t[16384] - launch) / _distinct(128, 8, 16384) - f) / x_big
    assert v["moe_kernel_launch_seconds"] == pytest.approx(launch, rel=1e-9)
    assert v["moe_expert_kernel_floor_seconds"] == pytest.approx(f, rel=1e-9)
    assert v["moe_expert_kernel_seconds_per_token"] == pytest.approx(r_tok, rel=1e-9)
    d = _distinct(128, 8, 16)
    layer = launch + d * (f + r_tok * 16 * 8 / d - launch)
    assert v["decode_mlp_seconds"] == pytest.approx(94 * layer, rel=1e-9)
    # and the line stays near the measured curve at this step's 16 tokens (a grid point it was not fitted on)
    assert layer == pytest.approx(t[16], rel=0.2)


def test_the_moe_line_passes_through_the_table_at_one_token_and_at_its_largest():
    r = resolve.resolve("mixtral-8x7b", "h100-sxm", weight_dtype="fp8", engine="trtllm", batching="static",
                        numbers={"tp": 2, "concurrency": 1, "input_tokens": 1024, "output_tokens": 256})
    v = plan.evaluate(r.inputs)
    row = _row("h100-sxm", "trtllm", "fp8", 4096, 14336, 2, 8, 2, 1)
    # one token: a launch + 2 experts' floors (+ their one token's time per token, well under 1%)
    assert v["decode_mlp_seconds"] / 32 == pytest.approx(float(row["t1"]) * US, rel=0.01)
    # 16,384 tokens touch all 8 experts (x = 4,096 tokens each): the MoE layer's lines meet the table there exactly
    n = step_lines.decode_experts_per_gpu(_distinct(8, 2, 16384), 1, 2)
    x = step_lines.decode_expert_tokens(16384, 2, _distinct(8, 2, 16384))
    extra = step_lines.decode_expert_seconds(x, v["moe_expert_kernel_floor_seconds"],
                                             v["moe_expert_kernel_seconds_per_token"], v["moe_kernel_launch_seconds"],
                                             v["moe_kernel_table"])
    layer = step_lines.decode_mlp_seconds(32, 32, 16384, 0, 0, v["moe_kernel_launch_seconds"], n, extra) / 32
    assert n == pytest.approx(8) and x == pytest.approx(4096)
    assert layer == pytest.approx(float(row["t16384"]) * US, rel=1e-9)


def test_a_moe_shape_without_a_table_keeps_the_gemm_tables():
    # GLM-4.5 (5,120 x 1,536, top-8 of 160) is not in the MoE table: one expert's GEMMs from the GEMM table, as before
    r = resolve.resolve("glm-4.5", "h200", numbers={"tp": 8, "concurrency": 8})
    v = plan.evaluate(r.inputs)
    assert v["kernel_tables"] == 1 and v["moe_kernel_table"] == 0
    # one expert's pair over TP 8 is (384, 5,120) and (5,120, 192): the shapes of GLM's one shared expert, as wide as
    # a routed one; its 3 dense layers' MLP (12,288 wide) is another pair, larger
    assert v["moe_expert_kernel_floor_seconds"] == v["shared_mlp_kernel_floor_seconds"] > 0
    assert v["moe_expert_kernel_seconds_per_token"] == v["shared_mlp_kernel_seconds_per_token"]
    assert v["mlp_kernel_seconds_per_token"] > 4 * v["moe_expert_kernel_seconds_per_token"]
    # a dense model has no MoE figures from the MoE table either
    d = plan.evaluate(resolve.resolve("llama-3.1-8b", "h200", numbers={"tp": 1}).inputs)
    assert d["moe_kernel_table"] == 0


def test_plan_json_names_the_fused_moe_table_as_the_mlp_source():
    code, out, err = cli("plan", "--model", "qwen3-235b-a22b", "--gpu", "h200", "--tp", "8", "--weight-dtype", "fp8",
                         "--engine", "sglang", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["kernel_source"] == "measured tables"
    assert "h200_sxm/moe/sglang/" in d["decode_ops"]["mlp"]["source"]
    assert "h200_sxm/moe/sglang/" in d["prefill_ops"]["mlp"]["source"]


def test_each_further_prompt_of_a_moe_prefill_pays_its_rows_of_the_all_reduces_by_hand():
    """DeepSeek-V3 shapes, one further 1,024-token prompt joining a prefill chunk at TP 8 (kernel tables):
    GEMMs 1.5e-5 s per prompt token x 1,024 = 15.36 ms; attention 61 layers x 2.5e-12 s x 1,024^2 = 0.159908 ms;
    its rows of the two TP all-reduces per layer: 2 x 61 x 1e-11 s/B x 1,024 tokens x 7,168 hidden x 2 B (BF16
    activations) = 122 x 1.4680064e-4 s = 17.909678 ms; total 33.429586 ms.  At TP 1 no all-reduce: 15.519908 ms.
    On the roofline: 2 x 37e9 x 1,024 / 8 / (5e15 x 0.5) = 3.7888 ms (no all-reduce term there).  Element-wise
    traffic of 2 us per token adds 1,024 x 2 us = 2.048 ms on the tables, nothing on the roofline."""
    def extra(tp, kernel_priced=1, elementwise=0.0):
        per_token = step_lines.prefill_allreduce_seconds_per_prompt_token(tp, 2 * 61, 7168, 2, 1e-11)
        return step_lines.prefill_seconds_per_extra_prompt(
            kernel_priced=kernel_priced, prefill_seconds_per_token=1.5e-5 + per_token + elementwise,
            num_layers=61, input_tokens=1024, prefill_attention_kernel_seconds_per_token_squared=2.5e-12,
            active_params=37e9, tp=tp, peak_flops=5e15, prefill_efficiency=0.5)
    assert extra(8) == pytest.approx(33.429586e-3, rel=1e-7)
    assert extra(1) == pytest.approx(15.519908e-3, rel=1e-7)
    assert extra(8, kernel_priced=0) == pytest.approx(3.7888e-3, rel=1e-9)
    assert extra(8, elementwise=2e-6) == pytest.approx(35.477586e-3, rel=1e-7)
    assert extra(8, kernel_priced=0, elementwise=2e-6) == pytest.approx(3.7888e-3, rel=1e-9)


def test_a_further_moe_prompt_adds_the_all_reduce_growth_the_lone_prompt_pays():
    """DeepSeek-R1 FP8 on 8 x MI355X (AMD tables): one 1,024-token prompt is one chunk whose two all-reduces per
    layer cost floor + time per byte x 1,024 x 7,168 x 2 B each; a further prompt adds the per-byte part of them, not
    the floors: its all-reduce share = prefill_allreduce_seconds - 2 x 61 x the floor."""
    r = resolve.resolve("deepseek-v3", "mi355x", weight_dtype="fp8",
                        numbers={"tp": 8, "concurrency": 8, "input_tokens": 1024, "output_tokens": 1024})
    v = plan.evaluate(r.inputs)
    assert v["kernel_tables"] == 1 and v["prefill_chunks"] == 1 and v["moe_layers"] > 0
    gemm_and_attention = v["prefill_seconds_per_prompt_token"] * 1024 \
        + 61 * v["prefill_attention_kernel_seconds_per_token_squared"] * 1024 ** 2 \
        + v["elementwise_seconds_per_token"] * 1024   # its tokens' norm and activation traffic, floors aside
    growth = v["prefill_allreduce_seconds"] - 2 * 61 * v["allreduce_kernel_floor_seconds"]
    assert growth > 0
    assert v["prefill_seconds_per_extra_prompt"] - gemm_and_attention == pytest.approx(growth, rel=1e-9)


def test_a_wave_over_several_chunks_pays_each_further_chunks_floors_by_hand():
    """16 clients of 1,024-token prompts against an 8,192-token chunk budget: the wave is 16,384 tokens in 2 chunks.
    A lone prompt's chunk costs 61 ms, a further prompt 33 ms, so a chunk's fixed part (weight reads, launches,
    all-reduce latencies: what the lone chunk costs beyond one prompt's per-token work) is 61 - 33 = 28 ms and the
    second chunk pays it again: wave = 61 + 15 x 33 + 1 x 28 = 584 ms; the mean request waits 17/32 of it
    (max((n + 1) / 2n, 8,192 / 16,384)) = 310.25 ms.  8 clients (8,192 tokens, one chunk): 61 + 7 x 33 = 292 ms,
    all of it."""
    def wave(n):
        more = step_lines.wave_extra_chunks(n, 1024, 8192, 1)
        fixed = step_lines.prefill_chunk_fixed_seconds(0.061, 0.033, 1)
        return step_lines.wave_ttft_seconds(1, n, 1024, 8192, 0.061,
                                            step_lines.wave_prefill_seconds(n, 0.061, 0.033, more, fixed))
    assert step_lines.wave_extra_chunks(16, 1024, 8192, 1) == 1 and step_lines.wave_extra_chunks(8, 1024, 8192, 1) == 0
    assert step_lines.prefill_chunk_fixed_seconds(0.061, 0.033, 1) == pytest.approx(0.028, rel=1e-12)
    assert wave(16) == pytest.approx(0.31025, rel=1e-12)
    assert wave(8) == pytest.approx(0.292, rel=1e-12)


def test_mxfp4_experts_on_hopper_read_the_w4a16_moe_table_and_the_rest_stays_bf16():
    """gpt-oss' MXFP4 checkpoint quantizes the experts only (its modules_to_not_convert: attention, router,
    embeddings, LM head): a token's quantized weights are 36 MoE layers x 4 experts x 3 matrices x 2,880 x 2,880 =
    3,583,180,800, its experts' and nothing else.  On an H200 (no FP4 tensor cores) the experts are priced from the
    w4a16_mxfp4 fused-MoE table and QKV from the BF16 GEMM table at (N, K) = ((64 + 2 x 8) x 64 / 4, 2,880); a B200
    (FP4 tensor cores, native kernels no table measures) keeps the roofline."""
    v = resolve.resolve("gpt-oss-120b", "h200", engine="vllm", numbers=dict(tp=4)).inputs
    assert v["active_quantized_params"] == 36 * 4 * 3 * 2880 * 2880
    assert kernels.experts_only(v)
    assert not kernels.experts_only(resolve.resolve("qwen3-235b-a22b", "h200", weight_dtype="fp8",
                                                    numbers=dict(tp=4)).inputs)   # attention in FP8 too
    assert v["kernel_tables"] == 1 and v["moe_kernel_table"] == 1
    # (1280, 2880) is between the table's shapes: the BF16 lookup there, and not the FP8 one
    bf16 = kernels.gemm_seconds("h200", "vllm", "bfloat16", 1, 1280, 2880)[0]
    assert v["qkv_kernel_floor_seconds"] == pytest.approx(bf16, rel=1e-9)
    assert bf16 != pytest.approx(kernels.gemm_seconds("h200", "vllm", "fp8", 1, 1280, 2880)[0], rel=1e-3)
    code, out, err = cli("plan", "--model", "gpt-oss-120b", "--gpu", "h200", "--tp", "4", "--json")
    assert code == 0, err
    ops = json.loads(out)["decode_ops"]
    assert "moe/vllm" in ops["mlp"]["source"] and "bfloat16" in ops["qkv"]["source"]
    b200 = resolve.resolve("gpt-oss-120b", "b200", engine="vllm", numbers=dict(tp=2)).inputs
    assert b200["kernel_tables"] == 0



def _gemm(gpu, engine, dtype, n, k, m):
    with (DATA / "gemm.csv").open() as fh:
        row = next(r for r in csv.DictReader(ln for ln in fh if not ln.startswith("#"))
                   if gpu in r["gpu_ids"].split("|") and r["engine"] == engine and r["dtype"] == dtype
                   and int(r["n"]) == n and int(r["k"]) == k)
    return float(row[f"m{m}"]) * US


def test_the_catalog_reads_dense_layer_and_shared_expert_widths_from_the_configs():
    # config.json fields: DeepSeek-V3 / R1 and Kimi-K2 intermediate_size 18,432 (first_k_dense_replace dense layers),
    # n_shared_experts 1 x moe_intermediate_size 2,048; GLM-4.5 12,288 and 1 x 1,536; Llama-4 Maverick
    # intermediate_size_mlp 16,384 (every other layer dense) and a shared expert of intermediate_size 8,192; Scout
    # (every layer MoE) the shared expert only; Mixtral, Qwen3-MoE and gpt-oss neither
    from inference_ledger.catalogs import catalog

    widths = {m.id: (m.dense_intermediate_size, m.shared_intermediate_size) for m in catalog.load_models()}
    assert widths["deepseek-v3"] == widths["deepseek-r1"] == widths["kimi-k2"] == (18432, 2048)
    assert widths["glm-4.5"] == (12288, 1536)
    assert widths["llama-4-maverick"] == (16384, 8192) and widths["llama-4-scout"] == (0, 8192)
    assert widths["mixtral-8x7b"] == widths["qwen3-235b-a22b"] == widths["gpt-oss-120b"] == (0, 0)
    assert widths["llama-3.1-70b"] == (0, 0)


def test_shared_experts_and_wider_dense_layers_are_priced_from_the_gemm_table():
    # Llama-4 Maverick at TP 2 on H200 (BF16, vLLM), one static sequence: its 24 dense layers run gate/up (16,384 x
    # 5,120) and down (5,120 x 8,192) at 16,384 / 2 wide, its 24 MoE layers a shared expert of 8,192 / 2: gate/up
    # (8,192 x 5,120) and down (5,120 x 4,096), all grid points of the GEMM table.  Before, the dense layers read one
    # expert's width and the shared experts were not priced at all (a fifth of Maverick's active weights, three
    # eighths of Scout's).
    def curve(shapes, m):   # KERNEL_GEMM_POWER = 2: (a^2 + (r m)^2)^(1/2), a at M 1, r the slope at M 16,384
        a = sum(_gemm("h200", "vllm", "bfloat16", n, k, 1) for n, k in shapes)
        r = sum(_gemm("h200", "vllm", "bfloat16", n, k, 16384) for n, k in shapes) / 16384
        return math.hypot(a, r * m)

    base = dict(concurrency=1, batching="static", input_tokens=1024, output_tokens=256)
    v = plan.evaluate(resolve.resolve("llama-4-maverick", "h200", weight_dtype="bf16", numbers={"tp": 2, **base}).inputs)
    assert v["kernel_tables"] == 1 and v["step_tokens"] == 1
    dense, shared = [(16384, 5120), (5120, 8192)], [(8192, 5120), (5120, 4096)]
    assert v["mlp_kernel_floor_seconds"] == pytest.approx(sum(_gemm("h200", "vllm", "bfloat16", n, k, 1)
                                                              for n, k in dense), rel=1e-12)
    assert v["decode_shared_mlp_seconds"] == pytest.approx(24 * curve(shared, 1), rel=1e-9)
    routed = v["decode_mlp_seconds"] - 24 * curve(dense, 1)   # the MoE layers' routed experts
    assert 0 < routed < v["decode_mlp_seconds"]
    assert v["decode_kernel_seconds"] > v["decode_mlp_seconds"] + v["decode_shared_mlp_seconds"]
    # Scout (48 MoE layers, no dense one) at TP 1: the shared expert's pair is Maverick's dense pair at TP 2
    s = plan.evaluate(resolve.resolve("llama-4-scout", "h200", weight_dtype="bf16", numbers={"tp": 1, **base}).inputs)
    assert s["decode_shared_mlp_seconds"] == pytest.approx(48 * curve(dense, 1), rel=1e-9)
    assert s["prefill_shared_mlp_seconds"] == pytest.approx(48 * curve(dense, 1024), rel=1e-9)
    # a model without shared experts prices none
    q = plan.evaluate(resolve.resolve("qwen3-235b-a22b", "h200", numbers={"tp": 8, **base}).inputs)
    assert q["decode_shared_mlp_seconds"] == q["shared_mlp_kernel_floor_seconds"] == 0

"""AMD Instinct kernel tables (gemm_amd.csv from ROCm/aiter's GEMM tuner, allreduce_amd.csv from published custom
all-reduce tables) and the MI300X step priced from them (inference_ledger.kernels).

Expected values are aiter's own measurements and the published tables, copied here by hand, or read straight from
the shipped CSVs with the csv module and combined by hand (log-log interpolation written out here).
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from inference_ledger.formulas import kernels, kernels_fused
from inference_ledger.graph import plan, resolve

DATA = Path(kernels.__file__).resolve().parent / "data" / "kernels"
if not DATA.is_dir():   # the module one package deeper than the data folder
    DATA = Path(kernels.__file__).resolve().parents[1] / "data" / "kernels"
US = 1e-6
KB, MB = 1024, 1024 ** 2


def _csv(name):
    with (DATA / name).open() as fh:
        return list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))


def _loglerp(x, x0, x1, y0, y1):
    f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(y0) + f * (math.log(y1) - math.log(y0)))


def test_the_amd_tables_name_their_sources_and_the_notice_has_the_mit_licence():
    head = (DATA / "gemm_amd.csv").read_text().split("\n", 2)[:2]
    assert "ROCm/aiter" in head[0] and "MIT" in head[0]
    assert "e4048607a535ace3a2b51ded31b1c8c2d45c0879" in head[1]
    rows = _csv("gemm_amd.csv")
    assert {r["gpu_ids"] for r in rows} == {"mi300x|mi325x", "mi355x"}
    assert all(r["source"].startswith("ROCm/aiter@e4048607a5 ") and "tuned_gemm" in r["source"] for r in rows)
    assert all(r["source"].startswith("https://github.com/") for r in _csv("allreduce_amd.csv"))
    notice = (DATA / "NOTICE").read_text()
    assert "Advanced Micro Devices" in notice and "MIT License" in notice and "ROCm/aiter" in notice


# ROCm/aiter@e4048607a5 aiter/configs/model_configs/a8w8_blockscale_tuned_gemm_ds_v3.csv, cu_num 304 (MI300X),
# N = 7,168, K = 2,048 (DeepSeek-V3's O projection at TP 8): M -> us, copied from the file
AITER_7168_2048 = {4: 8.1083, 16: 8.3748, 64: 11.0504, 256: 20.2647, 1024: 48.8258, 4096: 144.2936,
                   16384: 501.8788}


@pytest.mark.parametrize("m, us", sorted(AITER_7168_2048.items()))
def test_mi300x_fp8_gemm_lookup_equals_aiters_measurement_at_grid_points(m, us):
    for engine in ("vllm", "sglang"):   # both engines call aiter on ROCm
        t, src = kernels.gemm_seconds("mi300x", engine, "fp8", m, 7168, 2048)
        assert t == pytest.approx(us * US, rel=5e-4)   # the CSV keeps four significant digits
        assert "ROCm/aiter@e4048607a5" in src
    assert kernels.gemm_seconds("mi325x", "vllm", "fp8", m, 7168, 2048)[0] == pytest.approx(us * US, rel=5e-4)


def test_mi300x_gemm_between_and_beyond_the_grid():
    # between M = 256 and 1,024 log-log; aiter measured M = 512 at 31.4507 us: the interpolation is within 1%
    t, _ = kernels.gemm_seconds("mi300x", "vllm", "fp8", 512, 7168, 2048)
    assert t == pytest.approx(_loglerp(512, 256, 1024, 20.2647, 48.8258) * US, rel=5e-4)
    assert t == pytest.approx(31.4507 * US, rel=0.01)
    # below the smallest measured M (aiter starts at M = 2) the floor holds; above the grid, in proportion to M
    assert kernels.gemm_seconds("mi300x", "vllm", "fp8", 1, 7168, 2048)[0] == pytest.approx(8.1083 * US, rel=5e-4)
    assert kernels.gemm_seconds("mi300x", "vllm", "fp8", 32768, 7168, 2048)[0] == \
        pytest.approx(2 * 501.8788 * US, rel=5e-4)


def test_an_untuned_shape_is_read_along_the_weight_size():
    # shapes AMD did not tune are read along N x K: Llama-3.1-70B's QKV at TP 4 (2,560 x 8,192) has the weight size
    # of two tuned shapes (4,096 x 5,120 and 5,120 x 4,096): the geometric mean of their times; Llama-3.1-405B's QKV
    # at TP 8 (2,304 x 16,384) lies between two tuned sizes: log-log between them
    rows = [r for r in _csv("gemm_amd.csv") if r["gpu_ids"] == "mi300x|mi325x" and r["dtype"] == "fp8"]
    sizes = sorted({int(r["n"]) * int(r["k"]) for r in rows})

    def at(size, col):
        vals = [float(r[col]) for r in rows if int(r["n"]) * int(r["k"]) == size]
        return math.exp(sum(map(math.log, vals)) / len(vals)) * US

    for n, k in ((2560, 8192), (2304, 16384)):
        assert not any((int(r["n"]), int(r["k"])) == (n, k) for r in rows)
        w = n * k
        for m in (16, 256, 4096):
            t, _ = kernels.gemm_seconds("mi300x", "vllm", "fp8", m, n, k)
            if w in sizes:
                assert n == 2560 and t == pytest.approx(at(w, f"m{m}"), rel=1e-9)
            else:
                lo, hi = max(s for s in sizes if s < w), min(s for s in sizes if s > w)
                assert n == 2304 and t == pytest.approx(_loglerp(w, lo, hi, at(lo, f"m{m}"), at(hi, f"m{m}")),
                                                        rel=1e-9)


def test_amd_all_reduce_equals_the_published_tables():
    # vllm-project/vllm#19744, TP=4 'baseline' (custom all-reduce on MI300): 1 MB 22.91 us, 8 MB 118.31 us
    assert kernels.allreduce_seconds("mi300x", "vllm", 4, 1 * MB)[0] == pytest.approx(22.91 * US, rel=1e-9)
    assert kernels.allreduce_seconds("mi300x", "sglang", 4, 8 * MB)[0] == pytest.approx(118.31 * US, rel=1e-9)
    # between 1 and 2 MB (36.64 us) log-log
    assert kernels.allreduce_seconds("mi300x", "vllm", 4, 1.5 * MB)[0] == \
        pytest.approx(_loglerp(1.5, 1, 2, 22.91, 36.64) * US, rel=1e-9)
    # ROCm/aiter#801, tp2 'vllm cr': 64 KB 7.66 us; TP 8 on MI300X reads the nearest measured count (4) and says so
    assert kernels.allreduce_seconds("mi300x", "vllm", 2, 64 * KB)[0] == pytest.approx(7.66 * US, rel=1e-9)
    t, src = kernels.allreduce_seconds("mi300x", "vllm", 8, 1 * MB)
    assert t == pytest.approx(22.91 * US, rel=1e-9) and "the 4-GPU curve" in src
    # vllm-project/vllm#39080, TP8 'vllm/us' on MI355X: 384 KB 13.1 us
    assert kernels.allreduce_seconds("mi355x", "vllm", 8, 384 * KB)[0] == pytest.approx(13.1 * US, rel=1e-9)


def test_an_all_reduce_beyond_the_largest_measured_message_adds_bandwidth_time_not_latency():
    """vllm-project/vllm#39080 measures MI355X TP8 up to 1.5 MB (768 KB 16.0 us, 1.5 MB 24.2 us): a 4 MB message
    (a 560-token step of a 3,584-wide model in BF16) pays 24.2 us + its 2.5 MB more at the last step's 8.2 us per
    768 KB, 49.5 us, not the 24.2 x 4 / 1.5 = 61.5 us that scaling the whole 1.5 MB time (its 6 us latency
    included) would give."""
    t, _ = kernels.allreduce_seconds("mi355x", "vllm", 8, 4_000_000)
    assert t == pytest.approx((24.2 + (4_000_000 - 1_572_864) * (24.2 - 16.0) / (1_572_864 - 786_432)) * US, rel=1e-9)
    assert t == pytest.approx(49.507 * US, rel=1e-4)
    # within the measured sizes nothing moves: 1.5 MB is the table's 24.2 us
    assert kernels.allreduce_seconds("mi355x", "vllm", 8, 1_572_864)[0] == pytest.approx(24.2 * US, rel=1e-9)


def test_one_mi300x_decode_step_by_hand_from_the_tables():
    # Llama-3.1-70B, FP8 weights and KV, TP 4 on MI300X under vLLM, one static sequence: 80 layers of QKV
    # (2,560 x 8,192), O (8,192 x 2,048), gate/up (14,336 x 8,192) and down (8,192 x 7,168) from aiter's FP8 tables,
    # attention on the roofline (no AMD attention table), two custom all-reduces per layer (vllm#19744, TP 4)
    r = resolve.resolve("llama-3.1-70b", "mi300x", weight_dtype="fp8", kv_dtype="fp8", engine="vllm",
                        numbers=dict(tp=4, concurrency=1, batching="static", input_tokens=1024, output_tokens=256))
    v = plan.evaluate(r.inputs)
    assert v["kernel_tables"] == 1 and v["step_tokens"] == 1

    def gemm(n, k, m):
        return kernels.gemm_seconds("mi300x", "vllm", "fp8", m, n, k)[0]

    def curve(a, r_, x):  # KERNEL_GEMM_POWER = 2
        return math.sqrt(a * a + (r_ * x) ** 2)

    def op(*shapes):
        a = sum(gemm(n, k, 1) for n, k in shapes)
        return curve(a, sum(gemm(n, k, 16384) for n, k in shapes) / 16384, 1)

    qkv, o, mlp = op((2560, 8192)), op((8192, 2048)), op((14336, 8192), (8192, 7168))
    assert v["decode_qkv_seconds"] == pytest.approx(80 * qkv, rel=1e-9)
    assert v["decode_o_seconds"] == pytest.approx(80 * o, rel=1e-9)
    assert v["decode_mlp_seconds"] == pytest.approx(80 * mlp, rel=1e-9)
    # attention on the roofline: 2 x 8 KV heads x 128 / 4 GPUs x 1 byte per KV token over 5.3 TB/s x the KV-read
    # efficiency, no floor; the mean context of a static batch is S + T / 2
    per_kv = 2 * 8 * 128 / 4 * 1 / (5.3e12 * r.inputs["kv_read_efficiency"])
    assert v["decode_attention_kernel_floor_seconds"] == 0
    assert v["decode_attention_kernel_seconds_per_kv_token"] == pytest.approx(per_kv, rel=1e-12)
    att = per_kv * (1024 + 256 / 2)
    # all-reduce of 8,192 x 2 bytes: the floor is the table at 1 KB (below its 2 KB point: 7.18 us), the time per
    # byte from 1 KB to 64 MB (above the 16 MB point, 230.48 us, the 48 MB more at the 8 -> 16 MB step's time per
    # byte, (230.48 - 118.31) us per 8 MB)
    a_ar = 7.18 * US
    r_ar = ((230.48 + 6 * (230.48 - 118.31)) * US - a_ar) / (64 * MB)
    ar = a_ar + r_ar * 8192 * 2
    lm = v["decode_lm_head_seconds"]
    rest = 80 * r.inputs["kernel_layer_overhead_seconds"] + r.inputs["step_overhead_seconds"]
    # the token through the element-wise kernels: 80 layers x (2 add + RMSNorm passes of 2 x 8,192 read and written
    # + the gated activation's 2 x 28,672 / 4 read and 28,672 / 4 written) x 2 B, over 5.3 TB/s x bw_efficiency
    rest += 80 * (8 * 8192 + 3 * 28672 / 4) * 2 / (5.3e12 * r.inputs["bw_efficiency"])
    expected = 80 * (qkv + o + mlp) + lm + 80 * att + 2 * 80 * ar + rest
    assert v["decode_kernel_seconds"] == pytest.approx(expected, rel=1e-9)
    assert v["tpot_seconds"] == pytest.approx(max(expected, v["tpot_floor_seconds"]), rel=1e-9)
    # the tables' floor per call: a lone token's FP8 GEMMs take 8-40 us each on MI300X, not bytes / bandwidth
    assert 8e-6 < gemm(8192, 2048, 1) < 40e-6


def test_plan_json_on_mi300x_says_measured_tables_and_which_operations_fall_back():
    out = subprocess.run([sys.executable, "-m", "inference_ledger", "plan", "--model", "llama-3.1-70b", "--gpu",
                          "mi300x", "--tp", "4", "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--json"],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    assert d["kernel_source"] == "measured tables"
    ops = d["decode_ops"]
    for name in ("qkv", "o", "mlp", "lm_head"):
        assert "ROCm/aiter@e4048607a5" in ops[name]["source"], name
    assert "vllm-project/vllm/pull/19744" in ops["allreduce"]["source"]
    assert ops["attention"]["source"].startswith("roofline fallback")
    steps = sum(e["seconds"] for op, e in ops.items() if op not in ("parallel", "prefill_stall"))
    assert steps == pytest.approx(d["decode_kernel_seconds"], rel=1e-9)


def test_formats_without_amd_tables_keep_the_roofline():
    # BF16 on MI300X (aiter ships no BF16 tuned GEMMs for 304 CUs at this commit) and MXFP4 off MI355X (aiter's a4w4
    # GEMMs are tuned for 256 CUs only; NVIDIA's tables hold no MXFP4 GEMM) price the whole step on the roofline
    for model, gpu, wd in (("llama-3.1-70b", "mi300x", "bf16"), ("gpt-oss-120b", "mi300x", None),
                           ("gpt-oss-120b", "b200", None)):
        r = resolve.resolve(model, gpu, weight_dtype=wd, numbers=dict(tp=8))
        assert plan.evaluate(r.inputs)["kernel_tables"] == 0, (model, gpu)
    # MI355X has BF16 tables: Llama-3.1-70B BF16 is priced per operation there
    r = resolve.resolve("llama-3.1-70b", "mi355x", weight_dtype="bf16", numbers=dict(tp=2))
    assert plan.evaluate(r.inputs)["kernel_tables"] == 1


# ROCm/aiter@e4048607a5 aiter/configs/model_configs/qwen3_235b_bf16_tuned_fmoe.csv, cu_num 304 (MI300X), Qwen3-235B's
# experts (hidden 4,096, 128 experts, top 8) at inter_dim 192 = 1,536 / MoE TP 8: tokens -> us, copied from the file
AITER_QWEN3_TP8 = {1: 32.7102, 2: 43.8746, 8: 82.8639, 32: 154.6934, 128: 181.8923}
# ROCm/aiter@e4048607a5 aiter/configs/model_configs/dsv3_fp4_tuned_fmoe.csv, cu_num 256 (MI355X), DeepSeek-V3/R1's
# experts (hidden 7,168, 256 experts, top 8) at inter_dim 256 = 2,048 / MoE TP 8, MXFP4 weights and activations
# (q_type per_1x32): tokens -> us, copied from the file
AITER_DSV3_FP4_TP8 = {16: 65.4857, 256: 145.6725, 1024: 213.7861, 8192: 789.0816}
_QWEN3 = ("mi300x", "bf16", (4096, 1536, 8, 128), "qwen3_235b_bf16_tuned_fmoe.csv")
_DSV3 = ("mi355x", "mxfp4", (7168, 2048, 8, 256), "dsv3_fp4_tuned_fmoe.csv")


@pytest.mark.parametrize("case, tokens, us", [(_QWEN3, t, us) for t, us in sorted(AITER_QWEN3_TP8.items())]
                         + [(_DSV3, t, us) for t, us in sorted(AITER_DSV3_FP4_TP8.items())])
def test_amd_fused_moe_lookup_equals_aiters_measurement(case, tokens, us):
    gpu, dtype, shape, name = case
    t, src = kernels_fused.moe_seconds(gpu, "sglang", dtype, tokens, *shape, 8, 1)
    assert t == pytest.approx(us * US, rel=5e-4)
    assert name in src


def test_a_moe_shape_without_an_amd_table_is_scaled_from_the_nearest_measured_one():
    # DeepSeek-R1 FP8 at TP 8 on MI300X: aiter has no fused-MoE table of its shape at TP 8; the nearest measured
    # expert slice is Qwen3-235B's BF16 at TP 8 (3 x 4,096 x 192 x 2 bytes); DeepSeek's is 3 x 7,168 x 256 x 1 byte
    ref = kernels_fused.moe_table("mi300x", "vllm", "bf16", 4096, 1536, 8, 128, 8, 1)
    launch, f, r = kernels_fused.moe_expert_figures(ref, 8, 128, 1, 8)
    ratio = (3 * 7168 * 2048 / 8 * 1) / (3 * 4096 * 1536 / 8 * 2)
    got = kernels_fused.moe_scaled_figures("mi300x", "fp8", 7168, 2048, 8, 256, 8, 1, 8)
    assert got[0] == pytest.approx(launch, rel=1e-12)
    assert got[1] - got[0] == pytest.approx((f - launch) * ratio, rel=1e-12)
    assert got[2] == pytest.approx(r * ratio, rel=1e-12)
    assert "scaled x1.17" in got[3]
    # each touched expert slice beyond the launch streams at a few TB/s (the fused kernel), not a GEMM call's floor
    assert 0.5e-6 < got[1] - got[0] < 3e-6
    # under expert parallelism a GPU's experts are whole: the slice to scale to is all of DeepSeek's expert
    # (3 x 7,168 x 2,048 x 1 byte), nearest to Qwen3's BF16 slice at MoE TP 4 (3 x 4,096 x 384 x 2 bytes); it was
    # priced from the GEMM table, each expert a GEMM call's floor
    ep = kernels_fused.moe_scaled_figures("mi300x", "fp8", 7168, 2048, 8, 256, 1, 8, 8)
    ref4 = kernels_fused.moe_table("mi300x", "vllm", "bf16", 4096, 1536, 8, 128, 4, 1)
    launch4, f4, r4 = kernels_fused.moe_expert_figures(ref4, 8, 128, 1, 4)
    ratio4 = (3 * 7168 * 2048 * 1) / (3 * 4096 * 1536 / 4 * 2)
    assert ep[0] == pytest.approx(launch4, rel=1e-12)
    assert ep[1] - ep[0] == pytest.approx((f4 - launch4) * ratio4, rel=1e-12)
    assert ep[2] == pytest.approx(r4 * ratio4, rel=1e-12)
    assert "at MoE TP 4, scaled x4.67" in ep[3]


def test_mla_on_amd_prices_its_projections_from_the_gemm_table_and_the_latent_on_the_roofline():
    # DeepSeek-R1 FP8 at TP 8 on MI300X (no MLA module table for AMD): QKV = the fused q / KV down-projection
    # (1,536 + 576 = 2,112 x 7,168), the q up-projection (16 heads x 192 = 3,072 x 1,536) and the latent's
    # up-projection (16 x 256 = 4,096 x 512); O = 7,168 x 16 x 128; every one a shape aiter tuned for DeepSeek-V3
    r = resolve.resolve("deepseek-r1", "mi300x", weight_dtype="fp8", kv_dtype="fp8", numbers=dict(tp=8))
    v = r.inputs
    assert v["kernel_tables"] == 1

    def gemm(n, k, m):
        return kernels.gemm_seconds("mi300x", "vllm", "fp8", m, n, k)[0]

    qkv = ((2112, 7168), (3072, 1536), (4096, 512))
    assert v["qkv_kernel_floor_seconds"] == pytest.approx(sum(gemm(n, k, 1) for n, k in qkv), rel=1e-12)
    assert v["qkv_kernel_seconds_per_token"] == pytest.approx(sum(gemm(n, k, 16384) for n, k in qkv) / 16384,
                                                              rel=1e-12)
    assert v["o_kernel_floor_seconds"] == pytest.approx(gemm(7168, 2048, 1), rel=1e-12)
    # the latent (576 elements x 1 byte per token per layer) is read whole on every GPU
    assert v["decode_attention_kernel_seconds_per_kv_token"] == pytest.approx(
        576 * 1 / (5.3e12 * v["kv_read_efficiency"]), rel=1e-12)
    out = subprocess.run([sys.executable, "-m", "inference_ledger", "plan", "--model", "deepseek-r1", "--gpu",
                          "mi300x", "--tp", "8", "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--json"],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    assert d["kernel_source"] == "measured tables"
    assert "scaled" in d["decode_ops"]["mlp"]["source"] and "tuned_fmoe" in d["decode_ops"]["mlp"]["source"]


def test_mi355x_mxfp4_gemm_is_aiters_a4w4_measurement_and_log_log_between():
    # aiter/configs/a4w4_blockscale_tuned_gemm.csv, gfx950 cu_num 256, N 7,168 x K 2,048 (DeepSeek's O projection
    # width): M 256 -> 7.835 us, M 1,024 -> 19.98 us (the table's grid cells); M 512 is log-log between them:
    # exp((ln 7.835 + ln 19.98) / 2) = sqrt(7.835 x 19.98) = 12.512 us
    t, src = kernels.gemm_seconds("mi355x", "sglang", "mxfp4", 1024, 7168, 2048)
    assert t == pytest.approx(19.98 * US, rel=1e-3)
    assert "a4w4_blockscale_tuned_gemm.csv" in src or "tuned shapes" in src
    t, _ = kernels.gemm_seconds("mi355x", "sglang", "mxfp4", 512, 7168, 2048)
    assert t == pytest.approx(12.512 * US, rel=1e-3)


def test_deepseek_r1_mxfp4_on_mi355x_is_priced_from_the_measured_tables():
    r = resolve.resolve("deepseek-r1", "mi355x", weight_dtype="mxfp4", engine="sglang", numbers=dict(tp=8))
    v = plan.evaluate(r.inputs)
    assert v["kernel_tables"] == 1 and v["moe_kernel_table"] == 1
    # a batch-1 decode step reads every layer's weights at least once: never below the HBM roofline floor
    assert v["decode_kernel_seconds"] >= v["tpot_floor_seconds"]

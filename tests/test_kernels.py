"""The measured kernel tables and the step priced per operation from them (inference_ledger.formulas.kernels).

Expected values are read straight from the shipped CSVs with the csv module and combined by hand (log-log
interpolation written out here), not through the module's own loader.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from inference_ledger.catalogs import catalog
from inference_ledger.formulas import kernels
from inference_ledger.graph import plan, resolve
from inference_ledger.workbook import kernels_sheet

from test_cli_rules import cli

DATA = Path(kernels.__file__).resolve().parents[1] / "data" / "kernels"
US = 1e-6


def _csv(name):
    with (DATA / name).open() as fh:
        return list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))


def _gemm_row(gpu, engine, dtype, n, k):
    return next(r for r in _csv("gemm.csv") if gpu in r["gpu_ids"].split("|") and r["engine"] == engine
                and r["dtype"] == dtype and int(r["n"]) == n and int(r["k"]) == k)


def _loglerp(x, x0, x1, y0, y1):
    f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(y0) + f * (math.log(y1) - math.log(y0)))


def test_every_table_names_its_source_and_the_notice_exists():
    for name in ("gemm.csv", "decode_attention.csv", "prefill_attention.csv", "allreduce.csv"):
        head = (DATA / name).read_text().split("\n", 2)[:2]
        assert "aiconfigurator-core 0.12.0" in head[0] and "Apache-2.0" in head[0], name
        assert "distilled 20" in head[1], name
        assert all(r["source"].endswith(".parquet") for r in _csv(name)), name
    notice = (DATA / "NOTICE").read_text()
    assert "Apache License, Version 2.0" in notice and "NVIDIA" in notice
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 6e6  # a few MB at most (seven NVIDIA GPUs, four AMD)


def test_gemm_lookup_equals_the_table_at_grid_points():
    r = _gemm_row("h100-sxm", "vllm", "bfloat16", 2560, 8192)
    for m in (1, 16, 256, 4096, 16384):
        t, src = kernels.gemm_seconds("h100-sxm", "vllm", "bfloat16", m, 2560, 8192)
        assert t == pytest.approx(float(r[f"m{m}"]) * US, rel=1e-12)
        assert "h100_sxm/gemm/vllm" in src


def test_gemm_interpolates_log_log_between_grid_points_and_extrapolates_in_proportion():
    r = _gemm_row("h200", "trtllm", "fp8", 8192, 7168)
    # M = 128 lies halfway (in log) between the grid's 64 and 256: the geometric mean
    t, _ = kernels.gemm_seconds("h200", "trtllm", "fp8", 128, 8192, 7168)
    assert t == pytest.approx(math.sqrt(float(r["m64"]) * float(r["m256"])) * US, rel=1e-9)
    # N = 14,336 between the grid's 12,288 and 16,384 at a grid M
    lo, hi = _gemm_row("h200", "trtllm", "fp8", 12288, 7168), _gemm_row("h200", "trtllm", "fp8", 16384, 7168)
    t, _ = kernels.gemm_seconds("h200", "trtllm", "fp8", 1024, 14336, 7168)
    assert t == pytest.approx(_loglerp(14336, 12288, 16384, float(lo["m1024"]), float(hi["m1024"])) * US, rel=1e-9)
    # above the grid the time grows in proportion (the largest measured throughput); below it the floor holds
    t, _ = kernels.gemm_seconds("h200", "trtllm", "fp8", 32768, 8192, 7168)
    assert t == pytest.approx(2 * float(r["m16384"]) * US, rel=1e-9)
    small = _gemm_row("h200", "trtllm", "fp8", 512, 512)
    t, _ = kernels.gemm_seconds("h200", "trtllm", "fp8", 1, 100, 200)
    assert t == pytest.approx(float(small["m1"]) * US, rel=1e-9)


def test_attention_and_allreduce_lookups_equal_the_tables():
    d = next(r for r in _csv("decode_attention.csv") if "h100-sxm" in r["gpu_ids"] and r["engine"] == "vllm"
             and r["kv_dtype"] == "bfloat16" and r["heads"] == "16" and r["kv_heads"] == "2"
             and r["head_dim"] == "128" and r["batch"] == "64")
    t, _ = kernels.decode_attention_seconds("h100-sxm", "vllm", "bf16", 64, 4096, 16, 2, 128)
    assert t == pytest.approx(float(d["ctx4096"]) * US, rel=1e-12)
    p = next(r for r in _csv("prefill_attention.csv") if "h200" in r["gpu_ids"] and r["engine"] == "sglang"
             and r["kv_dtype"] == "bfloat16" and r["heads"] == "32" and r["kv_heads"] == "8" and r["head_dim"] == "128")
    t, _ = kernels.prefill_attention_seconds("h200", "sglang", "bf16", 4096, 32, 8, 128)
    assert t == pytest.approx(float(p["isl4096"]) * US, rel=1e-12)
    rows = [r for r in _csv("allreduce.csv") if "h100-sxm" in r["gpu_ids"] and r["gpus"] == "4"
            and r["message_bytes"] == "1048576" and r["library"] in ("nccl", "vllm")]
    t, _ = kernels.allreduce_seconds("h100-sxm", "vllm", 4, 1048576)
    assert t == pytest.approx(min(float(r["latency_us"]) for r in rows) * US, rel=1e-12)


def test_allreduce_messages_are_bytes_at_the_bus_bandwidth_nvlink_carries():
    """The package counts an all-reduce's message in 2-byte elements; the table holds bytes.  Read at its largest
    message, every 4- and 8-GPU curve moves a ring all-reduce's 2 (n-1)/n of it per GPU at 55-110% of the NVLink
    bandwidth per direction (gpus.csv interconnect_bw: 300 GB/s A100, 450 GB/s H100/H200, 900 GB/s B200/GB200;
    NVLink-SHARP reduces in the switch and reaches about it at 8 GPUs).  Elements read as bytes would halve all of
    them (H200, 8 GPUs: 234 GB/s).  The PCIe GPUs' curves stay under their PCIe bandwidth per direction."""
    largest = {}
    for r in _csv("allreduce.csv"):
        key = (r["gpu_ids"], r["library"], int(r["gpus"]))
        if key[2] >= 4 and float(r["message_bytes"]) > largest.get(key, (0, 0))[0]:
            largest[key] = (float(r["message_bytes"]), float(r["latency_us"]) * US)
    assert len(largest) >= 20
    for (ids, lib, n), (size, t) in largest.items():
        if ids in ("l40s", "rtx-pro-6000"):   # PCIe GPUs: their servers' links are another story (below)
            continue
        bus = 2 * (n - 1) / n * size / t
        link = catalog.get_gpu(ids.split("|")[0]).interconnect_bw
        assert 0.55 <= bus / link <= 1.1, (ids, lib, n, bus / 1e9)
    for (ids, lib, n), (size, t) in largest.items():
        if ids in ("l40s", "rtx-pro-6000"):
            assert 2 * (n - 1) / n * size / t < catalog.get_gpu(ids).interconnect_bw, (ids, lib, n)


def test_a_slower_link_than_the_tables_system_sets_the_allreduce_time():
    """The all-reduce tables were measured on NVLink systems; a plan on a slower link (--interconnect-bw: PCIe Gen4
    x16 moves 32 GB/s per direction) pays at least a ring's 2 (TP-1)/TP of each message per GPU over it.  Llama-3.1-70B
    TP 4, one static sequence: 160 all-reduces of 8,192 x 2 B a step, each 1.5 x 16,384 B / 32 GB/s = 768 ns beyond
    the measured floor; on the catalog's 450 GB/s NVLink the measured curve (slower than that ring) stays."""
    from inference_ledger.io import report

    base = dict(tp=4, concurrency=1, batching="static", input_tokens=1024, output_tokens=256)
    nvlink = plan.evaluate(_resolved("llama-3.1-70b", "h100-sxm", **base).inputs)
    pcie = plan.evaluate(_resolved("llama-3.1-70b", "h100-sxm", interconnect_bw=32e9, **base).inputs)
    floor = nvlink["allreduce_kernel_floor_seconds"]
    assert floor > 0 and pcie["allreduce_kernel_floor_seconds"] == floor
    table = floor + 16384 * nvlink["allreduce_kernel_seconds_per_byte"]
    assert nvlink["decode_allreduce_seconds"] == pytest.approx(160 * table)
    assert pcie["decode_allreduce_seconds"] == pytest.approx(160 * (floor + 768e-9))
    assert pcie["tpot_seconds"] > nvlink["tpot_seconds"]
    ops = report.step_ops(pcie, model="llama-3.1-70b", gpu="h100-sxm", engine="vllm")
    assert "ring bound of the interconnect bandwidth" in ops["decode_ops"]["allreduce"]["source"]
    ops = report.step_ops(nvlink, model="llama-3.1-70b", gpu="h100-sxm", engine="vllm")
    assert "ring bound" not in ops["decode_ops"]["allreduce"]["source"]


def test_an_engine_without_a_custom_allreduce_pays_nccls_floor():
    """LMDeploy 0.1's TurboMind creates its model with ``enable_custom_all_reduce`` 0 (engines.csv lmdeploy-0.1), so
    every TP all-reduce is NCCL's: Llama-2-70B at TP 4 on an A100 reads the floor off the NCCL 4-GPU curve (its 1 KiB
    row, 13.86 us), where vLLM's plan reads its custom all-reduce's (5.22 us); the rest of the step is the same."""
    rows = {r["library"]: r for r in _csv("allreduce.csv") if "a100-80gb" in r["gpu_ids"].split("|")
            and r["gpus"] == "4" and r["message_bytes"] == "1024"}
    base = dict(tp=4, concurrency=16, batching="static", input_tokens=128, output_tokens=128)
    lm = plan.evaluate(_resolved("llama-2-70b", "a100-80gb", engine="lmdeploy-0.1", **base).inputs)
    vl = plan.evaluate(_resolved("llama-2-70b", "a100-80gb", engine="vllm", **base).inputs)
    assert lm["allreduce_kernel_floor_seconds"] == pytest.approx(float(rows["nccl"]["latency_us"]) * US, rel=1e-12)
    assert vl["allreduce_kernel_floor_seconds"] == pytest.approx(float(rows["vllm"]["latency_us"]) * US, rel=1e-12)
    assert lm["qkv_kernel_floor_seconds"] == vl["qkv_kernel_floor_seconds"]
    assert lm["decode_allreduce_seconds"] > vl["decode_allreduce_seconds"]
    # the workbook's Kernels row of that choice, which the Plan looks up, holds the same NCCL floor
    r = _resolved("llama-2-70b", "a100-80gb", engine="lmdeploy-0.1", **base)
    row = kernels_sheet._row(catalog.get_model("llama-2-70b"), "a100-80gb", 4.0, 1.0, r.weight_dtype, r.kv_dtype,
                             "lmdeploy-0.1", r.inputs)
    assert row.allreduce_kernel_floor_seconds == lm["allreduce_kernel_floor_seconds"]


def _resolved(model, gpu, engine="vllm", **numbers):
    return resolve.resolve(model, gpu, engine=engine, numbers=numbers)


def test_one_decode_step_by_hand_from_the_tables():
    # Llama-3.1-70B, BF16, TP 4 on H100 under vLLM, one static sequence (no prompt chunks): 80 layers of
    # QKV (2,560 x 8,192), O (8,192 x 2,048), gate/up (14,336 x 8,192: between the grid's 12,288 and 16,384) and
    # down (8,192 x 7,168), the LM head once, attention of 16 heads / 2 KV heads per GPU, two all-reduces per layer
    r = _resolved("llama-3.1-70b", "h100-sxm", tp=4, concurrency=1, batching="static", input_tokens=1024,
                  output_tokens=256)
    v = plan.evaluate(r.inputs)
    assert v["kernel_tables"] == 1 and v["step_tokens"] == 1

    def gemm(n, k, m):
        row = _gemm_row("h100-sxm", "vllm", "bfloat16", n, k)
        return float(row[f"m{m}"]) * US

    def gate_up(m):
        return _loglerp(14336, 12288, 16384, gemm(12288, 8192, m), gemm(16384, 8192, m))

    def curve(a, r_, x):  # KERNEL_GEMM_POWER = 2
        return math.sqrt(a * a + (r_ * x) ** 2)

    qkv = curve(gemm(2560, 8192, 1), gemm(2560, 8192, 16384) / 16384, 1)
    o = curve(gemm(8192, 2048, 1), gemm(8192, 2048, 16384) / 16384, 1)
    mlp = curve(gate_up(1) + gemm(8192, 7168, 1), (gate_up(16384) + gemm(8192, 7168, 16384)) / 16384, 1)
    assert v["qkv_kernel_floor_seconds"] == pytest.approx(gemm(2560, 8192, 1), rel=1e-12)
    assert v["decode_qkv_seconds"] == pytest.approx(80 * qkv, rel=1e-9)
    assert v["decode_o_seconds"] == pytest.approx(80 * o, rel=1e-9)
    assert v["decode_mlp_seconds"] == pytest.approx(80 * mlp, rel=1e-9)
    # attention and all-reduce: measured floor + time per unit (inputs read from their tables), at this step's sizes
    ctx = 1024 + 256 / 2
    att = v["decode_attention_kernel_floor_seconds"] + v["decode_attention_kernel_seconds_per_kv_token"] * ctx
    ar = v["allreduce_kernel_floor_seconds"] + v["allreduce_kernel_seconds_per_byte"] * 8192 * 2
    rest = 80 * 6e-6 + 0.2e-3  # element-wise floors per layer (efficiencies.csv) + per-step overhead
    # + the step's token through the element-wise kernels (aiconfigurator-core's add_norm x 2 and act_gate): per layer
    # 2 x (2 x 8,192 read + 2 x 8,192 written) + (2 x 28,672 / 4 read + 28,672 / 4 written) BF16 elements, at
    # 3.35 TB/s x 0.8: 80 x (65,536 + 21,504) x 2 B = 13,926,400 B = 5.20 us
    assert v["elementwise_bytes_per_token"] == 80 * (8 * 8192 + 3 * 28672 / 4) * 2 == 13_926_400
    rest += 13_926_400 / (3.35e12 * 0.8)
    lm = v["decode_lm_head_seconds"]
    expected = 80 * (qkv + o + mlp) + lm + 80 * att + 2 * 80 * ar + rest
    assert v["decode_kernel_seconds"] == pytest.approx(expected, rel=1e-9)
    assert v["tpot_seconds"] == pytest.approx(max(expected, v["tpot_floor_seconds"]), rel=1e-9)
    # the LM head: 128,256 / 4 = 32,064 columns, between the grid's 16,384 and 51,200
    lm_a = _loglerp(32064, 16384, 51200, gemm(16384, 8192, 1), gemm(51200, 8192, 1))
    lm_r = _loglerp(32064, 16384, 51200, gemm(16384, 8192, 16384), gemm(51200, 8192, 16384)) / 16384
    assert lm == pytest.approx(curve(lm_a, lm_r, 1), rel=1e-9)


def test_a_prefill_pays_the_element_wise_traffic_of_every_prompt_token():
    # Llama-3.1-8B (32 layers, hidden 4,096, intermediate 14,336) at TP 1 on H100: each token moves 32 x (8 x 4,096 +
    # 3 x 14,336) BF16 elements through the norms, residual adds and gated activation, at 3.35 TB/s x 0.8
    r = _resolved("llama-3.1-8b", "h100-sxm", tp=1, concurrency=1, batching="static", input_tokens=2048,
                  output_tokens=16)
    v = plan.evaluate(r.inputs)
    per_token = 32 * (8 * 4096 + 3 * 14336) * 2 / (3.35e12 * 0.8)
    assert v["elementwise_seconds_per_token"] == pytest.approx(per_token, rel=1e-12)
    lm = math.hypot(v["lm_head_kernel_floor_seconds"], v["lm_head_kernel_seconds_per_token"])   # one row: 1 token
    fixed = 32 * 6e-6 + 0.2e-3
    assert v["prefill_chunks"] == 1
    assert v["prefill_overhead_seconds"] == pytest.approx(lm + fixed + 2048 * per_token, rel=1e-9)
    # a decode step of its one sequence pays one token's
    assert v["decode_elementwise_seconds"] == pytest.approx(fixed + per_token, rel=1e-9)


def test_the_step_never_goes_below_the_roofline_floor():
    r = _resolved("llama-3.1-8b", "h100-sxm", tp=1, concurrency=32)
    zero = {n: 0.0 for op in kernels.OPS for n in kernels.op_input_names(op)}
    v = plan.evaluate(r.inputs | zero | {"kernel_layer_overhead_seconds": 0, "step_overhead_seconds": 0,
                                         "moe_kernel_launch_seconds": 0})
    # what is left is the element-wise traffic of the step's tokens (HBM bandwidth, not a table), below the floor
    assert v["decode_kernel_seconds"] == v["step_elementwise_seconds"] < v["tpot_floor_seconds"]
    assert v["tpot_seconds"] == pytest.approx(v["tpot_floor_seconds"] + v["parallel_seconds_per_step"]
                                              + v["prefill_stall_seconds"], rel=1e-12)


def test_whole_prompt_prefill_stalls_the_step_as_sarathi_serve_says():
    # continuous batching, 32 sequences, 2,048-token prompts and 256 outputs on H100 (vLLM tables)
    base = _resolved("llama-3.1-8b", "h100-sxm", tp=1, concurrency=32, input_tokens=2048, output_tokens=256).inputs
    chunked = plan.evaluate(base | {"chunked_prefill": 1})
    whole = plan.evaluate(base | {"chunked_prefill": 0})
    b, s, t = chunked["effective_concurrency"], 2048, 256
    assert b == 32
    # chunked: the other sequences' prompts ride in the steps, (B - 1) S / T tokens each; no stall
    assert chunked["step_tokens"] == pytest.approx(b + (b - 1) * s / t)
    assert chunked["prefill_stall_seconds"] == 0
    # whole prompts: the step carries the decode tokens only, and each of the B - 1 others' prefills stalls it once
    # per request: TPOT = step(B) + (B - 1) x prefill(S) / (T - 1)
    assert whole["step_tokens"] == b
    assert whole["tpot_seconds"] == pytest.approx(
        whole["decode_kernel_seconds"] + (b - 1) * whole["ttft_service_seconds"] / (t - 1), rel=1e-12)
    assert whole["tpot_seconds"] > chunked["tpot_seconds"]
    # static batching stalls nothing
    static = plan.evaluate(base | {"chunked_prefill": 0, "batching": 2})
    assert static["prefill_stall_seconds"] == 0


def test_dp_attention_ranks_prefill_their_own_prompts_in_the_same_stall():
    """Under DP attention each rank prefills its own prompt in the iteration the others prefill theirs (one prompt
    per rank per prefill time, as a disaggregated prefill pool counts them): a cycle holds B / DP prefill iterations,
    one of them a sequence's own, so its step stalls B / DP - 1 times: a DeepSeek-V3 replica of 8 ranks on H200
    running whole prompts, by hand from its own lines."""
    kw = dict(tp=1, dp_attention=8, ep=8, concurrency=256, input_tokens=1024, output_tokens=512)
    v = plan.evaluate(_resolved("deepseek-v3", "h200", "trtllm", **kw).inputs)
    b, dp, t = v["effective_concurrency"], 8, 512
    assert v["chunked_prefill"] == 0 and v["dp_attention"] == dp and b > dp
    assert v["prefill_stall_seconds"] == pytest.approx((b / dp - 1) * v["ttft_service_seconds"] / (t - 1), rel=1e-12)
    one = plan.evaluate(_resolved("deepseek-v3", "h200", "trtllm", **kw).inputs | {"dp_attention": 1})
    assert one["prefill_stall_seconds"] == pytest.approx(
        (one["effective_concurrency"] - 1) * one["ttft_service_seconds"] / (t - 1), rel=1e-12)


def test_each_dp_attention_rank_prefills_its_own_share_of_a_wave():
    """A benchmark's first wave under DP attention: each of the 8 ranks prefills its own B / 8 prompts in its own
    token budget, in parallel with the others (TensorRT-LLM enable_attention_dp, SGLang --enable-dp-attention: a
    scheduler per rank).  By hand from the plan's own lines: the wave is one prompt's service time + (B/8 - 1)
    further prompts + the further chunks of B/8 x S tokens at max_num_batched_tokens each."""
    import math

    kw = dict(tp=1, dp_attention=8, ep=8, concurrency=2048, input_tokens=1000, output_tokens=1000)
    v = plan.evaluate(_resolved("qwen3-235b-a22b", "h200", "trtllm", **kw).inputs)
    b, s = v["effective_concurrency"], 1000
    n = b / 8
    assert v["rank_concurrency"] == pytest.approx(n) and n > 1
    chunks = max(math.ceil(n * s / v["max_num_batched_tokens"]) - v["prefill_chunks"], 0)
    assert v["wave_extra_chunks"] == chunks
    assert v["wave_prefill_seconds"] == pytest.approx(
        v["ttft_service_seconds"] + (n - 1) * v["prefill_seconds_per_extra_prompt"]
        + chunks * v["prefill_chunk_fixed_seconds"], rel=1e-12)
    assert v["lockstep_prompts"] == pytest.approx(min(n, max(1, v["prefill_room_tokens"] / s)))
    # the same replica without DP attention would prefill all B prompts in one scheduler's budget: 8x the wave
    whole = plan.evaluate(_resolved("qwen3-235b-a22b", "h200", "trtllm", **kw).inputs | {"dp_attention": 1})
    assert whole["rank_concurrency"] == whole["effective_concurrency"]


def test_engines_and_their_versions_change_the_answer():
    kw = dict(tp=4, concurrency=64, input_tokens=1024, output_tokens=512)
    tpot = {e: plan.evaluate(_resolved("llama-3.1-70b", "h100-sxm", e, **kw).inputs)["tpot_seconds"]
            for e in ("vllm", "sglang", "trtllm", "vllm-v0")}
    assert len({round(x, 9) for x in tpot.values()}) == 4, tpot
    # TensorRT-LLM runs whole prompts (its executor leaves chunked context off): the stalls make its TPOT longest
    assert tpot["trtllm"] > max(tpot["vllm"], tpot["sglang"])


def test_a_gpu_without_tables_falls_back_to_the_roofline_and_says_so():
    r = _resolved("llama-3.1-70b", "mi300x", tp=4, concurrency=16)
    v = plan.evaluate(r.inputs)
    assert v["kernel_tables"] == 0
    assert v["tpot_seconds"] == pytest.approx(v["step_linear_seconds"] + v["step_kv_seconds"]
                                              + v["allreduce_seconds_per_step"] + v["decode_overhead_seconds"]
                                              + v["parallel_seconds_per_step"] + v["prefill_stall_seconds"],
                                              rel=1e-12)


@pytest.mark.parametrize("gpu, source", [("h200", "measured tables"), ("mi300x", "roofline fallback")])
def test_plan_json_has_the_operations_and_their_sources(gpu, source):
    code, out, err = cli("plan", "--model", "llama-3.1-8b", "--gpu", gpu, "--tp", "1", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["kernel_source"] == source
    assert d["decode_ops"] and d["prefill_ops"]
    for ops in (d["decode_ops"], d["prefill_ops"]):
        for op, entry in ops.items():
            assert entry["seconds"] >= 0 and entry["source"], op
    if source == "measured tables":
        assert {"qkv", "o", "mlp", "attention", "allreduce", "elementwise"} <= set(d["decode_ops"])
        assert "h200_sxm/gemm/vllm" in d["decode_ops"]["qkv"]["source"]
        steps = sum(e["seconds"] for op, e in d["decode_ops"].items() if op not in ("parallel", "prefill_stall"))
        assert steps == pytest.approx(d["decode_kernel_seconds"], rel=1e-9)


def test_each_dp_attention_rank_runs_its_attention_gemms_over_its_own_tokens():
    """Under DP attention every rank holds the whole QKV and O weights and runs them over its own sequences: the
    GEMMs' M is the step's tokens / DP (8 ranks of Qwen3-235B on H200, each with some 180 sequences), by hand from
    the curve of their measured floor and time per token; without DP it is all of the step's tokens."""
    from inference_ledger.formulas import serving

    kw = dict(tp=1, dp_attention=8, ep=8, concurrency=2048, input_tokens=1000, output_tokens=1000)
    v = plan.evaluate(_resolved("qwen3-235b-a22b", "h200", "trtllm", **kw).inputs)
    m = v["step_tokens"] / 8
    assert v["rank_step_tokens"] == pytest.approx(m) and m > 100
    for op in ("qkv", "o"):
        floor, rate = v[f"{op}_kernel_floor_seconds"], v[f"{op}_kernel_seconds_per_token"]
        assert v[f"decode_{op}_seconds"] == pytest.approx(v["num_layers"] * serving.gemm_curve(m, floor, rate),
                                                          rel=1e-12)
    one = plan.evaluate(_resolved("qwen3-235b-a22b", "h200", "trtllm", **kw).inputs | {"dp_attention": 1})
    assert one["rank_step_tokens"] == one["step_tokens"]


def test_a_prompt_token_under_expert_parallelism_visits_k_over_ep_whole_experts_on_a_gpu():
    """Each prompt token goes to k experts; under EP 8 a GPU holds an eighth of them, whole, so per GPU a token costs
    k / 8 whole-expert GEMM pairs (at TP it is k slices of every expert): by hand from the plan's own per-token
    figures for Qwen3-235B at TP 8 / EP 8 on H200.  It was k whole experts a GPU, eight times the MoE work of each
    further prompt, which made a prefill wave longer than its lone prompt's service time allowed."""
    kw = dict(tp=8, ep=8, concurrency=64, input_tokens=1000, output_tokens=1000)
    v = plan.evaluate(_resolved("qwen3-235b-a22b", "h200", "trtllm", **kw).inputs)
    dense = v["num_layers"] * (v["qkv_kernel_seconds_per_token"] + v["o_kernel_seconds_per_token"]) \
        + (v["num_layers"] - v["moe_layers"]) * v["mlp_kernel_seconds_per_token"]
    moe = v["moe_layers"] * v["experts_per_token"] / 8 * v["moe_expert_kernel_seconds_per_token"]
    assert v["experts_per_token"] == 8 and v["moe_layers"] == 94
    assert v["prefill_seconds_per_prompt_token"] == pytest.approx(dense + moe, rel=1e-12)


def test_each_efficiency_input_says_where_it_applies():
    """The efficiencies price the roofline; a GPU with measured kernel tables prices its GEMMs and attention from the
    tables, so halving one there leaves the step as it was (the weight-streaming one still prices the element-wise
    traffic).  Each input's description says so; on a GPU without tables (L4) every one of them moves the plan (the
    compute efficiency the batch where a compute-bound step meets the TPOT target)."""
    def run(gpu, model, tp, **eff):
        r = _resolved(model, gpu, tp=tp, concurrency=64, input_tokens=2048, output_tokens=256, **eff)
        v = plan.evaluate(r.inputs)
        return v["kernel_tables"], v["tpot_seconds"], v["ttft_service_seconds"], v["tpot_batch_compute"]

    roofline_only = ("decode_compute_efficiency", "prefill_efficiency", "kv_read_efficiency")
    tables, tpot, ttft, _ = run("h100-sxm", "llama-3.1-70b", 4)
    assert tables == 1
    for name in roofline_only:
        assert run("h100-sxm", "llama-3.1-70b", 4, **{name: plan.INPUT_BY_NAME[name].default / 2})[1:3] == (tpot, ttft)
        assert "roofline" in plan.INPUT_BY_NAME[name].doc
    assert run("h100-sxm", "llama-3.1-70b", 4, bw_efficiency=0.4)[1] > tpot
    assert "element-wise" in plan.INPUT_BY_NAME["bw_efficiency"].doc
    base = run("l4", "llama-3.1-8b", 1)
    assert base[0] == 0
    moved = {name: run("l4", "llama-3.1-8b", 1, **{name: plan.INPUT_BY_NAME[name].default / 2})[1:] != base[1:]
             for name in (*roofline_only, "bw_efficiency")}
    assert all(moved.values()), moved


def test_a_what_if_on_the_gpus_bandwidth_or_peak_is_priced_on_the_roofline():
    """The tables are latencies measured on the catalog GPU at the catalog model's shapes: they cannot follow a plan
    that doubles its bandwidth or peak (an H100 with 6.7 TB/s had kept 97% of its step time) or changes the model's
    size.  Such a plan is priced on the roofline with the given figures and says why; the catalog's own figure given
    explicitly keeps the tables."""
    from inference_ledger.io import report

    base = dict(tp=4, concurrency=1, batching="static", input_tokens=1024, output_tokens=256)
    same = plan.evaluate(_resolved("llama-3.1-70b", "h100-sxm", hbm_bw=3.35e12, **base).inputs)
    assert same["kernel_tables"] == same["kernel_priced"] == 1 and same["kernel_hbm_bw"] == 3.35e12
    assert same["kernel_peak_flops"] == 989e12   # the H100's dense BF16 peak, the weight format's unit
    fast = plan.evaluate(_resolved("llama-3.1-70b", "h100-sxm", hbm_bw=6.7e12, **base).inputs)
    assert fast["kernel_tables"] == 1 and fast["kernel_priced"] == 0
    # the roofline at one sequence: the weights a GPU streams at 6.7 TB/s x 0.8, half the H100's time for them
    assert fast["decode_gpu_seconds"] == pytest.approx(
        fast["step_weight_bytes_per_gpu"] / (6.7e12 * 0.8) + fast["step_kv_seconds"] + fast["allreduce_seconds_per_step"]
        + fast["decode_overhead_seconds"], rel=1e-9)
    assert fast["tpot_seconds"] < 0.75 * same["tpot_seconds"]
    ops = report.step_ops(fast, model="llama-3.1-70b", gpu="h100-sxm", engine="vllm")
    assert ops["kernel_source"] == "roofline fallback"
    assert "not the one its tables stand for (a what-if)" in ops["decode_ops"]["linear"]["source"]
    peak = plan.evaluate(_resolved("llama-3.1-70b", "h100-sxm", peak_flops=2e15, **base).inputs)
    assert peak["kernel_priced"] == 0
    # a 100B model on the 70B's shapes: the tables would price the 70B's GEMMs while memory holds 100B
    size = plan.evaluate(_resolved("llama-3.1-70b", "h100-sxm", num_params=1e11, active_params=1e11, **base).inputs)
    assert same["kernel_active_params"] == 69_503_033_344 == size["kernel_active_params"]
    assert size["kernel_tables"] == 1 and size["kernel_priced"] == 0


@pytest.mark.libreoffice
def test_a_bandwidth_typed_into_the_plan_sheet_switches_the_book_to_the_roofline(soffice, tmp_path):
    """The same rule in the workbook: the default book reads the H100's tables; 6.7 TB/s typed into the Plan's
    bandwidth override makes LibreOffice's recalculation price the step on the roofline (its linear layers, KV reads,
    all-reduces and overhead), as `plan --hbm-bw` does."""
    from openpyxl import load_workbook

    from renders import named_cell as named, typed_into_overrides

    built = tmp_path / "book.xlsx"
    code, _, err = cli("build", "-o", built)
    assert code == 0, err
    assert named(load_workbook(built, data_only=True), "kernel_priced").value == 1
    got = typed_into_overrides(built, {"hbm_bw": 6.7e12}, tmp_path)
    assert named(got, "kernel_tables").value == 1 and named(got, "kernel_priced").value == 0
    roofline = sum(named(got, n).value for n in ("step_linear_seconds", "step_kv_seconds", "allreduce_seconds_per_step",
                                                 "decode_overhead_seconds"))
    assert named(got, "decode_gpu_seconds").value == pytest.approx(roofline, rel=1e-9)
    assert named(got, "step_linear_seconds").value < named(load_workbook(built, data_only=True),
                                                           "decode_gpu_seconds").value


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.csv")))
def test_a_gpus_rows_are_the_tables_rows_that_measure_it(name):
    """A plan reads only its GPU's rows of each table (what keeps `plan` from parsing megabytes of other GPUs'
    tables): those are exactly the rows, read here with the csv module, whose gpu_ids name the GPU (one of several
    ids included), for every GPU a table measures."""
    from inference_ledger.formulas import kernel_tables

    rows = _csv(name)
    for gpu in sorted({g for r in rows for g in r["gpu_ids"].split("|")}):
        want = [r for r in rows if gpu in r["gpu_ids"].split("|")]
        got = [dict(r) for r in kernel_tables._rows(name, gpu)]
        assert got == [{k: v.strip() for k, v in r.items()} for r in want], (name, gpu)
    assert kernel_tables._rows(name, "no-such-gpu") == ()

"""DeepSeek's MLA attention priced from the measured MLA module tables (data/kernels/mla_decode.csv, mla_prefill.csv).

Expected values are read straight from the shipped CSVs with the csv module and combined by hand, not through the
module's own loader.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from inference_ledger.formulas import kernel_tables, kernels, kernels_fused
from inference_ledger.graph import plan, resolve

from test_cli_rules import cli

DATA = Path(kernels.__file__).resolve().parents[1] / "data" / "kernels"
US = 1e-6


def _rows(name):
    with (DATA / name).open() as fh:
        return list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))


def _row(name, gpu, engine, kv, gemm, heads, batch=None):
    got = [r for r in _rows(name) if gpu in r["gpu_ids"].split("|") and r["engine"] == engine
           and r["kv_dtype"] == kv and r["gemm_dtype"] == gemm and int(r["heads"]) == heads
           and (batch is None or int(r["batch"]) == batch)]
    assert len(got) == 1, got
    return got[0]


def test_the_mla_tables_name_their_source_and_version():
    for name in ("mla_decode.csv", "mla_prefill.csv"):
        head = (DATA / name).read_text().split("\n", 2)[:2]
        assert "aiconfigurator-core 0.12.0" in head[0] and "Apache-2.0" in head[0], name
        rows = _rows(name)
        assert rows and all(r["source"].endswith("_module_perf.parquet") and r["version"] for r in rows), name
        assert name in (DATA / "NOTICE").read_text()
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 6e6


def test_mla_lookup_equals_the_tables_at_grid_points():
    dec, pre = kernels_fused.mla_tables("h200", "trtllm", "fp8", "fp8", 16)
    for b in (1, 16, 256):
        r = _row("mla_decode.csv", "h200", "trtllm", "fp8", "fp8_block", 16, b)
        for ctx in (128, 4096, 16384):
            assert kernel_tables.interpolate(dec, b, ctx) == pytest.approx(float(r[f"ctx{ctx}"]) * US, rel=1e-12)
    p = _row("mla_prefill.csv", "h200", "trtllm", "fp8", "fp8_block", 16)
    for s in (128, 2048, 16384):
        assert kernel_tables.interpolate(pre, s) == pytest.approx(float(p[f"isl{s}"]) * US, rel=1e-12)
    assert "h200_sxm/mla/trtllm/" in dec.source and "mla_generation_module_perf" in dec.source


def test_one_mla_decode_step_by_hand_from_the_tables():
    # DeepSeek-R1 (FP8), TP 8 on H200 under TensorRT-LLM, one static sequence: 128 heads / 8 = 16 per GPU
    r = resolve.resolve("deepseek-r1", "h200", engine="trtllm", batching="static",
                        numbers={"tp": 8, "concurrency": 1, "input_tokens": 1024, "output_tokens": 256})
    v = plan.evaluate(r.inputs)
    assert v["kernel_tables"] == 1 and v["step_tokens"] == 1
    dec = {b: _row("mla_decode.csv", "h200", "trtllm", "bfloat16", "fp8_block", 16, b) for b in (1, 256)}
    pre = _row("mla_prefill.csv", "h200", "trtllm", "bfloat16", "fp8_block", 16)
    us = lambda row, col: float(row[col]) * US
    # the module's projections: floor at one sequence and 128 KV tokens; per token and per prompt length squared
    # from t = a S + q S^2 through the 8,192- and 16,384-token prompts
    t1, t2 = us(pre, "isl8192"), us(pre, "isl16384")
    q = (t2 / 16384 - t1 / 8192) / (16384 - 8192)
    a = t1 / 8192 - q * 8192
    kv = (us(dec[256], "ctx16384") - us(dec[256], "ctx128")) / (256 * (16384 - 128))
    assert v["qkv_kernel_floor_seconds"] == pytest.approx(us(dec[1], "ctx128"), rel=1e-12)
    assert v["qkv_kernel_seconds_per_token"] == pytest.approx(a, rel=1e-9)
    assert v["prefill_attention_kernel_seconds_per_token_squared"] == pytest.approx(q, rel=1e-9)
    assert v["decode_attention_kernel_seconds_per_kv_token"] == pytest.approx(kv, rel=1e-9)
    assert v["decode_o_seconds"] == 0
    # one decode step's attention module: 61 layers x (projections at one token + the KV read of a 1,152-token
    # context, 1,024 + 256 / 2) -- and it lands within 10% of the measured module at one sequence, 1,024 KV tokens
    ctx = 1024 + 256 / 2
    per_layer = (us(dec[1], "ctx128") ** 2 + a * a) ** 0.5 + kv * ctx
    assert (v["decode_qkv_seconds"] + v["decode_attention_seconds"]) / 61 == pytest.approx(per_layer, rel=1e-9)
    measured = us(_row("mla_decode.csv", "h200", "trtllm", "bfloat16", "fp8_block", 16, 1), "ctx1024")
    assert per_layer == pytest.approx(measured, rel=0.1)


@pytest.mark.parametrize("gpu", ["h200", "h100-sxm"])
def test_deepseek_no_longer_falls_back_to_the_roofline_where_the_tables_are(gpu):
    code, out, err = cli("plan", "--model", "deepseek-r1", "--gpu", gpu, "--tp", "8", "--engine", "sglang", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["kernel_source"] == "measured tables"
    assert "/mla_generation_module_perf" in d["decode_ops"]["qkv"]["source"]
    assert "/moe/sglang/" in d["decode_ops"]["mlp"]["source"]
    # a GPU without the MLA module tables prices the MLA projections from its GEMM tables and the latent on the
    # roofline (MI300X: aiter tuned DeepSeek-V3's projection shapes; see test_kernels_amd.py); one without any
    # tables keeps the roofline for the whole step
    assert kernels_fused.mla_tables("mi300x", "vllm", "fp8", "fp8", 16) is None
    v = plan.evaluate(resolve.resolve("deepseek-r1", "mi300x", numbers={"tp": 8}).inputs)
    assert v["kernel_tables"] == 1 and v["o_kernel_floor_seconds"] > 0   # O priced on its own, not in a module
    v = plan.evaluate(resolve.resolve("deepseek-r1", "gaudi3", numbers={"tp": 8}).inputs)
    assert v["kernel_tables"] == 0

"""Predictions against the shipped measurements: the accuracy targets, and rows derived by hand."""

from __future__ import annotations

import csv
import statistics

import pytest

from inference_ledger.validation import fidelity
from inference_ledger.graph import plan
from inference_ledger.validation.fidelity import MEASURED_CSV

GIB = 2**30


@pytest.fixture(scope="module")
def checks() -> list[fidelity.Check]:
    return fidelity.compare()


def _held(checks, metric):
    return [c for c in checks if c.metric == metric and c.checked]


def test_every_public_row_is_kept_with_its_source():
    rows = fidelity.load_measured()
    assert len(rows) == 33
    with MEASURED_CSV.open() as fh:
        for r in csv.DictReader(ln for ln in fh if not ln.startswith("#")):
            assert r["source"] and r["quote"], r["id"]


def test_weights_per_gpu_within_2_percent(checks):
    held = _held(checks, "weights_gib")
    assert len(held) >= 9
    assert [c.row for c in held if abs(c.error) > 0.02] == []


def test_kv_cache_within_5_percent(checks):
    tokens, memory = _held(checks, "kv_tokens"), _held(checks, "kv_cache_gib")
    assert len(tokens) >= 4 and len(memory) >= 6
    assert [(c.row, round(c.error, 3)) for c in tokens + memory if abs(c.error) > 0.05] == []


def test_kv_bytes_per_token_matches_the_logs(checks):
    held = _held(checks, "kv_bytes_per_token")
    assert len(held) >= 5
    assert max(abs(c.error) for c in held) <= 0.02


def test_refused_configurations_are_predicted_not_to_start(checks):
    held = _held(checks, "started")
    refused = {c.row for c in held if c.measured == 0}
    assert refused == {"llama31-8b-3090-29k", "r1-qwen14b-4090-tp2", "gpt-oss-120b-h100-util090"}
    assert [c.row for c in held if c.predicted != c.measured] == []


def test_tpot_floor_is_never_above_a_measured_tpot(checks):
    floors = [c for c in checks if c.metric == "tpot_floor_ms"]   # held or not: a floor is a floor everywhere
    assert len(floors) >= 13
    assert fidelity.floor_violations(checks) == []


def test_expected_tpot_median_error_within_15_percent(checks):
    held = _held(checks, "tpot_ms")
    assert len(held) >= 12
    assert statistics.median(abs(c.error) for c in held) <= 0.15


def test_one_set_of_defaults_for_every_row():
    d = plan.defaults()
    knobs = ("bw_efficiency", "decode_compute_efficiency", "allreduce_latency_seconds", "layer_overhead_seconds",
             "step_overhead_seconds", "prefill_efficiency")
    for row in fidelity.load_measured():
        inputs = fidelity.row_inputs(row)
        if inputs is not None:
            assert {k: inputs[k] for k in knobs} == {k: d[k] for k in knobs}, row.id


def test_sglang_qwen3_235b_fp8_by_hand():
    # weights per GPU: (233,798,893,568 FP8 x 1 B + 1,294,740,992 BF16 x 2 B) / TP 4 = 59,097,093,888 B (55.04 GiB)
    # KV: 0.93 x (79.1875 GiB - 0.35 GiB CUDA context - 1.79 GiB NCCL) - weights = 17,840,990,674 B (16.62 GiB)
    # tokens: / (94 layers x 1 KV head per GPU x 128 x 2 x 2 B = 48,128 B) = 370,698; the log says 367,404 (+0.9%)
    row = next(r for r in fidelity.load_measured() if r.id == "qwen3-235b-fp8-h100x4-sglang")
    v = plan.evaluate(fidelity.row_inputs(row))
    assert v["weights_bytes_per_gpu"] == 59_097_093_888
    assert v["kv_bytes_per_token_per_gpu"] == 48_128
    assert v["kv_cache_budget_bytes_per_gpu"] == pytest.approx(17_840_990_674, rel=1e-9)
    assert v["kv_capacity_tokens"] == 370_698
    assert v["kv_capacity_tokens"] / 367_404 - 1 == pytest.approx(0.009, abs=0.001)


def test_gpt_fast_llama2_70b_tp4_tpot_by_hand():
    # mean decode context of a 5-token prompt and 200 output tokens: S + T/2 = 5 + 100 = 105 tokens
    # active weights: 68,976,648,192 - 32,000 x 8,192 input embedding (a row gather) = 68,714,504,192
    # bytes per GPU: 68,714,504,192 x 2 / 4 + 105 x 327,680 B / 4 KV shards = 34,365,853,696 B
    # floor: / 2.039e12 B/s = 16.854 ms (measured 26.31 ms)
    # expected: weights / (BW x 0.8) + KV / (BW x 0.9) + 2 x 80 x (15 us + 2 x 3/4 x 16,384 B / 300e9) + 80 x 20 us
    #   + 0.2 ms = 34,357,252,096 / 1.6312e12 + 8,601,600 / 1.8351e12 + 2.41 ms + 1.8 ms = 25.280 ms (-3.9%)
    # (the roofline fallback, kernel_tables 0; tests/test_kernels.py derives the same row from the kernel tables)
    row = next(r for r in fidelity.load_measured() if r.id == "llama2-70b-gptfast-bf16-tp4")
    v = plan.evaluate(fidelity.row_inputs(row, decode=True) | {"kernel_tables": 0})
    assert v["decode_context_tokens"] == 105
    assert v["decode_bytes_per_step_per_gpu"] == 34_365_853_696
    assert v["tpot_floor_seconds"] * 1e3 == pytest.approx(16.8543, rel=1e-4)
    assert v["tpot_seconds"] * 1e3 == pytest.approx(25.2803, rel=1e-4)


def test_public_columns_alone_map_to_the_same_catalog_entries(tmp_path):
    # the same rows without the mapping columns: model, GPU, engine and format read from the free text
    with MEASURED_CSV.open() as fh:
        rows = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    mapping = ("id", "model_id", "weight_dtype", "gpu_id", "total_gpu_memory_gib", "engine_id", "started", "not_checked")
    public = [{k: v for k, v in r.items() if k not in mapping} for r in rows]
    path = tmp_path / "public.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(public[0]))
        w.writeheader()
        w.writerows(public)
    for own, inferred in zip(fidelity.load_measured(), fidelity.load_measured(path)):
        for k in ("model_id", "weight_dtype", "gpu_id", "engine_id", "total_gpu_memory_gib"):
            assert getattr(inferred, k) == getattr(own, k), (own.id, k)


def test_bad_file_is_one_clear_error(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(fidelity.LedgerInputError, match="not a measured-deployments CSV"):
        fidelity.load_measured(p)


@pytest.mark.parametrize("text,engine", [("vLLM ~0.6.5 (V0)", "vllm-v0"), ("vLLM 0.5.3", "vllm-v0"),
                                         ("vLLM (V1, ~0.8.x)", "vllm-0.8"), ("vLLM 0.10.1", "vllm-0.9"),
                                         ("vLLM 0.19.0", "vllm"),
                                         ("vLLM (V1, Aug 2025)", "vllm-0.9"), ("SGLang (mid-2025)", "sglang"),
                                         ("TensorRT-LLM 0.17", "trtllm"), ("gpt-fast (torch.compile)", "")])
def test_engine_version_read_from_text(text, engine):
    assert fidelity.infer_mapping({"engine": text})["engine_id"] == engine


def test_fp8_kv_cache_halves_the_kv_bytes_per_token(tmp_path):
    p = tmp_path / "fp8kv.csv"
    p.write_text("model,gpu,tp,dtype,kv_dtype,engine\n"
                 "meta-llama/Llama-3.1-8B-Instruct,H100 80GB,1,bf16,fp8,vLLM 0.10\n")
    row = fidelity.load_measured(p)[0]
    assert (row.model_id, row.gpu_id, row.kv_dtype, row.engine_id) == ("llama-3.1-8b", "h100-sxm", "fp8", "vllm-0.9")
    assert plan.evaluate(fidelity.row_inputs(row))["kv_bytes_per_token_per_gpu"] == 65_536   # 2 x 32 x 8 x 128 x 1 B

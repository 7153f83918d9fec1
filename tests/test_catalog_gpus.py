"""GPU catalog: required ids, units, sources, runtime memory, lookups (aliases: tests/test_catalog_models.py)."""

from __future__ import annotations

import pytest

from inference_ledger.catalogs.catalog import GPU_FIELDS, Gpu, UnknownId, get_gpu, gpu_spec, load_gpus
from inference_ledger.graph.resolve import plan_inputs

REQUIRED = ("a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h800", "h20", "h200", "b200", "l40s", "l4",
            "a10", "a10g", "rtx-4090", "mi300x", "mi325x", "gaudi3")
GIB = 2**30


def test_required_ids_in_file_order():
    assert [g.id for g in load_gpus()][:len(REQUIRED)] == list(REQUIRED)


@pytest.mark.parametrize("gpu", load_gpus(), ids=lambda g: g.id)
def test_every_row_has_sources_dates_and_base_units(gpu: Gpu):
    assert gpu.source and gpu.date and gpu.price_source and gpu.price_date
    assert 16e9 <= gpu.memory_bytes <= 300e9                  # bytes, not GB
    assert 0.9 < gpu.memory_runtime_bytes / gpu.memory_bytes < 1.08  # runtime GiB near the marketed figure
    assert 1e11 <= gpu.hbm_bw <= 2e13                          # B/s, not TB/s
    assert 5e13 <= gpu.bf16_flops <= 3e15                      # dense FLOP/s
    for v in (gpu.fp8_flops, gpu.int8_ops, gpu.fp4_flops):
        assert v is None or v >= gpu.bf16_flops
    assert gpu.price_per_gpu_hour is None or 0 < gpu.price_per_gpu_hour < 50


def test_unsourced_prices_say_placeholder():
    for g in load_gpus():
        if g.id in ("h800", "h20", "gaudi3"):
            assert "placeholder, edit me" in g.price_source


def test_runtime_memory_is_what_torch_reports():
    assert get_gpu("h100-sxm").memory_runtime_bytes == 79.1875 * GIB == 85_026_930_688
    assert get_gpu("h100-sxm").memory_bytes == 80e9
    assert get_gpu("a100-40gb").memory_runtime_bytes == round(39.38 * GIB)  # measured A100-PCIE-40GB
    assert get_gpu("h200").memory_runtime_bytes == round(139.80 * GIB)


def test_dense_not_sparse():
    h = get_gpu("h100-sxm")
    assert (h.bf16_flops, h.fp8_flops, h.fp4_flops) == (989e12, 1979e12, None)  # datasheet 1979/3958 sparse
    assert get_gpu("b200").fp4_flops == 9000e12
    assert get_gpu("a100-80gb").fp8_flops is None  # no FP8 on Ampere


def test_gpu_spec_fields_and_aliases():
    assert gpu_spec("h100-sxm", "hbm_bandwidth") == 3.35e12
    assert gpu_spec("H100", "memory_runtime_bytes") == 85_026_930_688
    assert gpu_spec("a100-80gb", "fp8_flops") is None
    with pytest.raises(UnknownId, match="did you mean hbm_bw"):
        gpu_spec("h100-sxm", "hbm_bww")
    assert [f for f, _, _ in GPU_FIELDS][:3] == ["id", "name", "vendor"]


def test_peak_flops_follows_the_weight_format_and_falls_back_to_bf16():
    assert plan_inputs("llama-3.1-8b", "h100-sxm")["peak_flops"] == 989e12
    assert plan_inputs("llama-3.1-8b", "h100-sxm", weight_dtype="fp8")["peak_flops"] == 1979e12
    assert plan_inputs("llama-3.1-8b", "a100-80gb", weight_dtype="fp8")["peak_flops"] == 312e12  # no FP8 unit
    assert plan_inputs("llama-3.1-8b", "h100-sxm", weight_dtype="int4")["peak_flops"] == 989e12  # W4A16 -> BF16
    assert plan_inputs("llama-3.1-8b", "b200", weight_dtype="nvfp4")["peak_flops"] == 9000e12


def test_gpu_facts_reach_the_plan():
    v = plan_inputs(None, "h200")
    assert v["gpu_memory_bytes"] == round(139.80 * GIB)
    assert v["hbm_bw"] == 4.8e12 and v["price_per_gpu_hour"] == get_gpu("h200").price_per_gpu_hour
    assert plan_inputs(None, "h200", hbm_bw=5e12)["hbm_bw"] == 5e12  # explicit numbers win

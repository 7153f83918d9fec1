"""Frontier models and chips: the catalog rows against the figures their makers publish.

Every expected number here is from a model card, a datasheet or the engines' reference system files,
written out by hand; the tolerances say how far a rounded card figure ("1 trillion", "355B") may sit
from the count of the architecture, with the reason next to it.
"""

from __future__ import annotations

import pytest

from inference_ledger.catalogs.catalog import get_gpu, get_model, load_gpus
from inference_ledger.graph.resolve import model_spec

# (id, card total, card active, tolerance on total, tolerance on active in the card's convention)
CARDS = [
    ("deepseek-r1", 671e9, 37e9, 0.001, 0.015),        # R1 card: 671B / 37B activated (37B rounded, as for V3)
    ("kimi-k2", 1e12, 32e9, 0.03, 0.015),              # "1 trillion" rounded: 1.026T by count
    ("llama-4-scout", 109e9, 17e9, 0.015, 0.015),      # 109B counts the vision encoder too (text: 107.8B)
    ("llama-4-maverick", 400e9, 17e9, 0.005, 0.015),
    ("qwen3-coder-480b-a35b", 480e9, 35e9, 0.001, 0.015),
    ("glm-4.5", 355e9, 32e9, 0.01, 0.03),              # 355B counts the MTP layer; 32B rounded
]


@pytest.mark.parametrize("mid, total, active, tol_total, tol_active", CARDS)
def test_counts_against_the_model_cards(mid, total, active, tol_total, tol_active):
    m = get_model(mid)
    assert (m.params_official, m.active_official) == (total, active)
    assert abs(m.num_params / total - 1) < tol_total
    counted = m.active_params + (m.embedding_params if m.active_convention == "all" else 0)
    assert abs(counted / active - 1) < tol_active
    assert m.source and m.date and m.provenance in ("verbatim", "reconstructed")


def test_architectures_as_the_cards_describe_them():
    k = get_model("moonshotai/Kimi-K2-Instruct")
    assert (k.num_layers, k.num_experts, k.experts_per_token, k.num_attention_heads, k.hidden_size) == \
        (61, 384, 8, 64, 7168)
    assert k.moe_layers == 60                       # first_k_dense_replace 1: layer 0 is dense
    r1 = get_model("deepseek-ai/DeepSeek-R1")
    assert r1.id == "deepseek-r1" and (r1.num_experts, r1.moe_layers, r1.weight_dtype) == (256, 58, "fp8")
    q = get_model("qwen3-coder")
    assert (q.num_layers, q.num_attention_heads, q.kv_heads, q.num_experts, q.experts_per_token) == (62, 96, 8, 160, 8)
    g = get_model("zai-org/GLM-4.5")
    assert (g.num_layers, g.moe_layers, g.num_experts, g.kv_heads) == (92, 89, 160, 8)
    assert g.provenance == "reconstructed"
    assert (get_model("llama-4-scout").num_experts, get_model("llama-4-maverick").num_experts) == (16, 128)
    assert get_model("llama-4-maverick").moe_layers == 24  # every second layer of 48


def test_mla_kv_per_token_of_kimi_and_r1():
    # MLA caches kv_lora_rank + qk_rope_head_dim = 512 + 64 per layer, BF16
    assert model_spec("kimi-k2", "kv_bytes_per_token") == 61 * 576 * 2
    assert model_spec("deepseek-r1", "kv_bytes_per_token") == 61 * 576 * 2
    assert model_spec("qwen3-coder-480b-a35b", "kv_bytes_per_token") == 2 * 62 * 8 * 128 * 2


# (id, marketed bytes, HBM B/s, dense BF16, dense FP8, GPUs per NVLink/xGMI domain, scale-out B/s per GPU)
CHIPS = [
    ("b300", 288e9, 7.75e12, 2250e12, 4500e12, 8, 100e9),   # HGX B300: 62 TB/s / 8; CX8 800 Gb/s per GPU
    ("gb200", 186e9, 8e12, 2500e12, 5000e12, 72, 100e9),    # NVL72: 13.4 TB / 72; one 72-GPU NVLink domain
    ("mi355x", 288e9, 8e12, 2516.6e12, 5033.2e12, 8, 50e9),  # AMD: 2.5 PF FP16 dense, 8 OAM; Pollara 400
    ("rtx-pro-6000", 96e9, 1.792e12, 467.8e12, 935.6e12, 8, 50e9),
]


@pytest.mark.parametrize("gid, mem, bw, bf16, fp8, per_node, scaleout", CHIPS)
def test_new_chips_against_their_datasheets(gid, mem, bw, bf16, fp8, per_node, scaleout):
    g = get_gpu(gid)
    assert (g.memory_bytes, g.hbm_bw, g.bf16_flops, g.fp8_flops) == (mem, bw, bf16, fp8)
    assert (g.gpus_per_node, g.scaleout_bw) == (per_node, scaleout)
    assert g.gpus_per_node_source and g.scaleout_source


def test_scale_out_is_the_nic_rate_in_bytes():
    # 400 Gb/s InfiniBand NDR per GPU = 400e9 / 8 = 50 GB/s; 800 Gb/s XDR = 100 GB/s; 200 Gb/s HDR = 25 GB/s
    assert get_gpu("h100-sxm").scaleout_bw == 400e9 / 8
    assert get_gpu("b200").scaleout_bw == 800e9 / 8
    assert get_gpu("a100-80gb").scaleout_bw == 200e9 / 8
    for g in load_gpus():
        assert 1e9 <= g.scaleout_bw <= 2e11 and g.scaleout_source


def test_aliases_of_the_new_rows():
    assert get_gpu("GB200 NVL72").id == "gb200"
    assert get_gpu("B300").id == "b300"
    assert get_gpu("MI355X").id == "mi355x"
    assert get_gpu("RTX PRO 6000").id == "rtx-pro-6000"

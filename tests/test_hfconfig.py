"""config.json import: shapes, windows, MoE, MLA, weight formats and parameter counts.

Expected figures are derived by hand here (module by module), not read back from the code,
and compared with the official counts of the model cards (within 1%).
"""

from __future__ import annotations

import copy
import json

import pytest

from inference_ledger.core.args import LedgerInputError
from inference_ledger.catalogs.catalog import MODELS_DIR, load_models
from inference_ledger.catalogs.hfconfig import load_config, parse, parse_file

REFERENCE = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b", "deepseek-v3",
             "gpt-oss-20b", "gpt-oss-120b", "qwen3-235b-a22b")  # verbatim copies of shared/reference/configs


def cfg(model_id: str) -> dict:
    return json.loads((MODELS_DIR / f"{model_id}.json").read_text())


# --- parameter counts, by hand -----------------------------------------------------------

def dense(L, H, nh, kv, hd, I, V, *, tied=False, qkv_bias=False, norms=2, qk_norm=False):
    attn = H * nh * hd + 2 * H * kv * hd + nh * hd * H + qkv_bias * (nh + 2 * kv) * hd + qk_norm * 2 * hd
    return L * (attn + 3 * H * I + norms * H) + V * H * (1 if tied else 2) + H


HAND_TOTALS = {
    "llama-3.1-8b": dense(32, 4096, 32, 8, 128, 14336, 128256),
    "llama-3.1-70b": dense(80, 8192, 64, 8, 128, 28672, 128256),
    "llama-3.1-405b": dense(126, 16384, 128, 8, 128, 53248, 128256),
    "qwen2.5-7b": dense(28, 3584, 28, 4, 128, 18944, 152064, qkv_bias=True),
    "qwen2.5-72b": dense(80, 8192, 64, 8, 128, 29568, 152064, qkv_bias=True),
    "mistral-7b-v0.3": dense(32, 4096, 32, 8, 128, 14336, 32768),
    "gemma-2-9b": dense(42, 3584, 16, 8, 256, 14336, 256000, tied=True, norms=4),
    "gemma-2-27b": dense(46, 4608, 32, 16, 128, 36864, 256000, tied=True, norms=4),
    "llama-2-7b": dense(32, 4096, 32, 32, 128, 11008, 32000),
}


def test_dense_counts_match_hand_derivation_exactly():
    assert HAND_TOTALS["llama-3.1-8b"] == 8_030_261_248
    assert HAND_TOTALS["qwen2.5-7b"] == 7_615_616_512
    for mid, n in HAND_TOTALS.items():
        a = parse(cfg(mid))
        assert a.num_params == n, mid
        # dense: every weight is active except the input embedding table (a one-row gather);
        # a tied table is the LM head too, so it stays
        assert a.active_params == n - (0 if a.tie_word_embeddings else a.embedding_params), mid


def test_gemma2_non_embedding_counts_equal_the_report():
    # Gemma 2 report (arXiv:2408.00118) Table 1 gives non-embedding and embedding counts exactly.
    a9, a27 = parse(cfg("gemma-2-9b")), parse(cfg("gemma-2-27b"))
    assert a9.num_params - 256000 * 3584 == 8_324_201_984
    assert a27.num_params - 256000 * 4608 == 26_047_480_320


def test_mixtral_total_and_active_by_hand():
    attn = 4096 * 4096 * 2 + 2 * 4096 * 1024
    expert = 3 * 4096 * 14336
    common = 32 * (attn + 4096 * 8 + 2 * 4096) + 2 * 32000 * 4096 + 4096  # router 4096x8, 2 norms
    a = parse(cfg("mixtral-8x7b"))
    assert a.num_params == common + 32 * 8 * expert == 46_702_792_704
    assert a.active_params == common + 32 * 2 * expert - 32000 * 4096 == 12_748_853_248  # input embedding out
    assert (a.num_experts, a.experts_per_token, a.moe_layers) == (8, 2, 32)


def test_deepseek_v3_mla_moe_by_hand():
    H, nh = 7168, 128
    attn = (H * 1536 + 1536 + 1536 * nh * 192          # q_a, q_a_norm, q_b (128 nope + 64 rope)
            + H * (512 + 64) + 512 + 512 * nh * (128 + 128)  # kv_a (latent + rope key), kv_a_norm, kv_b
            + nh * 128 * H)                            # o
    expert = 3 * H * 2048
    moe_common = attn + 2 * H + H * 256 + 256 + expert   # norms, router + score bias, 1 shared expert
    dense_layer = attn + 2 * H + 3 * H * 18432
    outside = 2 * 129280 * H + H
    a = parse(cfg("deepseek-v3"))
    assert a.num_params == 3 * dense_layer + 58 * (moe_common + 256 * expert) + outside == 671_026_419_200
    assert a.active_params == 3 * dense_layer + 58 * (moe_common + 8 * expert) + outside - 129280 * H == 36_625_618_432
    assert a.mla_latent_dim == 512 + 64 and a.moe_layers == 58 and a.weight_dtype == "fp8"


def test_gpt_oss_120b_by_hand_with_biases_sinks_and_mxfp4_experts():
    H, I, E = 2880, 2880, 128
    attn = H * 64 * 64 * 2 + 2 * H * 8 * 64 + (64 + 2 * 8) * 64 + H + 64  # q,o + k,v + qkv bias + o bias + sinks
    expert = 3 * H * I + 2 * I + H                                        # gate_up, down and their biases
    per_layer_common = attn + 2 * H + H * E + E                           # norms, router with bias
    outside = 2 * 201088 * H + H
    a = parse(cfg("gpt-oss-120b"))
    assert a.num_params == 36 * (per_layer_common + E * expert) + outside == 116_829_156_672
    assert a.active_params == 36 * (per_layer_common + 4 * expert) + outside - 201088 * H
    # MXFP4 covers the expert matrices only (modules_to_not_convert: attention, router, embeddings, head)
    assert a.quantized_params == 36 * E * 3 * H * I == 114_661_785_600
    assert a.active_quantized_params == 36 * 4 * 3 * H * I
    assert a.weight_dtype == "mxfp4"


BUILT_IN = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen2.5-7b", "qwen2.5-72b", "mistral-7b-v0.3",
            "mixtral-8x7b", "deepseek-v3", "gpt-oss-20b", "gpt-oss-120b", "gemma-2-9b", "gemma-2-27b",
            "qwen3-235b-a22b", "llama-2-7b")


@pytest.mark.parametrize("model", [m for m in load_models() if m.id in BUILT_IN], ids=lambda m: m.id)
def test_total_within_one_percent_of_official(model):
    assert abs(model.num_params / model.params_official - 1) < 0.01


@pytest.mark.parametrize("model_id", REFERENCE)
def test_every_reference_config_is_counted_within_one_percent(model_id):
    m = next(x for x in load_models() if x.id == model_id)
    assert m.params_official and abs(m.num_params / m.params_official - 1) < 0.01


@pytest.mark.parametrize("model_id", ["mixtral-8x7b", "qwen3-235b-a22b", "gpt-oss-20b", "gpt-oss-120b"])
def test_active_within_one_percent_of_official_in_the_cards_convention(model_id):
    m = next(x for x in load_models() if x.id == model_id)
    # active_params leaves the input embedding (a lookup, not a matmul) out, as gpt-oss's card
    # does; cards in the "all" convention count it, so add it back for them
    active = m.active_params + (m.embedding_params if m.active_convention == "all" else 0)
    assert abs(active / m.active_official - 1) < 0.01


def test_deepseek_active_against_the_cards_rounded_37b():
    # The card's "37B activated" is rounded to two digits; the architecture gives 36.63B without
    # the input embedding (37.55B with it). Documented in sources.csv; 1.0% apart.
    m = next(x for x in load_models() if x.id == "deepseek-v3")
    assert m.active_official == 37e9
    assert abs(m.active_params / m.active_official - 1) < 0.015


# --- attention shape, windows, nesting ---------------------------------------------------

def test_explicit_head_dim_wins_over_hidden_over_heads():
    a = parse(cfg("gemma-2-9b"))  # 3584 / 16 = 224, but head_dim says 256
    assert a.head_dim == 256
    assert parse(cfg("llama-3.1-70b")).head_dim == 8192 // 64


def test_sliding_windows():
    assert (parse(cfg("gpt-oss-120b")).sliding_layers, parse(cfg("gpt-oss-120b")).window) == (18, 128)
    assert (parse(cfg("gemma-2-9b")).sliding_layers, parse(cfg("gemma-2-9b")).window) == (21, 4096)  # alternating
    assert parse(cfg("gemma-2-27b")).sliding_layers == 23
    q = parse(cfg("qwen2.5-7b"))  # sliding_window 131072 declared, use_sliding_window false: none
    assert (q.sliding_layers, q.window) == (0, 0)
    v01 = dict(cfg("mistral-7b-v0.3"), sliding_window=4096)  # Mistral-7B-v0.1: every layer windowed
    assert (parse(v01).sliding_layers, parse(v01).window) == (32, 4096)
    qsw = dict(cfg("qwen2.5-7b"), use_sliding_window=True, max_window_layers=20)
    assert parse(qsw).sliding_layers == 28 - 20
    gemma3 = dict(cfg("gemma-2-27b"), model_type="gemma3_text", sliding_window_pattern=6)
    assert parse(gemma3).sliding_layers == 46 - 46 // 6


def test_text_config_nesting():
    inner = cfg("llama-3.1-8b")
    wrapped = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
               "vision_config": {"hidden_size": 1024}, "text_config": inner}
    a, b = parse(wrapped), parse(inner)
    assert (a.num_params, a.num_layers, a.kv_heads, a.head_dim) == (b.num_params, 32, 8, 128)


def test_qwen3_moe_layout_and_decoder_sparse_step():
    a = parse(cfg("qwen3-235b-a22b"))
    assert (a.num_experts, a.experts_per_token, a.moe_layers) == (128, 8, 94)
    half = dict(cfg("qwen3-235b-a22b"), decoder_sparse_step=2, mlp_only_layers=[1])
    # sparse where (i+1) % 2 == 0, except layer 1: layers 3, 5, ..., 93 -> 46
    assert parse(half).moe_layers == 46


# --- weight formats ------------------------------------------------------------------------

def _quant(q: dict) -> dict:
    c = copy.deepcopy(cfg("llama-3.1-8b"))
    c["quantization_config"] = q
    return c


def _ct(bits: int, kind: str) -> dict:
    return {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": bits, "type": kind,
                                                                            "group_size": 128, "strategy": "group"}}}}


@pytest.mark.parametrize("q, dtype", [
    ({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "fp8"),
    (_ct(8, "float"), "fp8"),   # compressed-tensors W8A8 FP8
    (_ct(8, "int"), "int8"),    # compressed-tensors W8A8 INT8
    (_ct(4, "int"), "int4"),    # compressed-tensors W4A16
    ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "int4"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "int4"),
    ({"quant_method": "gptq", "bits": 8}, "int8"),
])
def test_weight_format_from_quantization_config(q, dtype):
    a = parse(_quant(q))
    assert a.weight_dtype == dtype
    # every decoder linear layer is quantized; embeddings, LM head and norms are not
    assert a.quantized_params == LLAMA8_LINEAR


LLAMA8_LINEAR = 32 * (4096 * 4096 * 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336)


def test_modules_left_unquantized_are_matched_per_layer():
    # transformers' substring convention (fbgemm_fp8, as in Llama-3.1-405B-Instruct-FP8)
    a = parse(_quant({"quant_method": "fbgemm_fp8",
                      "modules_to_not_convert": ["model.layers.0.mlp.down_proj", "model.layers.1.mlp", "lm_head"]}))
    assert a.quantized_params == LLAMA8_LINEAR - 4096 * 14336 - 3 * 4096 * 14336  # not layers 10-19
    # compressed-tensors regular expressions
    b = parse(_quant(dict(_ct(8, "float"), ignore=["lm_head", r"re:.*layers\.1\.self_attn\..*"])))
    assert b.quantized_params == LLAMA8_LINEAR - (4096 * 4096 * 2 + 2 * 4096 * 1024)
    # MXFP4 globs: every layer's attention
    c = parse(_quant({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}))
    assert c.quantized_params == 32 * 3 * 4096 * 14336


def test_torch_dtype_without_quantization():
    assert parse(cfg("llama-2-7b")).weight_dtype == "fp16"
    assert parse(dict(cfg("llama-3.1-8b"), torch_dtype="float32")).weight_dtype == "fp32"


# --- malformed configs: one line naming the field ------------------------------------------

def _one_line_error(fn, *args) -> str:
    with pytest.raises(LedgerInputError) as e:
        fn(*args)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_empty_file(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("")
    assert "empty" in _one_line_error(parse_file, p)


def test_not_json(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("num_hidden_layers: 32\n")
    assert "not JSON" in _one_line_error(load_config, p)


def test_missing_num_hidden_layers():
    c = cfg("llama-3.1-8b")
    del c["num_hidden_layers"]
    assert "missing field 'num_hidden_layers'" in _one_line_error(parse, c)


def test_unknown_quant_method():
    msg = _one_line_error(parse, _quant({"quant_method": "bitsandbytes", "load_in_4bit": True}))
    assert "quantization_config.quant_method 'bitsandbytes'" in msg and "supported" in msg


def test_bad_field_type_is_named():
    msg = _one_line_error(parse, dict(cfg("llama-3.1-8b"), num_key_value_heads="eight"))
    assert "num_key_value_heads" in msg


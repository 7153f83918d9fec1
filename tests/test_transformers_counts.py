"""Parameter counts against transformers, and config fields a config.json leaves out.

``tests/fixtures/transformers-param-counts.json`` is a verbatim copy of
``shared/reference/h200-microbench/transformers-param-counts.json``: the parameter count of every built-in
config.json as transformers 5.17 builds the model on the meta device (unique parameters: a tied embedding is
counted once). It is an independent reference: transformers' modelling code, not this project's reader.
Regenerate it (where torch and transformers are installed) with
``python scripts/transformers_param_counts.py -o tests/fixtures/transformers-param-counts.json``.

A field a config.json leaves out takes the default of that architecture's transformers config class
(``inference_ledger.catalogs.hfconfig.MODEL_TYPE_DEFAULTS``): Gemma-2 ties its embeddings, Qwen2 defaults to 32 KV
heads, Llama-4 adds a shared expert to every MoE layer. The fixture configs under ``tests/fixtures/configs`` leave such
fields out.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from inference_ledger.catalogs import catalog
from inference_ledger.graph import plan, resolve
from inference_ledger.catalogs.catalog import MODELS_DIR
from inference_ledger.catalogs.hfconfig import MODEL_TYPE_DEFAULTS, parse, parse_file

FIXTURES = Path(__file__).with_name("fixtures")
COUNTS = json.loads((FIXTURES / "transformers-param-counts.json").read_text())["counts"]
ALL_BUILT_IN = sorted(p.name for p in MODELS_DIR.glob("*.json"))
#: The frontier configs, added where torch and transformers could not be installed: the reference has no
#: count for them yet (rerun scripts/transformers_param_counts.py and drop this list); test_catalog_frontier.py
#: holds their counts against the model cards meanwhile.
AWAITING_REFERENCE = ("deepseek-r1.json", "glm-4.5.json", "kimi-k2.json", "llama-4-maverick.json",
                      "llama-4-scout.json", "qwen3-coder-480b-a35b.json")
BUILT_IN = [n for n in ALL_BUILT_IN if n not in AWAITING_REFERENCE]


def test_the_reference_covers_every_built_in_model():
    assert sorted(COUNTS) == BUILT_IN
    assert sorted(BUILT_IN + list(AWAITING_REFERENCE)) == ALL_BUILT_IN


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_built_in_count_equals_transformers(name):
    a = parse_file(MODELS_DIR / name)
    ref = COUNTS[name]
    assert a.tie_word_embeddings == ref["tied"]
    assert a.embedding_params == ref["embedding_params"]
    if name == "deepseek-v3.json":
        # The one stated difference: DeepSeek-V3's router keeps a score-correction bias per routed expert
        # (e_score_correction_bias, 256 per MoE layer). The checkpoint stores it and engines load it, so the ledger
        # counts it; transformers registers it as a buffer (DeepseekV3TopkRouter), so its count leaves it out.
        assert a.num_params - a.moe_layers * a.num_experts == ref["params"]
        assert a.moe_layers * a.num_experts == 58 * 256
    else:
        assert a.num_params == ref["params"]


def _text(cfg: dict) -> dict:
    return cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg


@pytest.mark.parametrize("name", BUILT_IN)
def test_leaving_out_fields_at_their_transformers_default_changes_nothing(name):
    """Each built-in config with every field that equals its class default removed reads the same."""
    cfg = json.loads((MODELS_DIR / name).read_text())
    defaults = MODEL_TYPE_DEFAULTS.get(_text(cfg).get("model_type", ""), {})
    trimmed = copy.deepcopy(cfg)
    removed = [k for k, v in defaults.items() if k in _text(cfg) and _text(cfg)[k] == v]
    for k in removed:
        del _text(trimmed)[k]
    assert dataclasses.asdict(parse(trimmed)) == dataclasses.asdict(parse(cfg)), removed


def test_gemma2_without_the_tie_key_ties_like_transformers():
    """google/gemma-2-9b with tie_word_embeddings, head_dim, sliding_window, max_position_embeddings and
    attention_bias left out: Gemma2Config defaults (tie True, head_dim 256, window 4096 on alternate layers,
    8192 positions) give transformers' count exactly. Read as untied with head_dim = hidden / heads (3584 / 16 =
    224), it came to 9,927,998,976 (+7.4%)."""
    a = parse_file(FIXTURES / "configs" / "gemma-2-9b-defaults-omitted.json")
    assert a.num_params == COUNTS["gemma-2-9b.json"]["params"] == 9_241_705_984
    assert a.tie_word_embeddings and a.head_dim == 256
    assert (a.sliding_layers, a.window) == (21, 4096)
    assert a.max_position_embeddings == 8192


def _llama4_text(L, H, nh, kv, hd, I, I_mlp, V, E, moe_layers):
    """Llama4ForCausalLM by hand: attention (no biases; the QK norm is an L2 norm without weights), two RMSNorms
    per layer; a MoE layer holds E routed experts, a router (H x E, no bias) and one shared expert, all of width
    I; a dense layer is one MLP of width I_mlp; untied embedding and LM head, a final norm."""
    attn = H * nh * hd + 2 * H * kv * hd + nh * hd * H
    moe = E * 3 * H * I + H * E + 3 * H * I
    dense = 3 * H * I_mlp
    return L * (attn + 2 * H) + moe_layers * moe + (L - moe_layers) * dense + 2 * V * H + H


def test_llama4_scout_reads_its_layer_pattern_and_shared_experts():
    """meta-llama/Llama-4-Scout-17B-16E-Instruct (config.json as copied verbatim in github.com/ai-dynamo/
    aiconfigurator@64c5ddb aic-core/src/aiconfigurator_core/model_configs/, vision_config left out: the vision
    encoder is not counted). Without the shared expert of every MoE layer the count was 101,730,063,360 (-5.6%)."""
    path = FIXTURES / "configs" / "llama-4-scout-17b-16e-instruct.json"
    a = parse_file(path)
    hand = _llama4_text(48, 5120, 40, 8, 128, 8192, 16384, 202048, 16, moe_layers=48)
    assert hand == 107_769_861_120
    assert a.num_params == hand
    assert (a.moe_layers, a.num_experts, a.experts_per_token, a.shared_experts) == (48, 16, 1, 1)
    # model card: "17B" active (a rounded figure; input embedding included), 109B total with the vision encoder
    assert a.active_params + a.embedding_params == pytest.approx(17e9, rel=0.02)
    # interleave_moe_layer_step 2: MoE on layers 1, 3, 5, ...; the other 24 are dense MLPs of width 16384
    cfg = json.loads(path.read_text())
    cfg["text_config"]["interleave_moe_layer_step"] = 2
    b = parse(cfg)
    assert b.moe_layers == 24
    assert b.num_params == _llama4_text(48, 5120, 40, 8, 128, 8192, 16384, 202048, 16, moe_layers=24)


def test_fields_left_out_take_the_class_default_not_a_generic_one():
    base = json.loads((MODELS_DIR / "qwen2.5-7b.json").read_text())
    q = {k: v for k, v in base.items() if k not in ("num_key_value_heads", "use_sliding_window")}
    a = parse(q)
    assert a.kv_heads == 32          # Qwen2Config: num_key_value_heads 32, not the 28 attention heads
    assert a.sliding_layers == 0     # Qwen2Config: use_sliding_window False (a window alone does not slide)
    m = {k: v for k, v in json.loads((MODELS_DIR / "mistral-7b-v0.3.json").read_text()).items()
         if k not in ("sliding_window", "num_key_value_heads")}
    b = parse(m)
    assert (b.kv_heads, b.sliding_layers, b.window) == (8, 32, 4096)   # MistralConfig: 8 KV heads, 4096 window
    unknown = dict(base, model_type="not_a_known_type")
    del unknown["num_key_value_heads"]
    assert parse(unknown).kv_heads == 28   # no class to consult: as many KV heads as attention heads


def test_qwen2_moe_class_defaults_are_qwen1_5_moe_a2_7b():
    """Qwen2MoeConfig's defaults are Qwen/Qwen1.5-MoE-A2.7B's shapes (its docstring checkpoint): a config that
    names only the dense fields gets the 60 routed experts (top 4, width 1408), the shared expert (5632) and its
    sigmoid gate, and the untied head. Card: 14.3B in total, 2.7B activated."""
    a = parse({"model_type": "qwen2_moe", "num_hidden_layers": 24, "hidden_size": 2048, "num_attention_heads": 16,
               "vocab_size": 151936, "intermediate_size": 5632})
    H, L, V = 2048, 24, 151936
    attn = 4 * H * H + (16 + 2 * 16) * 128   # q, k, v, o with q/k/v biases (16 KV heads by default)
    moe = 60 * 3 * H * 1408 + H * 60 + 3 * H * 5632 + H   # routed experts, router, shared expert, its gate
    hand = L * (attn + 2 * H + moe) + 2 * V * H + H
    assert a.num_params == hand
    assert a.num_params == pytest.approx(14.3e9, rel=0.005)
    assert a.active_params + a.embedding_params == pytest.approx(2.7e9, rel=0.01)
    assert (a.num_experts, a.experts_per_token, a.kv_heads, a.sliding_layers) == (60, 4, 16, 0)


def _weights_bytes(cfg: dict, tmp_path, weight_dtype=None) -> float:
    p = tmp_path / "m.json"
    p.write_text(json.dumps(cfg))
    m = catalog.model_from_config(p)
    return float(plan.evaluate(resolve.plan_inputs(m, None, weight_dtype=weight_dtype))["weights_bytes"])


def test_an_fp32_checkpoint_keeps_embeddings_and_norms_in_fp32(tmp_path):
    cfg = json.loads((MODELS_DIR / "llama-3.1-8b.json").read_text())
    n = 8_030_261_248  # transformers' count (tests/fixtures/transformers-param-counts.json)
    assert _weights_bytes(dict(cfg, torch_dtype="float32"), tmp_path) == 4 * n
    assert _weights_bytes(dict(cfg, torch_dtype="bfloat16"), tmp_path) == 2 * n
    # quantized to FP8 for serving, the rest is cast to BF16 as engines do: 1 B per linear weight, 2 B otherwise
    linear = 32 * (4096 * 4096 * 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    assert _weights_bytes(dict(cfg, torch_dtype="float32"), tmp_path, "fp8") == linear + 2 * (n - linear)

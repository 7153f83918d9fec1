"""Model catalog: built-in models, KV per token (hand-derived), weights under TP and quantization; the ids, aliases and
suggestions of every catalog."""

from __future__ import annotations

import shutil

import pytest

from inference_ledger.core.args import LedgerInputError
from inference_ledger.catalogs.catalog import (MODEL_FIELDS, MODELS_DIR, UnknownId, get_dtype, get_gpu, get_model,
                                               load_models)
from inference_ledger.graph.resolve import model_spec, plan_inputs
from inference_ledger.graph.plan import evaluate

BUILT_IN = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen2.5-7b", "qwen2.5-72b", "mistral-7b-v0.3",
            "mixtral-8x7b", "deepseek-v3", "gpt-oss-20b", "gpt-oss-120b", "gemma-2-9b", "gemma-2-27b",
            "qwen3-235b-a22b", "llama-2-7b")

# 2 (K and V) x layers x KV heads x head dim x 2 bytes (BF16); MLA: layers x (latent + rope) x 2
KV_PER_TOKEN = {
    "llama-3.1-8b": 2 * 32 * 8 * 128 * 2,        # 131,072
    "llama-3.1-70b": 2 * 80 * 8 * 128 * 2,       # 327,680 (the seed's example)
    "llama-3.1-405b": 2 * 126 * 8 * 128 * 2,     # 516,096
    "qwen2.5-7b": 2 * 28 * 4 * 128 * 2,          # 57,344
    "qwen2.5-72b": 2 * 80 * 8 * 128 * 2,         # 327,680
    "mistral-7b-v0.3": 2 * 32 * 8 * 128 * 2,     # 131,072
    "mixtral-8x7b": 2 * 32 * 8 * 128 * 2,        # 131,072
    "deepseek-v3": 61 * (512 + 64) * 2,          # 70,272
    "gpt-oss-20b": 2 * 24 * 8 * 64 * 2,          # 49,152
    "gpt-oss-120b": 2 * 36 * 8 * 64 * 2,         # 73,728
    "gemma-2-9b": 2 * 42 * 8 * 256 * 2,          # 344,064
    "gemma-2-27b": 2 * 46 * 16 * 128 * 2,        # 376,832
    "qwen3-235b-a22b": 2 * 94 * 4 * 128 * 2,     # 192,512
    "llama-2-7b": 2 * 32 * 32 * 128 * 2,         # 524,288 (MHA)
}


def test_built_in_models_come_first_in_order():
    models = load_models()
    assert [m.id for m in models][:len(BUILT_IN)] == list(BUILT_IN)
    for m in models:
        assert m.source and m.date and m.provenance in ("verbatim", "reconstructed")


def test_seed_and_issue_figures():
    assert KV_PER_TOKEN["llama-3.1-70b"] == 327_680
    assert KV_PER_TOKEN["qwen2.5-7b"] == 57_344
    assert KV_PER_TOKEN["deepseek-v3"] == 70_272
    assert KV_PER_TOKEN["gpt-oss-120b"] == 73_728


def test_model_shape_fields_reach_the_plan():
    v = plan_inputs("qwen3-235b-a22b", "h100-sxm")
    assert (v["hidden_size"], v["intermediate_size"], v["vocab_size"]) == (4096, 1536, 151936)  # expert width
    assert (v["num_experts"], v["experts_per_token"], v["interconnect_bw"]) == (128, 8, 450e9)


@pytest.mark.parametrize("model_id", BUILT_IN)
def test_kv_bytes_per_token(model_id):
    assert model_spec(model_id, "kv_bytes_per_token") == KV_PER_TOKEN[model_id]


def test_kv_dtype_halves_the_cache():
    v = evaluate(plan_inputs("llama-3.1-70b", "h100-sxm", kv_dtype="fp8"))
    assert v["kv_bytes_per_token"] == 327_680 / 2


#: (catalog lookup, what a user types, the row it finds): GPU aliases in any case, model aliases and Hugging Face repos.
ALIASES = [(get_gpu, "H100", "h100-sxm"), (get_gpu, "H100 SXM5 80GB", "h100-sxm"), (get_gpu, "h100_sxm", "h100-sxm"),
           (get_gpu, "NVIDIA H200 SXM 141GB", "h200"), (get_gpu, "mi300x", "mi300x"), (get_gpu, "RTX 4090", "rtx-4090"),
           (get_gpu, "A100", "a100-80gb"), (get_gpu, "A10G", "a10g"),
           (get_model, "meta-llama/Llama-3.1-70B", "llama-3.1-70b"),
           (get_model, "meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b"),
           (get_model, "LLAMA-3.1-70B", "llama-3.1-70b"),
           (get_model, "Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"), (get_model, "openai/gpt-oss-120b", "gpt-oss-120b"),
           (get_model, "DeepSeek-V3", "deepseek-v3")]


@pytest.mark.parametrize("find, name, want", ALIASES, ids=[n for _, n, _ in ALIASES])
def test_aliases_and_hf_repos(find, name, want):
    assert find(name).id == want


@pytest.mark.parametrize("find, typo, said, closest", [
    (get_gpu, "h10", "unknown GPU 'h10': did you mean ", "h100-sxm"),
    (get_model, "llama-3.1-7b", "unknown model 'llama-3.1-7b': did you mean ", "llama-3.1-70b"),
    (get_dtype, "fp9", "", "did you mean fp8")])
def test_an_unknown_id_suggests_the_closest(find, typo, said, closest):
    with pytest.raises(UnknownId) as e:
        find(typo)
    assert str(e.value).startswith(said) and closest in str(e.value)


def test_weights_per_gpu_under_tp():
    n = 70_553_706_496  # Llama-3.1-70B, counted in test_hfconfig
    for tp in (1, 2, 4, 8):
        v = evaluate(plan_inputs("llama-3.1-70b", "h100-sxm", tp=tp))
        assert v["weights_bytes"] == 2 * n
        assert v["weights_bytes_per_gpu"] == 2 * n / tp


def test_kv_split_under_tp_replicates_beyond_kv_heads():
    per_gpu = {tp: evaluate(plan_inputs("llama-3.1-70b", "h100-sxm", tp=tp))["kv_bytes_per_token_per_gpu"]
               for tp in (1, 4, 8, 16)}
    assert per_gpu == {1: 327_680, 4: 81_920, 8: 40_960, 16: 40_960}  # 8 KV heads: TP16 keeps a replica per pair
    mla = evaluate(plan_inputs("deepseek-v3", "h200", tp=8))
    assert mla["kv_bytes_per_token_per_gpu"] == 70_272  # the MLA latent is not split


def test_quantized_weight_sizes():
    q = 80 * (8192 * 8192 * 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672)  # Llama-3.1-70B linear layers
    n = 70_553_706_496
    rest = n - q  # embeddings, LM head, norms stay BF16
    fp8 = evaluate(plan_inputs("llama-3.1-70b", "h100-sxm", weight_dtype="fp8"))
    assert fp8["weights_bytes"] == q * 1 + rest * 2 == 72_656_371_712
    int4 = evaluate(plan_inputs("llama-3.1-70b", "h100-sxm", weight_dtype="int4"))
    assert int4["weights_bytes"] == q * (4 + 16 / 128) / 8 + rest * 2
    # gpt-oss-120b ships MXFP4 experts (4 + 8/32 bits); everything else BF16
    experts = 36 * 128 * 3 * 2880 * 2880
    oss = evaluate(plan_inputs("gpt-oss-120b", "h100-sxm", tp=1))
    assert oss["weights_bytes"] == experts * 4.25 / 8 + (116_829_156_672 - experts) * 2 == 65_248_815_744
    assert model_spec("gpt-oss-120b", "weights_bytes") == 65_248_815_744
    # DeepSeek-V3 ships FP8 for every linear layer; 671B params -> about 1 byte each
    ds = model_spec("deepseek-v3", "weights_bytes")
    assert 671e9 < ds < 676e9


def test_mxfp4_reads_only_the_routed_experts_at_4_bits():
    oss = evaluate(plan_inputs("gpt-oss-120b", "h100-sxm", tp=1))
    m = get_model("gpt-oss-120b")
    active_experts = 36 * 4 * 3 * 2880 * 2880
    assert oss["weights_read_bytes"] == active_experts * 4.25 / 8 + (m.active_params - active_experts) * 2


def test_model_fields_and_spec():
    assert [f for f, _, _ in MODEL_FIELDS][:3] == ["id", "name", "hf_repo"]
    assert model_spec("llama-3.1-70b", "num_layers") == 80
    assert model_spec("deepseek-v3", "mla_latent_dim") == 576
    assert model_spec("gpt-oss-120b", "weight_dtype") == "mxfp4"
    with pytest.raises(UnknownId, match="unknown model field"):
        model_spec("llama-3.1-70b", "layers_count")


def test_dropping_a_config_adds_a_model(tmp_path):
    shutil.copy(MODELS_DIR / "llama-3.1-8b.json", tmp_path / "my-finetune.json")
    models = load_models(tmp_path)
    assert [m.id for m in models] == ["my-finetune"]
    assert models[0].num_params == 8_030_261_248 and models[0].source


def test_bad_dtype_use():
    with pytest.raises(LedgerInputError, match="not a weight format"):
        plan_inputs("llama-3.1-8b", "h100-sxm", weight_dtype="int4-kv")
    with pytest.raises(LedgerInputError, match="not a plan input"):
        plan_inputs("llama-3.1-8b", "h100-sxm", bogus=1)

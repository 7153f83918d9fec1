"""The resolver's rules, one by one, with hand-derived expectations.

tests/test_resolve_refusals.py checks that every entry point repeats the resolver's words; this
file checks the words and the inputs themselves: which setting a refusal names, what a
generic model assumes, which engine defaults follow the GPU, the TP rules at their edges.
"""

from __future__ import annotations

import dataclasses

import pytest

from inference_ledger.catalogs import catalog
from inference_ledger.graph import resolve, verdict
from inference_ledger.core.args import LedgerInputError
from inference_ledger.formulas.ledger import bytes_per_element, kv_bytes_windowed
from inference_ledger.formulas.whatif import max_context_tokens

LLAMA = catalog.get_model("llama-3.1-70b")      # 64 attention heads, 8 KV heads, 131,072 positions


def _refusal(option: str, message: str, **choice):
    with pytest.raises(resolve.ChoiceError) as e:
        resolve.resolve(**choice)
    assert e.value.option == option
    assert str(e.value) == message
    return e.value


# --- which setting a refusal names --------------------------------------------------------------


def test_each_refusal_names_its_setting_in_the_same_words():
    _refusal("model", "give a model or a config, not both", model="llama-3.1-70b", config="x.json")
    _refusal("context", "give context or input_tokens, not both", model="llama-3.1-70b", gpu="h100-sxm",
             context=4096, numbers={"input_tokens": 1000})
    _refusal("context", "context 512 must exceed the output tokens 512 (context = input + output tokens)",
             model="llama-3.1-70b", gpu="h100-sxm", context=512)
    _refusal("tp", "TP 16 spans more than one 8-GPU node of h100-sxm (TP stays within a node: add PP stages or EP across nodes)",
             model="llama-3.1-70b", gpu="h100-sxm", numbers={"tp": 16})
    _refusal("tp", "TP 3 does not divide the 64 attention heads of llama-3.1-70b",
             model="llama-3.1-70b", gpu="h100-sxm", numbers={"tp": 3})
    _refusal("context", "context 200,000 exceeds the 131,072-token maximum of llama-3.1-70b (max_position_embeddings)",
             model="llama-3.1-70b", gpu="h100-sxm", context=200_000)
    _refusal("gpu", resolve.EMPTY_ID["gpu"], model="llama-3.1-70b", gpu=" ")
    _refusal("model", resolve.EMPTY_ID["model"], model="", gpu="h100-sxm")
    _refusal("kv_dtype", "kv_dtype is empty: give a format id (bf16, fp8, ...)", model="llama-3.1-70b",
             gpu="h100-sxm", kv_dtype="")


def test_a_context_of_one_more_token_than_the_output_is_one_input_token():
    assert resolve.input_tokens_of(513, 512) == 1.0
    r = resolve.resolve("llama-3.1-70b", "h100-sxm", context=4096, numbers={"output_tokens": 1000})
    assert r.inputs["input_tokens"] == 3096 and r.inputs["output_tokens"] == 1000


def test_a_number_out_of_range_or_unknown_names_itself():
    with pytest.raises(resolve.ChoiceError) as e:
        resolve.check_number("tp", 0)
    assert e.value.option == "tp" and str(e.value).startswith("tp must be a whole number >= 1")
    with pytest.raises(resolve.ChoiceError) as e:
        resolve.check_number("warp_drive", 1)
    assert e.value.option == "warp_drive" and str(e.value) == "not a plan input: warp_drive"
    assert resolve.check_number("tp", 2) == 2.0


def test_a_format_for_the_wrong_use_says_what_it_is_for_and_suggests():
    with pytest.raises(resolve.ChoiceError) as e:
        resolve.find_dtype("int4-kv", "weight")
    assert e.value.option == "weight_dtype"
    assert "weight dtype 'int4-kv' is not a weight format (it is for: kv)" in str(e.value)


# --- what a choice becomes ---------------------------------------------------------------------------


def test_a_generic_model_is_all_active_and_all_quantizable():
    r = resolve.resolve(numbers={"num_params": 7e9})
    v = r.inputs
    assert v["active_params"] == v["quantized_params"] == v["active_quantized_params"] == 7e9
    assert r.weight_dtype is None and r.model is None and r.explicit["num_params"] == 7e9
    assert r.describe()["model"] is None and r.describe()["kv_dtype"] == "bf16"


def test_the_engine_defaults_follow_the_gpu_and_the_model_length():
    # vLLM V1's large-GPU batch defaults (8192 tokens, 1024 sequences) exclude A100 (vllm/engine/arg_utils.py)
    a100 = resolve.resolve("llama-3.1-70b", "a100-80gb").inputs
    h100 = resolve.resolve("llama-3.1-70b", "h100-sxm").inputs
    assert (a100["max_num_batched_tokens"], a100["max_num_seqs"]) == (2048, 256)
    assert (h100["max_num_batched_tokens"], h100["max_num_seqs"]) == (8192, 1024)
    # vLLM V0 profiles one whole prompt of max_model_len when it is <= 32768: max(16384, 2048)
    assert resolve.resolve("llama-3.1-70b", "h100-sxm", engine="vllm-v0",
                           max_model_len=16384).inputs["max_num_batched_tokens"] == 16384
    assert resolve.with_engine(h100, "vllm-v0", gpu_id="h100-sxm", max_model_len=16384)["max_num_batched_tokens"] == 16384
    assert resolve.with_engine(h100, "vllm")["max_num_seqs"] == 1024      # no GPU id: by memory alone


def test_a_config_model_can_be_named_among_the_extra_models():
    mine = dataclasses.replace(LLAMA, id="my-llama", aliases=())
    r = resolve.resolve("my-llama", "h100-sxm", extra_models=[mine])
    assert r.model is mine and r.describe()["model"] == "my-llama"


def test_numbers_given_are_kept_as_given():
    r = resolve.resolve("llama-3.1-70b", "h100-sxm", numbers={"tp": 2, "concurrency": None})
    assert r.explicit == {"tp": 2.0} and r.inputs["tp"] == 2
    assert r.weight_dtype == "bf16"     # the checkpoint's format


def test_fp8_computes_at_the_fp8_unit_and_never_below_bf16():
    h100, a100 = catalog.get_gpu("h100-sxm"), catalog.get_gpu("a100-80gb")
    fp8 = catalog.get_dtype("fp8")
    assert resolve.peak_flops(h100, fp8) == 1979e12          # H100 SXM dense FP8 (datasheet)
    assert resolve.peak_flops(a100, fp8) == 312e12           # A100 has no FP8 unit: BF16 dense


# --- tensor parallelism at its edges ------------------------------------------------------------------


def test_kv_heads_split_evenly_or_replicate_evenly():
    m = dataclasses.replace(LLAMA, num_attention_heads=40, kv_heads=8)
    assert resolve.heads_problem(m, 8) is None                      # TP = K: one KV head each
    assert resolve.heads_problem(m, 5) == "TP 5 does not divide the 8 KV heads of llama-3.1-70b"
    m = dataclasses.replace(LLAMA, num_attention_heads=48, kv_heads=4)
    assert resolve.heads_problem(m, 4) is None
    assert resolve.heads_problem(m, 8) is None                      # each KV head on two GPUs
    assert resolve.heads_problem(m, 6) == \
        "TP 6 is not a multiple of the 4 KV heads of llama-3.1-70b (they cannot be replicated evenly)"
    mla = dataclasses.replace(m, mla_latent_dim=512)                 # a latent is not split: no KV-head rule
    assert resolve.heads_problem(mla, 6) is None


def test_tp_fits_one_node_of_the_gpu():
    h100 = catalog.get_gpu("h100-sxm")
    assert resolve.node_problem(h100, 8) is None
    assert resolve.node_problem(dataclasses.replace(h100, gpus_per_node=4), 8) == \
        "TP 8 spans more than one 4-GPU node of h100-sxm (TP stays within a node: add PP stages or EP across nodes)"
    assert resolve.tp_problem(None, None, 64) is None               # nothing chosen: nothing to refuse


def test_model_spec_answers_derived_fields_and_names_unknown_ones():
    assert resolve.model_spec("llama-3.1-70b", "kv_bytes_per_token") == 327_680     # 2 x 80 x 8 x 128 x 2 B
    assert resolve.model_spec("llama-3.1-70b", "num_layers") == 80
    with pytest.raises(LedgerInputError, match="^unknown model field .wingspan."):
        resolve.model_spec("llama-3.1-70b", "wingspan")


# --- defaults of the paper's formulas and the verdict's words ------------------------------------------


def test_formula_defaults_are_the_papers():
    assert bytes_per_element(16) == 2                               # BF16, no group scales
    assert kv_bytes_windowed(80, 8, 128, 4096) == 1_342_177_280    # the seed's 70B at 4K, no window
    # 1 GB of KV for one sequence of a 1-layer, 1-head, 64-wide model at 2 B: 1e9 / (2 x 64 x 2) tokens
    assert max_context_tokens(1e9, 1, 2 * 64 * 2, 1) == pytest.approx(1e9 / 256)


def test_each_code_has_its_words():
    assert [verdict.words(c) for c in (0, 1, 2, 3)] == list(verdict.WORDS)
    assert verdict.words(1) == "fits below the requested concurrency"


# --- found by the mutation run (tests/README.md): words and edges nothing else pinned ---------------


def test_a_format_for_the_wrong_use_lists_the_right_ones_or_the_near_one():
    with pytest.raises(resolve.ChoiceError) as e:
        resolve.find_dtype("int4-kv", "weight")
    assert str(e.value) == ("weight dtype 'int4-kv' is not a weight format (it is for: kv) "
                            "(weight formats: fp32, bf16, fp16, fp8, int8, int4, mxfp4, nvfp4)")
    with pytest.raises(resolve.ChoiceError) as e:
        resolve.find_dtype("int4", "kv")
    assert str(e.value) == "kv dtype 'int4' is not a kv format (it is for: weight); did you mean int4-kv?"
    with pytest.raises(resolve.ChoiceError) as e:
        resolve.find_dtype("mxfp4", "kv")
    assert "(kv formats: fp32, bf16, fp16, fp8, int8, int4-kv)" in str(e.value)


def test_native_or_blank_is_the_checkpoints_format_in_any_case():
    deepseek = catalog.get_model("deepseek-v3")                    # an FP8 checkpoint
    for native in (None, "", " ", "native", " Native "):
        assert resolve.weight_format(deepseek, native).id == "fp8"
    assert resolve.weight_format(None, "native").id == "bf16"
    assert resolve.weight_format(deepseek, "bf16").id == "bf16"


def test_catalog_facts_as_inputs_use_the_models_format_and_the_gpus_costs():
    v = resolve.plan_inputs("deepseek-v3", None)
    assert v["weight_bytes"] == 1 and v["unquantized_bytes"] == 2       # FP8 layers, BF16 embeddings/norms
    assert resolve.plan_inputs(None, None)["weight_bytes"] == 2
    a100 = resolve.plan_inputs(None, "a100-80gb")
    assert a100["server_price_per_gpu"] == 24_875                       # gpu_costs.csv: DGX A100 $199,000 / 8
    assert a100["gpu_power_w"] == 400
    with pytest.raises(resolve.ChoiceError) as e:
        resolve.plan_inputs(None, None, zeta=1, alpha=2)
    assert (e.value.option, str(e.value)) == ("alpha", "not a plan input: alpha, zeta")


def test_a_part_larger_than_the_whole_is_refused_by_resolve():
    with pytest.raises(LedgerInputError, match="^active_params must be <= num_params$"):
        resolve.resolve("llama-3.1-70b", "h100-sxm", numbers={"active_params": 80e9})
    assert resolve.resolve("llama-3.1-70b", "h100-sxm", numbers={"active_params": 80e9},
                           validate=False).inputs["active_params"] == 80e9


def test_only_mxfp4_moe_kernels_pad_the_experts():
    """Qwen3-235B-A22B in BF16 at TP 8: each expert's 1,536-wide intermediate is 192 rows per GPU, which the BF16
    fused-MoE kernel runs as is (no tile padding): the weights per GPU are the weights over 8. gpt-oss-120b in MXFP4
    keeps its padded experts (2,880 -> 3,072 x 2,944 at TP 1)."""
    from inference_ledger.graph import plan
    v = plan.evaluate(resolve.resolve("qwen3-235b-a22b", "h100-sxm", weight_dtype="bf16",
                                      numbers={"tp": 8}).inputs)
    assert v["moe_padding_bytes_per_gpu"] == 0
    assert v["weights_bytes_per_gpu"] == pytest.approx(v["weights_bytes"] / 8, rel=1e-12)
    g = plan.evaluate(resolve.resolve("gpt-oss-120b", "h100-sxm", numbers={"tp": 1}).inputs)
    m = catalog.get_model("gpt-oss-120b")
    per_expert = (3072 * 2944 - 2880 * 2880) * 3   # three matrices per expert, padded elements
    assert g["moe_padding_bytes_per_gpu"] == pytest.approx(m.num_layers * m.num_experts * per_expert
                                                          * g["weight_bytes"], rel=1e-12)

"""Engine memory models: the catalog of engines and the formulas, against hand-derived figures."""

from __future__ import annotations

import pytest

from inference_ledger.formulas import engine_ledger
from inference_ledger.catalogs import engines
from inference_ledger.graph.resolve import resolve
from inference_ledger.graph import plan
from inference_ledger.core.args import LedgerInputError
from inference_ledger.core.expr import Sym

GIB = 2**30


def test_engine_catalog_has_the_three_engines_and_their_documented_fractions():
    ids = engines.engine_ids()
    assert {"vllm", "sglang", "trtllm"} <= set(ids)
    assert engines.get_engine("vllm").memory_fraction == 0.9          # gpu_memory_utilization default
    assert engines.get_engine("trtllm").memory_fraction == 0.9        # free_gpu_memory_fraction default
    sglang = engines.get_engine("SGLang")
    assert [sglang.fraction(tp) for tp in (1, 2, 4, 8, 16)] == [0.88, 0.87, 0.85, 0.81, 0.79]
    assert engines.get_engine("TensorRT-LLM").id == "trtllm"
    assert [engines.get_engine(i).kv_budget_rule for i in ("vllm", "sglang", "trtllm")] == [1, 2, 3]
    for e in engines.load_engines():
        assert e.source and e.date, e.id


def test_unknown_engine_names_the_known_ones():
    with pytest.raises(LedgerInputError, match="unknown engine 'vlm'.*vllm.*sglang"):
        engines.get_engine("vlm")


@pytest.mark.parametrize("engine", ["vllm", "vllm-0.9"])
def test_vllm_batching_defaults_follow_the_gpu(engine):
    h100 = engines.engine_inputs(engine, gpu_memory_bytes=79.1875 * GIB, interconnect_bw=450e9, gpu_id="h100-sxm", tp=2)
    assert (h100["max_num_batched_tokens"], h100["max_num_seqs"]) == (8192, 1024)
    a100 = engines.engine_inputs(engine, gpu_memory_bytes=79.15 * GIB, interconnect_bw=300e9, gpu_id="a100-80gb")
    assert (a100["max_num_batched_tokens"], a100["max_num_seqs"]) == (2048, 256)   # A100 excluded (PR #17885)
    l40s = engines.engine_inputs(engine, gpu_memory_bytes=44.5 * GIB, gpu_id="l40s")
    assert (l40s["max_num_batched_tokens"], l40s["max_num_seqs"]) == (2048, 256)   # below 70 GiB
    if engine == "vllm-0.9":  # its snapshot came before NCCL's init: the buffers count against the budget
        assert h100["nccl_bytes"] == pytest.approx(1.79 * GIB, rel=1e-9)     # NVSwitch: NVLS buffers
        assert a100["nccl_bytes"] == 64 * 2**20                              # ring buffers only
    else:  # 0.19+: NCCL initialises before the memory snapshot, outside the budget; only cuBLAS's workspace after it
        assert h100["nccl_bytes"] == a100["nccl_bytes"] == 0
        assert h100["cuda_context_bytes"] == 685 * 2**20 - 523 * 2**20 and h100["sampler_bytes_per_logit"] == 20


def test_current_vllm_keeps_2_to_4_gb_beside_weights_and_kv_on_an_h100():
    """Llama-3.1-8B on one H100 at the API server's defaults: 1,024 x 128,256 logits x 20 B = 2.63 GB
    (more than the 8,192-token forward pass), plus 162 MiB of cuBLAS workspace: 2.8 GB, not 0.9's 5.6 GB."""
    now = plan.evaluate(resolve("llama-3.1-8b", "h100-sxm", engine="vllm", numbers={"tp": 1}).inputs)
    old = plan.evaluate(resolve("llama-3.1-8b", "h100-sxm", engine="vllm-0.9", numbers={"tp": 1}).inputs)
    assert now["workspace_bytes_per_gpu"] == 1024 * 128_256 * 20 + 162 * 2**20
    assert 2e9 < now["workspace_bytes_per_gpu"] < 4e9 < old["workspace_bytes_per_gpu"]


def test_vllm_v0_profiles_a_whole_prompt_up_to_32k_then_chunks():
    v0 = engines.get_engine("vllm-v0")
    assert v0.batched_tokens(23.58 * GIB, max_model_len=20000) == 20000
    assert v0.batched_tokens(23.58 * GIB, max_model_len=1000) == 2048     # max(max_model_len, 2048)
    assert v0.batched_tokens(23.58 * GIB, max_model_len=131072) == 2048   # chunked prefill above 32K


def test_prefill_activation_matches_the_rtx3090_log():
    # Llama-3.1-8B, BF16: 2 B x (3 x 4096 + 3 x 14336) = 110,592 B per token
    assert engine_ledger.prefill_activation_bytes(1, 4096, 14336, 0, 2, 1) == 110_592
    # vLLM log (vllm#10517): peak_torch - weights = 17.06 - 14.99 = 2.07 GiB at 20,000 tokens, 2.99 at 29,000
    assert engine_ledger.prefill_activation_bytes(20000, 4096, 14336, 0, 2, 1) / GIB == pytest.approx(2.07, rel=0.01)
    assert engine_ledger.prefill_activation_bytes(29000, 4096, 14336, 0, 2, 1) / GIB == pytest.approx(2.99, rel=0.01)


def test_moe_activation_counts_each_routed_expert():
    # gpt-oss: top-4 of experts 2880 wide, hidden 2880: 2 x ((3 + 4) x 2880 + 3 x 4 x 2880) = 109,440 B/token
    assert engine_ledger.prefill_activation_bytes(1, 2880, 2880, 4, 2, 1) == 109_440


def test_kv_budget_rules_by_hand():
    total, f, w, a, n = 100.0, 0.9, 50.0, 5.0, 2.0
    assert engine_ledger.kv_budget_bytes(1, total, f, w, a, n) == pytest.approx(90 - 50 - 5 - 2)          # vLLM
    assert engine_ledger.kv_budget_bytes(2, total, f, w, a, n) == pytest.approx(0.9 * 98 - 50)            # SGLang
    assert engine_ledger.kv_budget_bytes(3, total, f, w, a, n) == pytest.approx(0.9 * (100 - 2 - 50 - 5))  # TensorRT-LLM


def test_allreduce_is_zero_at_tp1_and_latency_plus_ring_bytes_above():
    assert engine_ledger.allreduce_seconds(1, 32, 15e-6, 8192, 300e9) == 0
    # TP 2, 32 layers: 2 x 32 x (15 us + 2 x 1/2 x 8,192 B / 300 GB/s)
    assert engine_ledger.allreduce_seconds(2, 32, 15e-6, 8192, 300e9) == pytest.approx(64 * (15e-6 + 8192 / 300e9))


def test_mxfp4_expert_padding_of_gpt_oss_120b():
    # 36 layers x 128 experts x 3 matrices x (3072 x 2944 - 2880 x 2880) x 0.53125 B = 5,504,827,392 B
    assert engine_ledger.moe_padding_bytes_per_gpu(36, 128, 2880, 2880, 1, 256, 128, 0.53125) == 5_504_827_392
    assert engine_ledger.moe_padding_bytes_per_gpu(80, 0, 8192, 28672, 4, 256, 128, 2) == 0   # dense: no experts


def test_formulas_render_without_literals():
    s = {n: Sym(n) for n in ("rule", "total", "f", "w", "a", "n", "tp", "L", "lat", "msg", "bw")}
    text = engine_ledger.kv_budget_bytes(s["rule"], s["total"], s["f"], s["w"], s["a"], s["n"]).text
    assert text == ("f*total-w-(a+n)+IF(rule=KV_RULE_SGLANG,a+n-f*n,"
                    "IF(rule=KV_RULE_TRTLLM,(1-f)*(w+a+n),0))")
    assert engine_ledger.allreduce_seconds(s["tp"], s["L"], s["lat"], s["msg"], s["bw"]).text == \
        "IF(tp>1,ALLREDUCES_PER_LAYER*L*(lat+RING_ALLREDUCE_FACTOR*(tp-1)/tp*msg/bw),0)"


def test_plan_engine_switch_changes_the_kv_budget_only_through_the_rule():
    base = resolve("qwen3-235b-a22b", "h100-sxm", engine="vllm", weight_dtype="fp8", numbers={"tp": 4}).inputs
    sg = resolve("qwen3-235b-a22b", "h100-sxm", engine="sglang", weight_dtype="fp8",
                 numbers={"tp": 4, "gpu_memory_utilization": 0.93}).inputs
    v, s = plan.evaluate(base), plan.evaluate(sg)
    assert v["weights_bytes_per_gpu"] == s["weights_bytes_per_gpu"] == 59_097_093_888   # (233.8e9 x 1 + 1.29e9 x 2) / 4
    assert s["kv_budget_rule"] == 2
    # SGLang: 0.93 x (79.1875 - 0.35 - 1.79 GiB) - weights
    assert s["kv_cache_budget_bytes_per_gpu"] == pytest.approx(0.93 * (79.1875 - 0.35 - 1.79) * GIB - 59_097_093_888,
                                                               rel=1e-9)


def test_engine_refusing_to_start_does_not_fit():
    # gpt-oss-120b on one H100 at vLLM's default 0.9: the log shows -2.14 GiB of KV memory and no start
    v = plan.evaluate(resolve("gpt-oss-120b", "h100-sxm", engine="vllm-0.9",   # the version of that log
                              numbers={"tp": 1, "concurrency": 1, "input_tokens": 1, "output_tokens": 1}).inputs)
    assert v["kv_cache_budget_bytes_per_gpu"] < 0
    assert v["kv_capacity_tokens"] == 0
    assert v["fits"] == 0
